"""How every check calls student code, and how it names what went wrong.

One way in for all check modules:

- :func:`check` decorates each ``check_<name>``: it names the exercise in every failure message
  and runs the check with ``tf.config.run_functions_eagerly`` off (M19: a student who left it on
  is graded on graphs like everyone else, and a failure message says the switch is on); the
  student's setting is restored afterwards.
- :func:`call` calls the student's function with TensorFlow's Python logger quiet (M02 logs a
  warning on stderr, which nbgrader would score as a failure) and turns each exception it knows
  into a named mistake, one detector per cause (:data:`DETECTORS`). An unanswered exercise
  (the release's ``raise NotImplementedError()``, :func:`is_not_answered`; TensorFlow's own
  NotImplementedError is M16) gets the same message in every assignment.
- :func:`recording_autodiff` is the one recorder of autodiff evidence: every tape call that asks
  for a derivative (``gradient``, ``jacobian``, ``batch_jacobian``) and every
  ``ForwardAccumulator.jvp``, with which value each produced, of which target, on which tape
  (:class:`GradientRecord`); :func:`recording_gradients` is its reverse-mode part. Both rest on
  :func:`wrapping_autodiff_calls`.
- :func:`explain_missing_gradient` finds why a gradient is None by experiment: it runs the
  student's code again on a fresh problem, traced as a graph, records what ``tape.gradient`` was
  asked for, and walks the graph from that target back to the weights: a ``StopGradient`` (M13),
  an op without a gradient such as ``Round``, ``ArgMax`` or an integer ``Cast`` (M12), NumPy on a
  symbolic tensor (M14), or an intact path the tape did not record (M05).

Checks keep no TensorFlow state between calls: traced functions, variables and optimizers are
made per call or per case.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sys
import traceback

import numpy as np
import tensorflow as tf

from . import functions, judge, plain
from .compare import CheckFailed, passed

__all__ = ["check", "call", "graph_mode", "explain_missing_gradient", "is_tf_function",
           "require_tf_function", "refuse_posing",
           "diagnose", "DETECTORS", "NOT_ANSWERED", "exercise_check",
           "COLLECTORS", "recording_gradients", "GradientRecord", "is_decoy",
           "wrapping_tape_calls", "TAPE_METHODS", "is_not_answered", "recording_autodiff",
           "wrapping_autodiff_calls", "AUTODIFF_METHODS", "AutodiffCall", "shifted", "TAPE_SHIFT"]

NOT_ANSWERED = ("not written yet: it raises NotImplementedError.",
                "replace `raise NotImplementedError()` in the exercise cell with your code, run "
                "that cell, then run this one again.")

EAGER_NOTE = ("Note [M19: tf.config.run_functions_eagerly(True) left on]: your notebook runs "
              "every tf.function eagerly, so graph-only behaviour is hidden there; this check ran "
              "your functions as graphs. Call tf.config.run_functions_eagerly(False) when you are "
              "done debugging.")


# ----------------------------------------------------------------------------- running modes

@contextlib.contextmanager
def quiet_tensorflow():
    """Silence TensorFlow's Python logger inside the block (restored afterwards)."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def graph_mode():
    """Run ``tf.function`` s as graphs inside the block, whatever
    ``tf.config.run_functions_eagerly`` says; yields True when the switch was on (M19). The
    switch is restored on exit."""
    was_eager = functions.functions_run_eagerly()
    if was_eager:
        with quiet_tensorflow():
            functions.run_functions_eagerly(False)
    try:
        yield was_eager
    finally:
        if was_eager:
            with quiet_tensorflow():
                functions.run_functions_eagerly(True)


def check(exercise: str):
    """Decorate a ``check_<name>`` function: failures name ``exercise``; student functions run
    as graphs (:func:`graph_mode`), and when the student had left eager execution on, a failure
    also carries the M19 note."""
    def decorate(check_fn):
        @functools.wraps(check_fn)
        def run_check(*args, **kwargs):
            __tracebackhide__ = True
            with graph_mode() as was_eager:
                try:
                    return check_fn(*args, **kwargs)
                except CheckFailed as error:
                    error.add_context(exercise=exercise, note=EAGER_NOTE if was_eager else None)
                    raise
        return run_check
    return decorate


# ----------------------------------------------------------------------------- two halves

#: Check function name (``"check_square_grad"``) -> the exercise's kernel half, its
#: ``collect(*args, case, ctx, **options)`` (see :mod:`autograder.checks.judge`).
COLLECTORS: dict = {}


def exercise_check(check_name: str, collect):
    """The visible check of an exercise from its two halves: for each case, the kernel half
    ``collect`` observes the student's code, and the grader half (the exercise's judge, in
    :mod:`autograder.checks.judge`) decides from the same plain data a graded run sends the
    grader (:func:`~autograder.checks.plain.roundtrip`), so a student sees the verdict a graded
    run gives. Registers ``collect`` in :data:`COLLECTORS` for grading kernels.

    The check is ``check_<name>(*args, cases=None, hidden=False, **options)``: ``args`` are the
    student's objects (the function under test), ``cases`` default to the exercise's visible
    ones, ``hidden`` names cases by number; it prints one line when every case passes and raises
    CheckFailed at the first that does not.
    """
    entry = judge.load()[check_name]
    COLLECTORS[check_name] = collect

    @check(entry.name)
    def run_check(*args, cases=None, hidden=False, **options):
        __tracebackhide__ = True
        cases = entry.cases if cases is None else cases
        for index, case in enumerate(cases):
            case = plain.roundtrip(case)
            ctx = entry.context(index, case, hidden)
            observed = plain.roundtrip(collect(*args, case=case, ctx=ctx, **options))
            judge.judge_observation(entry, case, {"obs": observed}, ctx, options)
        passed(entry.name, len(cases))

    run_check.__name__ = run_check.__qualname__ = check_name
    run_check.__module__ = collect.__module__  # the topic module that defines the check
    run_check.__doc__ = (f"Check ``{entry.name}``: {entry.idea}\n\n"
                         f"Kernel half: {collect.__module__}.{collect.__name__}; grader half: "
                         f"{entry.judge.__module__}.{entry.judge.__name__}.\n\n"
                         + (collect.__doc__ or ""))
    return run_check


#: The largest target (entries) whose value an :class:`AutodiffCall` keeps.
MAX_TARGET_SIZE = 4096


def collect_prediction(*predicted, case, ctx):
    """Kernel half of every prediction check (``check_square_grad_prediction(predicted_float,
    predicted_int)``, ``check_predict_<topic>(predicted_a, ...)``): the values of the prediction
    variables, as they are; the judge checks they are plain Python values.

    Returns:
        ``{"values": [each predicted value]}``.
    """
    return {"values": list(predicted)}


def float_values(value):
    """``value`` (a tensor, variable, array or number) as a float64 array; None for what has
    no value (a symbolic tensor, None, an object of the student's)."""
    if value is None:
        return None
    try:
        return np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)
    except Exception:  # a symbolic tensor, or anything a student returned
        return None


def _same_values(got: np.ndarray, want) -> bool:
    return (want is not None and want.shape == got.shape
            and bool(np.allclose(want, got, rtol=1e-6, atol=1e-7)))


class AutodiffCall:
    """One automatic differentiation a block ran (:func:`recording_autodiff`).

    Attributes:
        method: ``"gradient"``, ``"jacobian"``, ``"batch_jacobian"`` (a GradientTape's) or
            ``"jvp"`` (a ``tf.autodiff.ForwardAccumulator``'s: forward mode).
        tape: the GradientTape or ForwardAccumulator asked.
        target: what was differentiated (a tape's target; the primal output given to jvp).
        sources: the tape call's sources; None for jvp (its sources are the accumulator's).
        results: the tensors it returned (nested lists flattened, None left out).
        target_value: the target's value when the call was made, as float64 (one tensor of
            at most :data:`MAX_TARGET_SIZE` entries, else None): which function was
            differentiated.
    """

    def __init__(self, method, tape, target, sources, result):
        self.method, self.tape, self.target, self.sources = method, tape, target, sources
        self.flat_sources = [] if sources is None else tf.nest.flatten(sources)
        self.flat_results = tf.nest.flatten(result)
        self.results = [r for r in self.flat_results if r is not None]
        flat = tf.nest.flatten(target)
        self.target_value = None
        try:
            if len(flat) == 1 and int(np.prod(flat[0].shape)) <= MAX_TARGET_SIZE:
                self.target_value = float_values(flat[0])
        except Exception:  # a target without a shape: an object of the student's
            pass

    @property
    def forward(self) -> bool:
        """Whether this is forward-mode autodiff (``ForwardAccumulator.jvp``)."""
        return self.method == "jvp"

    def gradient_of(self, variable):
        """What this call returned for ``variable`` (a source of it, by identity), or None."""
        if len(self.flat_sources) != len(self.flat_results):
            return None
        for source, result in zip(self.flat_sources, self.flat_results):
            if source is variable and result is not None:
                return result
        return None


class GradientRecord:
    """The automatic differentiation a block ran (:func:`recording_autodiff`, or
    :func:`recording_gradients` for reverse mode only): ``events`` is a list of
    :class:`AutodiffCall` in call order; ``calls`` the same as ``(tape, target, sources,
    result)`` tuples (a jvp's: ``(accumulator, primals, None, result)``), ``methods`` their
    method names; ``graph_gradients`` counts ``tf.gradients`` calls."""

    def __init__(self):
        self.calls: list = []
        self.methods: list = []
        self.events: list = []
        self.graph_gradients = 0

    def add(self, method, tape, target, sources, result) -> None:
        """Record one call (the recorders' ``on_call``)."""
        self.calls.append((tape, target, sources, result))
        self.methods.append(method)
        self.events.append(AutodiffCall(method, tape, target, sources, result))

    def results(self) -> list:
        """Every tensor a gradient call returned (nested lists flattened, None left out)."""
        return [r for *_, result in self.calls for r in tf.nest.flatten(result) if r is not None]

    def produced(self, value) -> bool:
        """Whether ``value`` is a tensor some gradient call returned: the same object, or a
        tensor of equal shape and values (a copy, ``tf.identity``, ``.numpy()``)."""
        if value is None:
            return False
        for result in self.results():
            if value is result:
                return True
        try:
            got = np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)
        except Exception:
            return False
        for result in self.results():
            try:
                want = np.asarray(result.numpy(), dtype=np.float64)
            except Exception:  # a symbolic tensor of a graph: compared by identity only
                continue
            if want.shape == got.shape and np.allclose(want, got, rtol=1e-6, atol=1e-7):
                return True
        return False

    def tapes(self) -> list:
        """The distinct tapes gradients were asked of, in order of their first call."""
        seen = []
        for tape, *_ in self.calls:
            if not any(tape is t for t in seen):
                seen.append(tape)
        return seen

    def producers(self, value) -> list:
        """The :class:`AutodiffCall` s that returned ``value``: the same object, or else a
        tensor of equal shape and values (a copy, ``tf.identity``, ``.numpy()``)."""
        if value is None:
            return []
        same = [c for c in self.events if any(r is value for r in c.results)]
        if same:
            return same
        got = float_values(value)
        if got is None:
            return []
        return [c for c in self.events if any(_same_values(got, float_values(r)) for r in c.results)]

    def derived(self, call: AutodiffCall) -> bool:
        """Whether ``call`` differentiated what an earlier call returned: its target is such a
        result (the same object, equal values, or entries of it: ``g[i]``), as a second
        derivative's call does."""
        earlier = self.events[:self.events.index(call)]
        targets = tf.nest.flatten(call.target)
        return bool(targets) and all(self._derived(t, earlier) for t in targets)

    @staticmethod
    def _derived(target, earlier) -> bool:
        if any(r is target for c in earlier for r in c.results):
            return True
        got = float_values(target)
        if got is None:
            return False
        for c in earlier:
            for result in c.results:
                want = float_values(result)
                if want is None:
                    continue
                if _same_values(got, want):
                    return True
                if 0 < got.size <= want.size and all(
                        np.isclose(want.ravel(), v, rtol=1e-6, atol=1e-7).any()
                        for v in got.ravel()):
                    return True
        # Rows of several calls stacked (one jvp per direction, tf.stack of them): every entry
        # is an entry of one of the earlier results.
        pool = [v.ravel() for c in earlier for r in c.results
                if (v := float_values(r)) is not None]
        if len(pool) > 1 and 0 < got.size <= sum(p.size for p in pool):
            every = np.concatenate(pool)
            return all(np.isclose(every, v, rtol=1e-6, atol=1e-7).any() for v in got.ravel())
        return False

    def gradients_of(self, variable) -> list:
        """Every value the calls returned for ``variable`` (a source, by identity), in order."""
        found = [c.gradient_of(variable) for c in self.events]
        return [g for g in found if g is not None]

    def largest_result(self) -> int:
        """The most entries any recorded call returned in one tensor (0 when none has a
        shape): a full Jacobian or Hessian of n inputs has n * n."""
        sizes = [0]
        for result in self.results():
            try:
                sizes.append(int(np.prod(result.shape)))
            except Exception:  # a result of unknown shape
                continue
        return max(sizes)


def is_decoy(target, sources, args=(), kwargs=None, result=None) -> bool:
    """Whether a ``gradient`` (or ``jacobian``) call computes nothing a tape recorded: its
    target is one of its sources, or it is given ``output_gradients`` and hands back what it was
    given (``result`` the same tensors, or equal in value: a formula passed through an identity).
    A vector-Jacobian product, ``tape.gradient(y, x, output_gradients=v)`` of a y the tape
    computed from x, is evidence like any other gradient. Decoys are not evidence that a tape
    computed a value."""
    given = (args[0] if args else None) if kwargs is None or "output_gradients" not in kwargs \
        else kwargs["output_gradients"]
    flat = tf.nest.flatten(sources)
    if any(t is s for t in tf.nest.flatten(target) for s in flat):
        return True
    if given is None:
        return False
    handed = [r for r in tf.nest.flatten(result) if r is not None]
    gave = [g for g in tf.nest.flatten(given) if g is not None]
    if not handed:
        return True
    for value in handed:
        if any(value is g for g in gave):
            return True
        got = float_values(value)
        if got is None or any(_same_values(got, float_values(g)) for g in gave):
            return True  # symbolic (not comparable): not evidence either way
    return False


#: What :func:`shifted` adds in the checks' experiments on where a value came from: far above
#: every tolerance, and no round number a formula would hold (defined with the judges, which
#: replay it).
TAPE_SHIFT = judge.TAPE_SHIFT

#: The GradientTape methods that compute a gradient: every spelling of reverse-mode autodiff.
TAPE_METHODS = ("gradient", "jacobian", "batch_jacobian")

#: Every spelling of automatic differentiation the recorder sees: the tape's methods and the
#: forward accumulator's ``jvp``.
AUTODIFF_METHODS = TAPE_METHODS + ("jvp",)


def shifted(result, shift: float):
    """``result`` (a tensor, or a nest of them with None) with ``shift`` added to every float
    tensor, in its dtype; anything else (None, IndexedSlices, integers) as it is."""
    def one(value):
        if isinstance(value, tf.Tensor) and value.dtype.is_floating:
            return value + tf.constant(shift, dtype=value.dtype)
        return value
    return tf.nest.map_structure(one, result)


@contextlib.contextmanager
def wrapping_autodiff_calls(on_call, forward: bool = True, shift: float | None = None):
    """Call ``on_call(method, tape, target, sources, result)`` after every
    ``GradientTape.gradient``, ``jacobian`` and ``batch_jacobian`` call made inside the block
    (eagerly or while a tf.function traces), ``method`` its name, and, with ``forward``, after
    every ``tf.autodiff.ForwardAccumulator.jvp`` call (``tape`` the accumulator, ``target``
    the primal output, ``sources`` None). Calls these make themselves (a jacobian's
    ``gradient`` calls) and decoys (:func:`is_decoy`) are left out. The methods are wrapped
    for the block only and restored on exit. This is the one recorder of autodiff evidence:
    every check module's recorder is built on it.

    With ``shift``, every call recorded hands its caller its result with ``shift`` added
    (:func:`shifted`), and ``on_call`` sees that result: an experiment on where a returned value
    came from. A value computed from the calls' results moves with them; numbers computed
    beside them (finite differences next to an unused tape call) do not. A shift is a constant,
    so derivatives taken of a shifted result are unchanged."""
    owners = [(tf.GradientTape, name) for name in TAPE_METHODS]
    if forward:
        owners.append((tf.autodiff.ForwardAccumulator, "jvp"))
    originals = [getattr(owner, name) for owner, name in owners]
    depth = [0]

    def wrap(name, original):
        def method(tape, target, *args, **kwargs):
            depth[0] += 1
            try:
                result = original(tape, target, *args, **kwargs)
            finally:
                depth[0] -= 1
            if name == "jvp":
                if depth[0] == 0:
                    result = result if shift is None else shifted(result, shift)
                    on_call(name, tape, target, None, result)
                return result
            sources = args[0] if args else kwargs.get("sources")
            # Only gradient takes output_gradients (its first optional argument after sources).
            decoy = is_decoy(target, sources, args[1:] if name == "gradient" else (),
                             kwargs if name == "gradient" else {}, result)
            if depth[0] == 0 and not decoy:
                result = result if shift is None else shifted(result, shift)
                on_call(name, tape, target, sources, result)
            return result
        method.__name__ = name
        return method

    for (owner, name), original in zip(owners, originals):
        setattr(owner, name, wrap(name, original))
    try:
        yield
    finally:
        for (owner, name), original in zip(owners, originals):
            setattr(owner, name, original)


@contextlib.contextmanager
def wrapping_tape_calls(on_call, shift: float | None = None):
    """:func:`wrapping_autodiff_calls` for the tape's methods only (``gradient``,
    ``jacobian``, ``batch_jacobian``): reverse mode; ``shift`` as there."""
    with wrapping_autodiff_calls(on_call, forward=False, shift=shift):
        yield


@contextlib.contextmanager
def recording_gradients(shift: float | None = None):
    """Record, in a :class:`GradientRecord`, every call that asks a tape for a gradient
    (``gradient``, ``jacobian``, ``batch_jacobian``: :func:`wrapping_tape_calls`) made inside
    the block, eagerly or while a tf.function traces: reverse mode only. Checks that accept
    every spelling of autodiff use :func:`recording_autodiff`. With ``shift``, every result is
    handed back shifted (:func:`wrapping_autodiff_calls`): an update applied from the tape's
    results moves with them, one computed beside them does not."""
    record = GradientRecord()
    with wrapping_tape_calls(record.add, shift=shift):
        yield record


@contextlib.contextmanager
def recording_autodiff(shift: float | None = None):
    """Record, in a :class:`GradientRecord`, every automatic differentiation made inside the
    block, eagerly or while a tf.function traces: the tape's ``gradient``, ``jacobian`` and
    ``batch_jacobian`` and ``tf.autodiff.ForwardAccumulator.jvp``
    (:func:`wrapping_autodiff_calls`; ``shift`` as there); ``tf.gradients`` calls are counted in
    ``graph_gradients``. The kernel-side evidence of every autodiff exercise: which values
    autodiff produced, of which target, on which tape or accumulator."""
    record = GradientRecord()

    def counted():
        record.graph_gradients += 1

    graph_spellings = [(tf, "gradients"), (tf.compat.v1, "gradients"), (tf, "hessians"),
                       (tf.compat.v1, "hessians")]
    with wrapping_autodiff_calls(record.add, shift=shift), counting_calls(graph_spellings,
                                                                          counted):
        yield record


@contextlib.contextmanager
def counting_calls(patched: list, on_call):
    """Within the block, each attribute ``(owner, name)`` of ``patched`` is wrapped so that every
    call of it (looked up at call time) first calls ``on_call()``; all are put back on leaving,
    even on an error."""
    originals = [getattr(owner, name) for owner, name in patched]

    def counting(original):
        def counted(*args, **kwargs):
            on_call()
            return original(*args, **kwargs)
        return counted

    for (owner, name), original in zip(patched, originals):
        setattr(owner, name, counting(original))
    try:
        yield
    finally:
        for (owner, name), original in zip(patched, originals):
            setattr(owner, name, original)


# ----------------------------------------------------------------------------- tf.function

def is_tf_function(fn) -> bool:
    """True when ``fn`` is a ``tf.function`` TensorFlow made (a decorated function or a bound
    decorated method; :func:`autograder.checks.functions.real_function`): an object that only
    answers isinstance for one is not."""
    return functions.is_tf_function(fn)


#: What a check says of an object posing as a tf.function (M87).
POSING = ("{name} answers isinstance for a tf.function, but it is not the Function that "
          "tf.function makes (type {type}): its traces and graphs are its own account, so the "
          "check cannot see graph mode.",
          "return what tf.function(...) or @tf.function makes, unchanged (no subclass, no "
          "methods of your own).")


def refuse_posing(fn, name: str) -> None:
    """Fail (M87, code ``posing_function``) when ``fn`` poses as a tf.function
    (:func:`autograder.checks.functions.is_posing`)."""
    __tracebackhide__ = True
    if functions.is_posing(fn):
        raise CheckFailed(POSING[0].format(name=name, type=type(fn).__name__), "M87", POSING[1],
                          code="posing_function") from None


def require_tf_function(fn, name: str, fix: str | None = None) -> None:
    """Fail unless ``fn`` is a ``tf.function``: the exercise is about what happens in a graph.
    ``fix`` says how to make one (default: decorate ``def name``). An object posing as one
    fails with M87."""
    __tracebackhide__ = True
    refuse_posing(fn, name)
    if type(fn) is functions.CONCRETE_TYPE:
        raise CheckFailed(f"{name} is a ConcreteFunction (one graph, from "
                          f"get_concrete_function): it never traces again, so what the exercise "
                          f"asks of a tf.function (its traces for every input) cannot be seen.",
                          "M21", "return the tf.function itself, not one of its concrete "
                          "functions.", code="concrete_function") from None
    if not is_tf_function(fn):
        raise CheckFailed(f"{name} is not a tf.function (got {type(fn).__name__}), so it would "
                          f"run eagerly and the check could not test graph mode.", None,
                          fix or f"put @tf.function on the line above `def {name}`.",
                          code="not_tf_function") from None


# ----------------------------------------------------------------------------- detectors
# Each detector takes the exception and what was called ("sum_even (input [1, 2])") and returns
# (mistake id or None, cause, fix) when it recognises the cause, else None.

def _first_line(error: BaseException) -> str:
    """The most useful line of a TensorFlow error message (the last non-empty one)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


#: The packages whose frames are TensorFlow's own (an exception raised there is not the
#: release's stub).
_TENSORFLOW_PACKAGES = ("tensorflow", "keras", "tf_keras")


def _original(error: BaseException) -> BaseException:
    """The exception a tf.function's trace raised, before AutoGraph re-raised it as a new one
    of the same type with "in user code:" frames in its message (the original is its
    ``__context__``)."""
    for _ in range(8):
        inner = error.__context__
        if not (hasattr(error, "ag_error_metadata") and inner is not None
                and isinstance(error, type(inner))):
            break
        error = inner
    return error


def _raised_by_tensorflow(error: BaseException) -> bool:
    """Whether the innermost frame of ``error``'s traceback is in TensorFlow's (or Keras's)
    own code, not in the notebook's."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    roots = [os.path.dirname(module.__file__) + os.sep for module in
             (sys.modules.get(name) for name in _TENSORFLOW_PACKAGES)
             if module is not None and getattr(module, "__file__", None)]
    return any(os.path.abspath(frames[-1].filename).startswith(root) for root in roots)


def is_not_answered(error: BaseException) -> bool:
    """Whether ``error`` is the release's stub, ``raise NotImplementedError()``: a
    NotImplementedError without a message, or raised by the notebook's own code (also when a
    tf.function's trace re-raised it). TensorFlow's own NotImplementedError (``numpy() is only
    available when eager execution is enabled``, from ``.numpy()`` inside a tf.function) is
    not: that is another mistake (M16)."""
    original = _original(error)
    return isinstance(original, NotImplementedError) and (
        not str(original).strip() or not _raised_by_tensorflow(original))


def _not_answered(error, what):
    if is_not_answered(error):
        return None, f"{what} is {NOT_ANSWERED[0]}", NOT_ANSWERED[1]


def _non_persistent(error, what):
    if isinstance(error, RuntimeError) and "non-persistent" in str(error):
        return ("M04", f"{what} raised RuntimeError: a tape frees what it recorded after its "
                f"first `gradient` call, and a second call was made on it.",
                "a tape frees its record after one gradient call unless it is persistent: read "
                "GradientTape's persistent argument (and release such a tape when done), or use "
                "one tape per gradient.")


def _created_variable(error, what):
    text = str(error)
    if isinstance(error, ValueError) and ("singleton" in text or "non-first call" in text
                                          or ("tf.Variable" in text and "tf.function" in text)):
        if "non-first call" in text:
            when = ("a tf.Variable (yours, or an optimizer's or metric's) is created inside the "
                    "tf.function when it traces again on a later call (TensorFlow: 'Creating "
                    "variables on a non-first call')")
        else:
            when = ("TensorFlow traces a tf.function that creates a tf.Variable twice on its "
                    "first call, and the second trace created a tf.Variable (yours, or an "
                    "optimizer's or metric's) inside the tf.function again (TensorFlow: 'only "
                    "supports singleton tf.Variables created on the first call')")
        return ("M07", f"{what} raised ValueError: a tf.function may create its variables only "
                f"once, on its first trace; {when}.",
                "create variables, optimizers and metrics once, outside the tf.function (e.g. "
                "in __init__ or before the loop), and only use or assign them inside.")


def _python_if(error, what):
    if isinstance(error, tf.errors.OperatorNotAllowedInGraphError):
        return ("M09", f"{what} raised OperatorNotAllowedInGraphError: in a graph a tensor has "
                f"no Python truth value, so `if tensor:` (or `while tensor:`) cannot run. "
                f"AutoGraph converts such an `if` to tf.cond only when it is on (not "
                f"autograph=False) and the condition is a tensor.",
                "decide the branch in the graph: read tf.cond (two functions of no arguments, one "
                "per branch), or let AutoGraph convert a Python if on the tensor.")


def _numpy_target(error, what):
    if isinstance(error, AttributeError) and "'_id'" in str(error):
        return ("M14", f"{what} raised AttributeError ({_first_line(error)}): the value given to "
                f"tape.gradient is a NumPy value, not a tensor. The computation left TensorFlow "
                f"(np.* functions or .numpy()) inside the tape, which cannot record NumPy.",
                "use tf.* operations between the sources and the target (tf.reduce_sum, "
                "tf.square, ...), and keep .numpy() for after the gradient.")


def _symbolic_value(error, what):
    text = str(error)
    if ("'SymbolicTensor' object has no attribute 'numpy'" in text
            or "only available when eager execution is enabled" in text
            or "Cannot convert a symbolic tf.Tensor" in text
            or "Cannot convert a symbolic Keras" in text):
        return ("M16", f"{what} failed while TensorFlow traced it ({_first_line(error)}): inside "
                f"a tf.function tensors are symbolic, they have no value yet, so .numpy() and "
                f"NumPy functions cannot run there.",
                "use tf.* operations inside the tf.function (tf.reduce_sum, tf.square, ...; "
                "tf.print to print a value on every call), and call .numpy() only on what "
                "the tf.function returned, outside it.")


def _python_list(error, what):
    if type(error).__name__ == "InaccessibleTensorError" or "is out of scope" in str(error):
        return ("M15", f"{what} raised InaccessibleTensorError: a tensor made inside a loop "
                f"body of a tf.function is used after the loop. A Python list filled in a "
                f"`for`/`while` over a tensor keeps tensors of the loop's own graph, which are "
                f"out of scope outside it.",
                "a Python list cannot hold a graph loop's tensors: accumulate in a tf.TensorArray "
                "(read how its write returns a new array, and its stack), or in a tensor the loop "
                "updates on each iteration.")


_XLA_OP = re.compile(r"on XLA_\w+: (\w+) \(")


def _xla(error, what):
    text = str(error)
    if "XLA" in text and ("unsupported operations" in text or "tf2xla" in text):
        match = _XLA_OP.search(text)
        op = match.group(1) if match else "an operation"
        kind = " with string outputs" if "DT_STRING" in text else ""
        return ("M18", f"{what} raised InvalidArgumentError: jit_compile=True asks XLA to "
                f"compile the whole function, and XLA cannot compile {op}{kind} (XLA has no "
                f"kernels for tf.print or string operations).",
                "remove jit_compile=True from this function; keep XLA for numeric code.")


_DTYPES = re.compile(r"cannot compute (\w+) as input #\d+\(zero-based\) was expected to be a "
                     r"(\w+) tensor but is a (\w+) tensor")


def _mixed_dtypes(error, what):
    match = _DTYPES.search(str(error))
    if match:
        op, want, got = match.groups()
        return ("M20", f"{what} raised InvalidArgumentError: {op} got a {want} tensor and a "
                f"{got} tensor. A tf.Variable or tf.constant made from a Python int (0, not "
                f"0.0) is int32, and TensorFlow never converts dtypes silently.",
                "an integer literal makes an int32 tensor: start from a float literal, or give "
                "the variable its dtype (read tf.Variable's dtype argument).")


#: Detectors tried in order on an exception from student code.
DETECTORS = [_not_answered, _non_persistent, _created_variable, _python_if, _numpy_target,
             _symbolic_value, _python_list, _xla, _mixed_dtypes]


def diagnose(error: BaseException, what: str):
    """``(mistake, cause, fix)`` for an exception of student code, from the first detector of
    :data:`DETECTORS` that recognises it; None when none does."""
    for detector in DETECTORS:
        found = detector(error, what)
        if found:
            return found
    return None


def call(fn, *args, what: str, rerun=None, explain=None, switch_may_change: bool = False,
         **kwargs):
    """Call the student's ``fn(*args, **kwargs)`` quietly and return its result.

    Args:
        fn: the student's function (eager or a tf.function).
        what: how messages name the call, e.g. ``"square_grad (input 3.0)"``.
        rerun: for code that takes gradients, a function of no arguments that runs the same
            student code on a fresh problem; used by :func:`explain_missing_gradient` when the
            optimizer got no gradients.
        explain: an exercise's own detector, tried before the others: a function of the
            exception returning ``(mistake, cause, fix)`` or None.
        switch_may_change: True where the exercise is to set
            ``tf.config.run_functions_eagerly`` (07's run_eagerly): elsewhere a call that turns
            the switch on and leaves it on fails (M19, code ``switch_turned_on``), since every
            tf.function after it would run as Python, out of the check's sight.
    Raises:
        CheckFailed: for every exception: a known cause is named (:data:`DETECTORS`; "No
            gradients provided" through :func:`explain_missing_gradient`), anything else is
            reported with its type and most useful line; its ``code`` is ``not_answered``,
            ``no_gradients`` or ``raised`` when no mistake is named, its ``raised`` the
            exception's type name.
    """
    __tracebackhide__ = True
    switch_was_on = bool(functions.functions_run_eagerly())
    turned_on = False
    try:
        with quiet_tensorflow():
            result = fn(*args, **kwargs)
    except CheckFailed:
        raise
    except Exception as error:  # the student's code may raise anything
        found = (explain(error) if explain else None) or diagnose(error, what)
        code = "not_answered" if found and found[1].endswith(NOT_ANSWERED[0]) else None
        if found is None and isinstance(error, ValueError) and "No gradients provided" in str(error):
            found, code = no_gradient_failure(what, rerun), "no_gradients"
        if found is None:
            found = (None, f"{what} raised {type(error).__name__}: {_first_line(error)}", None)
        failure = CheckFailed(found[1], found[0], found[2],
                              code=code or (None if found[0] else "raised"))
        failure.raised = type(error).__name__  # what a grading kernel may tell the grader
        raise failure from None
    finally:
        if not switch_may_change and not switch_was_on and functions.functions_run_eagerly():
            turned_on = True
            with quiet_tensorflow():
                functions.run_functions_eagerly(False)
    if turned_on:
        cause, fix = _SWITCH_TURNED_ON
        raise CheckFailed(cause.format(what=what), "M19", fix, code="switch_turned_on")
    return result


#: A call that turned run_functions_eagerly on and left it on (graded, the catalogue words M19).
_SWITCH_TURNED_ON = (
    "{what} turned tf.config.run_functions_eagerly on and left it on: from then on every "
    "tf.function runs as plain Python and builds no graph, so the check could not see what the "
    "graph does.",
    "leave the switch as you found it: it is for debugging, turned off again as soon as you are "
    "done, and the exercise is about the graph.")


def no_gradient_failure(what: str, rerun=None):
    """``(mistake, cause, fix)`` for an optimizer that got no gradient at all; the cause comes
    from :func:`explain_missing_gradient` on ``rerun`` when it finds one."""
    found = explain_missing_gradient(rerun) if rerun is not None else None
    if found:
        return found[0], f"{what}: the optimizer got no gradients. {found[1]}", found[2]
    return (None, f"{what}: the optimizer got no gradients (tape.gradient returned None for "
            f"every weight), so nothing on the tape links the weights to the loss.",
            "compute the model's output and the loss inside the `with tf.GradientTape() as "
            "tape:` block, with TensorFlow operations only.")


# ----------------------------------------------------------------------------- missing gradients

# Ops whose gradient is None, as TensorFlow registers them (a Cast counts when it casts to a
# non-float dtype).
_NO_GRADIENT_OPS = {"Round", "Rint", "Floor", "Ceil", "ArgMax", "ArgMin", "Equal", "NotEqual",
                    "Greater", "GreaterEqual", "Less", "LessEqual", "TopKV2"}
_OP_NAMES = {"Round": "tf.round", "Rint": "tf.math.rint", "Floor": "tf.floor", "Ceil": "tf.math.ceil",
             "ArgMax": "tf.argmax", "ArgMin": "tf.argmin", "Cast": "a cast to an integer dtype"}


def _ancestors(tensor) -> list:
    """The ops that ``tensor`` is computed from (its own op included), within its graph."""
    seen, stack, ops = set(), [tensor.op], []
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        ops.append(op)
        stack.extend(t.op for t in op.inputs)
    return ops


def _reads_weights(op) -> bool:
    return any(a.type in ("ReadVariableOp", "ResourceGather", "Placeholder")
               and (a.type != "Placeholder" or a.outputs[0].dtype == tf.resource)
               for a in _ancestors(op.outputs[0])) if op.outputs else False


def _cuts_gradient(op) -> bool:
    if op.type == "Cast":
        return not tf.as_dtype(op.get_attr("DstT")).is_floating
    return op.type in _NO_GRADIENT_OPS or op.type == "StopGradient"


def explain_missing_gradient(run, sources: str = "the weights", target: str = "the loss"):
    """Why ``tape.gradient`` gives None, found by experiment.

    Args:
        run: a function of no arguments that runs the student's code once, on a fresh problem
            (new weights and optimizer), calling ``tape.gradient`` somewhere.
        sources, target: how the messages name what is differentiated and the result it is
            differentiated from (default: a training step's weights and loss; e.g. "x, y and
            z" and "c" for a graph of plain tensors).
    Returns:
        ``(mistake, cause, fix)``: M13 for a ``tf.stop_gradient``, M12 for an op without a
        gradient (naming it), M14 for NumPy on a tensor inside the tape, M05 when the target
        depends on the weights but the tape did not record it; None when the experiment shows
        nothing (the caller then gives its own message).
    """
    with graph_mode(), quiet_tensorflow(), recording_gradients() as record:
        try:
            tf.function(lambda: (run(), None)[1])()
        except Exception as error:  # the trace stops at the student's first failing line
            if _symbolic_value(error, "") and not record.calls:
                return ("M14", "The computation left TensorFlow inside the tape (np.* functions "
                        "or .numpy() on tensors), so the tape could not record it.",
                        f"use tf.* operations between {sources} and {target} (tf.square, "
                        f"tf.reduce_mean, ...).")
    subject = target[0].upper() + target[1:]  # the target opening a sentence
    for _, recorded_target, _, result in record.calls:
        results = result if isinstance(result, (list, tuple)) else [result]
        if not any(r is None for r in results) or not hasattr(recorded_target, "graph"):
            continue
        cut = [op for op in _ancestors(recorded_target)
               if _cuts_gradient(op) and _reads_weights(op)]
        stops = [op for op in cut if op.type == "StopGradient"]
        if stops:
            return ("M13", f"The path from {sources} to {target} goes through tf.stop_gradient, "
                    f"which blocks the gradient on purpose: everything before it gets None.",
                    "remove tf.stop_gradient around the model's output." if sources ==
                    "the weights" else "remove the tf.stop_gradient on that path.")
        if cut:
            name = _OP_NAMES.get(cut[0].type, f"the op {cut[0].type}")
            return ("M12", f"{subject} is computed through {name} "
                    f"({cut[0].type}), an operation without a gradient: its output is piecewise "
                    f"constant, so no gradient flows back to {sources}.",
                    "compute the loss from the model's float outputs with differentiable "
                    "operations; round, argmax or cast only to report results, outside the loss.")
        if _reads_weights(recorded_target.op):
            return ("M05", f"{subject} depends on {sources}, but the tape "
                    f"did not record the path between them: part of it was computed outside the "
                    f"`with tf.GradientTape() as tape:` block, before it opened or after it "
                    f"closed.",
                    f"compute every step from {sources} to {target} inside the `with` block "
                    f"(indented under it), and call tape.gradient after it.")
    return None
