"""Does the findings call see a hop's answer? Window A/B over recorded planner rows, no model.

For every atomic query of a recorded ``full`` run and every gold hop whose paragraph is among
the query's first three fused passages (what the findings call is shown), it windows that
paragraph two ways, as ``searchers.passages.focus_text`` does without a title (the ranking by
shared words, what one-call RAG and the answer step use) and with it (the query's relation words
choose, the subject's name breaks ties: what the findings call uses), and counts the hops whose
answer is inside each window. MuSiQue and 2Wiki (official layout) name their gold hops; for
HotpotQA ``--answers`` counts the question's answer in the supporting paragraphs instead.

    python benchmarks/findings_windows.py \\
        ../shared/data/musique/musique_ans_dev_174.jsonl evals/results/v4/musique/full \\
        ../shared/data/2wikimultihopqa/dev_163_official.jsonl evals/results/v4/2wiki/full-47f7d4f

Pairs of (question file, run directory); prints one line per run and, with ``--show N``, the
first N windows that lost an answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.datasets import EvalQuestion, load_questions, resolve_format
from searchers.passages import focus_text
from searchers.text import normalize_answer_folded

TOP = 3  # PlannerSettings.summary_passages


def _contains(text: str, answer: str) -> bool:
    key = normalize_answer_folded(answer)
    return bool(key) and f" {key} " in f" {normalize_answer_folded(text)} "


def _windows(
    dataset: Path, run: Path, chars: int, answers: bool
) -> Iterator[tuple[str, str, str, str, str]]:
    """(query, answer, title, untitled window, titled window) for each gold answer a query's
    shown paragraph holds."""
    questions = {q.id: q for q in load_questions(dataset, resolve_format(dataset))}
    texts: dict[str, tuple[str, str]] = {}
    for q in questions.values():
        for pid, (title, text) in zip(q.passage_ids(), q.paragraphs, strict=True):
            texts.setdefault(pid, (title, text))
    for line in (run / "details.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        question: EvalQuestion | None = questions.get(row["id"])
        if question is None:
            continue
        for sub in (row.get("planner") or {}).get("sub_queries") or []:
            shown = [p for p in (sub.get("passage_ids") or [])[:TOP] if p in texts]
            if answers:
                wanted = [
                    (pid, a)
                    for pid in shown
                    for a in question.answers
                    if normalize_answer_folded(a) not in {"yes", "no"}
                ]
            else:
                wanted = [
                    (h.passage_id, h.answer) for h in question.gold_hops if h.passage_id in shown
                ]
            for pid, answer in wanted:
                title, text = texts[pid]
                if not _contains(text, answer):
                    continue
                yield (
                    sub["query"],
                    answer,
                    title,
                    focus_text(text, chars, sub["query"]),
                    focus_text(text, chars, sub["query"], title),
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", help="question file, run directory, ...")
    parser.add_argument("--chars", type=int, default=350, help="PlannerSettings.passage_chars")
    parser.add_argument("--answers", action="store_true", help="the question's answer, not hops")
    parser.add_argument("--show", type=int, default=0, help="print N windows that lost one")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give pairs: question file, run directory")
    print(
        "| run | answers in a shown paragraph | in the untitled window | in the titled | "
        "gained | lost |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    lost: list[tuple[str, str, str, str, str]] = []
    for dataset, run in zip(args.pairs[::2], args.pairs[1::2], strict=True):
        counts: Counter[str] = Counter()
        for window in _windows(Path(dataset), Path(run), args.chars, args.answers):
            # the title is on the prompt's line beside the window, so an answer in it is shown
            before = _contains(window[2] + " " + window[3], window[1])
            after = _contains(window[2] + " " + window[4], window[1])
            counts.update(pairs=1, before=before, after=after)
            counts.update(gained=after and not before, lost=before and not after)
            if before and not after:
                lost.append(window)
        print(
            f"| {run} | {counts['pairs']} | {counts['before']} | {counts['after']} | "
            f"{counts['gained']} | {counts['lost']} |"
        )
    for query, answer, title, before, after in lost[: args.show]:
        print(f"\n{query!r} -> {answer!r} ({title})\n  untitled: {before}\n  titled:   {after}")


if __name__ == "__main__":
    main()
