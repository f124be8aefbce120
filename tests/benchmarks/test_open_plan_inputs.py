"""The open-plan probe (``benchmarks/open_plan_inputs.py``) on hand-made rows: no model, no
shared data."""

from __future__ import annotations

from tests.benchmark_module import load_benchmark

op = load_benchmark("open_plan_inputs")

PASSAGES = {
    "tulsa": {"title": "Cain's Ballroom", "text": "Cain's Ballroom is a venue in Tulsa."},
    "band": {"title": "Tinted Windows", "text": "Tinted Windows is an American band."},
}


def _row(answer: str, reason: str = "plan open: the draft stands") -> dict:
    return {
        "answers": [answer],
        "f1": 0.0,
        "planner": {
            "final_choice": {"source": "draft", "reason": reason},
            "sub_queries": [
                {"query": "band of Tinted Windows", "passage_ids": ["band", "tulsa"]},
                {"query": "venue of the first gig", "passage_ids": ["tulsa"]},
                {"query": "again", "passage_ids": ["band"]},  # shown once
            ],
        },
    }


def test_only_plans_that_ended_open_are_read() -> None:
    assert op.is_open(_row("Tulsa"))
    assert not op.is_open(_row("Tulsa", reason="resolved agrees with the draft"))
    assert not op.is_open({"planner": {}})


def test_each_hops_best_passage_is_shown_once_and_added_to_the_draft() -> None:
    row = _row("Tulsa")
    hops = op.hop_texts(row, PASSAGES)
    assert [i for i, _ in hops] == ["band", "tulsa"]
    draft = [{"id": "band", "shown": "Tinted Windows is an American band."}]
    assert op.shown("draft", draft, hops) == ["Tinted Windows is an American band."]
    assert len(op.shown("draft + hops", draft, hops)) == 2  # the band's passage is not repeated
    t = op.tally([(row, draft, hops)])
    assert (t["draft"], t["hops"], t["draft + hops"]) == (0.0, 100.0, 100.0)


def test_yes_no_questions_are_left_out_of_answer_shown() -> None:
    t = op.tally([(_row("yes"), [], [])])
    assert t["draft"] is None and t["n"] == 1


def test_the_reader_is_shown_the_draft_then_each_hop_it_did_not_show() -> None:
    draft = [{"id": "band", "title": "Tinted Windows", "shown": "An American band."}]
    hops = [("band", "Tinted Windows", "again"), ("tulsa", "Cain's Ballroom", "A venue in Tulsa.")]
    assert op.numbered(draft, hops) == (
        "[1] Tinted Windows: An American band.\n[2] Cain's Ballroom: A venue in Tulsa."
    )
    assert op.numbered(draft, []) == "[1] Tinted Windows: An American band."
