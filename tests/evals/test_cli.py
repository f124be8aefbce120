"""``hoptree eval``: mounted through the ``hoptree.commands`` entry point, ``compare`` over run
directories, and ``run`` refusing bad input before any model starts."""

from __future__ import annotations

import json
import logging
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import agent.cli.plugins as cli_plugins
from agent.settings import Settings
from evals.cli import eval_app
from evals.pipelines import EvalContext
from evals.report import ReportError, parse_details, read_details
from evals.run_directory import RunConfig
from evals.runner import run_eval
from tests.eval_script import TINY, scripted_chat

runner = CliRunner()


@pytest.fixture
async def two_runs(settings: Settings, embeddings: Any, tmp_path: Path) -> list[Path]:
    """A bm25 and a closed-book run over the tiny file (scripted chat model)."""
    dirs = []
    for pipeline in ("bm25", "no-retrieval"):
        out = tmp_path / pipeline
        ctx = EvalContext(
            chat=scripted_chat(), settings=settings, embeddings=embeddings, model_label="scripted"
        )
        await run_eval(RunConfig(dataset=TINY, pipeline=pipeline, out=out), ctx)
        dirs.append(out)
    return dirs


def test_compare_prints_one_table_and_writes_markdown_and_a_chart(
    two_runs: list[Path], tmp_path: Path
) -> None:
    markdown = tmp_path / "cmp" / "compare.md"
    plot = tmp_path / "cmp" / "compare.png"
    result = runner.invoke(
        eval_app,
        ["compare", *map(str, two_runs), "--markdown", str(markdown), "--plot", str(plot)],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert "bm25" in result.output and "no-retrieval" in result.output
    assert "66.67" in result.output  # both score 2 of 3 with the scripted answers
    text = markdown.read_text()
    lines = text.splitlines()
    assert lines[0].startswith("| run | dataset | setting | n | EM | F1 | Acc | Retrieval success")
    assert lines[2].startswith("| bm25 | eval_tiny_hotpot.jsonl | open | 3 | 66.67 |")
    assert lines[3].startswith("| no-retrieval |") and "Note:" not in text
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_names_duplicate_pipelines_by_directory_and_warns_about_unfair_pairs(
    two_runs: list[Path], tmp_path: Path
) -> None:
    copy = tmp_path / "bm25-again"
    copy.mkdir()
    metrics = json.loads((two_runs[0] / "metrics.json").read_text())
    metrics.update(n=2, setting="distractor")
    (copy / "metrics.json").write_text(json.dumps(metrics))
    markdown = tmp_path / "c.md"
    result = runner.invoke(
        eval_app, ["compare", str(two_runs[0]), str(copy), "--markdown", str(markdown)]
    )
    assert result.exit_code == 0, result.output
    text = markdown.read_text()
    assert "| bm25 (bm25) |" in text and "| bm25 (bm25-again) |" in text
    assert "the runs differ in settings" in text and "the runs differ in sizes" in text


async def test_compare_common_scores_every_run_on_the_questions_all_finished(
    two_runs: list[Path], settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    short = tmp_path / "bm25-first"
    ctx = EvalContext(
        chat=scripted_chat(), settings=settings, embeddings=embeddings, model_label="scripted"
    )
    await run_eval(RunConfig(dataset=TINY, pipeline="bm25", out=short, limit=1), ctx)
    markdown = tmp_path / "common.md"
    args = ["compare", str(short), str(two_runs[1]), "--markdown", str(markdown)]

    result = runner.invoke(eval_app, args)
    assert result.exit_code == 0, result.output
    assert "the runs differ in sizes" in markdown.read_text()  # 1 question against 3

    result = runner.invoke(eval_app, [*args, "--common"])
    assert result.exit_code == 0, result.output
    lines = markdown.read_text().splitlines()
    assert lines[2].startswith("| bm25 | eval_tiny_hotpot.jsonl | open | 1 |")
    assert lines[3].startswith("| no-retrieval | eval_tiny_hotpot.jsonl | open | 1 |")
    assert "Note:" not in markdown.read_text()


def test_compare_common_refuses_runs_over_different_files(two_runs: list[Path]) -> None:
    metrics = json.loads((two_runs[0] / "metrics.json").read_text())
    metrics["dataset_sha256"] = "0" * 64
    (two_runs[0] / "metrics.json").write_text(json.dumps(metrics))
    result = runner.invoke(eval_app, ["compare", *map(str, two_runs), "--common"])
    assert result.exit_code == 2 and "one dataset file" in result.output


def test_details_are_read_without_a_torn_tail_and_without_changing_the_file(
    tmp_path: Path,
) -> None:
    details = tmp_path / "details.jsonl"
    text = '{"id": "q1", "f1": 1.0}\n{"id": "q2", "f1": 0.0}\n{"id": "q1", "f1": 0.5}\n{"id": "q3'
    details.write_text(text)
    rows = read_details(tmp_path)
    assert [(r["id"], r["f1"]) for r in rows] == [("q1", 1.0), ("q2", 0.0)]
    assert details.read_text() == text  # a reader leaves the tail to the run that may own it
    assert parse_details(text.encode(), details)[1] == len('{"id": "q3')

    details.write_text('{"id": "q1"}\nnot json\n{"id": "q2"}\n')
    with pytest.raises(ReportError, match=r"details\.jsonl:2: malformed row"):
        read_details(tmp_path)
    details.write_text('{"id": "q1"}\n{"f1": 1.0}\n')
    with pytest.raises(ReportError, match=r"details\.jsonl:2: a row needs a string 'id'"):
        read_details(tmp_path)


def test_compare_refuses_a_directory_without_metrics(tmp_path: Path) -> None:
    result = runner.invoke(eval_app, ["compare", str(tmp_path)])
    assert result.exit_code == 2
    assert "no metrics.json" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "missing.jsonl", "--pipeline", "bm25"], "missing.jsonl: no such file"),
        (["--dataset", str(TINY), "--pipeline", "bm2"], "unknown pipeline 'bm2'"),
        (
            ["--dataset", str(TINY), "--pipeline", "bm25", "--format", "csv"],
            "unknown dataset format",
        ),
        (["--dataset", str(TINY), "--pipeline", "bm25", "--setting", "closed"], "unknown setting"),
        (["--dataset", str(TINY), "--pipeline", "bm25", "--concurrency", "0"], "concurrency"),
        (["--dataset", str(TINY), "--pipeline", "bm25", "--limit", "-1"], "limit must be"),
        (
            ["--dataset", str(TINY), "--pipeline", "bm25", "--index", "no-such-index"],
            "not an index directory",
        ),
    ],
)
def test_run_refuses_bad_input_before_any_model_starts(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.runtime.runtime

    def no_model(*_: Any, **__: Any) -> None:
        raise AssertionError("a model was started for bad input")

    monkeypatch.setattr(agent.runtime.runtime.Runtime, "__init__", no_model)
    result = runner.invoke(eval_app, ["run", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_metrics_only_rescores_without_starting_a_model(
    two_runs: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.runtime.runtime

    def no_model(*_: Any, **__: Any) -> None:
        raise AssertionError("--metrics-only started a model")

    monkeypatch.setattr(agent.runtime.runtime.Runtime, "__init__", no_model)
    bm25 = two_runs[0]
    (bm25 / "metrics.json").unlink()
    args = ["run", "--dataset", str(TINY), "--pipeline", "bm25", "--out", str(bm25)]
    result = runner.invoke(eval_app, [*args, "--metrics-only", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert json.loads((bm25 / "metrics.json").read_text())["n"] == 2
    # the wrong pipeline for the directory: refused, the metrics left as they are
    wrong = ["run", "--dataset", str(TINY), "--pipeline", "hybrid", "--out", str(bm25)]
    result = runner.invoke(eval_app, [*wrong, "--metrics-only"])
    assert result.exit_code == 2 and "holds another run" in result.output
    assert json.loads((bm25 / "metrics.json").read_text())["n"] == 2


def test_run_starts_the_models_runs_the_pipeline_and_prints_its_metrics(
    settings: Settings, embeddings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole ``eval run`` path (``evals.run_request``): settings from the environment, the
    chat model of a served endpoint (a scripted one on 127.0.0.1), the open index built, every
    question answered, the metrics printed and the report written; rerun, nothing is re-asked."""
    from tests.routed_endpoint import routed_endpoint

    chat = scripted_chat()
    with routed_endpoint(chat) as url:
        for name, value in {
            "HOPTREE_DATA_DIR": str(settings.data_dir),
            "HOPTREE_LLM__BASE_URL": url,
            "HOPTREE_LLM__MODEL": "scripted",
            "HOPTREE_LLM__API_KEY": "unused",
            "HOPTREE_LLM__MAX_RETRIES": "0",
            "HOPTREE_LLM__CACHE": "false",
        }.items():
            monkeypatch.setenv(name, value)
        out = tmp_path / "bm25"
        args = ["run", "--dataset", str(TINY), "--pipeline", "bm25", "--out", str(out)]
        result = runner.invoke(eval_app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        assert chat.count("rag_answer") == 3
        assert "bm25 (open, n=3)" in result.output and "66.67" in result.output
        assert (out / "report.md").is_file()
        assert json.loads((out / "metrics.json").read_text())["n"] == 3
        again = runner.invoke(eval_app, args, terminal_width=200)
        assert again.exit_code == 0, again.output
        assert chat.count("rag_answer") == 3  # the finished rows are kept


def test_the_eval_group_is_mounted_from_its_entry_point() -> None:
    app = typer.Typer()

    @app.command()
    def doctor() -> None:
        """a built-in command"""

    assert cli_plugins.mount_command_plugins(app) == ["eval"]
    result = runner.invoke(app, ["eval", "pipelines"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "full+tree" in result.output and "no-supplement" in result.output


def test_broken_and_clashing_plugins_are_skipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    group = cli_plugins.COMMAND_GROUP
    points = [
        EntryPoint("broken", "no_such_module_xyz:app", group),
        EntryPoint("notanapp", "json:dumps", group),
        EntryPoint("doctor", "evals.cli:eval_app", group),  # would shadow a built-in
        EntryPoint("eval", "evals.cli:eval_app", group),
    ]
    monkeypatch.setattr(cli_plugins, "entry_points", lambda group: points)
    app = typer.Typer()

    @app.command()
    def doctor() -> None:
        """a built-in command"""

    with caplog.at_level(logging.WARNING, logger="agent.cli.plugins"):
        assert cli_plugins.mount_command_plugins(app) == ["eval"]
    log = caplog.text
    assert "skipping command plugin broken" in log
    assert "skipping command plugin notanapp" in log and "not a typer.Typer" in log
    assert "skipping command plugin doctor" in log and "the name is taken" in log
