"""When the plan ends open, has it found what the draft missed? No model call.

Issue 65 (item 3): an open plan hands the draft back, yet its searches may have found more than
the draft read. Before a model run tries another reading for open plans, this measures, on the
recorded draft-first rows of the tuning runs (the ones ``router_evidence.py`` reads: ``v6/tune``
and ``v7``; no row under a ``fresh`` folder is read), what each candidate reading would show the
reader of an open plan, and how often the gold answer is in it:

- ``draft``: the draft's five shown passages, as ``router_evidence.py`` recomputed them
  (``router-evidence-passages.jsonl``);
- ``hops``: each of the plan's queries' best passage (the first of its fused list), trimmed to
  350 characters around the query, as a hop's reader sees it;
- ``draft + hops``: the draft's five, then each hop's best that the draft did not show.

*Answer shown* is the evaluation's ``retrieval_success`` (the gold answer occurs in a shown
text; yes/no questions left out). A reading that shows the answer no more often than the draft
cannot read better on average; the column *draft F1* is what the open plans answered.

    python benchmarks/open_plan_inputs.py   # writes benchmarks/results/open-plan-inputs.md
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.metrics import retrieval_success
from searchers.passages import focus_text

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "evals" / "results"
OUT = ROOT / "benchmarks" / "results" / "open-plan-inputs.md"
DRAFT_PASSAGES = ROOT / "benchmarks" / "results" / "router-evidence-passages.jsonl"
RUNS = {
    "tune/hotpotqa": "v6/tune/hotpotqa/draft-first-residual",
    "tune/2wiki": "v6/tune/2wiki/draft-first-residual",
    "tune/musique": "v6/tune/musique/draft-first-residual",
    "hotpotqa_b": "v7/hotpotqa_b/draft-first",
    "2wiki": "v7/2wiki/draft-first",
    "musique": "v7/musique/draft-first",
}
HOP_CHARS = 350
READINGS = ("draft", "hops", "draft + hops")


def is_open(row: Mapping[str, Any]) -> bool:
    """The plan ran and ended open: the draft was handed back."""
    choice = (row.get("planner") or {}).get("final_choice") or {}
    return str(choice.get("reason", "")).startswith("plan open")


def hop_texts(
    row: Mapping[str, Any], passages: Mapping[str, Mapping[str, str]]
) -> list[tuple[str, str]]:
    """(id, shown text) of each query's best passage, in plan order, each once."""
    out: dict[str, str] = {}
    for query in (row.get("planner") or {}).get("sub_queries", []):
        ids = [i for i in query.get("passage_ids", []) if i in passages]
        if ids and ids[0] not in out:
            out[ids[0]] = focus_text(passages[ids[0]]["text"], HOP_CHARS, query.get("query"))
    return list(out.items())


def shown(
    reading: str, draft: Sequence[Mapping[str, Any]], hops: Sequence[tuple[str, str]]
) -> list[str]:
    drafted = [str(h["shown"]) for h in draft]
    if reading == "draft":
        return drafted
    if reading == "hops":
        return [text for _, text in hops]
    seen = {h["id"] for h in draft}
    return drafted + [text for i, text in hops if i not in seen]


def tally(
    items: Iterable[tuple[Mapping[str, Any], list[dict[str, Any]], list[tuple[str, str]]]],
) -> dict[str, Any]:
    """Per reading: answer shown (%, over the questions where it is defined) and characters."""
    rows = list(items)
    out: dict[str, Any] = {"n": len(rows)}
    for reading in READINGS:
        hits = [
            retrieval_success(row["answers"], shown(reading, draft, hops))
            for row, draft, hops in rows
        ]
        defined = [h for h in hits if h is not None]
        out[reading] = 100 * sum(defined) / len(defined) if defined else None
        out[f"{reading} chars"] = (
            sum(sum(len(t) for t in shown(reading, d, h)) for _, d, h in rows) / len(rows)
            if rows
            else 0
        )
    out["draft f1"] = 100 * sum(float(r["f1"]) for r, _, _ in rows) / len(rows) if rows else 0.0
    return out


def _rows(run: Path) -> list[dict[str, Any]]:
    if "fresh" in run.parts:
        raise ValueError(f"{run}: rows under a 'fresh' folder are unread report slices")
    path = run / "details.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _passages(ids: set[str]) -> dict[str, dict[str, str]]:
    """The texts of ``ids`` from the open eval indexes' passage files."""
    from agent.settings import Settings

    found: dict[str, dict[str, str]] = {}
    root = Settings().data_dir / "eval-indexes"
    for path in root.glob("*/gen-*/passages.jsonl"):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if '"id"' not in line:
                    continue
                p = json.loads(line)
                if p["id"] in ids:
                    found[p["id"]] = {"title": p["title"], "text": p["text"]}
    return found


def main() -> int:
    drafts: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for line in DRAFT_PASSAGES.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        drafts[(d["slice"], d["id"])] = d["hits"]
    runs = {key: [r for r in _rows(RESULTS / run) if is_open(r)] for key, run in RUNS.items()}
    wanted = {
        i
        for rows in runs.values()
        for r in rows
        for q in r["planner"]["sub_queries"]
        for i in q.get("passage_ids", [])[:1]
    }
    passages = _passages(wanted)
    lines = [
        "# When the plan ends open: what its hops found that the draft did not show",
        "",
        "`python benchmarks/open_plan_inputs.py` (issue 65 item 3; no model call). Open plans of "
        "the draft-first tuning runs (`v6/tune/*`, `v7/*`); *answer shown*: the gold answer "
        "occurs in a shown text (yes/no questions left out); characters: the mean shown.",
        "",
        "| slice | open plans | draft F1 | draft | hops | draft + hops "
        "| chars: draft / hops / both |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    pooled: list[Any] = []
    for key, rows in runs.items():
        items = [
            (r, drafts[(key, r["id"])], hop_texts(r, passages))
            for r in rows
            if (key, r["id"]) in drafts
        ]
        pooled += items
        lines.append(_line(key, tally(items)))
    lines.append(_line("pooled", tally(pooled)))
    lines.append("")
    text = "\n".join(lines)
    OUT.write_text(text, encoding="utf-8")
    print(text)
    return 0


def _line(key: str, t: Mapping[str, Any]) -> str:
    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.1f}%"

    return (
        f"| {key} | {t['n']} | {t['draft f1']:.1f} | {pct(t['draft'])} | {pct(t['hops'])} | "
        f"{pct(t['draft + hops'])} | {t['draft chars']:.0f} / {t['hops chars']:.0f} / "
        f"{t['draft + hops chars']:.0f} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
