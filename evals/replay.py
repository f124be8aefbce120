"""What the answer step's no-call rules would make of a run's recorded findings: the run is not
repeated, only its last, deterministic step.

After the answer call the planner moves a bridge entity along its chain (``agent.checks.chains``)
and computes "A or B?" comparisons from the findings (``agent.checks.comparison``). Changing those
rules changes no model call, so their effect on a run can be read from its rows: each planner row
keeps its atomic queries, their supported findings and what they needed, and the prediction
the rules were applied to. On this machine a 50-question planner run takes 40 minutes; a replay
takes a second, which is what makes trying such a rule cheap. A replay is an estimate of a new
run, exact only when the model's replies repeat (greedy decoding, same prompts); a new run is
still the measurement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.checks.chains import Hop, last_hop
from agent.checks.comparison import resolve
from agent.rules.question import Question
from evals.losses import read_rows
from evals.metrics import best_exact_match, best_f1


def hops_of(row: Mapping[str, Any]) -> list[Hop]:
    """The row's atomic queries as chain links (rows written before ids were recorded: q1,
    q2, ... in plan order, which is how the planner numbers them)."""
    subs = (row.get("planner") or {}).get("sub_queries") or []
    hops = []
    for i, sub in enumerate(subs, start=1):
        qid = str(sub.get("id") or f"q{i}")
        replaced = any(s.get("replaces") == qid and s.get("answered") for s in subs)
        hops.append(
            Hop(
                id=qid,
                needs=tuple(sub.get("needs") or ()),
                replaces=sub.get("replaces"),
                answer=sub.get("finding") if sub.get("answered") else None,
                superseded=replaced,
            )
        )
    return hops


def replayed_prediction(row: Mapping[str, Any]) -> str:
    """The short answer today's rules give the row's recorded findings and prediction."""
    short = str(row.get("prediction") or "")
    if not row.get("planner"):
        return short  # not a planner row: nothing to replay
    question = Question.read(str(row["question"]))
    hops = hops_of(row)
    if not question.choices:
        short = last_hop(short, hops, asks_when=question.asks_when) or short
    subs = row["planner"].get("sub_queries") or []
    findings = [
        (str(sub["query"]), hop.answer)
        for sub, hop in zip(subs, hops, strict=True)
        if hop.answer and not hop.superseded
    ]
    comparison = resolve(question, findings)
    return comparison.picked if comparison is not None else short


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
