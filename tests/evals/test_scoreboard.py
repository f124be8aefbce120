"""The suite's scoreboard (``evals.scoreboard``): one line per slice, read from run folders."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evals.cli import eval_app
from evals.scoreboard import Targets, scoreboard_markdown, slice_score
from evals.suite import CHAINS_SUITE, SCOREBOARD, suite_scores

runner = CliRunner()
PIPELINES = ["bm25", "hybrid", "oracle", "no-retrieval", "full"]


def write_run(folder: Path, f1: list[float], **fields: list[object]) -> None:
    """A run of ``len(f1)`` questions q0, q1, ... with those F1 scores (and other columns)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, score in enumerate(f1):
        row: dict[str, object] = {"id": f"q{i}", "type": "2hop", "f1": score, "em": score}
        row.update({key: values[i] for key, values in fields.items()})
        rows.append(json.dumps(row))
    (folder / "details.jsonl").write_text("\n".join(rows) + "\n")


def slice_with_runs(root: Path, name: str = "musique") -> None:
    write_run(root / name / "bm25", [0.0, 0.0, 1.0, 0.0])  # 25.0
    write_run(root / name / "hybrid", [1.0, 0.0, 1.0, 0.0])  # 50.0: the best one-call run
    write_run(root / name / "oracle", [1.0, 1.0, 1.0, 1.0])  # 100.0
    write_run(
        root / name / "full",
        [1.0, 1.0, 1.0, 0.0],  # 75.0: half of the way from hybrid to the oracle
        hop_recall=[1.0, 0.5, None, 0.0],  # undefined for q2: left out, not zero
        llm_calls=[4, 6, 7, 9],
        prompt_tokens=[1_000, 2_000, 3_000, 4_000],
    )


def test_a_slice_scores_the_agent_against_its_best_one_call_run(tmp_path: Path) -> None:
    slice_with_runs(tmp_path)
    score = slice_score(tmp_path, "musique", PIPELINES, limit=4)
    assert score is not None
    assert score.comparison.best_one_call == "hybrid" and score.comparison.oracle == "oracle"
    assert score.n == 4 and score.gain is not None
    assert round(score.gain.mean, 6) == 25.0 and (score.gain.wins, score.gain.losses) == (1, 0)
    assert score.headroom == 50.0
    assert score.hop_recall == 50.0  # (1 + 0.5 + 0) / 3
    assert (score.median_calls, score.median_prompt_tokens) == (6.5, 2_500.0)


def test_targets_are_judged_cell_by_cell(tmp_path: Path) -> None:
    slice_with_runs(tmp_path)
    score = slice_score(tmp_path, "musique", PIPELINES, limit=4)
    assert score is not None
    page = scoreboard_markdown([score], {"musique": Targets(hop_recall=75.0)}, "chains")
    line = next(row for row in page.splitlines() if row.startswith("| musique"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[:5] == ["musique", "4/4", "hybrid 50.0", "75.0", "100.0"]
    # four questions cannot put the interval above zero; half the headroom is the bar, met
    assert cells[5].endswith("✗") and cells[7] == "50.0% ✓"
    assert cells[8] == "50.0% ✗"  # hop recall under 75%
    assert cells[9] == "6 ✗" and cells[10] == "2,500 ✓"  # a median of 6.5 calls, shown rounded
    assert "hop recall ≥ 75%" in page
    bare = scoreboard_markdown([score], {}, "chains")  # no targets: nothing is judged
    assert "✓" not in bare and "✗" not in bare


def test_runs_still_growing_are_paired_on_what_all_finished(tmp_path: Path) -> None:
    slice_with_runs(tmp_path)
    write_run(tmp_path / "musique" / "full", [1.0, 1.0])  # only two questions so far
    score = slice_score(tmp_path, "musique", PIPELINES, limit=4)
    assert score is not None and score.n == 2
    assert "Runs still growing: musique: full 2 of 4 finished." in scoreboard_markdown(
        [score], {}, "chains"
    )


def test_a_growing_ablation_is_listed_but_does_not_shrink_the_pairing(tmp_path: Path) -> None:
    slice_with_runs(tmp_path)
    write_run(tmp_path / "musique" / "no-decompose", [0.0])  # one question so far
    score = slice_score(tmp_path, "musique", [*PIPELINES, "no-decompose"], limit=4)
    assert score is not None and score.n == 4
    assert "musique: no-decompose 1 of 4 finished" in scoreboard_markdown([score], {}, "chains")


def test_no_line_without_the_agent_or_a_one_call_run(tmp_path: Path) -> None:
    write_run(tmp_path / "musique" / "oracle", [1.0])
    write_run(tmp_path / "musique" / "full", [1.0])
    assert slice_score(tmp_path, "musique", PIPELINES, limit=1) is None  # no one-call run
    write_run(tmp_path / "hotpotqa_b" / "bm25", [1.0])
    assert slice_score(tmp_path, "hotpotqa_b", PIPELINES, limit=1) is None  # no agent
    write_run(tmp_path / "2wiki" / "bm25", [1.0])
    (tmp_path / "2wiki" / "full").mkdir()
    (tmp_path / "2wiki" / "full" / "details.jsonl").write_text(json.dumps({"id": "other"}))
    assert slice_score(tmp_path, "2wiki", PIPELINES, limit=1) is None  # nothing in common


def test_the_suite_scores_its_slices_whatever_stage_was_asked(tmp_path: Path) -> None:
    slice_with_runs(tmp_path, "musique")
    slice_with_runs(tmp_path, "tune/musique")
    scores = suite_scores(CHAINS_SUITE, ["musique", "musique", "hotpotqa_b"], tmp_path)
    assert [s.slice for s in scores] == ["musique"]  # hotpotqa_b has no runs; once each
    assert scores[0].limit == 87  # the slice's size, not the rows written


def test_the_suite_command_prints_and_writes_the_scoreboard(tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    for part in CHAINS_SUITE.slices.values():
        if Path(part.file).is_absolute():  # a fresh slice's file in the checkout: never touched
            continue
        (data / part.file).parent.mkdir(parents=True, exist_ok=True)
        (data / part.file).write_text('{"id": "x"}\n')
    slice_with_runs(out, "musique")
    args = ["suite", "--suite", "chains", "--data", str(data), "--out", str(out)]
    shown = runner.invoke(eval_app, [*args, "--stage", "cheap"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    assert "scoreboard of full" in shown.output
    assert "+25.0" in shown.output and "50.0% ✓" in shown.output
    assert not (out / SCOREBOARD).exists()  # printing alone writes nothing
    written = runner.invoke(eval_app, [*args, "--only", "musique", "--scoreboard"])
    assert written.exit_code == 0, written.output
    page = (out / SCOREBOARD).read_text()
    assert page.startswith("# Scoreboard of suite chains") and "| musique | 4/87 |" in page
    assert "Runs still growing: musique:" in page
