"""Static scan of the cells a student can edit, for constructs that no exercise of this course
needs and that could change how a notebook is graded (tamper evidence, for review).

A flag never changes a score: the instructor reads the reason and the line, and decides.
"""
from __future__ import annotations

import ast

from IPython.core.inputtransformer2 import TransformerManager

# Modules whose import alone is worth a look: they reach the interpreter, the process or the disk.
SUSPECT_MODULES = {
    "ctypes": "ctypes (raw memory and C calls)", "cffi": "cffi (raw memory and C calls)",
    "subprocess": "a subprocess", "pty": "a subprocess", "multiprocessing": "a subprocess",
    "importlib": "importlib (loading or reloading modules)", "builtins": "the builtins module",
    "gc": "the garbage collector (reaching other objects)", "inspect": "frame inspection",
    "shutil": "file access", "glob": "file access", "sqlite3": "a database",
    "socket": "the network", "urllib": "the network", "requests": "the network",
    "http": "the network", "IPython": "IPython's internals", "ipykernel": "the kernel's internals",
    "nbformat": "notebook files", "nbgrader": "the grader",
}
SUSPECT_CALLS = {
    "exec": "exec", "eval": "eval", "compile": "compile", "__import__": "__import__",
    "globals": "globals()", "vars": "vars()", "setattr": "setattr", "delattr": "delattr",
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
}
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
    "environ": "the environment",
}
# Line magics an exercise may use; any other magic is flagged.
ALLOWED_MAGICS = {"matplotlib", "time", "timeit", "load_ext", "tensorboard"}


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def scan_source(source: str, imported: set[str]) -> list[tuple[int, str]]:
    """``(line, reason)`` for each suspect construct in one cell's ``source`` (IPython syntax:
    magics and ``!`` commands are translated first). ``imported`` holds the names bound by imports
    anywhere in the notebook (locked cells included); assigning to their attributes is flagged.
    A cell that does not parse is flagged once."""
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return [(1, "the cell does not parse as Python")]
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 1)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names]
            for name in names:
                top = name.split(".")[0]
                if top in SUSPECT_MODULES:
                    found.append((line, f"imports {name}: {SUSPECT_MODULES[top]}"))
                elif name.startswith("autograder") and "checks" not in name:
                    found.append((line, f"imports {name}: the grader"))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in SUSPECT_CALLS:
                found.append((line, f"calls {func.id}: {SUSPECT_CALLS[func.id]}"))
            if isinstance(func, ast.Attribute) and func.attr == "run_line_magic" and node.args \
                    and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value not in ALLOWED_MAGICS:
                found.append((line, f"uses the magic %{node.args[0].value}"))
            if isinstance(func, ast.Attribute) and func.attr == "run_cell_magic" and node.args \
                    and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value not in ALLOWED_MAGICS:
                found.append((line, f"uses the cell magic %%{node.args[0].value}"))
        elif isinstance(node, ast.Attribute) and node.attr in SUSPECT_ATTRIBUTES:
            found.append((line, f"uses .{node.attr}: {SUSPECT_ATTRIBUTES[node.attr]}"))
        elif isinstance(node, ast.Attribute) and node.attr in SYSTEM_ATTRIBUTES and \
                _root_name(node) in SYSTEM_MODULES:
            found.append((line, f"uses {ast.unparse(node)[:60]}: {SYSTEM_ATTRIBUTES[node.attr]}"))
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "get_ipython") and \
                isinstance(node.ctx, ast.Load) and not _is_allowed_magic_call(tree, node):
            found.append((line, f"uses {node.id}"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and _root_name(sub) in imported:
                        found.append((line, f"changes {_root_name(sub)}.{sub.attr}, an "
                                            "attribute of an imported module"))
                    elif isinstance(sub, ast.Name) and sub.id in imported and \
                            isinstance(sub.ctx, (ast.Store, ast.Del)):
                        found.append((line, f"rebinds {sub.id}, a name the course imports"))
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and \
                node.name in imported:
            found.append((line, f"rebinds {node.name}, a name the course imports"))
    return sorted(set(found))


def _is_allowed_magic_call(tree: ast.AST, name: ast.Name) -> bool:
    """Whether ``name`` (``get_ipython``) is the head of ``get_ipython().run_line_magic(...)`` (how
    IPython writes ``%matplotlib inline``) or of ``.system(...)`` (``!cmd``): flagged, if at all,
    as the magic or the shell command."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("run_line_magic", "run_cell_magic",
                                                              "system", "getoutput") \
                and isinstance(node.value, ast.Call) and node.value.func is name:
            return True
    return False


def imported_names(nb) -> set[str]:
    """Names bound by import statements in any code cell of ``nb`` (``tf``, ``np``, ``checks``)."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(TransformerManager().transform_cell(cell.source))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return names


def scan_notebook(nb, release) -> list[str]:
    """Flags for review in the cells of ``nb`` (a submission) that the student wrote or changed,
    each as ``"cell N line L: reason"``. Locked cells of ``release`` are skipped (nbgrader runs
    them as the source has them), and so are cells identical to one of the release (the course's
    own demonstrations)."""
    locked = {cell.metadata["nbgrader"]["grade_id"] for cell in release.cells
              if cell.metadata.get("nbgrader", {}).get("locked")}
    course_code = {cell.source.strip() for cell in release.cells if cell.cell_type == "code"}
    imported = imported_names(release)
    flags = []
    for index, cell in enumerate(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or grade_id in locked or cell.source.strip() in course_code:
            continue
        for line, reason in scan_source(cell.source, imported):
            flags.append(f"cell {index + 1} line {line}: {reason}")
    return flags
