"""Replaying the answer step's no-call rules on recorded rows (made-up films and people)."""

from __future__ import annotations

import json
from pathlib import Path

from evals.replay import replay_markdown, replayed_prediction


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


def test_the_markdown_scores_recorded_and_replayed_answers(tmp_path: Path) -> None:
    run = tmp_path / "v3" / "full"
    run.mkdir(parents=True)
    rows = [COMPARISON, CHAIN, RAG]
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = replay_markdown([run])
    assert "| v3/full | 3 | 0.0 | 0.0 | 66.7 | 66.7 | 2 |" in text
    assert "'Bram Okafor' -> 'The Salt Road'" in text
