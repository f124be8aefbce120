"""One human line per trace step: what ``hoptree ask`` prints while it runs and what a chat
client receives as ``reasoning_content``, so the terminal and a chat UI tell the same story.

The data is read defensively: the planner's events and a test double's differ in optional
fields, and a step that cannot be described must not cost the user the answer.
"""

from __future__ import annotations

from typing import Any

from agent.results import Draft, TraceEvent
from searchers.passages import source_label
from searchers.text import normalize_answer_folded


def _clip(text: Any, limit: int = 120) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _queries(subs: Any) -> str:
    return "; ".join(_clip(q.get("query", ""), 100) for q in subs or [] if isinstance(q, dict))


def cited_titles(citations: Any) -> list[str]:
    """ "[n] title" of each cited source of an answer's citation records (the draft event's,
    the result's), in order; what a person reads to know where an answer comes from."""
    titles = []
    for c in citations or []:
        if isinstance(c, dict):
            label = source_label(str(c.get("title") or c.get("id") or "?"), c.get("page"))
            titles.append(f"[{c.get('n', '?')}] {label}")
    return titles


def draft_sources(data: dict[str, Any]) -> str:
    """The draft event's cited sources as one line ("Sources: [1] Seine; [2] Paris"), or ""."""
    titles = cited_titles(data.get("citations"))
    return "Sources: " + "; ".join(titles) if titles else ""


def replaced_line(
    draft: Draft | None, final_choice: dict[str, Any] | None, final_short: str
) -> str | None:
    """The one line that says the final answer replaced the draft, and why; None when the
    draft was the answer or the plan found the same one (``final_short``, compared as answers
    are scored), or there was no draft to replace (switched off, not written)."""
    if draft is None or draft.short_answer is None or not final_choice:
        return None
    if final_choice.get("source") != "plan":
        return None
    if normalize_answer_folded(draft.short_answer) == normalize_answer_folded(final_short):
        return None
    why = _clip(final_choice.get("reason") or "the plan's answer won", 120)
    return f"the plan's answer replaced the draft {_clip(draft.short_answer, 80)!r}: {why}"


def progress_line(event: TraceEvent) -> str | None:
    """One short human line for a trace step a user should see, or None."""
    d = event.data
    if event.kind == "started":
        names = ", ".join(str(n) for n in d.get("searchers") or [])
        return "planning the search" + (f" (searchers: {names})" if names else "")
    if event.kind == "decompose":
        waiting = d.get("waiting") or []
        planned = [*(d.get("sub_queries") or []), *waiting]
        noun = "query" if len(planned) == 1 else "queries"
        later = f" ({len(waiting)} wait for an earlier answer)" if waiting else ""
        shape = f" [{str(d['shape']).replace('_', ' ')}]" if d.get("shape") else ""
        if d.get("planned_by") == "relation":
            shape += " [by the relation's definition, no call]"
        return f"planned {len(planned)} atomic {noun}{later}{shape}: {_queries(planned)}"
    if event.kind == "search":
        who = d.get("searcher") or "a searcher"
        query = _clip(d.get("query", ""), 100)
        if d.get("stopped") == "error":
            return f"{who} failed on {query!r}: {_clip(d.get('error') or 'no result', 100)}"
        ok = "verified" if d.get("sufficient") else "unverified"
        seconds = float(d.get("ms") or event.ms or 0.0) / 1000
        hits = len(d.get("hits") or [])
        return f"{who} searched {query!r}: {ok}, {hits} passage(s) ({seconds:.1f}s)"
    if event.kind == "finding":
        qid = d.get("id") or "?"
        if d.get("finding"):
            return f"{qid} finding: {_clip(d['finding'])} (supported)"
        if d.get("proposed"):
            return f"{qid} finding not supported by its passages: {_clip(d['proposed'])}"
        if d.get("skipped") and d.get("answered"):
            return f"{qid}: {len(d.get('sources') or [])} passage(s), no finding written"
        return f"{qid}: not found"
    if event.kind == "verify":
        sufficient = bool(d.get("sufficient"))
        line = f"round {event.round} verdict: {'sufficient' if sufficient else 'insufficient'}"
        if d.get("reason"):
            line += f" ({_clip(d['reason'], 100)})"
        missing = d.get("missing")
        if isinstance(missing, list):
            missing = "; ".join(str(m) for m in missing)
        if missing and not sufficient:
            line += f"; missing: {_clip(missing, 150)}"
        return line
    if event.kind == "next_round":
        what = "next hop" if d.get("origin") == "hop" else "follow-up queries"
        return f"{what}: {_queries(d.get('sub_queries')) or 'none'}"
    if event.kind == "draft":
        decision = d.get("decision") or {}
        why = _clip(decision.get("reason") or "", 80)
        if not d.get("short_answer") and d.get("error"):
            return f"no draft ({_clip(d['error'], 100)}); the plan answers"
        seconds = float(d.get("seconds") or 0.0)
        titles = cited_titles(d.get("citations"))
        cited = f"cites {_clip('; '.join(titles), 100)}" if titles else "no citation"
        then = "a plan will check it" if decision.get("escalate") else "it stands"
        short = _clip(d.get("short_answer") or "(no short answer)", 80)
        return f"draft answer after {seconds:.1f}s: {short!r}, {cited}; {then} ({why})"
    if event.kind == "answer":
        check = d.get("check") or {}
        if not check:
            return "answer written"
        line = (
            f"answer written; citation check kept {check.get('kept', 0)} of "
            f"{check.get('sentences', 0)} sentence(s)"
        )
        if check.get("recited"):
            line += f", re-cited {check['recited']}"
        if check.get("dropped"):
            line += f", dropped {check['dropped']} ungrounded"
        if check.get("chain_end"):
            line += f"; the chain ends at {_clip(str(check['chain_end']), 60)!r}"
        elif check.get("plan_resolved"):
            line += "; every query resolved"
        return line
    if event.kind == "error":
        where = f" in {d['where']}" if d.get("where") else ""
        return f"problem{where}: {_clip(d.get('error') or 'unknown error', 150)}"
    return None
