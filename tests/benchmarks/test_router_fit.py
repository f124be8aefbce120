"""``benchmarks/router_fit.py`` on tiny synthetic rows: pairing a one-call row with its ``full``
row, the plan's outcome, a rule's escalation rate, F1 and seconds, the fitting criterion, and
the report from the repository's recorded rows without the question files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.checks.citations import SourceText
from agent.checks.escalation import FITTED, Policy
from tests.benchmark_module import load_benchmark

rf = load_benchmark("router_fit")

CHOICE = "Which band formed first, Tinted Windows or Hanson?"
CHAIN = "The band who released the debut album Tinted Windows first played in what city?"
SINGLE = "What year was Hanson formed?"


def draft_row(qid: str, question: str, prediction: str, f1: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "answers": [extra.pop("gold", prediction)],
        "prediction": prediction,
        "f1": f1,
        "seconds": 10.0,
        "retrieved_titles": extra.pop("titles", []),
        **extra,
    }


def plan_row(
    qid: str, question: str, prediction: str, f1: float, *, resolved: bool, grounded: bool = True
) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "prediction": prediction,
        "f1": f1,
        "seconds": 100.0,
        "steps": {"answer": {"prompt_ms": 15000.0, "decode_ms": 5000.0}},
        "planner": {
            "sub_queries": [
                {
                    "id": "q1",
                    "query": "band of Tinted Windows",
                    "answered": resolved,
                    "finding": "x",
                }
            ],
            "citation_check": {"plan_resolved": resolved, "short_answer_grounded": grounded},
        },
    }


def shown_all(row: dict[str, Any]) -> list[SourceText]:
    """Every draft's answer is in its passages (a supported draft)."""
    return [SourceText(1, "T", f"{row['question']} The answer is {row['prediction']}.")]


def pairs_of(rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Any]:
    drafts = {d["id"]: d for d, _ in rows}
    plans = {p["id"]: p for _, p in rows}
    return rf.pair_rows(drafts, plans, shown_all)


def test_plan_kind_reads_the_row() -> None:
    assert rf.plan_kind(plan_row("a", CHAIN, "Tulsa", 1.0, resolved=True)) == ("resolved", True)
    open_ = plan_row("a", CHAIN, "Tulsa", 1.0, resolved=False, grounded=False)
    assert rf.plan_kind(open_) == ("open", False)
    compared = plan_row("b", CHOICE, "Tinted Windows", 1.0, resolved=True)
    compared["planner"]["sub_queries"] = [
        {"id": "q1", "query": "Tinted Windows formed", "answered": True, "finding": "2009"},
        {"id": "q2", "query": "Hanson formed", "answered": True, "finding": "1992"},
    ]
    assert rf.plan_kind(compared)[0] == "comparison"


def test_pairs_are_the_questions_both_runs_answered() -> None:
    drafts = {"a": draft_row("a", CHAIN, "Tulsa", 1.0), "b": draft_row("b", SINGLE, "1992", 1.0)}
    plans = {"a": plan_row("a", CHAIN, "Tulsa", 1.0, resolved=True)}
    [pair] = rf.pair_rows(drafts, plans, shown_all)
    assert pair.id == "a" and pair.signals.shape == "chain" and pair.signals.supported
    assert pair.plan_answer_s == 20.0


def test_a_rule_is_measured_on_its_escalations() -> None:
    pairs = pairs_of(
        [
            # a chain: the plan resolves right where the draft is wrong
            (
                draft_row("a", CHAIN, "Chicago", 0.0, gold="Tulsa"),
                plan_row("a", CHAIN, "Tulsa", 1.0, resolved=True),
            ),
            # a single fact: the draft is right, the plan's open re-read wrong
            (
                draft_row("b", SINGLE, "1992", 1.0),
                plan_row("b", SINGLE, "1993", 0.0, resolved=False),
            ),
        ]
    )
    fitted = rf.measure(pairs, "fitted", rf.Rule(FITTED))
    assert fitted.escalated == 1
    assert fitted.f1_draft_first == 100.0  # the chain's answer, the single fact's draft
    assert fitted.vs_full.mean == pytest.approx(50.0)
    assert fitted.median_s == pytest.approx((110.0 + 10.0) / 2)
    never = rf.measure(pairs, "never", rf.Rule(Policy("never")))
    assert never.escalated == 0 and never.f1_draft_first == 50.0
    always = rf.measure(pairs, "always", rf.Rule(Policy("always")))
    assert always.f1_full_where == 50.0  # today's planner: the wrong re-read of b
    assert always.f1_draft_first == 100.0  # draft-first: b's open plan keeps the draft
    assert always.median_s_draft_first == pytest.approx((110.0 + 90.0) / 2)


def test_the_final_choice_counts_only_disagreements() -> None:
    pairs = pairs_of(
        [
            (
                draft_row("a", CHAIN, "Chicago", 0.0, gold="Tulsa"),
                plan_row("a", CHAIN, "Tulsa", 1.0, resolved=True),
            ),
            (
                draft_row("b", CHAIN, "Tulsa", 1.0),
                plan_row("b", CHAIN, "Tulsa", 1.0, resolved=True),
            ),
            (draft_row("c", CHAIN, "Tulsa", 1.0), plan_row("c", CHAIN, "Ada", 0.0, resolved=False)),
        ]
    )
    assert [p.id for p in rf.disagreements(pairs)] == ["a"]
    [_, _, row] = rf.final_choice_table({"s": pairs})
    assert row.startswith("| s | 1 | 1 | 1 | 100.0 | 0.0 | 0.0 | 100.0 |")


def test_fit_takes_the_fewest_escalations_within_the_bound() -> None:
    pairs = pairs_of(
        [
            (
                draft_row(f"c{i}", CHAIN, "Chicago", 0.0, gold="Tulsa"),
                plan_row(f"c{i}", CHAIN, "Tulsa", 1.0, resolved=True),
            )
            for i in range(4)
        ]
        + [
            (
                draft_row(f"s{i}", SINGLE, "1992", 1.0),
                plan_row(f"s{i}", SINGLE, "1992", 1.0, resolved=False),
            )
            for i in range(4)
        ]
    )
    outcomes = [rf.measure(pairs, rule, policy) for rule, policy in rf.RULES.items()]
    chosen = next(o for o in outcomes if o.rule == rf.fit(outcomes))
    assert (chosen.escalated, chosen.f1_draft_first) == (4, 100.0)  # the chains, nothing lost
    # when every rule loses, the planner runs on every question
    losing = [o for o in outcomes if o.rule in ("never (draft only)", "choice")]
    assert rf.fit(losing) == "always (plan every question)"


def test_passages_are_rebuilt_from_the_question_file(tmp_path: Path) -> None:
    record = {
        "_id": "a",
        "question": CHAIN,
        "answer": "Tulsa",
        "supporting_facts": [["Tinted Windows (band)", 0]],
        "context": [["Tinted Windows (band)", ["The band first played in Tulsa."]]],
    }
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    shown = rf.passages_from_file(path, 350, 5)
    row = draft_row("a", CHAIN, "Tulsa", 1.0, titles=["Tinted Windows (band)", "Nowhere"])
    assert shown(row) == [SourceText(1, "Tinted Windows (band)", "The band first played in Tulsa.")]


def test_the_report_runs_on_the_recorded_rows_without_question_files(tmp_path: Path) -> None:
    out = tmp_path / "router.md"
    assert rf.main(["--data", str(tmp_path / "no-data"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "## Tuning slice `tune/hotpotqa`" in text
    assert "Replay estimate on the report slices" in text
    assert "Question files not found" in text
    estimates = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert set(estimates) == {"hotpotqa_b", "2wiki", "musique"}
    assert all(e["replay_estimate"] and 0 <= e["escalated"] <= 1 for e in estimates.values())
    assert estimates["2wiki"]["ci_low"] <= estimates["2wiki"]["f1_delta"]
