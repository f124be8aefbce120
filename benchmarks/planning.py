"""Planning from gold labels: the decompose call alone on each question, scored against the
question's gold chain (one model call a question; or no call at all, on a run's recorded plans).

A chain resolves only if its plan asks each gold hop, about the right subject, with each later
hop linked (``#n``) to the hop whose answer it needs. Plans are scored against the gold hops:

- MuSiQue: ``question_decomposition``; a step naming ``#k`` needs hop k, the others name their
  subject (the step's words that the question also holds).
- 2Wiki: the evidence triples; a triple whose subject is an earlier triple's object needs it.
- HotpotQA: no hops are labelled, so its supporting titles stand in: a title is reached when a
  query names it, or, for a title the question does not name (the bridge entity), when a query
  builds on an earlier one through ``#n``.

A gold hop is *matched* by the first unused planned query, in plan order, that names its subject
(at least half of the subject's words) or, for a hop that needs hop k, links to the query that
matched hop k; it is *asked* when that query also holds a word of the hop's relation (5-letter
prefixes: "directed" asks "director"). A plan *matches the chain* when every gold hop is
matched; ``relations`` counts plans whose every hop is also asked.

Plans come from the model (``--live``: the decompose node's prompt and rules, ``live_plan``) or
from a run's recorded rows (``--rows RUN_DIR``: the queries the decompose step wrote,
``origin == "decompose"``, with their recorded links), so today's planner has a baseline at no
model cost. The same halves as the report slices: MuSiQue 1-87 tune and
88-174 report, 2Wiki ``dev_163_official`` report, HotpotQA ``_a`` tune and ``_b`` report.

    python benchmarks/planning.py --split musique_report --rows evals/results/v4/musique/full
    HOPTREE_LLM__CACHE=false python benchmarks/planning.py --split musique_tune --live
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.planner.queries import (
    MAX_QUERIES_PER_CALL,
    clean_queries,
    kept_queries,
    plan_sub_queries,
    residual_hop,
)
from agent.rules.query_text import residual_query
from agent.rules.question import Question
from agent.rules.relations import relation_plan
from evals.datasets import EvalQuestion, load_questions, resolve_format
from searchers.text import STOPWORDS, WORD, fold, stem

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SPLITS: dict[str, tuple[Path, int, int | None]] = {
    "musique_tune": (DATA / "musique" / "musique_ans_dev_174.jsonl", 0, 87),
    "musique_report": (DATA / "musique" / "musique_ans_dev_174.jsonl", 87, None),
    "2wiki_report": (DATA / "2wikimultihopqa" / "dev_163_official.jsonl", 0, None),
    "hotpotqa_tune": (DATA / "hotpotqa" / "dev_hard_300_a.jsonl", 0, 100),
    "hotpotqa_report": (DATA / "hotpotqa" / "dev_hard_300_b.jsonl", 0, 100),
}
_REF = re.compile(r"#(\d{1,2})\b")
ANY_LINK = -1  # a HotpotQA bridge title: reached by any query that builds on another
# words of a hop that say nothing of its subject or relation
_FILLER = {"who", "what", "which", "where", "when", "whom", "whose", "how", "many", "much"}
# Wikidata's relation names in MuSiQue's steps ("located in the administrative territorial
# entity") hold words no planner writes; the rest of the relation must still be asked
_KB_WORDS = {"administrative", "territorial", "entity", "located"}


def words(text: str) -> list[str]:
    """Content words, folded and crudely stemmed, as the planner's own checks compare them."""
    stems = (stem(w) for w in WORD.findall(fold(text)) if w not in STOPWORDS)
    return [w for w in stems if w not in _FILLER]


def _prefixes(ws: Sequence[str]) -> set[str]:
    return {w[:5] for w in ws}


@dataclass(frozen=True)
class GoldStep:
    """A gold hop as a plan must ask it: the words naming its subject (empty when the subject is
    an earlier hop's answer), the earlier hops it needs (0-based), its relation's words."""

    subject: tuple[str, ...]
    needs: tuple[int, ...]
    relation: tuple[str, ...]


def gold_steps(question: EvalQuestion) -> list[GoldStep]:
    """The question's gold chain; HotpotQA (no gold hops): one step per supporting title, the
    titles the question does not name needing an earlier step."""
    asked = set(words(question.question))
    steps: list[GoldStep] = []
    if not question.gold_hops:
        for title in question.supporting_titles:
            named = tuple(w for w in words(title) if w in asked)
            if len(named) * 2 >= max(1, len(words(title))):
                steps.append(GoldStep(tuple(words(title)), (), ()))
            else:
                steps.append(GoldStep((), (ANY_LINK,), ()))
        return steps
    answers = [h.answer for h in question.gold_hops]
    for i, hop in enumerate(question.gold_hops):
        refs = tuple(int(n) - 1 for n in _REF.findall(hop.question) if 0 < int(n) <= i)
        text = _REF.sub(" ", hop.question)
        if not refs:  # 2Wiki: "relation of subject", the subject an earlier hop's object
            refs = tuple(
                j for j in range(i) if fold(hop.question).endswith(" of " + fold(answers[j]))
            )
            for j in refs:
                text = text[: len(text) - len(answers[j])]
        named, rel = _split(text, asked)
        subject = () if refs else named
        relation = tuple(w for w in rel if w not in subject and w not in _KB_WORDS)
        steps.append(GoldStep(subject, refs, relation))
    return steps


def _split(text: str, asked: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(subject words, relation words) of a hop: MuSiQue's "subject >> relation"; 2Wiki's
    "relation of subject" at the first " of " whose right side the question names; otherwise
    the words the question also holds are the subject's."""
    if ">>" in text:
        left, right = text.split(">>", 1)
        return tuple(words(left)), tuple(words(right))
    parts = text.split(" of ")
    for cut in range(1, len(parts)):
        right = words(" of ".join(parts[cut:]))
        if right and 2 * sum(w in asked for w in right) >= len(right):
            return tuple(right), tuple(words(" of ".join(parts[:cut])))
    mine = words(text)
    return tuple(w for w in mine if w in asked), tuple(w for w in mine if w not in asked)


@dataclass
class PlannedQuery:
    text: str
    needs: tuple[int, ...] = ()  # indexes of the planned queries it builds on


@dataclass
class Verdict:
    matched: list[int | None] = field(default_factory=list)  # planned query of each gold step
    asked: list[bool] = field(default_factory=list)

    @property
    def chain(self) -> bool:
        return bool(self.matched) and all(m is not None for m in self.matched)

    @property
    def relations(self) -> bool:
        return self.chain and all(self.asked)


def judge(steps: list[GoldStep], plan: list[PlannedQuery]) -> Verdict:
    """Each gold step matched, in order, by the first unused planned query that names its
    subject or links to the query matched to the step it needs."""
    verdict = Verdict()
    used: set[int] = set()
    for step in steps:
        found = None
        for n, query in enumerate(plan):
            if n in used:
                continue
            if step.needs == (ANY_LINK,):
                ok = bool(query.needs)
            elif step.needs:
                want = {verdict.matched[j] for j in step.needs}
                ok = bool(set(query.needs) & (want - {None}))
            else:
                have = set(words(query.text))
                ok = bool(step.subject) and 2 * sum(w in have for w in step.subject) >= len(
                    step.subject
                )
            if ok:
                found = n
                break
        verdict.matched.append(found)
        if found is not None:
            used.add(found)
            have = _prefixes(words(plan[found].text))
            verdict.asked.append(not step.relation or bool(_prefixes(step.relation) & have))
        else:
            verdict.asked.append(False)
    return verdict


def decompose_queries(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The queries a recorded row's decompose step wrote (``planner.sub_queries`` of origin
    ``decompose``), as recorded. Rows recorded before a sub-query carried its id get the id the
    planner numbers it by, its place in the list (``q1`` first; rows with ids agree for 96%)."""
    subs = (row.get("planner") or {}).get("sub_queries") or []
    return [
        {"id": f"q{n}", **s}
        for n, s in enumerate(subs, start=1)
        if s.get("origin", "decompose") == "decompose"
    ]


def recorded_plan(subs: Sequence[dict[str, Any]]) -> list[PlannedQuery]:
    """Recorded queries as planned queries, linked by their recorded ``needs``."""
    index = {str(s.get("id")): n for n, s in enumerate(subs)}
    return [
        PlannedQuery(str(s["query"]), tuple(index[q] for q in s.get("needs") or () if q in index))
        for s in subs
    ]


def recorded_rows(path: Path) -> list[dict[str, Any]]:
    """A run's rows: ``path`` is its ``details.jsonl`` or the run directory holding it."""
    path = path / "details.jsonl" if path.is_dir() else path
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def rows_by_question(path: Path) -> dict[str, dict[str, Any]]:
    """A run's rows (``recorded_rows``) by question id."""
    return {row["id"]: row for row in recorded_rows(path)}


def planner_hops(question: EvalQuestion, row: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """1-based gold hop -> the recorded decompose query ``judge`` matches to it (searched or
    not), with ``asked``: whether that query also holds a word of the hop's relation (a query
    linked to the right hop may still ask another relation of it). The hop reading benchmark's
    planner phrasing reads hops through this, so both benchmarks agree on which query asks
    which hop."""
    subs = decompose_queries(row)
    verdict = judge(gold_steps(question), recorded_plan(subs))
    return {
        n: {**subs[m], "asked": asked}
        for n, (m, asked) in enumerate(zip(verdict.matched, verdict.asked, strict=True), start=1)
        if m is not None
    }


def stored_plans(path: Path) -> dict[str, list[PlannedQuery]]:
    """question id -> plan, from a ``--plans`` file (``plan_rows``): a live run's plans scored
    again, or with a rule replayed on them (``--residual``), at no call."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {
        row["id"]: [PlannedQuery(p["query"], tuple(p["needs"])) for p in row["plan"]]
        for row in map(json.loads, filter(None, lines))
    }


def recorded_plans(run: Path) -> dict[str, list[PlannedQuery]]:
    """question id -> the plan its decompose step wrote, from a run's rows (links from the
    queries' recorded ``needs``)."""
    return {row["id"]: recorded_plan(decompose_queries(row)) for row in recorded_rows(run)}


def with_residual(question: EvalQuestion, plan: list[PlannedQuery]) -> list[PlannedQuery]:
    """A recorded plan with the residual last hop today's decompose node always adds
    (``agent.planner.queries.residual_hop``), judged on the recorded links: a replay of the rule
    on plans recorded before it, no call."""
    if relation_plan(question.question) is not None:  # planned by rule: the node adds none
        return plan
    found = residual_query([q.text for q in plan], [set(q.needs) for q in plan], question.question)
    if found is None or len(plan) >= MAX_QUERIES_PER_CALL:
        return plan
    return [*plan, PlannedQuery(found[1], (found[0],))]


def planned_queries(queries: Sequence[str]) -> list[PlannedQuery]:
    """Plan strings with ``#n`` references (1-based) as planned queries."""
    return [
        PlannedQuery(q, tuple(int(n) - 1 for n in _REF.findall(q) if 0 < int(n) <= i))
        for i, q in enumerate(queries)
    ]


def hop_band(question: EvalQuestion, steps: list[GoldStep]) -> str:
    if question.type.endswith("hop"):
        return "2-hop" if question.type == "2hop" else "3-4-hop"
    return question.type or f"{len(steps)} steps"


def score(questions: list[EvalQuestion], plans: dict[str, list[PlannedQuery]]) -> dict[str, Any]:
    """Per band (MuSiQue 2-hop / 3-4-hop, 2Wiki and HotpotQA types) and overall: questions,
    plans matching the gold chain, with every relation asked, with as many queries as steps."""
    count: dict[str, Counter[str]] = {}
    for q in questions:
        if q.id not in plans:
            continue
        steps = gold_steps(q)
        if not steps:
            continue
        verdict = judge(steps, plans[q.id])
        for band in (hop_band(q, steps), "all"):
            c = count.setdefault(band, Counter())
            c["n"] += 1
            c["chain"] += verdict.chain
            c["relations"] += verdict.relations
            c["count_ok"] += len(plans[q.id]) == len(steps)
    return {
        band: {
            "n": c["n"],
            "chain": round(100 * c["chain"] / c["n"], 1),
            "relations": round(100 * c["relations"] / c["n"], 1),
            "count_ok": round(100 * c["count_ok"] / c["n"], 1),
        }
        for band, c in sorted(count.items())
    }


def plan_rows(
    questions: list[EvalQuestion], plans: dict[str, list[PlannedQuery]]
) -> list[dict[str, Any]]:
    """Each planned question with its gold hops, its plan and the verdict: which planned query
    matched each hop (``null`` for a hop none reached), so a change to the prompt or the rules
    can be read plan by plan, not only in the table."""
    rows = []
    for q in questions:
        if q.id not in plans:
            continue
        steps = gold_steps(q)
        verdict = judge(steps, plans[q.id])
        rows.append(
            {
                "id": q.id,
                "band": hop_band(q, steps),
                "question": q.question,
                "gold": [h.question for h in q.gold_hops] or list(q.supporting_titles),
                "plan": [{"query": p.text, "needs": list(p.needs)} for p in plans[q.id]],
                "matched": verdict.matched,
                "chain": verdict.chain,
            }
        )
    return rows


def questions_of(split: str) -> list[EvalQuestion]:
    path, first, last = SPLITS[split]
    return load_questions(path, resolve_format(path))[first:last]


async def live_plan(chat: Any, question: str, slots: asyncio.Semaphore) -> list[PlannedQuery]:
    """A model's plan of ``question`` as the decompose node makes it: one call of its prompt
    (the worked plans of the question's shape), then its rules: the queries kept (cleaned, on
    the question's topic, bare names folded in), the residual last hop added, the question
    itself when nothing is kept (also when the call fails), and each query linked to the
    earlier ones its ``#n``, written or implicit, names."""
    import prompts
    from agent.planner.decompose import QueryPlan
    from agent.planner.examples import plan_examples
    from searchers.searcher import RunScope
    from searchers.structured_calls import ask

    read = Question.read(question)
    messages = prompts.render(
        "decompose",
        question=question,
        max_queries=MAX_QUERIES_PER_CALL,
        examples=plan_examples(read.shape),
        conversation="",
    )
    async with slots:
        reply = await ask(
            chat, QueryPlan, messages, scope=RunScope(llm_timeout_s=300), step="decompose"
        )
    raw = [str(q) for q in reply.value.queries] if reply.value else []
    pairs = kept_queries(raw, read, MAX_QUERIES_PER_CALL)
    pairs = residual_hop(pairs, question, MAX_QUERIES_PER_CALL)
    pairs = pairs or clean_queries([question], set(), 1)
    ready, waiting = plan_sub_queries(pairs, 0, "decompose")
    planned = sorted(ready + waiting, key=lambda q: int(q["id"][1:]))
    return recorded_plan([dict(q) for q in planned])


async def live_plans(questions: list[EvalQuestion]) -> dict[str, list[PlannedQuery]]:
    """Each question planned now (``live_plan``), ten at a time on the configured slots; a
    question a family relation plans by rule is planned by that rule, as the planner does."""
    from agent.runtime.chat_models import build_chat_model
    from agent.settings import Settings

    settings = Settings()
    plans: dict[str, list[PlannedQuery]] = {}
    with build_chat_model(settings, cache=settings.llm.cache) as handle:
        slots = asyncio.Semaphore(max(1, settings.llm.local_parallel))
        for start in range(0, len(questions), 10):
            batch = []
            for q in questions[start : start + 10]:
                rule = relation_plan(q.question)
                if rule is not None:
                    plans[q.id] = planned_queries([str(x) for x in rule])
                else:
                    batch.append(q)
            planned = await asyncio.gather(
                *(live_plan(handle.model, q.question, slots) for q in batch)
            )
            plans.update({q.id: plan for q, plan in zip(batch, planned, strict=True)})
            print(f"planned {min(start + 10, len(questions))}/{len(questions)}", flush=True)
    return plans


def markdown(name: str, table: dict[str, Any]) -> str:
    lines = [
        f"| {name} | n | matches the gold chain | ... and asks every relation | query count |",
        "|---|---:|---:|---:|---:|",
    ]
    for band, t in table.items():
        lines.append(
            f"| {band} | {t['n']} | {t['chain']:.1f}% | {t['relations']:.1f}% "
            f"| {t['count_ok']:.1f}% |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=sorted(SPLITS), required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--rows", type=Path, help="a run directory: score its recorded plans")
    source.add_argument("--live", action="store_true", help="plan each question now")
    source.add_argument(
        "--replay", type=Path, help="score the plans a --plans file holds (no call)"
    )
    parser.add_argument("--limit", type=int, help="the split's first N questions")
    parser.add_argument(
        "--residual",
        action="store_true",
        help="with --rows or --replay: the residual last hop replayed on those plans (no call)",
    )
    parser.add_argument("--json", type=Path, help="also write the table here")
    parser.add_argument(
        "--plans", type=Path, help="also write each question's plan and verdict here (JSONL)"
    )
    args = parser.parse_args()
    questions = questions_of(args.split)[: args.limit]
    if args.rows:
        plans = recorded_plans(args.rows)
    elif args.replay:
        plans = stored_plans(args.replay)
    else:
        plans = asyncio.run(live_plans(questions))
    if args.residual:
        by_id = {q.id: q for q in questions}
        plans = {i: with_residual(by_id[i], p) if i in by_id else p for i, p in plans.items()}
    table = score(questions, plans)
    print(markdown(args.split, table))
    if args.json:
        args.json.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    if args.plans:
        lines = [json.dumps(row, ensure_ascii=False) for row in plan_rows(questions, plans)]
        args.plans.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


if __name__ == "__main__":
    main()
