"""What else the machine was doing while a benchmark ran, read from ``/proc`` and the load
average: a timing taken beside another busy process is not the same measurement, so the load
test and the documents benchmark record it in their results. Empty where there is no ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def stat_ticks(stat: str) -> int:
    """User + system clock ticks from the text of ``/proc/<pid>/stat`` (fields 14 and 15,
    counted after the parenthesised command name, which may itself hold spaces)."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def _cpu_ticks() -> dict[int, tuple[str, int]]:
    """(command name, user+system clock ticks) of every process, from /proc."""
    ticks = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        with contextlib.suppress(OSError):  # the command line says more than "python"
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
            name = " ".join(a.decode(errors="replace").rsplit("/", 1)[-1] for a in argv[:5])
        ticks[int(stat.parent.name)] = (name, stat_ticks(text))
    return ticks


def busy_processes(seconds: float = 1.0, floor: float = 10.0) -> list[tuple[str, float]]:
    """Other processes using at least ``floor`` % of a CPU over ``seconds``: what else the
    machine was doing when the test began (an empty list on a system without /proc)."""
    before = _cpu_ticks()
    time.sleep(seconds)
    after = _cpu_ticks()
    hz = os.sysconf("SC_CLK_TCK")
    busy = []
    for pid, (name, ticks) in after.items():
        if pid == os.getpid() or pid not in before:
            continue
        share = 100.0 * (ticks - before[pid][1]) / hz / seconds
        if share >= floor:
            busy.append((name, share))
    return sorted(busy, key=lambda x: -x[1])


@dataclass
class Load:
    """The machine's 1-minute load average at the start, its peak and at the end, and the
    processes already busy at the start."""

    start: float = 0.0
    peak: float = 0.0
    end: float = 0.0
    busy: list[tuple[str, float]] = field(default_factory=list)

    def sample(self) -> None:
        self.peak = max(self.peak, os.getloadavg()[0])

    def text(self) -> str:
        others = (
            ", ".join(f"{name} {share:.0f}% CPU" for name, share in self.busy)
            if self.busy
            else "none above 10% of a CPU"
        )
        return (
            f"load average {self.start:.2f} at the start, {self.peak:.2f} at its peak, "
            f"{self.end:.2f} at the end; other busy processes at the start: {others}"
        )


def machine() -> dict[str, Any]:
    """The machine a result was measured on: CPU, cores this process may use, Python, niceness."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cores": cores,
        "python": platform.python_version(),
        "niceness": os.nice(0),
    }
