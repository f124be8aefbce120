"""What the draft's reader is shown, and how often it holds the answer: no model call.

Issue 65 (item 1) asks for a draft that reads as well as the best one call. On HotpotQA one
call over BM25's five passages reads better than the draft over the searchers' fused list; on
MuSiQue the fused list reads better. Before a model run tries a reading, this measures what each
candidate would show the reader, on the slices' open indexes, with the real retrievers and the
planner's real searchers (their first, as-written retrieval, as the draft searches the question):

- ``draft``: today's draft: the sparse and dense searchers' hits fused, the first
  ``answer_sources`` (5), each trimmed to ``passage_chars`` (350) around the question;
- ``bm25``, ``hybrid``: the one-call pipelines' retrievals (top 5, the same trim);
- ``bm25 first``: BM25's first three, then the fused list's best others, five in all;
- ``fused 8``: the draft's list, eight passages;
- ``bm25 whole``, ``draft whole``: five passages, untrimmed (up to 1,500 characters each).

For each: *answer shown*, the share of questions whose gold answer occurs in a shown text (the
evaluation's ``retrieval_success``: yes/no questions are left out); *gold shown*, the share of
questions with every supporting paragraph among the shown passages (by title for HotpotQA and
2Wiki, by paragraph id for MuSiQue); and the characters shown (the prompt's cost). A reading
that shows the answer no more often cannot read better on average; one that shows it more
often is worth a model run.

    python benchmarks/draft_inputs.py [--limit 100]   # writes benchmarks/results/draft-inputs.md
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.runtime import Runtime

from agent.hoptree_agent import build_agent
from agent.planner.draft import _question_searches
from agent.planner.plan import Plan
from agent.rules.question import Question
from agent.runtime.embeddings import make_embeddings
from agent.settings import Settings
from evals.corpora import ensure_open_index, eval_index_dir, open_corpus
from evals.datasets import EvalQuestion, load_questions, resolve_format
from evals.metrics import retrieval_success
from evals.pipelines import EvalContext
from evals.suite import CHAINS_SUITE
from searchers.corpus import file_sha256
from searchers.hybrid import HybridRetriever
from searchers.passages import Hit, focus_text

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "draft-inputs.md"
DATA = ROOT.parent / "shared" / "data"
SLICES = ("tune/hotpotqa", "tune/2wiki", "tune/musique", "hotpotqa_b", "2wiki", "musique")
WHOLE = 1500  # characters of an untrimmed passage (HotpotQA's and 2Wiki's are shorter)


@dataclass(frozen=True)
class Lists:
    """One question's ranked lists, from which every reading is cut."""

    draft: list[Hit]  # the fused searchers' list, as long as the planner keeps it (k)
    bm25: list[Hit]
    hybrid: list[Hit]


@dataclass(frozen=True)
class Reading:
    """A candidate: which passages, trimmed to how many characters."""

    name: str
    pick: Callable[[Lists], list[Hit]]
    chars: int


def _bm25_first(lists: Lists, n: int = 5, first: int = 3) -> list[Hit]:
    chosen = list(lists.bm25[:first])
    ids = {h.id for h in chosen}
    for hit in lists.draft:
        if len(chosen) >= n:
            break
        if hit.id not in ids:
            chosen.append(hit)
            ids.add(hit.id)
    return chosen


def readings(answer_sources: int, chars: int) -> list[Reading]:
    n = answer_sources
    return [
        Reading("draft", lambda lists: lists.draft[:n], chars),
        Reading("bm25", lambda lists: lists.bm25[:n], chars),
        Reading("hybrid", lambda lists: lists.hybrid[:n], chars),
        Reading("bm25 first", lambda lists: _bm25_first(lists, n), chars),
        Reading("fused 8", lambda lists: lists.draft[:8], chars),
        Reading("bm25 whole", lambda lists: lists.bm25[:n], WHOLE),
        Reading("draft whole", lambda lists: lists.draft[:n], WHOLE),
    ]


@dataclass
class Tally:
    answer: list[float]
    gold: list[float]
    chars: list[int]

    def row(self, name: str) -> str:
        def pct(values: list[float]) -> str:
            return f"{100 * statistics.fmean(values):.1f}" if values else "-"

        return (
            f"| {name} | {pct(self.answer)} | {pct(self.gold)} | "
            f"{statistics.median(self.chars) if self.chars else 0:.0f} |"
        )


def shown(hits: Sequence[Hit], chars: int, question: str) -> list[str]:
    return [f"{h.title}: {focus_text(h.text, chars, question)}" for h in hits]


async def slice_lists(settings: Settings, key: str, limit: int) -> list[tuple[EvalQuestion, Lists]]:
    part = CHAINS_SUITE.slices[key]
    path = DATA / part.file
    fmt = resolve_format(path, "auto")
    questions = load_questions(path, fmt)[part.offset : part.offset + min(limit, part.limit)]
    embeddings = make_embeddings(settings.embeddings, settings.models_dir)
    index_dir = eval_index_dir(settings, file_sha256(path))
    ensure_open_index(settings, path, fmt, index_dir, embeddings=embeddings)
    corpus = open_corpus(settings, index_dir, {"sparse", "dense"}, embeddings=embeddings)
    hybrid = HybridRetriever(
        [corpus.retrievers["sparse"], corpus.retrievers["dense"]],
        rrf_k=settings.index.rrf_k,
        depth=settings.index.hybrid_depth or None,
    )
    chat = FakeListChatModel(responses=["unused"])
    ctx = EvalContext(chat=chat, settings=settings, embeddings=embeddings)
    agent = build_agent(settings, ctx.searcher_context(corpus), ["sparse", "dense"])
    out = []
    for n, q in enumerate(questions, start=1):
        runtime = Runtime(context=agent.new_run())
        searches, _ = await _question_searches(q.question, runtime)
        read = Question.read(q.question)
        plan = Plan.from_json(
            {"question": read.text, "parsed": read.to_json(), "searches": searches}
        )
        lists = Lists(
            draft=plan.question_hits(settings.planner.k),
            bm25=corpus.retrievers["sparse"].retrieve(q.question, 8),
            hybrid=hybrid.retrieve(q.question, 8),
        )
        out.append((q, lists))
        if n % 20 == 0:
            print(f"{key}: {n}/{len(questions)}", file=sys.stderr, flush=True)
    return out


def tally(pairs: Sequence[tuple[EvalQuestion, Lists]], reading: Reading) -> Tally:
    result = Tally([], [], [])
    for q, lists in pairs:
        hits = reading.pick(lists)
        texts = shown(hits, reading.chars, q.question)
        found = retrieval_success(q.answers, texts)
        if found is not None:
            result.answer.append(found)
        if q.supporting_ids:  # MuSiQue: a title does not name its paragraph
            ids = {h.id for h in hits}
            result.gold.append(float(all(i in ids for i in q.supporting_ids)))
        elif q.supporting_titles:
            titles = {h.title for h in hits}
            result.gold.append(float(all(t in titles for t in q.supporting_titles)))
        result.chars.append(sum(len(t) for t in texts))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slices", nargs="+", default=list(SLICES), choices=SLICES)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    settings = Settings()
    cfg = settings.planner
    lines = [
        "# What the draft's reader is shown (no model call)",
        "",
        f"Written by `python benchmarks/draft_inputs.py --limit {args.limit}` (the module's "
        "docstring names the readings). *answer shown*: % of questions whose gold answer occurs "
        "in a shown passage (yes/no questions left out); *gold shown*: % with every supporting "
        "paragraph shown; *chars*: median characters shown.",
        "",
    ]
    for key in args.slices:
        pairs = asyncio.run(slice_lists(settings, key, args.limit))
        lines += [
            f"## `{key}` ({len(pairs)} questions)",
            "",
            "| reading | answer shown % | gold shown % | chars |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            tally(pairs, r).row(r.name) for r in readings(cfg.answer_sources, cfg.passage_chars)
        ]
        lines.append("")
        args.out.write_text("\n".join(lines), encoding="utf-8")  # a slice at a time
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
