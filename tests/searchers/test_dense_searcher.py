"""HyDE control flow with a scripted chat model (it returns the replies below, nothing more)
over a real FAISS index with the real embedding model."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from searchers.dense_faiss import DenseConfig, FaissDenseIndex
from searchers.dense_searcher import DenseSearcher, DenseSearcherConfig
from searchers.passages import Passage
from searchers.searcher import SearchBudget, SearchLoop
from searchers.verification import VerificationRule
from tests.scripted_chat import ScriptedChatModel

CORPUS = [
    ("Mount Kilimanjaro", "Kilimanjaro is a dormant volcano in Tanzania, the highest in Africa."),
    ("Serengeti", "The Serengeti is a savanna ecosystem in Tanzania and Kenya."),
    (
        "Hans Meyer",
        "Hans Meyer was a German geographer who first reached Kilimanjaro's summit in 1889.",
    ),
    ("Volcano", "A volcano is a rupture in the crust of a planet."),
    ("Coffee", "Coffee is grown on the slopes of many mountains in East Africa."),
]
NO, YES = '{"answers_query": false}', '{"answers_query": true}'


def doc(text: str) -> str:
    return json.dumps({"passage": text})


@pytest.fixture(scope="module")
def dense(embeddings) -> FaissDenseIndex:
    index = FaissDenseIndex(DenseConfig(dimension=embeddings.dimension), embeddings)
    index.add(Passage(id=f"d{i}", title=t, text=x) for i, (t, x) in enumerate(CORPUS))
    return index


def run(embeddings, dense, replies, *, rewrites=3, budget=None):
    chat = ScriptedChatModel(replies=list(replies))
    config = DenseSearcherConfig(max_rewrites=rewrites, rule=VerificationRule(kind="llm"))
    return DenseSearcher(chat, embeddings, dense, config=config, budget=budget), chat


async def test_rewrites_with_feedback_until_sufficient(embeddings, dense) -> None:
    replies = [
        doc("Kilimanjaro is a mountain in Tanzania."),
        NO,
        doc("The first ascent of Kilimanjaro was made in 1889 by the geographer Hans Meyer."),
        YES,
    ]
    searcher, chat = run(embeddings, dense, replies)
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert [a.operation for a in result.attempts] == ["hyde", "hyde"]
    assert result.stopped == "sufficient" and result.best_attempt == 1
    assert result.hits[0].id == "d2"  # Hans Meyer
    second_prompt = chat.calls[2][1].content  # the second HyDE call saw the first results
    assert "Mount Kilimanjaro" in second_prompt
    assert "(none yet)" in chat.calls[0][1].content
    assert result.llm_calls == 4


async def test_at_most_max_rewrites_and_best_is_kept(embeddings, dense) -> None:
    replies = [doc("Hans Meyer reached the summit of Kilimanjaro."), NO]
    replies += [doc("Coffee grows in East Africa."), NO, doc("Volcanoes rupture crusts."), NO]
    searcher, _ = run(embeddings, dense, replies, rewrites=3)
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert len(result.attempts) == 3 and result.stopped == "exhausted"
    # nothing verified; the first try's hits cover the query best and are returned
    assert result.best_attempt == 0 and result.hits[0].id == "d2"


async def test_unusable_pseudo_document_falls_back_to_the_query(embeddings, dense) -> None:
    searcher, _ = run(embeddings, dense, ["not json", YES], rewrites=1)
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert result.attempts[0].operation == "original"
    assert result.attempts[0].query == "Who first climbed Kilimanjaro?"
    assert "unparseable" in (result.error or "")
    assert result.hits


async def test_budget_returns_what_was_found(embeddings, dense) -> None:
    replies = [doc("Hans Meyer climbed Kilimanjaro in 1889."), NO, doc("x"), NO]
    searcher, chat = run(embeddings, dense, replies, budget=SearchBudget(max_llm_calls=2))
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert result.stopped == "budget_llm_calls" and len(chat.calls) == 2
    assert result.hits and result.hits[0].id == "d2"


async def test_a_looping_pseudo_document_searches_with_each_sentence_once(
    embeddings, dense
) -> None:
    looping = "Hans Meyer climbed Kilimanjaro in 1889. " + "He was German. " * 6
    searcher, _ = run(embeddings, dense, [doc(looping), YES], rewrites=1)
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert result.attempts[0].query == "Hans Meyer climbed Kilimanjaro in 1889. He was German."


@pytest.mark.parametrize("rewrites", [0, 1])
async def test_inside_a_plan_the_query_alone_unless_rewrites_are_allowed(
    embeddings, dense, rewrites
) -> None:
    """The planner's loop (``within``) probes the query as written; with no rewrite allowed (the
    planner's default) an insufficient probe ends the search without a call, with one the
    searcher writes a pseudo-document."""
    loop = SearchLoop(max_llm_calls=1, max_depth=1, max_refinements=1, max_rewrites=rewrites)
    config = DenseSearcherConfig(rule=VerificationRule(kind="llm")).within(loop)
    chat = ScriptedChatModel(replies=[NO, doc("Hans Meyer climbed Kilimanjaro."), NO])
    searcher = DenseSearcher(chat, embeddings, dense, config=config)
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert [a.operation for a in result.attempts] == ["original", "hyde"][: rewrites + 1]
    assert len(chat.calls) == 1 + 2 * rewrites  # the verdict, then a passage and its verdict
    assert result.hits


async def test_with_no_rewrites_the_query_alone_is_searched(embeddings, dense) -> None:
    """``[searchers.dense] max_rewrites = 0`` is a dense search of the query as written: one
    probe and its verdict, no pseudo-document, whatever ``original_first`` says."""
    searcher, chat = run(embeddings, dense, [NO], rewrites=0)
    result = await searcher.search("Who first climbed Kilimanjaro?", k=3)
    assert [a.operation for a in result.attempts] == ["original"]
    assert len(chat.calls) == 1  # the verdict only
    assert result.hits


def test_rewrites_below_zero_are_refused() -> None:
    with pytest.raises(ValidationError):
        DenseSearcherConfig(max_rewrites=-1)
