"""Kernel-side half of copying back the files a notebook wrote in its working folder (the host's
half: :mod:`.preprocessors.written`).

This file is not imported by the grader: its source is sent to the grading kernel after the
notebook's last cell and run there through the door's integrity-check route (``probe(*args)``,
with the builtins as they were before any student cell). Protocol:

- ``probe(folder, None, 0, 0, limit)`` lists ``folder``: ``[(name, kind, size), ...]`` for at most
  ``limit`` entries, ``kind`` one of ``"file"`` (a regular file), ``"link"``, ``"folder"``,
  ``"other"``, ``size`` its ``lstat`` size in bytes;
- ``probe(folder, name, offset, size, 0)`` returns up to ``size`` bytes of the regular file
  ``folder/name`` from ``offset`` (``bytes``; never through a link), or None when it is not a
  regular file.

What comes back is untrusted: the host checks every name, kind and size again.
"""


def probe(folder, name, offset, size, limit):
    import os
    import stat

    if name is None:
        found = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if len(found) >= limit:
                    break
                mode = entry.stat(follow_symlinks=False)
                kind = ("link" if stat.S_ISLNK(mode.st_mode) else
                        "file" if stat.S_ISREG(mode.st_mode) else
                        "folder" if stat.S_ISDIR(mode.st_mode) else "other")
                found.append((entry.name, kind, mode.st_size))
        return found
    fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, offset, os.SEEK_SET)
        parts, left = [], size
        while left > 0:
            part = os.read(fd, left)
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)
    finally:
        os.close(fd)
