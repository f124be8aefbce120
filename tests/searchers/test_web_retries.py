"""The web searcher when providers fail, against a real HTTP server on 127.0.0.1 that answers
like the four provider APIs (``tests/web_provider_server.py``): 503s retried and bounded, 429
with Retry-After, other 4xx not retried, slow providers timed out, the search's deadline, every
provider down, malformed bodies."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator

import httpx
import pytest

from searchers.searcher import SearchBudget
from searchers.web_providers import (
    ProviderError,
    SearxngProvider,
    parse_retry_after,
)
from tests.web_provider_server import (
    QUERY,
    TIMEOUT_S,
    ProviderServer,
    Reply,
    bing,
    brave,
    searxng,
    tavily,
    web,
)
from tests.web_provider_server import dead_url as refused_url
from tests.web_provider_server import provider_server as serve_providers


@pytest.fixture(scope="module")
def provider_server() -> Iterator[ProviderServer]:
    with serve_providers() as state:
        yield state


@pytest.fixture
def fake(provider_server: ProviderServer) -> ProviderServer:
    provider_server.reset()
    return provider_server


@pytest.fixture
def dead_url() -> str:
    return refused_url()


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


async def test_a_provider_alone_times_out_too(fake: ProviderServer) -> None:
    """Outside the searcher (no deadline around it) httpx's own timeouts still bound a call."""
    fake.script("tavily", Reply(delay_s=1.0))
    provider = tavily(fake, timeout_s=0.2)

    async with httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(ProviderError) as caught:
            await provider.search(client, QUERY, 3)
    assert caught.value.timed_out and not caught.value.retryable
