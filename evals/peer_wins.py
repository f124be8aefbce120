"""Why a peer wins the questions it wins over hoptree's default, read from rows: no model call.

Issue 62 asks, for every peer that wins questions hoptree loses, to read those rows and say why.
This sorts each such question (the peer's F1 above hoptree's) into the first class that fits,
so the reading starts from counts and ids instead of from the whole slice:

- ``the plan changed a right draft``: hoptree's own draft scored at least what the peer did,
  and the final answer is worse: the plan, not the search or the reading, lost it;
- ``hoptree's answer is a wrong span``: hoptree named part of the answer (F1 above zero): a
  matter of the answer's form;
- ``it read a gold paragraph hoptree did not``: a supporting paragraph was in the peer's
  prompts (what it retrieved) and not among the passages hoptree's answer read
  (``planner.sources``): the peer's search loop found what the plan missed;
- ``both read the gold: hoptree misread``: every supporting paragraph the peer read, hoptree read
  too, and answered wrong: a reading matter (chain of thought, the prompt);
- ``no supporting titles``: the question file names none, so the search cannot be told apart.

The classes say where to look, not what to change: the rows behind each id are the reading.
Any run whose rows say what it retrieved can stand in the peer's place:
``benchmarks/answer_path.py`` sorts the questions the best one call won over the default so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.drafts import draft_of
from evals.metrics import best_f1
from evals.peer_scores import slice_runs

Rows = Mapping[str, Mapping[str, Any]]

CLASSES = (
    "the plan changed a right draft",
    "hoptree's answer is a wrong span",
    "it read a gold paragraph hoptree did not",
    "both read the gold: hoptree misread",
    "no supporting titles",
)

# the table's column headers
SHORT = dict(
    zip(
        CLASSES,
        (
            "plan changed a right draft",
            "wrong span",
            "gold only it read",
            "misread",
            "no gold",
        ),
        strict=True,
    )
)


def _f1(row: Mapping[str, Any]) -> float:
    return float(row.get("f1") or 0.0)


def _read(row: Mapping[str, Any]) -> set[str]:
    """The titles a row's answer read: the planner's sources where it names them (hoptree),
    else what was retrieved (a peer puts what it retrieves in its prompts)."""
    planner = row.get("planner")
    if isinstance(planner, Mapping) and "sources" in planner:
        return {str(t) for t in planner.get("sources") or []}
    return {str(t) for t in row.get("retrieved_titles") or []}


def draft_f1(row: Mapping[str, Any]) -> float | None:
    """hoptree's draft's short answer scored as the final answer is; None without a draft."""
    draft = draft_of(row)
    if draft is None:
        return None
    return best_f1(str(draft.get("short_answer") or ""), row.get("answers") or [])


def classify_win(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str | None:
    """The class of a question the peer (``theirs``) won over hoptree (``ours``), or None when
    the peer did not win it."""
    if _f1(theirs) <= _f1(ours):
        return None
    drafted = draft_f1(ours)
    if drafted is not None and drafted >= _f1(theirs):
        return CLASSES[0]
    if _f1(ours) > 0.0:
        return CLASSES[1]
    gold = {str(t) for t in ours.get("supporting_titles") or theirs.get("supporting_titles") or []}
    if not gold:
        return CLASSES[4]
    if (gold & _read(theirs)) - _read(ours):
        return CLASSES[2]
    return CLASSES[3]


def peer_wins(hoptree: Rows, peer: Rows) -> dict[str, Any]:
    """The questions both answered where the peer scored higher, by class, with their ids."""
    ids = sorted(hoptree.keys() & peer.keys())
    classes: dict[str, list[str]] = {}
    for i in ids:
        kind = classify_win(hoptree[i], peer[i])
        if kind is not None:
            classes.setdefault(kind, []).append(i)
    return {
        "n": len(ids),
        "wins": sum(len(v) for v in classes.values()),
        "classes": {k: classes[k] for k in CLASSES if k in classes},
    }


def wins_markdown(data: Mapping[str, Mapping[str, Mapping[str, Any]]], heading: str = "#") -> str:
    """One table per slice: each peer's wins over hoptree's default by class."""
    lines = [
        f"{heading} Where a peer wins: the questions it scored above hoptree's default, by class",
        "",
        "From `evals/results/peers/<slice>/` (`evals/peer_wins.py`, no model call). Each "
        "question a peer scored higher than hoptree's default falls in the first class that fits: "
        + "; ".join(f"*{c}*" for c in CLASSES)
        + ". The ids are where to read.",
        "",
    ]
    if not data:
        return "\n".join([*lines, "No peer run has rows yet.", ""])
    for key, peers in data.items():
        header = " | ".join(SHORT[c] for c in CLASSES)
        lines += [f"{heading}# {key}", "", f"| peer | shared | peer wins | {header} |"]
        lines.append("|---|---:|---:|" + "---:|" * len(CLASSES))
        for name, entry in peers.items():
            counts = [str(len(entry["classes"].get(c, []))) for c in CLASSES]
            lines.append(
                f"| {name} | {entry['n']} | {entry['wins']} | " + " | ".join(counts) + " |"
            )
        lines.append("")
        for name, entry in peers.items():
            for kind, ids in entry["classes"].items():
                lines.append(f"- {name}, *{kind}*: {', '.join(f'`{i}`' for i in ids)}")
        lines.append("")
    return "\n".join(lines)


def wins_of(results: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``peer_wins`` for every peer folder of every slice under ``results`` (the peers folder)
    against hoptree's default there; slices and peers that share no question are left out."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key, _, hoptree, peers in slice_runs(results):
        entry = {}
        for name, rows in peers.items():
            wins = peer_wins(hoptree, rows)
            if wins["n"]:
                entry[name] = wins
        if entry:
            out[key] = entry
    return out
