"""The course's steps of nbgrader's autograde after execution, placed in its list by
:func:`autograder.grading.configure.configure`."""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import bleach
import nbformat
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_locked
from traitlets import Integer

from autograder.grading.defaults import TF_LOG_LINE


def output_size(content) -> int:
    """About how many bytes an output carries: its text, data, metadata, traceback and all else
    (a message or an output; every value counted, as text)."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, dict):
        return sum(len(str(k)) + output_size(v) for k, v in content.items())
    if isinstance(content, (list, tuple)):
        return sum(output_size(v) for v in content)
    return len(str(content))


class QuietTensorFlowStderr(NbGraderPreprocessor):
    """Keep stderr from costing points (G08).

    nbgrader scores a test cell 0 when it has any stderr output. TensorFlow writes its log and
    ``tf.print`` to stderr. After execution this drops TensorFlow's log lines from every code cell
    and, in graded cells, shows what is left of stderr as ordinary output, marked ``[stderr]``.
    Errors (exceptions) are untouched, so they still score 0.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        outputs = []
        for output in cell.outputs:
            if output.output_type == "stream" and output.name == "stderr":
                kept = [line for line in output.text.splitlines(keepends=True)
                        if not TF_LOG_LINE.match(line.rstrip("\n"))]
                if not kept:
                    continue
                output.text = "".join(kept)
                if is_grade(cell):
                    output.name = "stdout"
                    output.text = "".join("[stderr] " + line for line in kept)
            outputs.append(output)
        cell.outputs = outputs
        return cell, resources


class NameTimeouts(NbGraderPreprocessor):
    """Say "timed out" where a cell was stopped for running past its time limit (G01), and say
    it again where a later cell misses a name because of it (G17).

    nbgrader's ``Execute`` interrupts such a cell, so its output is a ``KeyboardInterrupt``; in a
    grading run nobody presses Ctrl-C, so that error always means the time limit. A set-up cell
    that timed out leaves its imports undefined: every later ``NameError`` then names that cell,
    so the student reads "the set-up cell timed out", not ``name 'tf' is not defined``.
    """

    cell_timeout_s = Integer(0, help="the per-cell time limit, seconds").tag(config=True)

    def preprocess(self, nb, resources):
        timed_out = None
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            for output in cell.outputs:
                if output.output_type != "error":
                    continue
                if output.ename in ("KeyboardInterrupt", "CellTimeoutError"):
                    output.ename = "CellTimeoutError"
                    output.evalue = f"timed out after {self.cell_timeout_s} s (an infinite loop?)"
                    output.traceback = [f"CellTimeoutError: {output.evalue}"]
                    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                    timed_out = timed_out or ("the set-up cell" if grade_id == "setup" else
                                              f"cell '{grade_id}'" if grade_id else
                                              f"cell {index + 1}")
                elif timed_out and _missing_name(output) and "timed out" not in output.evalue:
                    output.evalue = (f"{timed_out} timed out after {self.cell_timeout_s} s, so what "
                                     f"it defines is missing ({output.evalue})")
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return nb, resources


def _missing_name(output) -> bool:
    """Whether an error output is about a missing name: a NameError in the kernel, or the
    grader's verdict that the code under test raised one or could not be reached."""
    words = ("raised NameError", "a name it uses is not defined", "checks are not loaded")
    return output.ename == "NameError" or (
        output.ename == "CheckFailed" and any(w in " ".join(output.evalue.split()) for w in words))


class NoCreditFromResults(NbGraderPreprocessor):
    """Make a graded cell's value (``execute_result``) plain display output.

    nbgrader gives a graded cell the credit its first ``execute_result`` names (partial credit as a
    number, full credit for anything else) before it looks at a later error, so a student function
    that displays a value when the test calls it would score. This course's tests never return a
    value: only an error costs points.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and is_grade(cell):
            for index, output in enumerate(cell.outputs):
                if output.output_type == "execute_result":
                    cell.outputs[index] = nbformat.v4.new_output(
                        "display_data", data=output.get("data", {}),
                        metadata=output.get("metadata", {}))
        return cell, resources


class LimitOutputSize(NbGraderPreprocessor):
    """Replace any output larger than ``max_bytes`` (a 150 MB ``display`` call, one endless line)
    by a note of its size; nbgrader's ``LimitOutput`` counts stream lines only (G07)."""

    max_bytes = Integer(200_000, help="largest output kept, bytes").tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        for index, output in enumerate(cell.outputs):
            size = output_size(output)
            if size > self.max_bytes:
                note = f"[output of {size:,} bytes removed: larger than {self.max_bytes:,} bytes]\n"
                cell.outputs[index] = nbformat.v4.new_output(
                    "stream", name=output.get("name", "stdout"), text=note)
        return cell, resources


# What SanitizeHTML keeps of a submission's HTML (bleach's defaults, and what notebooks show).
HTML_TAGS = [*bleach.ALLOWED_TAGS, "div", "span", "pre", "code", "p", "br", "hr", "h1", "h2", "h3",
             "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "img", "sup", "sub"]
HTML_ATTRIBUTES = {**bleach.ALLOWED_ATTRIBUTES, "*": ["class"], "img": ["src", "alt", "width", "height"]}
# The only URL schemes a link or image of a submission may use (any relative address is kept).
URL_SCHEMES = ("http", "https", "data")


def url_is_safe(url: str) -> bool:
    """Whether a link or image address is relative or of :data:`URL_SCHEMES` or mailto, after
    what a browser ignores (entities, white space and control characters, case) is taken out."""
    plain = re.sub(r"[\x00-\x20]", "", html.unescape(url)).lower()
    scheme = re.match(r"([a-z][a-z0-9+.-]*):", plain)
    return scheme is None or scheme.group(1) in (*URL_SCHEMES, "mailto")


class _Addresses(HTMLParser):
    """The href and src values of an HTML text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls = []

    def handle_starttag(self, tag, attrs):
        self.urls += [value or "" for name, value in attrs if name in ("href", "src", "action")]


def markdown_links_are_safe(source: str) -> bool:
    """Whether markdown, rendered as nbconvert renders it (which keeps ``[x](javascript:...)``
    links as they are), links and embeds only safe addresses (:func:`url_is_safe`)."""
    parser = _Addresses()
    parser.feed(markdown2html_mistune(source))
    return all(url_is_safe(url) for url in parser.urls)


def clean_html(text: str) -> str:
    """``text`` with only :data:`HTML_TAGS` and :data:`HTML_ATTRIBUTES` left as HTML (links and
    images by http, https or data URLs), everything else escaped."""
    return bleach.clean(text, tags=HTML_TAGS, attributes=HTML_ATTRIBUTES,
                        protocols=list(URL_SCHEMES))


class SanitizeHTML(NbGraderPreprocessor):
    """Make a submission's HTML inert in the autograded notebook, which the formgrader shows on
    the instructor's Jupyter server (a student's ``<img onerror=...>`` or ``<script>`` would run
    there, with the instructor's session) and feedback shows to the student.

    bleach's allow-list (:data:`HTML_TAGS`, the tags of notebook output and markdown, tables as
    pandas writes them, images; no attribute that runs code, no ``javascript:`` link; the rest is
    escaped, and cleaning twice changes nothing) on the markdown cells a student can edit and on
    every HTML and SVG output; JavaScript outputs are replaced by a note. A markdown cell whose own
    links or images (``[x](javascript:...)``) lead anywhere unsafe is replaced by its rendering,
    cleaned. nbgrader's formgrade
    template renders markdown cells without nbconvert's ``sanitize_html``, so the cells themselves
    are cleaned here."""

    note = "[JavaScript output removed: it would run in the formgrader]\n"

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "markdown" and not is_locked(cell):
            if "<" in cell.source:
                cell.source = clean_html(cell.source)
            if not markdown_links_are_safe(cell.source):  # markdown's own links: [x](javascript:..)
                cell.source = clean_html(markdown2html_mistune(cell.source))
        for index, output in enumerate(cell.get("outputs", [])):
            data = output.get("data", {})
            if "application/javascript" in data:
                cell.outputs[index] = nbformat.v4.new_output("stream", name="stdout", text=self.note)
                continue
            for kind in ("text/html", "image/svg+xml"):
                if isinstance(data.get(kind), str):
                    data[kind] = clean_html(data[kind])
        return cell, resources
