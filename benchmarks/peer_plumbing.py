"""Is the plumbing equal? hoptree's one call (``bm25``) against FlashRAG's (``peer-standard``),
taken apart.

Issue 62 makes ``peer-standard`` the check that a peer gets the same everything but the method:
the same retriever, model server, temperature and scoring. Both pipelines make one search and one
call over the same five BM25 passages, yet on some slices they score far apart (on the fresh
2Wiki slice's first five questions 60 F1 against 0). A gap is a bug until it is explained. The
two differ in two things only a reading can change, the prompt (hoptree's ``rag_answer``, a JSON
reply; FlashRAG's default template, free text) and the passages (hoptree trims each to 350
characters around the question; FlashRAG shows them whole), and in everything else that would be
a bug (a different retrieval, server, sampling or scoring). This replays every question that
has both rows in ``evals/results/peers``, on the same model server, cache off:

- **retrieval**: hoptree's BM25 retrieves the question again; its titles must be the ones both
  rows recorded (no model call);
- **FlashRAG's prompt, whole** (``flashrag-whole``): FlashRAG's own ``PromptTemplate`` over the
  passages as the peer adapter hands them over, sent through hoptree's chat client (temperature
  0, the same output cap). Its reply must be the peer's recorded reply: if it is, the server,
  sampling and the adapter's transport are the same, and what is left is the method;
- **FlashRAG's prompt, windows** (``flashrag-windows``): the same template over hoptree's
  350-character windows;
- **hoptree's prompt, whole** (``rag_answer-whole``): hoptree's reader over whole passages.

With the recorded ``bm25`` row (hoptree's prompt, windows), the four cells of prompt x passages
give each part's paired effect.

    python benchmarks/peer_plumbing.py            # writes benchmarks/results/peer-plumbing.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import HumanMessage, SystemMessage

from agent.runtime.chat_models import build_chat_model
from agent.runtime.embeddings import make_embeddings
from agent.settings import Settings
from evals.corpora import ensure_open_index, eval_index_dir, open_corpus
from evals.datasets import resolve_format
from evals.metrics import answer_scores
from evals.paired import format_gain_wl, paired_diff
from evals.peer_scores import ONE_CALL, PEERS_FOLDER, SLICES
from evals.peers.flashrag import _config, flashrag_doc, strip_stops
from evals.peers.offline import tiktoken_cache_dir
from evals.suite import CHAINS_SUITE
from searchers.corpus import file_sha256
from searchers.passages import Hit, focus_text, numbered_passages
from searchers.reader import read_short_answer
from searchers.searcher import RunScope

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "evals" / "results" / PEERS_FOLDER
OUT = ROOT / "benchmarks" / "results" / "peer-plumbing.md"
ROWS = OUT.with_name("peer-plumbing-rows.jsonl")
PEER = "peer-standard"
K = 5
WINDOW = 350  # the characters hoptree's one call shows of a passage
WHOLE = 1 << 20  # no trim
READINGS = ("flashrag-whole", "flashrag-windows", "rag_answer-whole")


def rows_of(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "details.jsonl"
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {r["id"]: r for r in rows}


def flashrag_messages(question: str, hits: Sequence[Hit], chars: int, model: str) -> list[Any]:
    """FlashRAG's default prompt (its own ``PromptTemplate``) over ``hits``, each trimmed to
    ``chars`` around the question as hoptree's reader trims them."""
    from flashrag.prompt import PromptTemplate

    tiktoken_cache_dir()  # FlashRAG counts the prompt's tokens with tiktoken, offline here
    docs = []
    for hit in hits:
        doc = flashrag_doc(hit)
        if chars < WHOLE:
            text = focus_text(hit.text, chars, question)
            doc = {**doc, "text": text, "contents": f"{hit.title}\n{text}"}
        docs.append(doc)
    with tempfile.TemporaryDirectory() as tmp:
        q = SimpleNamespace(
            model=model, base_url="http://unused", api_key="x", timeout_s=60, max_tokens=512, k=K
        )
        template = PromptTemplate(_config(q, tmp))  # type: ignore[arg-type]
        messages = template.get_string(question=question, retrieval_result=docs)
    kinds = {"system": SystemMessage, "user": HumanMessage}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


async def read(chat: Any, reading: str, question: str, hits: list[Hit], model: str) -> str:
    if reading.startswith("flashrag"):
        chars = WHOLE if reading.endswith("whole") else WINDOW
        reply = await chat.ainvoke(flashrag_messages(question, hits, chars, model))
        return strip_stops(str(reply.content), ())
    scope = RunScope(max_llm_calls=1, deadline_s=600, llm_timeout_s=600)
    passages = numbered_passages(hits, max_chars=WHOLE, query=question)
    out = await read_short_answer(chat, question, passages, scope=scope, step="rag_answer")
    return "" if out.value is None else " ".join(out.value.answer.split())


def pairs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(slice, bm25 row, peer-standard row) for every question with both rows."""
    out = []
    for key in SLICES:
        mine, peer = rows_of(RESULTS / key / ONE_CALL), rows_of(RESULTS / key / PEER)
        out += [(key, mine[i], peer[i]) for i in mine if i in peer]
    return out


async def replay(settings: Settings, done: Mapping[tuple[str, str], dict[str, Any]]) -> None:
    todo = pairs()
    embeddings = make_embeddings(settings.embeddings, settings.models_dir)
    with build_chat_model(settings, cache=False) as handle, ROWS.open("a") as sink:
        for n, (key, mine, peer) in enumerate(todo, start=1):
            if (key, mine["id"]) in done:
                continue
            path = Path(CHAINS_SUITE.slices[key].file)
            path = path if path.is_absolute() else DATA / path
            index_dir = eval_index_dir(settings, file_sha256(path))
            ensure_open_index(settings, path, resolve_format(path, "auto"), index_dir)
            corpus = open_corpus(settings, index_dir, {"sparse"}, embeddings=embeddings)
            hits = corpus.retrievers["sparse"].retrieve(mine["question"], K)
            row: dict[str, Any] = {
                "slice": key,
                "id": mine["id"],
                "answers": mine["answers"],
                # rows keep each title once (a MuSiQue page has several paragraphs)
                "same_retrieval": list(dict.fromkeys(h.title for h in hits))
                == mine["retrieved_titles"]
                == peer["retrieved_titles"],
                "bm25": mine["prediction"],
                "peer": peer["prediction"],
                "peer_raw": peer.get("peer", {}).get("raw", peer["prediction"]),
            }
            for reading in READINGS:
                row[reading] = await read(
                    handle.model, reading, mine["question"], hits, handle.label
                )
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(
                f"[{n}/{len(todo)}] {key} {mine['id'][:10]} same reply as the peer: "
                f"{row['flashrag-whole'] == row['peer_raw']}",
                file=sys.stderr,
                flush=True,
            )


def dataset_of(key: str) -> str:
    """``fresh/hotpotqa`` and ``hotpotqa_b`` are both HotpotQA."""
    return key.removeprefix("fresh/").removesuffix("_b")


def report(rows: Sequence[Mapping[str, Any]]) -> str:
    def score(r: Mapping[str, Any], name: str) -> float:
        return answer_scores(str(r[name]), r["answers"])["f1"]

    cells = {
        "hoptree prompt, windows (the `bm25` row)": "bm25",
        "hoptree prompt, whole": "rag_answer-whole",
        "FlashRAG prompt, windows": "flashrag-windows",
        "FlashRAG prompt, whole (replayed)": "flashrag-whole",
        "FlashRAG prompt, whole (the `peer-standard` row)": "peer",
    }
    by_id = {f"{r['slice']}|{r['id']}": r for r in rows}
    f1 = {name: {i: score(r, col) for i, r in by_id.items()} for name, col in cells.items()}
    same_reply = sum(r["flashrag-whole"] == r["peer_raw"] for r in rows)
    same_retrieval = sum(bool(r["same_retrieval"]) for r in rows)
    lines = [
        "# Plumbing: hoptree's one call against FlashRAG's, taken apart",
        "",
        "`python benchmarks/peer_plumbing.py` (issue 62): every question with both a `bm25` and a "
        "`peer-standard` row under `evals/results/peers`, replayed on the same model server, "
        "cache off. Rows: `peer-plumbing-rows.jsonl`.",
        "",
        f"- questions: {len(rows)} ({', '.join(sorted({r['slice'] for r in rows}))})",
        f"- the same five BM25 titles retrieved again as both rows recorded: {same_retrieval}/"
        f"{len(rows)}",
        f"- FlashRAG's prompt sent through hoptree's client gives the peer's recorded reply: "
        f"{same_reply}/{len(rows)}",
        "",
        "| reading | F1 | minus the `bm25` row [95% CI] (W/L) |",
        "|---|---:|---|",
    ]
    for name in cells:
        mean = 100 * sum(f1[name].values()) / max(1, len(rows))
        diff = (
            ""
            if cells[name] == "bm25"
            else format_gain_wl(paired_diff(f1[name], f1[next(iter(cells))]))
        )
        lines.append(f"| {name} | {mean:.1f} | {diff} |")
    lines += [
        "",
        "By dataset (a report slice and its fresh slice together), F1 of each reading:",
        "",
        "| dataset | n | " + " | ".join(cells) + " |",
        "|---|---:|" + "---:|" * len(cells),
    ]
    for dataset in sorted({dataset_of(r["slice"]) for r in rows}):
        ids = [i for i, r in by_id.items() if dataset_of(r["slice"]) == dataset]
        means = [100 * sum(f1[name][i] for i in ids) / len(ids) for name in cells]
        lines.append(f"| {dataset} | {len(ids)} | " + " | ".join(f"{m:.1f}" for m in means) + " |")
    prompt = paired_diff(f1["FlashRAG prompt, windows"], f1[next(iter(cells))])
    passages = paired_diff(f1["hoptree prompt, whole"], f1[next(iter(cells))])
    lines += [
        "",
        f"The prompt alone (FlashRAG's over hoptree's windows): {format_gain_wl(prompt)}; the "
        f"passages alone (whole, hoptree's prompt): {format_gain_wl(passages)}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report-only", action="store_true", help="no model call")
    args = parser.parse_args(argv)
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if ROWS.is_file():
        for line in ROWS.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            done[(r["slice"], r["id"])] = r
    if not args.report_only:
        asyncio.run(replay(Settings(), done))  # run with HOPTREE_LLM__CACHE=false
    rows = [json.loads(line) for line in ROWS.read_text(encoding="utf-8").splitlines()]
    text = report(rows)
    OUT.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
