"""The README fits on a few screens and every relative link of the docs leads somewhere.

The README says what this is, gives the two commands and points each reader to their page of
``docs/``; a page moved or renamed must not leave a link dead.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CURRICULUM.md",
         *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_short_and_points_every_reader_to_a_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 80
    for page in ("docs/students.md", "docs/instructors/grading.md", "docs/instructors/trust.md",
                 "docs/instructors/scale.md", "docs/instructors/lms.md", "docs/authors.md"):
        assert f"]({page})" in readme, page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    dead = [target for target in LINK.findall(page.read_text())
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists()]
    assert not dead, f"{page.relative_to(ROOT)}: dead links {dead}"
