"""``evals.peer_wins`` on small synthetic rows: each question a peer won falls in the first class
that fits, questions it did not win in none, and the folders of a results tree are read as the
peers' tables read them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.peer_wins import CLASSES, classify_win, peer_wins, wins_markdown, wins_of

GOLD = ["Tulsa, Oklahoma", "Route 66"]


def ours(f1: float, draft: str | None = "Paris", read: tuple[str, ...] = ()) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "q",
        "answers": ["Tulsa"],
        "f1": f1,
        "supporting_titles": GOLD,
        "retrieved_titles": [*read, "Everything else"],
        "planner": {"sources": list(read)},
    }
    if draft is not None:
        row["planner"]["draft"] = {"short_answer": draft}
    return row


def theirs(f1: float, retrieved: tuple[str, ...] = GOLD) -> dict[str, Any]:
    return {"id": "q", "answers": ["Tulsa"], "f1": f1, "retrieved_titles": list(retrieved)}


def test_a_question_the_peer_did_not_win_has_no_class() -> None:
    assert classify_win(ours(1.0), theirs(1.0)) is None
    assert classify_win(ours(0.5), theirs(0.0)) is None


def test_a_right_draft_the_plan_changed_is_the_plans_loss() -> None:
    assert classify_win(ours(0.0, draft="Tulsa"), theirs(1.0)) == CLASSES[0]
    # a draft as wrong as the final answer is not the plan's loss
    assert classify_win(ours(0.0, draft="Paris", read=tuple(GOLD)), theirs(1.0)) == CLASSES[3]


def test_a_partly_right_answer_is_a_wrong_span_before_any_search_matter() -> None:
    assert classify_win(ours(0.4), theirs(1.0, retrieved=())) == CLASSES[1]


def test_a_gold_paragraph_only_the_peer_read_is_the_searchs_loss() -> None:
    # hoptree retrieved it but did not read it: it counts as not read
    row = ours(0.0, read=("Route 66",))
    row["retrieved_titles"] = list(GOLD)
    assert classify_win(row, theirs(1.0, retrieved=("Tulsa, Oklahoma",))) == CLASSES[2]
    # the peer read only gold that hoptree read too: a misreading
    assert classify_win(row, theirs(1.0, retrieved=("Route 66",))) == CLASSES[3]


def test_without_supporting_titles_the_search_cannot_be_told_apart() -> None:
    row = ours(0.0)
    row["supporting_titles"] = []
    assert classify_win(row, theirs(1.0)) == CLASSES[4]


def test_a_row_without_a_draft_is_classed_by_what_it_read() -> None:
    assert classify_win(ours(0.0, draft=None), theirs(1.0)) == CLASSES[2]


def _write(run: Path, rows: list[dict[str, Any]]) -> None:
    run.mkdir(parents=True)
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_wins_of_pairs_each_peer_folder_with_hoptrees_default_by_id(tmp_path: Path) -> None:
    folder = tmp_path / "fresh" / "2wiki"
    _write(
        folder / "draft-first",
        [
            {**ours(0.0, draft="Tulsa"), "id": "a"},
            {**ours(1.0), "id": "b"},
            {**ours(0.0), "id": "c"},
        ],
    )
    _write(folder / "peer-ircot", [{**theirs(1.0), "id": i} for i in ("a", "b", "c", "z")])
    _write(folder / "bm25", [{**theirs(1.0), "id": "a"}])  # not a peer: left out
    _write(tmp_path / "musique" / "peer-ircot", [{**theirs(1.0), "id": "y"}])  # shares nothing
    data = wins_of(tmp_path)
    assert set(data) == {"fresh/2wiki"} and set(data["fresh/2wiki"]) == {"peer-ircot"}
    ircot = data["fresh/2wiki"]["peer-ircot"]
    assert ircot["n"] == 3 and ircot["wins"] == 2
    assert ircot["classes"] == {CLASSES[0]: ["a"], CLASSES[2]: ["c"]}
    text = wins_markdown(data)
    assert "| peer-ircot | 3 | 2 | 1 | 0 | 1 | 0 | 0 |" in text
    assert "`c`" in text
    assert peer_wins({}, {"a": theirs(1.0)}) == {"n": 0, "wins": 0, "classes": {}}
