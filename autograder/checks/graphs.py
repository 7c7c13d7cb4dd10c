"""Checks of assignment 03 (tf.function and AutoGraph), and the graph-aware helpers that the
checks of 04 share.

Every check is in two halves (:mod:`autograder.checks.judge`): a kernel half here,
``collect_<name>(fn, case, ctx)``, calls the student's code and returns what it observed as
plain data; the grader half in :mod:`autograder.checks.judge.graphs` computes the reference from
NumPy and analytic derivatives and decides. The visible ``check_<name>`` runs both.

Graph-aware means: a decorated function is called as a graph, more than once, on inputs that
reach every branch; traces are counted; ``tf.print`` output is captured at the file-descriptor
level (:mod:`autograder.checks.capture`) and sent as counts of lines holding a value, never as
text; a graph's op types (of every function it calls, loop and branch bodies included) are sent
as a list of names; student code is called through :mod:`autograder.checks.harness`, which names
the exceptions TensorFlow raises for known mistakes (M07, M09, M15, M16, M18, ...) and runs
every check as graphs even when ``run_functions_eagerly(True)`` was left on (M19). Some mistakes
only show in graph mode, which is why the checks never settle for one eager call. No traced
function is kept between calls. Besides its inputs, each case also calls the student's code on a
probe derived from it (:func:`autograder.checks.judge.graphs.nearby`, ...): an answer worked out
by hand is right on the case and wrong there (M21).

03's notebook grades three predictions (``check_predict_if_error``, ``check_predict_retraces``,
``check_predict_prints``: the values the student wrote before the cell that shows the answer,
which :func:`show_prediction` holds back until they exist; judged as 07's predictions are),
four find-and-fix exercises (``square_if_positive``, ``log_cosh``, ``noisy_square``,
``Accumulator``) and a design choice (``make_celsius_to_fahrenheit``: the input_signature).
``check_grad_through`` is no longer graded by a notebook (03's ``grad_through`` was a copy of
the cell above it); it stays for the tests that use it, and no hidden case of any notebook uses
:data:`GRAD_FUNCTIONS`.
"""
from __future__ import annotations

import contextlib
import re

import numpy as np
import tensorflow as tf

from . import functions, kernel_entry  # noqa: F401  (kernel_entry: the grader's way in)
from .capture import capture_output
from .compare import CheckFailed, fail
from .harness import (GradientRecord, call, collect_prediction, diagnose, exercise_check, is_tf_function,
                      quiet_tensorflow, recording_gradients, require_tf_function)
from .judge.control_flow import WHILE_OPS
from .judge.graphs import (BRANCHES_DISAGREE, NUMPY_IN_GRAPH, REFUSED_INPUT, celsius_inputs,
                           celsius_refusals, grad_function_spec, nearby)

__all__ = [
    "check_predict_if_error", "check_predict_retraces", "check_predict_prints", "check_log_cosh",
    "show_prediction", "check_square_if_positive", "check_noisy_square", "check_accumulator",
    "check_make_celsius_to_fahrenheit", "check_grad_through", "GRAD_FUNCTIONS",
    "is_tf_function", "require_tf_function", "tracing_count", "graph_op_types", "printed_lines",
    "printed_count", "graph_evidence", "all_op_types", "recording_autodiff", "call",
    "require_tf_function", "snapshot",
]


# --------------------------------------------------------------------------- graph helpers

def tracing_count(fn) -> int:
    """How many times the ``tf.function`` ``fn`` has traced (made a concrete function) so far."""
    return functions.tracing_count(fn)


def graph_op_types(fn, *input_signature) -> list[str]:
    """The op types of ``fn``'s graph for ``input_signature`` (``tf.TensorSpec`` s or values),
    in graph order; ops inside a loop or branch body are not listed (the ``While``/``If`` is)."""
    concrete = functions.concrete_function(fn, *input_signature)
    return [op.type for op in concrete.graph.get_operations()]


_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", re.IGNORECASE)


def printed_lines(captured, value: float | None = None, rtol: float = 1e-3) -> list[str]:
    """Non-empty captured lines; with ``value``, only those holding a number close to it
    (``tf.print`` writes 3.0 as ``3`` and 0.1 as ``0.1``)."""
    lines = captured.lines()
    if value is None:
        return lines
    return [line for line in lines
            if any(np.isclose(float(n), value, rtol=rtol, atol=1e-6) for n in _NUMBER.findall(line))]


#: A line of TensorFlow's C++ logging (absl): ``E0000 00:00:1796.14 31162 cuda_platform.cc:52] ...``.
_LOG_LINE = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s+\d+\s+\S+:\d+\]|WARNING: All log "
                       r"messages before absl::InitializeLog\(\)")


def printed_count(captured, value: float | None = None) -> int:
    """How many lines :func:`printed_lines` finds, TensorFlow's own C++ log lines left out (a
    fresh process logs one when its first op runs): a count, what the kernel half sends the
    grader instead of what was printed."""
    return sum(1 for line in printed_lines(captured, value) if not _LOG_LINE.match(line))


_NUMERAL = re.compile(rb"\s*[-+]?\d+\s*")


def graph_evidence(fn, *input_signature) -> dict:
    """What a graph of ``fn`` is made of, as plain data: ``op_types``, the sorted op type names
    of the graph for ``input_signature`` and of every function it calls (loop bodies, branches,
    nested tf.functions); ``largest_constant``, the most elements of a constant in it, of a
    tensor it captured or of a variable it reads; ``constant_elements``, the elements of all of
    those together (a table spread over many scalar constants, one per branch, counts whole);
    ``numeral_strings``, how many string entries of those are decimal numbers (``b"7"``): words
    written in advance, not computed; ``output_ops`` (:func:`output_op_types`) and ``loop_work``
    (:func:`loop_work`)."""
    concrete = functions.concrete_function(fn, *input_signature)
    graph_def = concrete.graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    largest, numerals, total = 0, 0, 0
    for node in nodes:
        if node.op != "Const":
            continue
        tensor = node.attr["value"].tensor
        size = int(np.prod([d.size for d in tensor.tensor_shape.dim])) if \
            tensor.tensor_shape.dim else 1
        largest, total = max(largest, size), total + size
        numerals += sum(1 for s in tensor.string_val if _NUMERAL.fullmatch(s))
    held = [t for t in concrete.captured_inputs if t.dtype != tf.resource]
    held += [v for v in concrete.variables]
    variable_handles = [v.handle for v in concrete.variables]
    # A captured resource that no variable of the graph holds: a lookup table (or another
    # resource built in advance outside the function).
    resources = sum(1 for t in concrete.captured_inputs if t.dtype == tf.resource
                    and not any(t is h for h in variable_handles))
    for tensor in held:
        try:
            value = np.asarray(tensor.numpy())
        except Exception:  # a symbolic capture of an outer graph: its size is what we know
            value = None
        size = int(np.prod(tensor.shape)) if tensor.shape.is_fully_defined() else 0
        largest, total = max(largest, size), total + size
        if value is not None and tensor.dtype == tf.string:
            numerals += sum(1 for s in value.reshape(-1) if _NUMERAL.fullmatch(bytes(s)))
    return {"op_types": sorted({node.op for node in nodes}), "largest_constant": largest,
            "constant_elements": total,
            "numeral_strings": numerals, "captured_resources": resources,
            "output_ops": output_op_types(concrete), "loop_work": loop_work(concrete, graph_def)}


#: Most ops :func:`output_op_types` walks (a graph of this course has a few hundred).
MAX_WALK = 100_000


def output_op_types(concrete) -> list[str]:
    """The sorted op type names of the ops of ``concrete``'s own graph that its output tensors
    are computed from (the outputs' ancestors through data inputs, control dependencies left
    out): a loop or branch beside the answer (``while i < 1`` next to a vectorised result) is
    not among them, the loop that computes the returned value is."""
    seen, types = set(), set()
    stack = [t.op for t in concrete.outputs]
    while stack and len(seen) < MAX_WALK:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        types.add(op.type)
        stack.extend(t.op for t in op.inputs)
    return sorted(types)


#: Op types that hand a loop body's input on unchanged.
_PASS_THROUGH = {"Identity", "IdentityN"}


def loop_work(concrete, graph_def) -> bool | None:
    """Whether a While loop of ``concrete``'s own graph computes what the outputs are made of:
    None when no While op is among the outputs' ancestors; True when, for some output of such a
    loop that the function's outputs are computed from, the loop's body makes that loop
    variable with an op of its own; False when every such loop variable comes out of the body
    as it went in (through Identity ops only): a loop that runs and does nothing, the value
    computed before it (a vectorised sum passed through a ``while i < 0`` loop). ``graph_def``
    is the graph's GraphDef, whose library holds the loop bodies."""
    library = {f.signature.name: f for f in graph_def.library.function}
    used, seen = {}, set()  # While op name -> (its body's name, the output indices used)
    stack = list(concrete.outputs)
    while stack and len(seen) < MAX_WALK:
        tensor = stack.pop()
        op = tensor.op
        if op.type in WHILE_OPS:
            used.setdefault(op.name, (op.get_attr("body").name, set()))[1].add(tensor.value_index)
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(op.inputs)
    if not used:
        return None
    return any(_body_makes(library.get(body), index) for body, indices in used.values()
               for index in indices)


def _body_makes(body, index: int) -> bool:
    """Whether output ``index`` of the loop body ``body`` (a FunctionDef) is made by an op of
    the body rather than handed on from its input ``index`` through Identity ops (unknown
    bodies count as making it)."""
    if body is None or index >= len(body.signature.output_arg):
        return True
    arguments = [a.name for a in body.signature.input_arg]
    nodes = {n.name: n for n in body.node_def}
    source = body.ret[body.signature.output_arg[index].name]
    for _ in range(len(nodes) + 1):
        name = source.split(":")[0]
        if name in arguments:
            return arguments.index(name) != index  # another loop variable: the body moves values
        node = nodes.get(name)
        data = [i for i in node.input if not i.startswith("^")] if node is not None else []
        if node is None or node.op not in _PASS_THROUGH or not data:
            return True
        source = data[0] if node.op == "Identity" else data[int(source.split(":")[-1])]
    return True


def graph_ops(fn, *input_signature) -> dict:
    """``op_types`` (of the graph and every function it calls), ``output_ops`` (the op types
    the outputs are computed from, :func:`output_op_types`) and ``loop_work``
    (:func:`loop_work`) of ``fn``'s graph."""
    evidence = graph_evidence(fn, *input_signature)
    return {key: evidence[key] for key in ("op_types", "output_ops", "loop_work")}


def all_op_types(fn, *input_signature) -> list[str]:
    """The sorted op type names of ``fn``'s graph and of every function it calls."""
    return graph_evidence(fn, *input_signature)["op_types"]


@contextlib.contextmanager
def recording_autodiff():
    """:func:`harness.recording_gradients` (every tape call that asks for a gradient:
    ``gradient``, ``jacobian``, ``batch_jacobian``, recorded as the checks of 01 and 02 record
    them), with ``ForwardAccumulator.jvp`` recorded too (a forward-mode derivative is automatic
    differentiation as well): yields the
    :class:`~autograder.checks.harness.GradientRecord`, whose ``produced(value)`` says whether a
    tape or an accumulator made ``value``."""
    accumulator = tf.autodiff.ForwardAccumulator
    original = accumulator.jvp
    with recording_gradients() as record:
        def jvp(self, primals, *args, **kwargs):
            result = original(self, primals, *args, **kwargs)
            record.calls.append((self, primals, None, result))
            return result

        accumulator.jvp = jvp
        try:
            yield record
        finally:
            accumulator.jvp = original


#: Most producing calls whose targets :func:`producing_targets` reports.
MAX_TARGETS = 16


def producing_targets(record, value) -> list:
    """For each recorded call (of a :class:`~autograder.checks.harness.GradientRecord`) whose
    result is ``value`` (the same object, or equal values, as ``record.produced`` reads it),
    the value of its target: the sum of all its entries (a gradient of a list or of a tensor is
    that of the sum), a float, or None when the target is symbolic (a graph's tensor). The
    grader compares it with f(x): a derivative handed back through a tape of something else
    (``tape.gradient(x * formula, x)``) has another target."""
    out = []
    if value is None:
        return out
    for call_ in record.calls:
        if len(out) >= MAX_TARGETS:
            break
        single = GradientRecord()
        single.calls.append(call_)
        if not single.produced(value):
            continue
        try:
            out.append(float(sum(np.sum(np.asarray(t.numpy(), np.float64))
                                 for t in tf.nest.flatten(call_[1]))))
        except Exception:  # a symbolic target, or not tensors
            out.append(None)
    return out


def _scalar(x) -> tf.Tensor:
    return tf.constant(x, dtype=tf.float32)


def snapshot(value):
    """``value`` as it is now: a tf.Variable's current value (a later call could change the
    variable before the observations are sent), anything else itself."""
    if isinstance(value, tf.Variable):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return [snapshot(v) for v in value]
    return value


# --------------------------------------------------------------------------- 03 predictions

def show_prediction(namespace, *names: str) -> None:
    """What a cell that reveals an answer runs first: it refuses until the student has written
    each prediction, then prints what was predicted.

    Args:
        namespace: the notebook's globals (``globals()``).
        names: the prediction variables' names (``"predicted_if_error"``).
    Raises:
        CheckFailed: a name is not set yet (the prediction cell not written or not run).
    """
    __tracebackhide__ = True
    missing = [name for name in names if name not in namespace]
    if missing:
        raise CheckFailed(f"This cell shows the answer, so it waits for your prediction: "
                          f"{', '.join(missing)} is not set yet.", None,
                          f"write `{missing[0]} = ...` in the prediction cell above, run it, "
                          f"then run this cell.")
    print("you predicted:", ", ".join(f"{name} = {namespace[name]!r}" for name in names))


def collect_error_prediction(predicted, case, ctx):
    """Kernel half of ``check_predict_if_error(predicted_if_error)``: the prediction, an
    exception class's name (a class or an instance of one is sent as its ``__name__``), a
    string (its first 101 characters), or None; anything else as the number 0, which the judge
    refuses as not a name.

    Returns:
        ``{"values": [name or None]}``.
    """
    if isinstance(predicted, type) and issubclass(predicted, BaseException):
        predicted = predicted.__name__
    elif isinstance(predicted, BaseException):
        predicted = type(predicted).__name__
    elif predicted is not None and not isinstance(predicted, str):
        return {"values": [0]}
    return {"values": [predicted if predicted is None else str(predicted)[:101]]}


check_predict_if_error = exercise_check("check_predict_if_error", collect_error_prediction)
check_predict_retraces = exercise_check("check_predict_retraces", collect_prediction)
check_predict_prints = exercise_check("check_predict_prints", collect_prediction)


# --------------------------------------------------------------------------- 03 checks

def _branches_disagree(what):
    """An ``explain`` for :func:`harness.call`: it raises M72 (code ``branches_disagree``) for
    tf.cond's TypeError when its branches return different dtypes or structures (the int 0
    beside a float32 ``x * x``)."""
    def explain(error):
        text = str(error)
        if isinstance(error, (TypeError, ValueError)) and (
                "true_fn and false_fn" in text or "in the main branch, but" in text):
            dtypes = re.findall(r"dtype=(\w+)\)", text)[:2]
            detail = f" ({' and '.join(dtypes)})" if len(dtypes) == 2 else ""
            raise CheckFailed(f"{what} raised {type(error).__name__}: the two branches of "
                              f"tf.cond return tensors of different dtypes or structures"
                              f"{detail}, and the If op has one output, of one dtype, whichever "
                              f"branch runs.", "M72", BRANCHES_DISAGREE[1],
                              code="branches_disagree") from None
    return explain


#: Op types of a branch in the graph: tf.cond's If, tf.switch_case's Case (tf.case builds Ifs).
BRANCH_OPS = {"If", "StatelessIf", "Case", "StatelessCase"}
#: Ops that pass a tensor on unchanged: not a computation from x outside the branches.
PASS_THROUGH_OPS = {"Identity", "IdentityN", "Placeholder"}


def _branch_functions(op) -> list:
    """The names of the library functions of a branch op's branches."""
    if op.type in ("If", "StatelessIf"):
        return [op.get_attr("then_branch").name, op.get_attr("else_branch").name]
    return [f.name for f in op.get_attr("branches")]


def branch_evidence(concrete, bools_are_predicates: bool = False) -> dict:
    """How the output of a one-input graph depends on its input x through its branch ops.
    With ``bools_are_predicates``, a branch op's bool data inputs are not followed either: a
    nested branch's predicate reaches it as one (tf.case, a chain of conds).

    From the output backwards, a branch op (If, Case) is followed through its data inputs only,
    not through its predicate (the branch index): ``computed_outside`` are the op types met on
    the way that are computed from x (x itself, Identity and the branch ops left out), what runs
    on every call whichever branch is taken; ``pred_from_x`` whether the predicate of a branch
    op met is computed from x; ``same_branches`` whether a branch op met has branches of the same
    op types (the same work whichever way the predicate goes); ``branch_bodies``, for each
    branch op met (at most 8), the sorted op types of each of its branches."""
    graph = concrete.graph
    x = concrete.inputs[0].op
    from_x, order = {x}, graph.get_operations()
    for op in order:  # get_operations is in creation order: inputs before their users
        if any(t.op in from_x for t in op.inputs) or any(c in from_x for c in op.control_inputs):
            from_x.add(op)
    library = {f.signature.name: sorted(n.op for n in f.node_def)
               for f in graph.as_graph_def().library.function}
    outside, pred_from_x, same, seen, met = set(), False, False, set(), []
    stack = [t.op for t in tf.nest.flatten(concrete.outputs)]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        inputs = list(op.inputs)
        if op.type in BRANCH_OPS:
            pred_from_x = pred_from_x or inputs[0].op in from_x
            bodies = [library.get(name) for name in _branch_functions(op)]
            same = same or (len(bodies) > 1 and all(b == bodies[0] for b in bodies))
            met.append([b or [] for b in bodies][:8])
            inputs = [t for t in inputs[1:] if not (bools_are_predicates and t.dtype == tf.bool)]
        elif op in from_x and op.type not in PASS_THROUGH_OPS:
            outside.add(op.type)
        stack.extend(t.op for t in inputs)
    return {"computed_outside": sorted(outside), "pred_from_x": pred_from_x,
            "same_branches": same, "branch_bodies": met[:8]}


def collect_square_if_positive(fn, case, ctx):
    """Kernel half of ``check_square_if_positive``: ``square_if_positive(x)`` is ``x * x`` when
    ``x > 0``, else ``0.0`` (a one-sided squared penalty), written with ``tf.cond`` so that it
    runs as a graph without AutoGraph. Idea graded: the branch happens in the graph (tf.cond
    builds an If op), only the branch taken computes x * x, and both branches agree.

    The check wraps ``fn``'s Python function in ``tf.function(..., autograph=False)`` itself
    (whatever decorator the student wrote), calls it twice on the float32 scalar x and once on
    a probe of the same sign (:func:`~autograder.checks.judge.graphs.nearby`), and reads that
    graph: its op types (branch bodies included), the op types the returned value is computed
    from, the op types of the graph itself (outside the branch bodies) and its output's shape.

    Returns:
        ``{"results": [two values], "probe": value, "op_types": [str, ...], "output_ops":
        [str, ...], "outside_ops": [str, ...], "computed_outside": [str, ...], "pred_from_x":
        bool, "same_branches": bool, "output_shape": [dims] or None}`` (output_shape: None
        when the graph's output has no known rank; the three between, :func:`branch_evidence`).
    Raises:
        CheckFailed: M09 when a Python ``if`` on the tensor fails without AutoGraph; M72 when
            tf.cond's branches return different dtypes or structures.
    """
    __tracebackhide__ = True
    x = float(case)
    graph = tf.function(functions.python_function(fn), autograph=False)
    what = f"{ctx.exercise} as a graph without AutoGraph ({ctx.label})"
    explain = _branches_disagree(what)
    got = [call(graph, _scalar(x), what=what, explain=explain) for _ in range(2)]
    probe = call(graph, _scalar(nearby(x)), what=what, explain=explain)
    concrete = graph.get_concrete_function(tf.TensorSpec([], tf.float32))
    outputs = tf.nest.flatten(concrete.outputs)
    shape = outputs[0].shape if len(outputs) == 1 else tf.TensorShape(None)
    return {"results": got, "probe": probe,
            **graph_ops(graph, tf.TensorSpec([], tf.float32)),
            "outside_ops": sorted({op.type for op in concrete.graph.get_operations()}),
            **branch_evidence(concrete),
            "output_shape": None if shape.rank is None else shape.as_list()}


check_square_if_positive = exercise_check("check_square_if_positive", collect_square_if_positive)


def collect_noisy_square(fn, case, ctx):
    """Kernel half of ``check_noisy_square``: ``noisy_square(x)`` is a ``tf.function``
    returning ``x * x`` that prints x with ``tf.print`` on every call. Idea graded: tf.print is
    an op of the graph, so it runs on every call.

    A case ``(x, calls)`` calls ``fn`` ``calls`` times with the same float32 scalar, capturing
    stdout and stderr at the file-descriptor level (``tf.print`` writes from C++), and counts
    the captured lines that hold x; it also calls ``fn`` on a probe, reads the graph's op types
    and counts the lines a fresh copy of the function prints while it traces (a Python print).
    Output is captured, never shown.

    Returns:
        ``{"results", "probe", "lines", "symbolic_lines", "trace_lines", "op_types"}``
        (symbolic_lines: how many captured lines show a symbolic tensor, ``Tensor("...``,
        as an f-string of x in tf.print does; a count, never the text).
    Raises:
        CheckFailed: M18 for jit_compile=True; M16 (code ``numpy_in_graph``) for .numpy() or
            NumPy inside it, with this exercise's fix (tf.print); not_tf_function.
    """
    __tracebackhide__ = True
    x, calls = float(case[0]), int(case[1])
    require_tf_function(fn, ctx.exercise)

    def numpy_in_graph(error):  # M16, with this exercise's fix: tf.print, not tf.py_function
        found = diagnose(error, ctx.what)
        if found and found[0] == "M16":
            raise CheckFailed(found[1], "M16", NUMPY_IN_GRAPH[1],
                              code="numpy_in_graph") from None

    with capture_output() as out:
        got = [call(fn, _scalar(x), what=ctx.what, explain=numpy_in_graph)
               for _ in range(calls)]
    with capture_output():
        probe = call(fn, _scalar(nearby(x)), what=ctx.what, explain=numpy_in_graph)
    spec = tf.TensorSpec([], tf.float32)
    with capture_output() as traced:
        call(tf.function(functions.python_function(fn)).get_concrete_function, spec, what=ctx.what,
             explain=numpy_in_graph)
    with capture_output():
        ops = all_op_types(fn, spec)
    symbolic = sum('Tensor("' in line for line in out.lines())  # M31: an f-string of x
    return {"results": got, "probe": probe, "lines": printed_count(out, x),
            "symbolic_lines": symbolic,
            "trace_lines": printed_count(traced), "op_types": ops}


check_noisy_square = exercise_check("check_noisy_square", collect_noisy_square)


def collect_log_cosh(fn, case, ctx):
    """Kernel half of ``check_log_cosh``: ``log_cosh(x)`` is a ``tf.function`` computing
    log(cosh(x)) elementwise, through which a gradient flows. Idea graded: the gradient flows
    through a tf.function only through TensorFlow ops.

    A case is a (nested) list of floats: ``fn`` is called as a graph on it as a float32 tensor
    inside a ``tf.GradientTape`` that watches it, and the tape's gradient of the result (of its
    sum) is taken; the op types of its graph for that shape are read.

    Returns:
        ``{"result": array, "gradient": array or None, "op_types": [...], "output_ops":
        [...]}``.
    Raises:
        CheckFailed: M16 for .numpy() or NumPy on the graph's tensor (harness.call);
            not_tf_function when ``fn`` is not a tf.function.
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    x = tf.constant(np.asarray(case, np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        got = call(fn, x, what=ctx.what)
    gradient = None
    if isinstance(got, tf.Tensor) and got.dtype.is_floating:
        gradient = call(tape.gradient, got, x, what=f"the gradient of {ctx.what}")
    return {"result": got, "gradient": gradient,
            **graph_ops(fn, tf.TensorSpec(x.shape, tf.float32))}


check_log_cosh = exercise_check("check_log_cosh", collect_log_cosh)


def collect_accumulator(cls, case, ctx):
    """Kernel half of ``check_accumulator``: ``Accumulator()`` holds ``total``, a float32
    ``tf.Variable`` starting at 0, and its ``tf.function`` method ``add(x)`` adds x to it and
    returns the new total. Idea graded: a tf.Variable made once is updated inside a
    tf.function (add's graph holds the assign op).

    A case is a list of values: two fresh instances are made in turn and ``add`` called on
    each value (float32 scalar tensors).

    Returns:
        ``{"instances": [two dicts of "totals", "total_is_variable", "total_type", "total",
        "op_types"]}``.
    Raises:
        CheckFailed: M07 when ``add`` raises the ValueError of a ``tf.Variable`` created inside
            a ``tf.function``; not_tf_function when add is not one.
    """
    __tracebackhide__ = True
    values = [float(v) for v in np.asarray(case, np.float64).reshape(-1)]
    instances = []
    for _ in range(2):  # a second instance must not share the first one's total
        acc = call(cls, what=f"{ctx.exercise}()")
        require_tf_function(getattr(acc, "add", None), "Accumulator.add",
                             fix="make add a tf.function: decorate the method itself (read how "
                                 "tf.function decorates a method).")
        totals = [snapshot(call(acc.add, _scalar(x), what=f"{ctx.exercise}.add "
                                        f"({ctx.label}, call {step + 1})"))
                  for step, x in enumerate(values)]
        total = getattr(acc, "total", None)
        is_variable = isinstance(total, tf.Variable)
        instances.append({
            "totals": totals, "total_is_variable": is_variable,
            "total_type": type(total).__name__,
            "total": total.numpy() if is_variable else None,
            "op_types": call(all_op_types, acc.add, tf.TensorSpec([], tf.float32),
                                     what=f"{ctx.exercise}.add traced for a float32 scalar")})
    return {"instances": instances}


check_accumulator = exercise_check("check_accumulator", collect_accumulator)


def _refused_input(what):
    """An ``explain`` for :func:`harness.call`: it raises M73 (code ``refused_input``) when the
    function's input_signature refuses a float32 vector it must accept (TensorFlow's
    "Binding inputs to tf.function failed")."""
    def explain(error):
        if isinstance(error, (TypeError, ValueError)) and "Binding inputs" in str(error):
            raise CheckFailed(f"{what} raised {type(error).__name__}: its input_signature "
                              f"refuses a float32 vector it must accept (a vector of another "
                              f"length, or a list of Python floats): "
                              f"{str(error).splitlines()[0][:300]}", "M73", REFUSED_INPUT[1],
                              code="refused_input") from None
    return explain


def _spec_data(spec) -> dict:
    """One spec of an input signature as plain data: ``{"shape": [dims] or None (no known
    rank), "dtype": name}``; anything but a TensorSpec as ``{"shape": None, "dtype": its type's
    name}``."""
    if isinstance(spec, tf.TensorSpec):
        shape = spec.shape
        return {"shape": None if shape.rank is None else shape.as_list(),
                "dtype": spec.dtype.name}
    return {"shape": None, "dtype": type(spec).__name__}


def collect_make_celsius_to_fahrenheit(make_fn, case, ctx):
    """Kernel half of ``check_make_celsius_to_fahrenheit``: ``make_celsius_to_fahrenheit()``
    returns a ``tf.function`` computing ``c * 9 / 5 + 32`` for a float32 vector of readings of
    any length, with one trace for every length, that refuses at the call what is not a float32
    vector. Idea graded: the input_signature is the design: one graph for every vector, and
    only vectors.

    A case is a vector of readings (a list of floats). A fresh function is made with
    ``make_fn()`` and called on the inputs of
    :func:`~autograder.checks.judge.graphs.celsius_inputs`: the case as a float32 vector twice,
    a longer vector and a vector of one reading, whose traces are counted, then (where those
    shared one graph) a list of Python floats; then on what it must refuse
    (:func:`~autograder.checks.judge.graphs.celsius_refusals`: a matrix, a Python float); and
    the input signature of its concrete function is read.

    Returns:
        ``{"results": [five values], "traces": int, "traces_after_list": int, "refused":
        [bool, bool], "signature": [spec dicts] or None (no input_signature), "op_types":
        [...]}`` (op types of its graph for a float32 vector, read after the traces were
        counted).
    Raises:
        CheckFailed: M73 when the signature refuses a vector it must accept; not_tf_function.
    """
    __tracebackhide__ = True
    fn = call(make_fn, what="make_celsius_to_fahrenheit()")
    require_tf_function(fn, "The function returned by make_celsius_to_fahrenheit()",
                         fix="return the tf.function that wraps fahrenheit itself, with an "
                             "input_signature (read tf.function's input_signature and "
                             "tf.TensorSpec).")
    what = f"make_celsius_to_fahrenheit() called on {ctx.label}"
    *vectors, as_list = celsius_inputs(case)
    got = [snapshot(call(fn, tf.constant(c), what=what, explain=_refused_input(what)))
           for c in vectors]
    traces = tracing_count(fn)
    # The list last, and only where the vectors shared one graph: without an input_signature
    # a list reaches the Python body as a list (its retrace, or its TypeError, would hide the
    # retraces the vectors made).
    got.append(snapshot(call(fn, as_list, what=what, explain=_refused_input(what)))
               if traces == 1 else None)
    after_list = tracing_count(fn)
    refused = []
    for bad in celsius_refusals(case):  # after the count: a retrace here is not counted
        bad = tf.constant(bad) if isinstance(bad, np.ndarray) else bad
        try:
            with quiet_tensorflow(), capture_output():
                fn(bad)
            refused.append(False)
        except Exception:  # refused at the call (the signature) or in the graph
            refused.append(True)
    signature = None
    if functions.input_signature(fn) is not None:
        concrete = call(functions.concrete_function, fn, what=f"{what}: its concrete function")
        args, kwargs = concrete.structured_input_signature
        signature = [_spec_data(s) for s in tf.nest.flatten((args, kwargs))][:8]
    try:  # after the count: tracing here for the op types is not the student's retrace
        ops = all_op_types(fn, tf.constant(np.asarray(case, np.float32).reshape(-1)))
    except Exception:  # a signature that refuses the case's own tensor: no op types seen
        ops = []
    return {"results": got, "traces": traces, "traces_after_list": after_list,
            "refused": refused, "signature": signature, "op_types": ops}


check_make_celsius_to_fahrenheit = exercise_check("check_make_celsius_to_fahrenheit",
                                                  collect_make_celsius_to_fahrenheit)


# Functions f of check_grad_through, by name (their derivatives are the grader's, in
# autograder.checks.judge.graphs). No notebook grades grad_through any more (issue 27), so none
# of them is hidden material; a new hidden function would travel as source text
# (compare.function_from_source), never here. The check wraps each in a new tf.function per case: a traced
# function kept from one call to the next would remember the variables of the first call (a
# student may pass f a tf.Variable of their own). Hidden cases may also give a polynomial by
# its coefficients, {"coefficients": [a0, a1, ...]}: a function no student has seen.
def _poly(x):
    return x ** 3 - 2.0 * x


def _branchy(x):
    if x > 1.0:  # AutoGraph: tf.cond; the gradient flows through the branch taken
        return x * x
    return 3.0 * x


def _sin_x(x):
    return tf.sin(x) * x


GRAD_FUNCTIONS = {"poly": _poly, "branchy": _branchy, "sin_x": _sin_x}


def _grad_function(spec):
    kind, coefficients = grad_function_spec(spec)
    if kind != "polynomial":
        return GRAD_FUNCTIONS[kind]

    def polynomial(x):  # Horner: (... (a_n x + a_n-1) x + ...) x + a0
        total = tf.zeros_like(x)
        for a in reversed(coefficients):
            total = total * x + a
        return total
    return polynomial


def collect_grad_through(fn, case, ctx):
    """Kernel half of ``check_grad_through``: ``grad_through(f, x)`` is df/dx at the float32
    scalar tensor ``x`` (a ``tf.constant``) of a ``tf.function`` ``f``, computed with
    ``tf.GradientTape``. Idea graded: the gradient flows through the tf.function.

    A case names a function of :data:`GRAD_FUNCTIONS` (or gives a polynomial's coefficients)
    and a point; the function is wrapped in a new ``tf.function`` for the call, while
    ``tape.gradient``, ``tape.jacobian``, ``tape.batch_jacobian`` and
    ``ForwardAccumulator.jvp`` calls are recorded (:func:`recording_autodiff`).

    Returns:
        ``{"result", "from_autodiff": bool, "f_traced": bool, "targets": [...]}``: targets
        are the values of the targets of the recorded calls that produced the result
        (:func:`producing_targets`), which the grader compares with f(x).
    Raises:
        CheckFailed: M01 when the gradient is None for a constant input (not watched).
    """
    __tracebackhide__ = True
    spec, x = case
    f = tf.function(_grad_function(spec))
    with recording_autodiff() as record:
        got = call(fn, f, _scalar(x), what=ctx.what)
    if got is None:
        fail(f"{ctx.what} returned None: x is a tf.constant, and a tape only records "
             f"operations on what it watches.", mistake="M01",
             fix="a tape follows tf.Variables by itself, constants only when told to: ask the "
                 "tape to watch x (read GradientTape.watch) inside its block, before f runs on it.")
    from_autodiff, traced = record.produced(got), tracing_count(f) > 0
    targets = producing_targets(record, got)
    if is_tf_function(fn):
        # Inside the student's own graph the tape's results are symbolic: run its Python
        # function once more (f still a tf.function, traced afresh) to see where the value
        # comes from.
        again = tf.function(_grad_function(spec))
        with recording_autodiff() as record:
            value = call(functions.python_function(fn), again, _scalar(x), what=ctx.what)
        from_autodiff = record.produced(value)
        targets = producing_targets(record, value)
        traced = traced and tracing_count(again) > 0
    return {"result": got, "from_autodiff": from_autodiff, "f_traced": traced,
            "targets": targets}


check_grad_through = exercise_check("check_grad_through", collect_grad_through)
