"""``hoptree eval suite --suite chains``: issue 33's slices with an offset, in a version folder,
run with the LLM cache off. No model starts: the children are recorded, not run."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals.cli import eval_app
from evals.peers import PEERS
from evals.suite import (
    CHAINS_SUITE,
    COMPARE_ALL,
    SuiteError,
    SuiteRun,
    compare_args,
    get_suite,
    run_child,
    run_status,
    suite_runs,
)

runner = CliRunner()
CACHE_OFF = {"HOPTREE_LLM__CACHE": "false"}


def write_rows(run_dir: Path, n: int) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({"id": f"q{i}"}) + "\n" for i in range(n))
    (run_dir / "details.jsonl").write_text(text)


def data_files(data: Path) -> None:
    """A stand-in for every question file under ``data``; the fresh slices' files live in the
    checkout (absolute paths) and are never written over."""
    for part in CHAINS_SUITE.slices.values():
        if Path(part.file).is_absolute():
            continue
        (data / part.file).parent.mkdir(parents=True, exist_ok=True)
        (data / part.file).write_text('{"id": "x"}\n')


def test_the_slices_of_issue_33() -> None:
    slices = {run.dataset: run for run in suite_runs(["cheap", "tune"], suite=CHAINS_SUITE)}
    assert {key: (r.file, r.offset, r.limit) for key, r in slices.items()} == {
        "hotpotqa_b": ("hotpotqa/dev_hard_300_b.jsonl", 0, 100),
        "2wiki": ("2wikimultihopqa/dev_163_official.jsonl", 0, 163),
        "musique": ("musique/musique_ans_dev_174.jsonl", 87, 87),
        "tune/musique": ("musique/musique_ans_dev_174.jsonl", 0, 87),
        "tune/2wiki": ("2wikimultihopqa/dev_first100_flashrag.jsonl", 0, 100),
        "tune/hotpotqa": ("hotpotqa/dev_hard_300_a.jsonl", 0, 100),
    }
    assert get_suite("chains").out == "evals/results/v4"


def test_stages_go_in_cost_order_pipeline_by_pipeline_over_the_slices() -> None:
    runs = suite_runs(list(CHAINS_SUITE.stages), suite=CHAINS_SUITE)
    pairs = [(r.dataset, r.pipeline) for r in runs]
    report = ["hotpotqa_b", "2wiki", "musique"]
    tune = ["tune/musique", "tune/2wiki", "tune/hotpotqa"]
    cheap = [(d, p) for p in ("bm25", "hybrid", "oracle", "no-retrieval") for d in report]
    planner = [(d, "full") for d in report]
    ablations = [("musique", p) for p in ("no-decompose", "no-summarize", "no-supplement")]
    tuning = [(d, p) for p in ("bm25", "hybrid", "oracle", "full") for d in tune]
    drafts = [(d, "draft-first") for d in [*report, "first-answer/hotpotqa_a", *tune]]
    fresh = ["fresh/hotpotqa", "fresh/2wiki", "fresh/musique"]
    peers = [(d, p) for p in ("draft-first", "bm25", *PEERS) for d in [*report, *fresh]]
    assert pairs == cheap + planner + ablations + tuning + drafts + peers


def test_only_picks_a_slice_or_a_dataset_with_its_tuning_slice() -> None:
    picked = suite_runs(["planner", "tune"], ["musique"], CHAINS_SUITE)
    assert {r.dataset for r in picked} == {"musique", "tune/musique"}
    exact = suite_runs(["tune"], ["tune/musique"], CHAINS_SUITE)
    assert {r.dataset for r in exact} == {"tune/musique"}


def test_unknown_suite_stage_or_slice_and_an_empty_selection_are_errors() -> None:
    with pytest.raises(SuiteError, match="unknown suite fast; suites: default, chains"):
        get_suite("fast")
    with pytest.raises(SuiteError, match="unknown stage or dataset searchers"):
        suite_runs(["searchers"], suite=CHAINS_SUITE)  # a stage of the default suite only
    with pytest.raises(SuiteError, match="unknown stage or dataset nq"):
        suite_runs(["cheap"], ["nq"], CHAINS_SUITE)
    with pytest.raises(SuiteError, match="stage ablations has no run on 2wiki"):
        suite_runs(["ablations"], ["2wiki"], CHAINS_SUITE)


def test_a_slice_run_passes_its_offset_and_limit_and_writes_into_its_folder() -> None:
    (run,) = suite_runs(["planner"], ["musique"], CHAINS_SUITE)[:1]
    args = run.eval_args(Path("data"), Path("v4"))
    assert args[args.index("--dataset") + 1] == str(
        Path("data") / "musique" / "musique_ans_dev_174.jsonl"
    )
    assert args[args.index("--offset") + 1] == "87" and args[args.index("--limit") + 1] == "87"
    assert args[args.index("--out") + 1] == str(Path("v4") / "musique" / "full")
    tune = suite_runs(["tune"], ["tune/2wiki"], CHAINS_SUITE)[0].eval_args(Path("d"), Path("v4"))
    assert tune[tune.index("--out") + 1] == str(Path("v4") / "tune" / "2wiki" / "bm25")
    assert tune[tune.index("--offset") + 1] == "0"


def test_status_counts_rows_against_the_slice_not_the_file(tmp_path: Path) -> None:
    run = SuiteRun("musique", "full", 87, 87, "musique/musique_ans_dev_174.jsonl")
    assert run.questions() == "87 (88-174)"
    write_rows(run.out_dir(tmp_path), 40)
    assert run_status(run, tmp_path) == "40/87"
    write_rows(run.out_dir(tmp_path), 87)
    assert run_status(run, tmp_path) == "finished"


def test_comparisons_are_per_slice_over_the_suites_pipelines(tmp_path: Path) -> None:
    root = tmp_path / "tune" / "musique"
    for pipeline in ("full", "full-56dfb31", "oracle", "bm25"):  # full-56dfb31: kept apart
        (root / pipeline).mkdir(parents=True)
        (root / pipeline / "metrics.json").write_text("{}")
    args = compare_args(tmp_path, "tune/musique", common=False, suite=CHAINS_SUITE)
    assert args is not None
    assert args[2:5] == [str(root / "bm25"), str(root / "oracle"), str(root / "full")]
    assert args[-1] == str(root / COMPARE_ALL)


def test_status_of_the_chains_suite_in_its_version_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)  # the default --out, evals/results/v4, is relative
    data = tmp_path / "data"
    data_files(data)
    v4 = tmp_path / "evals" / "results" / "v4"
    write_rows(v4 / "musique" / "full", 40)
    write_rows(v4 / "tune" / "musique" / "bm25", 87)
    write_rows(v4 / "tune" / "musique" / "full-56dfb31", 7)  # not a run of the suite
    args = ["suite", "--suite", "chains", "--data", str(data)]
    result = runner.invoke(eval_app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "evaluation suite in evals/results/v4" in result.output
    (full,) = [line for line in lines if "│ musique " in line and " full " in line]
    assert "87 (88-174)" in full and "40/87" in full
    (bm25,) = [line for line in lines if "tune/musique" in line and " bm25 " in line]
    assert "finished" in bm25
    # 37 runs (30 of issue 33, 7 draft-first) and the peers stage's (hoptree's two runs and
    # every peer on the three report slices and the three fresh ones): one partly done, one
    # finished
    assert result.output.count("not started") == 35 + 6 * (2 + len(PEERS))
    assert "HOPTREE_LLM__CACHE=false" in result.output  # the status says how --run runs

    default = runner.invoke(eval_app, ["suite", "--data", str(data)], terminal_width=200)
    assert default.exit_code == 0, default.output  # its two files are the tuning slices'
    assert "suite in evals/results " in default.output and "HOPTREE_LLM" not in default.output
    unknown = runner.invoke(eval_app, ["suite", "--suite", "fast", "--data", str(data)])
    assert unknown.exit_code == 2 and "unknown suite fast" in unknown.output
    bad = runner.invoke(eval_app, [*args, "--stage", "tree"])
    assert bad.exit_code == 2 and "unknown stage or dataset tree" in bad.output


def test_run_children_get_the_slice_and_the_llm_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "home"))
    data, out = tmp_path / "data", tmp_path / "v4"
    data_files(data)
    write_rows(out / "musique" / "no-summarize", 87)  # finished: not run again
    for pipeline in ("no-decompose", "no-supplement"):
        (out / "musique" / pipeline).mkdir(parents=True)
        (out / "musique" / pipeline / "metrics.json").write_text("{}")
    children: list[tuple[list[str], Mapping[str, str] | None]] = []

    def child(command: list[str], env: Mapping[str, str] | None = None) -> int:
        children.append((command[3:], env))  # after: python -m agent.cli
        return 0

    monkeypatch.setattr("evals.suite.run_child", child)
    args = ["suite", "--suite", "chains", "--data", str(data), "--out", str(out), "--run"]
    result = runner.invoke(eval_app, [*args, "--stage", "ablations"], terminal_width=200)
    assert result.exit_code == 0, result.output
    source = str(data / "musique" / "musique_ans_dev_174.jsonl")
    runs = [command for command, _ in children if command[:2] == ["eval", "run"]]
    assert runs == [
        ["eval", "run", "--dataset", source, "--setting", "open", "--pipeline", p,
         "--offset", "87", "--limit", "87", "--out", str(out / "musique" / p)]
        for p in ("no-decompose", "no-supplement")
    ]  # fmt: skip
    compares = [command for command, _ in children if command[:2] == ["eval", "compare"]]
    assert len(compares) == 2 and str(out / "musique" / "compare_common.md") in compares[1]
    assert all(env == CACHE_OFF for _, env in children)


def test_run_child_adds_its_environment_to_this_processs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOPTREE_SUITE_TEST_KEPT", "yes")
    check = (
        "import os, sys; e = os.environ; "
        "sys.exit(0 if e['HOPTREE_LLM__CACHE'] == 'false' and e['HOPTREE_SUITE_TEST_KEPT'] == "
        "'yes' else 1)"
    )
    assert run_child([sys.executable, "-c", check], env=CACHE_OFF) == 0


def test_the_draft_stage_writes_beside_the_suites_folder_and_resumes_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--stage draft``: draft-first on the three report slices, in ``v7`` beside ``v4`` (so
    v4's comparisons keep the code they were made with; ``v5`` holds the first router's, ``v6``
    the current router's before the residual hop and its tuning runs); the first-answer run is
    HotpotQA _a 1-30 in ``v5``."""
    runs = suite_runs(["draft"], suite=CHAINS_SUITE)
    assert [(r.dataset, r.pipeline) for r in runs] == [
        ("hotpotqa_b", "draft-first"),
        ("2wiki", "draft-first"),
        ("musique", "draft-first"),
    ]
    v4 = tmp_path / "evals" / "results" / "v4"
    assert runs[2].out_dir(v4) == tmp_path / "evals" / "results" / "v7" / "musique" / "draft-first"
    args = runs[2].eval_args(Path("d"), v4)
    assert args[args.index("--offset") + 1] == "87" and args[-1] == str(runs[2].out_dir(v4))
    (first,) = suite_runs(["first-answer"], suite=CHAINS_SUITE)
    assert (first.file, first.offset, first.limit) == ("hotpotqa/dev_hard_300_a.jsonl", 0, 30)
    assert first.out_dir(v4).relative_to(tmp_path).as_posix() == (
        "evals/results/v5/first-answer/hotpotqa_a/draft-first"
    )

    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    data_files(data)
    write_rows(runs[0].out_dir(v4), 100)  # the v7 run is finished; v4 holds no draft-first
    write_rows(v4 / "2wiki" / "draft-first", 163)  # in the wrong folder: not this stage's run
    calls: list[list[str]] = []
    monkeypatch.setattr("evals.suite.execute_cli", lambda args, env=None: calls.append(args) or 0)
    args = ["suite", "--suite", "chains", "--data", str(data), "--stage", "draft", "--run"]
    result = runner.invoke(eval_app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    outs = [c[c.index("--out") + 1] for c in calls if c[:2] == ["eval", "run"]]
    assert outs == [
        str(Path("evals/results/v7/2wiki/draft-first")),
        str(Path("evals/results/v7/musique/draft-first")),
    ]
    assert "hotpotqa_b (v7)" in result.output
