"""The HTTP agent API over a real uvicorn server on 127.0.0.1, called with httpx and the official
``openai`` client. The agent behind it is the scripted test double (``tests.fake_agent``): these
tests are about the server (shapes, auth, serving), not the planner; its limits, cancellation and
failures are ``tests/surfaces/test_http_limits.py``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import SecretStr

from agent.results import TraceEvent
from agent.serve.api import serve
from agent.serve.errors import openai_validation_error
from agent.serve.http_server import ServeRefused, check_bind_allowed, is_loopback_host
from agent.serve.openai_api import text_pieces
from agent.settings import ServerSettings
from agent.trace_lines import progress_line
from tests.child_env import child_environment
from tests.fake_agent import ANSWER, QUESTION, ScriptedAgent, ScriptedRunAgent, scripted_events
from tests.http_client import (
    KEY,
    TIMEOUT,
    assert_openai_error,
    auth,
    reasoning_of,
    sse_events,
    stream_deltas,
)
from tests.live_server import live_server
from tests.locations import REPO

EVENT_KINDS = [
    "started",
    "decompose",
    "search",
    "search",
    "finding",
    "verify",
    "next_round",
    "search",
    "search",
    "finding",
    "verify",
    "answer",
    "result",
]


@pytest.fixture(scope="module")
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def url(agent: ScriptedAgent) -> Iterator[str]:
    """One keyed server for the tests that only read; limit tests start their own."""
    with live_server(agent, api_key=KEY, request_deadline_s=120.0, max_concurrency=4) as base:
        yield base


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, timeout=20.0) as c:
        yield c


# --------------------------------------------------------------------------- the endpoints


def test_ask_returns_the_cited_result(url: str, agent: ScriptedAgent) -> None:
    r = httpx.post(
        url + "/v1/ask",
        json={"question": f"  {QUESTION}\n", "thread_id": "t-1"},
        headers=auth(),
        timeout=TIMEOUT,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    for key in ("answer", "short_answer", "citations", "sub_queries", "llm_calls", "trace"):
        assert key in body
    assert body["answer"] == ANSWER
    assert body["short_answer"] == "the Seine"
    assert [c["n"] for c in body["citations"]] == [1, 2, 3]
    assert [q["id"] for q in body["sub_queries"]] == ["q1", "q2"]
    call = agent.calls[-1]
    assert call["question"] == QUESTION  # cleaned once at the door
    assert call["thread_id"] == "t-1"
    assert call["deadline_s"] == 120.0


def test_ask_stream_sends_every_trace_event_then_the_result(url: str) -> None:
    with httpx.stream(
        "POST", url + "/v1/ask/stream", json={"question": QUESTION}, headers=auth(), timeout=TIMEOUT
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(r.iter_lines()))
    assert [name for name, _ in events] == EVENT_KINDS
    assert all(name == data["kind"] for name, data in events)
    by_kind = {name: data for name, data in events}
    assert by_kind["decompose"]["data"]["sub_queries"] == [
        {"id": "q1", "query": "In which city does the Eiffel Tower stand?"}
    ]
    search = by_kind["search"]["data"]
    for key in ("sub_query_id", "searcher", "query", "hits", "attempts", "best_attempt", "stopped"):
        assert key in search
    assert by_kind["result"]["data"]["answer"] == ANSWER


def test_openai_client_non_streaming(client: openai.OpenAI, agent: ScriptedAgent) -> None:
    completion = client.chat.completions.create(
        model="hoptree",
        messages=[
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": QUESTION},
        ],
        user="conversation-7",
    )
    assert completion.object == "chat.completion"
    assert completion.model == "hoptree"
    content = completion.choices[0].message.content or ""
    assert content.startswith(ANSWER)
    assert "Sources:\n[1] Eiffel Tower" in content
    assert "[2] Seine" in content
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (5120, 384)
    assert completion.usage.total_tokens == 5504
    assert agent.calls[-1]["thread_id"] == "conversation-7"
    assert (completion.model_extra or {})["hoptree"]["short_answer"] == "the Seine"
    # the trace is the message's reasoning, never its content
    reasoning = reasoning_of(completion.choices[0].message)
    assert reasoning.startswith("- planning the search") and "planned 1 atomic query" in reasoning
    assert "planned" not in content and "verdict" not in content


def test_openai_client_text_parts_and_thread_header(
    client: openai.OpenAI, agent: ScriptedAgent
) -> None:
    completion = client.chat.completions.create(
        model="hoptree",
        messages=[
            {"role": "user", "content": "Where is the Eiffel Tower?"},
            {"role": "assistant", "content": "In Paris [1]."},
            {"role": "user", "content": [{"type": "text", "text": "Which river flows there?"}]},
        ],
        user="ignored-when-the-header-is-set",
        extra_headers={"X-Hoptree-Thread": "thread-from-header"},
    )
    assert completion.choices[0].message.content
    assert agent.calls[-1]["question"] == "Which river flows there?"  # the last user turn only
    assert agent.calls[-1]["thread_id"] == "thread-from-header"


def test_openai_client_streaming(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="hoptree",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    deltas = stream_deltas(iter(chunks))
    kinds = [kind for kind, _ in deltas]
    # every step of the scripted run is one reasoning line, all of them before the answer
    assert kinds.count("reasoning") == len(scripted_events(QUESTION, None))
    assert kinds == sorted(kinds, key=lambda k: k == "content")
    reasoning = "".join(text for kind, text in deltas if kind == "reasoning")
    for line in (
        "- planned 1 atomic query: In which city does the Eiffel Tower stand?\n",
        "- sparse searched 'In which city does the Eiffel Tower stand?': verified",
        "- q1 finding: The Eiffel Tower stands on the Champ de Mars in Paris, France. (supported)",
        "- round 1 verdict: insufficient",
        "- follow-up queries: Which river flows through Paris?\n",
        "- round 2 verdict: sufficient",
    ):
        assert line in reasoning
    content = "".join(text for kind, text in deltas if kind == "content")
    assert content.startswith(ANSWER)
    assert "Sources:\n[1] Eiffel Tower" in content
    assert kinds.count("content") > 1  # the answer really arrives in pieces
    finishes = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finishes] == ["stop"]
    assert (finishes[0].model_extra or {})["hoptree"]["short_answer"] == "the Seine"
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None and usage.prompt_tokens == 5120
    completion = client.chat.completions.create(
        model="hoptree", messages=[{"role": "user", "content": QUESTION}]
    )
    assert content == completion.choices[0].message.content
    assert reasoning == reasoning_of(completion.choices[0].message)


def test_chat_stream_shows_the_plan_before_the_run_ends() -> None:
    """The first reasoning line reaches the client while the run is provably unfinished: the
    agent holds after two steps until the test has read it. ``run`` drives the stream."""
    agent = ScriptedRunAgent(hold_after=2)
    with (
        live_server(agent) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c,
    ):
        try:
            chunks = iter(
                c.chat.completions.create(
                    model="hoptree",
                    messages=[{"role": "user", "content": QUESTION}],
                    stream=True,
                )
            )
            first = next(chunks)
            assert reasoning_of(first.choices[0].delta).startswith("- planning the search")
            assert first.choices[0].delta.role == "assistant"
            assert agent.completed == 0 and agent.active == 1  # the run is held, unfinished
        finally:
            agent.resume.set()
        deltas = [("reasoning", reasoning_of(first.choices[0].delta)), *stream_deltas(chunks)]
    kinds = [kind for kind, _ in deltas]
    assert kinds.count("reasoning") == len(scripted_events(QUESTION, None))
    assert kinds == sorted(kinds, key=lambda k: k == "content")
    assert "".join(text for kind, text in deltas if kind == "content").startswith(ANSWER)
    assert agent.runs == 1 and agent.completed == 1


def test_models_searchers_health_and_docs(client: openai.OpenAI, url: str) -> None:
    models = client.models.list()
    assert [m.id for m in models.data] == ["hoptree"]
    assert client.models.retrieve("hoptree").id == "hoptree"
    r = httpx.get(url + "/v1/searchers", headers=auth(), timeout=TIMEOUT)
    assert r.json()["searchers"] == ["sparse", "dense"]
    assert httpx.get(url + "/healthz", timeout=TIMEOUT).json()["status"] == "ok"
    docs = httpx.get(url + "/docs", timeout=TIMEOUT)
    assert docs.status_code == 200 and "cdn" not in docs.text.lower()
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js"):
        assert (
            f"/docs-assets/{asset}" in docs.text + httpx.get(url + "/redoc", timeout=TIMEOUT).text
        )
        served = httpx.get(f"{url}/docs-assets/{asset}", timeout=TIMEOUT)
        assert served.status_code == 200 and len(served.content) > 10_000
    paths = httpx.get(url + "/openapi.json", timeout=TIMEOUT).json()["paths"]
    assert {"/v1/ask", "/v1/ask/stream", "/v1/chat/completions"} <= set(paths)
    page = httpx.get(url + "/", timeout=TIMEOUT)
    assert page.status_code == 200 and "hoptree" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]


def test_native_endpoints_keep_their_error_style(url: str) -> None:
    r = httpx.get(url + "/v1/nowhere", headers=auth(), timeout=TIMEOUT)
    assert r.status_code == 404
    assert set(r.json()["error"]) >= {"message", "type"}
    r = httpx.post(url + "/v1/ask", json={"thread_id": "x"}, headers=auth(), timeout=TIMEOUT)
    assert r.status_code == 422
    assert "question" in r.json()["error"]["message"]
    assert "param" not in r.json()["error"]
    r = httpx.post(
        url + "/v1/ask",
        json={"question": QUESTION, "thread_id": "has spaces"},
        headers=auth(),
        timeout=TIMEOUT,
    )
    assert r.status_code == 422 and "thread_id" in r.json()["error"]["message"]
    r = httpx.post(
        url + "/v1/ask",
        content=b'{"question": "unfinished',
        headers={**auth(), "Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_request_error"


def test_openai_endpoints_answer_errors_as_openai_does(url: str, agent: ScriptedAgent) -> None:
    chat = url + "/v1/chat/completions"
    runs = len(agent.calls)

    def post(body: Any) -> httpx.Response:
        return httpx.post(chat, json=body, headers=auth(), timeout=TIMEOUT)

    r = httpx.post(
        chat,
        content=b'{"model": "hoptree", "messages": [{"role": "user"',
        headers={**auth(), "Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    error = assert_openai_error(r, 400, "invalid_json")
    assert error["type"] == "invalid_request_error" and "not valid JSON" in error["message"]
    user = [{"role": "user", "content": QUESTION}]
    error = assert_openai_error(
        post({"messages": user}), 400, "missing_required_parameter", "model"
    )
    assert "hoptree" in error["message"]
    assert_openai_error(post({"model": "hoptree"}), 400, "missing_required_parameter", "messages")
    assert_openai_error(
        post({"model": "hoptree", "messages": user, "stream": "perhaps"}),
        400,
        "invalid_type",
        "stream",
    )
    assert_openai_error(
        post({"model": "hoptree", "messages": []}), 400, "invalid_value", "messages"
    )
    system_only = [{"role": "system", "content": "hi"}]
    error = assert_openai_error(
        post({"model": "hoptree", "messages": system_only}), 400, "no_user_message", "messages"
    )
    assert "no user message" in error["message"]
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]
    assert_openai_error(
        post({"model": "hoptree", "messages": image}), 400, "unsupported_content", "messages"
    )
    assert_openai_error(
        post({"model": "hoptree", "messages": user, "user": "has spaces"}),
        400,
        "invalid_thread_id",
        "user",
    )
    r = httpx.get(chat, headers=auth(), timeout=TIMEOUT)
    assert assert_openai_error(r, 405, "method_not_allowed")["type"] == "invalid_request_error"
    assert len(agent.calls) == runs  # none of these started a run


def test_an_unknown_model_is_404_before_any_run(
    client: openai.OpenAI, agent: ScriptedAgent
) -> None:
    runs = len(agent.calls)
    for stream in (False, True):
        with pytest.raises(openai.NotFoundError) as info:
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": QUESTION}], stream=stream
            )
        assert info.value.status_code == 404
        assert (info.value.code, info.value.param, info.value.type) == (
            "model_not_found",
            "model",
            "invalid_request_error",
        )
        assert "'gpt-4o' does not exist" in info.value.message
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("gpt-4o")
    assert info.value.code == "model_not_found"
    assert len(agent.calls) == runs


def test_progress_lines_for_the_planners_event_shapes() -> None:
    """What the planner emits beyond the scripted run: hops, waiting queries, failed searches,
    unsupported findings, the citation check; unknown or malformed steps are skipped."""
    assert (
        progress_line(
            TraceEvent(
                "decompose",
                {
                    "sub_queries": [{"id": "q1", "query": "Who directed  Jaws?"}],
                    "waiting": [{"id": "q2", "query": "Where was #1 born?"}],
                },
            )
        )
        == "planned 2 atomic queries (1 wait for an earlier answer): Who directed Jaws?; "
        "Where was #1 born?"
    )
    failed = {"searcher": "dense", "query": "q", "stopped": "error", "error": "index gone"}
    assert progress_line(TraceEvent("search", failed)) == "dense failed on 'q': index gone"
    assert (
        progress_line(TraceEvent("finding", {"id": "q2", "finding": "", "proposed": "Ohio"}))
        == "q2 finding not supported by its passages: Ohio"
    )
    assert progress_line(TraceEvent("finding", {"id": "q3", "finding": ""})) == "q3: not found"
    verdict = {"sufficient": False, "reason": "open queries", "missing": "Where was #1 born?"}
    assert (
        progress_line(TraceEvent("verify", verdict, round=2))
        == "round 2 verdict: insufficient (open queries); missing: Where was #1 born?"
    )
    hop = {"origin": "hop", "sub_queries": [{"id": "q2", "query": "Where was Spielberg born?"}]}
    assert progress_line(TraceEvent("next_round", hop)) == "next hop: Where was Spielberg born?"
    check = {"sentences": 3, "kept": 2, "recited": 0, "dropped": 1}
    assert (
        progress_line(TraceEvent("answer", {"check": check}))
        == "answer written; citation check kept 2 of 3 sentence(s), dropped 1 ungrounded"
    )
    assert progress_line(TraceEvent("result", {})) is None
    assert len(progress_line(TraceEvent("finding", {"id": "q1", "finding": "x" * 500})) or "") < 150


def test_openai_validation_errors_name_the_field() -> None:
    errors = [
        {"type": "string_type", "loc": ("body", "messages", 0, "role"), "msg": "bad"},
        {"type": "missing", "loc": ("body", "model"), "msg": "Field required"},
    ]
    assert openai_validation_error(errors) == (
        "messages[0].role: bad; model: Field required",
        "messages[0].role",
        "invalid_type",
    )
    fraction = [{"type": "int_type", "loc": ("body", "n"), "msg": "not an int", "input": 1.5}]
    assert openai_validation_error(fraction) == (
        "n: not an int, got the number 1.5",
        "n",
        "invalid_type",
    )
    union = [  # pydantic names the union member that failed; OpenAI names the field
        {"type": "string_type", "loc": ("body", "messages", 0, "content", "str"), "msg": "a"},
        {"type": "list_type", "loc": ("body", "messages", 0, "content", "list[dict]"), "msg": "b"},
    ]
    assert openai_validation_error(union)[1] == "messages[0].content"
    not_an_object = [{"type": "model_attributes_type", "loc": ("body",), "msg": "not a dict"}]
    assert openai_validation_error(not_an_object) == (
        "the request body must be a JSON object",
        None,
        "invalid_json",
    )
    bad_json = [{"type": "json_invalid", "loc": ("body", 8), "ctx": {"error": "Expecting value"}}]
    assert openai_validation_error(bad_json, '{\n "a": }') == (
        "the request body is not valid JSON: Expecting value: line 2, column 7 (character 8)",
        None,
        "invalid_json",
    )
    assert openai_validation_error(bad_json)[0].endswith("Expecting value: character 8")


# --------------------------------------------------------------------------- auth


def test_auth_on_every_v1_endpoint(url: str) -> None:
    for method, path, body in (
        ("POST", "/v1/ask", {"question": QUESTION}),
        ("POST", "/v1/ask/stream", {"question": QUESTION}),
        ("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "q?"}]}),
        ("GET", "/v1/models", None),
        ("GET", "/v1/searchers", None),
    ):
        for headers in ({}, auth("wrong-key"), {"Authorization": f"Basic {KEY}"}):
            r = httpx.request(method, url + path, json=body, headers=headers, timeout=TIMEOUT)
            assert r.status_code == 401, (path, headers, r.text)
            assert r.json()["error"]["type"] == "authentication_error"
            assert r.json()["error"]["code"] == "invalid_api_key"
            assert ("param" in r.json()["error"]) == path.startswith(("/v1/chat", "/v1/models"))
            assert r.headers["www-authenticate"] == "Bearer"
    assert httpx.get(url + "/v1/models", headers=auth(), timeout=TIMEOUT).status_code == 200
    assert httpx.get(url + "/healthz", timeout=TIMEOUT).status_code == 200
    assert httpx.get(url + "/", timeout=TIMEOUT).status_code == 200


def test_openai_client_with_a_wrong_key(url: str) -> None:
    with (
        openai.OpenAI(base_url=url + "/v1", api_key="nope", max_retries=0, timeout=20.0) as c,
        pytest.raises(openai.AuthenticationError) as info,
    ):
        c.chat.completions.create(model="hoptree", messages=[{"role": "user", "content": "q?"}])
    assert "API key" in str(info.value)
    assert (info.value.code, info.value.type) == ("invalid_api_key", "authentication_error")


# --------------------------------------------------------------------------- serving


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


async def test_serve_refuses_a_public_host_without_a_key() -> None:
    with pytest.raises(ServeRefused, match="without an API key"):
        await serve(ScriptedAgent(), ServerSettings(host="0.0.0.0", port=0))
    with pytest.raises(ServeRefused):
        check_bind_allowed(ServerSettings(host="0.0.0.0", api_key=SecretStr("  ")))
    check_bind_allowed(ServerSettings(host="0.0.0.0", api_key=SecretStr(KEY)))
    check_bind_allowed(ServerSettings(host="127.0.0.1"))


def test_text_pieces_rejoin_exactly() -> None:
    text = ANSWER + "\n\nSources:\n[1] Eiffel Tower (eiffel-tower-3f2a)" + " x" * 100
    pieces = text_pieces(text, size=40)
    assert "".join(pieces) == text
    assert len(pieces) > 3 and all(len(p) <= 40 for p in pieces)
    assert text_pieces("") == []
    assert "".join(text_pieces("a" * 130, size=40)) == "a" * 130


SERVE_SCRIPT = """
import sys
from contextlib import asynccontextmanager
import typer
from agent.cli.serve import add_serve_command
from agent.settings import load_settings
from tests.http_client import (
    KEY,
    TIMEOUT,
    assert_openai_error,
    auth,
    reasoning_of,
    sse_events,
    stream_deltas,
)
from tests.fake_agent import ScriptedAgent

@asynccontextmanager
async def open_agent(index):
    yield ScriptedAgent()

app = typer.Typer()
add_serve_command(app, open_agent, load_settings=lambda: load_settings())
@app.command("noop")
def noop() -> None: ...
app(sys.argv[1:])
"""


def _serve_cli(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = child_environment()
    env["HOPTREE_DATA_DIR"] = str(tmp_path / "data")
    return subprocess.Popen(
        [sys.executable, "-c", SERVE_SCRIPT, "serve", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_command_prints_the_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    proc = _serve_cli(tmp_path, "--index", str(tmp_path), "--port", "0")
    try:
        assert proc.stdout is not None
        line = ""
        ends = time.monotonic() + 30
        while "serving" not in line and time.monotonic() < ends:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.stderr else "")
        base = line.split("at ")[1].strip().rstrip("/")
        assert httpx.get(base + "/healthz", timeout=TIMEOUT).status_code == 200
        r = httpx.post(base + "/v1/ask", json={"question": QUESTION}, timeout=TIMEOUT)
        assert r.json()["short_answer"] == "the Seine"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_serve_command_refuses_a_public_host_without_a_key(tmp_path: Path) -> None:
    proc = _serve_cli(tmp_path, "--index", str(tmp_path), "--host", "0.0.0.0")
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 2
    assert "refusing to serve on '0.0.0.0' without an API key" in " ".join(stderr.split())
