"""Progress bars on stderr (stdout stays clean for --json); silent when stderr is not a terminal
unless asked, so CI logs do not fill with redraws."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from agent.gguf_assembly import ProgressFn

stderr = Console(stderr=True)


@contextmanager
def byte_progress(description: str) -> Iterator[ProgressFn]:
    """A ProgressFn that draws a byte bar, created lazily so a no-op join draws nothing."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    task: list[int] = []

    def update(done: int, total: int) -> None:
        if not task:
            progress.start()
            task.append(progress.add_task(description, total=total))
        progress.update(task[0], completed=done)

    try:
        yield update
    finally:
        if task:
            progress.stop()
