"""Progress on stderr (stdout stays clean for --json): bars on a terminal; elsewhere silence for
short work, so CI logs do not fill with redraws, and throttled plain lines for long work."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from agent.runtime.gguf_assembly import ProgressFn

stderr = Console(stderr=True)


@contextmanager
def byte_progress(description: str) -> Iterator[ProgressFn]:
    """A ProgressFn that draws a byte bar, created lazily so a no-op join draws nothing; when
    stderr is not a terminal, plain lines in MB instead (a bar would write nothing there)."""
    if not sys.stderr.isatty():
        lines = ProgressLines(stderr, every_s=10.0)
        yield lambda done, total: lines.update(f"{description} (MB)", done >> 20, total >> 20)
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
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


StageFn = Callable[[str, int, int], None]  # (stage label, done, total)


class RateColumn(ProgressColumn):
    """Items per second (per minute when slower than one a second), blank until known."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("")
        return Text(_rate(speed), style="progress.data.speed")


def _rate(per_second: float) -> str:
    return f"{per_second:.0f}/s" if per_second >= 1 else f"{60 * per_second:.1f}/min"


@contextmanager
def stage_progress(enabled: bool | None = None, every_s: float = 10.0) -> Iterator[StageFn]:
    """An update(label, done, total) for work in named stages: a rich bar per stage on a
    terminal; plain lines (one every ``every_s`` at most, with rate and time left) when stderr
    is not one (CI logs, nohup, a pipe), where a bar writes nothing."""
    console = Console(stderr=True)
    if not (sys.stderr.isatty() if enabled is None else enabled):
        lines = ProgressLines(console, every_s=every_s)
        yield lines.update
        return
    progress = Progress(
        TextColumn("{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, Any] = {}

    def update(label: str, done: int, total: int) -> None:
        if label not in tasks:
            tasks[label] = progress.add_task(label, total=total)
        progress.update(tasks[label], completed=done, total=total)

    with progress:
        yield update


class ProgressLines:
    """Progress as plain, timestamped lines, for a long job whose stderr is a log file (nohup,
    CI), where a bar writes nothing. One line when a stage starts, at most one every
    ``every_s`` seconds while it runs, with its rate and time left, and one when it finishes.
    The rate counts from ``settle_s`` after the stage's first event, so work a resumed job
    recovers at once does not pass for speed."""

    def __init__(
        self,
        console: Console,
        every_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        settle_s: float = 1.0,
    ):
        self.console = console
        self.every_s = every_s
        self.settle_s = settle_s
        self.clock = clock
        self._started: dict[str, tuple[float, int]] = {}
        self._last: dict[str, float] = {}
        self._finished: set[str] = set()

    def note(self, text: str) -> None:
        self.console.print(f"{time.strftime('%H:%M:%S')} {text}", highlight=False, soft_wrap=True)

    def update(self, label: str, done: int, total: int) -> None:
        now = self.clock()
        start = self._started.get(label)
        if start is None or now - start[0] < self.settle_s:
            # what a resumed job finds done (a journal, a cache) arrives at once: not its pace
            self._started[label] = (now if start is None else start[0], done)
        if label in self._finished:
            return
        finished = done >= total
        last = self._last.get(label)
        if not finished and last is not None and now - last < self.every_s:
            return
        self._last[label] = now
        if finished:
            self._finished.add(label)
        self.note(f"{label}: {done}/{total}{self._pace(label, now, done, total)}")

    def _pace(self, label: str, now: float, done: int, total: int) -> str:
        start, start_done = self._started[label]
        elapsed = now - start
        if done <= start_done or elapsed <= 0:
            return ""
        rate = (done - start_done) / elapsed
        pace = f", {_duration(elapsed)} so far, {_rate(rate)}"
        if done < total:
            pace += f", about {_duration((total - done) / rate)} left"
        return pace


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
