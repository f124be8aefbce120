"""A scripted OpenAI-compatible endpoint for the peer pipelines' tests.

The peers (FlashRAG, DSPy, LangGraph, LlamaIndex) each word their own prompts, so this stand-in
does not route by hoptree's prompt files as ``routed_endpoint`` does: the test passes a function
from the request's JSON to the reply text. It serves ``/v1/chat/completions`` and
``/v1/completions`` (with token counts, as a real server reports them), records every request
with its path and ``Authorization`` header, and answers ``GET /v1/models``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.loopback_http import serving

Reply = Callable[[dict[str, Any]], str]


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


def _answer(path: str, body: dict[str, Any], text: str) -> dict[str, Any]:
    usage = {"prompt_tokens": len(prompt_text(body)) // 4 + 1, "completion_tokens": 7}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop"}
        kind = "text_completion"
    else:
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
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
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

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
