"""Web search providers behind one small interface, for the web searcher (``web_search``).

A provider knows one API's request and response shapes and nothing else: it makes exactly one
HTTP exchange per call and turns the reply into ``WebResult``s with clean text, or raises
``ProviderError`` saying whether the failure is worth retrying. Retries, backoff, the deadline,
concurrency and de-duplication belong to the searcher, so every provider gets the same policy
and a new provider is a request builder plus a parser.

SearXNG comes first because it can be self-hosted (no key, no quota); Brave, Tavily and Bing need
a key, and a provider without one reports itself unavailable instead of failing at call time.
Every base URL is overridable: for proxies, self-hosted or compatible endpoints, and tests.
"""

from __future__ import annotations

import email.utils
import html
import json
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, ClassVar, Protocol, runtime_checkable
from urllib.parse import urlsplit

import httpx

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 3.0
MAX_RESPONSE_BYTES = 4_000_000  # a search API page is tens of KB; anything bigger is not one
MAX_SNIPPET_CHARS = 2_000  # Tavily's "content" can run long; prompts pay for every character
USER_AGENT = "hoptree/0.1 (+https://github.com/hoptree)"


@dataclass(frozen=True)
class WebResult:
    """One organic result as the provider ranked it; text fields are already plain text."""

    url: str
    title: str
    snippet: str
    rank: int  # 1-based position in this provider's reply


class ProviderError(RuntimeError):
    """One failed exchange, classified so the caller can decide whether to try again.

    ``retry_after_s`` carries the server's Retry-After when it sent one (429/503);
    ``timed_out`` marks a slow server (not a refused connection, which is ``retryable``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.timed_out = timed_out  # a read/write/pool timeout: the caller reports it as one


@runtime_checkable
class WebProvider(Protocol):
    """What the web searcher needs of a provider."""

    name: str
    timeout_s: float  # end to end, per request; the searcher also clamps it to its deadline

    def unavailable(self) -> str | None:
        """Why this provider cannot be called as configured (no key, no URL), or None."""
        ...

    async def search(self, client: httpx.AsyncClient, query: str, k: int) -> list[WebResult]:
        """One request, no retries; raises ``ProviderError`` (never another exception type)."""
        ...


# ---------------------------------------------------------------------------------------------
# Text cleaning: snippets arrive with <strong>/<b> hit highlighting, entities and, from Bing,
# private-use highlight markers; the reader model must see plain text.


class _TextExtractor(HTMLParser):
    """Keeps character data, drops tags, and drops the contents of script/style elements."""

    _SKIP: ClassVar[frozenset[str]] = frozenset({"script", "style"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in {"br", "p", "div", "li"}:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


_BING_HIGHLIGHT = re.compile("[\ue000-\ue001]")  # Bing's textDecorations hit markers
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(raw: object, *, max_chars: int = MAX_SNIPPET_CHARS) -> str:
    """Plain text from a provider's title or snippet: tags stripped, entities unescaped,
    whitespace collapsed, trimmed at a word boundary."""
    if not isinstance(raw, str) or not raw:
        return ""
    if "<" in raw:  # the parser unescapes entities itself (convert_charrefs)
        parser = _TextExtractor()
        parser.feed(raw)
        parser.close()
        text = "".join(parser.parts)
    else:
        text = html.unescape(raw)
    text = _CONTROL.sub(" ", _BING_HIGHLIGHT.sub("", text))
    text = " ".join(text.split())
    if len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0] + " ..."
    return text


def _results(items: object, *, title: str, url: str, snippet: str) -> list[WebResult]:
    """Provider items -> WebResults, skipping anything that is not a result with an http(s) URL
    (providers mix in ads, widgets and, now and then, relative or javascript: links)."""
    if not isinstance(items, list):
        return []
    out: list[WebResult] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        link = item.get(url)
        if not isinstance(link, str) or urlsplit(link.strip()).scheme.lower() not in (
            "http",
            "https",
        ):
            continue
        out.append(
            WebResult(
                url=link.strip(),
                title=clean_text(item.get(title), max_chars=300),
                snippet=clean_text(item.get(snippet)),
                rank=len(out) + 1,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# One exchange: status classification, Retry-After, size cap, JSON decoding.


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date).

    Fractional seconds are accepted too: not in the RFC, but harmless and some proxies send them.
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_excerpt(body: bytes) -> str:
    """The provider's own error message, short: enough to say why, never a whole HTML page."""
    text = body[:2000].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return clean_text(text, max_chars=160)
    if not data:
        return ""
    if isinstance(data, dict):
        for key in ("message", "detail", "error", "errors"):
            if key in data:
                value = data[key]
                detail = value if isinstance(value, str) else json.dumps(value)[:400]
                return clean_text(detail, max_chars=160)
    return clean_text(text, max_chars=160)


async def _exchange(client: httpx.AsyncClient, request: httpx.Request, provider: str) -> Any:
    """Send one request and decode its JSON body, mapping every failure to ProviderError."""
    try:
        response = await client.send(request, stream=True)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ProviderError(f"cannot connect ({type(exc).__name__})", retryable=True) from exc
    except httpx.RemoteProtocolError as exc:
        # the connection dropped before a response: a restarting server, worth another try
        raise ProviderError(f"connection dropped ({exc})", retryable=True) from exc
    except httpx.TimeoutException as exc:
        raise ProviderError(f"timed out ({type(exc).__name__})", timed_out=True) from exc
    except httpx.HTTPError as exc:
        raise ProviderError(f"{type(exc).__name__}: {exc}") from exc
    try:
        body = bytearray()
        async for chunk in response.aiter_bytes():  # bounded by MAX_RESPONSE_BYTES
            body.extend(chunk)
            if len(body) > MAX_RESPONSE_BYTES:
                raise ProviderError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
    except httpx.TimeoutException as exc:
        message = f"timed out reading the response ({type(exc).__name__})"
        raise ProviderError(message, timed_out=True) from exc
    except httpx.HTTPError as exc:
        raise ProviderError(f"{type(exc).__name__} reading the response: {exc}") from exc
    finally:
        await response.aclose()
    status = response.status_code
    if status >= 400:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        parts = [f"HTTP {status}", _error_excerpt(bytes(body)), _status_hint(provider, status)]
        message = ": ".join(part for part in parts if part)
        retryable = status == 429 or status >= 500
        raise ProviderError(message, status=status, retryable=retryable, retry_after_s=retry_after)
    try:
        return json.loads(bytes(body))
    except ValueError as exc:
        excerpt = _error_excerpt(bytes(body)) or "empty body"
        raise ProviderError(f"response is not JSON: {excerpt}", status=status) from exc


def _status_hint(provider: str, status: int) -> str:
    if provider == "searxng" and status == 403:
        return "is the json format enabled in the instance's settings.yml (search.formats)?"
    if status in (401, 403):
        return "is the API key valid?"
    return ""


def _timeout(timeout_s: float, connect_timeout_s: float) -> httpx.Timeout:
    return httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s))


def _mapping(payload: Any, what: str) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ProviderError(f"unexpected response: {what} is {type(payload).__name__}, not object")
    return payload


# ---------------------------------------------------------------------------------------------
# The providers.


@dataclass(frozen=True)
class SearxngProvider:
    """SearXNG's JSON API: ``GET {base}/search?q=...&format=json`` -> ``results[]`` with
    ``url``/``title``/``content``. No key; the instance must enable the json format. It returns a
    fixed page (~10-20 results) and has no count parameter, so the reply is cut to ``k``."""

    base_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    categories: str | None = None
    language: str | None = None
    name: str = field(default="searxng", init=False)

    def unavailable(self) -> str | None:
        if not self.base_url:
            return "no instance URL configured (SearXNG is self-hosted: give its base URL)"
        return None

    async def search(self, client: httpx.AsyncClient, query: str, k: int) -> list[WebResult]:
        params = {"q": query, "format": "json", "pageno": "1"}
        if self.categories:
            params["categories"] = self.categories
        if self.language:
            params["language"] = self.language
        request = client.build_request(
            "GET",
            f"{(self.base_url or '').rstrip('/')}/search",
            params=params,
            headers={"Accept": "application/json"},
            timeout=_timeout(self.timeout_s, self.connect_timeout_s),
        )
        payload = _mapping(await _exchange(client, request, self.name), "the body")
        found = _results(payload.get("results"), title="title", url="url", snippet="content")
        return found[:k]


@dataclass(frozen=True)
class BraveProvider:
    """Brave Search API: ``GET {base}/res/v1/web/search?q=...&count=k`` with the key in
    ``X-Subscription-Token`` -> ``web.results[]`` with ``title``/``url``/``description``
    (``<strong>`` hit highlighting). ``count`` is 1..20; no ``web`` key means no results."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str = "https://api.search.brave.com"
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    name: str = field(default="brave", init=False)
    max_count: ClassVar[int] = 20

    def unavailable(self) -> str | None:
        return None if self.api_key else "needs an API key and has none"

    async def search(self, client: httpx.AsyncClient, query: str, k: int) -> list[WebResult]:
        request = client.build_request(
            "GET",
            f"{self.base_url.rstrip('/')}/res/v1/web/search",
            params={"q": query, "count": str(max(1, min(k, self.max_count)))},
            headers={"Accept": "application/json", "X-Subscription-Token": self.api_key or ""},
            timeout=_timeout(self.timeout_s, self.connect_timeout_s),
        )
        payload = _mapping(await _exchange(client, request, self.name), "the body")
        web = payload.get("web")
        items = web.get("results") if isinstance(web, dict) else None
        return _results(items, title="title", url="url", snippet="description")[:k]


@dataclass(frozen=True)
class TavilyProvider:
    """Tavily: ``POST {base}/search`` with JSON ``{query, max_results, search_depth}`` and the
    key as ``Authorization: Bearer`` (not in the body, so it never lands in a logged payload)
    -> ``results[]`` with ``title``/``url``/``content``. ``max_results`` is 0..20; "basic"
    depth costs one credit where "advanced" costs two."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str = "https://api.tavily.com"
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    search_depth: str = "basic"
    name: str = field(default="tavily", init=False)
    max_count: ClassVar[int] = 20

    def unavailable(self) -> str | None:
        return None if self.api_key else "needs an API key and has none"

    async def search(self, client: httpx.AsyncClient, query: str, k: int) -> list[WebResult]:
        request = client.build_request(
            "POST",
            f"{self.base_url.rstrip('/')}/search",
            json={
                "query": query,
                "max_results": max(1, min(k, self.max_count)),
                "search_depth": self.search_depth,
            },
            headers={"Accept": "application/json", "Authorization": f"Bearer {self.api_key}"},
            timeout=_timeout(self.timeout_s, self.connect_timeout_s),
        )
        payload = _mapping(await _exchange(client, request, self.name), "the body")
        found = _results(payload.get("results"), title="title", url="url", snippet="content")
        return found[:k]


@dataclass(frozen=True)
class BingProvider:
    """Bing Web Search v7: ``GET {base}/v7.0/search?q=...&count=k`` with the key in
    ``Ocp-Apim-Subscription-Key`` -> ``webPages.value[]`` with ``name``/``url``/``snippet``.

    Microsoft retired the public Bing Search APIs on 2025-08-11; this stays for existing
    contracts and for endpoints that serve the same v7 shape (set ``base_url``)."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str = "https://api.bing.microsoft.com"
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    market: str | None = None
    name: str = field(default="bing", init=False)
    max_count: ClassVar[int] = 50

    def unavailable(self) -> str | None:
        return None if self.api_key else "needs an API key and has none"

    async def search(self, client: httpx.AsyncClient, query: str, k: int) -> list[WebResult]:
        params = {
            "q": query,
            "count": str(max(1, min(k, self.max_count))),
            "responseFilter": "Webpages",
            "textDecorations": "false",
        }
        if self.market:
            params["mkt"] = self.market
        request = client.build_request(
            "GET",
            f"{self.base_url.rstrip('/')}/v7.0/search",
            params=params,
            headers={"Accept": "application/json", "Ocp-Apim-Subscription-Key": self.api_key or ""},
            timeout=_timeout(self.timeout_s, self.connect_timeout_s),
        )
        payload = _mapping(await _exchange(client, request, self.name), "the body")
        pages = payload.get("webPages")
        items = pages.get("value") if isinstance(pages, dict) else None
        return _results(items, title="name", url="url", snippet="snippet")[:k]


PROVIDERS: dict[str, type] = {
    "searxng": SearxngProvider,
    "brave": BraveProvider,
    "tavily": TavilyProvider,
    "bing": BingProvider,
}


def provider_from_name(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> WebProvider:
    """A provider from plain settings values; ``base_url=None`` keeps the provider's public
    endpoint (SearXNG has none: without a URL it reports itself unavailable)."""
    key = name.strip().lower()
    if key not in PROVIDERS:
        raise ValueError(f"unknown web provider {name!r}; known: {', '.join(PROVIDERS)}")
    kwargs: dict[str, Any] = {"timeout_s": timeout_s, "connect_timeout_s": connect_timeout_s}
    if base_url:
        kwargs["base_url"] = base_url
    if key != "searxng":
        kwargs["api_key"] = api_key or None
    return PROVIDERS[key](**kwargs)
