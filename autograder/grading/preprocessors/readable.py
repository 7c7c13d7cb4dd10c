"""nbgrader's Autograde reads each submitted file the course's way first (G05), wherever it runs:
``course grade``, a plain ``nbgrader autograde``, or the formgrader's Autograde button.

nbgrader reads a submission with nbconvert's ``NotebookExporter``; on a file that is not a notebook
(an HTML page saved as ``.ipynb``, a truncated download) nbformat raises deep inside ``json`` and
nbgrader logs that raw traceback, which the formgrader shows in its error dialog. Here the file is
first read by :func:`~autograder.grading.intake.reading.notebook_problem`, and an unreadable one ends with the course's
sentence (the one ``course grade`` reports) in place of the traceback. The file is never changed.
"""
from __future__ import annotations

import logging
from pathlib import Path

from nbconvert.exporters import NotebookExporter

from autograder.grading.intake.reading import notebook_problem
from autograder.grading.report_text import printable


class UnreadableSubmission(ValueError):
    """A submitted file nbgrader was asked to autograde is not a notebook; the message says why."""


_LAST_LINE = f"{UnreadableSubmission.__module__}.{UnreadableSubmission.__qualname__}: "


class ShortUnreadableTracebacks(logging.Filter):
    """A filter on nbgrader's log: the traceback nbgrader logs for an :class:`UnreadableSubmission`
    (``self.log.error(traceback.format_exc())`` in ``BaseConverter.convert_notebooks``) becomes
    the exception's message alone; every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Traceback (most recent call"):
            last = record.msg.rstrip().rsplit("\n", 1)[-1]
            if last.startswith(_LAST_LINE):
                record.msg, record.args = last[len(_LAST_LINE):], ()
        return True


class ReadableNotebookExporter(NotebookExporter):
    """nbconvert's ``NotebookExporter`` (what nbgrader's converters use), reading a file with the
    course's checks first: set as ``c.Autograde.exporter_class`` by
    :func:`autograder.grading.configure.configure`."""

    def from_filename(self, filename, resources=None, **kw):
        """``NotebookExporter.from_filename``, after
        :func:`~autograder.grading.intake.reading.notebook_problem`.

        Raises:
            UnreadableSubmission: ``filename`` is not a notebook one can grade (a link, too large,
                not JSON, not a valid notebook...); the message names the file and says why.
        """
        # Autograde reads each notebook twice: the submitted file, then the copy it wrote into its
        # build directory, which needs no second reading.
        build = getattr(getattr(self.parent, "writer", None), "build_directory", None)
        if build and Path(filename).resolve().parent == Path(build).resolve():
            return super().from_filename(filename, resources, **kw)
        problem = notebook_problem(Path(filename))
        if problem:
            log = getattr(self.parent, "log", None)
            if isinstance(log, logging.Logger) and \
                    not any(isinstance(f, ShortUnreadableTracebacks) for f in log.filters):
                log.addFilter(ShortUnreadableTracebacks())
            raise UnreadableSubmission(f"{printable(Path(filename).name)} was not graded: "
                                       f"{problem} (G05)")
        return super().from_filename(filename, resources, **kw)
