"""How should a plan that did not resolve be answered? Arms over recorded open plans (the model).

For each row of a recorded ``full`` run whose plan stayed open and was answered as one-call RAG
(``citation_check.answered_as == "one_call"``), the answer step is asked again in four ways over
passages rebuilt from the row, and each short answer is scored against the gold answers:

- ``one_call``: one-call RAG's reader (``searchers.reader``) over the answer's own recorded
  sources, the question's first hits: what the row did (its agreement with the recorded
  prediction says how well the rebuilt passages stand in for the originals);
- ``findings_first``: the same reader over the passage of each supported finding (the query's
  first hit in rows that do not record it), in plan order, then the question's hits, up to the
  same count: the chain's evidence with no notes;
- ``hops``: the same reader over each searched query's first two passages in plan order, then
  the question's hits;
- ``chain``: the planner's answer prompt with the supported findings as notes over each searched
  query's first two passages in plan order, then the question's hits (the former default,
  ``open_plan_answer="chain"``).

The rows name the question's hits by title; a title that several paragraphs share is read as the
one a planned query retrieved, else the file's first. Raw short answers are scored (no rules
after the call), so the arms differ only in what the reader sees and how it is asked.

    HOPTREE_LLM__CACHE=false HOPTREE_LLM__LOCAL_PARALLEL=2 HOPTREE_LLM__LOCAL_CTX=16384 \\
    python benchmarks/open_answer_ab.py \\
        ../shared/data/musique/musique_ans_dev_174.jsonl evals/results/v4/musique/full

Pairs of (question file, run directory).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import prompts
from agent.planner.answer import ANSWER_MAX_TOKENS, HOP_PASSAGES, FinalAnswer
from agent.runtime.chat_models import build_chat_model
from agent.settings import PlannerSettings, Settings
from evals.datasets import EvalQuestion, load_questions, resolve_format
from evals.metrics import best_f1
from searchers.passages import Hit, Passage, numbered_passages
from searchers.reader import read_short_answer
from searchers.searcher import RunScope
from searchers.structured_calls import ask
from searchers.text import normalize_answer_folded

ARMS = ("one_call", "findings_first", "hops", "chain")


def texts_of(questions: dict[str, EvalQuestion]) -> tuple[dict[str, tuple[str, str]], dict]:
    """Every paragraph by id, and the ids of each title in file order."""
    texts: dict[str, tuple[str, str]] = {}
    by_title: dict[str, list[str]] = {}
    for q in questions.values():
        for pid, (title, text) in zip(q.passage_ids(), q.paragraphs, strict=True):
            if pid not in texts:
                texts[pid] = (title, text)
                by_title.setdefault(title, []).append(pid)
    return texts, by_title


def open_rows(dataset: Path, run: Path) -> list[dict[str, Any]]:
    questions = {q.id: q for q in load_questions(dataset, resolve_format(dataset))}
    texts, by_title = texts_of(questions)
    items = []
    for line in (run / "details.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        planner = row.get("planner") or {}
        if (planner.get("citation_check") or {}).get("answered_as") != "one_call":
            continue
        subs = planner.get("sub_queries") or []
        planned = {p for s in subs for p in s.get("passage_ids") or []}
        # rows written since the answer's sources are recorded by id name them exactly
        question_hits = [p for p in planner.get("source_ids") or [] if p in texts]
        for title in [] if question_hits else planner.get("sources") or []:
            ids = by_title.get(title) or []
            pick = next((p for p in ids if p in planned), ids[0] if ids else None)
            if pick and pick not in question_hits:
                question_hits.append(pick)
        supported = [s for s in subs if s.get("answered") and s.get("finding")]
        items.append(
            {
                "question": questions[row["id"]],
                "recorded": row["prediction"],
                "recorded_f1": row["f1"],
                "question_hits": question_hits,
                "findings": [(s["query"], s["finding"]) for s in supported],
                # the passage that holds the finding where the row records it, else the
                # query's first hit
                "finding_first": [
                    (s.get("finding_sources") or s["passage_ids"])[0]
                    for s in supported
                    if s.get("finding_sources") or s.get("passage_ids")
                ],
                "hops": [p for s in subs for p in (s.get("passage_ids") or [])[:HOP_PASSAGES]],
                "queries": [s["query"] for s in subs],
                "texts": texts,
            }
        )
    return items


def numbered(ids: list[str], texts: dict[str, tuple[str, str]], chars: int, focus: str) -> str:
    hits = [Hit(Passage(p, texts[p][0], texts[p][1], {}), 1.0) for p in ids]
    return numbered_passages(hits, max_chars=chars, query=focus) if hits else ""


async def answer(chat: Any, arm: str, item: dict[str, Any], cfg: PlannerSettings) -> str:
    q: EvalQuestion = item["question"]
    texts, limit, chars = item["texts"], cfg.answer_sources, cfg.passage_chars
    scope = RunScope(llm_timeout_s=300)
    if arm in ("one_call", "findings_first", "hops"):
        lead = {"findings_first": item["finding_first"], "hops": item["hops"]}.get(arm, [])
        ids = list(dict.fromkeys([*lead, *item["question_hits"]]))[:limit]
        passages = numbered(ids, texts, chars, q.question)
        reply = await read_short_answer(chat, q.question, passages, scope=scope, step="answer")
        return reply.value.answer if reply.value else ""
    ids = list(dict.fromkeys([*item["hops"], *item["question_hits"]]))[:limit]
    focus = " ".join([q.question, *item["queries"]])
    notes = "\n".join(f"- {query}: {found}" for query, found in item["findings"]) or "(none)"
    reply = await ask(
        chat,
        FinalAnswer,
        prompts.render(
            "answer",
            question=q.question,
            notes=notes,
            open_step="",
            passages=numbered(ids, texts, chars, focus) or "(no passages were found)",
        ),
        scope=scope,
        step="answer",
        max_tokens=ANSWER_MAX_TOKENS,
    )
    return reply.value.short_answer if reply.value else ""


def paired(a: list[float], b: list[float]) -> str:
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    rnd = random.Random(0)
    means = sorted(sum(diffs[rnd.randrange(n)] for _ in range(n)) / n for _ in range(10000))
    wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return (
        f"{100 * sum(diffs) / n:+.1f} [{100 * means[250]:+.1f}, {100 * means[9749]:+.1f}], "
        f"{wins}/{losses}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", help="question file, run directory, ...")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give pairs: question file, run directory")
    groups = {
        Path(run).as_posix(): open_rows(Path(dataset), Path(run))
        for dataset, run in zip(args.pairs[::2], args.pairs[1::2], strict=True)
    }
    settings = Settings()
    cfg = settings.planner
    with build_chat_model(settings, cache=False) as handle:
        slots = asyncio.Semaphore(max(1, settings.llm.local_parallel))

        async def one(arm: str, item: dict[str, Any]) -> str:
            async with slots:
                return await answer(handle.model, arm, item, cfg)

        print("| run | open plans | arm | F1 | against one_call | same as recorded |")
        print("|---|---:|---|---:|---:|---:|")
        for run, items in groups.items():
            started = time.monotonic()
            scores: dict[str, list[float]] = {}
            same: dict[str, int] = {}
            for arm in ARMS:
                answers = await asyncio.gather(*(one(arm, it) for it in items))
                scores[arm] = [
                    best_f1(a, it["question"].answers) for a, it in zip(answers, items, strict=True)
                ]
                same[arm] = sum(
                    normalize_answer_folded(a) == normalize_answer_folded(it["recorded"])
                    for a, it in zip(answers, items, strict=True)
                )
            for arm in ARMS:
                mean = 100 * sum(scores[arm]) / max(1, len(items))
                against = paired(scores[arm], scores["one_call"]) if items else "n/a"
                print(f"| {run} | {len(items)} | {arm} | {mean:.1f} | {against} | {same[arm]} |")
            recorded = 100 * sum(it["recorded_f1"] for it in items) / max(1, len(items))
            print(f"<!-- {run}: recorded F1 {recorded:.1f}, {time.monotonic() - started:.0f} s -->")


if __name__ == "__main__":
    asyncio.run(main())
