"""Capture what code writes to stdout and stderr, at the file-descriptor level.

``tf.print`` runs in TensorFlow's C++ runtime. In a plain process (a script, pytest) it writes
straight to the process's file descriptor 2 (stderr, its default) or 1
(``output_stream=sys.stdout``); Python's ``contextlib.redirect_stdout``/``redirect_stderr`` only
swap ``sys.stdout``/``sys.stderr`` and never see it. Inside an IPython kernel (Jupyter, Colab,
nbgrader's autograde), TensorFlow 2.21 enables "interactive logging" when it is imported, and
``tf.print`` then goes through Python's current ``sys.stdout`` instead, whatever its
``output_stream``. :func:`capture_output` covers both: it points descriptors 1 and 2 at temporary
files with ``os.dup2`` and swaps ``sys.stdout``/``sys.stderr`` for buffers (Python ``print``),
as well as the stream of every logging handler that writes to them (TensorFlow's Python logger
keeps the ``sys.stderr`` it found when it was created), then restores everything. What was captured is
returned, never re-emitted, so a check that captures a student's ``tf.print`` leaves no stderr in
a graded cell.

    with capture_output() as out:
        f(tf.constant(1.0))
    out.text  # everything written, Python- and C-level, stdout and stderr
"""
from __future__ import annotations

import ctypes
import io
import logging
import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Captured:
    """What :func:`capture_output` collected; filled in when the ``with`` block ends.

    Attributes:
        fd_stdout, fd_stderr: text written to file descriptors 1 and 2 (C/C++ code, ``tf.print``).
        py_stdout, py_stderr: text written to ``sys.stdout`` / ``sys.stderr`` (``print``, logging).
    """

    fd_stdout: str = ""
    fd_stderr: str = ""
    py_stdout: str = ""
    py_stderr: str = ""

    @property
    def stdout(self) -> str:
        """Everything written to stdout, Python-level then C-level."""
        return self.py_stdout + self.fd_stdout

    @property
    def stderr(self) -> str:
        """Everything written to stderr, Python-level then C-level."""
        return self.py_stderr + self.fd_stderr

    @property
    def text(self) -> str:
        """Everything written to either stream."""
        return self.stdout + self.stderr

    def lines(self) -> list[str]:
        """The non-empty lines of :attr:`text`, stripped."""
        return [line.strip() for line in self.text.splitlines() if line.strip()]


def _flush_c_streams() -> None:
    """Flush C stdio buffers (``fflush(NULL)``), so buffered C-level output lands in the right file."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - platforms without a C library handle
        pass


def _flush_python_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (ValueError, OSError):  # pragma: no cover - closed stream
            pass


def _stream_handlers(streams: dict) -> list:
    """(handler, its stream) for every logging StreamHandler, of the root logger and of every
    named logger, that writes to one of ``streams`` (a dict id -> stream)."""
    loggers = [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    found = []
    for logger in loggers:
        for handler in logger.handlers:
            if (isinstance(handler, logging.StreamHandler)
                    and id(getattr(handler, "stream", None)) in streams):
                found.append((handler, handler.stream))
    return found


@contextmanager
def capture_output():
    """Capture stdout and stderr of Python and of C/C++ code (``tf.print``) inside the block.

    Yields a :class:`Captured` whose fields are filled when the block exits (also on an
    exception). Nothing captured is written anywhere else. Works in a Jupyter kernel (where
    ipykernel forwards descriptors 1 and 2 to the notebook) and in a terminal or pytest.
    """
    captured = Captured()
    _flush_python_streams()
    _flush_c_streams()
    files = {fd: tempfile.TemporaryFile(mode="w+b") for fd in (1, 2)}
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    py_out, py_err = io.StringIO(), io.StringIO()
    old_out, old_err = sys.stdout, sys.stderr
    handlers = _stream_handlers({id(s): s for s in (old_out, old_err, sys.__stdout__, sys.__stderr__)
                                 if s is not None})
    try:
        for fd, f in files.items():
            os.dup2(f.fileno(), fd)
        sys.stdout, sys.stderr = py_out, py_err
        for handler, _ in handlers:
            handler.setStream(py_out if handler.stream in (old_out, sys.__stdout__) else py_err)
        yield captured
    finally:
        _flush_c_streams()
        for handler, stream in handlers:
            handler.setStream(stream)
        sys.stdout, sys.stderr = old_out, old_err
        for fd in (1, 2):
            os.dup2(saved[fd], fd)
            os.close(saved[fd])
        texts = {}
        for fd, f in files.items():
            f.seek(0)
            texts[fd] = f.read().decode("utf-8", errors="replace")
            f.close()
        captured.fd_stdout, captured.fd_stderr = texts[1], texts[2]
        captured.py_stdout, captured.py_stderr = py_out.getvalue(), py_err.getvalue()
