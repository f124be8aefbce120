"""One exclusive file lock, for the writers that must never run twice at once on one directory.

An index build, a tree build and an ONNX export each write a directory in several steps; two
processes interleaving those steps corrupt it. They share this lock rather than three hand-rolled
``flock`` loops: ``filelock`` takes an ``flock`` on Unix, so the kernel releases it when the
holder dies and a crashed build never leaves a stale lock behind, and the lock file stays in
place (waiters share one inode). The holder writes its pid into the file, so a refused writer can
say who is in the way; the pid is cleared on release.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

#: How often a writer that waits for the lock tries again.
POLL_INTERVAL_S = 0.1


class LockBusyError(RuntimeError):
    """Another writer holds the lock (past the timeout); ``holder`` is its pid, or "?"."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"another process (pid {holder}) holds {path}")
        self.path = path
        self.holder = holder


def _holder(path: Path) -> str:
    try:
        return path.read_bytes()[:64].decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


@contextlib.contextmanager
def exclusive_lock(path: Path, *, timeout_s: float | None = 0.0) -> Iterator[None]:
    """Hold the lock file ``path`` for the block. ``timeout_s`` 0 refuses at once when it is
    held, a positive one waits that long, None waits as long as it takes; a refusal raises
    ``LockBusyError`` (callers turn it into their own error). The directory must exist."""
    lock = FileLock(path, timeout=-1 if timeout_s is None else timeout_s)
    try:
        lock.acquire(poll_interval=POLL_INTERVAL_S)
    except Timeout:
        raise LockBusyError(path, _holder(path)) from None
    try:
        path.write_text(str(os.getpid()))  # the same inode: filelock keeps the file in place
        yield
    finally:
        with contextlib.suppress(OSError):
            os.truncate(path, 0)
        lock.release()
