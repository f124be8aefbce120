"""``hoptree eval suite``: the committed suite's runs, their status, and resuming them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals.cli import eval_app
from evals.suite import (
    COMPARE_ALL,
    COMPARE_COMMON,
    DATASETS,
    SuiteError,
    SuiteRun,
    compare_args,
    kept_journal,
    run_status,
    run_unfinished,
    suite_runs,
    tree_progress,
    tree_setup,
)
from searchers.corpus import file_sha256
from tests.locations import REPO
from tree.journal import BuildJournal

runner = CliRunner()


def write_rows(run_dir: Path, n: int, torn: bool = False) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({"id": f"q{i}"}) + "\n" for i in range(n))
    (run_dir / "details.jsonl").write_text(text + ('{"id": "cut' if torn else ""))


def test_runs_go_stage_by_stage_and_pipeline_by_pipeline_over_both_datasets() -> None:
    runs = suite_runs(["cheap", "planner"])
    assert [(r.dataset, r.pipeline) for r in runs[:4]] == [
        ("hotpotqa", "no-retrieval"),
        ("2wiki", "no-retrieval"),
        ("hotpotqa", "bm25"),
        ("2wiki", "bm25"),
    ]
    assert {r.limit for r in runs if r.pipeline in ("bm25", "hybrid")} == {100}
    assert {r.limit for r in runs if r.pipeline.startswith(("full", "no-d", "no-su"))} == {30}
    assert [r.dataset for r in suite_runs(["tree"], ["2wiki"])] == ["2wiki"]
    with pytest.raises(SuiteError, match="unknown stage or dataset fast"):
        suite_runs(["fast"])


def test_a_run_resumes_with_the_same_command(tmp_path: Path) -> None:
    run = SuiteRun("2wiki", "bm25", 100)
    args = run.eval_args(Path("data"), tmp_path)
    assert args[:2] == ["eval", "run"]
    assert args[args.index("--dataset") + 1] == str(Path("data") / DATASETS["2wiki"])
    assert args[args.index("--out") + 1] == str(tmp_path / "2wiki" / "bm25")
    assert args[args.index("--limit") + 1] == "100" and "open" in args


def test_status_counts_whole_rows_only(tmp_path: Path) -> None:
    run = SuiteRun("hotpotqa", "full", 30)
    assert run_status(run, tmp_path) == "not started"
    write_rows(run.out_dir(tmp_path), 20, torn=True)
    assert run_status(run, tmp_path) == "20/30"
    write_rows(run.out_dir(tmp_path), 30)
    assert run_status(run, tmp_path) == "finished"


def test_unfinished_runs_run_in_order_and_a_failure_does_not_stop_the_rest(tmp_path: Path) -> None:
    runs = suite_runs(["searchers"])
    write_rows(runs[0].out_dir(tmp_path), 30)  # hotpotqa sparse-searcher already finished
    seen: list[str] = []

    def execute(args: list[str]) -> int:
        out = Path(args[args.index("--out") + 1])
        seen.append(f"{out.parent.name}/{out.name}")
        return 1 if out.name == "sparse-searcher" else 0

    outcomes = run_unfinished(runs, Path("data"), tmp_path, execute)
    assert seen == ["2wiki/sparse-searcher", "hotpotqa/dense-searcher", "2wiki/dense-searcher"]
    assert [code for _, code in outcomes] == [1, 0, 0]


def test_a_tree_run_builds_its_index_and_tree_first_unless_the_tree_exists(tmp_path: Path) -> None:
    tree_run = SuiteRun("2wiki", "full+tree", 30)
    index = tmp_path / "eval-indexes" / "abc"
    data = tmp_path / "data"
    source = str(data / DATASETS["2wiki"])
    assert tree_setup(tree_run, data, index, has_tree=False) == [
        ["index", "build", "--index", str(index), source],
        ["tree", "build", "--index", str(index), source],
    ]
    assert tree_setup(tree_run, data, index, has_tree=True) == []
    assert tree_setup(SuiteRun("2wiki", "full", 30), data, index, has_tree=False) == []


def test_tree_progress_counts_the_journaled_summaries(tmp_path: Path) -> None:
    assert tree_progress(tmp_path, has_tree=True) == "tree built"
    assert tree_progress(tmp_path, has_tree=False) == "no tree yet"
    journal = BuildJournal(tmp_path / "journal.jsonl")
    journal.record_clusters("c", [["a", "b"]])
    for key in ("k1", "k2"):
        journal.record_summary(key, {"text": "t", "metadata": {}})
    assert tree_progress(tmp_path, has_tree=False) == (
        "tree building, 2 summaries done; the latest layer has 1 clusters"
    )
    journal.record_clusters("c2", [["a"], ["b"], ["c"]])  # a layer above
    assert tree_progress(tmp_path, has_tree=False).endswith("the latest layer has 3 clusters")
    assert tree_progress(tmp_path / "nowhere", has_tree=False) == "no tree yet"


def test_a_failed_setup_skips_its_run_and_the_next_run_goes_on(tmp_path: Path) -> None:
    runs = suite_runs(["tree"])  # hotpotqa, then 2wiki
    seen: list[str] = []

    def execute(args: list[str]) -> int:
        seen.append(" ".join(args[:2]))
        first_tree_build = seen.count("tree build") == 1 and seen[-1] == "tree build"
        return 3 if first_tree_build else 0  # hotpotqa's tree build fails

    def setup(run: SuiteRun) -> list[list[str]]:
        return tree_setup(run, Path("data"), tmp_path / run.dataset, has_tree=False)

    outcomes = run_unfinished(runs, Path("data"), tmp_path, execute, setup=setup)
    # hotpotqa: the tree build fails, so its eval never starts; 2wiki builds and runs
    assert seen == ["index build", "tree build", "index build", "tree build", "eval run"]
    assert [(run.dataset, code) for run, code in outcomes] == [("hotpotqa", 3), ("2wiki", 0)]


def test_comparisons_need_two_runs_with_metrics(tmp_path: Path) -> None:
    assert compare_args(tmp_path, "hotpotqa", common=False) is None
    for pipeline in ("bm25", "full"):
        (tmp_path / "hotpotqa" / pipeline).mkdir(parents=True)
        (tmp_path / "hotpotqa" / pipeline / "metrics.json").write_text("{}")
    every = compare_args(tmp_path, "hotpotqa", common=False)
    common = compare_args(tmp_path, "hotpotqa", common=True)
    assert every is not None and common is not None
    assert every[:2] == ["eval", "compare"] and str(tmp_path / "hotpotqa" / "bm25") in every
    assert every[-1].endswith(COMPARE_ALL) and "--common" not in every
    assert "--common" in common and str(tmp_path / "hotpotqa" / COMPARE_COMMON) in common


def test_suite_lists_every_run_with_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "home"))
    data = tmp_path / "data"
    for name in DATASETS.values():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text("")
    out = tmp_path / "results"
    write_rows(out / "hotpotqa" / "full", 12)
    result = runner.invoke(
        eval_app, ["suite", "--data", str(data), "--out", str(out)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    full = [line for line in result.output.splitlines() if "hotpotqa" in line and " full " in line]
    assert len(full) == 1 and "12/30" in full[0]
    assert result.output.count("not started") == 21  # 22 runs, one of them partly done
    assert result.output.count("no tree yet") == 2  # the full+tree runs say what they wait for

    missing = runner.invoke(eval_app, ["suite", "--data", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "dataset file not found" in missing.output
    bad = runner.invoke(eval_app, ["suite", "--data", str(data), "--stage", "fast"])
    assert bad.exit_code == 2 and "unknown stage" in bad.output


def test_suite_run_builds_the_tree_over_the_eval_index_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    for name in DATASETS.values():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(f'{{"id": "{name}"}}\n')
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "home"))
    commands: list[list[str]] = []

    def child(command: list[str], env: Mapping[str, str] | None = None) -> int:
        assert not env  # the default suite's children get this process's environment as is
        commands.append(command[3:])  # after: python -m agent.cli
        return 0

    monkeypatch.setattr("evals.suite.run_child", child)
    args = ["suite", "--data", str(data), "--out", str(tmp_path / "out"), "--run"]
    result = runner.invoke(eval_app, [*args, "--stage", "tree", "--only", "2wiki"])
    assert result.exit_code == 0, result.output
    source = data / DATASETS["2wiki"]
    index = tmp_path / "home" / "eval-indexes" / file_sha256(source)
    assert commands == [
        ["index", "build", "--index", str(index), str(source)],
        ["tree", "build", "--index", str(index), str(source)],
        SuiteRun("2wiki", "full+tree", 30).eval_args(data, tmp_path / "out"),
    ]


def test_a_tree_journal_kept_with_the_results_resumes_the_build_on_a_new_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--keep-journals copies the cache's journal beside the results; --run on a machine whose
    cache is empty puts it back before the tree build starts, so no summary is paid twice."""
    data = tmp_path / "data"
    for name in DATASETS.values():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(f'{{"id": "{name}"}}\n')
    out = tmp_path / "results"
    old_home, new_home = tmp_path / "old-machine", tmp_path / "new-machine"
    source = data / DATASETS["2wiki"]
    building = BuildJournal(
        old_home / "eval-indexes" / file_sha256(source) / "tree" / "journal.jsonl"
    )
    building.record_clusters("c", [["a", "b"]])
    for key in ("k1", "k2"):
        building.record_summary(key, {"text": key, "metadata": {}})
    args = ["suite", "--data", str(data), "--out", str(out), "--stage", "tree", "--only", "2wiki"]

    monkeypatch.setenv("HOPTREE_DATA_DIR", str(old_home))
    kept = runner.invoke(eval_app, [*args, "--keep-journals"], terminal_width=200)
    assert kept.exit_code == 0, kept.output
    saved = kept_journal(SuiteRun("2wiki", "full+tree", 30), out)
    assert saved == out / "2wiki" / "tree-journal.jsonl" and "3 new record(s)" in kept.output
    again = runner.invoke(eval_app, [*args, "--keep-journals"], terminal_width=200)
    assert "0 new record(s)" in again.output  # keeping twice adds nothing

    monkeypatch.setenv("HOPTREE_DATA_DIR", str(new_home))
    seen: list[set[str]] = []

    def child(command: list[str], env: Mapping[str, str] | None = None) -> int:
        if command[3:5] == ["tree", "build"]:
            journal = Path(command[command.index("--index") + 1]) / "tree" / "journal.jsonl"
            seen.append(set(BuildJournal(journal).summaries))
        return 0

    monkeypatch.setattr("evals.suite.run_child", child)
    resumed = runner.invoke(eval_app, [*args, "--run"], terminal_width=200)
    assert resumed.exit_code == 0, resumed.output
    assert seen == [{"k1", "k2"}]


def test_stopping_the_suite_stops_its_current_run(tmp_path: Path) -> None:
    """A killed suite must not leave its child run going beside the next suite's runs."""
    pid_file = tmp_path / "child.pid"
    child = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); time.sleep(120)"
    )
    parent_code = (
        "import sys; from evals.suite import run_child; "
        f"sys.exit(run_child([sys.executable, '-c', {child!r}]))"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while not pid_file.is_file() or not pid_file.read_text():
            assert parent.poll() is None, "the parent exited before starting its child"
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.1)
        child_pid = int(pid_file.read_text())
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=60) == 128 + signal.SIGTERM
        with pytest.raises(ProcessLookupError):
            os.kill(child_pid, 0)  # reaped by the parent: gone, not a zombie or an orphan
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_fresh_slice_not_drawn_says_how_to_draw_it(tmp_path: Path) -> None:
    """The fresh report slices live in the checkout, uncommitted: a missing one names draw.py,
    a missing file of the data directory does not."""
    from evals.suite import FRESH, SuiteRun, missing_dataset_files

    fresh = SuiteRun("fresh/x", "bm25", 5, 0, str(FRESH / "not_drawn_yet.jsonl"))
    shared = SuiteRun("hotpotqa", "bm25", 5, 0, "hotpotqa/none.jsonl")
    missing = missing_dataset_files([fresh, shared], tmp_path)
    drawn = [m for m in missing if "not_drawn_yet.jsonl" in m]
    assert len(missing) == 2 and len(drawn) == 1
    assert drawn[0].endswith("(draw it: python evals/data/fresh/draw.py)")
    assert str(tmp_path / "hotpotqa" / "none.jsonl") in missing
