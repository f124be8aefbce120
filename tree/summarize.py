"""One LLM call per cluster: the RAPTOR summary, made robust enough that a build never dies.

Each call renders the ``tree_summary`` prompt, is tagged ``{"hoptree_step": "tree_summary"}`` (the
usage tracker's step key; ``tree`` cannot import ``agent``, so the key is spelled here) and runs
under ``asyncio.wait_for``. A call that times out, raises, or returns nothing usable is retried up
to ``max_attempts`` times in all; after that the cluster gets a fallback node, the concatenation
of its passages truncated to ``max_words`` words, flagged ``fallback`` in the node metadata, so one
bad call costs one degraded node instead of the whole build.

The passages a cluster sends are capped at ``max_input_tokens`` (each passage truncated in
proportion to its length): clustering keeps clusters under that budget, but a single over-long
sentence-leaf can still exceed it and the model's context is finite.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

import prompts
from searchers.repetition import drop_repetition
from searchers.structured_calls import capped
from tree.tokens import TokenCounter, approx_token_count, truncate_to_tokens

log = logging.getLogger(__name__)

# agent.runtime.usage.STEP_KEY; tagged on every call for the usage tracker
STEP_KEY = "hoptree_step"
SUMMARY_STEP = "tree_summary"
# agent.runtime.llm_cache.CACHE_HIT_FLAG, set on cached replies
CACHE_HIT_FLAG = "hoptree_cache_hit"
PASSAGE_SEPARATOR = "\n\n"
# "Summary:", "**Summary:**", "Here is a concise summary of the passages:" (colon required)
_PREAMBLE = re.compile(
    r"^\s*\**\s*(?:summary|here(?: is|'s) (?:a|the|my) (?:\w+ )?summary[^:\n]*?)\s*:\s*\**\s*",
    re.I,
)
_SPACE = re.compile(r"\s+")


class BadSummaryError(ValueError):
    """The model answered, but with nothing usable as a summary."""


class _AttemptFailed(Exception):
    """One summary attempt failed and was recorded; the retry loop tries again or falls back."""


@dataclass
class SummaryResult:
    text: str
    fallback: bool = False
    attempts: int = 0
    calls: int = 0  # requests that reached the model (cache hits included)
    cache_hits: int = 0
    prompt_tokens: int = 0  # what producing this text cost, cached replies included
    completion_tokens: int = 0
    new_prompt_tokens: int = 0  # spent by this run (cache hits excluded)
    new_completion_tokens: int = 0
    input_truncated: bool = False
    clipped: bool = False
    errors: list[str] = field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """What the summary node keeps about how it was made."""
        meta: dict[str, Any] = {
            "attempts": self.attempts,
            "usage": {
                "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            },
        }
        if self.fallback:
            meta["fallback"] = "truncated_concatenation"
        if self.errors:
            meta["errors"] = self.errors[-3:]
        if self.input_truncated:
            meta["input_truncated"] = True
        if self.clipped:
            meta["clipped"] = True
        return meta


def model_identity(chat: BaseChatModel) -> str:
    """A stable name for the model, part of every summary's content key: summaries written by
    one model are never served to a build that asked for another."""
    for attribute in ("cache_identity", "model_name", "model"):
        value = getattr(chat, attribute, None)
        if isinstance(value, str) and value:
            return f"{type(chat).__name__}|{value}"
    return type(chat).__name__


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def clean_summary(raw: str, max_words: int, *, cut: bool = False) -> tuple[str, bool]:
    """(summary, clipped): preamble, whitespace and repeated sentences removed; a reply over
    twice ``max_words`` words is cut at the last sentence end inside that bound (small models
    ramble). ``cut`` says the model stopped at its token limit, mid-sentence: that unfinished
    sentence is dropped."""
    text = _SPACE.sub(" ", _PREAMBLE.sub("", raw.strip(), count=1)).strip()
    if not text or not any(ch.isalnum() for ch in text):
        raise BadSummaryError(f"empty or non-text reply: {raw[:80]!r}")
    text = drop_repetition(text, cut=cut)
    words = text.split(" ")
    limit = 2 * max_words
    if len(words) <= limit:
        return text, False
    head = " ".join(words[:limit])
    stop = max(head.rfind(". "), head.rfind("! "), head.rfind("? "))
    return (head[: stop + 1] if stop > len(head) // 2 else head), True


def fallback_text(passages: Sequence[str], max_words: int) -> str:
    words = _SPACE.sub(" ", " ".join(passages)).strip().split(" ")
    return " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")


class Summarizer:
    """Summarizes clusters with an injected chat model; safe to share between concurrent tasks
    (the concurrency bound is the caller's semaphore)."""

    def __init__(
        self,
        chat: BaseChatModel,
        *,
        max_words: int = 100,
        max_input_tokens: int = 3500,
        timeout_s: float = 300.0,
        max_attempts: int = 3,
        count: TokenCounter = approx_token_count,
        reply_tokens: int | None = None,
    ) -> None:
        if max_attempts < 1 or timeout_s <= 0 or max_words < 1:
            raise ValueError("need max_attempts >= 1, timeout_s > 0 and max_words >= 1")
        # A word is about 1.3 tokens, and a reply past twice ``max_words`` words is clipped
        # anyway (``clean_summary``): decoding beyond 3 tokens a word only feeds a loop.
        self.reply_tokens = reply_tokens or 3 * max_words
        self.chat = capped(chat, self.reply_tokens)
        self.max_words = max_words
        self.max_input_tokens = max_input_tokens
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.count = count
        self.identity = model_identity(chat)

    def fit_passages(self, passages: Sequence[str]) -> tuple[list[str], bool]:
        sizes = [self.count(p) for p in passages]
        total = sum(sizes)
        if total <= self.max_input_tokens:
            return list(passages), False
        fitted = []
        for passage, size in zip(passages, sizes, strict=True):
            share = max(1, int(self.max_input_tokens * size / total))
            fitted.append(truncate_to_tokens(passage, share, self.count)[0])
        return fitted, True

    def key(self, passages: Sequence[str]) -> str:
        """Content key of a summary: same model, prompt parameters and passages, same key."""
        payload = json.dumps(
            {
                "v": 1,
                "model": self.identity,
                "max_words": self.max_words,
                "max_input_tokens": self.max_input_tokens,
                "passages": list(passages),
            },
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def messages(self, passages: Sequence[str]) -> list[BaseMessage]:
        return prompts.render(
            "tree_summary",
            passages=PASSAGE_SEPARATOR.join(passages),
            max_words=self.max_words,
        )

    async def _call(self, messages: list[BaseMessage]) -> BaseMessage:
        return await asyncio.wait_for(
            self.chat.ainvoke(
                messages,
                config={"metadata": {STEP_KEY: SUMMARY_STEP}, "run_name": SUMMARY_STEP},
            ),
            timeout=self.timeout_s,
        )

    async def _attempt(self, messages: list[BaseMessage], result: SummaryResult) -> None:
        """One call and its cleaning, counted into ``result``; a timeout, a provider error or an
        unusable reply is recorded and raised as ``_AttemptFailed`` so that it is retried."""
        result.attempts += 1
        try:
            reply = await self._call(messages)
        except TimeoutError:
            result.errors.append(f"timeout after {self.timeout_s:g}s")
            log.warning("tree summary timed out (attempt %d)", result.attempts)
            raise _AttemptFailed from None
        except Exception as exc:  # any provider error: retry, then fall back
            result.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            log.warning("tree summary failed (attempt %d): %s", result.attempts, exc)
            raise _AttemptFailed from exc
        result.calls += 1
        usage = getattr(reply, "usage_metadata", None) or {}
        prompt_tokens = int(usage.get("input_tokens", 0))
        completion_tokens = int(usage.get("output_tokens", 0))
        result.prompt_tokens += prompt_tokens
        result.completion_tokens += completion_tokens
        if reply.response_metadata.get(CACHE_HIT_FLAG):
            result.cache_hits += 1
        else:
            result.new_prompt_tokens += prompt_tokens
            result.new_completion_tokens += completion_tokens
        try:
            cut = reply.response_metadata.get("finish_reason") == "length"
            text, clipped = clean_summary(_message_text(reply), self.max_words, cut=cut)
            result.text, result.clipped = text, clipped or cut
        except BadSummaryError as exc:
            result.errors.append(str(exc))
            raise _AttemptFailed from exc

    async def summarize(self, passages: Sequence[str]) -> SummaryResult:
        fitted, truncated = self.fit_passages(passages)
        messages = self.messages(fitted)
        result = SummaryResult(text="", input_truncated=truncated)
        retrying = AsyncRetrying(  # at once, no backoff: a local model is not rate-limited
            stop=stop_after_attempt(self.max_attempts),
            retry=retry_if_exception_type(_AttemptFailed),
            reraise=True,
        )
        try:
            await retrying(self._attempt, messages, result)
            return result
        except _AttemptFailed:
            pass  # every attempt failed (each is in result.errors): the fallback stands in
        result.text = fallback_text(passages, self.max_words)
        result.fallback = True
        return result
