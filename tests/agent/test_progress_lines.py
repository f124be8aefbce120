"""Plain progress lines: what a tree build left in the background writes to its log."""

from __future__ import annotations

import io

from rich.console import Console

from agent.cli.tree import build_progress
from agent.progress import ProgressLines
from tree.build import BuildEvent


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, color_system=None), buffer


def test_lines_are_throttled_and_say_rate_and_time_left() -> None:
    console, buffer = _console()
    clock = FakeClock()
    lines = ProgressLines(console, every_s=60.0, clock=clock)
    lines.update("layer 0: summaries", 0, 100)  # the stage starts: a line
    for done in range(1, 10):
        clock.now = done * 5.0  # 9 more summaries within 45 s: no line
        lines.update("layer 0: summaries", done, 100)
    clock.now = 60.0
    lines.update("layer 0: summaries", 12, 100)  # a minute on: a line with the pace
    clock.now = 500.0
    lines.update("layer 0: summaries", 100, 100)  # finished: always a line
    lines.update("layer 0: summaries", 100, 100)  # and only once
    out = buffer.getvalue().splitlines()
    assert len(out) == 3, out
    assert out[0].endswith("layer 0: summaries: 0/100")
    # 12 in 60 s is 12/min; 88 left at that pace take 7m20s
    assert "12/100, 1m00s so far, 12.0/min, about 7m20s left" in out[1]
    assert "100/100, 8m20s so far, 12.0/min" in out[2] and "left" not in out[2]


def test_a_resumed_stage_measures_its_pace_from_where_it_resumed() -> None:
    console, buffer = _console()
    clock = FakeClock()
    lines = ProgressLines(console, every_s=10.0, clock=clock)
    lines.update("summaries", 0, 50)  # the stage starts
    lines.update("summaries", 40, 50)  # 40 come from the journal, within the same instant
    clock.now = 100.0
    lines.update("summaries", 45, 50)
    assert "45/50, 1m40s so far, 3.0/min, about 1m40s left" in buffer.getvalue()


def _tree_progress_output(monkeypatch, enabled: bool, events: list[BuildEvent]) -> str:
    console, buffer = _console()
    monkeypatch.setattr("agent.cli.tree.err", console)
    with build_progress(enabled=enabled) as progress:
        for event in events:
            progress(event)
    return buffer.getvalue()


def test_tree_build_progress_without_a_terminal_writes_lines(monkeypatch) -> None:
    events = [
        BuildEvent("leaves", 0, 835, 835),
        BuildEvent("cluster", 0, 0, 1246),
        BuildEvent("summaries", 1, 0, 207),
        BuildEvent("summaries", 1, 207, 207),
        BuildEvent("layer", 1, 207, 207),
    ]
    text = _tree_progress_output(monkeypatch, False, events)
    assert "leaves (documents): 835/835" in text
    assert "clustering 1246 nodes of layer 0" in text
    assert "layer 1: 207 clusters, summaries: 0/207" in text
    assert "layer 1: 207 clusters, summaries: 207/207" in text
    assert "layer 1 done: 207 nodes" in text


def test_tree_build_progress_on_a_terminal_writes_no_lines(monkeypatch) -> None:
    events = [BuildEvent("cluster", 0, 0, 1246), BuildEvent("layer", 1, 207, 207)]
    assert "clustering" not in _tree_progress_output(monkeypatch, True, events)
