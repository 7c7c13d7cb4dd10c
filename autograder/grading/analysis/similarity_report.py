"""``similarity.html``: the pairs of answers copydetect matched, as one page that works offline.

copydetect's own report loads Bootstrap (CSS and script) from a CDN, so offline it is unstyled
and its collapsed sections all open, and it names each document by the path of the temporary file
it compared. This page needs nothing from the network: a few lines of CSS inline, ``<details>``
for what opens and closes (no script), and each side named by the student (id, and the folder
as submitted where it differs) and the assignment. The code is copydetect's, already
HTML-escaped, with its spans marking the shared parts; every name is escaped here.
"""
from __future__ import annotations

import html as html_lib
from dataclasses import dataclass

from autograder.grading.report_text import printable

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; padding: 0 1em;
       color: #212529; }
h1 { text-align: center; }
details { border: 1px solid #dee2e6; border-radius: 4px; margin: .5em 0; padding: .4em .8em; }
summary { cursor: pointer; }
.pair { display: flex; gap: 1em; }
.pair > div { flex: 1; min-width: 0; }
pre { background: #f8f9fa; padding: .5em; overflow-x: auto; font-size: small; }
.highlight-red { background-color: #f2b6b6; }
.highlight-green { background-color: #b6f2b6; }
"""


@dataclass(frozen=True)
class Match:
    """One pair copydetect shows: each side's student id (or ``reference/<name>``), the
    assignment, the share of each side's code found in the other (0..1), the tokens they share,
    and each side's code as copydetect highlighted it (HTML, escaped by copydetect)."""
    student_a: str
    student_b: str
    assignment_id: str
    share_a: float
    share_b: float
    tokens: int
    code_a: str
    code_b: str


def _name(student: str, folders: dict[str, str]) -> str:
    folder = folders.get(student, student)
    shown = student if folder == student else f"{student} (folder '{folder}')"
    return html_lib.escape(printable(shown))


def report_html(matches: list[Match], threshold: float, folders: dict[str, str] | None = None) -> str:
    """The page for ``matches`` (most similar first), pairs above ``threshold`` (0..1);
    ``folders``: student id -> folder as submitted."""
    folders = folders or {}
    items = []
    for m in matches:
        a, b = _name(m.student_a, folders), _name(m.student_b, folders)
        assignment = html_lib.escape(printable(m.assignment_id))
        items.append(
            f"<details><summary><b>{a}</b> and <b>{b}</b>, {assignment}: "
            f"{m.share_a:.0%} and {m.share_b:.0%} of their code shared ({m.tokens} tokens)"
            f"</summary><div class=\"pair\"><div><p>{a} / {assignment}</p><pre><code>{m.code_a}"
            f"</code></pre></div><div><p>{b} / {assignment}</p><pre><code>{m.code_b}</code></pre>"
            f"</div></div></details>")
    body = "\n".join(items) or "<p>No pair above the threshold.</p>"
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Answer similarity</title>"
            f"<style>{_CSS}</style></head><body>\n<h1>Answer similarity</h1>\n"
            f"<p>{len(matches)} pair{'s' if len(matches) != 1 else ''} above {threshold:.2f} "
            f"(copydetect: the share of each side's code found in the other). Advice only: scores "
            f"are unchanged; open a pair to see its shared code.</p>\n<h2>Matched Code</h2>\n"
            f"{body}\n</body></html>\n")
