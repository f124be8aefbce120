"""``benchmarks/draft_inputs.py`` on hand-made lists: how a reading is cut from a question's
ranked lists, and how often its shown text holds the answer and the gold paragraphs."""

from __future__ import annotations

from evals.datasets import EvalQuestion
from searchers.passages import Hit, Passage
from tests.benchmark_module import load_benchmark

di = load_benchmark("draft_inputs")


def _hit(title: str, text: str = "") -> Hit:
    return Hit(Passage(title.lower(), title, text or f"{title} is a page."), 1.0)


def test_bm25_first_keeps_bm25s_head_then_the_fused_list_without_repeats() -> None:
    lists = di.Lists(
        draft=[_hit("A"), _hit("B"), _hit("C"), _hit("D")],
        bm25=[_hit("C"), _hit("E"), _hit("A"), _hit("F")],
        hybrid=[],
    )
    assert [h.title for h in di._bm25_first(lists, 5, 3)] == ["C", "E", "A", "B", "D"]


def test_a_trimmed_passage_can_lose_the_answer_that_the_whole_one_shows() -> None:
    filler = "The band toured widely and recorded several albums with many guests. " * 12
    text = "Tinted Windows is an American band. " + filler + "Their first show was in Tulsa."
    q = EvalQuestion(
        id="q1",
        question="Where did the band Tinted Windows first perform?",
        answers=["Tulsa"],
        supporting_titles=["Tinted Windows", "Hanson"],
    )
    lists = di.Lists(draft=[_hit("Tinted Windows", text)], bm25=[], hybrid=[])
    trimmed = di.tally([(q, lists)], di.Reading("t", lambda lists: lists.draft, 200))
    whole = di.tally([(q, lists)], di.Reading("w", lambda lists: lists.draft, 1500))
    assert trimmed.answer == [0.0] and whole.answer == [1.0]
    assert trimmed.gold == [0.0]  # one of the two supporting pages shown
    assert trimmed.chars[0] < whole.chars[0]
    assert whole.row("w") == f"| w | 100.0 | 0.0 | {whole.chars[0]} |"
