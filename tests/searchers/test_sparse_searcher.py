"""The sparse searcher's control flow, driven by a scripted chat model (not a language model:
it returns the replies below, chosen by which prompt it was sent), over a real tantivy index."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from langchain_core.messages import BaseMessage

import prompts
from searchers.lucene import LuceneQuery, render_tantivy
from searchers.passages import Hit, Passage
from searchers.searcher import Attempt, SearchBudget, Verdict, best_attempt
from searchers.sparse_searcher import SparseSearcher, SparseSearcherConfig
from searchers.sparse_tantivy import TantivySparseIndex
from searchers.verification import VerificationRule
from tests.scripted_chat import ScriptedChatModel

CORPUS = [
    ("Tinted Windows", "Tinted Windows is the debut album of the band Tinted Windows, 2009."),
    ("Tinted Windows (band)", "Tinted Windows played their first gig in Austin, Texas."),
    ("Austin", "Austin is the capital city of Texas."),
    ("Window film", "Window tinting film reduces glare and heat in cars."),
    ("Glass", "Tinted glass is used in windows of office buildings."),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("sparse") / "idx")
    idx.add(Passage(id=f"p{i}", title=t, text=x) for i, (t, x) in enumerate(CORPUS))
    return idx


class RecordingRetriever:
    """Passes through to tantivy, and holds every query to the engine's own parser."""

    name = "sparse"

    def __init__(self, index: TantivySparseIndex) -> None:
        self.index = index
        self.sent: list[LuceneQuery] = []

    def retrieve_query(self, query: LuceneQuery, k: int = 10) -> list[Hit]:
        self.index.compile_query(query)  # raises if tantivy could not parse what we render
        self.sent.append(query)
        return self.index.retrieve_query(query, k)


def by_prompt(script: dict[str, list[str]]) -> Callable[[list[BaseMessage]], str]:
    """Reply with the next scripted answer for whichever prompt template was sent."""
    systems = {name: prompts.load(name).system for name in script}

    def reply(messages: list[BaseMessage]) -> str:
        for name, system in systems.items():
            if messages[0].content == system:
                if not script[name]:
                    raise AssertionError(f"unexpected extra {name} call")
                return script[name].pop(0)
        raise AssertionError(f"unscripted prompt: {messages[0].content[:60]}")

    return reply


def kw(word: str) -> str:
    return json.dumps({"keyword": word})


NO, YES = '{"answers_query": false}', '{"answers_query": true}'
LLM_ONLY = SparseSearcherConfig(original_first=False, rule=VerificationRule(kind="llm"))


def searcher(
    index, script, config=LLM_ONLY, budget=None
) -> tuple[SparseSearcher, ScriptedChatModel]:
    chat = ScriptedChatModel(replies=[by_prompt(script)] * 200)
    retriever = RecordingRetriever(index)
    s = SparseSearcher(chat, retriever, config=config, budget=budget, render=render_tantivy)
    return s, chat


async def test_breadth_first_order_and_stop_at_first_sufficient(index) -> None:
    script = {
        "sparse_rewrite": ['{"query": "Tinted Windows band"}'],
        "searcher_verify": [NO, NO, NO, NO, YES],
        "sparse_extend": [kw("first gig"), kw("Austin")],
        "sparse_emphasize": [kw("band"), kw("gig")],
        "sparse_filter": [kw("album"), kw("film")],
    }
    s, _ = searcher(index, script)
    result = await s.search("Which city hosted the first gig of Tinted Windows?")
    ops = [(a.operation, a.parent, a.depth) for a in result.attempts]
    # root, its three children in order, then the first grandchild (child of the extend node)
    assert ops == [
        ("rewrite", None, 0),
        ("extend", 0, 1),
        ("emphasize", 0, 1),
        ("filter", 0, 1),
        ("extend", 1, 2),
    ]
    assert [a.query for a in result.attempts] == [
        '"Tinted" "Windows" "band"',
        '"Tinted" "Windows" "band" "first gig"',
        '"Tinted" "Windows" "band"^2',
        '"Tinted" "Windows" "band" -"album"',
        '"Tinted" "Windows" "band" "first gig" "Austin"',
    ]
    assert result.stopped == "sufficient" and result.sufficient
    assert result.best_attempt == 4
    assert result.llm_calls == 1 + 5 + 3 * 2  # rewrite, five verdicts, two expansions
    assert all(not v for v in script.values())  # every scripted reply was used
    filtered = result.attempts[3]
    assert "p0" not in filtered.hit_ids  # the album passage mentions "album": excluded


async def test_returns_the_best_attempt_not_the_last(index) -> None:
    # Nothing is ever sufficient; the filter child excludes everything useful and comes last.
    script = {
        "sparse_rewrite": ['{"query": "\\"Tinted Windows\\" gig"}'],
        "searcher_verify": [NO, NO, NO, NO],
        "sparse_extend": [kw("Austin")],
        "sparse_emphasize": [kw("gig")],
        "sparse_filter": [kw("Tinted")],
    }
    config = SparseSearcherConfig(
        original_first=False, max_depth=1, rule=VerificationRule(kind="llm")
    )
    s, _ = searcher(index, script, config)
    result = await s.search("Where was the first gig of Tinted Windows?")
    assert result.stopped == "exhausted" and not result.sufficient
    assert len(result.attempts) == 4
    last = result.attempts[-1]
    assert last.operation == "filter"
    assert result.best_attempt != last.id
    assert result.hits and "p1" in [h.id for h in result.hits]


def test_best_attempt_ranking() -> None:
    def attempt(i: int, sufficient: bool, says: bool | None, cov: float) -> Attempt:
        return Attempt(i, "x", "q", hit_ids=["a"], verdict=Verdict(sufficient, says, cov))

    attempts = [
        attempt(0, False, False, 0.9),
        attempt(1, False, True, 0.5),
        attempt(2, False, None, 1.0),
    ]
    assert best_attempt(attempts).id == 1
    attempts.append(attempt(3, True, True, 0.1))
    assert best_attempt(attempts).id == 3
    assert best_attempt([]) is None


async def test_duplicate_and_no_op_refinements_are_skipped(index) -> None:
    script = {
        "sparse_rewrite": ['{"query": "Austin capital"}'],
        "searcher_verify": [NO, NO],
        # extend with a keyword already in the query adds nothing; emphasize makes capital^2;
        # filter proposes nothing usable
        "sparse_extend": [kw("Austin"), kw("Austin")],
        "sparse_emphasize": [kw("capital"), kw("capital")],
        "sparse_filter": [kw(""), kw("")],
    }
    config = SparseSearcherConfig(
        original_first=False, max_depth=2, rule=VerificationRule(kind="llm")
    )
    s, _ = searcher(index, script, config)
    result = await s.search("What is the capital of Texas?")
    queries = [a.query for a in result.attempts]
    assert len(queries) == len(set(queries))
    assert result.attempts[0].note  # the skipped children are explained in the trace


async def test_budget_stops_the_search_and_keeps_the_best(index) -> None:
    script = {
        "sparse_rewrite": ['{"query": "Tinted Windows"}'],
        "searcher_verify": [NO] * 10,
        "sparse_extend": [kw("gig")] * 10,
        "sparse_emphasize": [kw("band")] * 10,
        "sparse_filter": [kw("film")] * 10,
    }
    s, chat = searcher(index, script, budget=SearchBudget(max_llm_calls=4))
    result = await s.search("Tinted Windows first gig")
    assert result.stopped == "budget_llm_calls"
    assert result.llm_calls == 4 and len(chat.calls) == 4
    assert result.hits  # the root's hits survive


@pytest.mark.parametrize(
    "keyword",
    [
        "",
        "Sure! Here is a keyword that might help you find the answer: the city of Austin, "
        "which is the capital of Texas and well known for music.",
        '"unbalanced quote',
        "x" * 2000,
        "+-&&||^~*!():",
        "AND NOT",
        'title:"',
    ],
)
async def test_hostile_keywords_never_break_the_search(index, keyword: str) -> None:
    script = {
        "sparse_rewrite": [json.dumps({"query": keyword or "Tinted"})],
        "searcher_verify": [NO] * 20,
        "sparse_extend": [kw(keyword)] * 20,
        "sparse_emphasize": [kw(keyword)] * 20,
        "sparse_filter": [kw(keyword)] * 20,
    }
    s, _ = searcher(
        index,
        script,
        SparseSearcherConfig(original_first=False, max_depth=2, rule=VerificationRule("llm")),
    )
    result = await s.search("Tinted Windows first gig?")
    assert result.error is None or "keyword" in result.error
    assert result.stopped in {"exhausted", "sufficient"}
    assert result.attempts, "at least the original query is tried"


async def test_unparseable_replies_degrade_to_the_original_query(index) -> None:
    script = {
        "sparse_rewrite": ["this is not json"],
        "searcher_verify": ["{}", "nope"],
        "sparse_extend": ["[]"],
        "sparse_emphasize": ['{"keyword": 42}'],
        "sparse_filter": ["null"],
    }
    s, _ = searcher(
        index,
        script,
        SparseSearcherConfig(original_first=False, max_depth=1, rule=VerificationRule("llm")),
    )
    result = await s.search("Tinted Windows gig")
    assert result.attempts[0].operation == "original"
    assert "unparseable" in (result.error or "")
    assert result.stopped == "exhausted"
    assert result.hits


@pytest.mark.llm
async def test_one_real_sparse_search_with_the_local_model(index, local_chat) -> None:
    """The real 1.5B model writes the Lucene keywords; every query it causes parses."""
    retriever = RecordingRetriever(index)
    config = SparseSearcherConfig(original_first=False, max_depth=1, max_refinements=3)
    s = SparseSearcher(local_chat.model, retriever, config=config, render=render_tantivy)
    result = await s.search("In which city did the band Tinted Windows play their first gig?")
    assert result.error is None, result.error
    assert result.attempts and result.attempts[0].operation == "rewrite"
    assert retriever.sent, "the rewritten query reached tantivy"
    assert "p1" in [h.id for h in result.hits]  # the passage that answers it
    assert 1 <= result.llm_calls <= 1 + 4 + 3


async def test_original_first_skips_the_llm_when_the_query_already_verifies(index) -> None:
    config = SparseSearcherConfig(
        original_first=True, rule=VerificationRule(kind="coverage", min_coverage=0.6)
    )
    s, chat = searcher(index, {}, config)
    result = await s.search("first gig of Tinted Windows in Tulsa")
    assert [a.operation for a in result.attempts] == ["original"]
    assert result.sufficient and result.llm_calls == 0 and chat.calls == []


async def test_original_first_then_rewrite_then_feedback_on_the_rewrite(index) -> None:
    script = {
        "sparse_rewrite": ['{"query": "Tinted Windows band"}'],
        "searcher_verify": [NO, NO, NO, NO, NO],
        "sparse_extend": [kw("first gig")],
        "sparse_emphasize": [kw("band")],
        "sparse_filter": [kw("album")],
    }
    config = SparseSearcherConfig(
        original_first=True, max_depth=1, rule=VerificationRule(kind="llm")
    )
    s, _ = searcher(index, script, config)
    result = await s.search("Which city hosted the first gig of Tinted Windows?")
    ops = [(a.operation, a.parent) for a in result.attempts]
    # the raw query is probed first and never refined; feedback grows from the rewrite
    assert ops == [
        ("original", None),
        ("rewrite", None),
        ("extend", 1),
        ("emphasize", 1),
        ("filter", 1),
    ]
    assert result.llm_calls == 1 + 5 + 3
    assert all(not v for v in script.values())
