"""Why a planner's plans stay open, read from its rows and the question file's gold hops.

A plan resolves when every query it searched has a supported finding and names something
(``Plan.resolved``, reported as ``citation_check.plan_resolved``); the rest are answered as
one-call RAG. Scoring the answer says how often that goes wrong, not why the chain broke.
With the gold decomposition (MuSiQue's ``question_decomposition``, 2Wiki's ``evidences``:
each hop's answer and paragraph) every plan falls in the first class that fits:

- ``resolved``: every query found a supported finding, and each finding is some gold hop's
  answer (or the question's);
- ``resolved off the chain``: resolved, but a finding is no gold hop's answer (the plan asked
  something else, or the findings step took the wrong span);
- ``open: nameless query``: a query named nothing, so the plan was answered as open
  (``Plan.nameless``, reported as ``citation_check.nameless_queries``);
- ``open: a wrong finding``: a supported finding is no gold hop's answer: the chain went
  astray before the hop that failed (a wrong bridge fills the next hop with the wrong name);
- ``open: gold shown, unsupported``: the first query without a finding had a gold paragraph
  among the passages its findings call read (its first ``summary_passages``): the model did
  not take the span, or wrote one its passages do not hold;
- ``open: gold retrieved, not shown``: its gold paragraph was retrieved below those;
- ``open: gold not retrieved``: none of its passages is a gold paragraph.

Findings match a hop when their F1 against its answer is at least ``MATCH_F1``.

HotpotQA gives its gold paragraphs but no gold hops. Its plans are classed with what that
allows: a resolved plan is ``resolved`` unchecked (nothing says whether its findings are on the
chain), no open plan is ``a wrong finding``, and the failed query's passages are looked up among
the gold paragraphs. ``PlanOutcomes.unchecked`` counts these plans and the table says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.datasets import EvalQuestion, load_questions, resolve_format
from evals.losses import read_rows
from evals.metrics import best_f1
from searchers.corpus import file_sha256

CLASSES = (
    "resolved",
    "resolved off the chain",
    "open: nameless query",
    "open: a wrong finding",
    "open: gold shown, unsupported",
    "open: gold retrieved, not shown",
    "open: gold not retrieved",
)
MATCH_F1 = 0.5
SUMMARY_PASSAGES = 3  # PlannerSettings.summary_passages, for runs that do not record it


class PlanOutcomeError(ValueError):
    """The run cannot be classified (no planner rows, no gold hops, another question file)."""


def _on_chain(finding: str, question: EvalQuestion) -> bool:
    golds = [hop.answer for hop in question.gold_hops] + list(question.answers)
    return best_f1(finding, golds) >= MATCH_F1


def classify_plan(
    row: Mapping[str, Any], question: EvalQuestion, shown: int = SUMMARY_PASSAGES
) -> str | None:
    """The class of one planner row, or None when it cannot say (no plan, no gold paragraphs).
    Without gold hops (HotpotQA) findings are not checked against the chain (module doc)."""
    planner = row.get("planner") or {}
    subs = planner.get("sub_queries") or []
    hops = question.gold_hops
    if not subs or not (hops or question.supporting_ids):
        return None
    check = planner.get("citation_check") or {}
    found = [s for s in subs if s.get("answered") and s.get("finding")]
    off_chain = [s for s in found if hops and not _on_chain(str(s["finding"]), question)]
    if check.get("plan_resolved"):
        return "resolved off the chain" if off_chain else "resolved"
    if check.get("nameless_queries"):
        return "open: nameless query"
    if off_chain:
        return "open: a wrong finding"
    gold = {hop.passage_id for hop in hops} or set(question.supporting_ids)
    failed = next((s for s in subs if not s.get("answered")), None)
    if failed is None:  # every query answered and still open: a hop waits behind another
        return "open: gold shown, unsupported"
    ids = list(failed.get("passage_ids") or [])
    if gold & set(ids[:shown]):
        return "open: gold shown, unsupported"
    if gold & set(ids):
        return "open: gold retrieved, not shown"
    return "open: gold not retrieved"


@dataclass
class PlanOutcomes:
    run: str
    counts: dict[str, int] = field(default_factory=dict)
    f1: dict[str, float] = field(default_factory=dict)  # mean F1 of the class's questions
    unclassified: int = 0
    unchecked: int = 0  # plans classed without gold hops (HotpotQA): findings not checked
    # other runs' mean F1 on each class's questions (the ones they finished): what one-call
    # RAG and the oracle make of the same questions
    others: dict[str, dict[str, float]] = field(default_factory=dict)
    # per question type (MuSiQue's hop count, 2Wiki's four shapes): its plans' classes and
    # their mean F1, which says which shape of question the planner still fails
    by_type: dict[str, dict[str, int]] = field(default_factory=dict)
    type_f1: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def question_file(run: Path, meta: Mapping[str, Any], dataset: Path | None = None) -> Path:
    """The question file a run answered: ``dataset`` if given, else the one its run.json
    (``meta``) names (relative to the working directory, as ``eval run`` was given it);
    refused when its SHA-256 is not the run's."""
    path = dataset or Path(meta.get("dataset", ""))
    if not path.is_file():
        raise PlanOutcomeError(f"{run}: question file {path} not found (pass --dataset)")
    recorded = meta.get("dataset_sha256")
    if recorded and file_sha256(path) != recorded:
        raise PlanOutcomeError(f"{run}: {path} is not the question file the run answered")
    return path


def _mean_f1(rows: Sequence[Mapping[str, Any]]) -> float:
    return 100 * sum(float(r.get("f1") or 0.0) for r in rows) / len(rows)


def plan_outcomes(
    run: Path, dataset: Path | None = None, against: Sequence[Path] = ()
) -> PlanOutcomes:
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    path = question_file(run, meta, dataset)
    questions = {q.id: q for q in load_questions(path, resolve_format(path))}
    settings = meta.get("planner_settings") or {}
    shown = int(settings.get("planner.summary_passages", SUMMARY_PASSAGES))
    out = PlanOutcomes(f"{run.parent.name}/{run.name}")
    members: dict[str, list[dict[str, Any]]] = {}
    for row in read_rows(run):
        question = questions.get(row["id"])
        kind = classify_plan(row, question, shown) if question is not None else None
        if kind is None:
            out.unclassified += 1
        else:
            members.setdefault(kind, []).append(row)
            out.unchecked += not question.gold_hops
    if not members:
        raise PlanOutcomeError(
            f"{run}: no planner row to classify (it needs the planner's rows and the questions' "
            "gold hops or gold paragraphs)"
        )
    out.counts = {kind: len(rows) for kind, rows in members.items()}
    out.f1 = {kind: _mean_f1(rows) for kind, rows in members.items()}
    of_type: dict[str, list[Mapping[str, Any]]] = {}
    for kind, rows in members.items():
        for row in rows:
            shape = str(row.get("type") or questions[row["id"]].type or "untyped")
            of_type.setdefault(shape, []).append(row)
            counts = out.by_type.setdefault(shape, {})
            counts[kind] = counts.get(kind, 0) + 1
    out.type_f1 = {shape: _mean_f1(rows) for shape, rows in of_type.items()}
    for other in against:
        by_id = {r["id"]: r for r in read_rows(other)}
        for kind, rows in members.items():
            theirs = [by_id[r["id"]] for r in rows if r["id"] in by_id]
            if theirs:
                out.others.setdefault(kind, {})[other.name] = _mean_f1(theirs)
    return out


def plan_outcomes_markdown(results: Sequence[PlanOutcomes]) -> str:
    """One row per run: each class's questions and their mean F1."""
    lines = [
        "| run | plans | " + " | ".join(CLASSES) + " |",
        "|---|---:|" + "---:|" * len(CLASSES),
    ]
    for r in results:
        cells = [f"{r.counts[c]} ({r.f1[c]:.1f})" if r.counts.get(c) else "0" for c in CLASSES]
        lines.append(f"| {r.run} | {r.total} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Each cell: plans of that class (their mean F1). " + CLASS_NOTE)
    for r in results:
        if r.unchecked:
            lines += [
                "",
                f"{r.run}: {r.unchecked} of {r.total} questions have gold paragraphs but no gold "
                "hops (HotpotQA): their resolved plans are not checked against the chain and "
                "none can be `open: a wrong finding`.",
            ]
    for r in results:
        if len(r.by_type) < 2:
            continue
        lines += ["", f"{r.run} by question type: plans of each class", ""]
        lines.append("| type | plans | F1 | " + " | ".join(CLASSES) + " |")
        lines.append("|---|---:|---:|" + "---:|" * len(CLASSES))
        for shape in sorted(r.by_type):
            counts = r.by_type[shape]
            cells = [str(counts.get(c, 0)) for c in CLASSES]
            lines.append(
                f"| {shape} | {sum(counts.values())} | {r.type_f1[shape]:.1f} | "
                + " | ".join(cells)
                + " |"
            )
    for r in results:
        if not r.others:
            continue
        names = sorted({n for scores in r.others.values() for n in scores})
        lines += [
            "",
            f"{r.run}: each class's mean F1, and the other runs' on the same questions",
            "",
        ]
        lines.append("| class | plans | " + " | ".join([r.run.split("/")[-1], *names]) + " |")
        lines.append("|---|---:|" + "---:|" * (1 + len(names)))
        for c in CLASSES:
            if r.counts.get(c):
                cells = [f"{r.f1[c]:.1f}"]
                cells += [f"{r.others.get(c, {}).get(n, float('nan')):.1f}" for n in names]
                lines.append(f"| {c} | {r.counts[c]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


CLASS_NOTE = (
    "A finding is on the chain when its F1 against some gold hop's answer (or the question's) is "
    f"at least {MATCH_F1}; an open plan is classed by its first query without a finding "
    "(`evals/plan_outcomes.py`)."
)
