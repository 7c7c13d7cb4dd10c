"""The grader's door into a grading kernel: pinned before any student cell runs, checked at every
request.

The grader reaches the kernel halves of the checks (:mod:`autograder.checks.kernel_entry`) and
the integrity check (:mod:`.kernel_side.integrity_probe`) through silent requests whose
expressions run in the student's interpreter. Nothing a notebook can set by a name or a string
may decide where such a request goes: a class can claim any ``__module__`` and ``__qualname__``,
and a name of the notebook can shadow ``exec``. So:

- **Pinned.** The notebook's first request, before any cell a student can edit has run, builds the
  door from this grader's source (:mod:`.kernel_side.door`, run with the ``exec`` of an interpreter
  no student code has touched yet) and reads back its addresses (:func:`pin_expression`): the
  class, its two functions (the way to the checks' kernel halves and the way to the integrity
  check), their code objects and default arguments, and the course's entry function with its code
  and defaults. The door binds, as default arguments, ``exec``, the builtins and the modules the
  integrity check reads as they were then; the integrity check never goes through the course's
  entry, so a swapped entry cannot answer it.
- **Found by address.** Every later request finds the door among ``object.__subclasses__()`` by
  ``object.__hash__`` (an object's identity), reached from the literal ``()``: no name, no
  attribute a class can set, no order of classes decides it (:func:`through`).
- **Checked.** Each answer comes with the same addresses read afresh; :func:`read` compares them
  with the pinned ones. A function, code object or default replaced since the pin makes the
  answer untrusted (:class:`Altered`, naming what changed): its graded cell scores 0 and the
  notebook is flagged for review. A door that is gone (its holder deleted) answers IndexError: the
  same, as "the kernel could not answer the grader".

What this cannot see: code that frees every reference to the door and allocates another class at
the same address (it needs the garbage collector's or frames' introspection, which the static scan
flags), and changes to the interpreter below Python (ctypes, flagged too).
"""
from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["SOURCE", "Altered", "pin_expression", "read_pin", "through", "read"]

SOURCE = (Path(__file__).parents[1] / "kernel_side" / "door.py").read_text()

# object.__hash__, reached from a literal: an object's identity, whatever its class says.
_HASH = "().__class__.__base__.__hash__"

# What each address of a route is, in the order the kernel sends them.
_PARTS = {
    "observe": ("the door's function to the checks", "that function's code",
                "that function's default arguments",
                "the entry function (kernel_entry.Entry.observe)", "the entry function's code",
                "the entry function's default arguments"),
    "probe": ("the door's function to the integrity check", "that function's code",
              "that function's default arguments"),
}

# The longest answer read back (the plain data of an answer is at most 4 MiB, quoted).
_MAX_TEXT = 10 * 2 ** 20


class Altered(ValueError):
    """An answer came through a door that is not the pinned one; ``str()`` says what changed."""


def pin_expression(token: str, course: bool) -> str:
    """The first request of a notebook, evaluated before any cell a student can edit: build the
    door (kept on ``builtins`` under ``token + "_door"``) and return its addresses. ``course``:
    the notebook has graded cells of this course's checks (the door then binds the course's
    entry, importing it as the set-up cell does)."""
    return f"(lambda ns: (exec({SOURCE!r}, ns), ns['make']({token!r}, {bool(course)!r}))[1])({{}})"


def read_pin(result) -> dict | None:
    """The door's addresses from the pin request's ``user_expressions`` result (untrusted, but
    made before any student code ran): ``{"door": int, "observe": (int, ...), "probe": (int, ...)}``,
    or None when the result is not of that form."""
    text = _text(result)
    try:
        pin = ast.literal_eval(text) if text and len(text) < 10_000 else None
    except Exception:
        return None
    ok = isinstance(pin, dict) and set(pin) == {"door", "observe", "probe"} and \
        isinstance(pin["door"], int) and all(
            isinstance(pin[k], tuple) and all(isinstance(x, int) for x in pin[k])
            for k in ("observe", "probe"))
    return pin if ok else None


def through(pin: dict, route: str, arguments: str) -> str:
    """The expression that calls the door's ``route`` (``"observe"`` or ``"probe"``) with
    ``arguments`` (Python source of the call's arguments) and returns ``(addresses, answer)``.

    Only lambda parameters and a comprehension's variable are named: nothing the notebook defines
    is looked up."""
    find = f"[d for d in ().__class__.__base__.__subclasses__() if h(d) == {int(pin['door'])}][0]"
    if route == "observe":
        body = ("(lambda f: (lambda e: ((h(f), h(f.__code__), h(f.__defaults__), h(e), "
                f"h(e.__code__), h(e.__defaults__)), f({arguments})))(f.__defaults__[0]))"
                "(D.__dict__['observe'])")
    else:
        body = (f"(lambda f: ((h(f), h(f.__code__), h(f.__defaults__)), f({arguments})))"
                "(D.__dict__['probe'])")
    return f"(lambda h: (lambda D: {body})({find}))({_HASH})"


def _text(result):
    """The ``text/plain`` of an ok ``user_expressions`` result, or None."""
    if not isinstance(result, dict) or result.get("status") != "ok" or \
            not isinstance(result.get("data"), dict):
        return None
    text = result["data"].get("text/plain")
    return text if isinstance(text, str) else None


def read(pin: dict, route: str, result):
    """The answer of a request made by :func:`through`, from its ``user_expressions`` result
    (untrusted): the value the door's function returned (a literal: str, dict, ...).

    Raises:
        Altered: the addresses sent back are not the pinned ones (the message names each part
            that changed).
        ValueError: the result is not an ok ``(addresses, answer)`` literal within the size
            limit.
    """
    text = _text(result)
    if text is None or len(text) > _MAX_TEXT or text[:2] != "((":
        raise ValueError("not an answer through the door")
    try:
        addresses, answer = ast.literal_eval(text)
    except Exception:  # deep nesting, a non-literal, not a pair ...
        raise ValueError("not an answer through the door") from None
    pinned = pin[route]
    if not isinstance(addresses, tuple) or len(addresses) != len(pinned):
        raise Altered("the door's answer has another form")
    changed = [part for part, now, then in zip(_PARTS[route], addresses, pinned) if now != then]
    if changed:
        raise Altered("; ".join(changed))
    return answer
