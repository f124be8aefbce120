"""Which reading makes the draft read as FlashRAG's one call does? One call an item, tuning slices.

On the tuning slices' first 50 questions, FlashRAG's one call (``peer-standard``: its default
template, a free-text reply, five whole BM25 passages) scored above hoptree's own one call over
the same five (``bm25``: the JSON reader of ``rag_answer``, each passage trimmed to 350
characters) on HotpotQA ``_b`` and 2Wiki, and above hoptree's draft. An earlier replay on the
fresh slices (``peer_plumbing.py``) took the two apart: FlashRAG's prompt over the windows read
worse, hoptree's JSON reader over whole passages read the same; only the two together won. This
replays readings hoptree could own, in its own words, one arm at a time
(``<reader>/<passages>``):

- readers: ``json-windows``, today's draft reader (``searchers.reader.read_short_answer``, a
  JSON reply) over passages trimmed to ``passage_chars`` around the question; ``plain-whole``,
  a free-text reply, the whole passages and the question in one user message
  (``PLAIN_PROMPT``); ``terse-whole``, a free-text reply with the whole passages in the system
  message and the question alone as the user's (the layout of FlashRAG's template, not its
  words; the product's ``searchers.reader.read_free_answer`` since it became
  ``answer_reader="free"``, the prompt the rows were recorded with);
- passages: ``draft``, the draft's five fused passages (the planner's searchers' first
  retrieval of the question, recomputed with the real searchers, ``draft_inputs.slice_lists``);
  ``bm25``, BM25's five (the peer's).

``json-windows/draft`` is the draft replayed (its answers match the recorded drafts). Every arm
makes one call a question, cache off. Rows go to ``--out``, one JSON line a (slice, question,
arm), resumable; ``--summary`` prints each arm's F1 and its paired difference from the draft,
with FlashRAG's recorded ``peer-standard`` rows beside them.

    HOPTREE_LLM__CACHE=false HOPTREE_LLM__LOCAL_PARALLEL=2 python benchmarks/reader_prompt.py \\
        --slices hotpotqa_b 2wiki musique --limit 50 --arms terse-whole/bm25 --out rows.jsonl
    python benchmarks/reader_prompt.py --summary --out rows.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from draft_inputs import Lists, slice_lists
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent.runtime.chat_models import build_chat_model
from agent.settings import Settings
from evals.metrics import answer_scores
from evals.paired import format_gain_wl, paired_diff
from evals.peer_scores import PEERS_FOLDER, rows_of
from searchers.passages import Hit, numbered_passages
from searchers.reader import FREE_MAX_TOKENS, free_answer, read_free_answer, read_short_answer
from searchers.searcher import RunScope

PEERS = Path(__file__).resolve().parents[1] / "evals" / "results" / PEERS_FOLDER
READERS = ("json-windows", "plain-whole", "terse-whole")
PASSAGES = ("draft", "bm25")
BASELINE = "json-windows/draft"
WHOLE = 1 << 20
N = 5
PLAIN_PROMPT = (
    "Below are documents a search engine found. Answer the question from them with the answer "
    "alone: a name, a date, a number, a short phrase, or yes or no. Do not write a sentence."
)


def plain_messages(question: str, hits: Sequence[Hit]) -> list[BaseMessage]:
    passages = numbered_passages(list(hits), max_chars=WHOLE)
    return [
        SystemMessage(content=PLAIN_PROMPT),
        HumanMessage(content=f"Documents:\n{passages}\n\nQuestion: {question}\nAnswer:"),
    ]


async def read(chat: Any, reader: str, question: str, hits: Sequence[Hit], chars: int) -> str:
    scope = RunScope(max_llm_calls=1, deadline_s=600, llm_timeout_s=600)
    if reader == "json-windows":
        text = numbered_passages(list(hits), max_chars=chars, query=question)
        out = await read_short_answer(chat, question, text, scope=scope, step="rag_answer")
        return "" if out.value is None else " ".join(out.value.answer.split())
    if reader == "terse-whole":  # the product's free reader (``answer_reader="free"``)
        documents = [(h.title, h.text) for h in hits]
        got = await read_free_answer(chat, question, documents, scope=scope, step="rag_answer")
        return "" if got.value is None else got.value.answer
    capped = chat.model_copy(update={"max_tokens": FREE_MAX_TOKENS})
    reply = await asyncio.wait_for(capped.ainvoke(plain_messages(question, hits)), timeout=600)
    return free_answer(str(reply.content))


def hits_of(lists: Lists, passages: str) -> list[Hit]:
    return (lists.draft if passages == "draft" else lists.bm25)[:N]


def load(out: Path) -> list[dict[str, Any]]:
    rows = []
    for line in out.read_text().splitlines() if out.exists() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


async def run(
    settings: Settings, slices: list[str], limit: int, arms: list[str], out: Path
) -> None:
    done = {(r["slice"], r["id"], r["arm"]) for r in load(out)}
    chars = settings.planner.passage_chars
    with build_chat_model(settings, cache=False) as handle, out.open("a") as sink:
        chat = handle.model
        for key in slices:
            pairs = await slice_lists(settings, key, limit)
            for n, (q, lists) in enumerate(pairs, start=1):
                todo = [a for a in arms if (key, q.id, a) not in done]
                readings = [a.split("/") for a in todo]  # (reader, passages)
                answers = await asyncio.gather(
                    *(read(chat, r, q.question, hits_of(lists, p), chars) for r, p in readings)
                )
                for arm, answer in zip(todo, answers, strict=True):
                    f1 = answer_scores(answer, q.answers)["f1"]
                    row = {"slice": key, "id": q.id, "arm": arm, "answer": answer, "f1": f1}
                    sink.write(json.dumps(row) + "\n")
                sink.flush()
                if todo:
                    print(
                        f"[{key} {n}/{len(pairs)}] {', '.join(todo)}", file=sys.stderr, flush=True
                    )


def _peer_standard(key: str) -> dict[str, float]:
    rows = rows_of(PEERS / key / "peer-standard")
    return {i: float(r.get("f1") or 0.0) for i, r in rows.items()}


def summary(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| slice | reading | n | F1 | minus the draft's reading (json-windows/draft) |",
        "|---|---|---:|---:|---|",
    ]
    for key in dict.fromkeys(r["slice"] for r in rows):
        by_arm: dict[str, dict[str, float]] = {}
        for r in rows:
            if r["slice"] == key:
                by_arm.setdefault(r["arm"], {})[r["id"]] = float(r["f1"])
        base = by_arm.get(BASELINE, {})
        peer = _peer_standard(key)
        if base and peer:
            by_arm["peer-standard (recorded)"] = {i: peer[i] for i in base if i in peer}
        for arm, scores in by_arm.items():
            ids = scores.keys() & base.keys() if arm != BASELINE else scores.keys()
            mean = 100 * sum(scores[i] for i in ids) / max(1, len(ids))
            gain = (
                ""
                if arm == BASELINE or not ids
                else format_gain_wl(paired_diff({i: scores[i] for i in ids}, base))
            )
            lines.append(f"| {key} | {arm} | {len(ids)} | {mean:.1f} | {gain} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--slices", nargs="+", default=["hotpotqa_b", "2wiki", "musique"])
    p.add_argument("--limit", type=int, default=50)
    p.add_argument(
        "--arms",
        nargs="+",
        default=[f"{r}/{p}" for r in READERS for p in PASSAGES],
        choices=[f"{r}/{p}" for r in READERS for p in PASSAGES],
    )
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--summary", action="store_true")
    args = p.parse_args(argv)
    if args.summary:
        print(summary(load(args.out)))
        return 0
    asyncio.run(run(Settings(), args.slices, args.limit, args.arms, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
