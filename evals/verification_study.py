"""Which stop rule predicts that a retrieval answers its query? (issue 4, verification)

For each HotpotQA question, the raw question is the query; BM25 returns the top passages of
the open corpus. Labels: the gold answer occurs in them (answer-in-context, the primary label;
yes/no questions have no span and are left out of it), a supporting-fact title is among them,
and both are. Each rule is scored as a predictor: the LLM's yes/no judgement alone, the LLM's
extracted answer span found in the passages ("grounded"), term coverage at several bars, and
combinations. A searcher stops on "sufficient", so precision (how often a stop was right)
matters more than recall (a wrong "no" only costs another refinement).

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
from agent.runtime.runtime import Runtime
from agent.settings import load_settings
from searchers.searcher import SearchBudget
from searchers.text import normalize_answer_folded
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
    with Runtime(settings) as runtime:
        chat = runtime.chat.model
        for number, row in enumerate(rows, start=1):
            record = done.get(row["id"])
            hits = sparse.retrieve(row["question"], TOP)
            if record is None:
                record = {
                    "id": row["id"],
                    "gold_retrieved": any(h.title in row["gold"] for h in hits),
                    "both_gold": row["gold"] <= {h.title for h in hits},
                    "answer_in_hits": answer_in(row["answer"], hits),
                    "coverage": coverage(row["question"], hits, top=TOP),
                }
            record["yes_no"] = normalize_answer_folded(row["answer"]) in {"yes", "no"}
            started = time.monotonic()
            if "llm_says" not in record:
                record["llm_says"] = await _ask(chat, row["question"], hits, "llm")
            if "grounded" not in record:
                verdict = await verify_hits(
                    chat,
                    row["question"],
                    hits,
                    SearchBudget(max_llm_calls=1).scope(),
                    VerificationRule(kind="extract"),
                    TOP,
                )
                record["grounded"] = bool(verdict.llm_says)
                record["extracted"] = verdict.answer
                record["extracted_correct"] = normalize_answer_folded(verdict.answer or "") == (
                    normalize_answer_folded(row["answer"])
                )
            else:
                continue
            record["seconds"] = round(time.monotonic() - started, 2)
            done[row["id"]] = record
            _save(args.cache, done)
            print(
                f"[{number}/{len(rows)}] judge={record['llm_says']} grounded="
                f"{record['grounded']} ({record['extracted']!r}) cov={record['coverage']:.2f} "
                f"answer_in_hits={record['answer_in_hits']}",
                flush=True,
            )
    return [done[r["id"]] for r in rows if r["id"] in done]


async def _ask(chat: Any, question: str, hits: list, kind: str) -> bool | None:
    scope = SearchBudget(max_llm_calls=1).scope()
    verdict = await verify_hits(chat, question, hits, scope, VerificationRule(kind=kind), TOP)
    return verdict.llm_says


def _save(path: Path, done: dict[str, dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in done.values()))
    tmp.replace(path)


LABELS = {
    "answer_in_hits": "the gold answer occurs in the top 5 (yes/no questions left out)",
    "gold_retrieved": "a gold paragraph is in the top 5",
    "both_gold": "both gold paragraphs are in the top 5",
}


def rule_predictions(records: list[dict[str, Any]]) -> dict[str, list[bool]]:
    judge = [bool(r["llm_says"]) for r in records]
    ground = [bool(r["grounded"]) for r in records]
    rules: dict[str, list[bool]] = {"llm_judge": judge, "extract_grounded": ground}
    for bar in BARS:
        cov = [r["coverage"] >= bar for r in records]
        rules[f"coverage>={bar}"] = cov
        rules[f"judge_and_coverage>={bar}"] = [a and b for a, b in zip(judge, cov, strict=True)]
        rules[f"grounded_and_coverage>={bar}"] = [a and b for a, b in zip(ground, cov, strict=True)]
    return rules


def report(records: list[dict[str, Any]]) -> dict[str, Any]:
    tables: dict[str, Any] = {}
    for label in LABELS:
        rows = [r for r in records if label != "answer_in_hits" or not r["yes_no"]]
        truth = [bool(r[label]) for r in rows]
        tables[label] = {
            "n": len(rows),
            "positives": sum(truth),
            "rules": {name: score(pred, truth) for name, pred in rule_predictions(rows).items()},
        }
    spans = [r for r in records if not r["yes_no"]]
    return {
        "n": len(records),
        "llm_judge_yes_rate": round(sum(bool(r["llm_says"]) for r in records) / len(records), 3),
        "grounded_rate": round(sum(bool(r["grounded"]) for r in records) / len(records), 3),
        "extracted_exact": round(sum(r["extracted_correct"] for r in spans) / len(spans), 3),
        "labels": tables,
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
        "# Verification rules: which one predicts that a retrieval answers its query?",
        "",
        f"{summary['n']} HotpotQA questions from dev_hard_300_a (open corpus, raw question as "
        f"query, BM25 top 5, local 1.5B model). The model's yes/no judgement said yes to "
        f"{summary['llm_judge_yes_rate']:.0%}; its extracted span was found in the passages for "
        f"{summary['grounded_rate']:.0%} and equalled the gold answer for "
        f"{summary['extracted_exact']:.0%} of the questions with a span answer.",
        "Produced by `python -m evals.verification_study`.",
    ]
    for label, table in summary["labels"].items():
        lines += [
            "",
            f"## Label: {LABELS[label]} ({table['positives']} of {table['n']} positive)",
            "",
            "| rule | precision | recall | F1 | accuracy | says yes |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, sc in table["rules"].items():
            lines.append(
                f"| {name} | {sc['precision']} | {sc['recall']} | {sc['f1']} | "
                f"{sc['accuracy']} | {sc['says_yes']} |"
            )
    (args.out / "verification.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
