"""Every prompt the planner sends, byte for byte, against a recording made before its state was
typed (at 9441faf): the LLM cache keys on the prompt, so a refactor of the planner that changes
one byte of one prompt (its text, its message order, its passages and their order) or one call
made for a state misses a filled cache and changes committed eval runs.

Each scenario drives the whole graph with a routed scripted model over real tantivy, through
one of the planner's paths (a resolved chain, a blocked hop and its follow-up, an open plan read
as one-call RAG or along its chain, the findings read per query, the three LevelRAG ablations).
The structured replies' JSON schemas and reply limits are recorded too.

To record again (only when a prompt is meant to change): set HOPTREE_RECORD_PLANNER_PROMPTS to
the file to write and run this module; the recording is ``tests/fixtures/planner/prompts.json``
(not in tests/data, which the index tests read as a corpus).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.settings import BudgetSettings, PlannerSettings
from searchers.passages import Passage
from searchers.searcher import Attempt, SearchResult
from searchers.sparse_tantivy import TantivySparseIndex
from tests.locations import TESTS
from tests.routed_chat import RoutedChatModel

DATA = TESTS / "data"
RECORDING = TESTS / "fixtures" / "planner" / "prompts.json"
QUESTION = "Which river flows through the city where the Eiffel Tower stands?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("prompts") / "sparse")
    lines = (DATA / "passages.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    idx.add([Passage(r["id"], r["title"], r["text"], r.get("metadata") or {}) for r in rows])
    return idx


class Recording(RoutedChatModel):
    """The routed script, keeping every call's whole message list."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class Keywords:
    """BM25 on the query as written, no LLM: every call the model sees is the planner's."""

    description = "plain BM25 over the query's words"

    def __init__(self, index: TantivySparseIndex, name: str) -> None:
        self.index, self.name = index, name

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        hits = self.index.retrieve(query, k)
        attempt = Attempt(id=0, operation="original", query=query, hit_ids=[h.id for h in hits])
        return SearchResult(self.name, query, hits, [attempt], 0, False, "exhausted", 0, 1.0)


class Reversed(Keywords):
    """The same hits in reverse order: fused with ``Keywords``' they tie, so the order in which
    the plan holds the two searchers' results decides the passages' order in every prompt."""

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        result = await super().search(query, k=k)
        result.hits.reverse()
        return result


def reply(**fields: object) -> str:
    return json.dumps(fields)


def findings(answers: dict[str, tuple[str, int]]) -> Callable[[list[BaseMessage]], str]:
    """A findings reply: each query of the prompt containing a key gets (answer, passage n)."""

    def write(messages: list[BaseMessage]) -> str:
        items = []
        for block in str(messages[-1].content).split("Query ")[1:]:
            number, rest = block.split(":", 1)
            query = rest.split("\n", 1)[0]
            found = next((v for k, v in answers.items() if k in query), ("", 0))
            passages = [found[1]] if found[0] else []
            items.append({"query": int(number), "answer": found[0], "passages": passages})
        return reply(findings=items)

    return write


ANSWER = reply(short_answer="the Seine", answer="The Seine flows through Paris [1][2].")
PLAN = reply(queries=["city where the Eiffel Tower stands", "river that flows through #1"])
RESOLVING = findings({"Eiffel": ("Paris", 1), "through Paris": ("Seine", 1)})


def routes(**changed: Any) -> dict[str, Any]:
    base = {
        "decompose": PLAN,
        "summarize": RESOLVING,
        "verify": reply(sufficient=False, queries=[]),
        "answer": ANSWER,
        "rag_answer": reply(answer="Seine"),
    }
    return {**base, **changed}


# name -> (routes, planner settings, budgets)
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "resolved_chain": (routes(), {}, {}),
    "blocked_hop_and_follow_up": (
        routes(
            summarize=findings(
                {"French city": ("Paris", 1), "Eiffel": ("Lyon", 1), "river of": ("Seine", 1)}
            ),
            decompose=reply(queries=["city where the Eiffel Tower stands", "river of #1"]),
            verify=reply(sufficient=False, queries=["French city of the Eiffel tower"]),
        ),
        {},
        {},
    ),
    "open_plan_as_one_call_rag": (
        routes(summarize=findings({}), verify=reply(sufficient=False, queries=["tower city"])),
        {},
        {"max_rounds": 2},
    ),
    "findings_read_per_query": (routes(), {"findings_call": "reader"}, {}),
    "findings_read_free": (routes(), {"findings_call": "free"}, {}),
    "no_decompose": (routes(), {"decompose": False}, {}),
    "no_summarize": (routes(verify=reply(sufficient=True, queries=[])), {"summarize": False}, {}),
    "no_supplement": (routes(summarize=findings({})), {"supplement": False}, {}),
    "searchers_that_disagree": (routes(), {}, {}),
}


async def record(name: str, index: TantivySparseIndex) -> dict[str, Any]:
    chosen, planner, budgets = SCENARIOS[name]
    chat = Recording(routes=chosen)
    second = Reversed if name == "searchers_that_disagree" else Keywords
    searchers = [Keywords(index, "keywords"), second(index, "titles")]
    agent = HoptreeAgent(
        chat,
        {s.name: s for s in searchers},
        planner=PlannerSettings(
            **{"draft": False, "supplement": True, "findings_call": "batched", **planner}
        ),
        budgets=BudgetSettings(**budgets),
        llm_timeout_s=5,
    )
    result = await agent.ask(QUESTION)
    calls = sorted(
        json.dumps([[type(m).__name__, str(m.content)] for m in messages])
        for messages in chat.calls
    )
    return {
        "calls": [json.loads(c) for c in calls],
        "short_answer": result.short_answer,
        "answer": result.answer,
        "stopped": result.stopped,
        "sub_queries": [{**s.to_json(), "searches": len(s.searches)} for s in result.sub_queries],
        "citation_check": result.citation_check,
        "sources": [s["id"] for s in result.sources],
    }


def reply_schemas() -> dict[str, Any]:
    """The structured replies' JSON schemas and reply limits, as the server is sent them."""
    from agent.planner import answer, decompose, findings, verify
    from searchers.reader import ReaderReply

    models = [
        answer.FinalAnswer,
        decompose.QueryPlan,
        findings.RoundFindings,
        verify.NextStep,
        ReaderReply,
    ]
    limits = {
        "answer": answer.ANSWER_MAX_TOKENS,
        "findings": findings.FINDINGS_MAX_TOKENS,
        "verify": verify.VERIFY_MAX_TOKENS,
    }
    return {"schemas": {m.__name__: m.model_json_schema() for m in models}, "limits": limits}


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_the_planner_sends_the_recorded_prompts(name: str, index, recorded) -> None:
    now = await record(name, index)
    assert now["calls"], "a scenario that makes no call checks nothing"
    assert now == recorded["scenarios"][name]


def test_the_structured_replies_keep_their_schemas_and_limits(recorded) -> None:
    assert reply_schemas() == recorded["replies"]


@pytest.mark.skipif(
    not os.environ.get("HOPTREE_RECORD_PLANNER_PROMPTS"), reason="records only when asked"
)
async def test_record_the_prompts(index) -> None:
    out = {
        "scenarios": {name: await record(name, index) for name in sorted(SCENARIOS)},
        "replies": reply_schemas(),
    }
    path = Path(os.environ["HOPTREE_RECORD_PLANNER_PROMPTS"])
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
