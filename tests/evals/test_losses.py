"""The loss classes of wrong answers, read from details rows."""

from __future__ import annotations

import json
from pathlib import Path

from evals.losses import classify, losses_markdown

GOLD = ["Tinted Windows (band)", "Tinted Windows (album)"]


def row(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "q",
        "em": 0.0,
        "f1": 0.0,
        "acc": 0.0,
        "error": None,
        "supporting_titles": GOLD,
        "retrieved_titles": [*GOLD, "Hanson (band)"],
    }
    return {**base, **fields}


def test_each_wrong_answer_falls_in_the_first_class_that_fits() -> None:
    assert classify(row(em=1.0, f1=1.0)) is None
    assert classify(row(f1=0.67)) == "wrong span"
    assert classify(row(retrieved_titles=["Hanson (band)", GOLD[0]])) == "gold not retrieved"
    planner = {"sources": [GOLD[0], "Hanson (band)"]}
    assert classify(row(planner=planner)) == "not in the answer's context"
    assert classify(row(planner={"sources": GOLD})) == "misread"
    assert classify(row()) == "misread"  # vanilla RAG: what it retrieved is what it read
    assert classify(row(error="boom")) == "failed"
    assert classify(row(supporting_titles=[])) == "unknown"


def test_the_table_counts_on_the_questions_every_run_finished(tmp_path: Path) -> None:
    a, b = tmp_path / "data" / "a", tmp_path / "data" / "b"
    for run, rows in (
        (a, [row(id="1", em=1.0), row(id="2", f1=0.5), row(id="3")]),
        (b, [row(id="1"), row(id="2", retrieved_titles=[])]),
    ):
        run.mkdir(parents=True)
        (run / "details.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    table = losses_markdown([a, b])
    assert "| data/a | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 |" in table
    assert "| data/b | 2 | 0 | 0 | 1 | 0 | 1 | 0 | 0 |" in table
