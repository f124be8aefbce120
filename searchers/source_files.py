"""The file-system side of reading a source: is it a file that can be read, why the operating
system refused it, did it change while it was read, and how its name is printed.

A real folder holds more than documents: dangling symbolic links and link loops, named pipes
(opening one blocks until a writer comes), files that vanish or grow while a build runs, files
and folders the user may not read, names in a legacy encoding or with a newline in them. None of
these may stop a build (``searchers.index_build``): each becomes one ``Unreadable`` with a reason
the build report counts and a sentence that says what it is:

- ``missing``: a dangling symbolic link, or a file gone since the folder was listed;
- ``permission``: the operating system refused to open or list it;
- ``unreadable``: anything else the system refused (a link loop, a path too long, an I/O
  error), not a regular file (a pipe, a socket, a device), or a name that is not valid UTF-8
  (the index stores names as UTF-8 text; renaming the file is the fix);
- ``changing``: the file changed while it was read, every time it was read (``fingerprint``).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Literal

UnreadableReason = Literal["missing", "permission", "unreadable", "changing"]

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class Unreadable(Exception):
    """A source the operating system would not give: ``reason`` for the report's counts,
    ``detail`` for a person."""

    def __init__(self, reason: UnreadableReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: UnreadableReason = reason
        self.detail = detail


def os_error(path: Path, exc: OSError, *, listing: bool = False) -> Unreadable:
    """What ``exc``, raised while opening (``listing``: listing) ``path``, means for a user."""
    code = exc.errno
    if code in (errno.EACCES, errno.EPERM):
        what = "permission denied: the folder cannot be listed" if listing else "permission denied"
        return Unreadable("permission", what)
    if code == errno.ENOENT:
        if os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            return Unreadable("missing", f"a dangling symbolic link (to {target})")
        return Unreadable("missing", "gone: it was listed, then deleted while the build ran")
    if code == errno.ELOOP:
        return Unreadable("unreadable", "a symbolic link loop")
    if code == errno.ENAMETOOLONG:
        return Unreadable("unreadable", "the path is too long for the operating system")
    reason = (exc.strerror or type(exc).__name__).lower()
    what = "the folder cannot be listed" if listing else "cannot be read"
    return Unreadable("unreadable", f"{what} ({reason})")


def check_name(path: Path) -> None:
    """``Unreadable`` when the file's name is not valid UTF-8 (Python keeps such bytes as lone
    surrogates, which the passage store, the manifest and tantivy cannot write)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise Unreadable(
            "unreadable", "its name is not valid UTF-8 (a legacy encoding?): rename it"
        ) from None


def regular_file(path: Path) -> os.stat_result:
    """``path``'s status (links followed) when it is a regular file; ``Unreadable`` otherwise.
    Checked before anything opens it: opening a named pipe would wait for a writer forever."""
    check_name(path)
    try:
        status = path.stat()
    except OSError as exc:
        raise os_error(path, exc) from exc
    if not stat.S_ISREG(status.st_mode):
        kind = next((name for test, name in _KINDS if test(status.st_mode)), "a special file")
        raise Unreadable("unreadable", f"not a regular file ({kind})")
    return status


Fingerprint = tuple[int, int, int, int]


def fingerprint(status: os.stat_result) -> Fingerprint:
    """What changes when a file is replaced or written: device, inode, size, modification time
    (nanoseconds). Equal before and after a read means the read saw one version of the file."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def display_path(path: str | Path) -> str:
    """``path`` printable on one line: control characters (a newline in a name) escaped, and
    bytes that are not UTF-8 shown as ``\\xe9``, so a report line is one file and never raises."""
    raw = os.fsencode(str(path)).decode("utf-8", errors="backslashreplace")
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in raw
    )
