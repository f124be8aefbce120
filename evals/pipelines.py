"""The systems an evaluation compares, by name: baselines, the planner, and its ablations.

- ``no-retrieval``: the model's own knowledge (closed book).
- ``bm25``, ``dense``, ``hybrid``: vanilla RAG; the top-k passages of a raw retriever on the
  question (default k = 5) go into the ``rag_answer`` prompt.
- ``sparse-searcher``, ``dense-searcher``: one low-level searcher (its LLM rewrite/refine loop)
  on the question, then ``rag_answer`` over its top-k hits: what the searchers add on their own.
- ``full``: the planner over the sparse and dense searchers; ``full+tree`` adds the RAPTOR tree
  searcher; ``no-decompose``, ``no-summarize``, ``no-supplement``: the planner with that step
  switched off (LevelRAG's table 2).
- ``draft-first``: hoptree's default (a one-call draft, the router, the planner where it sends
  the question, the one-call reader reading each hop). Its findings step with one batched call
  a round, as ``full`` reads, was A/B'd on tuning slices and not adopted (``draft-first.md``).

Every pipeline reports the same ``PipelineOutput``: the short answer that is scored, the context
texts the generator was shown (for retrieval success, exactly as shown: trimmed as the prompt
trimmed them, titles included, passage numbers left out so "[1]" cannot match an answer "1"),
the retrieved titles (for gold-paragraph recall), and the cost. Models arrive through an
``EvalContext`` and retrievers through a ``Corpus``, so tests run every pipeline with a scripted
chat model over a tiny real index, and the CLI with the real model behind the LLM cache.

Read top to bottom: the contract (``EvalContext``, ``PipelineOutput``, ``PipelineSpec``), the
helpers every pipeline shares, the pipelines, and ``HOPTREE_PIPELINES`` naming them;
``evals.catalogue`` adds the peers (``evals.peers``: other projects' pipelines) and is where a
pipeline is looked up by name.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableLambda

from agent.hoptree_agent import HoptreeAgent, build_agent
from agent.results import AskResult
from agent.runtime.usage import StepUsage, UsageTracker
from agent.searching import searcher_options
from agent.settings import PlannerSettings, Settings
from evals.closed_book import answer_closed_book
from evals.corpora import Corpus
from evals.datasets import EvalQuestion
from searchers.hybrid import HybridRetriever
from searchers.passages import Hit, Passage, numbered_passages
from searchers.reader import read_short_answer
from searchers.registry import SearcherContext, SearcherRegistry, default_registry
from searchers.retrieval import Retriever
from searchers.searcher import RunScope, Searcher

T = TypeVar("T")
DEFAULT_K = 5
DEFAULT_CONTEXT_TOKENS = 2000  # QuALITY runs: the reader's context, RAPTOR's budget


class PipelineError(ValueError):
    """A pipeline that does not exist or cannot run as asked; raised before any question runs."""


@dataclass
class PipelineOutput:
    prediction: str
    contexts: list[str] = field(default_factory=list)  # what the generator was shown
    retrieved_titles: list[str] = field(default_factory=list)
    # Passage ids of what was retrieved, for hop recall (ids, since MuSiQue titles repeat), and
    # per planned query when the pipeline runs several (for the queries that found no gold hop).
    retrieved_ids: list[str] = field(default_factory=list)
    query_passage_ids: list[list[str]] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0  # spent by this run; responses served from the LLM cache cost none
    completion_tokens: int = 0
    llm_cache_hits: int = 0  # calls served from the LLM cache (counted in llm_calls)
    cache_hit_prompt_tokens: int = 0  # what those calls cost when first made
    # the server's clock where it reports one: prompt tokens it reused from its prefix cache,
    # and milliseconds reading prompts and decoding replies (per planner step in ``steps``)
    cached_prompt_tokens: int = 0
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None  # the question failed: no prediction
    warnings: list[str] = field(default_factory=list)  # degraded, still answered
    planner: dict[str, Any] | None = None  # what the planner did (``planner_record``)
    peer: dict[str, Any] | None = None  # what a peer pipeline did (``evals.peers``)


@dataclass
class EvalContext:
    """The models and knobs every pipeline runs with; one per evaluation run."""

    chat: BaseChatModel
    settings: Settings
    embeddings: Embeddings | None = None
    model_label: str = ""
    k: int = DEFAULT_K  # passages the vanilla-RAG and single-searcher pipelines read
    passage_chars: int | None = None  # per passage shown; None = the planner's setting
    registry: SearcherRegistry = field(default_factory=default_registry)
    # QuALITY runs: every pipeline packs its passages into this many tokens for the reader
    context_tokens: int = DEFAULT_CONTEXT_TOKENS

    def __post_init__(self) -> None:
        if self.k < 1:
            raise PipelineError(f"k must be >= 1, got {self.k}")
        if self.context_tokens < 100:
            raise PipelineError(f"context_tokens must be >= 100, got {self.context_tokens}")

    @property
    def chars(self) -> int:
        """The same trim as the planner's prompts by default, so baselines and the planner
        read passages of the same length."""
        return self.passage_chars or self.settings.planner.passage_chars

    def searcher_context(self, corpus: Corpus) -> SearcherContext:
        return SearcherContext(
            chat=self.chat,
            embeddings=self.embeddings,
            retrievers=corpus.retrievers,
            budget=self.settings.search_budget(),
            options=searcher_options(self.settings),
        )


PipelineRun = Callable[[EvalContext, Corpus, EvalQuestion], Awaitable[PipelineOutput]]


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    description: str
    needs: tuple[str, ...]  # retrievers of the corpus: "sparse", "dense", "tree"
    run: PipelineRun
    # shows the reader passages, so retrieval success and gold recall apply; None = it does
    # when it needs a retriever (the oracle needs none and shows the gold paragraphs)
    shows_passages: bool | None = None
    # reads hoptree's planner settings, so a run records them as part of what it measures (a
    # peer pipeline runs another project's code: hoptree's planner settings mean nothing to it)
    reads_planner: bool = True
    # the planner settings the pipeline sets over the configured ones (``draft-first``: the
    # draft on, each hop read free, ...), which no environment variable can change, so a run
    # records them too: a pipeline whose own setting changed in the code measures another thing
    planner_switches: Mapping[str, Any] = field(default_factory=dict)

    @property
    def scores_context(self) -> bool:
        return bool(self.needs) if self.shows_passages is None else self.shows_passages

    @property
    def needs_embeddings(self) -> bool:
        return bool({"dense", "tree"} & set(self.needs))


# --------------------------------------------------------------------------- helpers


def shown_text(hit: Hit | Mapping[str, Any], chars: int, query: str | None = None) -> str:
    """A passage as a prompt showed it (``numbered_passages``' trim), without its number."""
    if isinstance(hit, Mapping):
        hit = Hit(Passage.from_json(dict(hit)), float(hit.get("score", 0.0)))
    line = numbered_passages([hit], max_chars=chars, query=query)
    return line.removeprefix("[1] ")


class SpentError(Exception):
    """A question that failed after its model calls were made. A failed row that counted no
    calls would make a pipeline that fails late look cheap, so the failure carries them."""

    def __init__(self, cause: Exception, usage: StepUsage) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.usage = usage


async def with_usage(body: Callable[[], Awaitable[T]]) -> tuple[T, StepUsage]:
    """Run ``body`` with its own usage tracker: langchain hands a parent run's callbacks down to
    every model call made inside it (threads included), so concurrent questions never mix
    their counts, which one tracker on the shared model could not tell apart. If ``body``
    raises, the error leaves as a ``SpentError`` with what was spent until then."""
    tracker = UsageTracker()

    async def call(_: Any) -> T:
        return await body()

    try:
        result = await RunnableLambda(call).ainvoke(
            None, config={"callbacks": [tracker], "run_name": "hoptree_eval"}
        )
    except Exception as exc:
        raise SpentError(exc, tracker.total()) from exc
    return result, tracker.total()


def usage_output(
    prediction: str, usage: StepUsage, started: float, **fields: Any
) -> PipelineOutput:
    """A question's output with what its calls cost; a failed question's too (the runner)."""
    return PipelineOutput(
        prediction=prediction,
        llm_calls=usage.calls + usage.errors,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        llm_cache_hits=usage.cache_hits,
        cache_hit_prompt_tokens=usage.cache_hit_prompt_tokens,
        cached_prompt_tokens=usage.cached_prompt_tokens,
        prompt_ms=usage.prompt_ms,
        decode_ms=usage.decode_ms,
        seconds=time.monotonic() - started,
        **fields,
    )


async def read_passages(
    ctx: EvalContext, question: str, hits: Sequence[Hit], chars: int | None = None
) -> tuple[str, list[str], str | None]:
    """The vanilla-RAG generator: (short answer, contexts shown, error). Each passage is
    trimmed to ``chars`` (default: ``ctx.chars``) around the question."""
    chars = chars or ctx.chars
    timeout = ctx.settings.llm.timeout_s  # the reader's one call, within one LLM timeout
    scope = RunScope(max_llm_calls=1, deadline_s=timeout, llm_timeout_s=timeout)
    passages = numbered_passages(list(hits), max_chars=chars, query=question)
    reply = await read_short_answer(ctx.chat, question, passages, scope=scope, step="rag_answer")
    contexts = [shown_text(hit, chars, question) for hit in hits]
    if reply.value is None:
        return "", contexts, reply.error or "rag_answer: no reply"
    return " ".join(reply.value.answer.split()), contexts, None


def _cached(corpus: Corpus, key: str, build: Callable[[], T]) -> T:
    """Build once per corpus: the open corpus is shared by every question of a run. Building is
    synchronous, so concurrent questions cannot race on it."""
    if key not in corpus.cache:
        corpus.cache[key] = build()
    return corpus.cache[key]


# --------------------------------------------------------------------------- baselines


async def _no_retrieval(ctx: EvalContext, corpus: Corpus, q: EvalQuestion) -> PipelineOutput:
    started = time.monotonic()

    async def body() -> tuple[str, str | None]:
        try:
            answer = await asyncio.wait_for(
                answer_closed_book(ctx.chat, q.question), ctx.settings.llm.timeout_s
            )
        except TimeoutError:
            return "", f"closed_book: no reply within {ctx.settings.llm.timeout_s:.0f}s"
        except Exception as exc:  # a bad reply fails this question, not the run
            return "", f"closed_book: {type(exc).__name__}: {str(exc)[:200]}"
        return " ".join(answer.split()), None

    (answer, error), usage = await with_usage(body)
    return usage_output(answer, usage, started, error=error)


def _retriever(ctx: EvalContext, corpus: Corpus, kind: str) -> Retriever:
    if kind != "hybrid":
        return corpus.retrievers[kind]
    index = ctx.settings.index
    return _cached(
        corpus,
        "hybrid",
        lambda: HybridRetriever(
            [corpus.retrievers["sparse"], corpus.retrievers["dense"]],
            rrf_k=index.rrf_k,
            depth=index.hybrid_depth or None,
        ),
    )


def _vanilla(kind: str) -> PipelineRun:
    async def run(ctx: EvalContext, corpus: Corpus, q: EvalQuestion) -> PipelineOutput:
        started = time.monotonic()
        retriever = _retriever(ctx, corpus, kind)
        hits = await asyncio.to_thread(retriever.retrieve, q.question, ctx.k)
        return await _read_hits(ctx, q, hits, started)

    return run


async def _read_hits(
    ctx: EvalContext, q: EvalQuestion, hits: list[Hit], started: float, chars: int | None = None
) -> PipelineOutput:
    """One-call RAG's reader over ``hits``: the output of vanilla RAG and of the oracle."""

    async def body() -> tuple[str, list[str], str | None]:
        return await read_passages(ctx, q.question, hits, chars)

    (answer, contexts, error), usage = await with_usage(body)
    return usage_output(
        answer,
        usage,
        started,
        contexts=contexts,
        retrieved_titles=[h.title for h in hits],
        retrieved_ids=[h.id for h in hits],
        error=error,
    )


def _single_searcher(name: str) -> PipelineRun:
    async def run(ctx: EvalContext, corpus: Corpus, q: EvalQuestion) -> PipelineOutput:
        started = time.monotonic()
        searcher: Searcher = _cached(
            corpus,
            f"searcher:{name}",
            lambda: ctx.registry.create(name, ctx.searcher_context(corpus)),
        )

        async def body() -> tuple[list[Hit], str | None, tuple[str, list[str], str | None]]:
            result = await searcher.search(q.question, k=ctx.k)
            hits = list(result.hits[: ctx.k])
            return hits, result.error, await read_passages(ctx, q.question, hits)

        (hits, search_error, (answer, contexts, error)), usage = await with_usage(body)
        return usage_output(
            answer,
            usage,
            started,
            contexts=contexts,
            retrieved_titles=[h.title for h in hits],
            retrieved_ids=[h.id for h in hits],
            error=error,
            warnings=[f"{name} searcher: {search_error}"] if search_error else [],
        )

    return run


async def _oracle(ctx: EvalContext, corpus: Corpus, q: EvalQuestion) -> PipelineOutput:
    """The ceiling: the reader of one-call RAG (same prompt, at most ``k`` passages, the same
    characters in all) given the question's gold paragraphs only, in the order of its gold hops
    where the dataset names them. No retrieval runs; what separates a pipeline from this row
    is what it found and what distractors it put beside it."""
    started = time.monotonic()
    texts = dict(zip(q.passage_ids(), q.paragraphs, strict=True))
    order = [hop.passage_id for hop in q.gold_hops] + list(q.supporting_ids)
    gold = [pid for pid in dict.fromkeys(order) if pid in texts][: ctx.k]
    hits = [Hit(Passage(id=pid, title=texts[pid][0], text=texts[pid][1]), 1.0) for pid in gold]
    if not hits:
        return usage_output(
            "", StepUsage(), started, error="oracle: the question names no gold paragraph"
        )
    # the same budget of text as one-call RAG's k passages, shared by the gold ones: trimmed to
    # 350 characters around the question each, a second hop's paragraph lost its answer (the
    # question never names the bridge entity), and on 2Wiki the "ceiling" scored below BM25
    chars = max(ctx.chars, ctx.chars * ctx.k // len(hits))
    return await _read_hits(ctx, q, hits, started, chars)


# --------------------------------------------------------------------------- the planner


def planner_passage_ids(result: AskResult) -> list[str]:
    """Every fused passage of every atomic query, once, in query order."""
    return list(dict.fromkeys(p for sub in result.sub_queries for p in sub.passage_ids))


def planner_context(result: AskResult, planner: PlannerSettings) -> tuple[list[str], list[str]]:
    """(contexts the answer step saw, titles retrieved) from a planner result: every non-empty
    summary plus the sources the answer step was shown (``AskResult.sources``), trimmed to
    ``passage_chars`` as the prompt trims them. Retrieved titles are every fused passage of
    every atomic query."""
    passages: dict[str, dict[str, Any]] = {}
    for sub in result.sub_queries:
        for search in sub.searches:
            for hit in search.get("hits", []):
                passages.setdefault(str(hit["id"]), hit)
    contexts = [sub.summary for sub in result.sub_queries if sub.summary.strip()]
    contexts += [
        source.get("shown") or shown_text(source, planner.passage_chars)
        for source in result.sources
    ]
    titles = [
        str(passages[pid].get("title", ""))
        for pid in planner_passage_ids(result)
        if pid in passages
    ]
    return contexts, titles


def planner_settings(
    ctx: EvalContext, searchers: Sequence[str], **switches: bool | str
) -> PlannerSettings:
    """The configured planner settings with ``searchers`` and every LevelRAG step on, no draft
    (LevelRAG's planner runs from the start) and one batched findings call a round (the planner
    the v4 rows measured), but for the ``switches`` a pipeline sets: an ablation turns a step
    off, ``draft-first`` is hoptree's default (the draft, the free reader's findings, no
    follow-ups)."""
    return ctx.settings.planner.model_copy(update=pipeline_switches(searchers, switches))


def pipeline_switches(
    searchers: Sequence[str], switches: Mapping[str, bool | str]
) -> dict[str, Any]:
    """What a planner pipeline sets over the configured planner settings (``planner_settings``
    applies it; a run records it as ``pipeline_planner``)."""
    fixed = {"searchers": list(searchers), "decompose": True, "summarize": True, "draft": False}
    return {**fixed, "supplement": True, "findings_call": "batched", **switches}


def _planner_pipeline(
    name: str, description: str, searchers: tuple[str, ...], **switches: bool | str
) -> PipelineSpec:
    """A planner pipeline over ``searchers``: its run and, for the run's identity, the planner
    settings it sets."""
    return PipelineSpec(
        name,
        description,
        searchers,
        _planner(searchers, **switches),
        planner_switches=pipeline_switches(searchers, switches),
    )


def planner_agent(
    ctx: EvalContext, corpus: Corpus, searchers: Sequence[str], planner: PlannerSettings
) -> HoptreeAgent:
    """A planner over ``corpus``'s retrievers (build one per corpus: its searchers hold them)."""
    return build_agent(
        ctx.settings,
        ctx.searcher_context(corpus),
        searchers,
        planner=planner,
        model_label=ctx.model_label or "hoptree",
        registry=ctx.registry,
    )


def _planner(searchers: tuple[str, ...], **switches: bool | str) -> PipelineRun:
    async def run(ctx: EvalContext, corpus: Corpus, q: EvalQuestion) -> PipelineOutput:
        started = time.monotonic()
        planner = planner_settings(ctx, searchers, **switches)
        agent = _cached(
            corpus,
            f"planner:{','.join(searchers)}:{sorted(switches.items())}",
            lambda: planner_agent(ctx, corpus, searchers, planner),
        )
        # the agent counts its own calls; the tracker is for a question that raises midway
        result, _ = await with_usage(lambda: agent.ask(q.question))
        contexts, titles = planner_context(result, planner)
        return usage_output(
            " ".join(result.short_answer.split()),
            planner_usage(result),
            started,
            contexts=contexts,
            retrieved_titles=titles,
            steps=result.usage_by_step,
            warnings=list(result.errors),
            planner=planner_record(result),
            retrieved_ids=planner_passage_ids(result),
            query_passage_ids=[list(sub.passage_ids) for sub in result.sub_queries],
        )

    return run


def planner_usage(result: AskResult) -> StepUsage:
    """What a planner question spent, as every pipeline's usage is counted: the result's
    calls, tokens and cache hits, and the server's clock summed over its steps."""
    steps = result.usage_by_step.values()
    return StepUsage(
        calls=result.llm_calls,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        cache_hits=result.llm_cache_hits,
        cache_hit_prompt_tokens=result.cache_hit_prompt_tokens,
        cache_hit_completion_tokens=result.cache_hit_completion_tokens,
        cached_prompt_tokens=sum(int(s.get("cached_prompt_tokens", 0)) for s in steps),
        prompt_ms=sum(float(s.get("prompt_ms", 0.0)) for s in steps),
        decode_ms=sum(float(s.get("decode_ms", 0.0)) for s in steps),
    )


# What a row's ``planner`` record leaves out of the result's record (``AskResult.to_json``): the
# answer and its cost are the row's own fields (``prediction``, ``llm_calls``, the tokens,
# ``steps``, ``warnings``), the cited text and the trace are not kept. Any other field of the
# result is in it, so a field added to ``AskResult`` reaches the rows.
ROW_OMITS = frozenset(
    {"question", "answer", "short_answer", "citations", "verdicts", "llm_calls", "prompt_tokens",
     "completion_tokens", "llm_cache_hits", "cache_hit_prompt_tokens",
     "cache_hit_completion_tokens", "seconds", "thread_id", "errors", "degraded",
     "degraded_reasons", "usage_by_step", "searchers", "trace"}
)  # fmt: skip
# a query in the words of findings, without its searches (its fused ``passage_ids`` stay)
ROW_SUB_QUERY_OMITS = frozenset({"searches", "finding_skipped", "superseded_by"})
DRAFT_FIELDS = ("draft", "final_choice", "first_answer_s")  # only when a draft was written


def planner_record(result: AskResult) -> dict[str, Any]:
    """What the planner did with one question, kept in its details row: how many rounds, why it
    stopped, and its atomic queries (with ``id``, what "needs" and "replaces" name). Without it
    a run's cost cannot be split between the first round and the follow-ups, or a wrong answer
    traced to the query that went astray. The shown passages are kept by title and by id:
    titles repeat in MuSiQue, so a rereading of the rows can tell which paragraph was
    shown."""
    record = result.to_json(with_trace=False, omit=ROW_OMITS)
    drafted = {key: record.pop(key) for key in DRAFT_FIELDS}
    return {
        "rounds": max((q.round for q in result.sub_queries), default=0),
        **record,
        "sub_queries": [
            {k: v for k, v in q.finding_json().items() if k not in ROW_SUB_QUERY_OMITS}
            for q in result.sub_queries
        ],
        "sources": [s["title"] for s in result.sources],
        "source_ids": [s["id"] for s in result.sources],
        **draft_record(drafted),
    }


def draft_record(drafted: Mapping[str, Any]) -> dict[str, Any]:
    """Draft first (``draft-first``), from the result record's ``DRAFT_FIELDS``: the draft's
    short answer, when it came, the router's signals and decision, and which answer won (the
    draft's cited text left out, its passage ids kept); nothing for a run without a draft, so
    rows of the other planner pipelines stay as they were."""
    draft = drafted.get("draft")
    if draft is None:
        return {}
    kept = {k: v for k, v in draft.items() if k not in ("answer", "citations")}
    kept["citation_ids"] = [c["id"] for c in draft.get("citations", [])]
    return {**drafted, "draft": kept}


# --------------------------------------------------------------------------- the registry

_PLANNER_SEARCHERS = ("sparse", "dense")

HOPTREE_PIPELINES: dict[str, PipelineSpec] = {
    spec.name: spec
    for spec in [
        PipelineSpec("no-retrieval", "closed book: the model's own knowledge", (), _no_retrieval),
        PipelineSpec("bm25", "vanilla RAG over BM25 top-k", ("sparse",), _vanilla("sparse")),
        PipelineSpec("dense", "vanilla RAG over dense top-k", ("dense",), _vanilla("dense")),
        PipelineSpec(
            "hybrid",
            "vanilla RAG over BM25 + dense fused by RRF",
            ("sparse", "dense"),
            _vanilla("hybrid"),
        ),
        PipelineSpec(
            "oracle",
            "the one-call RAG reader given the question's gold paragraphs only (the ceiling)",
            (),
            _oracle,
            shows_passages=True,
        ),
        PipelineSpec(
            "sparse-searcher",
            "the sparse searcher (Lucene rewrite + feedback) on the question, then RAG",
            ("sparse",),
            _single_searcher("sparse"),
        ),
        PipelineSpec(
            "dense-searcher",
            "the dense searcher (HyDE + feedback) on the question, then RAG",
            ("dense",),
            _single_searcher("dense"),
        ),
        _planner_pipeline(
            "full",
            "the planner over the sparse and dense searchers",
            _PLANNER_SEARCHERS,
        ),
        _planner_pipeline(
            "draft-first",
            "hoptree's default: a one-call draft first, the planner (no follow-up rounds) "
            "where the router sends the question, the better-supported answer kept",
            _PLANNER_SEARCHERS,
            draft=True,
            supplement=False,
            findings_call="free",
        ),
        _planner_pipeline(
            "full+tree",
            "the planner over the sparse, dense and RAPTOR tree searchers",
            (*_PLANNER_SEARCHERS, "tree"),
        ),
        _planner_pipeline(
            "no-decompose",
            "the planner without decomposition (the question is the only atomic query)",
            _PLANNER_SEARCHERS,
            decompose=False,
        ),
        _planner_pipeline(
            "no-summarize",
            "the planner without summaries (the answer reads the fused passages)",
            _PLANNER_SEARCHERS,
            summarize=False,
        ),
        _planner_pipeline(
            "no-supplement",
            "the planner without supplement rounds (one round of atomic queries)",
            _PLANNER_SEARCHERS,
            supplement=False,
        ),
    ]
}
