"""What the answer step's no-call rules would make of a run's recorded findings: the run is not
repeated, only its last, deterministic step.

After the answer call the planner moves a bridge entity along its chain (``agent.checks.chains``)
and computes "A or B?" comparisons from the findings (``agent.checks.comparison``). Changing those
rules changes no model call, so their effect on a run can be read from its rows: each planner row
keeps its atomic queries, their supported findings and what they needed, and the prediction
the rules were applied to. The row is read back as the planner's own ``Plan`` (``row_plan``),
so its hops and findings are what the answer step's were, by the same rule. On this machine a
50-question planner run takes 40 minutes; a replay takes a second, which is what makes trying
such a rule cheap. A replay is an estimate of a new
run, exact only when the model's replies repeat (greedy decoding, same prompts); a new run is
still the measurement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.checks.chains import last_hop
from agent.checks.comparison import resolve
from agent.checks.short_answer import says_yes_or_no
from agent.planner.plan import Plan
from agent.planner.state import FindingRecord, SubQuery
from agent.rules.query_text import query_key
from agent.rules.question import Question
from evals.losses import read_rows
from evals.metrics import best_exact_match, best_f1


def row_plan(row: Mapping[str, Any]) -> Plan:
    """The plan a planner row records (``evals.pipelines.planner_record``), as the answer step
    read it, so the replay asks the plan (``Plan.hops``, ``Plan.supported_findings``) and
    follows the planner's own rule of what a hop is.

    The row keeps each query's id (rows written before ids were: q1, q2, ... in plan order,
    which is how the planner numbers them), its round, what it needed and replaced, whether it
    was answered and its finding. A query of round 0 waited and was never searched: it has no
    finding, so it is no hop. A finding is supported when it was answered with a span (the
    findings step ablated answers with its passages and no span); which findings a follow-up
    replaced is not recorded, and is ``Plan.superseded``'s rule applied again."""
    subs = (row.get("planner") or {}).get("sub_queries") or []
    queries: dict[str, SubQuery] = {}
    findings: dict[str, FindingRecord] = {}
    for i, sub in enumerate(subs, start=1):
        qid, query = str(sub.get("id") or f"q{i}"), str(sub.get("query", ""))
        queries[qid] = SubQuery(
            id=qid,
            query=query,
            round=int(sub.get("round", 1)),
            origin=str(sub.get("origin", "decompose")),
            key=query_key(query),
            needs=[str(n) for n in sub.get("needs") or ()],
            replaces=sub.get("replaces"),
        )
        if queries[qid]["round"] == 0:
            continue
        span = str(sub.get("finding") or "")
        supported = bool(sub.get("answered")) and bool(span)
        findings[qid] = Plan.new_finding(
            queries[qid],
            span if supported else str(sub.get("proposed") or ""),
            [str(p) for p in sub.get("finding_sources") or ()],
            supported=supported,
            answered=bool(sub.get("answered")),
            skipped=False,  # not recorded
        )
    plan = Plan(
        question=Question.read(str(row.get("question", ""))),
        sub_queries=queries,
        waiting=tuple(qid for qid, sub in queries.items() if sub["round"] == 0),
        findings=findings,
    )
    searched = [sub for qid, sub in queries.items() if qid in findings]
    return replace(plan, findings={**findings, **plan.superseded(searched, findings)})


def replayed_prediction(row: Mapping[str, Any]) -> str:
    """The short answer today's rules give the row's recorded findings and prediction."""
    short = str(row.get("prediction") or "")
    record = row.get("planner")
    if not record:
        return short  # not a planner row: nothing to replay
    question = Question.read(str(row["question"]))
    plan = row_plan(row)
    hops = plan.hops()
    if not question.choices:
        moved = last_hop(short, hops, asks_when=question.asks_when)
        short = moved if moved and not says_yes_or_no(moved, question) else short
    findings = [(f.query, f.answer) for f in plan.supported_findings()]
    comparison = resolve(question, findings)
    short = comparison.picked if comparison is not None else short
    return _not_yes_or_no(short, question, record)


def _not_yes_or_no(short: str, question: Question, record: Mapping[str, Any]) -> str:
    """A "yes"/"no" answer to a question that asks something else is no answer
    (``short_answer.says_yes_or_no``): the reader's own answer where the recorded chain ended on
    "yes" over it, else the draft where there was one, which the final choice then keeps."""
    if not says_yes_or_no(short, question):
        return short
    check = record.get("citation_check") or {}
    written = str(check.get("short_answer_written") or "")
    ended_on_yes = says_yes_or_no(str(check.get("chain_end") or ""), question)
    if ended_on_yes and written and not says_yes_or_no(written, question):
        return written
    draft = str((record.get("draft") or {}).get("short_answer") or "")
    return draft if draft and not says_yes_or_no(draft, question) else short


def replay_markdown(runs: Sequence[Path]) -> str:
    """Per run: EM and F1 as recorded and as replayed, and every question whose answer moves."""
    lines = [
        "| run | questions | EM | F1 | EM replayed | F1 replayed | answers changed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    changes: list[str] = []
    for run in runs:
        rows = read_rows(run)
        em = f1 = em2 = f12 = 0.0
        moved = 0
        for row in rows:
            golds = [str(a) for a in row.get("answers") or []]
            new = replayed_prediction(row)
            em += best_exact_match(str(row.get("prediction") or ""), golds)
            f1 += best_f1(str(row.get("prediction") or ""), golds)
            em2 += best_exact_match(new, golds)
            f12 += best_f1(new, golds)
            if new != row.get("prediction"):
                moved += 1
                changes.append(
                    f"- {run.name} {row['id']}: {row['question']!r}: {row.get('prediction')!r} "
                    f"-> {new!r} (gold {golds[0]!r})"
                )
        n = max(1, len(rows))
        lines.append(
            f"| {run.parent.name}/{run.name} | {len(rows)} | {100 * em / n:.1f} | "
            f"{100 * f1 / n:.1f} | {100 * em2 / n:.1f} | {100 * f12 / n:.1f} | {moved} |"
        )
    return "\n".join([*lines, "", *changes]) + "\n"
