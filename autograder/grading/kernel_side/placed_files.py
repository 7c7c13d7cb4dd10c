"""Kernel-side half of placing a notebook's other files in its sandbox's working folder (the
host's half: :mod:`.preprocessors.placed`).

This file is not imported by the grader: its source is sent to the grading kernel and run there
before the notebook's first cell, when no student code has run yet. Protocol:
``place(folder, path, data, append)`` writes the bytes ``data`` to ``folder/path`` (``path``
relative, its parts ``/``-separated and checked by the host), making the folders above it;
``append`` adds to the file an earlier piece began. Never through a link. Returns the file's size
after the write, in bytes.
"""


def place(folder, path, data, append):
    import os

    target = os.path.join(folder, *path.split("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(target, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
