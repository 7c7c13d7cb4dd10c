"""What the static scan (:mod:`.intake.scan`) looks for: modules, names, calls and attributes no exercise needs.
"""
from __future__ import annotations

# Modules whose import alone is worth a look: they reach the interpreter, the process or the disk.
SUSPECT_MODULES = {
    "ctypes": "ctypes (raw memory and C calls)", "cffi": "cffi (raw memory and C calls)",
    "subprocess": "a subprocess", "pty": "a subprocess", "multiprocessing": "a subprocess",
    "importlib": "importlib (loading or reloading modules)", "builtins": "the builtins module",
    "gc": "the garbage collector (reaching other objects)", "inspect": "frame inspection",
    "shutil": "file access", "glob": "file access", "sqlite3": "a database",
    "socket": "the network", "urllib": "the network", "requests": "the network",
    "http": "the network", "IPython": "IPython's internals", "ipykernel": "the kernel's internals",
    "jupyter_client": "the kernel's messaging", "zmq": "the kernel's messaging",
    "traitlets": "the kernel's configuration", "tornado": "the kernel's event loop",
    "nbformat": "notebook files", "nbgrader": "the grader", "pickle": "object serialization",
    "marshal": "code objects", "linecache": "the source of executed cells", "dis": "code objects",
    "threading": "threads", "_thread": "threads", "signal": "signals", "atexit": "exit hooks",
    "code": "an interpreter", "codeop": "compiling", "runpy": "running modules",
}

# Modules whose harmless parts an exercise may import (``from IPython.display import display``).
ALLOWED_FROM = {"IPython.display"}

# Names whose import from any module is worth a look.
SUSPECT_NAMES = {"CodeType": "code objects", "FunctionType": "function objects",
                 "ModuleType": "module objects", "attrgetter": "computed attribute access",
                 "methodcaller": "computed method calls", "setattr": "setattr",
                 "update_wrapper": "a function disguised as another"}

SUSPECT_CALLS = {
    "exec": "exec", "eval": "eval", "compile": "compile", "__import__": "__import__",
    "globals": "globals()", "locals": "locals()", "vars": "vars()",
    "setattr": "setattr (an attribute changed by name)", "delattr": "delattr (an attribute removed by name)",
    "open": "file access", "breakpoint": "the debugger",
}

SUSPECT_ATTRIBUTES = {
    "meta_path": "import hooks", "path_hooks": "import hooks",
    "settrace": "a trace function", "setprofile": "a profile function",
    "addaudithook": "an audit hook", "excepthook": "the exception hook",
    "displayhook": "the display hook", "_getframe": "frames", "f_back": "frames",
    "f_globals": "frames", "f_locals": "frames", "tb_frame": "frames", "gi_frame": "frames",
    "__code__": "code objects", "__globals__": "a function's globals", "__closure__": "closures",
    "__builtins__": "builtins", "__dict__": "an object's namespace", "__subclasses__": "class internals",
    "input_transformers_cleanup": "an IPython input transformer",
    "input_transformers_post": "an IPython input transformer",
    "ast_transformers": "an IPython AST transformer", "set_custom_exc": "a custom exception handler",
    "CustomTB": "a custom exception handler", "events": "IPython event hooks",
    "register_magic_function": "a new magic", "user_ns": "the notebook's namespace",
    "__defaults__": "a function's default arguments", "__kwdefaults__": "a function's default arguments",
    "_implementation": "a function's implementation", "__wrapped__": "a function's implementation",
    "attrgetter": "computed attribute access", "methodcaller": "computed method calls",
    "CodeType": "code objects", "FunctionType": "function objects", "ModuleType": "module objects",
    "get_parent": "the message being executed", "session": "the kernel's messaging",
    "kernel_entry": "the grader's way into the kernel", "COLLECTORS": "the checks' kernel halves",
    "EXERCISES": "the checks' grader halves",
    "__setattr__": "an attribute changed by name", "__delattr__": "an attribute removed by name",
}

# The checks' machinery, under ``autograder.checks``: what a notebook never imports (its set-up
# cell imports a topic module, ``from autograder.checks import tapes as checks``).
MACHINERY = {"kernel_entry": "the grader's way into the kernel",
             "harness": "how the checks call student code", "judge": "the checks' grader halves",
             "plain": "what a kernel sends the grader", "compare": "how the checks compare and fail"}

# A string that names a module of the machinery (``"autograder.checks.kernel_entry"``, a path).
MACHINERY_STRING = r"\bkernel_entry\b|\bautograder[./\\]checks[./\\](?:" + "|".join(MACHINERY) + r")\b"

# Attributes whose store makes an object pose as another class or function (``E.__qualname__``);
# a class or function defined after ``__name__ = ...`` takes that name as its ``__module__``.
POSING_NAMES = {"__class__", "__qualname__", "__module__", "__name__"}

# Names a class body binds to pose as another class (``isinstance`` answers from the last two).
CLASS_POSING_NAMES = POSING_NAMES | {"__instancecheck__", "__subclasscheck__"}

# Namespaces held as dicts, and the methods that change one (``vars(m).update(f=g)``).
NAMESPACE_CALLS = {"vars", "globals", "locals"}
NAMESPACE_METHODS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__",
                     "__delitem__", "__ior__"}

# Attributes flagged only on the modules that reach the process and the disk (a list's .remove
# is ordinary; os.remove is not).
SYSTEM_MODULES = {"os", "sys", "shutil", "pathlib", "Path", "subprocess", "signal", "posix",
                  "get_ipython"}

SYSTEM_ATTRIBUTES = {
    "modules": "sys.modules", "system": "a shell command", "getoutput": "a shell command",
    "popen": "a subprocess", "spawnv": "a subprocess", "execv": "a subprocess",
    "execvp": "a subprocess", "fork": "a subprocess", "kill": "signals", "killpg": "signals",
    "chdir": "file access", "remove": "file access", "unlink": "file access",
    "rmtree": "file access", "listdir": "file access", "walk": "file access",
    "scandir": "file access", "read_text": "file access", "write_text": "file access",
    "read_bytes": "file access", "write_bytes": "file access", "open": "file access",
}

# Line magics an exercise may use; any other magic is flagged.
ALLOWED_MAGICS = {"matplotlib", "time", "timeit", "load_ext", "tensorboard"}

# Names of IPython's history, shell and exit objects: a way to the shell, or to the hidden tests.
SHELL_NAMES = {"In", "Out", "_ih", "_oh", "_i", "_ii", "_iii", "_dh", "exit", "quit",
               "get_ipython", "__builtins__", "__loader__", "__spec__"}

# Dunder attributes an exercise may use (a Keras subclass calls super().__init__).
ORDINARY_DUNDERS = {"__init__", "__name__", "__doc__", "__version__", "__class__", "__call__",
                    "__len__", "__iter__", "__next__", "__enter__", "__exit__", "__qualname__"}

# Calls that copy or replace what a function is, whatever object they are reached through.
SUSPECT_METHODS = {"update_wrapper": "a function disguised as another",
                   "wraps": "a function disguised as another",
                   "get_field": "computed attribute access"}
