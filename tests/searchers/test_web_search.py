"""The web searcher's requests and results against a real HTTP server on 127.0.0.1 that answers
like the four provider APIs (``tests/web_provider_server.py``): each provider's request and
parsing, keys, de-duplication, text cleaning, k and construction. Retries, Retry-After, timeouts
and dead providers are ``tests/searchers/test_web_retries.py``."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator

import pytest

from searchers.searcher import SearchBudget, Searcher
from searchers.web_providers import (
    BraveProvider,
    SearxngProvider,
    clean_text,
    provider_from_name,
)
from searchers.web_search import (
    normalize_url,
    url_id,
    web_searcher_from_options,
)
from tests.web_provider_server import (
    QUERY,
    ProviderServer,
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
