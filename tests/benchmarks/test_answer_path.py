"""``benchmarks/answer_path.py`` on tiny synthetic rows: the draft is scored from the row's
record of it, the best one call is picked on the shared questions, and the router's and the
plan's counts are read from each row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.benchmark_module import load_benchmark

ap = load_benchmark("answer_path")


def _write(run: Path, rows: list[dict[str, Any]]) -> None:
    run.mkdir(parents=True)
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _default(qid: str, draft: str, final: str, escalate: bool, seconds: float) -> dict:
    return {
        "id": qid,
        "answers": ["Tulsa"],
        "prediction": final,
        "f1": 1.0 if final == "Tulsa" else 0.0,
        "seconds": seconds,
        "planner": {
            "draft": {"short_answer": draft, "decision": {"escalate": escalate}},
            "first_answer_s": seconds / 4,
        },
    }


def _one_call(qid: str, f1: float) -> dict:
    return {"id": qid, "answers": ["Tulsa"], "prediction": "x", "f1": f1}


def test_figures_pair_the_draft_the_default_and_the_better_one_call(tmp_path: Path) -> None:
    _write(
        tmp_path / "d",
        [
            _default("a", "Tulsa", "Tulsa", False, 8.0),  # the draft stood
            _default("b", "Paris", "Tulsa", True, 40.0),  # the plan changed it, for the better
            _default("c", "Lyon", "the Lyon", True, 20.0),  # planned, the same answer
            {"id": "e", "answers": ["Tulsa"], "prediction": "", "f1": 0.0},  # failed: no draft
        ],
    )
    _write(tmp_path / "bm25", [_one_call("a", 1.0), _one_call("b", 0.0), _one_call("c", 0.0)])
    _write(tmp_path / "hybrid", [_one_call("a", 1.0), _one_call("b", 1.0), _one_call("c", 0.0)])
    runs = ap.SliceRuns("tuning", "d", {"bm25": "bm25", "hybrid": "hybrid", "dense": "none"})
    f = ap.slice_figures(runs, tmp_path)
    assert f is not None
    assert f["n"] == 3  # "e" has no draft, and every one-call run answered a, b, c
    assert f["draft_f1"] == round(100 / 3, 1) and f["default_f1"] == round(200 / 3, 1)
    assert f["best_one_call"] == "hybrid" and f["one_call_f1"] == round(200 / 3, 1)
    assert f["delta"] == 0.0 and (f["wins"], f["losses"]) == (0, 0)
    assert f["draft"]["delta"] == round(-100 / 3, 1) and f["draft"]["losses"] == 1
    assert (f["planned"], f["changed"]) == (2, 1)  # "the Lyon" is "Lyon" normalised
    assert f["planned_unchanged"] == 1
    assert f["median_s"] == 20.0 and f["first_answer_median_s"] == 5.0
    assert f["missing_one_calls"] == ["dense"]


def test_a_slice_without_rows_is_left_out(tmp_path: Path) -> None:
    assert ap.slice_figures(ap.SliceRuns("tuning", "nothing", {}), tmp_path) is None


def test_a_replayed_default_reports_no_seconds(tmp_path: Path) -> None:
    _write(tmp_path / "d", [_default("a", "Tulsa", "Tulsa", False, 0.1)])
    _write(tmp_path / "bm25", [_one_call("a", 1.0)])
    live = ap.slice_figures(ap.SliceRuns("tuning", "d", {"bm25": "bm25"}), tmp_path)
    replay = ap.slice_figures(
        ap.SliceRuns("tuning", "d", {"bm25": "bm25"}, replayed=True), tmp_path
    )
    assert live is not None and replay is not None
    assert live["median_s"] == 0.1 and live["first_answer_median_s"] == 0.03
    assert replay["median_s"] is None and replay["first_answer_median_s"] is None
    assert replay["default_f1"] == live["default_f1"] == 100.0


def test_the_picture_draws_the_draft_and_the_default_of_each_slice_against_its_one_call(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "d", [_default("a", "Paris", "Tulsa", True, 8.0)])
    _write(tmp_path / "bm25", [_one_call("a", 0.0)])
    measured = ap.slice_figures(ap.SliceRuns("tuning", "d", {"bm25": "bm25"}), tmp_path)
    alone = ap.slice_figures(ap.SliceRuns("tuning", "d", {}), tmp_path)  # no one call
    assert measured is not None and alone is not None
    drawing = ap.figure({"tune/x": measured, "tune/none": alone})
    assert drawing is not None
    (axes,) = drawing.axes
    assert [t.get_text() for t in axes.get_yticklabels()] == ["tune/x (n=1, vs bm25)"]
    # the default (+100: the plan fixed it) and the draft (0: both wrong), one bar each
    means = sorted(float(bar.lines[0].get_xdata()[0]) for bar in axes.containers)
    assert means == [0.0, 100.0]
    assert ap.figure({"tune/none": alone}) is None


def test_the_questions_the_one_call_won_are_sorted_by_why(tmp_path: Path) -> None:
    _write(
        tmp_path / "d",
        [
            _default("a", "Tulsa", "Paris", True, 8.0),  # a right draft the plan changed
            _default("b", "Paris", "Paris", True, 8.0),  # wrong throughout: no titles to tell
            _default("c", "Tulsa", "Tulsa", False, 8.0),  # right: the one call did not win
        ],
    )
    _write(tmp_path / "bm25", [_one_call(i, 1.0) for i in "abc"])
    f = ap.slice_figures(ap.SliceRuns("tuning", "d", {"bm25": "bm25"}), tmp_path)
    assert f is not None
    assert f["one_call_won"] == {"the plan changed a right draft": 1, "no supporting titles": 1}
    assert "- x: the plan changed a right draft 1; no supporting titles 1" in ap.markdown({"x": f})
