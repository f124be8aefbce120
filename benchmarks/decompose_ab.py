"""A/B of the decompose prompt on questions of the shared files (the embedded model, no search).

Each question is planned twice, once under the project's prompt files and once with the files
of ``--variant DIR`` laid over them (any of ``decompose.txt``, ``plan_examples.toml``), through
the decompose node's own rules (``clean_queries``, ``on_topic``, ``inline_bare_names``, the
implicit ``#n`` of ``plan_sub_queries``). Nothing is searched: a plan is scored by its shape,
which is what an end-to-end run cannot isolate from its searches and findings, at about 8 s a
question instead of a minute.

Scored per arm:
- ``depth ok``: the plan's longest ``#n`` chain is as long as the question's chain (MuSiQue: its
  gold hops; 2Wiki: 2 for compositional, inference and bridge-comparison, 1 for comparison;
  HotpotQA: 2 for bridge, 1 for comparison). A chain planned as unlinked queries cannot carry
  one hop's answer into the next.
- ``hops ok``: as many planned queries as gold hops (MuSiQue, 2Wiki).
- ``nameless``: plans with a query naming nothing (``queries.names_nothing``); measured on v4's
  HotpotQA rows, such plans resolved wrongly (``agent.planner.plan.Plan.nameless``).
- ``alternatives``: comparisons whose every alternative some query names.
- ``dropped``: planned queries the rules dropped (copied examples, off-topic relations).
- failed calls, prompt and completion tokens, seconds.
Questions a family relation plans by rule (``agent.rules.relations.relation_plan``) take no call
and are left out of both arms.

    HOPTREE_LLM__CACHE=false HOPTREE_LLM__LOCAL_PARALLEL=2 HOPTREE_LLM__LOCAL_CTX=16384 \\
    python benchmarks/decompose_ab.py --variant my_prompts/ --limit 30 \\
        ../shared/data/hotpotqa/dev_hard_300_a.jsonl \\
        ../shared/data/2wikimultihopqa/dev_first100_flashrag.jsonl \\
        ../shared/data/musique/musique_ans_dev_174.jsonl

Without ``--variant`` only the current prompts are planned (a profile of today's plans).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import prompts
from agent.planner import examples
from agent.planner.decompose import QueryPlan
from agent.planner.queries import (
    MAX_QUERIES_PER_CALL,
    REF,
    clean_queries,
    kept_queries,
    names_nothing,
    plan_sub_queries,
    residual_hop,
)
from agent.rules.question import Question
from agent.rules.relations import relation_plan
from agent.runtime.chat_models import build_chat_model
from agent.runtime.usage import UsageTracker
from agent.settings import Settings
from evals.datasets import EvalQuestion, load_questions, resolve_format
from searchers.searcher import RunScope
from searchers.structured_calls import ask

# how long a question's chain is, by dataset type, where no gold decomposition says it
CHAIN_DEPTH = {
    "compositional": 2,
    "inference": 2,
    "bridge_comparison": 2,
    "comparison": 1,
    "bridge": 2,
}
COMPARING = ("comparison", "bridge_comparison")


@dataclass
class Plan:
    question: EvalQuestion
    dataset: str
    queries: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    failed: bool = False

    @property
    def depth(self) -> int:
        """The longest run of queries each building on the one before through ``#n``."""
        depths: list[int] = []
        for query in self.queries:
            refs = [int(n) for n in REF.findall(query) if 0 < int(n) <= len(depths)]
            depths.append(1 + max((depths[n - 1] for n in refs), default=0))
        return max(depths, default=0)

    @property
    def gold_depth(self) -> int | None:
        q = self.question
        if q.gold_hops and self.dataset == "musique":
            return len(q.gold_hops) + q.gold_hops_skipped
        return CHAIN_DEPTH.get(q.type)

    @property
    def gold_hops(self) -> int | None:
        q = self.question
        total = len(q.gold_hops) + q.gold_hops_skipped
        return total or None


def planned(question: str, raw: list[str], *, residual: bool = False) -> list[str]:
    """The queries the decompose node keeps from ``raw`` and their implicit ``#n`` (with
    ``residual``, the residual last hop the node adds, ``PlannerSettings.residual_hop``)."""
    limit = MAX_QUERIES_PER_CALL
    pairs = kept_queries(raw, Question.read(question), limit)
    if residual:
        pairs = residual_hop(pairs, question, limit)
    pairs = pairs or clean_queries([question], set(), 1)
    ready, waiting = plan_sub_queries(pairs, 0, "decompose")
    return [q["query"] for q in sorted(ready + waiting, key=lambda q: int(q["id"][1:]))]


async def plan_one(
    chat: Any,
    item: Plan,
    slots: asyncio.Semaphore,
    *,
    residual: bool = False,
) -> None:
    text = item.question.question
    messages = prompts.render(
        "decompose",
        question=text,
        max_queries=MAX_QUERIES_PER_CALL,
        examples=examples.plan_examples(Question.read(text).shape),
        conversation="",
    )
    async with slots:
        reply = await ask(
            chat, QueryPlan, messages, scope=RunScope(llm_timeout_s=300), step="decompose"
        )
    item.raw = [str(q) for q in reply.value.queries] if reply.value else []
    item.failed = reply.value is None
    item.queries = planned(text, item.raw, residual=residual)


def use_prompts(folder: Path) -> None:
    """Read every prompt file from ``folder`` from now on (the caches forget the old ones)."""
    prompts.PROMPT_DIR = folder
    prompts.load.cache_clear()
    prompts.example_bank.cache_clear()
    prompts.system_prefixes.cache_clear()
    examples.example_names.cache_clear()


def overlay(variant: Path, into: Path) -> Path:
    """The project's prompt files with the variant's laid over them, in ``into``."""
    known = {p.name for p in prompts.PROMPT_DIR.iterdir() if p.suffix in (".txt", ".toml")}
    extra = sorted(p.name for p in variant.iterdir() if p.is_file() and p.name not in known)
    if extra:
        raise SystemExit(f"--variant: {', '.join(extra)} replace no prompt file of the project")
    for path in prompts.PROMPT_DIR.iterdir():
        if path.suffix in (".txt", ".toml"):
            shutil.copy(path, into / path.name)
    for path in variant.iterdir():
        if path.is_file():
            shutil.copy(path, into / path.name)
    return into


def score(plans: list[Plan]) -> Counter[str]:
    count: Counter[str] = Counter()
    for p in plans:
        text = p.question.question
        count["questions"] += 1
        count["failed"] += p.failed
        count["queries"] += len(p.queries)
        count["dropped"] += max(0, len(p.raw) - len(p.queries))
        count["nameless"] += any(names_nothing(q, text) for q in p.queries)
        if p.gold_depth is not None:
            count["depth_known"] += 1
            count["depth_ok"] += p.depth == p.gold_depth
        if p.gold_hops is not None:
            count["hops_known"] += 1
            count["hops_ok"] += len(p.queries) == p.gold_hops
        offered = Question.read(text).choices
        if p.question.type in COMPARING and len(offered) >= 2:
            count["comparisons"] += 1
            named = all(any(o.casefold() in q.casefold() for q in p.queries) for o in offered)
            count["alternatives"] += named
    return count


def share(count: Counter[str], part: str, whole: str) -> str:
    return f"{count[part]}/{count[whole]}" if count[whole] else "n/a"


def table(
    results: dict[str, dict[str, list[Plan]]],
    usage: dict[str, UsageTracker],
    seconds: dict[str, float],
) -> str:
    lines = [
        "| arm | dataset | questions | depth ok | hops ok | nameless | alternatives | queries "
        "| dropped | failed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm, by_dataset in results.items():
        for dataset, plans in by_dataset.items():
            c = score(plans)
            lines.append(
                f"| {arm} | {dataset} | {c['questions']} | {share(c, 'depth_ok', 'depth_known')} "
                f"| {share(c, 'hops_ok', 'hops_known')} | {c['nameless']} "
                f"| {share(c, 'alternatives', 'comparisons')} | {c['queries']} | {c['dropped']} "
                f"| {c['failed']} |"
            )
    lines += [
        "",
        "| arm | calls | prompt tokens | completion tokens | seconds |",
        "|---|---:|---:|---:|---:|",
    ]
    for arm, tracker in usage.items():
        step = tracker.by_step().get("decompose")
        if step is None:
            continue
        lines.append(
            f"| {arm} | {step.calls} | {step.prompt_tokens} | {step.completion_tokens} "
            f"| {seconds[arm]:.0f} |"
        )
    return "\n".join(lines)


def differences(results: dict[str, dict[str, list[Plan]]], limit: int) -> list[str]:
    arms = list(results)
    if len(arms) < 2:
        return []
    out = []
    for dataset, plans in results[arms[0]].items():
        for a, b in zip(plans, results[arms[1]][dataset], strict=True):
            if a.queries != b.queries and len(out) < limit:
                first, second = (
                    f"  - {arm}: {p.queries}" for arm, p in zip(arms, (a, b), strict=True)
                )
                out.append(f"- {a.question.question}\n{first}\n{second}")
    return out


def dataset_name(path: Path) -> str:
    name = path.parent.name.casefold()
    return "2wiki" if name.startswith("2wiki") else re.sub(r"[^a-z0-9]+", "", name) or path.stem


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", type=Path, help="question files")
    parser.add_argument("--variant", type=Path, help="a folder of prompt files to lay over")
    parser.add_argument("--offset", type=int, default=0, help="questions skipped in each file")
    parser.add_argument("--limit", type=int, default=30, help="questions planned from each file")
    parser.add_argument("--show", type=int, default=20, help="plans that differ, to read")
    args = parser.parse_args()
    if args.variant is not None and not args.variant.is_dir():
        parser.error(f"--variant {args.variant}: not a folder")
    chosen: dict[str, list[EvalQuestion]] = {}
    for path in args.datasets:
        rows = load_questions(path, resolve_format(path))[args.offset : args.offset + args.limit]
        chosen[dataset_name(path)] = [q for q in rows if relation_plan(q.question) is None]
        skipped = len(rows) - len(chosen[dataset_name(path)])
        print(
            f"{path.name}: {len(rows)} questions, {skipped} planned by rule (left out)", flush=True
        )
    arms: list[tuple[str, Path | None]] = [("current", None)]
    if args.variant is not None:
        arms.append(("variant", args.variant))
    results: dict[str, dict[str, list[Plan]]] = {}
    usage: dict[str, UsageTracker] = {}
    seconds: dict[str, float] = {}
    home = prompts.PROMPT_DIR
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp, build_chat_model(settings, cache=False) as handle:
        slots = asyncio.Semaphore(max(1, settings.llm.local_parallel))
        for arm, variant in arms:
            use_prompts(overlay(variant, Path(tmp)) if variant else home)
            tracker = UsageTracker()
            handle.model.callbacks = [tracker]
            started = time.monotonic()
            results[arm] = {d: [Plan(q, d) for q in qs] for d, qs in chosen.items()}
            items = [p for plans in results[arm].values() for p in plans]
            done = 0
            for batch in range(0, len(items), 10):
                await asyncio.gather(
                    *(plan_one(handle.model, p, slots) for p in items[batch : batch + 10])
                )
                done += len(items[batch : batch + 10])
                print(
                    f"{arm}: {done}/{len(items)} planned, {time.monotonic() - started:.0f} s",
                    flush=True,
                )
            usage[arm], seconds[arm] = tracker, time.monotonic() - started
        use_prompts(home)
    print()
    print(table(results, usage, seconds))
    shown = differences(results, args.show)
    if shown:
        print("\nPlans that differ:\n" + "\n".join(shown))


if __name__ == "__main__":
    asyncio.run(main())
