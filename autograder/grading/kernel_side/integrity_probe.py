"""Kernel-side half of the integrity check (see :class:`~.preprocessors.execute.GradingExecute`).

This file is not imported by the grader: its source is sent to the grading kernel and run there,
silently, before every cell, in a namespace of its own. ``probe(token, checks_dir, graded)``
returns what changed in the interpreter since the last probe and, before a graded cell, whether
the course's check modules still hold the code on disk. What it watches:

- IPython's input and AST transformers, custom exception handlers, event hooks, and every method
  of the shell's and the kernel's classes (on the class and on the instance);
- ``sys`` hooks (excepthook, displayhook, trace and profile functions, import hooks) and builtins;
- every attribute of the check modules and of the modules they use (numpy, TensorFlow, ...), and
  which module object ``sys.modules`` holds under each of those names;
- the notebook's names bound to the course's modules and functions (``checks``, ``tf``, ...).

Student code runs in the same interpreter and could defeat this; it is evidence for review, never
a score.
"""
# What the check reads the interpreter with comes from the grader's door (kernel_side/door.py),
# bound before any cell of the student's ran: an import here could be answered by a module the
# notebook put in sys.modules, and a name looked up by the shell's class could be replaced.
PINNED = dict(globals().get("PINNED", ()))
builtins, sys, types, os, linecache = (PINNED[n] for n in (
    "builtins", "sys", "types", "os", "linecache"))
ENTRY = PINNED["ENTRY"]  # the course's kernel_entry.Entry as it was at the pin, or None


def get_ipython():
    return PINNED["SHELL"]

# Modules whose attributes are watched besides the check modules and those they use.
WATCHED = ("IPython.core.interactiveshell", "ipykernel.ipkernel", "ipykernel.kernelbase",
           "ipykernel.zmqshell", "ipykernel.displayhook", "ipykernel.iostream",
           "jupyter_client.session", "builtins", "linecache")


def _fingerprint(value):
    """What identifies a function or class as it is: the object, and for a function its code and
    default arguments (changed in place, they keep the object's id), through ``__wrapped__`` and
    NumPy's ``_implementation``."""
    if isinstance(value, types.MethodType):  # made anew at each access: same method, new object
        return ("method", id(value.__self__), _fingerprint(value.__func__))
    parts = [id(value)]
    for inner in (value, getattr(value, "__wrapped__", None), getattr(value, "_implementation", None)):
        if isinstance(inner, types.FunctionType):
            parts += [id(inner.__code__), tuple(map(id, inner.__defaults__ or ())),
                      tuple(sorted((k, id(v)) for k, v in (inner.__kwdefaults__ or {}).items()))]
    return tuple(parts)


def _ids(items):
    return [id(item) for item in items]


def _course_modules():
    """Names of the check modules, and of every module they hold as an attribute."""
    names = {n for n, m in list(sys.modules.items()) if m is not None and n.startswith("autograder.checks")}
    for name in list(names):
        for value in list(vars(sys.modules[name]).values()):
            if isinstance(value, types.ModuleType):
                names.add(value.__name__)
    return names | {n for n in WATCHED if n in sys.modules}


def _observed_classes():
    """The TensorFlow classes whose methods the checks' evidence rests on (a replaced
    ``GradientTape.gradient`` would forge which values a tape produced; a replaced
    ``EagerTensor.numpy`` every value the checks read)."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return []
    names = ("GradientTape", "autodiff.ForwardAccumulator", "Variable", "Module",
             "keras.optimizers.Optimizer", "data.Dataset", "TensorArray", "Tensor")
    classes = []
    for name in names:
        value = tf
        for part in name.split("."):
            value = getattr(value, part, None)
        classes.append(value)
    # An eager tensor's own class (tf.Tensor is only one of its bases).
    classes.append(getattr(sys.modules.get("tensorflow.python.framework.ops"), "EagerTensor", None))
    found = []
    for value in classes:
        if isinstance(value, type):
            found.extend(c for c in value.__mro__ if c is not object and c not in found)
    return found


def _state():
    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)
    # The shell, the kernel, and what carries results out: its session, output streams, hooks.
    carriers = (ip, kernel, getattr(kernel, "session", None), sys.stdout, sys.stderr,
                ip.displayhook, ip.display_pub, ip.display_formatter,
                *ip.display_formatter.formatters.values())
    classes = {c for obj in carriers if obj is not None for c in type(obj).__mro__ if c is not object}
    modules = _course_modules()
    course_values = {name: id(value) for name, value in ip.user_ns.items()
                     if isinstance(value, types.ModuleType) and value.__name__ in modules
                     or getattr(value, "__module__", None) and
                     str(getattr(value, "__module__", "")).startswith(("autograder.", "utils"))}

    def shadowed(obj):  # methods of the class replaced by attributes of the instance
        return sorted(k for k, v in vars(obj).items() if callable(v) and callable(getattr(type(obj), k, None)))

    return {
        "an IPython input transformer": _ids(ip.input_transformers_cleanup) + _ids(ip.input_transformers_post),
        "an IPython AST transformer": _ids(ip.ast_transformers),
        "a custom exception handler": [repr(ip.custom_exceptions)],
        "an IPython event hook": sorted((name, _ids(cbs)) for name, cbs in ip.events.callbacks.items()),
        "sys.excepthook or sys.displayhook": [_fingerprint(sys.excepthook), _fingerprint(sys.displayhook)],
        "a trace or profile function": _ids([sys.gettrace(), sys.getprofile()]),
        "an import hook": _ids(sys.meta_path) + _ids(sys.path_hooks),
        "a method of the IPython shell or the kernel":
            [shadowed(ip), shadowed(kernel) if kernel is not None else []] +
            sorted((c.__module__, c.__qualname__, sorted((k, _fingerprint(v)) for k, v in vars(c).items()))
                   for c in classes),
        "a kernel message handler": sorted(
            (k, getattr(getattr(v, "__func__", v), "__qualname__", "?"))
            for k, v in getattr(kernel, "shell_handlers", {}).items()),
        # The module object, and its class (a module's __class__ can be assigned).
        "a module in sys.modules": {n: (id(sys.modules.get(n)), id(type(sys.modules.get(n))))
                                    for n in modules},
        # Functions and classes only: data attributes change on their own (sys.last_value after
        # an error, caches); replacing what the checks call is what matters.
        "an attribute of a check module or of a module it uses": {
            n: {k: _fingerprint(v) for k, v in list(vars(sys.modules[n]).items())
                if (callable(v) and not isinstance(v, types.ModuleType)
                    # a module a check module holds, rebound (kernel_entry.plain = ...)
                    or isinstance(v, types.ModuleType) and n.startswith("autograder.checks"))
                and not k.startswith("_grader")
                and k not in ("last_type", "last_value", "last_traceback", "last_exc")}
            for n in modules if sys.modules.get(n) is not None},
        "a name the notebook imported from the course": course_values,
        "a method of tf.GradientTape or of another class the checks observe": {
            cls.__qualname__: sorted((k, _fingerprint(v)) for k, v in vars(cls).items()
                                     if callable(v) or isinstance(v, (staticmethod, classmethod)))
            for cls in _observed_classes()},
    }


def _changed(now, before):
    """What differs between two states; for dicts, a key added is not a change (a module imported
    later, a name defined later), a key removed is (an attribute deleted, then put back as another
    object after a check, would otherwise look new)."""
    found = []
    for what, value in now.items():
        if not _same(value, before.get(what)):
            found.append(what)
    return found


def _same(now, before) -> bool:
    """Equal; for dicts, at every key of ``before``, each still held by ``now`` (keys added are
    not compared; nested dicts alike)."""
    if isinstance(now, dict) and isinstance(before, dict):
        return before.keys() <= now.keys() and all(_same(now[k], before[k]) for k in before)
    return now == before


_REALPATHS = {}  # realpath of each file name, for one check (this source is run anew for each)


def _realpath(path):
    """``os.path.realpath(path)``, each exact str computed once per check (the files of the check
    modules' hundreds of functions are a few dozen); any other object is resolved every time (a
    str subclass could pose as a key it is not)."""
    if type(path) is not str:
        return os.path.realpath(path)
    if path not in _REALPATHS:
        _REALPATHS[path] = os.path.realpath(path)
    return _REALPATHS[path]


def _course_function(item, checks_dir, trusted) -> bool:
    """Whether a value found in a check module's table is not a function, or a function of a
    trusted file; one of a check module's own file must be that module's attribute of its name
    (which :func:`_check_modules` compares with the file)."""
    if not isinstance(item, types.FunctionType):
        return True
    while hasattr(item, "__wrapped__") and isinstance(item.__wrapped__, types.FunctionType):
        item = item.__wrapped__
    path = _realpath(item.__code__.co_filename)
    if not path.startswith(trusted):
        return False
    if not path.startswith(_realpath(checks_dir) + os.sep) or item.__name__ == "<lambda>":
        return True
    owner = sys.modules.get(item.__module__)
    held = getattr(owner, item.__name__, None)
    while hasattr(held, "__wrapped__") and held is not item:
        held = held.__wrapped__
    return held is item


def _canonical(value):
    """What identifies a code object (its bytecode, constants, names and arguments, nested code
    alike) or a constant, as a tuple of plain values whose ``repr`` is the same in every process
    (frozensets sorted: their order follows string hashes, which differ between processes)."""
    if isinstance(value, types.CodeType):
        return ("code", value.co_name, value.co_argcount, value.co_posonlyargcount,
                value.co_kwonlyargcount, value.co_flags, value.co_code,
                tuple(_canonical(c) for c in value.co_consts), value.co_names, value.co_varnames,
                value.co_freevars, value.co_cellvars)
    if type(value) is tuple:
        return ("tuple",) + tuple(_canonical(c) for c in value)
    if type(value) is frozenset:
        return ("frozenset",) + tuple(sorted(repr(_canonical(c)) for c in value))
    return (type(value).__name__, repr(value))


def code_digest(code) -> str:
    """sha256 (hex) of a code object's :func:`_canonical` form. The grader computes the same
    digest of the code it compiles from the check modules' files (:mod:`.preprocessors.probe`)
    and compares: no reference is kept in the kernel, where a notebook could change it."""
    return PINNED["sha256"](repr(_canonical(code)).encode()).hexdigest()


def _method_code(cls, name):
    method = vars(cls).get(name)
    method = getattr(method, "__func__", None) or getattr(method, "fget", None) or method
    return getattr(method, "__code__", None)


def _definition(module, name, methods, trusted):
    """The digest of what ``module`` holds under ``name``, a top-level definition of its file: a
    function's code (a decorated one: each wrapper from a trusted file, the innermost of this
    module), or for a class (``methods``: the names its file defines in its body) the tuple of
    its methods' digests; None when it is not of that form."""
    value = vars(module).get(name)
    if methods is not None:
        if not (isinstance(value, type) and value.__module__ == module.__name__):
            return None
        codes = [_method_code(value, m) for m in methods]
        if not all(isinstance(c, types.CodeType) for c in codes):
            return None
        return tuple(code_digest(c) for c in codes)
    layers = [value]
    while hasattr(layers[-1], "__wrapped__") and len(layers) < 10:
        layers.append(layers[-1].__wrapped__)
    inner = layers[-1]
    code = getattr(inner, "__code__", None)
    if getattr(inner, "__module__", None) != module.__name__ or not isinstance(code, types.CodeType):
        return None
    # A wrapper without code of its own (functools.cache's) counts as of the module's file.
    here = getattr(module, "__file__", None) or "?"
    if not all(_realpath(getattr(getattr(f, "__code__", None), "co_filename", here)).startswith(trusted)
               for f in layers):
        return None
    return code_digest(code)


def _check_modules(checks_dir, definitions):
    """Findings on the course's check modules (each must be a file of ``checks_dir``; the tables
    they hold must hold the course's functions) and, for each loaded module the grader named in
    ``definitions`` (``{module: {name: None for a function, or a class's method names}}``), the
    digests of what it holds under those names: ``(findings, {module: {name: digest}})``."""
    found, digests = [], {}
    trusted = tuple(_realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, checks_dir})
    for name, module in list(sys.modules.items()):
        if not name.startswith("autograder.checks.") or module is None:
            continue
        path = _realpath(getattr(module, "__file__", None) or "?")
        if not path.startswith(_realpath(checks_dir) + os.sep):
            found.append(f"check module {name} is not a file of the course ({path})")
            continue
        if name in definitions:
            digests[name] = {d: _definition(module, d, methods, trusted)
                             for d, methods in definitions[name].items()}
    for name, module in list(sys.modules.items()):  # what the modules' tables hold
        if not name.startswith("autograder.checks") or module is None:
            continue
        for attr, table in list(vars(module).items()):
            if isinstance(table, (dict, list, tuple)) and not attr.startswith("__"):
                items = list(table.values() if isinstance(table, dict) else table)[:10_000]
                if not all(_course_function(item, checks_dir, trusted) for item in items):
                    found.append(f"{name}.{attr} is not the course's code")
    user_checks = get_ipython().user_ns.get("checks")
    if user_checks is not None and (
            not isinstance(user_checks, types.ModuleType)
            or sys.modules.get(getattr(user_checks, "__name__", "")) is not user_checks
            or not _realpath(getattr(user_checks, "__file__", None) or "?").startswith(
                _realpath(checks_dir) + os.sep)):
        found.append("the name 'checks' no longer refers to the course's check module")
    return found, digests


def _plain(value) -> bool:
    """Whether ``value`` is made only of dicts, lists, tuples, strings, ints and None (exact types:
    a subclass could compare equal to anything). A loop over a stack, not recursion: a state holds
    tens of thousands of values, read at every check."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is not str and kind is not int and kind is not bool and item is not None:
            return False
    return True


def _record_digest(state):
    """sha256 (hex) of a recorded state's ``repr`` (None for no state, ``"not plain data"`` for
    one holding anything else). The grader compares the digest of the record a probe finds with
    the one it was sent when that record was made."""
    if state is None:
        return None
    if not _plain(state):
        return "not plain data"
    return PINNED["sha256"](repr(state).encode()).hexdigest()


def _classes():
    """Every class of the interpreter, from ``object`` down (``type.__subclasses__``)."""
    seen, stack = {}, [object]
    while stack:
        for sub in type.__subclasses__(stack.pop()):
            if id(sub) not in seen:
                seen[id(sub)] = sub
                stack.append(sub)
    return seen.values()


def _posing():
    """Findings on classes that claim a check module's name: one whose ``__module__`` is a check
    module's and whose ``__qualname__`` is a class that module holds, without being it; and the
    grader's entry (``kernel_entry.Entry``, pinned by the door) renamed or replaced."""
    found = []
    name = "autograder.checks.kernel_entry"
    if ENTRY is not None and (
            getattr(sys.modules.get(name), "Entry", None) is not ENTRY
            or type.__getattribute__(ENTRY, "__qualname__") != "Entry"
            or type.__getattribute__(ENTRY, "__module__") != name):
        found.append("the grader's entry kernel_entry.Entry was renamed or replaced")
    for cls in _classes():
        module = cls.__dict__.get("__module__")
        if not (isinstance(module, str) and module.startswith("autograder.checks")):
            continue
        qualname = type.__getattribute__(cls, "__qualname__")
        held = sys.modules.get(module)
        for part in str(qualname).split("."):
            held = getattr(held, part, None) if "<" not in part else None
        # Without a pinned entry (no graded cell of the course's checks) nothing asks kernel_entry.
        if held is not None and held is not cls or module == name and ENTRY is not None and cls is not ENTRY:
            found.append(f"a class posing as the course's {module}.{qualname}"[:200])
    return sorted(set(found))


def _forget_next_cell(ip):
    """Keep the next cell's source (a graded cell: hidden tests) out of ``linecache``, where IPython
    puts every cell for its tracebacks and where code the cell calls could read it."""
    compiler = ip.compile
    cache = type(compiler).cache

    def once(transformed_code, number=0, raw_code=None):
        del compiler.cache
        name = cache(compiler, transformed_code, number, raw_code)
        linecache.cache.pop(name, None)
        return name

    compiler.cache = once


def probe(token, checks_dir, graded, forget_next=False, definitions=None):
    """``{"changed": what changed since the last probe, "checks": findings on the check modules
    (before a ``graded`` cell), "code": their definitions' digests (:func:`_check_modules`),
    "record": (digest of the state the last probe recorded, digest of the one recorded now)}``.
    The state is kept on ``builtins`` under ``token``, where the notebook could reach it: the
    grader compares each digest with the one it was sent when the record was made. With
    ``forget_next`` (a graded cell the kernel runs), the next cell's source is kept out of
    ``linecache``."""
    holder = vars(builtins).setdefault(token, {})
    if forget_next:
        _forget_next_cell(get_ipython())
    now = _state()
    before = holder.get("state")
    holder["state"] = now
    record = (_record_digest(before), _record_digest(now))
    changed = _changed(now, before) if record[0] not in (None, "not plain data") else []
    checks, code = _check_modules(checks_dir, definitions or {}) if graded else ([], {})
    return {"changed": changed, "checks": checks + (_posing() if graded else []), "code": code,
            "record": record}
