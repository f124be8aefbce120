"""Draft first over HTTP: the ``draft`` event on ``/v1/ask/stream`` as it happens, and the
draft on the OpenAI-compatible endpoint (``reasoning_content`` while a plan checks it, the
``content`` itself when it stands, nothing sent twice). The real planner behind a real server
on 127.0.0.1, called with httpx and the official ``openai`` client; the chat model is the routed
script (tests/draft_scripts.py). Each test fails with the draft or the router switched off."""

from __future__ import annotations

import httpx
import openai
import pytest

from agent.settings import PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from tests.draft_scripts import QUESTION, Gate, draft_agent, draft_chat
from tests.http_client import reasoning_of, sse_events, stream_deltas
from tests.live_server import live_server
from tests.planner_scripts import passages_index

TIMEOUT = httpx.Timeout(60.0)
NEVER = PlannerSettings(router="never")  # the draft is the final answer
FINAL_ANSWER = "The Eiffel Tower stands in Paris [1]. The Seine flows through Paris [2]."
DRAFT_ANSWER = "The Eiffel Tower stands on the Champ de Mars in Paris [1]."


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


def openai_client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key="unused", timeout=60, max_retries=0)


def test_the_draft_event_streams_before_the_plan_ends(index) -> None:
    gate = Gate()
    chat = draft_chat("Paris", gate)
    seen: list[str] = []
    with (
        live_server(draft_agent(index, chat)) as base,
        httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as r,
    ):
        assert r.status_code == 200
        events = []
        for name, data in sse_events(r.iter_lines()):
            events.append((name, data))
            seen.append(name)
            if name == "draft":
                # the plan's first call is still held: the draft came while the run went on
                assert not gate.opened.is_set() and "answer" not in seen
                gate.open()
    by_kind = dict(events)
    assert seen.index("draft") < seen.index("decompose") < seen.index("answer")
    draft = by_kind["draft"]["data"]
    assert draft["final"] is False and draft["short_answer"] == "Paris"
    assert draft["answer"] == DRAFT_ANSWER
    assert [(c["n"], c["id"], c["title"]) for c in draft["citations"]] == [(1, "paris", "Paris")]
    assert draft["citations"][0]["text"].startswith("Paris is the capital")
    assert draft["decision"] == {"escalate": True, "reason": "shape: chain", "policy": "fitted"}
    result = by_kind["result"]["data"]
    assert result["short_answer"] == "the Seine"
    assert result["final_choice"] == {"source": "plan", "reason": "supported chain over one read"}
    assert by_kind["answer"]["data"]["final"] == result["final_choice"]
    assert result["draft"] == {k: v for k, v in draft.items() if k not in ("final", "usage")}
    assert result["first_answer_s"] <= result["seconds"]


def test_a_draft_that_stands_ends_the_stream_with_it(index) -> None:
    with (
        live_server(draft_agent(index, draft_chat("Seine"), NEVER)) as base,
        httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as r,
    ):
        events = list(sse_events(r.iter_lines()))
    assert [name for name, _ in events] == ["search", "draft", "answer", "result"]
    draft, result = events[1][1]["data"], events[-1][1]["data"]
    assert draft["final"] is True and draft["decision"]["policy"] == "never"
    assert result["answer"] == draft["answer"] and result["short_answer"] == "Seine"
    assert result["final_choice"] == {"source": "draft", "reason": "policy: never plan"}


def test_chat_stream_gives_a_checked_draft_as_reasoning_then_the_final_answer(index) -> None:
    gate = Gate()
    with live_server(draft_agent(index, draft_chat("Paris", gate))) as base:
        client = openai_client(base)
        chunks = []
        for chunk in client.chat.completions.create(
            model="hoptree", messages=[{"role": "user", "content": QUESTION}], stream=True
        ):
            chunks.append(chunk)
            if any("Draft answer" in reasoning_of(c.delta) for c in chunk.choices):
                assert not gate.opened.is_set()  # the plan is still held: sent as it came
                gate.open()
        assert gate.opened.is_set(), "no draft arrived as reasoning"
        completion = client.chat.completions.create(
            model="hoptree", messages=[{"role": "user", "content": QUESTION}]
        )
    deltas = stream_deltas(iter(chunks))
    kinds = [kind for kind, _ in deltas]
    assert kinds == sorted(kinds, key=lambda k: k == "content")  # all reasoning first
    reasoning = "".join(text for kind, text in deltas if kind == "reasoning")
    content = "".join(text for kind, text in deltas if kind == "content")
    draft_block = reasoning.split("- Draft answer after ", 1)[1].split("\n- ", 1)[0]
    assert draft_block.split("\n")[0].endswith("s: Paris")
    assert f"  {DRAFT_ANSWER}\n" in draft_block and "  Sources: [1] Paris\n" in draft_block
    assert "A plan is checking it (shape: chain)" in draft_block
    assert reasoning.index("Draft answer") < reasoning.index("planned 2 atomic queries")
    # the final answer is the content, once; the draft never enters it
    assert content.startswith(FINAL_ANSWER) and content.count("Sources:") == 1
    assert "Champ de Mars" not in content
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    extra = (final[0].model_extra or {})["hoptree"]
    assert extra["draft"]["short_answer"] == "Paris"
    assert extra["final_choice"] == {"source": "plan", "reason": "supported chain over one read"}
    # not streamed: the same answer as content, the draft in the reasoning
    message = completion.choices[0].message
    assert message.content == content
    assert f"  {DRAFT_ANSWER}\n" in reasoning_of(message)
    assert "A plan is checking it (shape: chain)" in reasoning_of(message)


def test_chat_stream_sends_a_draft_that_stands_as_the_content_once(index) -> None:
    with live_server(draft_agent(index, draft_chat("Seine"), NEVER)) as base:
        client = openai_client(base)
        chunks = list(
            client.chat.completions.create(
                model="hoptree", messages=[{"role": "user", "content": QUESTION}], stream=True
            )
        )
        completion = client.chat.completions.create(
            model="hoptree", messages=[{"role": "user", "content": QUESTION}]
        )
    deltas = stream_deltas(iter(chunks))
    reasoning = "".join(text for kind, text in deltas if kind == "reasoning")
    content = "".join(text for kind, text in deltas if kind == "content")
    draft_answer = "The Seine is a river in northern France [4]."
    assert content == f"{draft_answer}\n\nSources:\n[4] Seine (seine)"  # once, not twice
    assert completion.choices[0].message.content == content
    assert "draft answer after" in reasoning and "it stands (policy: never plan)" in reasoning
    assert draft_answer not in reasoning  # the answer is the content, not also the reasoning
    assert "draft answer after" in reasoning_of(completion.choices[0].message)
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    extra = (final[0].model_extra or {})["hoptree"]
    assert extra["final_choice"] == {"source": "draft", "reason": "policy: never plan"}
    assert extra["first_answer_s"] is not None
