"""The ``answer`` node: one reserved call reads raw passages chosen from everything found,
with the findings as notes. How the plan is answered is chosen once, from its status
(``choose_mode``, an ``AnswerMode``): a resolved plan reads its findings' passages with notes
and follows its chain; an open one is read as one-call RAG reads the question. The short answer
is then settled by the no-call rules (``agent.checks.short_answer``), every cited sentence is
checked against its passages, and each cited passage becomes a ``Citation``."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

import prompts
from agent.checks.citations import (
    CitationCheck,
    SourceText,
    check_citations,
    cite_each_side,
)
from agent.checks.escalation import Candidate, FinalChoice, PlanKind, final_choice
from agent.checks.evidence import Finding, select_evidence
from agent.checks.short_answer import ShortAnswer, settle_short_answer
from agent.planner.plan import Plan
from agent.planner.state import PlannerRun, PlannerState
from agent.planner.trace import emit
from agent.results import Citation, Draft, ShownSource, answered_stop, shown_source
from agent.settings import PlannerSettings
from searchers.passages import HitRecord, focus_text
from searchers.reader import (
    WHOLE_CHARS,
    ReaderReply,
    best_sentence,
    holding_sentence,
    read_free_answer,
    read_short_answer,
)
from searchers.searcher import RunScope
from searchers.structured_calls import Reply, ask
from searchers.verification import contains_span

ANSWER_MAX_TOKENS = 256


class FinalAnswer(BaseModel):
    short_answer: str = Field(description="a few words: a name, a date, a number, or yes/no")
    answer: str = Field(description="one to three sentences, each ending with [n] citations")


class AgentRunError(RuntimeError):
    """The run cannot produce an answer (the chat model failed at the last step)."""


_CITE = re.compile(r"\[(\d{1,3})\]")

MIN_RESOLVED_SOURCES = 2
HOP_PASSAGES = 2  # per searched query, in plan order, when an open plan reads its chain


def _answer_sources(plan: Plan, limit: int, *, narrow: bool, k: int) -> list[HitRecord]:
    """The passages the answer reads. A resolved plan (``narrow``) reads its findings' own
    passages, at least two: on the gold paragraphs alone the 1.5B reader scores far above
    what it makes of the same paragraphs among distractors (the ``oracle`` pipeline measures
    it). An open plan answered along its chain (when the question was not searched as
    written; else it reads the question's own hits, ``_reader_sources``) reads it the way the
    oracle does, hop by hop: the first ``HOP_PASSAGES`` passages of each searched query in plan
    order, then the question's as-written retrieval (one-call RAG's passages), then whatever
    else was found, ranked by the question's and the findings' names (a plan with no supported
    finding reads the question's retrieval first, one-call RAG as the fallback). Why hop
    order: docs/architecture.md."""
    passages = dict(plan.passages)
    ranked = plan.ranked()
    findings = plan.supported_findings()
    question_hits = plan.question_hits(k)
    for hit in question_hits:
        passages.setdefault(hit.id, hit.to_json())
    if narrow and findings:
        first = {f.sources[0] for f in findings if f.sources and f.sources[0] in passages}
        narrowed = min(limit, max(MIN_RESOLVED_SOURCES, len(first)))
        ids = select_evidence(plan.question.text, findings, ranked, passages, narrowed)
        ids = list(dict.fromkeys(ids))[:limit]
        return [passages[pid] for pid in ids]
    # a plan that found nothing at all has no chain to read: one-call RAG's passages lead
    chain = [pid for ids in ranked for pid in ids[:HOP_PASSAGES] if pid in passages]
    hops = chain if findings else []
    lead = list(dict.fromkeys([*hops, *(h.id for h in question_hits)]))[:limit]
    rest = select_evidence(plan.question.text, findings, ranked, passages, limit)
    ids = list(dict.fromkeys([*lead, *rest]))[:limit]
    return [passages[pid] for pid in ids]


def _reader_sources(plan: Plan, cfg: PlannerSettings) -> list[HitRecord] | None:
    """An open plan's passages when one-call RAG's reader answers it: the question's own first
    hits (one-call RAG's context), up to ``answer_sources``; None when the question's search
    found nothing (the plan's own passages are all there is; docs/architecture.md)."""
    hits = plan.question_hits(cfg.k)
    shown = {hit.id: hit.to_json() for hit in hits}
    ids = list(dict.fromkeys(hit.id for hit in hits))[: cfg.answer_sources]
    return [shown[pid] for pid in ids] or None


@dataclass(frozen=True)
class AnswerMode:
    """How one plan is answered, chosen once from its status (``choose_mode``).

    ``name``: "resolved" (every query answered: its findings' passages, notes, the chain
    followed), "one_call" (an open plan read as one-call RAG reads the question, ``reader``),
    "open" (an open plan with no hits of the question's own: the plan is the question itself,
    or its search found nothing; the plan's passages, notes and all), "passages" (the findings
    step ablated).
    ``planned``: the answer reads the findings as notes and follows the chain."""

    name: str
    sources: list[HitRecord]
    focus: str  # what the shown passages are trimmed around
    planned: bool
    reader: bool = False
    resolved: bool = False  # ``Plan.resolved()`` (``citation_check.plan_resolved``)
    unplanned: bool = False  # an open plan answered without its findings (``answered_as``)
    nameless: tuple[str, ...] = ()  # what kept a plan that found everything open
    step: str = "answer"  # the usage step its call is counted under ("draft" for the draft)


def choose_mode(plan: Plan, cfg: PlannerSettings) -> AnswerMode:
    """The answer's mode from the plan's status and the settings: a resolved plan
    (``Plan.resolved``) reads its findings' passages; an open plan is read as one-call RAG reads
    the question, over the question's own hits, or else over the plan's passages with notes."""
    if not cfg.summarize:  # LevelRAG's no-summarize ablation: no findings, no chain
        return AnswerMode("passages", _fused_sources(plan, cfg, narrow=False), plan.focus(), False)
    # reported beside plan_resolved: the queries that kept a plan that found everything open
    shown_nameless = tuple(plan.nameless()) if plan.found_everything() else ()
    if plan.resolved():
        narrow = plan.whole()
        sources = _fused_sources(plan, cfg, narrow=narrow)
        return AnswerMode("resolved", sources, plan.focus(), True, resolved=True)
    read = _reader_sources(plan, cfg)
    if read:
        return AnswerMode(
            "one_call", read, plan.question.text, False, reader=True, unplanned=True,
            nameless=shown_nameless,
        )  # fmt: skip
    sources = _fused_sources(plan, cfg, narrow=False)
    return AnswerMode("open", sources, plan.focus(), True, nameless=shown_nameless)


def _fused_sources(plan: Plan, cfg: PlannerSettings, *, narrow: bool) -> list[HitRecord]:
    return _answer_sources(plan, cfg.answer_sources, narrow=narrow, k=cfg.k)


def _notes(findings: list[Finding]) -> str:
    if not findings:
        return "(none)"
    return "\n".join(f"- {f.query}: {f.answer}" for f in findings)


def _without_model(
    findings: list[Finding], sources: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """(short, long) answer of a run whose answer call failed or ran out of time, built from
    its supported findings (the last is the chain's end, each a sentence citing its own
    passage), or None when it has none; the rules after the call then apply as to a written
    answer, and the run is flagged degraded with the reason."""
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


@dataclass(frozen=True)
class Written:
    """The answer as first written: by the model, or without it when its call failed."""

    short: str
    long: str
    errors: list[str]


async def _write(
    run: PlannerRun,
    plan: Plan,
    mode: AnswerMode,
    texts: list[SourceText],
    scope: RunScope,
    *,
    logprobs: bool = False,
) -> Reply[FinalAnswer] | Reply[ReaderReply]:
    """The answer's one call, charged to ``scope`` (the answer's reserved one,
    ``PlannerRun.answer_scope``, beyond what the rounds could spend; the draft's is the
    rounds'). An open plan read as one-call RAG reads as one-call RAG does: its reader writes
    the short answer alone."""
    if mode.reader and run.planner.answer_reader == "free":
        return await read_free_answer(
            run.chat,
            plan.question.text,
            [(t.title, t.text) for t in texts],
            scope=scope,
            step=mode.step,
            logprobs=logprobs,
        )
    passages_text = "\n".join(f"[{t.n}] {t.title}: {t.text}" for t in texts)
    if mode.reader:
        return await read_short_answer(
            run.chat,
            plan.question.text,
            passages_text,
            scope=scope,
            step=mode.step,
            logprobs=logprobs,
        )
    return await ask(
        run.chat,
        FinalAnswer,
        prompts.render(
            "answer",
            question=plan.question.text,
            notes=_notes(plan.supported_findings()) if mode.planned else "(none)",
            passages=passages_text or "(no passages were found)",
        ),
        scope=scope,
        step="answer",
        max_tokens=ANSWER_MAX_TOKENS,
    )


def _written(
    reply: Reply[FinalAnswer] | Reply[ReaderReply],
    plan: Plan,
    mode: AnswerMode,
    texts: list[SourceText],
) -> Written:
    """The reply as (short, long) text; a failed call leaves an answer from the findings, or
    the likeliest sentence when it timed out before any finding, or raises ``AgentRunError``.
    The reader's long answer is the shown sentence that holds its short answer."""
    if isinstance(reply.value, ReaderReply):
        short = " ".join(reply.value.answer.split())[:300]
        shown = [(t.n, t.text) for t in texts]
        return Written(short, holding_sentence(short, shown, plan.question.text) or "", [])
    if reply.value is not None:
        short = " ".join(reply.value.short_answer.split())[:300]
        return Written(short, " ".join(reply.value.answer.split())[:2000], [])
    fallback = _without_model(plan.supported_findings(), mode.sources)
    how = "answered from the findings without the model"
    if fallback is None and reply.timed_out:
        fallback = _extract_without_model(plan.question.text, texts)
        how = "cited the likeliest sentence without the model, no short answer"
    if fallback is None:
        raise AgentRunError(f"the chat model could not write the answer: {reply.error}")
    return Written(fallback[0], fallback[1], [f"{reply.error}; {how}"])


def _cited_text(
    check: CitationCheck, short: str, texts: list[SourceText], *, grounded: bool
) -> str:
    """The checked answer; when every sentence failed the check, the short answer, cited
    where it occurs."""
    if check.answer or not short:
        return check.answer
    holder = [t.n for t in texts if grounded and contains_span(short, f"{t.title} {t.text}")]
    return f"{short}" + (f" [{holder[0]}]" if holder else "") + "."


def _report(
    check: CitationCheck,
    settled: ShortAnswer,
    mode: AnswerMode,
    written: str,
) -> dict[str, Any]:
    """The answer's checks as the result reports them (``citation_check``; keys in order)."""
    report = {
        **check.to_json(),
        "short_answer_grounded": settled.grounded,
        "plan_resolved": mode.resolved,
    }
    if mode.unplanned:
        report["answered_as"] = mode.name
    if mode.nameless:
        report["nameless_queries"] = list(mode.nameless)
    if settled.chain_end is not None:
        report["chain_end"] = settled.chain_end
    if settled.comparison is not None:
        report["comparison"] = settled.comparison.to_json()
    if settled.last_hop is not None:
        report["last_hop"] = settled.last_hop
    if written != settled.text:
        report["short_answer_written"] = written
    return report


def _shown(mode: AnswerMode, cfg: PlannerSettings) -> list[ShownSource]:
    """Each passage as the prompt shows it, trimmed around the mode's focus: what the citation
    check reads and what the result reports as shown. The free reader reads whole passages
    (``WHOLE_CHARS``), every other prompt ``passage_chars`` of each."""
    free = mode.reader and cfg.answer_reader == "free"
    chars = WHOLE_CHARS if free else cfg.passage_chars
    return [
        shown_source(hit, n, focus_text(hit["text"], chars, mode.focus))
        for n, hit in enumerate(mode.sources, start=1)
    ]


@dataclass(frozen=True)
class Composed:
    """One written, settled and checked answer: the answer step's, or the draft's."""

    short: str
    text: str  # the cited long answer
    citations: list[Citation]
    shown: list[ShownSource]
    sources: list[HitRecord]
    report: dict[str, Any]  # ``citation_check``
    errors: list[str]
    grounded: bool  # the short answer is a span of the shown passages or a supported finding
    token_logprobs: tuple[tuple[str, float], ...] = ()

    def fields(self) -> dict[str, Any]:
        """The state's answer fields."""
        return {
            "short_answer": self.short,
            "answer": self.text,
            "citations": [c.to_json() for c in self.citations],
            "sources": self.shown,
            "citation_check": self.report,
        }

    def event(self) -> dict[str, Any]:
        return {
            "short_answer": self.short,
            "answer": self.text,
            "citations": [c.id for c in self.citations],
            "sources": [s["id"] for s in self.sources],
            "check": self.report,
        }


def finish(
    plan: Plan,
    mode: AnswerMode,
    shown: list[ShownSource],
    written: Written,
    *,
    follow_chain: bool,
    reader: bool,
) -> Composed:
    """The written answer after the rules and the citation check (no call): the short answer
    settled against the shown passages, the plan's hops and supported findings, the long
    answer checked sentence by sentence, each cited passage a ``Citation``."""
    texts = [SourceText(s["n"], s["title"], s["shown"]) for s in shown]
    settled = settle_short_answer(
        written.short,
        written.long,
        texts,
        plan.question,
        plan.hops() if mode.planned else [],
        plan.supported_findings(),
        follow_chain=follow_chain,
    )
    long = written.long
    if reader and settled.text != written.short:
        long = (
            holding_sentence(settled.text, [(t.n, t.text) for t in texts], plan.question.text) or ""
        )
    check = check_citations(long, texts, plan.question.text)
    text = _cited_text(check, settled.text, texts, grounded=settled.grounded)
    text = cite_each_side(text, texts, plan.question)
    sources = mode.sources
    cited = sorted({int(n) for n in _CITE.findall(text) if 1 <= int(n) <= len(sources)})
    return Composed(
        short=settled.text,
        text=text,
        citations=[Citation.of(sources[n - 1], n) for n in cited],
        shown=shown,
        sources=sources,
        report=_report(check, settled, mode, written.short),
        errors=written.errors,
        grounded=settled.grounded,
    )


async def compose(
    run: PlannerRun, plan: Plan, mode: AnswerMode, scope: RunScope, *, logprobs: bool = False
) -> Composed:
    """Write the answer as ``mode`` says (one call on ``scope``), then settle and check it."""
    shown = _shown(mode, run.planner)
    texts = [SourceText(s["n"], s["title"], s["shown"]) for s in shown]
    reply = await _write(run, plan, mode, texts, scope, logprobs=logprobs)
    written = _written(reply, plan, mode, texts)
    composed = finish(
        plan,
        mode,
        shown,
        written,
        follow_chain=mode.planned,
        reader=isinstance(reply.value, ReaderReply),
    )
    if reply.token_logprobs:
        composed = replace(composed, token_logprobs=reply.token_logprobs)
    return composed


async def answer(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Write the answer as the plan's mode says, then settle and check it (no call). After a
    draft (``agent.planner.draft``) an open plan makes no call: the draft is its answer, or a
    comparison computed over the plan's findings; a resolved plan's answer replaces the draft
    only as ``escalation.final_choice`` rules, and the trace says which won and why."""
    run = runtime.context
    started = time.monotonic()
    plan = Plan.from_json(state)
    mode = choose_mode(plan, run.planner)
    draft = Draft.from_state(state)
    choice: FinalChoice | None = None
    if draft is not None and draft.is_written and not mode.resolved:
        composed = redraft(plan, draft)
        kind: PlanKind = "comparison" if "comparison" in composed.report else "open"
        choice = final_choice(
            draft_candidate(draft), kind, Candidate(composed.short, True), plan.question.choices
        )
    else:
        composed = await compose(run, plan, mode, run.answer_scope())
        if draft is not None and draft.is_written:
            kind = "comparison" if "comparison" in composed.report else "resolved"
            plan_answer = Candidate(composed.short, composed.grounded)
            choice = final_choice(draft_candidate(draft), kind, plan_answer, plan.question.choices)
    if draft is not None and choice is not None and choice.source == "draft":
        composed = redraft(plan, draft, settle=False)
    data = composed.event()
    if choice is not None:
        data["final"] = {"source": choice.source, "reason": choice.reason}
    emit(runtime, "answer", data, state.get("round", 1), (time.monotonic() - started) * 1000)
    turn = {"question": plan.question.text, "short_answer": composed.short}
    update: dict[str, Any] = {
        "errors": composed.errors,
        **composed.fields(),
        "stopped": answered_stop(state.get("stopped", "")),
        "history": [*state.get("history", []), turn][-10:],
    }
    if choice is not None:
        update["final_choice"] = {"source": choice.source, "reason": choice.reason}
    return update


def draft_candidate(draft: Draft) -> Candidate:
    return Candidate(draft.short_answer or "", draft.supported)


def redraft(plan: Plan, draft: Draft, *, settle: bool = True) -> Composed:
    """The draft as an answer of this plan, with no call: as the draft step wrote it
    (``settle=False``), or settled again with the plan's supported findings, which computes a
    comparison the plan's findings answer ("A or B?" over both compared values)."""
    shown = list(draft.sources)
    question = plan.question.text
    mode = AnswerMode("draft", list(draft.hits), question, False, reader=True, step="draft")
    if not settle:
        return Composed(
            short=draft.short_answer or "",
            text=draft.answer,
            citations=list(draft.citations),
            shown=shown,
            sources=mode.sources,
            report={**draft.citation_check, "answered_as": "draft"},
            errors=[],
            grounded=draft.supported,
        )
    short = draft.written
    # the draft is the reader's: its long answer is the shown sentence holding its span, as
    # ``_written`` makes it (the record keeps the short span, not that sentence)
    long = holding_sentence(short, [(s["n"], s["shown"]) for s in shown], plan.question.text) or ""
    written = Written(short, long, [])
    composed = finish(plan, mode, shown, written, follow_chain=False, reader=True)
    return replace(composed, report={**composed.report, "answered_as": "draft"})
