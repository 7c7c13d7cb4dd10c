"""Grader halves of the checks of assignment 04 (control flow in graphs), NumPy only.

Each judge takes a case, the observations of the kernel half (``autograder/checks/
control_flow.py``) and a :class:`~autograder.checks.judge.Context`; references come from plain
Python and NumPy (:func:`classify_reference`, :func:`fizzbuzz_reference`, a NumPy loop). The
evidence that the control flow runs in the graph is kernel-observed: the op types of the graph
(loop and branch bodies included), trace counts, how many lines were printed, the size of the
constants a graph holds. It travels as names and counts, never as printed text. Messages show
values only when ``ctx.reveal`` (a student's visible check).

Besides its own inputs, a case's kernel half also calls the student's code on a *probe*, an
input derived from the case by the functions below: an answer worked out by hand for the inputs
it is checked on gives the same result there (M21).
"""
from __future__ import annotations

import numpy as np

from . import exercise
from .readers import (PY_FUNC_OPS, check_probe, count, op_types, refuse_py_function,
                      require_from, values)

MODULE = "autograder.checks.control_flow"

#: Op types of a branch in a graph (tf.cond, AutoGraph's if) and of tf.where / tf.switch_case.
CONDITIONAL_OPS = {"If", "StatelessIf"}
BRANCH_OPS = CONDITIONAL_OPS | {"Select", "SelectV2", "Case", "StatelessCase"}
#: Op types of a graph loop (tf.while_loop, AutoGraph's while and for over a tensor).
WHILE_OPS = {"While", "StatelessWhile"}
PRINT_OPS = {"PrintV2", "Print"}
#: Op types of lookup tables (tf.lookup): words looked up are words written in advance.
TABLE_OPS = {"LookupTableFind", "LookupTableFindV2", "LookupTableImport",
             "LookupTableImportV2", "LookupTableInsert", "LookupTableInsertV2",
             "LookupTableExport", "LookupTableExportV2", "LookupTableSize", "LookupTableSizeV2",
             "HashTable", "HashTableV2", "MutableHashTable", "MutableHashTableV2",
             "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
             "MutableDenseHashTableV2", "InitializeTable", "InitializeTableV2",
             "InitializeTableFromTextFile", "InitializeTableFromTextFileV2",
             "InitializeTableFromDataset", "AnonymousHashTable", "AnonymousMutableHashTable",
             "AnonymousMutableHashTableOfTensors", "AnonymousMutableDenseHashTable"}
#: The most entries a constant of a FizzBuzz graph needs: one period of 15 (a table of words
#: for i % 15 is computing; a longer one is the answer written in advance).
FIZZBUZZ_TABLE = 15
#: Most iterations of the reference loop of tanh_loop (cases are the instructor's).
MAX_STEPS = 100_000


# --------------------------------------------------------------------------- references

def classify_reference(x: float) -> str:
    """The word for the sign of x: "positive" (x > 0), "negative" (x < 0) or "zero"."""
    return "positive" if x > 0 else "negative" if x < 0 else "zero"


def fizzbuzz_reference(n: int) -> list[str]:
    """FizzBuzz of 1..n in plain Python: "Fizz" on multiples of 3, "Buzz" on multiples of 5,
    "FizzBuzz" on multiples of both, else the number."""
    return ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0
            else str(i) for i in range(1, n + 1)]


def tanh_reference(values) -> tuple[np.ndarray, int]:
    """x after ``while sum(x) > 1: x = tanh(x)`` in float64, and the number of iterations."""
    x, steps = np.asarray(values, np.float64), 0
    while x.sum() > 1 and steps < MAX_STEPS:
        x, steps = np.tanh(x), steps + 1
    return x, steps


# --------------------------------------------------------------------------- probes

def tanh_probe(values) -> list:
    """The probe of a tanh_loop case: every entry plus 1 (same shape, more iterations)."""
    return (np.asarray(values, np.float64) + 1.0).tolist()


def sum_even_probe(values) -> list:
    """The probe of a sum_even case: the items followed by 2 and 3 (the even sum grows by 2)."""
    return [int(v) for v in np.asarray(values, np.int64).reshape(-1)] + [2, 3]


def count_word_probe(labels, word) -> list:
    """The probe of a count_word case: the labels with one more ``word`` at the end."""
    return list(labels) + [word]


# --------------------------------------------------------------------------- shared helpers

def strings(ctx, result, part: str = "") -> np.ndarray:
    """The text of a result the kernel observed as ``{"string": bool, "value": bytes array,
    "kind": description}`` (a tf.string tensor), decoded to an array of str; fails unless it
    was a tf.string tensor."""
    if result["string"] is not True:
        kind = result["kind"] if ctx.reveal and isinstance(result["kind"], str) else None
        ctx.fail(f"{ctx.what}{part} should return a tf.string tensor"
                 + (f", got {kind}." if kind else "."), code="type")
    value = result["value"]
    if not isinstance(value, np.ndarray) or value.dtype != object or not all(
            isinstance(v, bytes) for v in value.flat):
        raise ValueError("not a bytes array")
    return np.vectorize(lambda b: b.decode("utf-8", errors="replace"), otypes=[object])(
        value) if value.size else value.astype(object)


# --------------------------------------------------------------------------- classify

@exercise("classify", module=MODULE, cases=[2.0, -3.0, 0.0],
          idea="a plain Python if/elif/else on the tensor, converted by AutoGraph: the words "
               "are right on every branch, tf.autograph.to_code shows ag__.if_stmt and the "
               "returned word is computed from an If op of the graph (the branch is taken in "
               "the graph, on each call; no Python function called from it).",
          kernel_evidence="the op types of classify's graph, those the returned word is "
                          "computed from, and whether AutoGraph's code of it holds "
                          "ag__.if_stmt")
def classify(case, obs, ctx):
    """``obs``: ``results`` (two calls, each ``{"string", "value", "kind"}``), ``op_types``
    (of the graph for a float32 scalar), ``output_ops`` (those the word is computed from),
    ``autograph_if`` (``ag__.if_stmt`` in
    ``tf.autograph.to_code``). Reference: :func:`classify_reference`."""
    want = classify_reference(float(case))
    ops = op_types(obs)
    for result in values(obs, "results", 2):
        text = strings(ctx, result)
        if text.shape != () or text.item() != want:
            if not BRANCH_OPS & ops:
                ctx.fail(f"{ctx.what} took the wrong branch, and its graph has no If op: the "
                         f"`if` tested a Python value, decided once while TensorFlow traced "
                         f"the function, not the tensor's value on each call. `x is True`, "
                         f"`x is None` or `x == None` compare the tensor object itself, so "
                         f"they are the same on every call.", mistake="M17",
                         fix="test the value with a TensorFlow comparison: `if x > 0:` / "
                             "`elif x < 0:`.")
            if ctx.reveal:
                got = text.item() if text.shape == () else text.tolist()
                got = got.encode() if isinstance(got, str) else got
                ctx.fail(f"{ctx.what}: expected {want.encode()!r} (tf.string), got {got!r}.",
                         code="value")
            ctx.fail(f"{ctx.what} returned the wrong word.", code="value")
    if obs["autograph_if"] is not True:
        ctx.fail(f"{ctx.what} gives the right strings but tf.autograph.to_code shows no "
                 f"ag__.if_stmt: the exercise is to write plain Python `if x > 0:` / `elif` / "
                 f"`else` and let AutoGraph convert them.", mistake="M21",
                 fix="replace tf.where/tf.cond by `if x > 0: return \"positive\"`, `elif x < 0:"
                     " ...`, `else: ...`.", code="no_autograph_if")
    if not CONDITIONAL_OPS & ops:
        ctx.fail(f"{ctx.what} gives the right strings, but its graph has no If op: the `if` "
                 f"does not test the tensor, so the branch is not taken in the graph.",
                 mistake="M21", fix="test x itself: `if x > 0:` / `elif x < 0:` / `else:`.",
                 code="no_cond")
    fix = ("return the words from the branches: `if x > 0: return \"positive\"`, "
           "`elif x < 0: ...`, `else: ...`.")
    refuse_py_function(ctx, obs, fix)
    require_from(ctx, obs, CONDITIONAL_OPS, "an If op", fix, "cond_beside")


# --------------------------------------------------------------------------- tanh_loop

@exercise("tanh_loop", module=MODULE, cases=[[1.0, 2.0]],
          label=lambda case: f"input {case}",
          idea="the while loop runs in the graph: the returned x is computed by a While op of "
               "its graph (no Python function called from it), one graph serves inputs of "
               "different values, and tf.print prints x on each iteration.",
          kernel_evidence="the op types of the graph and those the returned x is computed "
                          "from, trace counts, and how many lines each call and a fresh trace "
                          "printed",
          findings={"no_print": ("{what} returns the right x but prints nothing.",
                                 "print x with tf.print(x) inside the loop.")})
def tanh_loop(case, obs, ctx):
    """``obs``: ``results`` (two calls), ``lines`` (non-empty lines printed by each),
    ``trace_lines`` (lines a fresh copy printed while it traced), ``retraced`` (traces the
    second call made), ``probe`` (the result for :func:`tanh_probe`), ``op_types``,
    ``output_ops`` (those the returned x is computed from).
    Reference: the same loop in NumPy."""
    want, steps = tanh_reference(case)
    got = values(obs, "results", 2)
    printed = values(obs, "lines", 2)
    ops = op_types(obs)
    ran = f" ran {steps} iterations but" if ctx.reveal else ""
    for value, lines in zip(got, printed):
        ctx.close(value, want, rtol=1e-4, atol=1e-5, check_dtype="float")
        if not isinstance(lines, int) or isinstance(lines, bool):
            raise ValueError("lines: not a count")
        if lines < steps:
            if not PRINT_OPS & ops and count(obs, "trace_lines") == 0:
                ctx.fail(f"{ctx.what} returns the right x but prints nothing.",
                         fix="print x with tf.print(x) inside the loop.", code="no_print")
            # Not how many lines: that depends on whether fn was traced before this call.
            ctx.fail(f"{ctx.what}{ran} did not print once per iteration. A Python print() "
                     f"runs once, while TensorFlow traces the loop body, and the graph it "
                     f"builds has no print in it.", mistake="M08",
                     fix="print with tf.print(x) inside the loop: it runs on every iteration.")
        if lines > steps:
            more = (f" ran {steps} iterations but printed {lines} lines" if ctx.reveal
                    else " printed more lines than it ran iterations")
            ctx.fail(f"{ctx.what}{more}: print x once per iteration, inside the loop, after "
                     f"the tanh.", code="extra_lines")
    probe = tanh_probe(case)
    check_probe(ctx, obs["probe"], tanh_reference(probe)[0], got[0], want,
                "another input of the same shape", f"the input {probe}",
                "return x as the loop leaves it.", rtol=1e-4, atol=1e-5, check_dtype="float")
    fix = ("loop with `while tf.reduce_sum(x) > 1:` on the tensor (AutoGraph makes it a "
           "tf.while_loop), x = tf.tanh(x) and tf.print(x) in its body, and return x.")
    if not WHILE_OPS & ops:
        ctx.fail(f"{ctx.what} gives the right x, but its graph has no While op: the loop does "
                 f"not run in the graph.", mistake="M21",
                 fix="loop with `while tf.reduce_sum(x) > 1:` on the tensor (AutoGraph makes "
                     "it a tf.while_loop).", code="no_while")
    refuse_py_function(ctx, obs, fix)
    require_from(ctx, obs, WHILE_OPS, "a While loop", fix, "loop_beside")
    if count(obs, "retraced"):
        ctx.fail(f"{ctx.what} traced again when called a second time with a tensor of the "
                 f"same shape: one graph should serve every call.", mistake="M21",
                 fix="take x as a tensor and loop on it in the graph.", code="retraced")


# --------------------------------------------------------------------------- fizzbuzz

def _fizzbuzz_result(ctx, result, n: int, part: str = "") -> None:
    """Judge one result of fizzbuzz against FizzBuzz of 1..n."""
    words = strings(ctx, result, part)
    if words.shape != (n,):
        if ctx.reveal:
            ctx.fail(f"{ctx.what}{part} should have shape ({n},), got {words.shape}.",
                     code="shape")
        ctx.fail(f"{ctx.what}{part} has the wrong shape.", code="shape")
    if n and all(w == "" for w in words):
        shown = f" {n}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}{part} returned{shown} empty strings b''. In a graph "
                 f"TensorArray.write returns a new TensorArray and leaves the old one "
                 f"unchanged; if its result is dropped, nothing is written (eager mode hides "
                 f"this).", mistake="M11", fix="assign it back: ta = ta.write(i, s).")
    for i, (got, want) in enumerate(zip(words, fizzbuzz_reference(n))):
        if got != want:
            if ctx.reveal:
                ctx.fail(f"{ctx.what}{part}: entry {i} (for the number {i + 1}) should be "
                         f"{want.encode()!r}, got {got.encode()!r}.", code="value")
            ctx.fail(f"{ctx.what}{part}: an entry is not the FizzBuzz word of its number.",
                     code="value")


@exercise("fizzbuzz", module=MODULE, cases=[15],
          label=lambda n: f"input n={n}",
          idea="the words are computed in one graph for any tensor n: called with tensors n "
               "and n + 1, the tf.function traces once (a tf.range loop writing a TensorArray, "
               "or tensor ops), with no table of words written in advance (constants, captured "
               "tensors or lookup tables) and no Python function called from the graph.",
          kernel_evidence="trace counts, the op types of the graph, the size and numeral "
                          "entries of the constants and captured tensors it holds, and how "
                          "many captured resources (lookup tables) that are not its variables")
def fizzbuzz(case, obs, ctx):
    """``obs``: ``results`` (two calls with n), ``probe`` (the call with n + 1), each
    ``{"string", "value", "kind"}``; ``traces`` (traces the three calls made), ``op_types``,
    ``largest_constant``, ``numeral_strings``, ``captured_resources``. Reference: :func:`fizzbuzz_reference`."""
    n = int(case)
    for result in values(obs, "results", 2):
        _fizzbuzz_result(ctx, result, n)
    _fizzbuzz_result(ctx, obs["probe"], n + 1, ", called with n + 1,")
    traces, allowed = count(obs, "traces"), 1 if ctx.index == 0 else 0
    if traces > allowed:
        shown = f" {traces} times" if ctx.reveal else " again"
        ctx.fail(f"{ctx.what} traced{shown} for values of n given as tensors: loop with "
                 f"`for i in tf.range(1, n + 1)` so one graph serves every n.", mistake="M21",
                 fix="loop over tf.range(1, n + 1) inside the tf.function and write each word "
                     "to a tf.TensorArray.", code="retraced")
    if PY_FUNC_OPS & op_types(obs):
        ctx.fail(f"{ctx.what} returns the right words, but Python computes them "
                 f"(tf.py_function or tf.numpy_function), not the graph.", mistake="M21",
                 fix="compute each word with TensorFlow ops in a tf.range loop: tf.constant("
                     "\"Fizz\"), tf.strings.as_string(i), ta = ta.write(i - 1, word).",
                 code="py_function")
    if count(obs, "numeral_strings") or count(obs, "largest_constant") > FIZZBUZZ_TABLE \
            or TABLE_OPS & op_types(obs) or count(obs, "captured_resources"):
        ctx.fail(f"{ctx.what} returns the right words, but its graph holds them written in "
                 f"advance (a table of words or numbers, or a lookup table), not computed "
                 f"from n.",
                 mistake="M21",
                 fix="compute each word in the loop: tf.constant(\"Fizz\") and friends for "
                     "multiples, tf.strings.as_string(i) for the other numbers.",
                 code="table")


# --------------------------------------------------------------------------- count_word

def _count_word_label(case) -> str:
    labels, word = case
    shown = labels if len(labels) <= 6 else list(labels[:5]) + ["...", labels[-1]]
    return f"input labels={shown} ({len(labels)} entries), word={word!r}"


def _count(ctx, got, part: str = "") -> int:
    value = np.asarray(got) if isinstance(got, (np.ndarray, int, float, list)) and not \
        isinstance(got, bool) else None
    if value is None or value.shape != () or not np.issubdtype(value.dtype, np.integer):
        ctx.fail(f"{ctx.what}{part} should return one integer.", code="type")
    return int(value)


@exercise("count_word", module=MODULE, cases=[(fizzbuzz_reference(15), "Fizz")],
          label=_count_word_label,
          idea="a tf.string tensor holds bytes: entries are decoded (or the word encoded) "
               "before they are compared, and the count follows the labels (one more "
               "occurrence of the word counts one more).",
          kernel_evidence=None)
def count_word(case, obs, ctx):
    """``obs``: ``result`` (for the case), ``probe`` (for :func:`count_word_probe`).
    Reference: exact matches counted in Python."""
    labels, word = case
    want = sum(1 for s in labels if s == word)
    got = _count(ctx, obs["result"])
    if got == 0 and want > 0:
        shown = f", but {word!r} occurs {want} times" if ctx.reveal else ", but the word occurs"
        raw = f"b'{word}'" if ctx.reveal else "b'...'"
        text = f"'{word}'" if ctx.reveal else "'...'"
        ctx.fail(f"{ctx.what} returned 0{shown}. A tf.string tensor holds bytes: "
                 f"labels.numpy() gives {raw}, and {raw} == {text} is False in Python.",
                 mistake="M10", fix="decode (s.decode() == word) or compare with word.encode().")
    if got != want:
        if ctx.reveal:
            ctx.fail(f"{ctx.what}: expected {want}, got {got}.", code="value")
        ctx.fail(f"{ctx.what}: the count differs from the expected one.", code="value")
    probe = _count(ctx, obs["probe"], ", with the word once more at the end,")
    if probe == got:
        ctx.fail(f"{ctx.what} returns the right count here, but the same count when the word "
                 f"occurs once more: the count does not follow the labels (a number worked "
                 f"out by hand?).", mistake="M21",
                 fix="count the entries of labels that equal word: sum(1 for s in "
                     "labels.numpy() if s.decode() == word).", code="constant")
    if probe != want + 1:
        ctx.fail(f"{ctx.what}: with the word once more at the end of labels, the count should "
                 f"grow by one.", code="value")


# --------------------------------------------------------------------------- sum_even

@exercise("sum_even", module=MODULE, cases=[[1, 2, 3, 4], [5, 10, 15]],
          label=lambda case: f"input {case}",
          idea="the for loop over the tensor runs in the graph: in the graph for a vector of "
               "unknown length the returned sum is computed by a While op (AutoGraph's "
               "tf.while_loop; no Python function called from the graph), and the sum "
               "follows the items.",
          kernel_evidence="the op types of the graph for a vector of unknown length and those "
                          "the returned sum is computed from, and trace counts")
def sum_even(case, obs, ctx):
    """``obs``: ``results`` (two calls), ``retraced`` (traces the second call made),
    ``probe`` (the result for :func:`sum_even_probe`), ``op_types`` (of the graph for a
    vector of unknown length), ``output_ops`` (those the sum is computed from). Reference:
    NumPy's ``items[items % 2 == 0].sum()``."""
    items = np.asarray(case, np.int64).reshape(-1)
    want = np.int32(items[items % 2 == 0].sum())
    got = values(obs, "results", 2)
    for value in got:
        ctx.close(value, want, check_dtype="int")
    probe = sum_even_probe(case)
    check_probe(ctx, obs["probe"], np.int32(want + 2), got[0], want,
                "other items (two more at the end)", f"the input {probe}",
                "add the even items in the loop: `total += item`.", check_dtype="int")
    if not WHILE_OPS & op_types(obs):
        ctx.fail(f"{ctx.what} gives the right sums, but its graph for a vector of unknown "
                 f"length has no While loop: the loop does not run in the graph.",
                 mistake="M21", fix="write `for item in items:` over the tensor (AutoGraph "
                                    "makes it a tf.while_loop), `continue` for odd items and "
                                    "`total += item` for the others.", code="no_while")
    fix = ("write `for item in items:` over the tensor, `continue` for odd items and "
           "`total += item` for the others, and return total.")
    refuse_py_function(ctx, obs, fix)
    require_from(ctx, obs, WHILE_OPS, "a While loop", fix, "loop_beside")
    if count(obs, "retraced"):
        ctx.fail(f"{ctx.what} traced again when called a second time with a tensor of the "
                 f"same shape: one graph should serve every call.", mistake="M21",
                 fix="take items as a tensor and loop on it in the graph.", code="retraced")
