"""``hoptree eval compare`` with the paired sections: run directories made here from rows (no
model), compared question by question below the means table, with the hop recall column and
the gains chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evals.cli import eval_app
from evals.compare import compare_columns, comparison_rows, with_hop_recall
from tests.eval_script import finished_run

runner = CliRunner()
SHA = "ab" * 32
PNG = b"\x89PNG\r\n\x1a\n"
KINDS = ["bridge"] * 8 + ["comparison"] * 4


def write_run(
    root: Path,
    name: str,
    f1: list[float],
    *,
    pipeline: str | None = None,
    sha: str = SHA,
    hop_recall: list[float | None] | None = None,
) -> Path:
    """A finished run directory: rows with the fields compare reads, and their means."""
    rows: list[dict[str, Any]] = []
    for i, (kind, value) in enumerate(zip(KINDS, f1, strict=False)):
        exact = 1.0 if value == 1.0 else 0.0
        row = {"id": f"q{i:02d}", "type": kind, "f1": value, "em": exact, "acc": exact}
        row |= {"gold_recall": 1.0, "retrieval_success": exact, "llm_calls": 1, "seconds": 1.0}
        if hop_recall is not None:
            row["hop_recall"] = hop_recall[i]
        rows.append(row)
    return finished_run(root, name, rows, sha=sha, pipeline=pipeline)


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    """Twelve questions: bm25 F1 25, hybrid 33.3, full 58.3 (hop recall defined on 10 of 12),
    the oracle 83.3, the floor 8.3."""
    root = tmp_path / "runs"
    return [
        write_run(root, "bm25", [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        write_run(root, "hybrid", [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
        write_run(
            root,
            "full",
            [1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0],
            hop_recall=[1, 1, 1, 1, 0.5, 0.5, 0, 0, 1, 1, None, None],
        ),
        write_run(root, "oracle", [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0]),
        write_run(root, "no-retrieval", [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    ]


def compare(*args: str) -> Any:
    result = runner.invoke(eval_app, ["compare", *args], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result


def test_compare_writes_the_paired_sections_below_the_table_and_a_gains_chart(
    runs: list[Path], tmp_path: Path
) -> None:
    markdown, plot = tmp_path / "out" / "compare.md", tmp_path / "out" / "compare.png"
    args = [*map(str, runs), "--markdown", str(markdown), "--plot", str(plot)]
    result = compare(*args, "--resamples", "1000", "--seed", "3")
    assert "paired gains over hybrid on 12 shared questions" in result.output
    text = markdown.read_text()
    lines = text.splitlines()
    assert lines[0].startswith("| run | dataset | setting | n | EM | F1 | Acc | Retrieval success")
    assert "| Gold recall | Hop recall | LLM calls/q |" in lines[0]
    assert "| 100.00 | 70.00 (10 of 12) | 1.00 |" in lines[4]  # full: gold, hop recall, calls
    assert "| 100.00 | n/a | 1.00 |" in lines[2]  # bm25 records no hop recall
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == [
        "## Paired gains (95% bootstrap CI, 1000 resamples, seed 3)",
        "## Headroom",
        "## By question type",
    ]
    assert "Each run minus `hybrid` (the best one-call RAG run" in text
    # (58.3 - 33.3) / (83.3 - 33.3): half the gap from the best one-call run to the oracle
    assert "| full | agent | 58.3 | +25.0 [" in text and "| 3/0/9 | 50.0% |" in text
    assert "| bridge | 8 | 37.5 | 50.0 | 75.0 | 100.0 | 12.5 |" in text
    assert "Note:" not in text
    assert plot.read_bytes()[:8] == PNG
    assert (tmp_path / "out" / "compare-gains.png").read_bytes()[:8] == PNG

    compare(*args, "--resamples", "1000", "--seed", "3")
    assert markdown.read_text() == text  # seeded: the report regenerates byte-identical
    compare(*args, "--resamples", "1000", "--seed", "4")
    assert "1000 resamples, seed 4" in markdown.read_text()


def test_runs_over_different_files_keep_todays_comparison(runs: list[Path], tmp_path: Path) -> None:
    other = write_run(tmp_path / "elsewhere", "bm25", [0, 1] * 6, sha="cd" * 32)
    markdown = tmp_path / "c.md"
    result = compare(str(runs[1]), str(other), "--markdown", str(markdown))
    text = markdown.read_text()
    assert "## " not in text and "paired gains" not in result.output
    assert "Hop recall" not in text  # neither run's rows record it
    assert "the runs differ in datasets" in text


def test_a_run_without_rows_keeps_its_row_in_the_table_and_loses_only_the_pairing(
    runs: list[Path], tmp_path: Path
) -> None:
    (runs[0] / "details.jsonl").unlink()
    markdown = tmp_path / "c.md"
    result = compare(str(runs[0]), str(runs[2]), "--markdown", str(markdown))
    assert "no paired statistics: no readable details.jsonl for bm25" in result.output
    text = markdown.read_text()
    assert text.splitlines()[2].startswith("| bm25 |") and "## Paired gains" not in text


def test_common_questions_rescore_hop_recall_with_the_means(
    runs: list[Path], tmp_path: Path
) -> None:
    short = write_run(tmp_path / "short", "bm25", [1, 1, 0, 0])  # the first four questions
    markdown = tmp_path / "c.md"
    compare(str(short), str(runs[2]), "--common", "--markdown", str(markdown))
    text = markdown.read_text()
    assert "| 100.00 | 100.00 | 1.00 |" in text.splitlines()[3]  # full's hop recall on q0-q3
    assert "On the 4 questions every run finished" in text
    assert "| full | agent | 4 | +50.0 [" in text


def test_compare_refuses_a_bootstrap_without_resamples(runs: list[Path]) -> None:
    result = runner.invoke(eval_app, ["compare", *map(str, runs), "--resamples", "0"])
    assert result.exit_code == 2 and "--resamples must be >= 1" in result.output


def test_hop_recall_is_a_mean_over_the_rows_that_define_it() -> None:
    rows = [{"hop_recall": 1.0}, {"hop_recall": 0.5}, {"hop_recall": None}, {}]
    metrics = with_hop_recall({"n": 4}, rows)
    assert (metrics["hop_recall"], metrics["hop_recall_n"]) == (75.0, 2)
    assert with_hop_recall({"n": 1}, [{"f1": 1.0}]) == {"n": 1}  # rows from before the field
    none = with_hop_recall({"n": 1}, [{"hop_recall": None}])
    columns = [key for key, _ in compare_columns([(Path("a"), none)])]
    assert "hop_recall" not in columns  # recorded, but defined nowhere: nothing to show
    runs = [(Path("a"), {**metrics, "pipeline": "full"}), (Path("b"), {**none, "pipeline": "x"})]
    at = [key for key, _ in compare_columns(runs)].index("hop_recall") + 1
    assert [row[at] for row in comparison_rows(runs)] == ["75.00 (2 of 4)", "n/a"]
