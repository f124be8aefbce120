"""A scripted OpenAI-compatible endpoint for the peer pipelines' tests.

The peers (FlashRAG, DSPy, LangGraph, LlamaIndex) each word their own prompts, so this stand-in
does not route by hoptree's prompt files as ``routed_endpoint`` does: the test passes a function
from the request's JSON to the reply text. It serves ``/v1/chat/completions`` and
``/v1/completions`` (with token counts, as a real server reports them), records every request
with its path and ``Authorization`` header, and answers ``GET /v1/models``. A chat reply may
also be a dict, the assistant message itself (``{"content": None, "tool_calls": [...]}``), for a
model that calls a tool; ``tool_call`` writes one. Its ``logprobs`` and ``finish_reason`` keys
go on the choice, as a server sends them.

``outside_connections`` refuses and records every connection off the loopback interface while a
test runs a peer: the peers' libraries must not download anything. ``run_peer`` runs a peer
pipeline through ``run_eval`` on the tiny question file against a scripted endpoint, with both.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_openai import ChatOpenAI

from agent.settings import Settings
from evals.pipelines import EvalContext
from evals.run_directory import RunConfig
from evals.runner import run_eval
from tests.eval_script import ROW_FIELDS, TINY, rows, scripted_settings
from tests.loopback_http import send_json, serving

Reply = Callable[[dict[str, Any]], str | dict[str, Any]]


def prompt_text(body: dict[str, Any]) -> str:
    """The whole prompt of a request, chat or completion, as one string."""
    if "prompt" in body:
        prompt = body["prompt"]
        return "\n".join(prompt) if isinstance(prompt, list) else str(prompt)
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(str(content))
    return "\n".join(parts)


@dataclass
class PeerEndpoint:
    base_url: str  # ends in /v1
    requests: list[dict[str, Any]] = field(default_factory=list)  # {"path", "auth", "body"}

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> dict[str, Any]:
    """An assistant message calling one tool, as an OpenAI-compatible server returns it."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _answer(path: str, body: dict[str, Any], text: str | dict[str, Any]) -> dict[str, Any]:
    usage = {"prompt_tokens": len(prompt_text(body)) // 4 + 1, "completion_tokens": 7}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop"}
        kind = "text_completion"
    else:
        message = {"role": "assistant", **(text if isinstance(text, dict) else {"content": text})}
        logprobs = message.pop("logprobs", None)  # a scripted reply's, sent on the choice
        finish = message.pop("finish_reason", None) or (
            "tool_calls" if message.get("tool_calls") else "stop"
        )
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}
        kind = "chat.completion"
    return {
        "id": "peer-stub",
        "object": kind,
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [choice],
        "usage": usage,
        "timings": {"prompt_ms": 12.5, "predicted_ms": 30.0},
    }


@contextmanager
def peer_endpoint(reply: Reply) -> Iterator[PeerEndpoint]:
    """Serves ``reply`` on 127.0.0.1; yields the endpoint (its base URL and its requests)."""
    lock = threading.Lock()
    endpoint = PeerEndpoint(base_url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, data: dict[str, Any]) -> None:
            send_json(self, status, data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            with lock:
                endpoint.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
            try:
                self._send(200, _answer(self.path, body, reply(body)))
            except Exception as exc:  # an unscripted prompt: the peer sees a failed call
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})

        def log_message(self, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as base:
        endpoint.base_url = f"{base}/v1"
        yield endpoint


def _loopback(host: Any) -> bool:
    if not isinstance(host, str) or host in ("localhost", ""):
        return True  # a Unix socket's path, or this machine by name
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@contextmanager
def outside_connections() -> Iterator[list[str]]:
    """While the block runs, every name lookup or connection that is not to the loopback
    interface fails (as on a machine with no network) and is recorded in the yielded list."""
    attempts: list[str] = []
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if not _loopback(host):
            attempts.append(f"connect {host}")
            raise OSError(f"test: no connection to {host} outside this machine")
        real_connect(self, address)

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback(host):
            attempts.append(f"lookup {host}")
            raise socket.gaierror(f"test: no name lookup of {host} outside this machine")
        return real_lookup(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.getaddrinfo = lookup  # type: ignore[assignment]
    try:
        yield attempts
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.getaddrinfo = real_lookup


@dataclass
class PeerRun:
    endpoint: PeerEndpoint
    metrics: dict[str, Any]
    rows: list[dict[str, Any]]
    outside: list[str]  # connections tried off this machine (none, for a peer run offline)

    def by_topic(self, topics: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The rows, each under the first of ``topics`` its question mentions."""
        return {next(t for t in topics if t in row["question"]): row for row in self.rows}

    def check_plumbing(self, calls: int, max_tokens: int) -> None:
        """Nothing tried off the machine; every row has the common fields; ``calls`` chat
        requests, all at the run's URL with the run's key, at temperature 0, not streamed,
        capped at ``max_tokens`` (as ``max_completion_tokens`` or ``max_tokens``)."""
        assert self.outside == []
        assert self.metrics["n"] == len(self.rows)
        assert all(set(row) >= ROW_FIELDS for row in self.rows)
        assert len(self.endpoint.requests) == calls
        assert {r["path"] for r in self.endpoint.requests} == {"/v1/chat/completions"}
        assert {r["auth"] for r in self.endpoint.requests} == {"Bearer run-key"}
        for body in self.endpoint.bodies():
            assert body["temperature"] == 0 and not body.get("stream")
            assert body.get("max_completion_tokens", body.get("max_tokens")) == max_tokens


async def run_peer(
    pipeline: str, reply: Reply, settings: Settings, embeddings: Any, out: Path, *, limit: int
) -> PeerRun:
    """``pipeline`` on the first ``limit`` tiny questions (distractor setting, k = 2, the
    ``scripted_settings``), its model the scripted ``reply`` (reached with the key "run-key"),
    no connection off this machine."""
    with peer_endpoint(reply) as endpoint, outside_connections() as outside:
        chat = ChatOpenAI(base_url=endpoint.base_url, model="stub", api_key="run-key")
        scripted = scripted_settings(settings)
        ctx = EvalContext(chat=chat, settings=scripted, embeddings=embeddings, k=2)
        config = RunConfig(
            dataset=TINY, pipeline=pipeline, out=out, setting="distractor", limit=limit
        )
        metrics = await run_eval(config, ctx)
    return PeerRun(endpoint, metrics, rows(out), outside)
