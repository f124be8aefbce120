"""``benchmarks/planner_profile.py`` without the model: a configuration's text (name, commit,
overrides), the worktree an earlier commit's arm runs from, and the report's pairing of arms."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("planner_profile")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_config_text(bench: ModuleType) -> None:
    assert bench.parse_config("base:") == bench.Config("base", {}, None)
    assert bench.parse_config("norepack:HOPTREE_LLM__LOCAL_REPACK=false") == bench.Config(
        "norepack", {"HOPTREE_LLM__LOCAL_REPACK": "false"}, None
    )
    assert bench.parse_config("before@799ade1:A=1, B=2") == bench.Config(
        "before", {"A": "1", "B": "2"}, "799ade1"
    )
    assert bench.parse_config("without/no-supplement@abc:D=d") == bench.Config(
        "without", {"D": "d"}, "abc", "no-supplement"
    )
    for bad in (":A=1", "x@:", "x:A", "x/:A=1", "/full:"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_config(bad)


def test_an_earlier_commit_runs_from_its_own_worktree(bench: ModuleType, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "code.py").write_text("OLD = True\n")
    git(repo, "add", "code.py")
    git(repo, "commit", "-qm", "old")
    old = git(repo, "rev-parse", "HEAD")
    (repo / "code.py").write_text("OLD = False\n")
    git(repo, "commit", "-qam", "new")
    work = tmp_path / "work"

    assert bench.source_dir(work, bench.Config("after"), repo=repo) == repo
    before = bench.Config("before", {}, old[:7])
    where = bench.source_dir(work, before, repo=repo)
    assert where == work / "before-src"
    assert (where / "code.py").read_text() == "OLD = True\n"
    # resuming reuses it; a worktree at another commit is refused, not measured
    assert bench.source_dir(work, before, repo=repo) == where
    with pytest.raises(SystemExit, match="not HEAD"):
        bench.source_dir(work, bench.Config("before", {}, "HEAD"), repo=repo)
    with pytest.raises(SystemExit, match="no-such-ref"):
        bench.source_dir(work, bench.Config("other", {}, "no-such-ref"), repo=repo)


def write_rows(
    work: Path, name: str, pipeline: str, rows: list[tuple[str, float, float, str]]
) -> None:
    """An arm's run directory under ``work``: one row (id, seconds, F1, prediction) a question."""
    out = work / name / pipeline
    out.mkdir(parents=True)
    (out / "details.jsonl").write_text(
        "".join(
            f'{{"id": "{i}", "seconds": {s}, "f1": {f}, "prediction": "{p}"}}\n'
            for i, s, f, p in rows
        )
    )


def test_report_pairs_each_arm_with_the_first(bench: ModuleType, tmp_path: Path) -> None:
    write_rows(tmp_path, "before", "full", [("a", 40.0, 1.0, "Tulsa"), ("b", 60.0, 0.0, "x")])
    write_rows(tmp_path, "after", "full", [("a", 20.0, 1.0, "tulsa"), ("b", 20.0, 0.5, "y")])
    configs = [bench.Config("before", {}, "799ade1"), bench.Config("after")]
    # an arm with no rows for the pipeline (it measured another one) is not a row of zeros
    result = bench.report(tmp_path, [*configs, bench.Config("hybrid-only")], ["full"])
    assert list(result["pipelines"]["full"]) == ["before", "after"]
    after = result["pipelines"]["full"]["after"]["vs_before"]
    assert after["paired"] == 2
    assert after["median_speedup"] == 2.5  # ratios 2 and 3
    assert after["total_speedup"] == 2.5
    assert after["f1_diff"] == 25.0
    assert after["identical_answers"] == 0.5
    assert "the code of `799ade1`" in bench.markdown(result)


def test_an_arm_with_its_own_pipeline_is_paired_with_the_tables(
    bench: ModuleType, tmp_path: Path
) -> None:
    """``without/no-supplement`` sits in the ``full`` table, read from its own pipeline's rows,
    with the paired interval and W/L/T of its F1 against the first arm."""
    write_rows(
        tmp_path,
        "with",
        "full",
        [("a", 60.0, 1.0, "Tulsa"), ("b", 50.0, 0.0, "x"), ("c", 40.0, 0.5, "y")],
    )
    write_rows(
        tmp_path,
        "without",
        "no-supplement",
        [("a", 30.0, 1.0, "Tulsa"), ("b", 25.0, 1.0, "z"), ("c", 20.0, 0.0, "w")],
    )
    configs = [bench.Config("with"), bench.parse_config("without/no-supplement:")]
    result = bench.report(tmp_path, configs, ["full"])
    vs = result["pipelines"]["full"]["without"]["vs_with"]
    assert vs["paired"] == 3 and vs["median_speedup"] == 2.0
    assert vs["f1_diff"] == 16.7  # +1, -0.5, 0 over three questions
    assert vs["f1_wlt"] == "1/1/1"
    assert vs["f1_gain"].startswith("+16.7 [")
    text = bench.markdown(result)
    assert "running `no-supplement` in each table" in text
    assert "| without | 3 |" in text and "1/1/1" in text
