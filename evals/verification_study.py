"""Which stop rule predicts "a gold paragraph was retrieved"? (issue 4, verification)

For each HotpotQA question, the raw question is the query; BM25 returns the top passages of
the open corpus; the label is whether a supporting-fact title is among them. Each rule is
scored as a predictor of that label: the LLM's yes/no alone, term coverage at several bars,
and the two combined. A searcher stops on "sufficient", so precision (how often a stop was
right) matters more than recall (a wrong "no" only costs another refinement).

    python -m evals.verification_study --index DIR --data FILE --limit 120 --out evals/results
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

from agent.indexing import build, open_retriever
from agent.runtime import Runtime
from agent.settings import load_settings
from searchers.searcher import BudgetMeter, SearchBudget
from searchers.verification import VerificationRule, coverage, verify_hits

BARS = (0.5, 0.6, 0.75, 0.9, 1.0)
TOP = 5


def load_questions(path: Path, limit: int) -> list[dict[str, Any]]:
    rows = []
    with path.open() as handle:
        for line in handle:
            if len(rows) >= limit:
                break
            row = json.loads(line)
            gold = set(row["supporting_facts"]["title"])
            rows.append(
                {
                    "id": row["id"],
                    "question": row["question"],
                    "gold": gold,
                    "answer": row["answer"],
                }
            )
    return rows


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def answer_in(answer: str, hits: list) -> bool:
    """The gold answer occurs in the hits (HotpotQA-normalized), yes/no answers excluded."""
    target = _norm(answer)
    if target in {"yes", "no", ""}:
        return False
    return any(target in _norm(f"{h.title} {h.text}") for h in hits)


def score(predicted: list[bool], labels: list[bool]) -> dict[str, float]:
    tp = sum(p and y for p, y in zip(predicted, labels, strict=True))
    fp = sum(p and not y for p, y in zip(predicted, labels, strict=True))
    fn = sum(y and not p for p, y in zip(predicted, labels, strict=True))
    tn = len(labels) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "accuracy": round((tp + tn) / len(labels), 3),
        "says_yes": round((tp + fp) / len(labels), 3),
    }


async def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings = load_settings()
    if not (args.index / "manifest.json").exists():
        build(settings, [args.data], args.index)
    sparse = open_retriever(settings, args.index, "sparse")
    rows = load_questions(args.data, args.limit)
    done: dict[str, dict[str, Any]] = {}
    if args.cache.exists():
        for line in args.cache.read_text().splitlines():
            record = json.loads(line)
            done[record["id"]] = record
    with Runtime(settings) as runtime, args.cache.open("a") as out:
        chat = runtime.chat.model
        for number, row in enumerate(rows, start=1):
            if row["id"] in done:
                continue
            hits = sparse.retrieve(row["question"], TOP)
            meter = BudgetMeter(SearchBudget(max_llm_calls=1))
            started = time.monotonic()
            verdict = await verify_hits(
                chat, row["question"], hits, meter, VerificationRule(kind="llm"), TOP
            )
            record = {
                "id": row["id"],
                "gold_retrieved": any(h.title in row["gold"] for h in hits),
                "both_gold": row["gold"] <= {h.title for h in hits},
                "answer_in_hits": answer_in(row["answer"], hits),
                "coverage": coverage(row["question"], hits, top=TOP),
                "llm_says": verdict.llm_says,
                "seconds": round(time.monotonic() - started, 2),
            }
            done[row["id"]] = record
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(
                f"[{number}/{len(rows)}] llm={verdict.llm_says} cov={record['coverage']:.2f} "
                f"gold={record['gold_retrieved']}",
                flush=True,
            )
    return [done[r["id"]] for r in rows if r["id"] in done]


def report(records: list[dict[str, Any]]) -> dict[str, Any]:
    labels = [r["gold_retrieved"] for r in records]
    llm = [bool(r["llm_says"]) for r in records]
    rules: dict[str, dict[str, float]] = {"llm": score(llm, labels)}
    for bar in BARS:
        cov = [r["coverage"] >= bar for r in records]
        rules[f"coverage>={bar}"] = score(cov, labels)
        rules[f"llm_and_coverage>={bar}"] = score(
            [a and b for a, b in zip(llm, cov, strict=True)], labels
        )
    return {
        "n": len(records),
        "positives": sum(labels),
        "llm_yes_rate": round(sum(llm) / len(records), 3) if records else 0.0,
        "rules": rules,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("--out", type=Path, default=Path("evals/results"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.cache = args.out / "verification_records.jsonl"
    records = asyncio.run(collect(args))
    summary = report(records)
    (args.out / "verification.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        "# Verification rules as predictors of 'a gold paragraph is in the BM25 top 5'",
        "",
        f"{summary['n']} HotpotQA questions (raw question as query), {summary['positives']} "
        f"positives; the local model said yes to {summary['llm_yes_rate']:.0%}.",
        "",
        "| rule | precision | recall | F1 | accuracy | says yes |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s in summary["rules"].items():
        lines.append(
            f"| {name} | {s['precision']} | {s['recall']} | {s['f1']} | {s['accuracy']} | "
            f"{s['says_yes']} |"
        )
    (args.out / "verification.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
