"""The contract every peer pipeline follows: the same model, the same retrieval, the same rows.

A peer is another project's multi-hop method (FlashRAG's IRCoT, a DSPy program, a LangGraph
ReAct agent, ...) run by that project's own installed code. hoptree gives it only two things,
and the same two to every peer:

- the model: the run's OpenAI-compatible endpoint, reached through a ``MeteringProxy`` that
  counts each question's calls and tokens at the wire (``PeerQuestion.base_url``), at
  temperature 0 with the run's output cap (``PeerQuestion.max_tokens``);
- retrieval: hoptree's own BM25 retriever over the run's index (``PeerQuestion.retrieve``, the
  top ``k`` as every one-call pipeline reads them), which records every passage the peer was
  handed, so gold recall, hop recall and retrieval success score it as they score hoptree.

An adapter is a plain function ``(PeerQuestion) -> PeerAnswer`` that builds the peer's objects
around those two and runs one question; it runs in a worker thread because every peer's code is
synchronous. ``peer_pipeline`` wraps it as a ``PipelineSpec``, so ``hoptree eval run
--pipeline peer-...`` writes the rows every other pipeline writes.

A peer that is not installed is a ``PeerMissingError`` naming its install step, raised before
any question runs (``PeerInstall.check``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evals.corpora import Corpus
from evals.datasets import EvalQuestion
from evals.peers.metering import MeteringProxy
from evals.pipelines import (
    EvalContext,
    PipelineError,
    PipelineOutput,
    PipelineSpec,
    usage_output,
)
from searchers.passages import Hit

PEER_RETRIEVER = "sparse"  # BM25: IRCoT's own retriever, and the one-call pipeline `bm25`
INSTALL_DOC = "docs/evaluation.md#peers"
# A peer's loop is bounded by its own settings (IRCoT's iterations, ReAct's recursion limit);
# this is the backstop for one that is not: so many LLM timeouts for a whole question.
QUESTION_TIMEOUTS = 6


class PeerMissingError(PipelineError):
    """A peer pipeline whose project is not installed; the message names the install step."""


@dataclass(frozen=True)
class PeerInstall:
    """What a peer needs importable, and how to get it."""

    modules: tuple[str, ...]
    step: str  # the command (or the doc's section) that installs it
    # what must happen before the first import (offline switches: ``evals.peers.offline``)
    prepare: Callable[[], None] | None = None

    def check(self, name: str) -> None:
        missing = [m for m in self.modules if not _importable(m)]
        if missing:
            raise PeerMissingError(
                f"pipeline {name!r} runs {', '.join(missing)}, which is not installed: "
                f"{self.step} (see {INSTALL_DOC})"
            )

    def warm(self) -> None:
        """Import the peer's modules, so the first question's seconds are not the import's."""
        if self.prepare is not None:
            self.prepare()
        for module in self.modules:
            importlib.import_module(module)


def _importable(module: str) -> bool:
    """``find_spec`` of a dotted name raises when its parent package is missing."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


class RecordingRetriever:
    """hoptree's retriever as the peer sees it: every call's hits, in order, are kept."""

    def __init__(self, retrieve: Callable[[str, int], list[Hit]], k: int) -> None:
        self._retrieve = retrieve
        self.k = k
        self.queries: list[str] = []
        self.calls: list[list[Hit]] = []
        self._lock = threading.Lock()

    def __call__(self, query: str, k: int | None = None) -> list[Hit]:
        hits = list(self._retrieve(query, k or self.k))
        with self._lock:
            self.queries.append(query)
            self.calls.append(hits)
        return hits

    def hits(self) -> list[Hit]:
        """Every passage handed to the peer, first occurrence first."""
        seen: dict[str, Hit] = {}
        for call in self.calls:
            for hit in call:
                seen.setdefault(hit.id, hit)
        return list(seen.values())


@dataclass
class PeerQuestion:
    """One question as an adapter receives it."""

    question: str
    k: int
    base_url: str  # OpenAI-compatible, metered; any API key is accepted
    model: str
    max_tokens: int
    timeout_s: float  # one model call
    retrieve: RecordingRetriever
    api_key: str = "hoptree-peer"


@dataclass
class PeerAnswer:
    """What the peer answered: ``prediction`` is scored; ``raw`` is its own final text (before
    the adapter's clean-up, kept in the row); ``notes`` are warnings for the row."""

    prediction: str
    raw: str = ""
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


PeerRun = Callable[[PeerQuestion], PeerAnswer]


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str


def endpoint_of(ctx: EvalContext) -> Endpoint:
    """The run's model as an OpenAI-compatible endpoint (embedded llama.cpp or served): the
    chat model is a ``ChatOpenAI``, whose base URL, model name and key the peers reuse."""
    chat = ctx.chat
    base_url = getattr(chat, "openai_api_base", None)
    model = getattr(chat, "model_name", None)
    if not base_url or not model:
        raise PipelineError(
            "peer pipelines need an OpenAI-compatible endpoint (the embedded model or "
            f"HOPTREE_LLM__BASE_URL); the run's chat model is a {type(chat).__name__}"
        )
    key = getattr(chat, "openai_api_key", None)
    secret = key.get_secret_value() if key is not None else ""
    return Endpoint(str(base_url), str(model), secret or "not-needed")


def _proxy(ctx: EvalContext, corpus: Corpus) -> MeteringProxy:
    """One proxy per run (kept in the corpus cache, which lives as long as the run)."""
    if "peer-proxy" not in corpus.cache:
        endpoint = endpoint_of(ctx)
        corpus.cache["peer-proxy"] = MeteringProxy(
            endpoint.base_url, endpoint.api_key, timeout_s=ctx.settings.llm.timeout_s
        )
    return corpus.cache["peer-proxy"]


def peer_pipeline(name: str, description: str, install: PeerInstall, run: PeerRun) -> PipelineSpec:
    """A ``PipelineSpec`` running ``run`` on each question, metered and recorded."""

    async def pipeline(ctx: EvalContext, corpus: Corpus, q: EvalQuestion) -> PipelineOutput:
        install.check(name)
        if f"warm:{name}" not in corpus.cache:  # once per run, before any clock starts
            await asyncio.to_thread(install.warm)
            corpus.cache[f"warm:{name}"] = True
        started = time.monotonic()
        endpoint = endpoint_of(ctx)
        retriever = corpus.retrievers[PEER_RETRIEVER]
        recorder = RecordingRetriever(retriever.retrieve, ctx.k)
        budget = QUESTION_TIMEOUTS * ctx.settings.llm.timeout_s
        with _proxy(ctx, corpus).meter() as meter:
            peer_q = PeerQuestion(
                question=q.question,
                k=ctx.k,
                base_url=meter.base_url,
                model=endpoint.model,
                max_tokens=ctx.settings.llm.max_tokens,
                timeout_s=ctx.settings.llm.timeout_s,
                retrieve=recorder,
            )
            error: str | None = None
            answer = PeerAnswer("")
            try:
                answer = await asyncio.wait_for(asyncio.to_thread(run, peer_q), budget)
            except TimeoutError:
                error = f"{name}: no answer within {budget:.0f}s"
            except PeerMissingError:
                raise
            except Exception as exc:  # the peer's own failure fails this question, not the run
                error = f"{name}: {type(exc).__name__}: {str(exc)[:300]}"
        hits = recorder.hits()
        return usage_output(
            " ".join(answer.prediction.split()),
            meter.usage,
            started,
            contexts=[f"{h.title}\n{h.text}" for h in hits],
            retrieved_titles=[h.title for h in hits],
            retrieved_ids=[h.id for h in hits],
            query_passage_ids=[[h.id for h in call] for call in recorder.calls],
            error=error,
            warnings=[*meter.warnings(), *answer.notes],
            peer={
                "queries": recorder.queries,
                "raw": answer.raw,
                "max_tokens": sorted(m for m in meter.max_tokens if m is not None),
                **answer.details,
            },
        )

    return PipelineSpec(name, description, (PEER_RETRIEVER,), pipeline, reads_planner=False)


@dataclass(frozen=True)
class Peer:
    """A peer pipeline and what it needs installed."""

    spec: PipelineSpec
    install: PeerInstall

    @property
    def name(self) -> str:
        return self.spec.name


def peer(name: str, description: str, install: PeerInstall, run: PeerRun) -> Peer:
    return Peer(peer_pipeline(name, description, install, run), install)
