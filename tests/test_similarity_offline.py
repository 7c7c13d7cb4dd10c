"""similarity.html works offline and names students and notebooks (issue 29, item 3): the real
copydetect on the small class of tests/test_similarity.py; the page loads nothing (no CDN, no
script, no link, no remote image), carries its own CSS, and names each side by student (and folder
as submitted) and assignment, never by the run's temporary files."""
import re

import pytest

from autograder.grading.analysis.similarity import compare_class, write_similarity
from tests.test_similarity import ASSIGNMENT, EVIL, build_class

pytestmark = pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    autograded, release, reference = build_class(root)
    result = compare_class(autograded, release, reference)
    _, html_path = write_similarity(result, root / "out", {"carol": "Carol C."})
    return result, html_path.read_text(encoding="utf-8"), root


def test_the_page_loads_nothing_from_the_network(page):
    _, html, _ = page
    assert "<style>" in html and ".highlight-red" in html
    assert not re.search(r"https?:|//cdn|<script|<link|<img|@import|url\(", html, re.I), \
        re.search(r".{60}(https?:|<script|<link|<img).{60}", html, re.I | re.S)


def test_the_page_names_students_and_assignments_not_temporary_files(page):
    result, html, root = page
    assert result.matches, "the planted copies are shown"
    assert "similarity-" not in html and "/tmp" not in html and str(root) not in html
    assert f"{ASSIGNMENT}.py" not in html and "/students/" not in html
    carol, alice = "<b>carol (folder &#x27;Carol C.&#x27;)</b>", "<b>alice</b>"
    assert f"{carol} and {alice}, {ASSIGNMENT}:" in html or f"{alice} and {carol}, {ASSIGNMENT}:" in html
    # A reference solution is named as one; a student's chosen name is escaped.
    assert "<b>reference/public_2023</b>" in html
    assert EVIL not in html and "evil&lt;script&gt;" in html
    assert html.count("<details>") == len(result.matches)
    assert "<h2>Matched Code</h2>" in html and "# ---- cell grads_xy ----" in html
