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

With ``--read SLICE ...`` it also asks the model, one reader call a reading (``rag_answer``, as
the draft reads, LLM cache off): the reader over the draft's five (the control: the draft's own
reading, re-asked) and over the draft's five plus the hops' best, paired per open plan; rows go
to ``open-plan-reads.jsonl`` (resumable) and the table to the report.

    python benchmarks/open_plan_inputs.py   # writes benchmarks/results/open-plan-inputs.md
    HOPTREE_LLM__CACHE=false python benchmarks/open_plan_inputs.py --read hotpotqa_b musique
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


def titled_hops(
    row: Mapping[str, Any], passages: Mapping[str, Mapping[str, str]]
) -> list[tuple[str, str, str]]:
    """``hop_texts`` with each passage's title."""
    return [(i, passages[i]["title"], text) for i, text in hop_texts(row, passages)]


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


READS = ROOT / "benchmarks" / "results" / "open-plan-reads.jsonl"


def numbered(draft: Sequence[Mapping[str, Any]], hops: Sequence[tuple[str, str, str]]) -> str:
    """The reader's passages: the draft's as shown, then each hop's best it did not show."""
    seen = {h["id"] for h in draft}
    items = [(str(h["title"]), str(h["shown"])) for h in draft]
    items += [(title, text) for i, title, text in hops if i not in seen]
    return "\n".join(f"[{n}] {title}: {text}" for n, (title, text) in enumerate(items, 1))


async def _read_all(
    todo: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[tuple[str, str, str]]]],
) -> None:
    import asyncio

    from agent.runtime.chat_models import build_chat_model
    from agent.settings import Settings
    from evals.metrics import answer_scores
    from searchers.reader import read_short_answer
    from searchers.searcher import RunScope

    done = set()
    if READS.is_file():
        done = {(r["slice"], r["id"]) for r in map(json.loads, READS.read_text().splitlines())}
    todo = [t for t in todo if (t[0], t[1]["id"]) not in done]
    with build_chat_model(Settings(), cache=False) as handle, READS.open("a") as sink:

        async def one(item: Any) -> None:
            key, row, draft, hops = item
            out = {
                "slice": key,
                "id": row["id"],
                "answers": row["answers"],
                "final": row["prediction"],
            }
            for name, passages in (("draft", numbered(draft, [])), ("both", numbered(draft, hops))):
                scope = RunScope(max_llm_calls=1, deadline_s=600, llm_timeout_s=600)
                reply = await read_short_answer(
                    handle.model, row["question"], passages, scope=scope, step="rag_answer"
                )
                answer = "" if reply.value is None else " ".join(reply.value.answer.split())
                out[name] = answer
                out[f"{name}_f1"] = answer_scores(answer, row["answers"])["f1"]
            out["final_f1"] = float(row["f1"])
            sink.write(json.dumps(out) + "\n")
            sink.flush()
            print(
                f"{key} {row['id'][:12]} final {out['final_f1']:.2f} "
                f"draft {out['draft_f1']:.2f} both {out['both_f1']:.2f}",
                file=sys.stderr,
                flush=True,
            )

        for start in range(0, len(todo), 2):  # two at once: the server's two slots
            await asyncio.gather(*(one(t) for t in todo[start : start + 2]))


def reads_table() -> list[str]:
    """Paired: both readings against the recorded final answer (the draft), per slice."""
    from evals.paired import format_gain_wl, paired_diff

    if not READS.is_file():
        return []
    rows = [json.loads(line) for line in READS.read_text().splitlines()]
    lines = [
        "",
        "On the model (one reader call a reading, LLM cache off; `open-plan-reads.jsonl`): F1 of "
        "the recorded final answer (the draft), the reader re-asked over the draft's five, and "
        "over the draft's five plus the hops' best; the difference is both minus the re-asked "
        "draft.",
        "",
        "| slice | n | final (draft) | re-asked draft | draft + hops "
        "| draft + hops minus re-asked [95% CI] W/L | draft + hops minus final |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for key in [*dict.fromkeys(r["slice"] for r in rows), "pooled"]:
        part = [r for r in rows if key in ("pooled", r["slice"])]
        ids = {f"{r['slice']}|{r['id']}": r for r in part}
        both = {i: r["both_f1"] for i, r in ids.items()}
        draft = {i: r["draft_f1"] for i, r in ids.items()}
        final, drafted, read = (
            100 * sum(r[k] for r in part) / len(part) for k in ("final_f1", "draft_f1", "both_f1")
        )
        lines.append(
            f"| {key} | {len(part)} | {final:.1f} | {drafted:.1f} | "
            f"{read:.1f} | {format_gain_wl(paired_diff(both, draft))} "
            f"| {format_gain_wl(paired_diff(both, {i: r['final_f1'] for i, r in ids.items()}))} |"
        )
    return lines


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
    reading = "--read" in sys.argv
    if reading:
        import asyncio

        slices = sys.argv[sys.argv.index("--read") + 1 :]
        todo = [
            (key, r, drafts[(key, r["id"])], titled_hops(r, passages))
            for key in slices
            for r in runs[key]
            if (key, r["id"]) in drafts
        ]
        asyncio.run(_read_all(todo))
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
    lines += reads_table()
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
