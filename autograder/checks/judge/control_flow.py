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

import operator

import numpy as np

from . import exercise
from .pitfalls import PREDICTION_LABEL, _predicted, _prediction_values, _same, _wrong
from .readers import (PY_FUNC_OPS, check_probe, count, op_types, refuse_py_function,
                      require_from, require_loop_work, values)

MODULE = "autograder.checks.control_flow"

#: Op types of a branch in a graph (tf.cond, AutoGraph's if) and of tf.where / tf.switch_case.
CONDITIONAL_OPS = {"If", "StatelessIf"}
#: Op types of a branch taken in the graph: tf.cond (AutoGraph's if, tf.case) and
#: tf.switch_case; tf.where (Select) computes every word and picks one.
TAKEN_BRANCH_OPS = CONDITIONAL_OPS | {"Case", "StatelessCase"}
BRANCH_OPS = TAKEN_BRANCH_OPS | {"Select", "SelectV2"}
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
#: The most bytes of text a FizzBuzz graph needs written in advance: the words of one period
#: ("Fizz", "Buzz", "FizzBuzz", and a period of 15 table entries at 8 bytes each); counted in
#: bytes, so one long string of the words for 1..n is as long as its characters.
FIZZBUZZ_TEXT_BYTES = 120
#: Most iterations of the reference loop of tanh_loop (cases are the instructor's).
MAX_STEPS = 100_000


# --------------------------------------------------------------------------- references

#: The notebook's table of rules: [word, comparison, threshold], the first that holds wins.
SIGN_RULES = (("positive", ">", 0.0), ("negative", "<", 0.0))
#: The comparisons a case's rule may name (the kernel half builds ``lambda x: x > t`` from them).
COMPARISONS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


def classify_case(case) -> tuple[tuple, str, float]:
    """A case of ``check_classify`` as ``(rules, default, x)``: ``rules`` a tuple of ``(word,
    comparison, threshold)`` (comparison one of :data:`COMPARISONS`), ``default`` the word when
    none holds, ``x`` a float. A bare number x stands for the notebook's table
    (:data:`SIGN_RULES`, default "zero").

    Raises:
        ValueError: for a case of another form (an instructor's typo in a test cell).
    """
    if isinstance(case, (int, float)) and not isinstance(case, bool):
        return SIGN_RULES, "zero", float(case)
    try:
        rules, default, x = case
        rules = tuple((str(word), str(op), float(t)) for word, op, t in rules)
    except (TypeError, ValueError):
        raise ValueError(f"a classify case is x or [rules, default, x], got {case!r}") from None
    if not rules or any(op not in COMPARISONS for _, op, _ in rules):
        raise ValueError(f"a classify case needs rules with comparisons among "
                         f"{sorted(COMPARISONS)}, got {case!r}")
    return rules, str(default), float(x)


def classify_reference(x: float, rules=SIGN_RULES, default: str = "zero") -> str:
    """The word of the first rule ``(word, comparison, threshold)`` that holds for x, in the
    table's order, else ``default``. With the notebook's table: "positive" (x > 0), "negative"
    (x < 0) or "zero"."""
    for word, op, threshold in rules:
        if COMPARISONS[op](x, threshold):
            return word
    return default


def _last_rule_word(x: float, rules, default: str) -> str:
    """The word a loop that lets every rule that holds overwrite the word gives: the last."""
    return classify_reference(x, tuple(reversed(rules)), default)


def fizzbuzz_reference(n: int) -> list[str]:
    """FizzBuzz of 1..n in plain Python: "Fizz" on multiples of 3, "Buzz" on multiples of 5,
    "FizzBuzz" on multiples of both, else the number."""
    return ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0
            else str(i) for i in range(1, n + 1)]


def tanh_reference(values) -> tuple[np.ndarray, int]:
    """The history of x under ``while sum(x) > 1: x = tanh(x)`` in float64, shape
    (steps + 1, n): x before the loop, then after each step; and the number of steps."""
    x = np.asarray(values, np.float64).reshape(-1)
    rows = [x]
    while rows[-1].sum() > 1 and len(rows) <= MAX_STEPS:
        rows.append(np.tanh(rows[-1]))
    return np.stack(rows), len(rows) - 1


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


#: What :func:`count_word_text_probe` appends to every entry: an accent (two bytes in UTF-8,
#: which str() and repr() of bytes write as escapes) and a quote (which makes repr() switch to
#: double quotes). No regular-expression metacharacter: an exact match by regex still counts.
TEXT_SUFFIX = "\u00e9'"


def count_word_text_probe(labels, word) -> tuple[list, str]:
    """The text probe of a count_word case: every label and the word with :data:`TEXT_SUFFIX`
    appended (the count stays the case's). ``str(b"...\\xc3\\xa9...")`` is not the text:
    only a decoded comparison (or one of bytes) counts right."""
    return [label + TEXT_SUFFIX for label in labels], word + TEXT_SUFFIX


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


# --------------------------------------------------------------------------- predict_draft

#: What the three calls of classify_draft do: the graph call raises while tracing (the word is
#: not set on the path x == 0, and tf.cond traces every path), the same code run eagerly with
#: 2.0 returns "positive", and eagerly with 0.0 raises UnboundLocalError.
DRAFT_RUNS = [False, True, False]


@exercise("predict_draft", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a tensor `if` becomes a tf.cond, which traces every branch whatever x is: a "
               "word set on two of the three paths fails while tracing, even for x = 2.0; the "
               "same Python code run eagerly takes one path, and fails only for 0.0: "
               "[False, True, False].")
def predict_draft(case, obs, ctx):
    """``obs``: ``values`` = [predicted_runs], three bools (whether each call returns a word).
    Reference: :data:`DRAFT_RUNS`. Graded as 07's predictions are
    (:mod:`autograder.checks.judge.pitfalls`)."""
    names = ("predicted_runs",)
    [runs] = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("list",))
    if not _same(runs, DRAFT_RUNS):
        graph_runs = len(runs) == 3 and runs[0] is True
        _wrong(ctx, names[0], runs, DRAFT_RUNS, "As a graph, AutoGraph turns the tensor `if` "
               "into tf.cond and traces both of its branches, whatever x is: the word is not "
               "set on the path x == 0, so even classify_draft(tf.constant(2.0)) raises while "
               "tracing. Run eagerly, the Python `if` takes one path: 2.0 sets the word, 0.0 "
               "reaches `return word` with no word (UnboundLocalError).",
               mistake="M36" if graph_runs else None,
               fix="three bools, one per call, in the order of the cell: True where the call "
                   "returns a word, False where it raises.")


# --------------------------------------------------------------------------- classify

#: Op types that pick one of values computed in advance (tf.where, tf.gather), or build the
#: word by cutting and joining strings: the word chosen by them, not by the branch the graph
#: takes (a branch of classify returns a word as it is).
PICKING_OPS = {"Select", "SelectV2", "GatherV2", "Gather", "ResourceGather", "GatherNd",
               "Substr", "ReduceJoin", "StringJoin", "DynamicPartition", "TensorArrayReadV3",
               "TensorListGetItem", "UnsortedSegmentJoin"}

ONE_BRANCH = ("{what} raised ValueError while TensorFlow traced it: the word is not set on "
              "every path. A tensor `if` becomes a tf.cond, which traces every branch whatever "
              "x is, the `else` included even where none is written (the path on which no "
              "comparison holds), so a name read after it must be set on every path.",
              "give the word a value on the path where no comparison holds too (an `else:`), "
              "or before the `if`.")


ONE_RETURN = ("{what} raised ValueError while TensorFlow traced it: a tensor `if` returns on "
              "some of its paths only. A tf.cond traces every branch, the `else` included even "
              "where none is written, and each must return.",
              "return a word on the path where no comparison holds too (an `else:` or a last "
              "`return`).")
LOOP_EXIT = ("{what} raised while TensorFlow traced it: a `return` (or `break`) on a tensor "
             "condition inside a Python loop. A `for` over a Python list runs while tracing "
             "(the loop is unrolled), so it cannot stop early on a value known only when the "
             "graph runs; AutoGraph reports the `if` around it as a branch without a return.",
             "let every rule's `if` set the word and return once, after the loop (apply the "
             "rules in reverse to keep the first one that holds), or write the rules as an "
             "if/elif/else chain.")
BRANCH_FIX = ("let the condition be a comparison of the tensor itself (AutoGraph makes a Python "
              "if on a tensor a tf.cond), setting the word in each rule's if and returning it "
              "after the loop; an if/elif/else chain, tf.case or tf.switch_case take the branch "
              "in the graph too.")



def _classify_label(case) -> str:
    rules, default, x = classify_case(case)
    if rules == SIGN_RULES:
        return f"input {x}"
    table = ", ".join(f"{word!r} if x {op} {t:g}" for word, op, t in rules)
    return f"rules [{table}], else {default!r}, input {x}"


# The visible cases: the notebook's table, then two tables of the check's own where rules
# overlap (the first that holds wins) and the default is another word; between them they use
# every comparison of COMPARISONS.
@exercise("classify", module=MODULE, label=_classify_label,
          cases=[2.0, -3.0, 0.0,
                 [[["freezing", "<=", 0.0], ["cold", "<", 10.0], ["warm", "<", 25.0]], "hot",
                  -4.0],
                 [[["big", ">=", 10.0], ["positive", ">", 0.0]], "small", 20.0],
                 [[["big", ">=", 10.0], ["positive", ">", 0.0]], "small", 5.0]],
          idea="the rules draft fixed: the classifier make_classifier returns applies the table "
               "it is given, the first rule that holds winning where rules overlap; no `return` "
               "or `break` on a tensor condition inside the Python loop over the rules "
               "(unrolled while tracing); the words are right on every branch and the returned "
               "word is computed from a branch the graph takes on each call (an If op: a "
               "tensor `if` converted by AutoGraph, tf.cond or tf.case; or tf.switch_case's "
               "Case op), not decided while tracing, not tf.where over every word, "
               "no Python function called from the graph.",
          kernel_evidence="the op types of classify's graph for a float32 scalar and those the "
                          "returned word is computed from",
          findings={"one_branch": ONE_BRANCH, "one_return": ONE_RETURN, "loop_exit": LOOP_EXIT})
def classify(case, obs, ctx):
    """``case``: x, or ``[rules, default, x]`` (:func:`classify_case`). ``obs``: ``results``
    (two calls of the classifier ``make_classifier(rules, default)`` returns, each ``{"string",
    "value", "kind"}``), ``op_types`` (of its graph for a float32 scalar), ``output_ops`` (those
    the word is computed from). Reference: :func:`classify_reference`."""
    rules, default, x = classify_case(case)
    want = classify_reference(x, rules, default)
    ops = op_types(obs)
    for result in values(obs, "results", 2):
        text = strings(ctx, result)
        got_word = text.item() if text.shape == () else None
        if got_word == want:
            continue
        # A word both mistakes give (the sign table's, which is also the last rule's) names
        # neither: another case tells them apart.
        sign_word = got_word == classify_reference(x) and rules != SIGN_RULES
        last_word = got_word == _last_rule_word(x, rules, default)
        shown = (f" (expected {want.encode()!r}, got {got_word.encode()!r})"
                 if ctx.reveal and got_word is not None else "")
        if sign_word and not last_word:
            ctx.fail(f"{ctx.what} returned the word of the notebook's sign rules, not of the "
                     f"rules it was given{shown}: the classifier must apply the table passed to "
                     f"make_classifier, whatever words and comparisons it holds.",
                     mistake="M104", fix="build the graph from `rules` and `default`, one "
                     "branch per rule, instead of writing the notebook's comparisons out.",
                     code="rules_ignored")
        if last_word and not sign_word:
            ctx.fail(f"{ctx.what} returned the word of the last rule that holds, not of the "
                     f"first{shown}: rules may overlap, and the table's order decides between "
                     f"them. Each rule's `if` that sets the word overwrites the word of the "
                     f"rules before it.", mistake="M105",
                     fix="let an earlier rule win: apply the rules in reverse order, or let a "
                         "rule set the word only where no earlier rule held.",
                     code="last_rule_wins")
        if not BRANCH_OPS & ops:
            ctx.fail(f"{ctx.what} took the wrong branch, and its graph has no If op: the "
                     f"word was decided once, while TensorFlow traced the function (by an "
                     f"`if` on a Python value, or with no `if` at all), not by the tensor's "
                     f"value on each call. `x is True`, `x is None` or `x == None` compare "
                     f"the tensor object itself, so they are the same on every call.",
                     mistake="M17",
                     fix="test the value with a comparison of the tensor itself (which "
                         "AutoGraph turns into a tf.cond), not a Python identity test or a "
                         "Python value.")
        if ctx.reveal:
            got = text.item() if text.shape == () else text.tolist()
            got = got.encode() if isinstance(got, str) else got
            ctx.fail(f"{ctx.what}: expected {want.encode()!r} (tf.string), got {got!r}.",
                     code="value")
        ctx.fail(f"{ctx.what} returned the wrong word.", code="value")
    if not TAKEN_BRANCH_OPS & ops:
        ctx.fail(f"{ctx.what} gives the right strings, but its graph has no If op (nor a "
                 f"tf.switch_case): no branch is taken in the graph. tf.where computes every "
                 f"word and picks one; an `if` on a Python value is decided once, while "
                 f"TensorFlow traces the function.", mistake="M21", fix=BRANCH_FIX,
                 code="no_cond")
    refuse_py_function(ctx, obs, BRANCH_FIX)
    require_from(ctx, obs, TAKEN_BRANCH_OPS, "an If op", BRANCH_FIX, "cond_beside")
    if PICKING_OPS & ops:
        ctx.fail(f"{ctx.what} gives the right strings through a branch op, but the word is "
                 f"picked by tf.where or tf.gather, or cut and joined by string ops (inside "
                 f"a cond that decides nothing, say): every word is computed and one kept, so "
                 f"the branching is not the cond's work.", mistake="M21", fix=BRANCH_FIX,
                 code="picked_inside")
    # On the word's way out, the branch ops followed through their data only (not their
    # predicates): what is computed from x there runs whichever branch is taken, so it is the
    # picking (every word sliced, cut or read by an index), not the branch. A graph loop may
    # carry the word from branch to branch.
    picked = op_types(obs, "computed_outside") - WHILE_OPS
    if picked:
        shown = f" ({', '.join(sorted(picked)[:4])})" if ctx.reveal else ""
        ctx.fail(f"{ctx.what} gives the right strings through a branch op, but the word is "
                 f"computed from x outside the branches{shown}: the words are sliced, cut or "
                 f"read by an index that runs on every call, and the branch only passes the "
                 f"result on, so it decides nothing.", mistake="M21", fix=BRANCH_FIX,
                 code="picked_outside")
    if obs.get("pred_from_x") is False:
        ctx.fail(f"{ctx.what} gives the right strings through a branch op, but its predicate "
                 f"is not computed from x: the same branch runs on every call, and the word "
                 f"is decided elsewhere.", mistake="M21", fix=BRANCH_FIX, code="pred_not_x")


# --------------------------------------------------------------------------- tanh_loop

LOOP_SHAPE = ("{what} raised ValueError while TensorFlow traced it: the history is a loop "
              "variable whose shape changes from one iteration to the next (one more row each "
              "time). tf.while_loop needs every loop variable to keep its shape and dtype "
              "unless told otherwise.",
              "a loop variable of a graph loop keeps one shape: collect the rows in a "
              "tf.TensorArray (read how its write returns a new array, and its stack), or declare "
              "the changing shape to AutoGraph with shape invariants (read "
              "tf.autograph.experimental.set_loop_options).")


@exercise("tanh_loop", module=MODULE, cases=[[1.0, 2.0]],
          label=lambda case: f"input {case}",
          idea="the draft fixed: the while loop runs in the graph, and the history of x (one "
               "row more per iteration) is computed by a While op of its graph, collected in "
               "a TensorArray or a loop variable whose changing shape is declared (no Python "
               "function called from the graph); one graph serves inputs that run different "
               "numbers of iterations, and tf.print prints x on each iteration.",
          kernel_evidence="the op types of the graph and those the returned history is "
                          "computed from, trace counts, and how many lines each call and a "
                          "fresh trace printed",
          findings={"no_print": ("{what} returns the right history but prints nothing.",
                                 "print x inside the loop with tf.print, an op of the graph "
                                 "(Python's print runs only while tracing)."),
                    "loop_shape": LOOP_SHAPE})
def tanh_loop(case, obs, ctx):
    """``obs``: ``results`` (two calls), ``lines`` (non-empty lines printed by each),
    ``trace_lines`` (lines a fresh copy printed while it traced), ``retraced`` (traces the
    second call made), ``probe`` (the result for :func:`tanh_probe`), ``op_types``,
    ``output_ops`` (those the returned history is computed from).
    Reference: the same loop in NumPy (:func:`tanh_reference`)."""
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
                ctx.fail(f"{ctx.what} returns the right history but prints nothing.",
                         fix="print x inside the loop with tf.print, an op of the graph (Python's "
                             "print runs only while tracing).", code="no_print")
            # Not how many lines: that depends on whether fn was traced before this call.
            ctx.fail(f"{ctx.what}{ran} did not print once per iteration. A Python print() "
                     f"runs once, while TensorFlow traces the loop body, and the graph it "
                     f"builds has no print in it.", mistake="M08",
                     fix="print inside the loop with tf.print, an op of the graph: it runs on "
                         "every iteration.")
        if lines > steps:
            more = (f" ran {steps} iterations but printed {lines} lines" if ctx.reveal
                    else " printed more lines than it ran iterations")
            ctx.fail(f"{ctx.what}{more}: print x once per iteration, inside the loop, after "
                     f"the tanh.", code="extra_lines")
    probe = tanh_probe(case)
    check_probe(ctx, obs["probe"], tanh_reference(probe)[0], got[0], want,
                "another input of the same shape", f"the input {probe}",
                "return the history the loop built: x before it, then one row per step.",
                rtol=1e-4, atol=1e-5, check_dtype="float")
    fix = ("keep the draft's while loop on the tensor condition (AutoGraph makes it a "
           "tf.while_loop), with the tanh step, a graph print of x and the new row of the history "
           "in its body, and return the history.")
    if not WHILE_OPS & ops:
        ctx.fail(f"{ctx.what} gives the right history, but its graph has no While op: the "
                 f"loop does not run in the graph.", mistake="M21",
                 fix="loop while a condition on the tensor holds (AutoGraph makes a while on a "
                     "tensor a tf.while_loop).", code="no_while")
    refuse_py_function(ctx, obs, fix)
    require_from(ctx, obs, WHILE_OPS, "a While loop", fix, "loop_beside")
    require_loop_work(ctx, obs, "history", fix)
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
                 f"this).", mistake="M11", fix="TensorArray.write returns a new TensorArray and "
                                               "leaves the old one unchanged: keep what it "
                                               "returns.")
    if any(w.startswith("Tensor(") for w in words):
        ctx.fail(f"{ctx.what}{part} returned the text of a symbolic tensor, "
                 f"'Tensor(\"...\", shape=(), dtype=int32)', where a number should be: str(i) "
                 f"runs once, while TensorFlow traces the loop body, and writes the tensor's "
                 f"name into the graph, not its value on each iteration.", mistake="M56",
                 fix="convert the number with an op of the graph (read tf.strings.as_string), not "
                     "Python's str.")
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
                          "entries of the constants and captured tensors it holds, the bytes "
                          "of text and the runs of digits written in them, and how many "
                          "captured resources (lookup tables) that are not its variables")
def fizzbuzz(case, obs, ctx):
    """``obs``: ``results`` (two calls with n), ``probe`` (the call with n + 1), each
    ``{"string", "value", "kind"}``; ``traces`` (traces the three calls made), ``op_types``,
    ``largest_constant``, ``numeral_strings``, ``captured_resources``, ``text_bytes`` and
    ``text_numbers`` (the text written in advance, in bytes, and the runs of digits in it).
    Reference: :func:`fizzbuzz_reference`."""
    n = int(case)
    for result in values(obs, "results", 2):
        _fizzbuzz_result(ctx, result, n)
    _fizzbuzz_result(ctx, obs["probe"], n + 1, ", called with n + 1,")
    traces, allowed = count(obs, "traces"), 1 if ctx.index == 0 else 0
    if traces > allowed:
        shown = f" {traces} times" if ctx.reveal else " again"
        ctx.fail(f"{ctx.what} traced{shown} for values of n given as tensors: loop with "
                 f"`for i in tf.range(1, n + 1)` so one graph serves every n.", mistake="M21",
                 fix="loop over a tf.range inside the tf.function (a graph loop) and write each "
                     "word to a tf.TensorArray.", code="retraced")
    if PY_FUNC_OPS & op_types(obs):
        ctx.fail(f"{ctx.what} returns the right words, but Python computes them "
                 f"(tf.py_function or tf.numpy_function), not the graph.", mistake="M21",
                 fix="compute each word with TensorFlow ops in a tf.range loop: string constants "
                     "for the multiples, tf.strings.as_string for the other numbers, each word "
                     "written to a tf.TensorArray.",
                 code="py_function")
    if count(obs, "numeral_strings") or count(obs, "largest_constant") > FIZZBUZZ_TABLE \
            or TABLE_OPS & op_types(obs) or count(obs, "captured_resources"):
        ctx.fail(f"{ctx.what} returns the right words, but its graph holds them written in "
                 f"advance (a table of words or numbers, or a lookup table), not computed "
                 f"from n.",
                 mistake="M21",
                 fix="compute each word in the loop with TensorFlow ops: string constants for the "
                     "multiples, tf.strings.as_string for the other numbers.",
                 code="table")
    if count(obs, "text_bytes") > FIZZBUZZ_TEXT_BYTES or count(obs, "text_numbers"):
        ctx.fail(f"{ctx.what} returns the right words, but its graph holds them written in "
                 f"advance as text (a long string of words or numbers, split or sliced): "
                 f"counted in bytes, it holds more than the words of one period of 15, or "
                 f"numbers written out, not computed from n.",
                 mistake="M21",
                 fix="compute each word in the loop with TensorFlow ops: string constants for the "
                     "multiples, tf.strings.as_string for the other numbers.",
                 code="text")


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


#: M35 as count_word meets it when a UnicodeError is raised: the bytes decoded as ASCII.
NOT_UTF8 = ("{what} raised UnicodeDecodeError on entries with an accent: the bytes were "
            "decoded as ASCII (numpy's astype(str) does so), but a tf.string tensor holds "
            "UTF-8.",
            "a tf.string entry holds UTF-8 bytes: decode it as UTF-8 before comparing it with a "
            "str, or compare bytes with bytes (or let TensorFlow compare the string tensor with "
            "the word).")


@exercise("count_word", module=MODULE, cases=[(fizzbuzz_reference(15), "Fizz")],
          label=_count_word_label, findings={"not_utf8": NOT_UTF8},
          idea="a tf.string tensor holds bytes: entries are decoded (or the word encoded) "
               "as UTF-8 before they are compared, not read through str() or repr() (a word "
               "with an accent and a quote counts too), and the count follows the labels "
               "(one more occurrence of the word counts one more).",
          kernel_evidence=None)
def count_word(case, obs, ctx):
    """``obs``: ``result`` (for the case), ``probe`` (for :func:`count_word_probe`),
    ``text_probe`` (for :func:`count_word_text_probe`). Reference: exact matches counted in
    Python."""
    labels, word = case
    want = sum(1 for s in labels if s == word)
    got = _count(ctx, obs["result"])
    if got == 0 and want > 0:
        shown = f", but {word!r} occurs {want} times" if ctx.reveal else ", but the word occurs"
        raw = f"b'{word}'" if ctx.reveal else "b'...'"
        text = f"'{word}'" if ctx.reveal else "'...'"
        ctx.fail(f"{ctx.what} returned 0{shown}. A tf.string tensor holds bytes: "
                 f"labels.numpy() gives {raw}, and {raw} == {text} is False in Python.",
                 mistake="M10", fix="a tf.string entry holds bytes: decode it before comparing it "
                                    "with a str, or encode the word and compare bytes with bytes.")
    if got != want:
        if ctx.reveal:
            ctx.fail(f"{ctx.what}: expected {want}, got {got}.", code="value")
        ctx.fail(f"{ctx.what}: the count differs from the expected one.", code="value")
    probe = _count(ctx, obs["probe"], ", with the word once more at the end,")
    if probe == got:
        ctx.fail(f"{ctx.what} returns the right count here, but the same count when the word "
                 f"occurs once more: the count does not follow the labels (a number worked "
                 f"out by hand?).", mistake="M21",
                 fix="count the entries of labels that equal word, comparing each entry's decoded "
                     "text (or bytes with bytes), not its repr.", code="constant")
    if probe != want + 1:
        ctx.fail(f"{ctx.what}: with the word once more at the end of labels, the count should "
                 f"grow by one.", code="value")
    text = _count(ctx, obs["text_probe"], ", with an accent and a quote added to every entry "
                                          "and to the word,")
    if text != want:
        shown = f" (the word {word + TEXT_SUFFIX!r}: {want}, got {text})" if ctx.reveal else ""
        ctx.fail(f"{ctx.what} counts right for plain words, but not when the entries and the "
                 f"word hold an accent and a quote{shown}: str() and repr() of bytes write "
                 f"escapes, they do not decode the text (str(\"\u00e9\".encode()) is "
                 f"b'\\xc3\\xa9', not \"\u00e9\"), and a decoding other than UTF-8 garbles "
                 f"the accent.", mistake="M35",
                 fix="a tf.string entry holds UTF-8 bytes: decode it as UTF-8 before comparing it "
                     "with a str, or compare bytes with bytes (or let TensorFlow compare the "
                     "string tensor with the word).")


# --------------------------------------------------------------------------- sum_even

STATIC_LENGTH = ("{what} raised TypeError while TensorFlow traced it for a vector of unknown "
                 "length: the loop is a Python range over the static length (items.shape[0] "
                 "is None there), so it runs while tracing, not in the graph.",
                 "make the loop a graph loop whatever the length: iterate the tensor itself, or a "
                 "tf.range over its dynamic size (tf.size), which AutoGraph turns into a "
                 "tf.while_loop.")


@exercise("sum_even", module=MODULE, cases=[[1, 2, 3, 4], [5, 10, 15]],
          label=lambda case: f"input {case}",
          idea="the draft fixed: the for loop runs in the graph, for a vector of unknown "
               "length and for the case's own length alike: the returned sum is computed by "
               "a While op (AutoGraph's tf.while_loop; not a Python range over the static "
               "length, unrolled; no Python function called from the graph), and the sum "
               "follows the items.",
          kernel_evidence="the op types of the graph for a vector of unknown length and those "
                          "the returned sum is computed from, the op types of the graph for "
                          "the case's length, and trace counts",
          findings={"static_length": STATIC_LENGTH})
def sum_even(case, obs, ctx):
    """``obs``: ``results`` (two calls), ``retraced`` (traces the second call made),
    ``probe`` (the result for :func:`sum_even_probe`), ``op_types`` (of the graph for a
    vector of unknown length), ``output_ops`` (those the sum is computed from),
    ``known_op_types`` (of the graph for the case's length). Reference:
    NumPy's ``items[items % 2 == 0].sum()``."""
    items = np.asarray(case, np.int64).reshape(-1)
    want = np.int32(items[items % 2 == 0].sum())
    got = values(obs, "results", 2)
    for value in got:
        ctx.close(value, want, check_dtype="int")
    probe = sum_even_probe(case)
    check_probe(ctx, obs["probe"], np.int32(want + 2), got[0], want,
                "other items (two more at the end)", f"the input {probe}",
                "keep a running total in the loop and add each even item to it.", check_dtype="int")
    if not WHILE_OPS & op_types(obs):
        ctx.fail(f"{ctx.what} gives the right sums, but its graph for a vector of unknown "
                 f"length has no While loop: the loop does not run in the graph.",
                 mistake="M21", fix="loop over the tensor itself (AutoGraph makes a for over a "
                                    "tensor a tf.while_loop) and add the even items to a tensor "
                                    "total inside the loop.", code="no_while")
    if not WHILE_OPS & op_types(obs, "known_op_types"):
        ctx.fail(f"{ctx.what} gives the right sums, but its graph for a vector of known length "
                 f"has no While loop: a Python range over the static length (items.shape[0] "
                 f"or len(items)) runs while tracing, and the graph holds one copy of the body "
                 f"per item, a new graph for every length.", mistake="M57",
                 fix="make the loop a graph loop whatever the length: iterate the tensor itself, "
                     "or a tf.range over its dynamic size (tf.size), which AutoGraph turns into a "
                     "tf.while_loop.", code="unrolled")
    fix = ("loop over the tensor itself (AutoGraph makes a for over a tensor a tf.while_loop), "
           "add the even items to a tensor total, and return that total.")
    refuse_py_function(ctx, obs, fix)
    require_from(ctx, obs, WHILE_OPS, "a While loop", fix, "loop_beside")
    require_loop_work(ctx, obs, "sum", fix)
    if count(obs, "retraced"):
        ctx.fail(f"{ctx.what} traced again when called a second time with a tensor of the "
                 f"same shape: one graph should serve every call.", mistake="M21",
                 fix="take items as a tensor and loop on it in the graph.", code="retraced")
