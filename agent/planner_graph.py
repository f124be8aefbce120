"""LevelRAG's high-level searcher as a LangGraph graph.

    decompose --Send per (atomic query, searcher)--> search_<name> --> summarize --> verify
                                                      ^                        |   |
                                                      |                        |   v
                                                      \\------ Send ------ supplement  answer

``decompose`` plans atomic queries; every (query, searcher) pair runs in parallel as its own
``search`` task (each searcher is a compiled subgraph with its own refinement loop and budget);
``summarize`` fuses each new query's results and answers it from the fused passages, citing the
passages it used; ``verify`` decides whether the summaries suffice, never on the model's yes
alone (an atomic query of the round that nobody could answer is missing whatever the model
says, so the model is not even asked); ``supplement``
asks for what is still missing, dropping any query already asked; ``answer`` writes a short
answer and a cited one. Every step is bounded: rounds, atomic queries, LLM calls and a deadline.

Cost matters more than anything on the local model (about 100 prompt tokens/s), so: only new
atomic queries are summarized in a round; a query whose searchers already agree on an answer
span they found in the passages is not summarized by the LLM at all; verification is skipped
when a query is known to be unanswered; prompts keep their fixed instructions first so the
server's prefix cache is reused.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, Send
from pydantic import BaseModel, Field

import prompts
from agent.planner_state import PlannerRun, PlannerState, SearchTask, SubQuery, query_key
from agent.results import EventKind, TraceEvent
from searchers.fusion import fuse_results
from searchers.passages import Hit, Passage, focus_text, numbered_passages
from searchers.searcher import BudgetExceeded, SearchResult
from searchers.structured_calls import ask
from searchers.verification import NO_ANSWER, normalize_answer

MAX_QUERIES_PER_CALL = 6
MAX_QUERY_CHARS = 300


class QueryPlan(BaseModel):
    queries: list[str] = Field(max_length=MAX_QUERIES_PER_CALL)


class QuerySummary(BaseModel):
    answer: str = Field(description="one or two sentences, or a statement that it is not found")
    passages: list[int] = Field(description="numbers of the passages used", max_length=10)


class Sufficiency(BaseModel):
    sufficient: bool
    missing: str = Field(description="what is still missing, in a few words")


class FinalAnswer(BaseModel):
    short_answer: str = Field(description="a few words: a name, a date, a number, or yes/no")
    answer: str = Field(description="one to three sentences with [n] citations")


class AgentRunError(RuntimeError):
    """The run cannot produce an answer (the chat model failed at the last step)."""


# --------------------------------------------------------------------------- trace


def emit(
    runtime: Runtime[PlannerRun], kind: EventKind, data: dict[str, Any], rnd: int, ms: float
) -> None:
    """Record a trace event and stream it; usage totals ride along so every step shows cost."""
    run = runtime.context
    total = run.tracker.total()
    data = {
        **data,
        "usage": {
            "llm_calls": run.budget_meter.llm_calls,
            "prompt_tokens": total.prompt_tokens,
            "completion_tokens": total.completion_tokens,
        },
    }
    event = TraceEvent(kind=kind, data=data, round=rnd, ms=ms)
    run.events.append(event)
    runtime.stream_writer({"hoptree_event": event})


def _clean_queries(raw: list[str], asked: set[str], limit: int) -> list[tuple[str, str]]:
    """(query, key) pairs: trimmed, non-empty, not asked before (after normalization)."""
    kept: list[tuple[str, str]] = []
    for text in raw:
        query = " ".join(str(text).split())[:MAX_QUERY_CHARS]
        key = query_key(query)
        if not key or key in asked:
            continue
        asked.add(key)
        kept.append((query, key))
        if len(kept) >= limit:
            break
    return kept


def _sends(new: list[SubQuery], run: PlannerRun) -> list[Send]:
    return [
        Send(
            search_node(name),
            SearchTask(sub_query_id=q["id"], query=q["query"], searcher=name, round=q["round"]),
        )
        for q in new
        for name in run.searchers
    ]


def _new_sub_queries(
    pairs: list[tuple[str, str]], start: int, rnd: int, origin: str
) -> list[SubQuery]:
    return [
        SubQuery(id=f"q{start + i + 1}", query=query, round=rnd, origin=origin, key=key)
        for i, (query, key) in enumerate(pairs)
    ]


def _conversation(history: list[dict[str, str]]) -> str:
    if not history:
        return ""
    turns = "\n".join(
        f"- Q: {t['question']} A: {t.get('short_answer') or '(no answer)'}" for t in history[-3:]
    )
    return f"Earlier in this conversation:\n{turns}\n\n"


# --------------------------------------------------------------------------- nodes


async def _plan(
    runtime: Runtime[PlannerRun], state: PlannerState, limit: int
) -> tuple[list[str], list[str]]:
    """The decomposition call: (queries, errors); a failure falls back to the question."""
    run = runtime.context
    try:
        reply = await ask(
            run.chat,
            QueryPlan,
            prompts.render(
                "decompose",
                question=state["question"],
                max_queries=limit,
                conversation=_conversation(state.get("history", [])),
            ),
            meter=run.budget_meter,
            step="decompose",
        )
    except BudgetExceeded as exc:
        return [], [f"decompose skipped: {exc.reason}"]
    if reply.value:
        return reply.value.queries, []
    return [], [f"decompose: {reply.error}; searching the question as is"]


async def decompose(state: PlannerState, runtime: Runtime[PlannerRun]) -> Command[Any]:
    run = runtime.context
    started = time.monotonic()
    question = state["question"]
    emit(
        runtime,
        "started",
        {
            "question": question,
            "thread_id": state.get("thread_id"),
            "searchers": list(run.searchers),
        },
        0,
        0.0,
    )
    limit = min(MAX_QUERIES_PER_CALL, run.budgets.max_sub_queries)
    errors: list[str] = []
    raw: list[str] = []
    if run.planner.decompose:
        raw, errors = await _plan(runtime, state, limit)
    pairs = _clean_queries(raw, set(), limit) or _clean_queries([question], set(), 1)
    new = _new_sub_queries(pairs, 0, 1, "decompose")
    emit(
        runtime,
        "decompose",
        {"sub_queries": [{"id": q["id"], "query": q["query"]} for q in new], "errors": errors},
        1,
        (time.monotonic() - started) * 1000,
    )
    update: dict[str, Any] = {
        "round": 1,
        "sub_queries": {q["id"]: q for q in new},
        "pending": [q["id"] for q in new],
        "errors": errors,
    }
    return Command(goto=_sends(new, run) or "answer", update=update)


async def search(task: SearchTask, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """One searcher on one atomic query. A searcher that raises, hangs or overruns the deadline
    degrades the answer (the trace says so); it never fails the question."""
    run = runtime.context
    started = time.monotonic()
    name, query = task["searcher"], task["query"]
    searcher = run.searchers[name]
    time_left = run.search_time_left()
    error: str | None = None
    result: SearchResult | None = None
    if time_left <= 0:
        error = "skipped: the question's deadline is near"
    else:
        try:
            result = await asyncio.wait_for(
                searcher.search(query, k=run.planner.k), timeout=time_left
            )
        except TimeoutError:
            error = f"no result within the {time_left:.0f}s left before the deadline"
        except Exception as exc:  # a plugin's bug must not end the question
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
    if result is None:
        result = SearchResult(
            searcher=name,
            query=query,
            hits=[],
            attempts=[],
            best_attempt=None,
            sufficient=False,
            stopped="error",
            llm_calls=0,
            ms=(time.monotonic() - started) * 1000,
            error=error,
        )
    run.budget_meter.llm_calls += result.llm_calls
    record = {"sub_query_id": task["sub_query_id"], **result.to_json()}
    emit(runtime, "search", record, task["round"], result.ms)
    errors = [f"{name} on {query!r}: {result.error}"] if result.error else []
    return {
        "searches": {f"{task['sub_query_id']}|{name}": record},
        "errors": errors,
    }


def _result_from_record(record: dict[str, Any]) -> SearchResult:
    hits = [
        Hit(
            passage=Passage(
                id=h["id"], title=h["title"], text=h["text"], metadata=h.get("metadata") or {}
            ),
            score=float(h["score"]),
            retriever=h.get("retriever", ""),
        )
        for h in record["hits"]
    ]
    return SearchResult(
        searcher=record["searcher"],
        query=record["query"],
        hits=hits,
        attempts=[],
        best_attempt=record.get("best_attempt"),
        sufficient=bool(record.get("sufficient")),
        stopped=record.get("stopped", "exhausted"),
        llm_calls=int(record.get("llm_calls", 0)),
        ms=float(record.get("ms", 0.0)),
        error=record.get("error"),
    )


def agreed_answer(records: list[dict[str, Any]]) -> str | None:
    """The answer span every verified searcher found in its passages, when they all agree."""
    spans: list[str] = []
    for record in records:
        best = record.get("best_attempt")
        if best is None or not record.get("sufficient"):
            continue
        verdict = (record["attempts"][best] or {}).get("verdict") or {}
        span = verdict.get("answer") or ""
        if normalize_answer(span) in NO_ANSWER:
            continue
        spans.append(span)
    if not spans:
        return None
    keys = {normalize_answer(s) for s in spans}
    return spans[0] if len(keys) == 1 else None


def _span_source(span: str, hits: list[Hit]) -> list[str]:
    target = normalize_answer(span)
    for hit in hits:
        if f" {target} " in f" {normalize_answer(hit.title + ' ' + hit.text)} ":
            return [hit.id]
    return [hits[0].id] if hits else []


_NOT_FOUND = re.compile(
    r"\b(not (found|mentioned|given|provided|stated|contain|include)|no information|"
    r"do(es)? not (say|mention|contain|provide|state)|cannot be determined|unknown)\b",
    re.IGNORECASE,
)


async def _summarize_one(
    sub: SubQuery, records: list[dict[str, Any]], runtime: Runtime[PlannerRun]
) -> tuple[dict[str, Any], list[Hit], list[str]]:
    run = runtime.context
    cfg = run.planner
    started = time.monotonic()
    hits = fuse_results([_result_from_record(r) for r in records], k=cfg.k)
    errors: list[str] = []
    span = agreed_answer(records) if cfg.skip_agreed_summaries else None
    if span is not None:
        summary = {
            "id": sub["id"],
            "query": sub["query"],
            "summary": span,
            "sources": _span_source(span, hits),
            "answered": True,
            "skipped": True,
        }
    elif not cfg.summarize:  # ablation: the answer step reads the fused passages themselves
        summary = {
            "id": sub["id"],
            "query": sub["query"],
            "summary": "",
            "sources": [h.id for h in hits[: cfg.summary_passages]],
            "answered": bool(hits),
            "skipped": True,
        }
    elif not hits:
        summary = {
            "id": sub["id"],
            "query": sub["query"],
            "summary": "No passages were found.",
            "sources": [],
            "answered": False,
            "skipped": True,
        }
    else:
        shown = hits[: cfg.summary_passages]
        answered, text, sources = False, "", []
        try:
            reply = await ask(
                run.chat,
                QuerySummary,
                prompts.render(
                    "summarize",
                    query=sub["query"],
                    passages=numbered_passages(
                        shown, max_chars=cfg.passage_chars, query=sub["query"]
                    ),
                ),
                meter=run.budget_meter,
                step="summarize",
            )
            if reply.value:
                text = " ".join(reply.value.answer.split())[:800]
                numbers = [n for n in reply.value.passages if 1 <= n <= len(shown)]
                sources = list(dict.fromkeys(shown[n - 1].id for n in numbers))
                answered = bool(sources) and bool(text) and not _NOT_FOUND.search(text)
            else:
                errors.append(f"summarize {sub['id']}: {reply.error}")
                text = "(the summary failed)"
        except BudgetExceeded as exc:
            text = f"(not summarized: {exc.reason})"
        summary = {
            "id": sub["id"],
            "query": sub["query"],
            "summary": text,
            "sources": sources,
            "answered": answered,
            "skipped": False,
        }
    emit(runtime, "summarize", summary, sub["round"], (time.monotonic() - started) * 1000)
    return summary, hits, errors


async def summarize(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Fuse and summarize the atomic queries of this round only; earlier ones keep theirs."""
    searches = state.get("searches", {})
    subs = [state["sub_queries"][qid] for qid in state.get("pending", [])]
    outcomes = await asyncio.gather(
        *(
            _summarize_one(
                sub,
                [r for key, r in searches.items() if key.split("|", 1)[0] == sub["id"]],
                runtime,
            )
            for sub in subs
        )
    )
    summaries: dict[str, Any] = {}
    fused: dict[str, list[str]] = {}
    passages: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for sub, (summary, hits, errs) in zip(subs, outcomes, strict=True):
        summaries[sub["id"]] = summary
        fused[sub["id"]] = [h.id for h in hits]
        passages.update({h.id: h.to_json() for h in hits})
        errors += errs
    return {"summaries": summaries, "fused": fused, "passages": passages, "errors": errors}


def _findings(state: PlannerState, chars: int) -> str:
    """What verify and supplement judge. With summaries ablated a query's finding is its fused
    passages themselves (trimmed around the query), so the judge reads the same evidence the
    summary would have condensed instead of judging blind."""
    lines = []
    passages = state.get("passages", {})
    for qid, sub in state.get("sub_queries", {}).items():
        summary = state.get("summaries", {}).get(qid)
        text = summary["summary"] if summary else "(not searched yet)"
        mark = "" if summary and summary["answered"] else " [unanswered]"
        shown = []
        if summary and not text:  # summaries ablated: the passages stand in for one
            shown = [passages[pid] for pid in summary["sources"] if pid in passages]
            text = "passages:" if shown else "(no passages)"
        lines.append(f"- {sub['query']} -> {text}{mark}")
        lines += [f"    {p['title']}: {focus_text(p['text'], chars, sub['query'])}" for p in shown]
    return "\n".join(lines)


async def verify(
    state: PlannerState, runtime: Runtime[PlannerRun]
) -> Command[Literal["supplement", "answer"]]:
    run = runtime.context
    started = time.monotonic()
    rnd = state.get("round", 1)
    summaries = state.get("summaries", {})
    # The cheap signal: an atomic query of this round that no passage answered. Earlier rounds'
    # unanswered queries are not counted again: the supplement round was their follow-up.
    unanswered = [
        state["sub_queries"][qid]["query"]
        for qid in state.get("pending", [])
        if not summaries.get(qid, {}).get("answered")
    ]
    verdict: dict[str, Any] = {"round": rnd, "llm_says": None}
    errors: list[str] = []
    if not run.planner.supplement:  # ablation: one round; there is nothing to decide
        verdict.update(sufficient=False, missing="", reason="supplement disabled")
    elif unanswered:
        # Known insufficient: no need to ask the model (it would say yes anyway).
        verdict.update(sufficient=False, missing="; ".join(unanswered), reason="unanswered")
    else:
        try:
            reply = await ask(
                run.chat,
                Sufficiency,
                prompts.render(
                    "verify",
                    question=state["question"],
                    findings=_findings(state, run.planner.passage_chars),
                ),
                meter=run.budget_meter,
                step="verify",
            )
            if reply.value:
                verdict.update(
                    sufficient=reply.value.sufficient,
                    llm_says=reply.value.sufficient,
                    missing=" ".join(reply.value.missing.split())[:300],
                    reason="every atomic query answered; the model judged the findings",
                )
            else:
                errors.append(f"verify: {reply.error}")
                verdict.update(sufficient=False, missing="", reason="the judgement failed")
        except BudgetExceeded as exc:
            verdict.update(sufficient=False, missing="", reason=exc.reason)
    stopped = ""
    if verdict["sufficient"]:
        stopped = "sufficient"
    elif not run.planner.supplement:
        stopped = "no_supplement"
    elif rnd >= run.budgets.max_rounds:
        stopped = "max_rounds"
    elif run.budget_meter.llm_calls >= run.budgets.max_llm_calls:
        stopped = "budget_llm_calls"
    elif run.search_time_left() <= 0:
        stopped = "deadline"
    elif len(state.get("sub_queries", {})) >= run.budgets.max_sub_queries:
        stopped = "max_sub_queries"
    verdict["stopped"] = stopped
    emit(runtime, "verify", verdict, rnd, (time.monotonic() - started) * 1000)
    update = {"verdicts": [*state.get("verdicts", []), verdict], "errors": errors}
    if stopped:
        return Command(goto="answer", update={**update, "stopped": stopped})
    return Command(goto="supplement", update=update)


async def supplement(state: PlannerState, runtime: Runtime[PlannerRun]) -> Command[Any]:
    run = runtime.context
    started = time.monotonic()
    rnd = state.get("round", 1) + 1
    asked = {q["key"] for q in state.get("sub_queries", {}).values()}
    room = run.budgets.max_sub_queries - len(state.get("sub_queries", {}))
    limit = max(0, min(MAX_QUERIES_PER_CALL, room))
    errors: list[str] = []
    raw: list[str] = []
    try:
        reply = await ask(
            run.chat,
            QueryPlan,
            prompts.render(
                "supplement",
                question=state["question"],
                findings=_findings(state, run.planner.passage_chars),
                max_queries=limit,
            ),
            meter=run.budget_meter,
            step="supplement",
        )
        raw = reply.value.queries if reply.value else []
        if reply.error:
            errors.append(f"supplement: {reply.error}")
    except BudgetExceeded as exc:
        errors.append(f"supplement skipped: {exc.reason}")
    proposed = [" ".join(str(q).split()) for q in raw]
    pairs = _clean_queries(raw, set(asked), limit)
    dropped = [q for q in proposed if q and q not in {p for p, _ in pairs}]
    new = _new_sub_queries(pairs, len(state.get("sub_queries", {})), rnd, "supplement")
    emit(
        runtime,
        "supplement",
        {
            "sub_queries": [{"id": q["id"], "query": q["query"]} for q in new],
            "dropped": dropped,
            "errors": errors,
        },
        rnd,
        (time.monotonic() - started) * 1000,
    )
    if not new:
        return Command(goto="answer", update={"stopped": "no_new_queries", "errors": errors})
    update: dict[str, Any] = {
        "round": rnd,
        "sub_queries": {q["id"]: q for q in new},
        "pending": [q["id"] for q in new],
        "errors": errors,
    }
    return Command(goto=_sends(new, run), update=update)


def _sources_for_answer(state: PlannerState, limit: int) -> list[dict[str, Any]]:
    """The passages the answer may cite: each summary's sources first (in query order), then
    the best fused passage of each query, until ``limit``."""
    ordered: list[str] = []
    for qid in state.get("sub_queries", {}):
        ordered += state.get("summaries", {}).get(qid, {}).get("sources", [])
    for qid in state.get("sub_queries", {}):
        ordered += state.get("fused", {}).get(qid, [])[:1]
    passages = state.get("passages", {})
    unique = [pid for pid in dict.fromkeys(ordered) if pid in passages]
    return [passages[pid] for pid in unique[:limit]]


_CITE = re.compile(r"\[(\d{1,3})\]")


def _focus(state: PlannerState) -> str:
    """What the answer step's passages are trimmed around: the question and its queries."""
    queries = " ".join(q["query"] for q in state.get("sub_queries", {}).values())
    return f"{state['question']} {queries}"


def _evidence(state: PlannerState, sources: list[dict[str, Any]], chars: int) -> str:
    number = {s["id"]: n for n, s in enumerate(sources, start=1)}
    lines = ["Findings:"]
    for qid, sub in state.get("sub_queries", {}).items():
        summary = state.get("summaries", {}).get(qid)
        if not summary:
            continue
        marks = "".join(f"[{number[p]}]" for p in summary["sources"] if p in number)
        said = summary["summary"] or "see sources"  # empty when summaries are ablated
        lines.append(f"- {sub['query']}: {said} {marks}".rstrip())
    lines.append("\nSources:")
    for n, source in enumerate(sources, start=1):
        lines.append(f"[{n}] {source['title']}: {focus_text(source['text'], chars, _focus(state))}")
    return "\n".join(lines)


async def answer(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    run = runtime.context
    started = time.monotonic()
    sources = _sources_for_answer(state, run.planner.answer_sources)
    evidence = _evidence(state, sources, run.planner.passage_chars)
    # The answer is the point of the run: it may use one call beyond the budget.
    run.budget_meter.budget = type(run.budget_meter.budget)(
        max_llm_calls=run.budget_meter.llm_calls + 1,
        deadline_s=run.budget_meter.elapsed_s + max(run.remaining_s(), run.llm_timeout_s),
        llm_timeout_s=run.llm_timeout_s,
    )
    reply = await ask(
        run.chat,
        FinalAnswer,
        prompts.render("answer", question=state["question"], evidence=evidence),
        meter=run.budget_meter,
        step="answer",
    )
    if reply.value is None:
        raise AgentRunError(f"the chat model could not write the answer: {reply.error}")
    short = " ".join(reply.value.short_answer.split())[:300]
    text = " ".join(reply.value.answer.split())[:2000] or short
    cited = sorted({int(n) for n in _CITE.findall(text) if 1 <= int(n) <= len(sources)})
    text = _CITE.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= len(sources) else "", text)
    shown = cited or list(range(1, len(sources) + 1))
    citations = [
        {
            "n": n,
            "id": sources[n - 1]["id"],
            "title": sources[n - 1]["title"],
            "text": sources[n - 1]["text"],
            "url": (sources[n - 1].get("metadata") or {}).get("url"),
        }
        for n in shown
    ]
    emit(
        runtime,
        "answer",
        {"short_answer": short, "answer": text, "citations": [c["id"] for c in citations]},
        state.get("round", 1),
        (time.monotonic() - started) * 1000,
    )
    turn = {"question": state["question"], "short_answer": short}
    focus = _focus(state)
    shown_sources = [
        {
            "n": n,
            "id": src["id"],
            "title": src["title"],
            "text": src["text"],
            "shown": focus_text(src["text"], run.planner.passage_chars, focus),
        }
        for n, src in enumerate(sources, start=1)
    ]
    return {
        "short_answer": short,
        "answer": text,
        "citations": citations,
        "sources": shown_sources,
        "stopped": state.get("stopped") or "sufficient",
        "history": [*state.get("history", []), turn][-10:],
    }


def search_node(searcher: str) -> str:
    """Each enabled searcher is its own node of the graph ("search_sparse", ...)."""
    return f"search_{searcher}"


def build_planner_graph(searchers: list[str], checkpointer: Any = None):
    """The graph for these searchers: one search node per searcher name, so the compiled
    graph (and its drawing) shows which searchers the planner fans out to."""
    graph = StateGraph(PlannerState, context_schema=PlannerRun)
    graph.add_node("decompose", decompose)
    for name in searchers:
        graph.add_node(search_node(name), search)
        graph.add_edge(search_node(name), "summarize")
    graph.add_node("summarize", summarize)
    graph.add_node("verify", verify)
    graph.add_node("supplement", supplement)
    graph.add_node("answer", answer)
    graph.add_edge(START, "decompose")
    graph.add_edge("summarize", "verify")
    graph.add_edge("answer", END)
    return graph.compile(name="planner", checkpointer=checkpointer)


def recursion_limit(max_rounds: int) -> int:
    """Supersteps per round: search, summarize, verify, supplement; plus decompose and answer."""
    return 4 * max_rounds + 10
