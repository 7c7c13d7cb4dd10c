"""Where a grading kernel answers the grader: the kernel half of a graded test cell.

When a class is graded, a graded cell's source (the hidden tests) is never run in the student's
kernel. The grader (the verdict module of the grading pipeline) asks the kernel, with a silent request,
to call :meth:`Entry.observe` once per check call::

    observe("check_square_grad", lambda: (square_grad,), '{"cases": ..., "hidden": true}')

It does not look this class up by a name: the grader's first request, made before any cell a
student can edit, binds :meth:`Entry.observe` in a door of its own and reads back the addresses
of the function, its code and its defaults; every later request goes through that door, found
by its address, and sends those addresses back to be compared
(``autograder/grading/preprocessors/door.py``). :meth:`Entry.observe` runs the exercise's kernel
half (its ``collect``) on every case and returns plain data (:mod:`autograder.checks.plain`)::

    {"eager": false, "cases": [{"obs": {...}}, ..., {"finding": {"mistake": "M01",
                                                               "code": null, "type": null}}]}

It stops at the first finding. The grader judges the observations against references it
computes itself and words the findings itself: what this returns is data, never a verdict.
Student code runs in this interpreter and can change what it returns; it cannot change the
references or the words.
"""
import importlib

from . import judge, plain
from .compare import CheckFailed
from .harness import COLLECTORS, graph_mode, quiet_tensorflow

class Entry:
    """The grader's way into the kernel (see the module's docstring)."""

    @staticmethod
    def observe(check_name: str, args, request: str) -> str:
        """Run the kernel half of ``check_name`` on the request's cases.

        Args:
            check_name: a check function's name (``check_square_grad``).
            args: a function of no arguments returning the check's positional arguments, the
                student's objects (evaluated here, in the notebook's namespace).
            request: plain data (text): ``{"cases": [...], "hidden": bool, "options": {...}}``.
        Returns:
            plain data (text), as the module's docstring shows.
        """
        request = plain.loads(request)
        entry = judge.load()[check_name]
        if check_name not in COLLECTORS:
            importlib.import_module(entry.module)
        collect = COLLECTORS[check_name]
        # Never raises for what the notebook's objects do: the grader takes an error from this
        # request for a door that failed (altered or gone).
        try:
            values = tuple(args())
        except NameError as error:
            return plain.dumps({"eager": False, "cases": [{"finding": {
                "mistake": None, "code": "not_defined", "type": getattr(error, "name", None)}}]})
        except Exception as error:  # an argument the notebook's code could not give
            return plain.dumps({"eager": False, "cases": [{"finding": {
                "mistake": None, "code": "raised", "type": type(error).__name__}}]})
        replies = []
        with graph_mode() as was_eager, quiet_tensorflow():
            for index, case in enumerate(request["cases"]):
                ctx = entry.context(index, case, request["hidden"], reveal=False)
                try:
                    observed = collect(*values, case=case, ctx=ctx, **request["options"])
                    replies.append({"obs": observed})
                except CheckFailed as error:
                    replies.append({"finding": {"mistake": error.mistake, "code": error.code,
                                                "type": getattr(error, "raised", None)}})
                    break
                except Exception as error:  # the student's code, outside harness.call
                    replies.append({"finding": {"mistake": None, "code": "raised",
                                                "type": type(error).__name__}})
                    break
        return plain.dumps({"eager": was_eager, "cases": replies})
