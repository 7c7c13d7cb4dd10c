"""The sample class built from tests/samples/answers fits the release, the solutions and the
expected scores (no grading here: tests/test_grading_samples.py grades it)."""
import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder.grading.demo.samples import SampleError, build_sample_class

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples"
ANSWERS = SAMPLES / "answers"
EXPECTED = {p.stem: json.loads(p.read_text()) for p in (SAMPLES / "expected").glob("0*.json")}
INVALID = json.loads((SAMPLES / "expected" / "invalid.json").read_text())
PARTIAL = sorted((p.parent.name, p.stem) for p in ANSWERS.glob("*/*.py")
                 if p.parent.name not in ("ada_full", "ben_blank"))


@pytest.fixture(scope="module")
def built(sample_class):
    return sample_class  # tests/conftest.py: built once for the session


def _cells(path: Path) -> list[tuple]:
    nb = nbformat.read(path, as_version=4)
    return [(c.cell_type, c.metadata.get("nbgrader", {}).get("grade_id"), c.source,
             c.metadata.get("nbgrader")) for c in nb.cells]


def _notebook(folder: Path, assignment_id: str) -> Path:
    return folder / assignment_id / f"{assignment_id}.ipynb"


def _is_answer(cell: tuple) -> bool:
    return bool(cell[3] and cell[3].get("solution"))


def test_every_expected_student_and_assignment_is_built(built):
    expected = {(s, a) for a, spec in EXPECTED.items() for s in spec["points"]}
    expected |= {(s, a) for s, by_assignment in INVALID.items() for a in by_assignment}
    got = {(p.parts[-3], p.parts[-2]) for p in built.glob("*/*/*.ipynb")}
    assert got == expected
    for student_id, assignment_id in got:
        assert _notebook(built / student_id, assignment_id).name == f"{assignment_id}.ipynb"


def test_invalid_files_are_copied_byte_for_byte(built):
    for student_id, by_assignment in INVALID.items():
        for assignment_id in by_assignment:
            source = _notebook(SAMPLES / "invalid" / student_id, assignment_id)
            assert _notebook(built / student_id, assignment_id).read_bytes() == source.read_bytes()


@pytest.mark.parametrize("assignment_id", sorted(EXPECTED))
def test_ada_full_answers_are_the_solutions_without_markers(built, assignment_id):
    solution = {c[1]: c[2] for c in _cells(_notebook(ROOT / "solutions", assignment_id))
                if _is_answer(c)}
    release = _cells(_notebook(ROOT / "notebooks", assignment_id))
    ada = _cells(_notebook(built / "ada_full", assignment_id))
    assert len(ada) == len(release) and solution
    for mine, theirs in zip(ada, release):
        if _is_answer(theirs):
            want = re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", "", solution[theirs[1]],
                          flags=re.M).rstrip("\n")
            assert "SOLUTION" not in mine[2] and mine[2] == want, mine[1]
            assert mine[:2] + mine[3:] == theirs[:2] + theirs[3:]
        else:
            assert mine == theirs


@pytest.mark.parametrize("assignment_id", sorted(EXPECTED))
def test_ben_blank_is_the_release(built, assignment_id):
    assert (_cells(_notebook(built / "ben_blank", assignment_id))
            == _cells(_notebook(ROOT / "notebooks", assignment_id)))


@pytest.mark.parametrize("student_id,assignment_id", PARTIAL)
def test_partial_student_differs_from_ada_full_only_in_its_cells(built, student_id, assignment_id):
    text = (ANSWERS / student_id / f"{assignment_id}.py").read_text()
    named = re.findall(r"^# %% (\S+)", text, flags=re.M)
    assert named and len(named) == len(set(named))
    ada = _cells(_notebook(built / "ada_full", assignment_id))
    mine = _cells(_notebook(built / student_id, assignment_id))
    differ = [m[1] for m, a in zip(mine, ada) if m != a]
    assert len(mine) == len(ada) and sorted(differ) == sorted(named)


def test_unknown_grade_id_is_a_clear_error(tmp_path):
    answers = tmp_path / "answers"
    (answers / "eve").mkdir(parents=True)
    (answers / "eve" / "01_gradient_tape.py").write_text(
        "# based on: ada_full\n\n# %% square_grad\ndef square_grad(x):\n    return x\n\n"
        "# %% no_such_cell\nprint(1)\n")
    (answers / "ada_full").mkdir()
    (answers / "ada_full" / "01_gradient_tape.py").write_text("# based on: solutions\n")
    with pytest.raises(SampleError, match=r"eve.01_gradient_tape\.py: 'no_such_cell' is not an "
                                          r"answer cell .*its answer cells are square_grad, "):
        build_sample_class(tmp_path / "class", answers_dir=answers)


@pytest.mark.parametrize("text,message", [
    ("# %% test_square_grad\npass\n", r"'test_square_grad' is not an answer cell"),
    ("# based on: nobody\n", r"base 'nobody' has no answer file"),
    ("# based on: eve\n", r"based on itself \(eve -> eve\)"),
    ("x = 1\n# %% square_grad\npass\n", r"code before the first"),
    ("# %% square_grad\npass\n# %% square_grad\npass\n", r"square_grad given twice"),
])
def test_other_mistakes_in_an_answer_file_are_clear_errors(tmp_path, text, message):
    (tmp_path / "answers" / "eve").mkdir(parents=True)
    (tmp_path / "answers" / "eve" / "01_gradient_tape.py").write_text(text)
    with pytest.raises(SampleError, match=message):
        build_sample_class(tmp_path / "class", answers_dir=tmp_path / "answers")
