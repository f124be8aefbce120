"""The web searcher against a real HTTP server on 127.0.0.1 that answers like the four provider
APIs (bodies recorded in tests/fixtures/web), plus scripted failures: 5xx, 429 with Retry-After,
4xx, slow handlers, malformed bodies, and a port nobody listens on."""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from searchers.searcher import SearchBudget, Searcher
from searchers.web_providers import (
    BingProvider,
    BraveProvider,
    ProviderError,
    SearxngProvider,
    TavilyProvider,
    WebProvider,
    clean_text,
    parse_retry_after,
    provider_from_name,
)
from searchers.web_search import (
    WebSearcher,
    normalize_url,
    url_id,
    web_searcher_from_options,
)
from tests.loopback_http import serving

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


@pytest.fixture(scope="module")
def provider_server() -> Iterator[ProviderServer]:
    state = ProviderServer()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = state
    with serving(server) as base:
        state.base = base
        yield state


@pytest.fixture
def fake(provider_server: ProviderServer) -> ProviderServer:
    provider_server.reset()
    return provider_server


@pytest.fixture
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


# --- each provider's request and parsing ------------------------------------------------------


async def test_searxng_request_and_parsing(fake: ProviderServer) -> None:
    result = await web(searxng(fake)).search(QUERY)

    (request,) = fake.requests("searxng")
    assert request.params["q"] == QUERY  # sent as is: no rewrite
    assert request.params["format"] == "json"
    assert [h.title for h in result.hits] == [
        "Tinted Windows - Wikipedia",
        "Tinted Windows | Biography & History | AllMusic",
        "Tinted Windows: Tinted Windows Album Review | Pitchfork",
        "Tinted Windows at SXSW",
    ]  # the javascript: item is not a web page and is dropped
    first, allmusic, pitchfork, _ = result.hits
    assert first.text.startswith("Tinted Windows was an American power pop supergroup")
    assert "formed in 2009 & made up of" in first.text
    assert "'and'" in allmusic.text
    assert pitchfork.text == "The debut record from the power-pop supergroup."  # no <script>
    assert allmusic.passage.metadata == {
        "url": "https://www.allmusic.com/artist/tinted-windows-mn0001?utm_source=searx&utm_medium=web",
        "provider": "searxng",
        "rank": 2,
        "providers": ["searxng"],
    }
    assert [h.passage.metadata["rank"] for h in result.hits] == [1, 2, 3, 4]
    assert all(h.retriever == "web" for h in result.hits)
    assert all(h.id == url_id(h.passage.metadata["url"]) for h in result.hits)
    assert result.searcher == "web" and result.llm_calls == 0
    assert result.stopped == "exhausted" and result.error is None
    (attempt,) = result.attempts
    assert attempt.operation == "web:searxng" and attempt.query == QUERY
    assert attempt.hit_ids == [h.id for h in result.hits]
    assert attempt.verdict is not None and attempt.verdict.coverage is not None
    json.dumps(result.to_json())  # the trace serializes


async def test_brave_request_and_parsing(fake: ProviderServer) -> None:
    result = await web(brave(fake)).search(QUERY, k=7)

    (request,) = fake.requests("brave")
    assert request.headers["x-subscription-token"] == "brave-key"
    assert request.params == {"q": QUERY, "count": "7"}
    assert [h.title for h in result.hits] == [
        "Tinted Windows (band) - Wikipedia",  # <strong> highlighting stripped
        "Tinted Windows | Biography & History | AllMusic",
        "Tinted Windows – Wikipedia",
    ]
    assert (
        result.hits[0].text == "Tinted Windows played their first show in Austin & toured in 2009."
    )
    assert (
        result.hits[0].passage.metadata["url"]
        == "https://en.wikipedia.org/wiki/Tinted_Windows_(band)"
    )
    assert {h.passage.metadata["provider"] for h in result.hits} == {"brave"}
    assert "brave-key" not in json.dumps(result.to_json())


async def test_tavily_request_and_parsing(fake: ProviderServer) -> None:
    result = await web(tavily(fake)).search(QUERY, k=5)

    (request,) = fake.requests("tavily")
    assert request.headers["authorization"] == "Bearer tavily-key"
    body = json.loads(request.body)
    assert body == {"query": QUERY, "max_results": 5, "search_depth": "basic"}  # no key in body
    assert [h.title for h in result.hits] == [
        "Tinted Windows - Wikipedia",
        "Hanson, Iha, Schlesinger and Carlos Form Tinted Windows",
    ]
    assert result.hits[0].text.startswith("Tinted Windows is the debut album")
    assert result.hits[0].passage.metadata["url"].endswith("#History")  # kept as given
    assert "tavily-key" not in json.dumps(result.to_json())


async def test_bing_request_and_parsing(fake: ProviderServer) -> None:
    result = await web(bing(fake)).search(QUERY, k=4)

    (request,) = fake.requests("bing")
    assert request.headers["ocp-apim-subscription-key"] == "bing-key"
    assert request.params["q"] == QUERY and request.params["count"] == "4"
    chronicle, wiki = result.hits
    assert chronicle.title == "Tinted Windows at SXSW - The Austin Chronicle"
    # Bing's private-use hit-highlight markers are gone
    assert chronicle.text == (
        "Tinted Windows played their first gig at SXSW in Austin, Texas, in March 2009."
    )
    assert wiki.title == "Tinted Windows - Wikipedia" and wiki.text == ""
    assert "bing-key" not in json.dumps(result.to_json())


# --- keys, de-duplication, text cleaning --------------------------------------------------------


async def test_provider_without_key_is_skipped_with_a_message(
    fake: ProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="searchers.web_search"):
        searcher = web(searxng(fake), brave(fake, key=None))
    assert any("brave" in r.message and "API key" in r.message for r in caplog.records)

    result = await searcher.search(QUERY)

    assert fake.requests("brave") == []  # never called without its key
    assert len(result.hits) == 4 and result.stopped == "exhausted"
    assert result.error is None  # a skipped provider is configuration, not a failure
    skipped = result.attempts[1]
    assert skipped.operation == "web:brave" and skipped.hit_ids == []
    assert skipped.note == "skipped: needs an API key and has none"


async def test_nothing_configured_is_an_error_result_not_an_exception(
    fake: ProviderServer,
) -> None:
    result = await web(SearxngProvider(), tavily(fake, key="")).search(QUERY)

    assert result.stopped == "error" and result.hits == []
    assert "searxng: skipped: no instance URL configured" in (result.error or "")
    assert "tavily: skipped: needs an API key" in (result.error or "")
    assert fake.seen == []


async def test_results_are_deduplicated_across_providers_by_url(fake: ProviderServer) -> None:
    result = await web(searxng(fake), brave(fake), tavily(fake), bing(fake)).search(QUERY)

    urls = [h.passage.metadata["url"] for h in result.hits]
    assert urls == [
        # rank 1 everywhere it was found; four providers agree, then two, then one
        "https://en.wikipedia.org/wiki/Tinted_Windows",
        "http://www.austinchronicle.com:80/music/2009-03-20/tinted-windows-sxsw",
        "https://en.wikipedia.org/wiki/Tinted_Windows_(band)",
        "https://www.allmusic.com/artist/tinted-windows-mn0001?utm_source=searx&utm_medium=web",
        "https://www.rollingstone.com/music/news/tinted-windows-20090115?fbclid=IwAR0abc",
        "HTTPS://WWW.Pitchfork.COM/reviews/albums/13000-tinted-windows/#review",
    ]
    assert len({h.id for h in result.hits}) == len(result.hits)
    wiki, chronicle, _, allmusic, _, _ = result.hits
    assert wiki.passage.metadata["providers"] == ["searxng", "brave", "tavily", "bing"]
    assert wiki.passage.metadata["provider"] == "searxng" and wiki.score == 1.0
    # the chronicle page was 4th on SearXNG and 1st on Bing: Bing's rank and snippet win
    assert chronicle.passage.metadata["provider"] == "bing"
    assert chronicle.passage.metadata["rank"] == 1
    assert chronicle.passage.metadata["providers"] == ["searxng", "bing"]
    assert allmusic.passage.metadata["providers"] == ["searxng", "brave"]
    assert allmusic.passage.metadata["rank"] == 2
    # every provider's own trace still lists what it returned
    assert [len(a.hit_ids) for a in result.attempts] == [4, 3, 2, 2]
    assert wiki.id in result.attempts[3].hit_ids  # bing's http://EN.Wikipedia.org/... variant


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("HTTPS://EN.Wikipedia.ORG/wiki/X", "https://en.wikipedia.org/wiki/X"),
        ("https://a.com/x/", "https://a.com/x"),
        ("https://a.com/", "https://a.com"),
        ("https://a.com/x#section", "https://a.com/x"),
        ("https://a.com/x?utm_source=s&id=3&utm_medium=m", "https://a.com/x?id=3"),
        ("https://a.com/x?gclid=1&fbclid=2&msclkid=3", "https://a.com/x"),
        ("https://a.com/x?b=2&a=1", "https://a.com/x?a=1&b=2"),
        ("http://a.com:80/x", "https://a.com/x"),
        ("https://a.com:443/x", "https://a.com/x"),
        ("  https://a.com/x  ", "https://a.com/x"),
    ],
)
def test_normalize_url_merges_variants_of_one_page(a: str, b: str) -> None:
    assert normalize_url(a) == normalize_url(b)
    assert url_id(a) == url_id(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://a.com/x?id=3", "https://a.com/x?id=4"),
        ("https://a.com/Wiki/X", "https://a.com/wiki/x"),  # paths are case-sensitive
        ("https://a.com:8080/x", "https://a.com/x"),
        ("https://www.a.com/x", "https://a.com/x"),  # not always the same site
        ("https://a.com/x?ref=a", "https://a.com/x?ref=b"),  # ref can select content
    ],
)
def test_normalize_url_keeps_different_pages_apart(a: str, b: str) -> None:
    assert normalize_url(a) != normalize_url(b)


def test_url_id_is_a_stable_hash_of_the_normalized_url() -> None:
    digest = hashlib.sha256(b"https://a.com/x?id=3").hexdigest()[:16]
    assert url_id("HTTP://A.com/x/?utm_campaign=z&id=3#top") == f"web:{digest}"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<b>Tinted</b> <strong>Windows</strong>", "Tinted Windows"),
        ("Fish &amp; Chips &#39;n&#39; &quot;peas&quot;&nbsp;!", "Fish & Chips 'n' \"peas\" !"),
        ("before<script>alert(1)</script><style>p{}</style>after", "beforeafter"),
        ("\ue000Tinted\ue001 Windows", "Tinted Windows"),
        ("line<br>break<p>para</p>", "line break para"),
        ("  spaced \n\t out  ", "spaced out"),
        ("a < b and c > d", "a < b and c > d"),
        (None, ""),
        (42, ""),
    ],
)
def test_clean_text(raw: object, clean: str) -> None:
    assert clean_text(raw) == clean


def test_clean_text_trims_at_a_word_boundary() -> None:
    assert clean_text("alpha beta gamma delta", max_chars=12) == "alpha beta ..."


# --- retries, Retry-After, timeouts, dead providers ----------------------------------------------


async def test_503_is_retried_then_succeeds(fake: ProviderServer) -> None:
    fake.script("searxng", Reply(503, b"{}"), Reply(503, b"{}"), Reply())

    result = await web(searxng(fake), max_retries=2).search(QUERY)

    assert len(fake.requests("searxng")) == 3
    assert len(result.hits) == 4 and result.stopped == "exhausted" and result.error is None
    note = result.attempts[0].note
    assert note.count("HTTP 503") == 2 and note.count("retrying in") == 2


async def test_retries_are_bounded(fake: ProviderServer) -> None:
    fake.script("brave", *[Reply(502, b"{}") for _ in range(5)])

    result = await web(brave(fake), max_retries=2).search(QUERY)

    assert len(fake.requests("brave")) == 3  # one try and two retries, never more
    assert result.stopped == "error"
    assert "brave: HTTP 502" in (result.error or "") and "after 3 tries" in (result.error or "")


async def test_429_waits_for_retry_after(fake: ProviderServer) -> None:
    fake.script(
        "searxng",
        Reply(429, b'{"message": "slow down"}', headers={"Retry-After": "0.3"}),
        Reply(),
    )

    result = await web(searxng(fake)).search(QUERY)

    first, second = fake.requests("searxng")
    assert second.at - first.at >= 0.3  # backoff alone (0.01 s steps) would come back sooner
    assert len(result.hits) == 4 and result.error is None
    assert "HTTP 429: slow down" in result.attempts[0].note


async def test_retry_after_beyond_the_cap_gives_up(fake: ProviderServer) -> None:
    fake.script("brave", Reply(429, b"{}", headers={"Retry-After": "120"}))

    result = await web(brave(fake), max_backoff_s=1.0).search(QUERY)

    assert len(fake.requests("brave")) == 1
    assert result.stopped == "error"
    assert "asks to wait 120 s, more than the 1 s cap" in (result.error or "")


async def test_no_retry_when_the_wait_outlasts_the_deadline(fake: ProviderServer) -> None:
    fake.script("brave", Reply(429, b"{}", headers={"Retry-After": "0.8"}), Reply())

    result = await web(brave(fake), budget=SearchBudget(deadline_s=0.5)).search(QUERY)

    assert len(fake.requests("brave")) == 1  # no sleep into the deadline, no second request
    assert "no time left to retry before the deadline" in (result.error or "")


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = time.time()
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == (
        pytest.approx(30, abs=1.5)
    )
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_other_than_429_are_not_retried(
    fake: ProviderServer, status: int
) -> None:
    fake.script("brave", Reply(status, b'{"message": "invalid token"}'), Reply())

    result = await web(brave(fake), max_retries=3).search(QUERY)

    assert len(fake.requests("brave")) == 1
    assert result.stopped == "error" and result.hits == []
    assert f"brave: HTTP {status}: invalid token" in (result.error or "")


async def test_searxng_403_hints_at_the_json_format(fake: ProviderServer) -> None:
    fake.script("searxng", Reply(403, b"Forbidden"))

    result = await web(searxng(fake)).search(QUERY)

    assert "json format enabled" in (result.error or "")


async def test_slow_provider_times_out_and_degrades_the_result(fake: ProviderServer) -> None:
    fake.script("brave", Reply(delay_s=1.5))

    result = await web(searxng(fake), brave(fake, timeout_s=0.3)).search(QUERY)

    assert len(result.hits) == 4  # SearXNG's answer survives
    assert {h.passage.metadata["provider"] for h in result.hits} == {"searxng"}
    assert result.stopped == "exhausted"
    assert result.error == "brave: timed out after 0.3 s"
    assert result.attempts[1].note == "brave: timed out after 0.3 s".removeprefix("brave: ")
    assert len(fake.requests("brave")) == 1  # a timeout is not retried


async def test_search_deadline_bounds_the_whole_search(fake: ProviderServer) -> None:
    fake.script("brave", Reply(delay_s=2.0))

    searcher = web(searxng(fake), brave(fake, timeout_s=5.0), budget=SearchBudget(deadline_s=0.5))
    result = await searcher.search(QUERY)

    assert result.stopped == "budget_deadline" and len(result.hits) == 4
    assert "brave: timed out" in (result.error or "") and "search deadline" in (result.error or "")


async def test_all_providers_down_is_an_error_result(fake: ProviderServer, dead_url: str) -> None:
    fake.script("brave", *[Reply(500, b"{}") for _ in range(3)])
    fake.script("tavily", Reply(200, b"<html>maintenance</html>"))
    providers = [
        SearxngProvider(base_url=dead_url, timeout_s=TIMEOUT_S, connect_timeout_s=0.2),
        brave(fake),
        tavily(fake),
    ]

    result = await web(*providers, max_retries=2).search(QUERY)

    assert result.stopped == "error" and result.hits == []
    error = result.error or ""
    assert error.startswith("every web provider failed")
    assert "searxng: cannot connect (ConnectError) (after 3 tries)" in error
    assert "brave: HTTP 500 (after 3 tries)" in error
    assert "tavily: response is not JSON" in error
    assert len(fake.requests("brave")) == 3 and len(fake.requests("tavily")) == 1
    assert [a.operation for a in result.attempts] == ["web:searxng", "web:brave", "web:tavily"]


async def test_unexpected_json_shape_is_a_failure_not_a_crash(fake: ProviderServer) -> None:
    fake.script("bing", Reply(200, b"[1, 2, 3]"))
    fake.script("searxng", Reply(200, b'{"results": "nope"}'))

    result = await web(searxng(fake), bing(fake)).search(QUERY)

    assert result.hits == [] and result.stopped == "exhausted"  # SearXNG answered: no results
    assert "bing: unexpected response" in (result.error or "")


# --- k, the protocol, construction --------------------------------------------------------------


async def test_k_is_respected_and_passed_to_each_provider(fake: ProviderServer) -> None:
    result = await web(searxng(fake), brave(fake), tavily(fake), bing(fake)).search(QUERY, k=3)

    assert len(result.hits) == 3
    assert fake.requests("brave")[0].params["count"] == "3"
    assert json.loads(fake.requests("tavily")[0].body)["max_results"] == 3
    assert fake.requests("bing")[0].params["count"] == "3"
    assert len(result.attempts[0].hit_ids) == 3  # SearXNG has no count parameter: cut here
    assert [h.passage.metadata["rank"] for h in result.hits] == [1, 1, 1]

    result = await web(brave(fake)).search(QUERY, k=50)
    assert fake.requests("brave")[-1].params["count"] == "20"  # Brave's maximum


async def test_protocol_and_degenerate_calls(fake: ProviderServer) -> None:
    searcher = web(searxng(fake))
    assert isinstance(searcher, Searcher)
    assert searcher.name == "web" and "\n" not in searcher.description

    blank = await searcher.search("   ")
    assert blank.stopped == "error" and "empty query" in (blank.error or "")
    nothing = await web().search(QUERY)
    assert nothing.stopped == "error" and nothing.error == "no web provider configured"
    assert fake.seen == []


def test_provider_from_name() -> None:
    provider = provider_from_name("Brave", base_url="http://127.0.0.1:9/brave", api_key="s3cret")
    assert isinstance(provider, BraveProvider)
    assert provider.base_url == "http://127.0.0.1:9/brave" and provider.unavailable() is None
    assert "s3cret" not in repr(provider)
    assert provider_from_name("tavily").unavailable() == "needs an API key and has none"
    assert provider_from_name("bing", api_key="").unavailable() is not None
    assert provider_from_name("searxng").unavailable() is not None  # no public default
    assert isinstance(provider_from_name("searxng", base_url="http://x"), SearxngProvider)
    with pytest.raises(ValueError, match="known: searxng, brave, tavily, bing"):
        provider_from_name("google")


def test_web_searcher_from_options() -> None:
    searcher = web_searcher_from_options(
        {
            "providers": "searxng, brave",
            "searxng_url": "http://127.0.0.1:8888",
            "brave_api_key": "k",
            "timeout_s": 2.5,
            "max_retries": 1,
        },
        budget=SearchBudget(deadline_s=9),
    )
    searx, brv = searcher.providers
    assert isinstance(searx, SearxngProvider) and searx.base_url == "http://127.0.0.1:8888"
    assert isinstance(brv, BraveProvider) and brv.api_key == "k" and brv.timeout_s == 2.5
    assert searcher.max_retries == 1 and searcher.budget.deadline_s == 9
    with pytest.raises(ValueError):
        web_searcher_from_options({"providers": ["searxng", "yahoo"]})


async def test_a_provider_alone_times_out_too(fake: ProviderServer) -> None:
    """Outside the searcher (no deadline around it) httpx's own timeouts still bound a call."""
    fake.script("tavily", Reply(delay_s=1.0))
    provider = tavily(fake, timeout_s=0.2)

    async with httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(ProviderError) as caught:
            await provider.search(client, QUERY, 3)
    assert caught.value.timed_out and not caught.value.retryable
