"""The HTTP API's limits over a real uvicorn server on 127.0.0.1 (``agent/serve/limits.py``,
``runs.py``, ``errors.py``): body size, question length, run slots and 429s, the deadline's 504,
a client that leaves cancelling its run, and an agent that fails or crashes mid-run. Each test
starts its own server with the limit it drives, behind the scripted agent (``tests.fake_agent``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest

from agent.serve.api import create_app
from agent.serve.limits import RunSlots
from agent.settings import ServerSettings
from tests.fake_agent import QUESTION, ScriptedAgent
from tests.http_client import TIMEOUT, assert_openai_error, reasoning_of, sse_events
from tests.live_server import live_server, serving

# --------------------------------------------------------------------------- limits


def test_body_too_large_by_content_length_and_by_bytes() -> None:
    with live_server(ScriptedAgent(), max_body_bytes=2048) as base:
        big = json.dumps({"question": "x" * 3000})
        r = httpx.post(
            base + "/v1/ask",
            content=big,
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "request_too_large"
        r = httpx.post(
            base + "/v1/chat/completions",
            content=json.dumps(
                {"model": "hoptree", "messages": [{"role": "user", "content": big}]}
            ),
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert_openai_error(r, 413, "request_too_large")

        def chunked() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding: chunked
            for i in range(0, len(big), 500):
                yield big[i : i + 500].encode()

        r = httpx.post(
            base + "/v1/ask",
            content=chunked(),
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert r.status_code == 413
        # a small chunked body still gets through
        small = json.dumps({"question": QUESTION}).encode()
        r = httpx.post(
            base + "/v1/ask",
            content=iter([small[:10], small[10:]]),
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert r.status_code == 200, r.text


def test_question_empty_or_oversized_is_422_or_400_on_chat() -> None:
    agent = ScriptedAgent()
    with live_server(agent, max_question_chars=50) as base:
        for question in ("", "   \n\t "):
            for path in ("/v1/ask", "/v1/ask/stream"):
                r = httpx.post(base + path, json={"question": question}, timeout=TIMEOUT)
                assert r.status_code == 422
                assert r.json()["error"]["message"] == "the question is empty"
        r = httpx.post(base + "/v1/ask", json={"question": "why " * 20}, timeout=TIMEOUT)
        assert r.status_code == 422
        assert "the limit is 50" in r.json()["error"]["message"]
        r = httpx.post(
            base + "/v1/chat/completions",
            json={"model": "hoptree", "messages": [{"role": "user", "content": "why " * 20}]},
            timeout=TIMEOUT,
        )
        assert (
            "the limit is 50"
            in assert_openai_error(r, 400, "invalid_question", "messages")["message"]
        )
    assert agent.calls == []  # refused before any run started


def test_concurrency_limit_gives_429_with_retry_after() -> None:
    agent = ScriptedAgent(hold_after=1)  # the runs hold the slots until the test resumes them
    with live_server(agent, max_concurrency=2) as base, ThreadPoolExecutor(2) as pool:
        running = [
            pool.submit(httpx.post, base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
            for _ in range(2)
        ]
        assert agent.wait_active(2, timeout_s=10)
        r = httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.status_code == 429
        assert r.json()["error"]["type"] == "rate_limit_error"
        assert 1 <= int(r.headers["retry-after"]) <= 60
        r = httpx.post(base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.status_code == 429  # streams count too, and are refused before streaming
        with (
            openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c,
            pytest.raises(openai.RateLimitError) as info,
        ):
            c.chat.completions.create(model="hoptree", messages=[{"role": "user", "content": "q?"}])
        assert (info.value.code, info.value.param) == ("too_many_runs", None)
        assert httpx.get(base + "/healthz", timeout=TIMEOUT).json()["running"] == 2
        agent.resume.set()
        assert [f.result(timeout=30).status_code for f in running] == [200, 200]
        assert agent.max_active == 2
        # the slots are free again
        r = httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.status_code == 200


class HandClock:
    """The run slots' clock, moved by the test: a run lasts exactly what the test says, so
    Retry-After is a number to compare, not a timing."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _held_run(agent: ScriptedAgent, clock: HandClock, seconds: float, request: Any) -> Any:
    """Send ``request``, whose run holds; let ``seconds`` pass on the clock, resume the run, and
    return what ``request`` returned."""
    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(request)
        assert agent.wait_active(1, timeout_s=10)
        clock.now += seconds
        agent.resume.set()
        result = done.result(timeout=30)
    agent.resume.clear()
    return result


def test_retry_after_counts_only_runs_that_answered() -> None:
    """Issue 63: 30 runs cut short by their clients made Retry-After 7 s while the first slot
    freed at 13.5 s. Runs that answered took 20 s here; runs its client left, or an agent error
    ended, after 2 s must not shorten the estimate: a run 5 s old leaves 15 s to wait."""
    agent = ScriptedAgent(hold_after=1)  # each run holds after "started" until resumed
    clock = HandClock()
    settings = ServerSettings(host="127.0.0.1", port=0, max_concurrency=1)
    app = create_app(agent, settings)
    app.state.slots.clock = clock
    with serving(app, settings) as base:

        def ask() -> httpx.Response:
            return httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)

        def chat_stream() -> list[Any]:
            with openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c:
                chunks = c.chat.completions.create(
                    model="hoptree", messages=[{"role": "user", "content": "q?"}], stream=True
                )
                return list(chunks)

        assert _held_run(agent, clock, 20.0, ask).status_code == 200
        assert _held_run(agent, clock, 20.0, chat_stream)[-1].choices[0].finish_reason == "stop"
        for _ in range(2):  # streams whose clients leave after 2 s
            with httpx.stream(
                "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
            ) as s:
                events = sse_events(s.iter_lines())  # kept: dropping it would close the response
                assert next(events)[0] == "started"
                clock.now += 2.0
            assert _wait_idle(base)
        agent.fail_after = 1  # an agent error after 2 s: a 502, no answer
        assert _held_run(agent, clock, 2.0, ask).status_code == 502
        agent.fail_after = None

        with httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as s:
            events = sse_events(s.iter_lines())  # kept: dropping it would close the response
            assert next(events)[0] == "started"  # the one slot is taken
            clock.now += 5.0
            r = ask()
            assert r.status_code == 429, r.text
            assert r.headers["retry-after"] == "15"


def test_retry_after_before_any_answer_and_past_the_average() -> None:
    clock = HandClock()
    slots = RunSlots(1, hard_deadline_s=40.0, clock=clock)
    slot = slots.try_acquire()
    assert slot is not None
    clock.now += 10.0
    assert slots.retry_after_s() == 30  # nothing answered yet: the hard deadline bounds the run
    slot.release()  # cut short: not an answer, still nothing to go by
    slot = slots.try_acquire()
    assert slot is not None and slots.retry_after_s() == 40
    clock.now += 8.0
    slot.answered = True
    slot.release()
    slot.release()  # idempotent: counted once
    slot = slots.try_acquire()
    assert slot is not None and slots.retry_after_s() == 8
    clock.now += 12.0
    assert slots.retry_after_s() == 1  # past the average: it may end any moment
    assert RunSlots(1, hard_deadline_s=900.0, clock=clock).retry_after_s() == 1  # none running
    long = RunSlots(1, hard_deadline_s=900.0, clock=clock)
    assert long.try_acquire() is not None and long.retry_after_s() == 60  # OpenAI clients' cap


def test_deadline_gives_504_and_cancels_the_run() -> None:
    agent = ScriptedAgent(hold_after=1)  # never resumed: only the deadline can end the run
    with live_server(agent, request_deadline_s=0.3) as base:
        # a 504 at all is the evidence: the scripted run holds after "started" until cancelled
        r = httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.status_code == 504
        assert r.json()["error"]["code"] == "deadline_exceeded"
        assert r.headers["x-should-retry"] == "false"  # OpenAI clients must not rerun it
        assert agent.calls[-1]["deadline_s"] == 0.3
        assert agent.cancelled.wait(5)

        with httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as s:
            events = list(sse_events(s.iter_lines()))
        assert [name for name, _ in events] == ["started", "error"]
        error = events[-1][1]["data"]
        assert error["fatal"] is True and error["type"] == "timeout"
        assert "deadline of 0.3 s" in error["error"]
        assert httpx.get(base + "/healthz", timeout=TIMEOUT).json()["running"] == 0


def _wait_idle(base: str, timeout_s: float = 5.0) -> bool:
    ends = time.monotonic() + timeout_s
    while time.monotonic() < ends:
        if httpx.get(base + "/healthz", timeout=TIMEOUT).json()["running"] == 0:
            return True
        time.sleep(0.05)
    return False


def test_client_disconnect_cancels_a_streaming_run() -> None:
    agent = ScriptedAgent(hold_after=1)  # unfinished until its client leaves: no timing
    with live_server(agent, max_concurrency=1) as base:
        with httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as s:
            first = next(sse_events(s.iter_lines()))
            assert first[0] == "started"
        # the response is closed mid-run: the agent's stream must be cancelled, the slot freed
        assert agent.cancelled.wait(5), "the run went on after its client left"
        assert agent.completed == 0
        assert _wait_idle(base)


def test_client_disconnect_cancels_a_non_streaming_run() -> None:
    agent = ScriptedAgent(hold_after=1)  # unfinished until its client leaves: no timing
    with live_server(agent, max_concurrency=1) as base:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=0.5)
        assert agent.cancelled.wait(5)
        assert _wait_idle(base)


def test_agent_failure_mid_stream_is_an_error_event_and_the_server_stays_up() -> None:
    agent = ScriptedAgent(fail_after=4)
    with live_server(agent) as base:
        with httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as s:
            events = list(sse_events(s.iter_lines()))
        assert [name for name, _ in events] == ["started", "decompose", "search", "search", "error"]
        error = events[-1][1]["data"]
        assert error["fatal"] is True
        assert "unreachable: connection refused" in error["error"]

        r = httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.status_code == 502
        assert "unreachable" in r.json()["error"]["message"]
        assert r.headers["x-should-retry"] == "false"

        with openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c:
            stream = c.chat.completions.create(
                model="hoptree", messages=[{"role": "user", "content": "q?"}], stream=True
            )
            steps = []
            with pytest.raises(openai.APIError, match="unreachable") as info:
                for chunk in stream:
                    steps.append(reasoning_of(chunk.choices[0].delta))
            assert info.value.code == "agent_failed"
            assert len(steps) == 4 and steps[0].startswith("- planning")  # shown until it broke
            with pytest.raises(openai.APIStatusError) as failed:
                c.chat.completions.create(
                    model="hoptree", messages=[{"role": "user", "content": "q?"}]
                )
            assert failed.value.status_code == 502 and failed.value.code == "agent_failed"
        assert httpx.get(base + "/healthz", timeout=TIMEOUT).json() == {
            "status": "ok",
            "running": 0,
            "max_concurrency": 2,
        }


def test_a_crash_is_a_500_in_each_endpoints_style() -> None:
    agent = ScriptedAgent(fail_after=1, fail_mode="crash", fail_message="a bug")
    with (
        live_server(agent) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c,
    ):
        with pytest.raises(openai.InternalServerError) as info:
            c.chat.completions.create(
                model="hoptree", messages=[{"role": "user", "content": QUESTION}]
            )
        assert info.value.status_code == 500 and info.value.type == "server_error"
        assert set(info.value.body or {}) == {"message", "type", "param", "code"}
        r = httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.status_code == 500 and r.json() == {
            "error": {"message": "internal error: RuntimeError", "type": "server_error"}
        }
        assert httpx.get(base + "/healthz", timeout=TIMEOUT).json()["running"] == 0


def test_agent_final_error_event_is_passed_on_once() -> None:
    agent = ScriptedAgent(fail_after=2, fail_mode="event", fail_message="decompose failed")
    with (
        live_server(agent) as base,
        httpx.stream(
            "POST", base + "/v1/ask/stream", json={"question": QUESTION}, timeout=TIMEOUT
        ) as s,
    ):
        events = list(sse_events(s.iter_lines()))
    assert [name for name, _ in events] == ["started", "decompose", "error"]
    assert events[-1][1]["data"] == {"error": "decompose failed", "where": "decompose"}
