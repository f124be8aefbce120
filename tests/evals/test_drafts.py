"""Draft first in a run's metrics, its report and ``hoptree eval compare``: the escalation rate
and the time to the first answer, from synthetic rows shaped as ``evals.pipelines.draft_record``
writes them (no model); runs without drafts gain nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evals.aggregate import aggregate
from evals.cli import eval_app
from evals.compare import DRAFT_COLUMNS, compare_columns, load_comparison
from evals.drafts import draft_means, escalated, first_answer_seconds, percentile
from evals.report import report_markdown
from tests.eval_script import finished_run

runner = CliRunner()
SHA = "cd" * 32


def row(qid: str, f1: float, seconds: float, **planner: Any) -> dict[str, Any]:
    exact = 1.0 if f1 == 1.0 else 0.0
    out: dict[str, Any] = {"id": qid, "type": "bridge", "f1": f1, "em": exact, "acc": exact}
    out |= {"retrieval_success": exact, "gold_recall": 1.0, "llm_calls": 1, "seconds": seconds}
    if planner:
        out["planner"] = {"rounds": 1, "stopped": "answered", "sub_queries": [], **planner}
    return out


def drafted(qid: str, f1: float, seconds: float, first: float, escalate: bool) -> dict[str, Any]:
    """A draft-first row: the draft came after ``first`` seconds, the row took ``seconds``."""
    draft = {
        "short_answer": "x",
        "seconds": first,
        "signals": {"shape": "single", "supported": True, "weak": False},
        "decision": {"escalate": escalate, "reason": "r", "policy": "fitted"},
        "citation_ids": ["p1"],
    }
    choice = {"source": "plan" if escalate else "draft", "reason": "r"}
    return row(qid, f1, seconds, draft=draft, final_choice=choice, first_answer_s=first)


# ten draft-first rows: 3 escalated (the slow ones); first answers 1..10 s
DRAFT_ROWS = [
    drafted(f"q{i}", 1.0 if i % 2 else 0.5, 40.0 if i >= 8 else float(i), float(i), i >= 8)
    for i in range(1, 11)
]
# the same questions answered by the planner alone: no draft, 30..39 s each
FULL_ROWS = [row(f"q{i}", 0.5, 29.0 + i, sub_queries=[]) for i in range(1, 11)]


def test_draft_means_count_escalations_and_take_first_answer_percentiles() -> None:
    means = draft_means(DRAFT_ROWS)
    assert means["draft_recorded_n"] == 10
    assert means["escalated_n"] == 3
    assert means["escalation_rate"] == 30.0
    # 1..10 s: median 5.5, p90 linear between 9 and 10 at rank 8.1 -> 9.1
    assert means["first_answer_s_median"] == 5.5
    assert means["first_answer_s_p90"] == 9.1
    assert percentile([], 50) is None


def test_a_row_without_a_draft_answers_first_when_it_finishes() -> None:
    assert escalated(FULL_ROWS[0]) is None
    assert first_answer_seconds(FULL_ROWS[0]) == 30.0
    failed = {"id": "x", "seconds": 12.5, "error": "boom"}
    assert first_answer_seconds(failed) == 12.5
    # a decision without "escalate" is a draft that stood
    assert escalated(row("q", 1.0, 2.0, draft={"decision": {}}, first_answer_s=2.0)) is False


def test_runs_without_drafts_get_no_draft_metrics_and_no_report_line() -> None:
    metrics = aggregate(FULL_ROWS)
    assert not any(key in metrics for key in ("escalation_rate", "first_answer_s_median"))
    assert "Draft first" not in report_markdown({**metrics, "pipeline": "full"}, plot_name=None)


def test_a_draft_run_reports_its_escalations_and_first_answer() -> None:
    metrics = {**aggregate(DRAFT_ROWS), "pipeline": "draft-first"}
    assert metrics["escalation_rate"] == 30.0
    text = report_markdown(metrics, plot_name=None)
    assert "the router ran the planner after 3 of 10 drafts (30.0%)" in text
    assert "first answer came after 5.5 s (median), 9.1 s (90th percentile)" in text


def write_run(root: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    return finished_run(root, name, rows, sha=SHA)


def _table(text: str) -> dict[str, dict[str, str]]:
    """The means table of a comparison's markdown: run -> column -> cell."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    table = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(header):
            break
        table[cells[0]] = dict(zip(header, cells, strict=True))
    return table


def test_compare_shows_the_draft_columns_when_a_draft_run_is_compared(tmp_path: Path) -> None:
    full = write_run(tmp_path, "full", FULL_ROWS)
    draft = write_run(tmp_path, "draft-first", DRAFT_ROWS)
    markdown = tmp_path / "compare.md"
    args = ["compare", str(full), str(draft), "--markdown", str(markdown)]
    result = runner.invoke(eval_app, args)
    assert result.exit_code == 0, result.output
    table = _table(markdown.read_text())
    assert table["draft-first"]["escalated %"] == "30.0"
    assert table["draft-first"]["first answer s"] == "5.5"
    assert table["draft-first"]["first answer s p90"] == "9.1"
    # the planner alone has no draft: no rate, and its first answer is its only one (30..39 s)
    assert table["full"]["escalated %"] == "-"
    assert table["full"]["first answer s"] == "34.5"
    assert table["full"]["first answer s p90"] == "38.1"
    assert "escalated" in result.output  # the terminal table has the columns too


def test_common_questions_rescore_the_first_answer(tmp_path: Path) -> None:
    full = write_run(tmp_path, "full", FULL_ROWS[:4])
    draft = write_run(tmp_path, "draft-first", DRAFT_ROWS)
    comparison = load_comparison([full, draft], common=True, resamples=200, seed=0)
    metrics = dict((path.name, m) for path, m in comparison.runs)
    # only q1..q4 are shared: first answers 1..4 s, none escalated
    assert metrics["draft-first"]["first_answer_s_median"] == 2.5
    assert metrics["draft-first"]["escalation_rate"] == 0.0
    assert metrics["full"]["first_answer_s_median"] == 31.5


def test_compare_without_a_draft_run_reads_as_before(tmp_path: Path) -> None:
    full = write_run(tmp_path, "full", FULL_ROWS)
    other = write_run(tmp_path, "no-supplement", FULL_ROWS)
    comparison = load_comparison([full, other], common=False, resamples=200, seed=0)
    columns = compare_columns(comparison.runs)
    assert not set(DRAFT_COLUMNS) & set(columns)
    assert "first answer" not in comparison.markdown()
