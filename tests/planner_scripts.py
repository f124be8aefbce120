"""What the planner's graph tests share: a real tantivy index over tests/data/passages.jsonl,
small LLM-free searchers (so every LLM call a test sees is the planner's own), and routed
scripted replies for the two-hop question they ask. Not a test module."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.settings import BudgetSettings, PlannerSettings
from searchers.passages import Passage
from searchers.searcher import Attempt, SearchResult
from searchers.sparse_tantivy import TantivySparseIndex
from tests.routed_chat import RoutedChatModel

DATA = Path(__file__).parent / "data" / "passages.jsonl"


def passages_index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    """A real tantivy index over tests/data/passages.jsonl (each module's ``index`` fixture)."""
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("planner") / "sparse")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    idx.add([Passage(r["id"], r["title"], r["text"], r.get("metadata") or {}) for r in rows])
    return idx


def tiny_index(
    tmp_path_factory: pytest.TempPathFactory, name: str, rows: list[tuple[str, str, str]]
) -> TantivySparseIndex:
    """A real tantivy index over a module's own (id, title, text) passages."""
    index = TantivySparseIndex.create(tmp_path_factory.mktemp(name) / "sparse")
    index.add([Passage(pid, title, text, {}) for pid, title, text in rows])
    return index


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


def agent_with(chat, searchers, planner: PlannerSettings | None = None, **budgets) -> HoptreeAgent:
    return HoptreeAgent(
        chat,
        {s.name: s for s in searchers},
        planner=planner or PlannerSettings(draft=False, supplement=True, findings_call="batched"),
        budgets=BudgetSettings(**budgets),
        llm_timeout_s=5,
    )


def finding(passages_text: str, **by_query: tuple[str, str]) -> str:
    """A findings reply: for each query of the prompt whose text contains a key of
    ``by_query``, that (answer, passage title); other queries get no answer."""
    items = []
    blocks = passages_text.split("Query ")[1:]
    for block in blocks:
        number_text, rest = block.split(":", 1)
        query = rest.split("\n", 1)[0]
        for needle, (answer, title) in by_query.items():
            if needle in query:
                n = number(block, title) if title else 0
                items.append({"query": int(number_text), "answer": answer, "passages": [n]})
                break
        else:
            items.append({"query": int(number_text), "answer": "", "passages": []})
    return reply(findings=items)


def number_any(text: str, title: str) -> int:
    """The number of the passage titled ``title`` anywhere in a prompt."""
    for line in text.splitlines():
        if line.startswith("[") and "] " in line and line.split("] ", 1)[1].startswith(f"{title}:"):
            return int(line[1 : line.index("]")])
    raise AssertionError(f"{title} not in:\n{text}")


def number(block: str, title: str) -> int:
    return number_any(block, title)


# what the scripted reader answers, by the words of the question it was asked (first match)
READS = {
    "city where the Eiffel Tower stands?": "Seine",  # the whole question (draft, open plan)
    "city where the Eiffel Tower stands": "Paris",  # the first hop
    "through Paris": "Seine",  # the second hop, and the single fact
}


def asked(messages: list[BaseMessage]) -> str:
    """The question a reader prompt asks (``prompts/rag_answer.txt``: "Question: ...")."""
    text = user_text(messages)
    return text.split("Question:", 1)[-1].split("\n", 1)[0].strip()


def reader_by_question(**first: str) -> Callable[[list[BaseMessage]], str]:
    """A scripted one-call RAG reader answering by the question's words: ``first`` (a needle
    and its answer) before ``READS``; "Seine" when none matches."""

    def read(messages: list[BaseMessage]) -> str:
        question = asked(messages)
        for needle, answer in [*first.items(), *READS.items()]:
            if needle in question:
                return reply(answer=answer)
        return reply(answer="Seine")

    return read


def two_hop_chat(answer: str | None = None) -> RoutedChatModel:
    """The second query needs the first one's answer (#1): it waits, then goes out with
    "Paris" filled in. Every finding is a span of its passages, so no verify call is needed."""

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            Eiffel=("Paris", "Paris"),
            **{"through Paris": ("Seine", "Seine")},
        )

    def final(messages: list[BaseMessage]) -> str:
        text = user_text(messages)
        shown = {t for t in ("Paris", "Seine") if f"] {t}:" in text}
        paris, seine = (number_any(text, t) if t in shown else 1 for t in ("Paris", "Seine"))
        return answer or reply(
            short_answer="the Seine",
            answer=f"The Eiffel Tower stands in Paris [{paris}]. The Seine flows through "
            f"Paris [{seine}][9].",
        )

    return RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["city where the Eiffel Tower stands", "river that flows through #1"]
            ),
            "summarize": summarize,
            "verify": reply(sufficient=False, queries=[]),
            "answer": final,
            # one-call RAG's reader (``searchers.reader``): the draft, an open plan's answer,
            # and each hop's finding (``findings_call="reader"``)
            "rag_answer": reader_by_question(),
        }
    )


QUESTION = "Which river flows through the city where the Eiffel Tower stands?"


class CallingSearcher(KeywordSearcher):
    """A searcher that asks the model on every search, as the LLM searchers do, with a budget
    of its own far above the question's."""

    def __init__(self, index, chat, calls: int) -> None:
        super().__init__(index, "calling")
        self.chat = chat
        self.calls = calls

    async def search(self, query: str, *, k: int = 10, scope=None) -> SearchResult:
        from pydantic import BaseModel

        from searchers.searcher import BudgetExceeded, SearchBudget
        from searchers.structured_calls import ask
        from searchers.verification import RuleKind  # noqa: F401  (the searchers' own module)

        class Keywords(BaseModel):
            query: str

        mine = SearchBudget(max_llm_calls=1000).scope(scope)
        for _ in range(self.calls):
            try:
                await ask(
                    self.chat,
                    Keywords,
                    prompts_render(query),
                    scope=mine,
                    step="sparse_rewrite",
                )
            except BudgetExceeded:
                break
        result = await super().search(query, k=k)
        result.llm_calls = mine.llm_calls
        return result


def prompts_render(query: str):
    import prompts

    return prompts.render("sparse_rewrite", query=query)


def ablated(chat, index, **switches) -> HoptreeAgent:
    return HoptreeAgent(
        chat,
        {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(
            **{"draft": False, "supplement": True, "findings_call": "batched", **switches}
        ),
        budgets=BudgetSettings(),
        llm_timeout_s=5,
    )


class ChargingSearcher(KeywordSearcher):
    """Asks its scope for one LLM call per search (as a rewrite would), and records whether
    the planner's budget allowed it."""

    def __init__(self, index: TantivySparseIndex) -> None:
        super().__init__(index, name="charging")
        self.allowed: dict[str, bool] = {}

    async def search(self, query: str, *, k: int = 10, scope=None) -> SearchResult:
        from searchers.searcher import BudgetExceeded, SearchBudget

        try:
            SearchBudget(max_llm_calls=5).scope(scope).charge()
            self.allowed[query] = True
        except BudgetExceeded:
            self.allowed[query] = False
        return await super().search(query, k=k)


class ReportingSearcher(KeywordSearcher):
    """A plugin written before run scopes: ``search(query, *, k)``, no scope to charge, its
    model called its own way and the calls reported in its result."""

    def __init__(self, index: TantivySparseIndex, calls: int) -> None:
        super().__init__(index, "reporting")
        self.calls = calls

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        result = await super().search(query, k=k)
        result.llm_calls = self.calls
        return result


def node_runtime(chat, planner: PlannerSettings | None = None, **budgets):
    """A node's runtime when a test calls it directly, off the graph: the run context of one
    question (no searchers: a node that searches is not called this way), its events kept in
    ``runtime.context.events``."""
    from langgraph.runtime import Runtime

    from agent.planner.state import PlannerRun
    from agent.runtime.usage import UsageTracker

    run = PlannerRun(
        chat=chat,
        searchers={},
        planner=planner or PlannerSettings(draft=False, supplement=True, findings_call="batched"),
        budgets=BudgetSettings(**budgets),
        tracker=UsageTracker(),
        llm_timeout_s=5,
    )
    return Runtime(context=run)
