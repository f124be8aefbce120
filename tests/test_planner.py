"""The planner graph's control flow, with a routed scripted chat model and real tantivy.

The searchers here are small LLM-free ones over a real tantivy index, so every LLM call the
tests see is the planner's own and the scripted replies decide the route the graph takes.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.question import QuestionError
from agent.service import AgentError
from agent.settings import BudgetSettings, PlannerSettings
from searchers.passages import Passage
from searchers.searcher import Attempt, SearchResult, Verdict
from searchers.sparse_tantivy import TantivySparseIndex
from tests.routed_chat import RoutedChatModel

DATA = Path(__file__).parent / "data" / "passages.jsonl"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("planner") / "sparse")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    idx.add([Passage(r["id"], r["title"], r["text"], r.get("metadata") or {}) for r in rows])
    return idx


class KeywordSearcher:
    """BM25 on the query as written; no LLM, so the test controls every model call."""

    description = "plain BM25 over the query's words"

    def __init__(self, index: TantivySparseIndex, name: str = "keywords") -> None:
        self.index = index
        self.name = name
        self.queries: list[str] = []

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        self.queries.append(query)
        hits = self.index.retrieve(query, k)
        attempt = Attempt(id=0, operation="original", query=query, hit_ids=[h.id for h in hits])
        return SearchResult(self.name, query, hits, [attempt], 0, False, "exhausted", 0, 1.0)


class ExplodingSearcher:
    name = "exploding"
    description = "raises on every search, like a plugin with a bug"

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        raise RuntimeError("index file vanished")


class SlowSearcher:
    name = "slow"
    description = "sleeps far past any deadline"

    def __init__(self) -> None:
        self.cancelled = 0

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


def reply(**fields: object) -> str:
    return json.dumps(fields)


def user_text(messages: list[BaseMessage]) -> str:
    return str(messages[-1].content)


def number(passages: str, title: str) -> int:
    """The number the prompt gave the passage titled ``title``."""
    for line in passages.splitlines():
        if line.startswith("[") and line.split("] ", 1)[1].startswith(f"{title}:"):
            return int(line[1 : line.index("]")])
    raise AssertionError(f"{title} not among the passages:\n{passages}")


def agent_with(chat, searchers, **budgets) -> HoptreeAgent:
    return HoptreeAgent(
        chat,
        {s.name: s for s in searchers},
        planner=PlannerSettings(),
        budgets=BudgetSettings(**budgets),
        llm_timeout_s=5,
    )


def two_hop_chat() -> RoutedChatModel:
    """Round 1 finds the city but not the river; the supplement asks for the river by name."""

    def summarize(messages: list[BaseMessage]) -> str:
        query, passages = user_text(messages).split("Passages:")
        if "Eiffel" in query:
            return reply(
                answer="The Eiffel Tower stands in Paris.", passages=[number(passages, "Paris")]
            )
        if "through Paris" in query:
            return reply(
                answer="The Seine flows through Paris.", passages=[number(passages, "Seine")]
            )
        return reply(answer="The passages do not say which river.", passages=[])

    return RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["city where the Eiffel Tower stands", "river of that city"]
            ),
            "summarize": summarize,
            "supplement": reply(queries=["river that flows through Paris"]),
            "verify": reply(sufficient=True, missing=""),
            "answer": reply(
                short_answer="the Seine",
                answer="The Eiffel Tower is in Paris [1], which the Seine flows through [2][9].",
            ),
        }
    )


async def test_a_missing_summary_triggers_a_supplement_round(index) -> None:
    chat = two_hop_chat()
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert [q.query for q in result.sub_queries] == [
        "city where the Eiffel Tower stands",
        "river of that city",
        "river that flows through Paris",
    ]
    assert [q.round for q in result.sub_queries] == [1, 1, 2]
    assert [q.answered for q in result.sub_queries] == [True, False, True]
    assert searcher.queries[-1] == "river that flows through Paris"
    # round 1 had an unanswered query: no verify call was needed to know it was insufficient
    assert chat.count("verify") == 1
    assert [v["sufficient"] for v in result.verdicts] == [False, True]
    assert result.verdicts[0]["reason"] == "unanswered"
    assert result.stopped == "sufficient"
    assert result.short_answer == "the Seine"
    # [9] cites nothing that was shown: it is removed, the others map to passages
    assert "[9]" not in result.answer
    assert [(c.n, c.id) for c in result.citations] == [(1, "paris"), (2, "seine")]
    kinds = [e.kind for e in result.trace]
    assert kinds[:2] == ["started", "decompose"]
    assert kinds[-1] == "answer"
    assert kinds.count("search") == 3 and kinds.count("summarize") == 3
    assert result.llm_calls == chat.count("decompose") + chat.count("summarize") + 3
    assert result.prompt_tokens == 10 * len(chat.seen)


async def test_only_new_queries_are_summarized_each_round(index) -> None:
    chat = two_hop_chat()
    await agent_with(chat, [KeywordSearcher(index)]).ask("Which river flows through Paris?")
    summarized = [text.split("\n")[0] for route, text in chat.seen if route == "summarize"]
    assert len(summarized) == len(set(summarized)) == 3


async def test_the_budget_stops_a_model_that_never_says_sufficient(index) -> None:
    counter = iter(range(1000))

    def endless(messages: list[BaseMessage]) -> str:
        return reply(queries=[f"another angle number {next(counter)} on Paris"])

    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Paris river"]),
            "summarize": reply(answer="The Seine flows through Paris.", passages=[1]),
            "verify": reply(sufficient=False, missing="more certainty"),
            "supplement": endless,
            "answer": reply(short_answer="Seine", answer="The Seine [1]."),
        }
    )
    result = await agent_with(
        chat, [KeywordSearcher(index)], max_rounds=20, max_llm_calls=9, max_sub_queries=64
    ).ask("Which river flows through Paris?")
    assert result.stopped == "budget_llm_calls"
    assert result.llm_calls <= 9 + 1  # the answer may take one call past the budget
    assert result.short_answer == "Seine"
    assert len(result.verdicts) < 20


async def test_max_rounds_bounds_a_model_that_never_says_sufficient(index) -> None:
    counter = iter(range(1000))
    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Paris river"]),
            "summarize": reply(answer="The Seine flows through Paris.", passages=[1]),
            "verify": reply(sufficient=False, missing="more"),
            "supplement": lambda m: reply(queries=[f"angle {next(counter)} of the Seine"]),
            "answer": reply(short_answer="Seine", answer="The Seine [1]."),
        }
    )
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=3).ask("Paris river?")
    assert result.stopped == "max_rounds"
    assert len(result.verdicts) == 3
    assert chat.count("supplement") == 2


async def test_duplicate_sub_queries_are_dropped(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["Who wrote The Hobbit?", "who wrote the hobbit", "The Hobbit: who wrote?"]
            ),
            "summarize": reply(answer="The passages do not say.", passages=[]),
            "supplement": reply(queries=["Hobbit wrote who", "  WHO wrote THE Hobbit  "]),
            "answer": reply(short_answer="Tolkien", answer="J. R. R. Tolkien [1]."),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask("Who wrote The Hobbit?")
    assert [q.query for q in result.sub_queries] == ["Who wrote The Hobbit?"]
    assert searcher.queries == ["Who wrote The Hobbit?"]
    assert result.stopped == "no_new_queries"
    supplement = next(e for e in result.trace if e.kind == "supplement")
    assert supplement.data["sub_queries"] == []
    assert len(supplement.data["dropped"]) == 2


async def test_a_searcher_that_raises_degrades_the_answer(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index), ExplodingSearcher()]).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert result.short_answer == "the Seine"
    failed = [s for q in result.sub_queries for s in q.searches if s["searcher"] == "exploding"]
    assert failed and all(s["stopped"] == "error" for s in failed)
    assert "index file vanished" in failed[0]["error"]
    assert any("exploding" in e and "vanished" in e for e in result.errors)


async def test_a_hanging_searcher_is_cut_at_the_deadline(index) -> None:
    chat = two_hop_chat()
    slow = SlowSearcher()
    agent = agent_with(chat, [KeywordSearcher(index), slow], deadline_s=4.0, max_rounds=1)
    started = time.monotonic()
    result = await agent.ask("Which river flows through the city where the Eiffel Tower stands?")
    assert time.monotonic() - started < 30
    assert slow.cancelled >= 1
    assert any("slow" in e and "deadline" in e for e in result.errors)
    assert result.short_answer == "the Seine"


async def test_searchers_that_agree_on_a_grounded_span_skip_the_summary(index) -> None:
    class Verified(KeywordSearcher):
        async def search(self, query: str, *, k: int = 10) -> SearchResult:
            result = await super().search(query, k=k)
            result.attempts[0].verdict = Verdict(True, llm_says=True, coverage=1.0, answer="Paris")
            result.sufficient = True
            result.stopped = "sufficient"
            return result

    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["city of the Eiffel Tower"]),
            "verify": reply(sufficient=True, missing=""),
            "answer": reply(short_answer="Paris", answer="Paris [1]."),
        }
    )
    result = await agent_with(chat, [Verified(index, "a"), Verified(index, "b")]).ask(
        "In which city is the Eiffel Tower?"
    )
    assert chat.count("summarize") == 0
    (sub,) = result.sub_queries
    assert sub.summary_skipped and sub.answered and sub.summary == "Paris"
    assert sub.summary_sources == ["paris"]
    assert result.citations[0].id == "paris"


async def test_unparseable_planner_output_falls_back_and_is_recorded(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": "Sure! Here are some queries: 1. Eiffel",
            "summarize": "{not json",
            "answer": reply(short_answer="unknown", answer="I could not find it."),
            "supplement": reply(queries=[]),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask("Where is the Eiffel Tower?")
    assert searcher.queries == ["Where is the Eiffel Tower?"]  # the question itself
    assert any(e.startswith("decompose:") for e in result.errors)
    assert any(e.startswith("summarize q1:") for e in result.errors)
    assert result.short_answer == "unknown"


async def test_a_dead_chat_endpoint_is_a_clear_error(index) -> None:
    chat = two_hop_chat()
    chat.fail = {"decompose", "summarize", "verify", "supplement", "answer"}
    agent = agent_with(chat, [KeywordSearcher(index)])
    with pytest.raises(AgentError, match="could not write the answer"):
        await agent.ask("Which river flows through Paris?")
    events = [e async for e in agent.stream("Which river flows through Paris?")]
    assert events[-1].kind == "error" and events[-1].data["fatal"]
    assert "ConnectionError" in events[-1].data["error"]


async def test_bad_questions_are_refused_before_any_call(index) -> None:
    chat = two_hop_chat()
    agent = agent_with(chat, [KeywordSearcher(index)])
    for bad in ("", "   \n\t ", "x" * 2001):
        with pytest.raises(QuestionError):
            await agent.ask(bad)
    assert chat.seen == []


async def test_closing_the_stream_cancels_the_run(index) -> None:
    slow = SlowSearcher()
    agent = agent_with(two_hop_chat(), [slow])
    stream = agent.stream("Which river flows through Paris?")
    kinds = []
    async for event in stream:
        kinds.append(event.kind)
        if event.kind == "decompose":
            break
    await asyncio.sleep(0.3)  # the run goes on in its own task: the search starts and hangs
    await stream.aclose()
    for _ in range(50):
        if slow.cancelled:
            break
        await asyncio.sleep(0.05)
    assert slow.cancelled >= 1
    assert kinds == ["started", "decompose"]


async def test_a_thread_remembers_the_previous_question(index, tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    chat = two_hop_chat()
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        agent = HoptreeAgent(
            chat, {"keywords": KeywordSearcher(index)}, checkpointer=saver, llm_timeout_s=5
        )
        first = await agent.ask("Which river flows through Paris?", thread_id="t1")
        second = await agent.ask("How long is it?", thread_id="t1")
        other = await agent.ask("How long is it?", thread_id="t2")
    decompose_prompts = [text for route, text in chat.seen if route == "decompose"]
    assert "Which river flows through Paris?" not in decompose_prompts[0].split("Question:")[0]
    assert "Q: Which river flows through Paris? A: the Seine" in decompose_prompts[1]
    assert "Earlier in this conversation" not in decompose_prompts[2]
    # per-question state starts clean on the same thread
    assert [q.id for q in second.sub_queries] == [q.id for q in first.sub_queries]
    assert second.thread_id == "t1" and other.thread_id == "t2"


def ablated(chat, index, **switches) -> HoptreeAgent:
    return HoptreeAgent(
        chat,
        {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(**switches),
        budgets=BudgetSettings(),
        llm_timeout_s=5,
    )


async def test_no_decompose_searches_the_question_itself(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, decompose=False).ask("Where does the Seine flow?")
    assert chat.count("decompose") == 0
    assert result.sub_queries[0].query == "Where does the Seine flow?"


async def test_no_supplement_stops_after_one_round(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, supplement=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert chat.count("supplement") == 0 and chat.count("verify") == 0
    assert result.stopped == "no_supplement" and len(result.sub_queries) == 2


async def test_no_summarize_hands_the_fused_passages_to_the_answer(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, summarize=False, supplement=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert chat.count("summarize") == 0
    assert all(q.summary_skipped and q.summary_sources for q in result.sub_queries)
    (answer_prompt,) = [text for route, text in chat.seen if route == "answer"]
    titles = {
        json.loads(line)["id"]: json.loads(line)["title"]
        for line in DATA.read_text().split("\n")
        if line.strip()
    }
    for sub in result.sub_queries:  # each query's best passage is shown to the answer step
        assert f"{titles[sub.summary_sources[0]]}:" in answer_prompt
    assert "- city where the Eiffel Tower stands: see sources [1]" in answer_prompt


async def test_no_summarize_lets_verify_read_the_fused_passages(index) -> None:
    """The ablation removes the condensing, not the evidence: verify must not judge blind."""
    chat = two_hop_chat()
    result = await ablated(chat, index, summarize=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    (verify_prompt,) = [text for route, text in chat.seen if route == "verify"]
    findings = verify_prompt.split("Findings:")[1]
    for sub in result.sub_queries:
        assert f"- {sub.query} -> passages:" in findings
    # the Paris passage shown under the first query, trimmed to the planner's passage size
    shown = [line for line in findings.splitlines() if line.startswith("    ")]
    assert shown and all(len(line) < 4 + 200 + PlannerSettings().passage_chars for line in shown)
    assert any("Eiffel" in line for line in shown)


def test_the_planner_runs_lighter_searches_than_hoptree_search(settings) -> None:
    from agent.hoptree_agent import planner_search_context
    from agent.searching import searcher_options
    from searchers.registry import SearcherContext
    from searchers.searcher import SearchBudget
    from searchers.sparse_searcher import SparseSearcherConfig

    base = SearcherContext(chat=RoutedChatModel(), options=searcher_options(settings))
    base = SearcherContext(chat=base.chat, options=base.options, budget=SearchBudget(30))
    planned = planner_search_context(settings, base)
    sparse = SparseSearcherConfig(**planned.options["sparse"])
    assert (sparse.max_depth, sparse.max_refinements) == (1, 3)
    assert sparse.rule.kind == "coverage"  # the stop rule is the searchers' own
    assert planned.options["dense"]["max_rewrites"] == 2
    assert planned.budget.max_llm_calls == 8
    assert SparseSearcherConfig(**base.options["sparse"]).max_depth == 3  # untouched


def test_each_enabled_searcher_is_a_node_of_the_graph(index) -> None:
    agent = agent_with(two_hop_chat(), [KeywordSearcher(index), ExplodingSearcher()])
    nodes = set(agent._graph.get_graph().nodes)
    assert {"search_keywords", "search_exploding", "summarize", "verify"} <= nodes
