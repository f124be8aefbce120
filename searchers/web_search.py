"""LevelRAG's web searcher: the atomic query goes to web search APIs as is, and their snippets
come back as passages with their URLs.

LevelRAG does not rewrite for the web (search engines already handle natural-language queries,
and an LLM call would cost more than the search), so this searcher asks no LLM. What it adds is
the plumbing a flaky network needs: every configured provider is queried concurrently (bounded),
each request has connect and end-to-end timeouts, 429/5xx/connect failures are retried with
exponential backoff and jitter (Retry-After honoured, capped), the whole search respects the
budget's deadline, and results are merged and de-duplicated by normalized URL. A dead provider
degrades the result and is named in the trace; ``stopped="error"`` only when none answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from searchers.passages import Hit, Passage
from searchers.searcher import (
    Attempt,
    RunScope,
    SearchBudget,
    SearchResult,
    StopReason,
    Verdict,
)
from searchers.verification import coverage
from searchers.web_providers import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    USER_AGENT,
    ProviderError,
    WebProvider,
    WebResult,
    provider_from_name,
)

log = logging.getLogger(__name__)

# Query parameters that identify a click, not a page: two URLs differing only in these are the
# same document. Kept short on purpose: "ref", "source" or "id" can select content.
TRACKING_PARAMS = frozenset(
    {
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "twclid",
        "igshid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "wickedid",
        "rb_clickid",
        "s_cid",
    }
)
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """The de-duplication key of a URL: scheme and host lowercased, http and https merged,
    default port, fragment and tracking parameters dropped, remaining parameters sorted, and
    no trailing slash. Only the key is normalized: hits keep the URL the provider gave."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # an unparseable port or bracket: compare the raw text
        return text
    scheme = parts.scheme.lower()
    if scheme == "http":  # providers disagree on the scheme of the same page
        scheme = "https"
        port = None if port == 80 else port
    host = (parts.hostname or "").rstrip(".")
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = parts.path.rstrip("/")
    pairs = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() not in TRACKING_PARAMS and not key.lower().startswith(TRACKING_PREFIXES)
    ]
    query = urlencode(sorted(pairs))
    return urlunsplit((scheme, netloc, path, query, ""))


def url_id(url: str) -> str:
    """A passage id that is stable across providers, runs and machines for the same page."""
    return "web:" + hashlib.sha256(normalize_url(url).encode("utf-8")).hexdigest()[:16]


@dataclass
class _Outcome:
    """One provider's part of a search: its trace record and what it returned."""

    attempt: Attempt
    provider: str
    results: list[WebResult] = field(default_factory=list)
    failure: str | None = None  # set when this provider contributed nothing by failing
    skipped: bool = False
    deadline: bool = False


@dataclass
class _Merged:
    best: WebResult
    provider: str
    order: int  # index of the provider that first returned it: ties go to the configured order
    providers: list[str]


class WebSearcher:
    """Satisfies ``Searcher``; holds configuration only, so one instance serves concurrent
    searches (each search opens its own HTTP client on its own event loop)."""

    name = "web"
    description = "sends the query as is to web search APIs and returns their snippets with URLs"

    def __init__(
        self,
        providers: Sequence[WebProvider],
        *,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_concurrency: int = 4,
        budget: SearchBudget | None = None,
        min_coverage: float = 0.75,
        trust_env: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        self.providers = list(providers)
        self.max_retries = max(0, max_retries)
        self.backoff_s = max(0.0, backoff_s)
        self.max_backoff_s = max(0.0, max_backoff_s)
        self.max_concurrency = max(1, max_concurrency)
        self.budget = budget or SearchBudget()
        self.min_coverage = min_coverage
        self.trust_env = trust_env  # proxies from the environment; tests on loopback turn it off
        self.rng = rng or random.Random()
        for provider in self.providers:
            reason = provider.unavailable()
            if reason:  # said once here, and again in every search's trace
                log.warning("web provider %s is skipped: %s", provider.name, reason)

    async def search(
        self, query: str, *, k: int = 10, scope: RunScope | None = None
    ) -> SearchResult:
        mine = self.budget.scope(scope)  # no LLM call: only its deadline is read
        started = time.monotonic()
        try:
            return await self._search(query, k, mine, started)
        except Exception as exc:  # a searcher degrades; the planner records it and goes on
            return self._result(query, [], [], "error", f"{type(exc).__name__}: {exc}", started)

    async def _search(self, query: str, k: int, scope: RunScope, started: float) -> SearchResult:
        if not query.strip():
            return self._result(query, [], [], "error", "empty query: nothing to search", started)
        if not self.providers:
            return self._result(query, [], [], "error", "no web provider configured", started)
        if k < 1:
            return self._result(query, [], [], "exhausted", None, started)
        semaphore = asyncio.Semaphore(self.max_concurrency)
        limits = httpx.Limits(max_connections=2 * self.max_concurrency)
        async with httpx.AsyncClient(
            headers={"User-Agent": USER_AGENT},
            follow_redirects=True,
            max_redirects=3,
            limits=limits,
            timeout=httpx.Timeout(DEFAULT_TIMEOUT_S, connect=DEFAULT_CONNECT_TIMEOUT_S),
            trust_env=self.trust_env,
        ) as client:
            outcomes = await asyncio.gather(
                *(
                    self._call(index, provider, client, query, k, scope, semaphore)
                    for index, provider in enumerate(self.providers)
                )
            )
        hits = self._merge(outcomes, k)
        attempts = [o.attempt for o in outcomes]
        failures = [f"{o.provider}: {o.failure}" for o in outcomes if o.failure]
        answered = [o for o in outcomes if o.failure is None]
        if not answered:
            error = "every web provider failed: " + "; ".join(failures)
            return self._result(query, hits, attempts, "error", error, started)
        stopped: StopReason = (
            "budget_deadline" if any(o.deadline for o in outcomes) else "exhausted"
        )
        degraded = [f"{o.provider}: {o.failure}" for o in outcomes if o.failure and not o.skipped]
        error = "; ".join(degraded) or None
        return self._result(query, hits, attempts, stopped, error, started)

    async def _call(
        self,
        index: int,
        provider: WebProvider,
        client: httpx.AsyncClient,
        query: str,
        k: int,
        scope: RunScope,
        semaphore: asyncio.Semaphore,
    ) -> _Outcome:
        """One provider with retries; never raises (a provider bug is a failure in the trace)."""
        attempt = Attempt(id=index, operation=f"web:{provider.name}", query=query)
        outcome = _Outcome(attempt=attempt, provider=provider.name)
        reason = provider.unavailable()
        if reason:
            outcome.failure = f"skipped: {reason}"
            outcome.skipped = True
            attempt.note = outcome.failure
            return outcome
        async with semaphore:
            call_started = time.monotonic()
            notes: list[str] = []
            tries = 0
            gave_up: list[tuple[str, bool]] = []  # why a retryable failure was not retried

            async def one_try() -> list[WebResult]:
                nonlocal tries
                remaining = scope.remaining_s()
                if remaining <= 0:
                    raise _NoRetry("search deadline reached", deadline=True)
                limit = min(provider.timeout_s, remaining)
                tries += 1
                try:
                    async with asyncio.timeout(limit):
                        return await provider.search(client, query, k)
                except TimeoutError:
                    # not retried: a provider this slow stays slow, and the deadline is shared
                    raise _NoRetry(*_timed_out(limit, provider.timeout_s)) from None
                except ProviderError as exc:
                    if exc.timed_out:  # httpx's own read timeout, racing ours: the same event
                        raise _NoRetry(*_timed_out(limit, provider.timeout_s)) from None
                    raise  # tenacity retries it when it is retryable
                except Exception as exc:  # a provider's parsing bug must not end the search
                    raise _NoRetry(f"{type(exc).__name__}: {exc}", deadline=False) from exc

            def wait(state: RetryCallState) -> float:
                """The backoff before the next try; on the last try, or when the server's
                Retry-After or the deadline leave no retry, 0 (and ``stop`` ends it)."""
                if state.attempt_number > self.max_retries:
                    return 0.0  # no jitter drawn for a retry that will not happen
                exc = _provider_error(state)
                delay, refusal = self._delay(state.attempt_number - 1, exc.retry_after_s)
                if delay is None:
                    gave_up.append((f"{exc}; {refusal}", False))
                    return 0.0
                if delay >= scope.remaining_s():
                    gave_up.append((f"{exc}; no time left to retry before the deadline", True))
                    return 0.0
                return delay

            def stop(state: RetryCallState) -> bool:
                return state.attempt_number > self.max_retries or bool(gave_up)

            def note(state: RetryCallState) -> None:
                exc = _provider_error(state)
                notes.append(f"try {tries}: {exc}; retrying in {state.upcoming_sleep:.2g} s")

            retrying = AsyncRetrying(  # bounded: max_retries + 1 requests
                retry=retry_if_exception(_retryable),
                wait=wait,
                stop=stop,
                before_sleep=note,
                sleep=asyncio.sleep,
                reraise=True,
            )
            try:
                outcome.results = await retrying(one_try)
                outcome.failure = None
            except _NoRetry as end:
                outcome.failure, outcome.deadline = end.failure, end.deadline
            except ProviderError as exc:  # not retryable, the last try, or retry refused
                outcome.failure = str(exc)
                if gave_up:
                    outcome.failure, outcome.deadline = gave_up[-1]
            if outcome.failure and tries > 1:
                outcome.failure += f" (after {tries} tries)"
            attempt.ms = (time.monotonic() - call_started) * 1000
        hits = [self._hit(r, provider.name) for r in outcome.results]
        attempt.hit_ids = [h.id for h in hits]
        if outcome.failure is None:
            attempt.verdict = self._verdict(query, hits)
        attempt.note = "; ".join([*notes, *([outcome.failure] if outcome.failure else [])])
        return outcome

    def _delay(self, retry: int, retry_after_s: float | None) -> tuple[float | None, str]:
        """How long to wait before retry number ``retry + 1``, or None and why not.

        The server's Retry-After wins; when it asks for more than the cap we give up rather
        than come back early (an early retry only earns another 429). Otherwise exponential
        backoff with "equal jitter": at least half the step, so retries from concurrent
        searches spread out without ever collapsing to zero.
        """
        if retry_after_s is not None:
            if retry_after_s > self.max_backoff_s:
                return None, (
                    f"the server asks to wait {retry_after_s:.3g} s, "
                    f"more than the {self.max_backoff_s:.3g} s cap"
                )
            return retry_after_s, ""
        step = min(self.max_backoff_s, self.backoff_s * 2**retry)
        return step * (0.5 + 0.5 * self.rng.random()), ""

    def _verdict(self, query: str, hits: list[Hit]) -> Verdict:
        cov = coverage(query, hits)
        return Verdict(
            sufficient=bool(hits) and cov >= self.min_coverage,
            coverage=cov,
            reason="term coverage only (the web searcher asks no LLM)" if hits else "no hits",
        )

    @staticmethod
    def _hit(result: WebResult, provider: str, providers: list[str] | None = None) -> Hit:
        title = result.title or (urlsplit(result.url).hostname or result.url)
        metadata: dict[str, Any] = {"url": result.url, "provider": provider, "rank": result.rank}
        if providers is not None:
            metadata["providers"] = providers
        passage = Passage(
            id=url_id(result.url), title=title, text=result.snippet, metadata=metadata
        )
        return Hit(passage=passage, score=1.0 / result.rank, retriever="web")

    def _merge(self, outcomes: Sequence[_Outcome], k: int) -> list[Hit]:
        """One hit per page, at the best rank any provider gave it; pages several providers
        agree on come before single-provider pages of the same rank."""
        merged: dict[str, _Merged] = {}
        for order, outcome in enumerate(outcomes):
            for result in outcome.results:
                key = normalize_url(result.url)
                entry = merged.get(key)
                if entry is None:
                    merged[key] = _Merged(result, outcome.provider, order, [outcome.provider])
                    continue
                if outcome.provider not in entry.providers:
                    entry.providers.append(outcome.provider)
                if result.rank < entry.best.rank:
                    entry.best = _fill(result, entry.best)
                    entry.provider = outcome.provider
                else:
                    entry.best = _fill(entry.best, result)
        ranked = sorted(merged.values(), key=lambda e: (e.best.rank, -len(e.providers), e.order))
        return [self._hit(e.best, e.provider, e.providers) for e in ranked[:k]]

    def _result(
        self,
        query: str,
        hits: list[Hit],
        attempts: list[Attempt],
        stopped: StopReason,
        error: str | None,
        started: float,
    ) -> SearchResult:
        return SearchResult(
            searcher=self.name,
            query=query,
            hits=hits,
            attempts=attempts,
            best_attempt=None,  # the hits merge every provider's attempt; none is "the" best
            sufficient=bool(hits) and coverage(query, hits) >= self.min_coverage,
            stopped=stopped,
            llm_calls=0,
            ms=(time.monotonic() - started) * 1000,
            error=error,
        )


class _NoRetry(Exception):
    """A try that ends a provider's turn at once: its failure for the trace, and whether the
    search deadline (not the provider) was the cause."""

    def __init__(self, failure: str, deadline: bool) -> None:
        super().__init__(failure)
        self.failure = failure
        self.deadline = deadline


def _retryable(exc: BaseException) -> bool:
    """Only a provider's own retryable failure (a 429, a 5xx, a refused connection) is retried."""
    return isinstance(exc, ProviderError) and exc.retryable


def _provider_error(state: RetryCallState) -> ProviderError:
    """The retryable failure a wait or a note is about (``_retryable`` let only these through)."""
    exc = state.outcome.exception() if state.outcome else None
    assert isinstance(exc, ProviderError), exc
    return exc


def _timed_out(limit_s: float, timeout_s: float) -> tuple[str, bool]:
    """The trace's words for a timeout, and whether the search deadline (not the provider's
    own timeout) was the limit."""
    by_deadline = limit_s < timeout_s
    message = f"timed out after {limit_s:.3g} s"
    return (f"{message} (search deadline)" if by_deadline else message), by_deadline


def _fill(kept: WebResult, other: WebResult) -> WebResult:
    """The better-ranked result, with title or snippet borrowed from the other when missing."""
    if kept.title and kept.snippet:
        return kept
    return WebResult(
        url=kept.url,
        title=kept.title or other.title,
        snippet=kept.snippet or other.snippet,
        rank=kept.rank,
    )


def web_searcher_from_options(
    options: Mapping[str, Any], *, budget: SearchBudget | None = None
) -> WebSearcher:
    """A searcher from plain settings values (the registry's ``options_for("web")``).

    Keys: ``providers`` (names, in order, or a comma-separated string), ``<name>_url`` and
    ``<name>_api_key`` per provider, ``timeout_s``, ``connect_timeout_s``, ``max_retries``,
    ``backoff_s``, ``max_backoff_s``, ``max_concurrency``. Unknown provider names raise
    ``ValueError`` here, at build time, rather than degrading every search.
    """
    names = options.get("providers", ("searxng",))
    if isinstance(names, str):
        names = [n for n in (part.strip() for part in names.split(",")) if n]
    providers = [
        provider_from_name(
            name,
            base_url=options.get(f"{name.strip().lower()}_url"),
            api_key=options.get(f"{name.strip().lower()}_api_key"),
            timeout_s=float(options.get("timeout_s", DEFAULT_TIMEOUT_S)),
            connect_timeout_s=float(options.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S)),
        )
        for name in names
    ]
    return WebSearcher(
        providers,
        max_retries=int(options.get("max_retries", 2)),
        backoff_s=float(options.get("backoff_s", 0.5)),
        max_backoff_s=float(options.get("max_backoff_s", 8.0)),
        max_concurrency=int(options.get("max_concurrency", 4)),
        budget=budget,
    )
