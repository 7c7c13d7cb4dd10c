"""Checks of assignment 04 (control flow in graphs: if, while, for, FizzBuzz).

Every check is in two halves (:mod:`autograder.checks.judge`): a kernel half here,
``collect_<name>(fn, case, ctx)``, calls the student's code and returns what it observed as
plain data; the grader half in :mod:`autograder.checks.judge.control_flow` computes the
reference from plain Python and NumPy and decides. The visible ``check_<name>`` runs both.

The prediction (``check_predict_draft``) is graded as 07's are
(:mod:`autograder.checks.pitfalls`): the kernel half passes the values on. Every decorated
function is called as a graph, more than once, on inputs that reach every branch (and loops
that run zero, one and many times), and once more on a probe derived from the case;
``tf.print`` output is captured at the file-descriptor level and sent as counts of lines; the
op types of a graph (loop and branch bodies included) are sent as names; trace counts as
numbers; string results as bytes (a ``tf.string`` tensor gives ``bytes`` in NumPy), compared as
text by the grader.
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap

import numpy as np
import tensorflow as tf

from . import functions, kernel_entry  # noqa: F401  (kernel_entry: the grader's way in)
from .capture import capture_output
from .graphs import (branch_evidence, graph_evidence, graph_op_types, graph_ops, printed_count,
                     snapshot, tracing_count)
from .compare import CheckFailed
from .harness import call, collect_prediction, exercise_check, require_tf_function
from .judge.control_flow import (COMPARISONS, NOT_UTF8, classify_case, classify_reference,
                                 count_word_probe, count_word_text_probe, fizzbuzz_reference,
                                 sum_even_probe, tanh_probe)

__all__ = ["check_predict_draft", "check_classify", "classify_reference", "check_tanh_loop",
           "check_fizzbuzz", "check_count_word", "check_sum_even", "fizzbuzz_reference",
           "graph_op_types", "text_observation", "written_text"]

#: AutoGraph's errors for a variable set on one path of a tensor `if` only (M36) and for a loop
#: variable whose shape or dtype changes from one iteration to the next (M37), TF 2.21.
ONE_BRANCH = re.compile(r"must also be initialized in the (if|else|main) branch")
LOOP_VARIABLE = re.compile(r"has (shape|dtype) .{0,200} before the loop, but (shape|dtype)")
#: AutoGraph's errors for a `return` or `break` that depends on a tensor condition: inside a
#: Python loop (unrolled while tracing) M76, on some paths of a tensor `if` only M36 (TF 2.21).
LOOP_EXIT = re.compile(r"break and return statements which depend on a TF condition are not "
                       r"supported in Python for loops")
MISSING_RETURN = re.compile(r"branch must also have a return statement")
#: Python's error for range(None): a range over items.shape[0] traced for unknown length (M57).
STATIC_LENGTH = re.compile(r"'NoneType' object cannot be interpreted as an integer")
#: Digits inside a string constant: numbers written in advance.
DIGITS = re.compile(rb"[0-9]+")


def _autograph_error(pattern, mistake: str, code: str, cause: str, fix: str):
    """An ``explain=`` detector for :func:`harness.call`: raises CheckFailed(mistake, code)
    when the exception's message matches ``pattern`` (AutoGraph's own words); else None."""
    def explain(error):
        if pattern.search(str(error)):
            raise CheckFailed(cause, mistake, fix, code=code) from None
    return explain


def _exits_a_python_loop(fn) -> bool:
    """Whether the source of ``fn`` has a ``return`` or ``break`` inside a ``for`` or ``while``
    loop (AutoGraph's "must also have a return statement" then comes from that loop, unrolled
    while tracing; without one, from a tensor ``if`` that returns on some paths only)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(inner, (ast.Return, ast.Break))
               for loop in ast.walk(tree) if isinstance(loop, (ast.For, ast.While))
               for statement in loop.body for inner in ast.walk(statement))


def _classify_explainer(ctx, fn):
    """The ``explain=`` detector of ``check_classify``: M36 for a word (or a return) on some
    paths of a tensor ``if`` only, M76 for a ``return``/``break`` on a tensor condition inside a
    Python loop (the rules table of the notebook's draft)."""
    one_branch = _autograph_error(
        ONE_BRANCH, "M36", "one_branch",
        f"{ctx.what} raised ValueError while TensorFlow traced it: the word is not set on "
        f"every path. A tensor `if` becomes a tf.cond, which traces every branch whatever x "
        f"is, the `else` included even where none is written (the path on which no "
        f"comparison holds), so a name read after it must be set on every path.",
        "give the word a value on the path where no comparison holds too (an `else:`), or "
        "before the `if`.")
    loop_exit = (f"{ctx.what} raised while TensorFlow traced it: a `return` (or `break`) on a "
                 f"tensor condition inside a Python loop. A `for` over a Python list runs "
                 f"while tracing (the loop is unrolled), so it cannot stop early on a value "
                 f"known only when the graph runs; AutoGraph reports the `if` around it as a "
                 f"branch without a return.")
    loop_fix = ("let every rule's `if` set the word and return once, after the loop (apply the "
                "rules in reverse to keep the first one that holds), or write the rules as an "
                "if/elif/else chain.")

    def explain(error):
        one_branch(error)
        text = str(error)
        source = getattr(fn, "python_function", fn)
        if LOOP_EXIT.search(text) or (MISSING_RETURN.search(text)
                                      and _exits_a_python_loop(source)):
            raise CheckFailed(loop_exit, "M76", loop_fix, code="loop_exit") from None
        if MISSING_RETURN.search(text):
            raise CheckFailed(
                f"{ctx.what} raised ValueError while TensorFlow traced it: a tensor `if` "
                f"returns on some of its paths only. A tf.cond traces every branch, the "
                f"`else` included even where none is written, and each must return.", "M36",
                "return a word on the path where no comparison holds too (an `else:` or a "
                "last `return`).", code="one_return") from None
    return explain


def text_observation(value) -> dict:
    """A result that should be a ``tf.string`` tensor, as plain data: ``{"string": True,
    "value": its bytes (an object array), "kind": ...}``, or ``{"string": False, "value":
    None, "kind": what it is}`` (the kind holds the student's value: the grader shows it only in
    a visible check)."""
    if tf.is_tensor(value) and value.dtype == tf.string:
        return {"string": True, "value": np.asarray(value.numpy(), dtype=object),
                "kind": "a string tensor"}
    kind = f"a {value.dtype.name} tensor" if tf.is_tensor(value) else \
        f"{type(value).__name__} {value!r}"
    return {"string": False, "value": None, "kind": kind[:80]}


def collect_predict_draft(*predicted, case, ctx):
    """Kernel half of ``check_predict_draft(predicted_runs)``: the prediction's value, as it is
    (:func:`autograder.checks.harness.collect_prediction`; the judge checks it is a list of
    three bools written down).

    Returns:
        ``{"values": [predicted_runs]}``.
    """
    return collect_prediction(*predicted, case=case, ctx=ctx)


check_predict_draft = exercise_check("check_predict_draft", collect_predict_draft)


def _rule(op: str, threshold: float):
    """``holds(x)`` of a rule: the comparison of x with the threshold, as the notebook's
    ``lambda x: x > 0`` writes it."""
    compare = COMPARISONS[op]
    return lambda x: compare(x, threshold)


def collect_classify(make_fn, case, ctx):
    """Kernel half of ``check_classify``: ``make_classifier(rules, default)`` returns a
    ``tf.function`` ``classify(x)`` that returns, as a ``tf.string``, the word of the first rule
    ``(word, holds)`` of the table whose ``holds(x)`` is true for the float32 scalar ``x``, else
    ``default``: the notebook's ``make_classifier_draft`` fixed (a ``return`` inside a ``for``
    over the rules). The case's table (:func:`classify_case`: the notebook's sign rules, or one
    of the check's own with overlapping rules) is built here from plain data. Idea graded: the
    table is applied as given, the first rule that holds wins, and the branch is taken in the
    graph on each call (a tensor ``if`` converted by AutoGraph, ``tf.cond``, ``tf.case`` or
    ``tf.switch_case``), not decided while tracing.

    The check calls the classifier twice and reads the op types of its graph for a float32
    scalar.

    Returns:
        ``{"results": [two text observations], "op_types": [...], "output_ops": [...],
        "pred_from_x": bool, "computed_outside": [...]}`` (output_ops: the op types the word is
        computed from; the last two, :func:`~autograder.checks.graphs.branch_evidence`).
    Raises:
        CheckFailed: M76 for a ``return``/``break`` on a tensor condition inside a Python loop
            (the draft); M36 for a word (or a return) not on every path, the implicit
            ``else`` included (AutoGraph's "must also be initialized in the else branch");
            M09 if the ``if`` cannot run in the graph (``autograph=False``); M18 for
            jit_compile=True; not_tf_function for a classifier that is not one.
    """
    __tracebackhide__ = True
    rules, default, x = classify_case(case)
    table = [(word, _rule(op, threshold)) for word, op, threshold in rules]
    fn = call(make_fn, table, default, what=f"make_classifier ({ctx.label})")
    require_tf_function(fn, "The classifier make_classifier returns",
                        fix="let make_classifier return a tf.function: the graph is what the "
                            "exercise is about.")
    explain = _classify_explainer(ctx, fn)
    got = [text_observation(call(fn, tf.constant(x, tf.float32), what=ctx.what,
                                 explain=explain)) for _ in range(2)]
    spec = tf.TensorSpec([], tf.float32)
    ops = call(graph_ops, fn, spec, what=ctx.what, explain=explain)
    concrete = call(functions.concrete_function, fn, spec, what=ctx.what, explain=explain)
    evidence = branch_evidence(concrete, bools_are_predicates=True)
    return {"results": got, **ops, "pred_from_x": evidence["pred_from_x"],
            "computed_outside": evidence["computed_outside"]}


check_classify = exercise_check("check_classify", collect_classify)


def collect_tanh_loop(fn, case, ctx):
    """Kernel half of ``check_tanh_loop``: ``tanh_loop(x)`` is a ``tf.function`` that, while
    ``tf.reduce_sum(x) > 1``, applies ``x = tf.tanh(x)`` and ``tf.print``s x, and returns the
    float32 history of x, shape (steps + 1, n): x before the loop, then after each step (the
    draft's loop variable that grows, fixed). Idea graded: the loop runs in the graph (a While
    op), printing on each iteration, for any number of iterations.

    The check calls ``fn`` twice on the float32 vector, capturing the output of each call at
    the file-descriptor level and counting its non-empty lines; counts the traces the second
    call makes; calls ``fn`` on a probe of the same shape that runs more iterations (output
    discarded); counts the lines a fresh copy prints while it traces (a Python print) and
    reads the graph's op types.

    Returns:
        ``{"results", "lines", "retraced", "probe", "trace_lines", "op_types",
        "output_ops"}`` (output_ops: the op types the returned history is computed from).
    Raises:
        CheckFailed: M37 for the draft's history that grows as a plain loop variable
            (AutoGraph's "has shape ... before the loop, but shape ... after one iteration").
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    values = np.asarray(case, np.float32)
    spec = tf.TensorSpec(values.shape, tf.float32)
    explain = _autograph_error(
        LOOP_VARIABLE, "M37", "loop_shape",
        f"{ctx.what} raised ValueError while TensorFlow traced it: the history is a loop "
        f"variable whose shape changes from one iteration to the next (one more row each "
        f"time). tf.while_loop needs every loop variable to keep its shape and dtype unless "
        f"told otherwise.",
        "a loop variable of a graph loop keeps one shape: collect the rows in a tf.TensorArray "
        "(read how its write returns a new array, and its stack), or declare the changing shape "
        "to AutoGraph with shape invariants (read tf.autograph.experimental.set_loop_options).")
    got, lines, traces = [], [], []
    for _ in range(2):
        with capture_output() as out:
            got.append(call(fn, tf.constant(values), what=ctx.what, explain=explain))
        lines.append(printed_count(out))
        traces.append(tracing_count(fn))
    with capture_output():
        probe = call(fn, tf.constant(np.asarray(tanh_probe(case), np.float32)),
                     what=ctx.what, explain=explain)
    with capture_output() as traced:
        call(tf.function(fn.python_function).get_concrete_function, spec, what=ctx.what,
             explain=explain)
    with capture_output():
        ops = call(graph_ops, fn, spec, what=ctx.what, explain=explain)
    return {"results": got, "lines": lines, "retraced": traces[1] - traces[0], "probe": probe,
            "trace_lines": printed_count(traced), **ops}


check_tanh_loop = exercise_check("check_tanh_loop", collect_tanh_loop)


def collect_fizzbuzz(fn, case, ctx):
    """Kernel half of ``check_fizzbuzz``: ``fizzbuzz(n)`` is a ``tf.function`` of an int32
    scalar tensor ``n`` returning a ``tf.string`` tensor of shape (n,) with FizzBuzz of 1..n.
    Idea graded: one graph computes the words for any tensor n (no table written in advance,
    no Python function called from the graph).

    The check calls ``fn`` twice with ``tf.constant(n)`` and once with ``tf.constant(n + 1)``,
    counts the traces these calls made, and reads the graph for an int32 scalar
    (:func:`~autograder.checks.graphs.graph_evidence`: op types, the largest constant or
    captured tensor, its numeral strings; :func:`written_text`: the text it holds, counted in
    bytes, and the numbers written inside it).

    Returns:
        ``{"results": [two text observations], "probe": text observation, "traces",
        "op_types", "largest_constant", "numeral_strings", "captured_resources",
        "output_ops", "text_bytes", "text_numbers"}``.
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    n = int(case)
    before = tracing_count(fn)
    got = [text_observation(call(fn, tf.constant(n), what=ctx.what)) for _ in range(2)]
    probe = text_observation(call(fn, tf.constant(n + 1), what=ctx.what))
    traces = tracing_count(fn) - before
    evidence = call(graph_evidence, fn, tf.TensorSpec([], tf.int32), what=ctx.what)
    text = call(written_text, fn, tf.TensorSpec([], tf.int32), what=ctx.what)
    return {"results": got, "probe": probe, "traces": traces, **evidence, **text}


def written_text(fn, *input_signature) -> dict:
    """The text a graph of ``fn`` holds written in advance, counted in bytes, not elements
    (one long string of words is as long as its characters): the bytes of every string
    constant of the graph for ``input_signature`` and of the functions it calls, of the string
    tensors and variables it captures, and of the string attributes of its ops (a
    ``tf.strings.format`` template; TensorFlow's own ``_``-prefixed ones left out).

    Returns:
        ``{"text_bytes": int, "text_numbers": int}``: the bytes, and how many runs of digits
        the string constants and captured strings hold (numbers written in advance).
    """
    concrete = fn.get_concrete_function(*input_signature)
    graph_def = concrete.graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    strings = []
    for node in nodes:
        if node.op == "Const":
            strings.extend(node.attr["value"].tensor.string_val)
    held = [t for t in concrete.captured_inputs if t.dtype == tf.string]
    held += [v for v in concrete.variables if v.dtype == tf.string]
    for tensor in held:
        try:
            strings.extend(bytes(s) for s in np.asarray(tensor.numpy(), object).reshape(-1))
        except Exception:  # a symbolic capture of an outer graph: no value to read
            continue
    attributes = [value for node in nodes for key, attr in node.attr.items()
                  if not key.startswith("_") for value in (attr.s, *attr.list.s)]
    return {"text_bytes": sum(len(s) for s in strings + attributes),
            "text_numbers": sum(len(DIGITS.findall(s)) for s in strings)}


check_fizzbuzz = exercise_check("check_fizzbuzz", collect_fizzbuzz)


def collect_count_word(fn, case, ctx):
    """Kernel half of ``check_count_word``: ``count_word(labels, word)`` is how many entries of
    the 1-D ``tf.string`` tensor ``labels`` equal the Python ``str`` ``word`` exactly, as a
    Python ``int``. Idea graded: the bytes of a tf.string tensor are decoded (or the word
    encoded) before they are compared, and the count follows the labels.

    The check calls ``fn`` (eager, not decorated) on the case, on a probe with the word once
    more (:func:`~autograder.checks.judge.control_flow.count_word_probe`) and on the case
    written with an accent and a quote in every entry and in the word
    (:func:`~autograder.checks.judge.control_flow.count_word_text_probe`): there ``str(b)`` and
    ``repr(b)`` of the bytes differ from the text, so only decoding (or comparing bytes)
    counts right.

    Returns:
        ``{"result", "probe", "text_probe"}``: what ``fn`` returned.
    Raises:
        CheckFailed: M35 for a UnicodeError (the bytes decoded as ASCII, not UTF-8).
    """
    __tracebackhide__ = True
    labels, word = case

    def not_utf8(error):  # M35: the bytes decoded as ASCII (numpy's astype(str), ...)
        if isinstance(error, UnicodeError):
            raise CheckFailed(NOT_UTF8[0].format(what=ctx.what), "M35", NOT_UTF8[1],
                              code="not_utf8") from None

    got = call(fn, tf.constant(list(labels), tf.string), word, what=ctx.what, explain=not_utf8)
    probe = call(fn, tf.constant(count_word_probe(labels, word), tf.string), word,
                 what=ctx.what, explain=not_utf8)
    text_labels, text_word = count_word_text_probe(labels, word)
    text = call(fn, tf.constant(text_labels, tf.string), text_word, what=ctx.what,
                explain=not_utf8)
    return {"result": snapshot(got), "probe": snapshot(probe), "text_probe": snapshot(text)}


check_count_word = exercise_check("check_count_word", collect_count_word)


def collect_sum_even(fn, case, ctx):
    """Kernel half of ``check_sum_even``: ``sum_even(items)`` is a ``tf.function`` that loops
    over the 1-D int32 tensor ``items`` with ``for``, skips odd entries with ``continue`` and
    returns the int32 sum of the even ones (0 for none, or an empty tensor). Idea graded: the
    loop runs in the graph (a While op for a vector of unknown length).

    The check calls ``fn`` twice on the case (counting the traces of the second call), once on
    a probe (:func:`~autograder.checks.judge.control_flow.sum_even_probe`), and reads the op
    types of its graph for ``tf.TensorSpec([None], tf.int32)``.

    The graph for the case's own, known length is read too (``known_op_types``): a Python
    ``range(items.shape[0])`` or ``range(len(items))`` is unrolled there (no While op).

    Returns:
        ``{"results", "retraced", "probe", "op_types", "output_ops", "known_op_types"}``.
    Raises:
        CheckFailed: M57 for a Python range over ``items.shape[0]`` (TypeError for unknown
            length); M15 for a Python list filled in the loop (harness); M20, ...
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    items = np.asarray(case, np.int32).reshape(-1)
    got, traces = [], []
    for _ in range(2):
        got.append(call(fn, tf.constant(items, tf.int32), what=ctx.what))
        traces.append(tracing_count(fn))
    probe = call(fn, tf.constant(np.asarray(sum_even_probe(case), np.int32)),
                 what=ctx.what)
    unknown = f"{ctx.exercise} traced for a vector of unknown length"
    explain = _autograph_error(
        STATIC_LENGTH, "M57", "static_length",
        f"{unknown} raised TypeError: the loop is a Python range over the static length "
        f"(items.shape[0] is None when the length is not known), so it runs while tracing, "
        f"not in the graph.",
        "make the loop a graph loop whatever the length: iterate the tensor itself, or a tf.range "
        "over its dynamic size (tf.size), which AutoGraph turns into a tf.while_loop.")
    ops = call(graph_ops, fn, tf.TensorSpec([None], tf.int32), what=unknown, explain=explain)
    known = sorted(set(call(graph_op_types, fn, tf.TensorSpec(items.shape, tf.int32),
                            what=ctx.what)))
    return {"results": got, "retraced": traces[1] - traces[0], "probe": probe, **ops,
            "known_op_types": known}


check_sum_even = exercise_check("check_sum_even", collect_sum_even)
