"""A/B of the findings prompt's system text on recorded atomic queries (the embedded model).

Each sampled atomic query of a recorded ``full`` run is asked again, alone, with its first three
fused passages windowed as today's findings call windows them, once under the current
``prompts/findings.txt`` and once under the system text of ``--variant`` (a file). Counted per
arm: findings the support check accepts (``agent.checks.evidence.support``), replies that restate
the query's subject instead of answering ("mother of X" -> "X", the commonest failure of the
findings call on v4's rows), empty replies, and, where the dataset names the hop (MuSiQue),
findings that match the gold hop's answer. One model process, two slots; the LLM cache is off.

``--reader`` adds an arm that asks each query as one-call RAG asks a question: one call of
``searchers.reader`` (``prompts/rag_answer.txt``, a short answer alone, no JSON) over the same
windowed passages, its span put through the same support check. It measures whether the small
model reads a hop better as a plain question than as an entry of the findings call's JSON.
``--with-gold`` samples only queries whose shown passages hold a gold hop's paragraph.

    HOPTREE_LLM__CACHE=false HOPTREE_LLM__LOCAL_PARALLEL=2 HOPTREE_LLM__LOCAL_CTX=16384 \\
    python benchmarks/findings_prompt_ab.py --variant new_system.txt --each 30 \\
        ../shared/data/musique/musique_ans_dev_174.jsonl evals/results/v4/tune/musique/full-f5e8156

Pairs of (question file, run directory); ``--each`` queries sampled from each (seed 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import BaseMessage, SystemMessage

import prompts
from agent.planner.findings import (
    FINDINGS_MAX_TOKENS,
    RoundFindings,
    _finding,
    _findings_prompt,
    read_query,
)
from agent.runtime.chat_models import build_chat_model
from agent.settings import Settings
from evals.datasets import load_questions, resolve_format
from searchers.passages import Hit, Passage
from searchers.searcher import RunScope
from searchers.structured_calls import ask
from searchers.text import normalize_answer_folded

TOP = 3  # PlannerSettings.summary_passages
CHARS = 350  # PlannerSettings.passage_chars


def samples(dataset: Path, run: Path, each: int, with_gold: bool = False) -> list[dict[str, Any]]:
    questions = {q.id: q for q in load_questions(dataset, resolve_format(dataset))}
    texts: dict[str, tuple[str, str]] = {}
    for q in questions.values():
        for pid, (title, text) in zip(q.passage_ids(), q.paragraphs, strict=True):
            texts.setdefault(pid, (title, text))
    found = []
    for line in (run / "details.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        question = questions.get(row["id"])
        if question is None:
            continue
        for sub in (row.get("planner") or {}).get("sub_queries") or []:
            ids = [p for p in (sub.get("passage_ids") or [])[:TOP] if p in texts]
            if not ids or "#" in sub["query"]:
                continue
            hits = [Hit(Passage(p, texts[p][0], texts[p][1], {}), 1.0) for p in ids]
            gold = [h.answer for h in question.gold_hops if h.passage_id in ids]
            if gold or not with_gold:
                found.append({"query": sub["query"], "hits": hits, "gold": gold})
    random.Random(0).shuffle(found)
    return found[:each]


def restates(answer: str, query: str) -> bool:
    """The reply repeats the query's own words instead of answering ("father of X" -> "X")."""
    words = answer.casefold().split()
    return bool(words) and (
        answer.casefold() in query.casefold() or all(w in query.casefold() for w in words[:2])
    )


READER = "reader"  # the arm that asks one-call RAG's reader instead of the findings call


async def one(chat: Any, system: str | None, item: dict[str, Any], slots: asyncio.Semaphore):
    sub = {"id": "q1", "query": item["query"], "round": 1}
    scope = RunScope(llm_timeout_s=300)
    if system == READER:
        async with slots:
            read = await read_query(chat, item["query"], item["hits"], CHARS, scope=scope)
        answer = read.value.answer if read.value else ""
        cited = list(item["hits"])  # the support check finds the passage that holds it
    else:
        text, by_number = _findings_prompt([sub], {"q1": item["hits"]}, CHARS)  # type: ignore[list-item]
        messages: list[BaseMessage] = prompts.render("findings", queries=text)
        if system is not None:
            messages = [SystemMessage(content=system), messages[1]]
        async with slots:
            reply = await ask(
                chat,
                RoundFindings,
                messages,
                scope=scope,
                step="summarize",
                max_tokens=FINDINGS_MAX_TOKENS,
            )
        first = reply.value.findings[0] if reply.value and reply.value.findings else None
        answer = first.answer if first else ""
        cited = [by_number[n] for n in (first.passages if first else []) if n in by_number]
    record = _finding(sub, answer, cited, item["hits"], skipped=False)  # type: ignore[arg-type]
    key = normalize_answer_folded(answer)
    right = record["supported"] and any(
        key and (normalize_answer_folded(g) in key or key in normalize_answer_folded(g))
        for g in item["gold"]
    )
    return {
        "answer": answer,
        "supported": record["supported"],
        "restated": not record["supported"] and restates(answer, item["query"]),
        "right": bool(right),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", help="question file, run directory, ...")
    parser.add_argument("--variant", type=Path, help="another system text for the findings call")
    parser.add_argument("--reader", action="store_true", help="add one-call RAG's reader as an arm")
    parser.add_argument("--with-gold", action="store_true", help="only queries shown a gold hop")
    parser.add_argument("--each", type=int, default=30, help="queries sampled from each run")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give pairs: question file, run directory")
    if args.variant is None and not args.reader:
        parser.error("nothing to compare: give --variant FILE and/or --reader")
    items = [
        item
        for dataset, run in zip(args.pairs[::2], args.pairs[1::2], strict=True)
        for item in samples(Path(dataset), Path(run), args.each, args.with_gold)
    ]
    arms: list[tuple[str, str | None]] = [("current", None)]
    if args.variant is not None:
        arms.append(("variant", args.variant.read_text(encoding="utf-8").strip()))
    if args.reader:
        arms.append((READER, READER))
    print(f"{len(items)} atomic queries", flush=True)
    results: dict[str, list[dict[str, Any]]] = {}
    with build_chat_model(Settings(), cache=False) as handle:
        slots = asyncio.Semaphore(max(1, Settings().llm.local_parallel))
        for arm, system in arms:
            started = time.monotonic()
            results[arm] = list(
                await asyncio.gather(*(one(handle.model, system, it, slots) for it in items))
            )
            print(f"{arm}: {time.monotonic() - started:.0f} s", flush=True)
    gold = sum(bool(it["gold"]) for it in items)
    print("| arm | supported | subject restated | empty | right on gold hops |")
    print("|---|---:|---:|---:|---:|")
    for arm, rows in results.items():
        count = Counter()
        for row in rows:
            count.update(
                supported=row["supported"], restated=row["restated"], empty=not row["answer"]
            )
            count.update(right=row["right"])
        print(
            f"| {arm} | {count['supported']} | {count['restated']} | {count['empty']} | "
            f"{count['right']} of {gold} |"
        )
    for arm, _system in arms[1:]:
        print(f"\nAnswers {arm} changed:")
        for item, a, b in zip(items, results["current"], results[arm], strict=True):
            if a["answer"] != b["answer"]:
                mark = "+" if b["right"] > a["right"] else "-" if b["right"] < a["right"] else " "
                print(f"{mark} {item['query']!r}: {a['answer']!r} -> {b['answer']!r}")


if __name__ == "__main__":
    asyncio.run(main())
