"""The course's catalogue of mistakes (autograder.checks.mistakes) is in step with the code, and a
failed check reads well where students and instructors see it: one wrapped message that names the
exercise and the mistake, the fix on its own line, shown alone (no frames) by IPython."""
from __future__ import annotations

import re
from pathlib import Path

import tensorflow as tf

from autograder.checks import tapes
from autograder.checks.compare import WIDTH, CheckFailed
from autograder.checks.mistakes import MISTAKES, PIPELINE
from tests.expect import fails_with

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "autograder" / "checks"


def _ids(paths, letter):
    found = set()
    for path in paths:
        found |= set(re.findall(rf"\b{letter}\d\d+\b", path.read_text()))
    return found


def test_every_mistake_the_checks_name_is_in_the_catalogue_and_back():
    code = [p for p in CHECKS.rglob("*.py") if p.name != "mistakes.py"]  # judge/ included
    assert _ids(code, "M") == set(MISTAKES)


def test_every_pipeline_case_the_project_cites_is_in_the_catalogue():
    cited = _ids([p for p in (ROOT / "autograder").rglob("*.py") if p.name != "mistakes.py"]
                 + list((ROOT / "tests").glob("*.py")) + [ROOT / "README.md"]
                 + list((ROOT / "docs").rglob("*.md")), "G")
    assert cited <= set(PIPELINE) == {f"G{i:02d}" for i in range(1, 18)}


def square_grad_unwatched(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
    return tape.gradient(y, x)


def test_message_names_mistake_and_exercise_first_and_the_fix_on_its_own_line():
    error = fails_with(tapes.check_square_grad, square_grad_unwatched, "M01")
    lines = str(error).splitlines()
    assert lines[0].startswith("[M01: unwatched tf.constant] square_grad (input 3.0)")
    assert [line for line in lines if line.startswith("Fix: ")] == [
        "Fix: a tape follows tf.Variables by itself, constants only when told to: ask"]
    assert max(map(len, lines)) <= WIDTH


def test_a_message_that_does_not_name_its_exercise_gets_it_in_front():
    def blank(a, b):
        raise NotImplementedError()
    error = fails_with(tapes.check_product_grads, blank, None, "not written yet")
    assert str(error).startswith("product_grads (input")
    error = CheckFailed("grad_z has the wrong shape.", exercise="graph_backward_numpy")
    assert str(error) == "graph_backward_numpy: grad_z has the wrong shape."


def test_ipython_shows_only_the_message(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    result = shell.run_cell(
        "from autograder.checks import tapes\n"
        "def square_grad(x):\n"
        "    raise NotImplementedError()\n"
        "tapes.check_square_grad(square_grad)\n")
    shown = capsys.readouterr().out
    assert isinstance(result.error_in_exec, CheckFailed)  # still an error: nbgrader scores 0
    assert "square_grad (input 3.0) is not written yet" in shown
    assert "Fix: replace `raise NotImplementedError()`" in shown
    for noise in ("Traceback", "File ", "autograder/checks", "During handling"):
        assert noise not in shown


def test_no_fix_hands_the_student_a_line_of_the_answer():
    from tests.fix_texts import fix_texts, spelt_fixes

    texts = fix_texts()
    assert len(texts) > 300  # the scan reads the check modules and the catalogue
    assert any(where.startswith("mistakes.py M01") for where, _ in texts)
    assert any("judge/tapes.py" in where for where, _ in texts)
    assert spelt_fixes() == []


def test_the_fix_scan_finds_a_spelt_answer():
    from tests.fix_texts import reasons, spelt

    for answer in ("call tape.watch(x) inside the `with` block before calling f(x).",
                   "return tf.function(fahrenheit, input_signature=[...])",
                   "put @tf.function on the line above `def add`",
                   "assign it back: ta = ta.write(i, s).",
                   "update in place: `w.assign_sub(lr * g)`",
                   "return the loss (`return loss_value`).",
                   "end the model with Dense(10) and no activation",
                   "cache before shuffling: .cache().shuffle(len(x)).batch(batch_size).",
                   "loop over the tensor (`for item in items:`) and add the even items.",
                   "decode (s.decode() == word) or compare with word.encode().",
                   "make it (make_train_step(model, optimizer, ...)) once."):
        assert spelt(answer), answer
    assert reasons("put @tf.function on the line above `def add`") == ["a decorator line"]
    assert reasons("x", solutions="") == []
    for idea in ("a tape follows constants only when told to: ask it to watch x (read "
                 "GradientTape.watch) inside its block.",
                 "return the tf.function that wraps fahrenheit itself, with an input_signature "
                 "(read tf.function's input_signature and tf.TensorSpec).",
                 "make add a tf.function: decorate the method itself.",
                 "set `predicted_traces = ...` in the prediction cell.",
                 "rewrite log(cosh(x)) so that no intermediate value overflows.",
                 "compute the logits in inference mode (training=False), without a tape.",
                 "leave reshuffle_each_iteration out of .shuffle(...) (its default is True).",
                 "derive d/dx log(1 + e^x) on paper."):
        assert not spelt(idea), (idea, reasons(idea))
