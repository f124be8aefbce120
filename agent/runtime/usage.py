"""Counting LLM calls and tokens per step, from langchain callbacks.

Every node tags its model calls with ``metadata={"hoptree_step": name}``; this handler sums calls,
cache hits and prompt/completion tokens per step, so traces, evals and ``doctor`` can say what a
question cost. Cache hits are counted apart: their tokens were spent once, on an earlier run.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from agent.runtime.llm_cache import CACHE_HIT_FLAG

STEP_KEY = "hoptree_step"
# where the chat model leaves the server's per-call timings in a reply's ``response_metadata``
SERVER_TIMINGS_KEY = "server_timings"
UNNAMED_STEP = "other"


@dataclass
class StepUsage:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # served from the server's prefix cache (not ours)
    # what the cache hits cost when they were first made: a run that reuses another's calls
    # spends little, and a comparison of costs needs what it would spend on its own
    cache_hit_prompt_tokens: int = 0
    cache_hit_completion_tokens: int = 0
    errors: int = 0
    # the server's own clock, where it reports one (llama.cpp's ``timings``): milliseconds spent
    # reading the prompt and writing the reply, and the speculative drafts it tried and kept.
    # Prompt reading and decoding cost different physics (compute against memory bandwidth),
    # so a profile that lumps them cannot say which change pays.
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    draft_tokens: int = 0
    draft_accepted: int = 0

    def add(self, other: StepUsage) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


class UsageTracker(BaseCallbackHandler):
    """Thread-safe; one tracker per question (or per eval run) is the intended grain.

    ``run_inline``: its handlers take a lock and add a few numbers, so they run on the event
    loop. Otherwise langchain hands every callback event (chain starts and ends included, which
    this class ignores) to a thread pool: about 200 thread hops a planner run, the largest
    single share of its CPU when many runs share one server."""

    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: dict[str, StepUsage] = {}
        self._run_steps: dict[UUID, str] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        step = str((metadata or {}).get(STEP_KEY) or UNNAMED_STEP)
        with self._lock:
            self._run_steps[run_id] = step

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            step = self._run_steps.pop(run_id, UNNAMED_STEP)
            usage = self._steps.setdefault(step, StepUsage())
            usage.calls += 1
            for generation in (g for batch in response.generations for g in batch):
                message = getattr(generation, "message", None)
                if message is None:
                    continue
                meta = getattr(message, "usage_metadata", None) or {}
                if message.response_metadata.get(CACHE_HIT_FLAG):
                    usage.cache_hits += 1
                    usage.cache_hit_prompt_tokens += int(meta.get("input_tokens", 0))
                    usage.cache_hit_completion_tokens += int(meta.get("output_tokens", 0))
                    continue
                usage.prompt_tokens += int(meta.get("input_tokens", 0))
                usage.completion_tokens += int(meta.get("output_tokens", 0))
                details = meta.get("input_token_details") or {}
                timings = message.response_metadata.get(SERVER_TIMINGS_KEY) or {}
                cached = details.get("cache_read") or timings.get("cache_n") or 0
                usage.cached_prompt_tokens += int(cached)
                usage.prompt_ms += float(timings.get("prompt_ms") or 0.0)
                usage.decode_ms += float(timings.get("predicted_ms") or 0.0)
                usage.draft_tokens += int(timings.get("draft_n") or 0)
                usage.draft_accepted += int(timings.get("draft_n_accepted") or 0)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed call counts in ``errors`` (``calls`` are the calls that returned; together
        they are every call made). It may still have cost a whole reply: the OpenAI client
        refuses a structured reply cut at the token limit after the model wrote it, and keeps its
        usage on the error. Those tokens are counted; without them the most expensive calls
        (the ones that ran to the limit) were missing from every cost we report."""
        usage_of_reply = getattr(getattr(error, "completion", None), "usage", None)
        with self._lock:
            step = self._run_steps.pop(run_id, UNNAMED_STEP)
            usage = self._steps.setdefault(step, StepUsage())
            usage.errors += 1
            if usage_of_reply is not None:
                usage.prompt_tokens += int(getattr(usage_of_reply, "prompt_tokens", 0) or 0)
                usage.completion_tokens += int(getattr(usage_of_reply, "completion_tokens", 0) or 0)

    def by_step(self) -> dict[str, StepUsage]:
        with self._lock:
            return {name: StepUsage(**asdict(u)) for name, u in self._steps.items()}

    def by_step_json(self) -> dict[str, dict[str, float | int]]:
        """Per step, the counters that are not zero (rows and traces stay small)."""

        def compact(usage: StepUsage) -> dict[str, float | int]:
            return {
                k: round(v, 1) if isinstance(v, float) else v for k, v in asdict(usage).items() if v
            }

        return {name: compact(u) for name, u in sorted(self.by_step().items())}

    def total(self) -> StepUsage:
        total = StepUsage()
        for usage in self.by_step().values():
            total.add(usage)
        return total
