"""A loopback proxy in front of the model server that counts what each peer question spent.

The peers talk to the model through clients of their own (FlashRAG's ``openai`` generator,
DSPy's litellm, LangChain's ``ChatOpenAI``), none of which reports its cost the way hoptree's
``UsageTracker`` does. Counting at the wire is the one way that treats them all alike: every
question gets its own path prefix (``http://127.0.0.1:PORT/m/<meter>/v1``), the proxy forwards
the request to the real endpoint with the real key, and adds the reply's ``usage`` (and
llama.cpp's ``timings``) to that question's ``Meter``. Two questions at a time each have a
meter, so their counts never mix.

The proxy also records what the peer asked for (temperature, the output cap) so a row can say
when a peer did not run at temperature 0.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from agent.runtime.usage import StepUsage

_HOP_BY_HOP = frozenset(
    "connection keep-alive proxy-authenticate proxy-authorization te trailers "
    "transfer-encoding upgrade content-length host authorization content-encoding".split()
)


@dataclass
class Meter:
    """What one question's requests cost, summed from the replies."""

    id: str
    base_url: str
    # the same record hoptree's own calls are counted in (``calls`` are the calls that
    # answered, ``errors`` those that did not), so a peer's row is made as every row is
    usage: StepUsage = field(default_factory=StepUsage)
    temperatures: set[float | None] = field(default_factory=set)
    max_tokens: set[int | None] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_request(self, body: dict[str, Any]) -> None:
        cap = body.get("max_completion_tokens", body.get("max_tokens"))
        with self._lock:
            self.temperatures.add(body.get("temperature"))
            self.max_tokens.add(cap if isinstance(cap, int) else None)

    def add_reply(self, status: int, reply: dict[str, Any] | None) -> None:
        with self._lock:
            if status >= 400 or reply is None:
                self.usage.errors += 1
                return
            self.usage.calls += 1
            usage = reply.get("usage") or {}
            self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)
            details = usage.get("prompt_tokens_details") or {}
            self.usage.cached_prompt_tokens += int(details.get("cached_tokens") or 0)
            timings = reply.get("timings") or {}
            self.usage.prompt_ms += float(timings.get("prompt_ms") or 0.0)
            self.usage.decode_ms += float(timings.get("predicted_ms") or 0.0)

    def warnings(self) -> list[str]:
        """What a row should say about how the peer called the model."""
        notes = []
        hot = sorted(str(t) for t in self.temperatures if t not in (0, 0.0))
        if hot:
            notes.append(f"peer sent temperature {', '.join(hot)} (not 0)")
        failed, made = self.usage.errors, self.usage.calls + self.usage.errors
        if failed:
            notes.append(f"{failed} of {made} model calls failed")
        return notes


class MeteringProxy:
    """``ThreadingHTTPServer`` on 127.0.0.1 forwarding ``/m/<meter>/v1/...`` to ``upstream``.

    ``upstream`` is the endpoint's base URL including its ``/v1``; ``api_key`` is sent upstream
    whatever key the peer's client sent (peers are given a dummy one). ``timeout_s`` bounds each
    forwarded call: a peer whose client waits forever still gets an error back.
    """

    def __init__(self, upstream: str, api_key: str, *, timeout_s: float) -> None:
        self.upstream = upstream.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._meters: dict[str, Meter] = {}
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=10.0))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="peer-metering", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @contextlib.contextmanager
    def meter(self) -> Iterator[Meter]:
        """A fresh meter for one question; its ``base_url`` is what the peer is given."""
        meter_id = uuid.uuid4().hex[:12]
        meter = Meter(meter_id, f"http://127.0.0.1:{self.port}/m/{meter_id}/v1")
        self._meters[meter_id] = meter
        try:
            yield meter
        finally:
            self._meters.pop(meter_id, None)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes, Meter | None]:
        parts = path.split("/", 4)  # "", "m", meter, "v1", rest
        meter = self._meters.get(parts[2]) if len(parts) > 3 and parts[1] == "m" else None
        if meter is None or parts[3] != "v1":
            message = {"error": {"message": f"unknown meter path {path!r}", "type": "not_found"}}
            return 404, {"content-type": "application/json"}, json.dumps(message).encode(), None
        rest = parts[4] if len(parts) > 4 else ""
        if body and method == "POST":
            with contextlib.suppress(ValueError):
                request = json.loads(body)
                if isinstance(request, dict):
                    meter.add_request(request)
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
        sent["authorization"] = f"Bearer {self.api_key}"
        try:
            reply = self._client.request(
                method, f"{self.upstream}/{rest}", headers=sent, content=body or None
            )
        except httpx.HTTPError as exc:
            meter.add_reply(502, None)
            message = {"error": {"message": f"upstream: {type(exc).__name__}: {exc}"}}
            return 502, {"content-type": "application/json"}, json.dumps(message).encode(), meter
        payload: dict[str, Any] | None = None
        if rest.endswith("completions"):
            with contextlib.suppress(ValueError):
                parsed = reply.json()
                payload = parsed if isinstance(parsed, dict) else None
            meter.add_reply(reply.status_code, payload)
        kept = {k: v for k, v in reply.headers.items() if k.lower() not in _HOP_BY_HOP}
        return reply.status_code, kept, reply.content, meter

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, content, _ = proxy._forward(
                    self.command, self.path, dict(self.headers.items()), body
                )
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the peer's client gave up (its own timeout): nobody to tell

            do_GET = _serve
            do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: an eval's progress bar owns the terminal

        return Handler
