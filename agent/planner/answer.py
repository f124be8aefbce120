"""The ``answer`` node: one reserved call reads raw passages chosen from everything found,
with the findings as notes (a plan that did not resolve reads one-call RAG's passages, no
notes). The short answer is then grounded in a passage, moved along a
planned chain past a bridge entity, or computed for an "A or B?" comparison
(``agent.checks.short_answer``), every cited sentence is checked against its passages, and each
cited passage becomes a ``Citation``; none of that costs a call."""

from __future__ import annotations

import re
import time
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

import prompts
from agent.checks.chains import Hop, open_end
from agent.checks.citations import SourceText, check_citations
from agent.checks.evidence import Finding, select_evidence
from agent.checks.short_answer import settle_short_answer
from agent.planner.queries import (
    QUESTION_SEARCH_ID,
    active_queries,
    answer_of,
    names_nothing,
    unanswered_queries,
)
from agent.planner.state import (
    PlannerRun,
    PlannerState,
)
from agent.planner.trace import emit
from agent.results import Citation, shown_source
from agent.settings import PlannerSettings
from searchers.fusion import fuse_results
from searchers.passages import Hit, focus_text
from searchers.reader import ReaderReply, best_sentence, holding_sentence, read_short_answer
from searchers.searcher import SearchResult
from searchers.structured_calls import Reply, ask
from searchers.verification import contains_span

ANSWER_MAX_TOKENS = 256


class FinalAnswer(BaseModel):
    short_answer: str = Field(description="a few words: a name, a date, a number, or yes/no")
    answer: str = Field(description="one to three sentences, each ending with [n] citations")


class AgentRunError(RuntimeError):
    """The run cannot produce an answer (the chat model failed at the last step)."""


_CITE = re.compile(r"\[(\d{1,3})\]")


def supported_findings(state: PlannerState) -> list[Finding]:
    """The findings the answer step may lean on, in query order."""
    summaries = state.get("summaries", {})
    out = []
    for sub in active_queries(state):
        summary = summaries[sub["id"]]
        if summary.get("supported"):
            out.append(Finding(sub["query"], summary["summary"], tuple(summary["sources"])))
    return out


def _focus(state: PlannerState) -> str:
    """What the answer step's passages are trimmed around: the question and its queries."""
    queries = " ".join(q["query"] for q in state.get("sub_queries", {}).values())
    return f"{state['question']} {queries}"


MIN_RESOLVED_SOURCES = 2
HOP_PASSAGES = 2  # per searched query, in plan order, when an open plan reads its chain
# the open-plan answers read by one-call RAG's reader (``searchers/reader.py``)
READER_ANSWERS = ("one_call", "findings_first")


def resolved(state: PlannerState) -> bool:
    """Every searched query has a supported finding (its own or a follow-up's)."""
    summaries = state.get("summaries", {})
    return bool(summaries) and not unanswered_queries(state) and not state.get("waiting")


def nameless_queries(state: PlannerState) -> list[str]:
    """The searched queries that name nothing (``queries.names_nothing``). A plan holding one
    is answered as an open plan (``PlannerSettings.nameless_open``): measured on v4's HotpotQA
    report rows, the 16 plans with such a query that resolved scored 31 F1 where one-call RAG
    scored 46-48 on the same questions, while the 29 resolved plans without one scored 48
    against 28-33 ("year of overlap" found "2010"; "named after" found a name unrelated to the
    chain and became the short answer)."""
    question = state["question"]
    return [sub["query"] for sub in active_queries(state) if names_nothing(sub["query"], question)]


def _whole(state: PlannerState) -> bool:
    """Does the plan cover the question? A question of one fact is covered by one query; a
    chain or a comparison needs two or more. Measured on MuSiQue: a 4-hop question planned as
    one query "resolved" on a wrong first step, and its two passages held no answer; such a
    plan keeps the wider context."""
    return state.get("shape") == "single" or len(active_queries(state)) >= 2


def _question_hits(state: PlannerState, k: int) -> list[Hit]:
    """The question's own as-written retrieval (``queries.question_sends``), fused: one-call
    RAG's passages."""
    records = [
        SearchResult.from_json(r)
        for key, r in (state.get("searches") or {}).items()
        if key.split("|", 1)[0] == QUESTION_SEARCH_ID
    ]
    return fuse_results(records, k=k) if records else []


def _answer_sources(
    state: PlannerState, limit: int, *, narrow: bool, k: int, question_first: int = 0
) -> list[dict[str, Any]]:
    """The passages the answer reads. A resolved plan (``narrow``) reads its findings' own
    passages, at least two: on the gold paragraphs alone the 1.5B reader scores far above
    what it makes of the same paragraphs among distractors (the ``oracle`` pipeline measures
    it). An open plan answered along its chain (``open_plan_answer="chain"``; the default
    reads the question's own hits instead, ``_reader_sources``) reads it the way the oracle
    does, hop by hop: the first ``HOP_PASSAGES`` passages of each searched query in plan
    order, then the question's as-written retrieval (one-call RAG's passages), then whatever
    else was found, ranked by the question's and the findings' names (a plan with no supported
    finding reads the question's retrieval first, one-call RAG as the fallback). Measured on
    MuSiQue tuning questions 1-22 by rereading the recorded runs with one-call RAG's reader:
    hop order 38.5 F1, the findings' own passages and the question's hits first (what the
    planner read) 32.1, BM25 top-5 36.2.

    ``question_first`` (``PlannerSettings.question_hits_first``) adds the question's own first
    hits: after a resolved plan's findings' passages (up to ``limit``), ahead of an open plan's
    hop passages."""
    passages = dict(state.get("passages", {}))
    ranked = [state.get("fused", {}).get(qid, []) for qid in state.get("sub_queries", {})]
    findings = supported_findings(state)
    question_hits = _question_hits(state, k)
    for hit in question_hits:
        passages.setdefault(hit.id, hit.to_json())
    asked = [h.id for h in question_hits[:question_first]]
    if narrow and findings:
        first = {f.sources[0] for f in findings if f.sources and f.sources[0] in passages}
        narrowed = min(limit, max(MIN_RESOLVED_SOURCES, len(first)))
        ids = select_evidence(state["question"], findings, ranked, passages, narrowed)
        ids = list(dict.fromkeys([*ids, *asked]))[:limit]
        return [passages[pid] for pid in ids]
    # a plan that found nothing at all has no chain to read: one-call RAG's passages lead
    chain = [pid for ids in ranked for pid in ids[:HOP_PASSAGES] if pid in passages]
    hops = chain if findings else []
    lead = list(dict.fromkeys([*asked, *hops, *(h.id for h in question_hits)]))[:limit]
    rest = select_evidence(state["question"], findings, ranked, passages, limit)
    ids = list(dict.fromkeys([*lead, *rest]))[:limit]
    return [passages[pid] for pid in ids]


def _reader_sources(state: PlannerState, cfg: PlannerSettings) -> list[dict[str, Any]] | None:
    """An open plan's passages when one-call RAG's reader answers it: the question's own first
    hits (``open_plan_answer="one_call"``: one-call RAG's context), led under
    ``"findings_first"`` by the passage that supports each supported finding, in plan order
    (the hops that did resolve, with no notes and no chain to follow). Up to
    ``answer_sources``. None when the open plan is answered another way or the question was
    not searched as written (the plan's own passages are all there is)."""
    if cfg.open_plan_answer not in READER_ANSWERS or not cfg.question_search:
        return None
    hits = _question_hits(state, cfg.k)
    shown = {hit.id: hit.to_json() for hit in hits}
    lead: list[str] = []
    if cfg.open_plan_answer == "findings_first":
        known = state.get("passages", {})
        for finding in supported_findings(state):
            pid = next((p for p in finding.sources if p in known or p in shown), None)
            if pid is not None:
                lead.append(pid)
                if pid not in shown:
                    shown[pid] = known[pid]
    ids = list(dict.fromkeys([*lead, *(hit.id for hit in hits)]))[: cfg.answer_sources]
    return [shown[pid] for pid in ids] or None


def _hops(state: PlannerState) -> list[Hop]:
    """Every searched query as a link of its chain (``agent.checks.chains``)."""
    summaries = state.get("summaries", {})
    return [
        Hop(
            id=qid,
            needs=tuple(sub.get("needs") or ()),
            replaces=sub.get("replaces"),
            answer=summaries[qid]["summary"] if summaries[qid].get("supported") else None,
            superseded=bool(summaries[qid].get("superseded_by")),
        )
        for qid, sub in state.get("sub_queries", {}).items()
        if qid in summaries
    ]


def open_step(state: PlannerState) -> str | None:
    """The chain's last query, as it asks for what is still missing, when every earlier hop
    has a supported finding and the last has none (``agent.checks.chains.open_end``). A hop
    that resolved only after the last query was sent left its words in brackets there
    ("spouse of (actor who voices Batman)"); they are replaced by its finding. A plan with
    hops never searched (held back behind a hop that found nothing) has no such step: its last
    searched query is not the chain's last."""
    if state.get("waiting"):
        return None
    end = open_end(_hops(state))
    if end is None:
        return None
    subs = state.get("sub_queries", {})
    query = subs[end.id]["query"]
    for need in end.needs:
        found = answer_of(need, state)
        if found and need in subs:
            query = query.replace(f"({subs[need]['query']})", found)
    return query


def _open_step_text(step: str | None) -> str:
    if step is None:
        return ""
    return (
        f'\nStill open: the notes answer every step but the last, "{step}". The short answer '
        "answers that step from the passages; it is not a name from the notes.\n"
    )


def _notes(findings: list[Finding]) -> str:
    if not findings:
        return "(none)"
    return "\n".join(f"- {f.query}: {f.answer}" for f in findings)


def _without_model(
    findings: list[Finding], sources: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """(short, long) answer of a run whose answer call failed or ran out of time, built from
    its supported findings, or None when it has none. The last finding is the chain's end (or
    the one fact asked); each finding becomes a sentence citing its own passage where the
    answer step shows it. The rules after the call (chain end, comparison, citation check) then
    apply as to a written answer, and the run is flagged degraded with the reason."""
    if not findings:
        return None
    numbers = {src["id"]: n for n, src in enumerate(sources, start=1)}
    sentences = []
    for finding in findings:
        cited = next((numbers[p] for p in finding.sources if p in numbers), None)
        mark = f" [{cited}]" if cited is not None else ""
        sentences.append(f"{finding.query}: {finding.answer}{mark}.")
    return findings[-1].answer, " ".join(sentences)


def _extract_without_model(question: str, texts: list[SourceText]) -> tuple[str, str] | None:
    """(short, long) answer of a run whose answer call timed out before any finding was
    supported: the shown sentence that holds the most of the question's key terms, cited, and
    no short answer (none was read). A slow or queued model is not a dead one: the user gets
    the passage the answer most likely sits in, flagged degraded, instead of an error. None
    when nothing was shown or no sentence shares a term with the question."""
    found = best_sentence([(t.n, t.text) for t in texts], question, min_terms=1)
    if found is None:
        return None
    number, sentence = found
    return "", f"{sentence} [{number}]"


async def answer(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    run = runtime.context
    cfg = run.planner
    started = time.monotonic()
    nameless = nameless_queries(state) if cfg.summarize and cfg.nameless_open else []
    complete = cfg.summarize and resolved(state)  # every query found something
    plan_resolved = complete and not nameless
    open_plan = cfg.summarize and not plan_resolved
    fallback = _reader_sources(state, cfg) if open_plan else None
    sources = fallback or _answer_sources(
        state,
        cfg.answer_sources,
        narrow=plan_resolved and cfg.narrow_resolved and _whole(state),
        k=cfg.k,
        question_first=cfg.question_hits_first if cfg.question_search else 0,
    )
    # an open plan answered as one-call RAG (or from its hops alone) reads no notes and follows
    # no chain: its findings are the ones that did not add up to an answer
    unplanned = open_plan and (bool(fallback) or cfg.open_plan_answer == "hops")
    planned = cfg.summarize and not unplanned
    # one-call RAG trims its passages around the question alone
    focus = state["question"] if fallback else _focus(state)
    # each passage as the prompt shows it, trimmed around the question: what the citation
    # check reads and what the result reports as shown
    shown = [
        shown_source(hit, n, focus_text(hit["text"], cfg.passage_chars, focus))
        for n, hit in enumerate(sources, start=1)
    ]
    texts = [SourceText(s["n"], s["title"], s["shown"]) for s in shown]
    passages_text = "\n".join(f"[{t.n}] {t.title}: {t.text}" for t in texts)
    findings = supported_findings(state)
    step = open_step(state) if planned else None
    # The answer is the point of the run: it has one call of its own, beyond what the rounds
    # could spend (their scope stops one short of max_llm_calls; ``PlannerRun.answer_scope``).
    # An open plan answered as one-call RAG reads as one-call RAG does: its reader writes the
    # short answer alone, and the long answer is the shown sentence that holds it.
    reply: Reply[FinalAnswer] | Reply[ReaderReply]
    if fallback:
        reply = await read_short_answer(
            run.chat, state["question"], passages_text, scope=run.answer_scope(), step="answer"
        )
    else:
        reply = await ask(
            run.chat,
            FinalAnswer,
            prompts.render(
                "answer",
                question=state["question"],
                notes=_notes(findings) if planned else "(none)",
                open_step=_open_step_text(step),
                passages=passages_text or "(no passages were found)",
            ),
            scope=run.answer_scope(),
            step="answer",
            max_tokens=ANSWER_MAX_TOKENS,
        )
    errors: list[str] = []
    shown_texts = [(t.n, t.text) for t in texts]
    if isinstance(reply.value, ReaderReply):
        raw_short = " ".join(reply.value.answer.split())[:300]
        raw_long = holding_sentence(raw_short, shown_texts, state["question"]) or ""
    elif reply.value is not None:
        raw_short = " ".join(reply.value.short_answer.split())[:300]
        raw_long = " ".join(reply.value.answer.split())[:2000]
    else:
        fallback = _without_model(findings, sources)
        how = "answered from the findings without the model"
        if fallback is None and reply.timed_out:
            fallback = _extract_without_model(state["question"], texts)
            how = "cited the likeliest sentence without the model, no short answer"
        if fallback is None:
            raise AgentRunError(f"the chat model could not write the answer: {reply.error}")
        raw_short, raw_long = fallback
        errors.append(f"{reply.error}; {how}")
    settled = settle_short_answer(
        raw_short,
        raw_long,
        texts,
        state["question"],
        _hops(state) if planned else [],
        findings,
        follow_chain=planned and cfg.chain_answer,
    )
    short, grounded = settled.text, settled.grounded
    if isinstance(reply.value, ReaderReply) and short != raw_short:
        raw_long = holding_sentence(short, shown_texts, state["question"]) or ""
    check = check_citations(raw_long, texts, state["question"])
    text = check.answer
    if not text and short:
        # every sentence failed the check: the short answer, cited where it occurs
        holder = [t.n for t in texts if grounded and contains_span(short, f"{t.title} {t.text}")]
        text = f"{short}" + (f" [{holder[0]}]" if holder else "") + "."
    cited = sorted({int(n) for n in _CITE.findall(text) if 1 <= int(n) <= len(sources)})
    citations = [Citation.of(sources[n - 1], n) for n in cited]
    report = {
        **check.to_json(),
        "short_answer_grounded": grounded,
        "plan_resolved": plan_resolved,
    }
    if unplanned:
        report["answered_as"] = cfg.open_plan_answer if fallback else "hops"
    if nameless and complete:
        report["nameless_queries"] = nameless
    if settled.chain_end is not None:
        report["chain_end"] = settled.chain_end
    if settled.comparison is not None:
        report["comparison"] = settled.comparison.to_json()
    if step is not None:
        report["open_step"] = step
    if settled.last_hop is not None:
        report["last_hop"] = settled.last_hop
    if raw_short != short:
        report["short_answer_written"] = raw_short
    emit(
        runtime,
        "answer",
        {
            "short_answer": short,
            "answer": text,
            "citations": [c.id for c in citations],
            "sources": [s["id"] for s in sources],
            "check": report,
        },
        state.get("round", 1),
        (time.monotonic() - started) * 1000,
    )
    turn = {"question": state["question"], "short_answer": short}
    return {
        "errors": errors,
        "short_answer": short,
        "answer": text,
        "citations": [c.to_json() for c in citations],
        "sources": shown,
        "citation_check": report,
        "stopped": state.get("stopped") or "sufficient",
        "history": [*state.get("history", []), turn][-10:],
    }
