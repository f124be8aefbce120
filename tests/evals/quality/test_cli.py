"""``hoptree eval`` with QuALITY files: pipelines listed, bad options refused before any model
starts, and ``quality-report`` over run directories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent.settings import Settings
from evals.cli import eval_app
from evals.pipelines import EvalContext
from evals.quality.runner import run_quality
from evals.run_directory import RunConfig
from tests.quality_chat import TINY, quality_chat

runner = CliRunner()


def test_pipelines_lists_the_quality_pipelines() -> None:
    result = runner.invoke(eval_app, ["pipelines"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "pipelines for QuALITY files" in result.output
    for name in ("leaves", "tree-gmm", "tree-leiden"):
        assert name in result.output


def test_run_refuses_bad_options_for_a_quality_file_before_any_model(tmp_path: Path) -> None:
    for args, message in (
        (["--pipeline", "dense"], "unknown pipeline 'dense' for a QuALITY file"),
        (["--pipeline", "leaves", "--setting", "distractor"], "--setting does not apply"),
        (["--pipeline", "leaves", "--type", "inference"], "--type does not apply"),
        (["--pipeline", "leaves", "--context-tokens", "50"], "--context-tokens must be >= 100"),
        (["--pipeline", "leaves", "--tree-option", "max_words=50"], "builds no tree"),
        (["--pipeline", "tree-gmm", "--tree-option", "base_k=5"], "unknown tree option(s) for gmm"),
        (["--pipeline", "tree-leiden", "--tree-option", "base_k"], "expected KEY=VALUE"),
        (["--pipeline", "tree-leiden", "--tree-option", "leaves=sentences"], "leaves must be"),
    ):
        result = runner.invoke(
            eval_app,
            ["run", "--dataset", str(TINY), "--out", str(tmp_path / "run"), *args],
            terminal_width=200,
        )
        assert result.exit_code == 2, result.output
        assert message in result.output
    assert not (tmp_path / "run").exists()
    hotpot = tmp_path / "hotpot.jsonl"
    hotpot.write_text('{"_id": "q1", "question": "Who?", "answer": "x", "context": []}\n')
    result = runner.invoke(
        eval_app,
        ["run", "--dataset", str(hotpot), "--out", str(tmp_path / "h"), "--pipeline", "bm25",
         "--tree-option", "max_words=50"],
        terminal_width=200,
    )  # fmt: skip
    assert result.exit_code == 2 and "--tree-option applies to QuALITY runs only" in result.output


async def test_quality_report_prints_and_writes_the_comparison(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    dirs = []
    for pipeline in ("leaves", "bm25"):
        out = tmp_path / pipeline
        ctx = EvalContext(
            chat=quality_chat(), settings=settings, embeddings=embeddings, model_label="scripted"
        )
        await run_quality(RunConfig(dataset=TINY, pipeline=pipeline, out=out), ctx, progress=False)
        dirs.append(out)
    markdown, plot = tmp_path / "q.md", tmp_path / "q.png"
    result = runner.invoke(
        eval_app,
        ["quality-report", *map(str, dirs), "--markdown", str(markdown), "--plot", str(plot)],
    )
    assert result.exit_code == 0, result.output
    assert "# QuALITY: 2 pipelines on the same 4 questions" in result.output
    assert "| bm25 | 4 | 50.0 | 50.0 (2) |" in result.output
    assert markdown.read_text() == result.output and plot.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(eval_app, ["quality-report", str(tmp_path / "missing")])
    assert bad.exit_code == 2 and "no metrics.json" in bad.output
