"""A real HTTP server on 127.0.0.1 that answers like the four web search provider APIs (bodies
recorded in ``tests/fixtures/web``), with scripted failures (5xx, 429 with Retry-After, 4xx, slow
handlers, malformed bodies), and the providers and web searcher pointed at it: shared by the web
searcher's tests of requests and results and of retries and timeouts.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from searchers.web_providers import (
    BingProvider,
    BraveProvider,
    SearxngProvider,
    TavilyProvider,
    WebProvider,
)
from searchers.web_search import WebSearcher
from tests.loopback_http import serving

QUERY = "Tinted Windows band first gig"
FIXTURES = Path(__file__).parent / "fixtures" / "web"
QUERY = "Tinted Windows band first gig"
# Generous: only the tests about timeouts pass a short one, so a loaded CI machine cannot time
# out a reply that the test expects to arrive.
TIMEOUT_S = 10.0
# route -> (method, path) the real API expects under its base URL
ROUTES = {
    "searxng": ("GET", "/searxng/search"),
    "brave": ("GET", "/brave/res/v1/web/search"),
    "tavily": ("POST", "/tavily/search"),
    "bing": ("GET", "/bing/v7.0/search"),
}


@dataclass
class Reply:
    status: int = 200
    body: bytes | None = None  # None: the route's recorded fixture
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Seen:
    route: str
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes
    at: float


class ProviderServer:
    """State shared with the handler threads: scripted replies per route and a request log."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scripts: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        self.fixtures = {r: (FIXTURES / f"{r}.json").read_bytes() for r in ROUTES}
        self.base = ""

    def url(self, route: str) -> str:
        return f"{self.base}/{route}"

    def script(self, route: str, *replies: Reply) -> None:
        with self.lock:
            self.scripts[route] = list(replies)

    def next_reply(self, route: str) -> Reply:
        with self.lock:
            queue = self.scripts.get(route)
            return queue.pop(0) if queue else Reply()

    def record(self, seen: Seen) -> None:
        with self.lock:
            self.seen.append(seen)

    def requests(self, route: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.route == route]

    def reset(self) -> None:
        with self.lock:
            self.scripts.clear()
            self.seen.clear()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        route = url.path.strip("/").split("/", 1)[0]
        state.record(
            Seen(
                route=route,
                method=method,
                path=url.path,
                params=dict(parse_qsl(url.query, keep_blank_values=True)),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                at=time.monotonic(),
            )
        )
        if ROUTES.get(route) != (method, url.path):
            self._send(Reply(404, b'{"message": "no such endpoint"}'), b"")
            return
        reply = state.next_reply(route)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        self._send(reply, state.fixtures[route])

    def _send(self, reply: Reply, fixture: bytes) -> None:
        payload = fixture if reply.body is None else reply.body
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ProviderServer


@contextmanager
def provider_server() -> Iterator[ProviderServer]:
    """The fake provider APIs, served until the block ends."""
    state = ProviderServer()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = state
    with serving(server) as base:
        state.base = base
        yield state


def dead_url() -> str:
    """A loopback URL with nothing listening (connection refused, instantly)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _timeouts(kw: dict[str, Any]) -> dict[str, Any]:
    return {"timeout_s": TIMEOUT_S, "connect_timeout_s": 5.0, **kw}


def searxng(fake: ProviderServer, **kw: Any) -> SearxngProvider:
    return SearxngProvider(base_url=fake.url("searxng"), **_timeouts(kw))


def brave(fake: ProviderServer, key: str | None = "brave-key", **kw: Any) -> BraveProvider:
    return BraveProvider(api_key=key, base_url=fake.url("brave"), **_timeouts(kw))


def tavily(fake: ProviderServer, key: str | None = "tavily-key", **kw: Any) -> TavilyProvider:
    return TavilyProvider(api_key=key, base_url=fake.url("tavily"), **_timeouts(kw))


def bing(fake: ProviderServer, key: str | None = "bing-key", **kw: Any) -> BingProvider:
    return BingProvider(api_key=key, base_url=fake.url("bing"), **_timeouts(kw))


def web(*providers: WebProvider, **kw: Any) -> WebSearcher:
    options: dict[str, Any] = {
        "backoff_s": 0.01,
        "max_backoff_s": 1.0,
        "trust_env": False,
        "rng": random.Random(7),
    }
    options.update(kw)
    return WebSearcher(list(providers), **options)
