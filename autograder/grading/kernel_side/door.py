"""Kernel-side half of the grader's door into a grading kernel (see :mod:`.preprocessors.door`).

This file is not imported by the grader: its source is sent to the grading kernel and run there,
silently, by the grader's first request, before any cell a student can edit has run. ``make``
builds the class ``Door`` and returns what identifies it: the addresses (``object.__hash__``, an
object's identity, which no attribute can set) of the class, of its two functions, their code
objects and default arguments, and of the course's entry function
(:meth:`autograder.checks.kernel_entry.Entry.observe`) with its code and defaults. Every later
request finds the class by that address, among ``object.__subclasses__()``, and sends back the
same addresses read afresh beside its answer, so the grader sees whether anything was swapped.

Nothing here reads a global name once ``make`` has returned: what the door's functions use
(``exec``, a copy of the builtins as they were, the ``sys`` module and the shell as they were,
the entry function) is bound as default arguments, in tuples, which cannot be changed in place;
replacing a function's defaults or code changes the addresses the grader compares.
"""


def make(token, course):
    """Build the door; keep it alive on ``builtins`` under ``token + "_door"``; return its
    addresses: ``{"door": int, "observe": (6 ints, or 3 without the course's entry), "probe":
    (3 ints)}``, as :data:`.preprocessors.door.FINGERPRINTS` reads them afresh. With ``course`` (the notebook has
    graded cells of this course's checks) the course's entry is imported as the set-up cell
    imports it (``utils`` first) and bound in the door."""
    import builtins
    import hashlib
    import linecache
    import os
    import sys
    import types

    from IPython import get_ipython

    entry = entry_observe = None
    if course:
        import utils  # noqa: F401  first, as in the notebooks' set-up cell
        from autograder.checks.kernel_entry import Entry as entry

        entry_observe = vars(entry)["observe"].__func__
    # What the integrity check reads the interpreter with, as it is now, before the notebook's
    # code: an import in the check could be answered by a module the notebook put in sys.modules.
    pinned = (("sys", sys), ("builtins", builtins), ("types", types), ("os", os),
              ("linecache", linecache), ("sha256", hashlib.sha256), ("SHELL", get_ipython()),
              ("ENTRY", entry))
    frozen_builtins = tuple(vars(builtins).items())

    class Door:
        def observe(check, args, request, _observe=entry_observe):
            return _observe(check, args, request)

        def probe(source, args, _exec=exec, _dict=dict, _builtins=frozen_builtins, _pinned=pinned):
            namespace = _dict(PINNED=_pinned, __builtins__=_dict(_builtins))
            _exec(source, namespace)
            return namespace["probe"](*args)

    vars(builtins)[token + "_door"] = Door
    h = object.__hash__
    through, check = vars(Door)["observe"], vars(Door)["probe"]
    return {"door": h(Door),
            "observe": tuple(h(x) for x in (through, through.__code__, through.__defaults__)) + (
                tuple(h(x) for x in (entry_observe, entry_observe.__code__, entry_observe.__defaults__))
                if entry_observe is not None else ()),
            "probe": tuple(h(x) for x in (check, check.__code__, check.__defaults__))}
