"""Replaying the answer step's no-call rules on recorded rows (made-up films and people)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.checks.chains import chain_end
from evals.replay import replay_markdown, replayed_prediction, row_plan


def sub(query: str, finding: str | None, needs: tuple[str, ...] = ()) -> dict:
    return {
        "query": query,
        "answered": finding is not None,
        "finding": finding or "",
        "needs": list(needs),
        "replaces": None,
    }


COMPARISON = {
    "id": "c1",
    "question": "Which film has the director born first, Harbour Lights or The Salt Road?",
    "answers": ["The Salt Road"],
    "prediction": "Bram Okafor",  # the reader named a director
    "planner": {
        "sub_queries": [
            sub("director of Harbour Lights", "Ada Quill"),
            sub("director of The Salt Road", "Bram Okafor"),
            sub("birth date of Ada Quill", "4 May 1911", ("q1",)),
            sub("birth date of Bram Okafor", "June 2, 1898", ("q2",)),
        ]
    },
}
CHAIN = {
    "id": "b1",
    "question": "Which river flows through the city where the Glass Tower stands?",
    "answers": ["Vell"],
    "prediction": "Orsk",  # the bridge city
    "planner": {
        "sub_queries": [
            sub("city where the Glass Tower stands", "Orsk"),
            sub("river that flows through Orsk", "Vell", ("q1",)),
        ]
    },
}
RAG = {"id": "r1", "question": "Who?", "answers": ["x"], "prediction": "y"}


def test_the_rules_move_a_bridge_answer_and_compute_a_comparison() -> None:
    assert replayed_prediction(COMPARISON) == "The Salt Road"
    assert replayed_prediction(CHAIN) == "Vell"
    assert replayed_prediction(RAG) == "y"  # no planner record: nothing to replay


def test_a_yes_to_a_wh_question_gives_way_to_the_readers_answer_or_the_draft() -> None:
    hops = [
        sub("place where the fight occurred", "Orsk"),
        sub("expedition in Orsk", "Yes", ("q1",)),
    ]
    row = {
        "id": "y1",
        "question": "Who led the expedition in the place where the fight occurred?",
        "answers": ["Ida Venn"],
        "prediction": "Yes",
        "planner": {
            "sub_queries": hops,
            "citation_check": {"chain_end": "Yes", "short_answer_written": "Ida Venn"},
            "draft": {"short_answer": "Orsk"},
        },
    }
    assert replayed_prediction(row) == "Ida Venn"  # the chain ended on "Yes" over the reader
    read_yes = {**row, "planner": {**row["planner"], "citation_check": {}}}
    assert replayed_prediction(read_yes) == "Orsk"  # the reader wrote "Yes": the draft stands
    asked = {**read_yes, "question": "Did Ida Venn lead the expedition?"}
    assert replayed_prediction(asked) == "Yes"  # a yes/no question keeps it


def test_the_markdown_scores_recorded_and_replayed_answers(tmp_path: Path) -> None:
    run = tmp_path / "v3" / "full"
    run.mkdir(parents=True)
    rows = [COMPARISON, CHAIN, RAG]
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = replay_markdown([run])
    assert "| v3/full | 3 | 0.0 | 0.0 | 66.7 | 66.7 | 2 |" in text
    assert "'Bram Okafor' -> 'The Salt Road'" in text


def test_a_row_is_read_back_as_the_plan_its_answer_step_read() -> None:
    """Ids fall back to plan order; a hop of round 0 waited and was never searched, so it is no
    hop of the plan (``Plan.hops``) and the plan is not resolved."""
    held = {**sub("river that flows through #1", None, ("q1",)), "id": "q2", "round": 0}
    row = {
        **CHAIN,
        "planner": {"sub_queries": [sub("city where the Glass Tower stands", "Orsk"), held]},
    }
    plan = row_plan(row)
    assert list(plan.sub_queries) == ["q1", "q2"] and plan.waiting == ("q2",)
    assert [(h.id, h.answer) for h in plan.hops()] == [("q1", "Orsk")]
    assert plan.found_everything() is False and not plan.resolved()
    assert plan.hops() == row_plan(CHAIN).hops()[:1]


def test_a_follow_ups_span_supersedes_the_query_it_asked_again() -> None:
    follow = {**sub("city of the Glass Tower", "Orsk"), "id": "q3", "replaces": "q1"}
    row = {**CHAIN, "planner": {"sub_queries": [
        {**sub("city where the Glass Tower stands", None), "id": "q1"},
        {**sub("river that flows through #1", "Vell", ("q1",)), "id": "q2"},
        follow,
    ]}}  # fmt: skip
    plan = row_plan(row)
    assert plan.findings["q1"]["superseded_by"] == "q3" and plan.answer_of("q1") == "Orsk"
    assert [h.id for h in plan.hops() if h.superseded] == ["q1"]
    # the follow-up stands for q1
    assert chain_end(plan.hops(), asks_when=plan.question.asks_when) == "Vell"
    # answered with passages and no span (the findings step ablated) is no finding
    ablated = {
        **row,
        "planner": {"sub_queries": [{**s, "finding": ""} for s in row["planner"]["sub_queries"]]},
    }
    assert row_plan(ablated).supported_findings() == []
    assert row_plan(ablated).findings["q1"]["superseded_by"] is None
