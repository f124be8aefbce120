"""The real planner behind the real HTTP server: the graph, its trace events and its result
reach clients unchanged. The chat model is scripted (routed by prompt), the index is real tantivy.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from agent.hoptree_agent import HoptreeAgent
from agent.settings import BudgetSettings, PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from tests.http_client import reasoning_of, sse_events, stream_deltas
from tests.live_server import live_server
from tests.planner_scripts import KeywordSearcher, passages_index, two_hop_chat

QUESTION = "Which river flows through the city where the Eiffel Tower stands?"
TIMEOUT = httpx.Timeout(60.0)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


def planner(index) -> HoptreeAgent:
    return HoptreeAgent(
        two_hop_chat(),
        {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(draft=False, supplement=True, findings_call="batched"),
        budgets=BudgetSettings(),
        llm_timeout_s=10,
    )


def test_the_planners_trace_streams_over_sse(index) -> None:
    with (
        live_server(planner(index)) as base,
        httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as r,
    ):
        assert r.status_code == 200
        events = list(sse_events(r.iter_lines()))
    kinds = [name for name, _ in events]
    assert kinds[:2] == ["started", "decompose"] and kinds[-2:] == ["answer", "result"]
    # two planned queries and the question itself, searched as written beside the first round
    assert kinds.count("search") == 3 and kinds.count("verify") == 2
    result = events[-1][1]["data"]
    assert result["short_answer"] == "the Seine"
    assert [q["query"] for q in result["sub_queries"]][-1] == "river that flows through Paris"
    assert {c["id"] for c in result["citations"]} == {"paris", "seine"}
    assert result["citation_check"]["dropped"] == 0


def test_the_openai_client_gets_the_planners_cited_answer(index) -> None:
    with live_server(planner(index)) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", timeout=60, max_retries=0)
        completion = client.chat.completions.create(
            model="hoptree", messages=[{"role": "user", "content": QUESTION}]
        )
        stream = client.chat.completions.create(
            model="hoptree", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        chunks = list(stream)
    deltas = stream_deltas(iter(chunks))
    kinds = [kind for kind, _ in deltas]
    streamed = "".join(text for kind, text in deltas if kind == "content")
    content = completion.choices[0].message.content or ""
    assert content.startswith("The Eiffel Tower stands in Paris [1]")
    assert "Sources:" in content and "Seine" in content.split("Sources:")[1]
    assert streamed == content
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    # the plan streamed as reasoning (from ``run``), all of it before the answer
    assert kinds[0] == "reasoning" and kinds == sorted(kinds, key=lambda k: k == "content")
    reasoning = "".join(text for kind, text in deltas if kind == "reasoning")
    assert reasoning.startswith("- planning the search (searchers: keywords)\n- planned ")
    assert "keywords searched" in reasoning and "verdict: sufficient" in reasoning
    assert "citation check kept" in reasoning and "planned" not in streamed
    assert reasoning_of(completion.choices[0].message).startswith("- planning the search")
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert (final[0].model_extra or {})["hoptree"]["short_answer"] == "the Seine"
