"""Retrieval benchmark: build time, query latency and peak memory at 10k/100k passages for the
sparse (tantivy) and dense (FAISS flat and HNSW) indexes, and gold-paragraph recall of sparse,
dense and hybrid retrieval on the open HotpotQA (and 2Wiki) corpora.

Run:  .venv/bin/python benchmarks/retrieval_bench.py            (everything; ~1 h cold, the
      100k embedding dominates and is cached, so reruns take minutes)
      .venv/bin/python benchmarks/retrieval_bench.py --embed-only   (fill the vector cache)
      .venv/bin/python benchmarks/retrieval_bench.py --sizes 10000 --skip-recall

Results go to benchmarks/results/retrieval.{md,json} and stdout.

Method notes
- Scale corpus: deterministic pseudo-text. Words are drawn from the unigram distribution of the
  HotpotQA paragraphs in ../shared/data and passage lengths from their length distribution, so
  BM25 posting lists and the embedder's sequence lengths look like the real corpus; the 10k set
  is the first 10k passages of the 100k set.
- Embeddings: the real model (all-MiniLM-L6-v2, CPU). Vectors are computed once in shards of
  5,000 and cached as .npy under --cache-dir with the measured seconds, so the reported embedding
  time is a real measurement even when a rerun reads the cache. "dense build" = embedding time +
  FAISS add; the two are reported separately.
- Latency: single queries, sequential, after 10 warm-up queries; p50/p95 over --queries queries.
  Dense latency includes embedding the query; "search only" excludes it.
- Memory: peak resident set size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) of a fresh
  child process per configuration, so native tantivy/FAISS/torch allocations count (tracemalloc
  would see Python objects only); "rss before" is the child's resident size after imports and
  model load, just before the build.
- Recall: the open corpus of a question file (all context paragraphs, deduplicated by title),
  built with the real ingest pipeline (hoptree's build_index). Query = the raw question. A
  retrieved passage is a gold hit if its title is a supporting-fact title; recall@k = fraction of
  a question's gold titles in the top k, averaged; "both@k" = fraction of questions with every
  gold title in the top k. All k come from one top-20 retrieval per question (hybrid: RRF k=60
  over sparse and dense top-40).

Why one file of this length: a benchmark is run as one script, and its index builds, query runs
and report read one configuration; none of it is imported by the package.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared" / "data"
VOCAB_FILES = ("hotpotqa/dev_hard_300_a.jsonl", "hotpotqa/dev_hard_300_b.jsonl")
RECALL_SETS = (
    ("HotpotQA dev_hard_300_a", "hotpotqa/dev_hard_300_a.jsonl"),
    ("2Wiki dev_first100", "2wikimultihopqa/dev_first100_flashrag.jsonl"),
)
RECALL_KS = (2, 5, 10, 20)
SHARD = 5000
SEED = 20261122
WARMUP = 10
MODEL = "all-MiniLM-L6-v2"
EF_SEARCH_SWEEP = (32, 64, 128, 256, 512)


# --------------------------------------------------------------------------- synthetic corpus


def _unigrams() -> tuple[list[str], np.ndarray, np.ndarray]:
    counts: Counter[str] = Counter()
    lengths: list[int] = []
    for rel in VOCAB_FILES:
        with (SHARED / rel).open(encoding="utf-8") as fh:
            for line in fh:
                for sentences in json.loads(line)["context"]["sentences"]:
                    words = " ".join(s.strip() for s in sentences).split()
                    lengths.append(len(words))
                    counts.update(words)
    words = sorted(counts)
    p = np.array([counts[w] for w in words], dtype=np.float64)
    return words, p / p.sum(), np.array([n for n in lengths if n > 0])


def synthetic_passages(n: int) -> list[Any]:
    """The first ``n`` passages of one fixed pseudo-text corpus (prefix-stable in ``n``)."""
    from searchers.passages import Passage

    words, p, lengths = _unigrams()
    out: list[Passage] = []
    for start in range(0, n, SHARD):  # whole shards, each with its own seed: prefix-stable
        size = SHARD
        block = np.random.default_rng([SEED, start // SHARD])
        lens = block.choice(lengths, size=size)
        title_ids = block.choice(len(words), size=(size, 2), p=p)
        flat = block.choice(len(words), size=int(lens.sum()), p=p)
        offset = 0
        for i in range(size):
            text = " ".join(words[j] for j in flat[offset : offset + lens[i]])
            offset += int(lens[i])
            title = " ".join(words[j].strip(".,;:()\"'").capitalize() for j in title_ids[i])
            out.append(Passage(id=f"syn-{start + i:06d}", title=title, text=text))
    return out[:n]


def synthetic_queries(passages: Sequence[Any], count: int) -> list[str]:
    """Queries of 4-9 consecutive words from random passages: each has a matching passage."""
    rng = np.random.default_rng([SEED, 999])
    queries = []
    for _ in range(count):
        words = passages[int(rng.integers(len(passages)))].text.split()
        size = int(rng.integers(4, 10))
        start = int(rng.integers(max(1, len(words) - size)))
        queries.append(" ".join(words[start : start + size]))
    return queries


def _corpus_key() -> str:
    h = hashlib.sha256()
    for rel in VOCAB_FILES:
        h.update((SHARED / rel).read_bytes())
    h.update(f"{SEED}/{SHARD}/{MODEL}/title+text/v1".encode())
    return h.hexdigest()[:12]


def cached_vectors(cache_dir: Path, n: int, log: Callable[[str], None]) -> tuple[np.ndarray, float]:
    """Vectors of the first ``n`` synthetic passages and the seconds it took to embed them
    (measured when each shard was computed)."""
    from agent.runtime.embeddings import SentenceTransformerEmbeddings
    from searchers.dense_faiss import passage_embedding_text

    folder = cache_dir / f"synthetic-{_corpus_key()}"
    folder.mkdir(parents=True, exist_ok=True)
    shards = (n + SHARD - 1) // SHARD
    passages = None
    embeddings = None
    parts, seconds = [], 0.0
    for s in range(shards):
        npy, meta = folder / f"shard-{s:03d}.npy", folder / f"shard-{s:03d}.json"
        if not (npy.is_file() and meta.is_file()):
            if passages is None:
                passages = synthetic_passages(shards * SHARD)
                embeddings = SentenceTransformerEmbeddings(MODEL, batch_size=64)
            texts = [passage_embedding_text(p) for p in passages[s * SHARD : (s + 1) * SHARD]]
            log(f"embedding shard {s + 1}/{shards} ({len(texts)} passages)")
            t0 = time.perf_counter()
            vectors = embeddings.embed_array(texts)
            took = time.perf_counter() - t0
            np.save(folder / f".shard-{s:03d}.tmp.npy", vectors)
            os.replace(folder / f".shard-{s:03d}.tmp.npy", npy)
            meta.write_text(json.dumps({"seconds": took, "rows": len(texts)}))
            log(f"embedded shard {s + 1}/{shards}: {len(texts) / took:.0f} passages/s")
        parts.append(np.load(npy))
        seconds += json.loads(meta.read_text())["seconds"]
    vectors = np.concatenate(parts)[:n]
    return vectors, seconds * n / (shards * SHARD)


# --------------------------------------------------------------------------- measurement helpers


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]  # noqa: E731
    return {
        "p50_ms": round(pick(0.50) * 1000, 2),
        "p95_ms": round(pick(0.95) * 1000, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
    }


def _latency(fn: Callable[[Any], Any], queries: Sequence[Any]) -> dict[str, float]:
    for q in queries[:WARMUP]:
        fn(q)
    samples = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        samples.append(time.perf_counter() - t0)
    return _percentiles(samples)


def _du_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


# --------------------------------------------------------------------------- scale runs (children)


def _run_sparse(n: int, n_queries: int, workdir: str) -> dict[str, Any]:
    from searchers.sparse_tantivy import TantivySparseIndex

    passages = synthetic_passages(n)
    queries = synthetic_queries(passages, n_queries)
    rss_before = _rss_mb()
    path = Path(workdir) / "sparse"
    t0 = time.perf_counter()
    index = TantivySparseIndex.create(path)
    index.add(passages)
    build = time.perf_counter() - t0
    assert len(index) == n
    return {
        "backend": "sparse (tantivy BM25)",
        "n": n,
        "build_s": round(build, 2),
        "disk_mb": round(_du_mb(path), 1),
        "query": _latency(lambda q: index.retrieve(q, 10), queries),
        "rss_before_mb": round(rss_before, 0),
        "peak_rss_mb": round(_peak_mb(), 0),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def _run_dense(n: int, n_queries: int, workdir: str, kind: str, cache_dir: str) -> dict[str, Any]:
    from agent.runtime.embeddings import SentenceTransformerEmbeddings
    from searchers.dense_faiss import DenseConfig, FaissDenseIndex

    passages = synthetic_passages(n)
    queries = synthetic_queries(passages, n_queries)
    vectors, embed_s = cached_vectors(Path(cache_dir), n, lambda m: None)
    embeddings = SentenceTransformerEmbeddings(MODEL)
    embeddings.embed_query("load the model before measuring")
    store = {p.id: p for p in passages}
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    index = FaissDenseIndex(DenseConfig(dimension=vectors.shape[1], kind=kind), embeddings, store)
    index.add(passages, vectors=vectors)
    add_s = time.perf_counter() - t0
    index.save(Path(workdir) / "dense")
    query_vectors = list(embeddings.embed_array(queries))
    result: dict[str, Any] = {
        "backend": f"dense (FAISS {kind})",
        "n": n,
        "embed_s": round(embed_s, 1),
        "embed_rate": round(n / embed_s, 1),
        "index_s": round(add_s, 2),
        "build_s": round(embed_s + add_s, 1),
        "disk_mb": round(_du_mb(Path(workdir) / "dense"), 1),
        "query": _latency(lambda q: index.retrieve(q, 10), queries),
        "search_only": _latency(lambda v: index.retrieve_vector(v, 10), query_vectors),
        "rss_before_mb": round(rss_before, 0),
        "peak_rss_mb": round(_peak_mb(), 0),
    }
    if kind == "hnsw":
        exact = np.argsort(-(np.stack(query_vectors) @ vectors.T), axis=1)[:, :10]
        ids = index.ids()
        exact_ids = [{ids[j] for j in row} for row in exact]

        def recall_at_10(ef: int | None = None) -> float:
            found = [
                len(exact_ids[i] & {h.id for h in index.retrieve_vector(v, 10, ef_search=ef)}) / 10
                for i, v in enumerate(query_vectors)
            ]
            return round(float(np.mean(found)), 4)

        result["recall10_vs_exact"] = recall_at_10()
        sweep = []
        for ef in EF_SEARCH_SWEEP:  # the same graph, searched wider
            latency = _latency(
                lambda v, ef=ef: index.retrieve_vector(v, 10, ef_search=ef), query_vectors
            )
            sweep.append({"ef_search": ef, "recall10": recall_at_10(ef), **latency})
        result["ef_search_sweep"] = sweep
    result["loadavg_1m"] = round(os.getloadavg()[0], 2)
    return result


def _run_query_embedding(n_queries: int) -> dict[str, Any]:
    """Latency of embedding one query, with torch's default thread count and with one thread:
    on a busy 2-core machine torch's thread pool can be far slower than a single thread."""
    import torch

    from agent.runtime.embeddings import SentenceTransformerEmbeddings

    embeddings = SentenceTransformerEmbeddings(MODEL)
    queries = synthetic_queries(synthetic_passages(SHARD), n_queries)
    default_threads = torch.get_num_threads()
    out: dict[str, Any] = {"backend": "query embedding only", "rows": []}
    for threads in dict.fromkeys((default_threads, 1)):
        torch.set_num_threads(threads)
        out["rows"].append({"threads": threads, **_latency(embeddings.embed_query, queries)})
    out["loadavg_1m"] = round(os.getloadavg()[0], 2)
    return out


def _child(target: str, args: tuple[Any, ...], queue: Any) -> None:
    try:
        queue.put(("ok", globals()[target](*args)))
    except BaseException as exc:  # report, do not hang the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


def run_isolated(target: str, *args: Any, timeout_s: float = 3600) -> dict[str, Any]:
    """Run one configuration in a fresh process so its peak RSS is its own."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(target, args, queue))
    proc.start()
    try:
        status, payload = queue.get(timeout=timeout_s)
    finally:
        proc.join(timeout=60)
        if proc.is_alive():
            proc.terminate()
    if status != "ok":
        raise RuntimeError(f"{target}{args[:1]} failed: {payload}")
    return payload


# --------------------------------------------------------------------------- recall


def gold_titles(row: dict[str, Any]) -> set[str]:
    facts = row.get("supporting_facts") or row.get("metadata", {}).get("supporting_facts")
    return set(facts["title"])


def run_recall(label: str, rel: str, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    from agent.indexing import build_progress
    from agent.runtime.embeddings import SentenceTransformerEmbeddings
    from searchers.index_build import SourceSpec, build_index
    from searchers.index_dir import IndexDir

    source = SHARED / rel
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line]
    embeddings = SentenceTransformerEmbeddings(MODEL)
    index_path = workdir / f"recall-{source.stem}"
    t0 = time.perf_counter()
    log(f"{label}: building an index of {source.name}")
    with build_progress() as progress:  # bars on a terminal, lines in a log
        report = build_index(
            index_path,
            [SourceSpec(source)],
            embeddings=embeddings,
            embedding_model=MODEL,
            progress=progress,
        )
    build_s = time.perf_counter() - t0
    log(f"{label}: built {report.total} passages in {build_s:.1f}s")
    index = IndexDir.open(index_path)
    titles_in_corpus = {p.title for p in index.passages().values()}
    kmax = max(RECALL_KS)
    out: dict[str, Any] = {
        "dataset": label,
        "file": rel,
        "questions": len(rows),
        "passages": report.total,
        "build_s": round(build_s, 1),
        "gold_titles_missing_from_corpus": sum(
            len(gold_titles(r) - titles_in_corpus) for r in rows
        ),
        "retrievers": {},
    }
    for kind in ("sparse", "dense", "hybrid"):
        retriever = index.retriever(kind, embeddings=embeddings, model=MODEL)
        recall = {k: [] for k in RECALL_KS}
        both = {k: [] for k in RECALL_KS}
        samples = []
        for row in rows:
            gold = gold_titles(row)
            t = time.perf_counter()
            hits = retriever.retrieve(row["question"], kmax)
            samples.append(time.perf_counter() - t)
            for k in RECALL_KS:
                found = {h.title for h in hits[:k]} & gold
                recall[k].append(len(found) / len(gold))
                both[k].append(float(found == gold))
        out["retrievers"][kind] = {
            "recall": {k: round(float(np.mean(v)), 4) for k, v in recall.items()},
            "both": {k: round(float(np.mean(v)), 4) for k, v in both.items()},
            "latency": _percentiles(samples),
        }
        log(f"{label} {kind}: " + ", ".join(f"R@{k}={np.mean(recall[k]):.3f}" for k in RECALL_KS))
    return out


# --------------------------------------------------------------------------- report


def render_markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Retrieval benchmark",
        "",
        f"Run {results['started']} on {results['machine']}; "
        f"embedding model {MODEL}; see benchmarks/retrieval_bench.py for the method.",
        "",
    ]
    if results.get("scale"):
        lines += [
            "## Build, latency and memory (synthetic pseudo-text, k=10)",
            "",
            "| index | passages | build s | of which embedding s (passages/s) | FAISS add s "
            "| disk MB | query p50 ms | query p95 ms | search-only p50 / p95 ms "
            "| rss before MB | peak RSS MB | recall@10 vs exact | load 1m |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in results["scale"]:
            dense = "embed_s" in r
            embed = f"{r['embed_s']} ({r['embed_rate']})" if dense else "-"
            add = str(r["index_s"]) if dense else "-"
            search = (
                f"{r['search_only']['p50_ms']} / {r['search_only']['p95_ms']}" if dense else "-"
            )
            lines.append(
                f"| {r['backend']} | {r['n']:,} | {r['build_s']} | {embed} | {add} "
                f"| {r['disk_mb']} | {r['query']['p50_ms']} | {r['query']['p95_ms']} | {search} "
                f"| {r['rss_before_mb']:.0f} | {r['peak_rss_mb']:.0f} "
                f"| {r.get('recall10_vs_exact', '-')} | {r.get('loadavg_1m', '-')} |"
            )
        lines += [
            "",
            "Dense query latency includes embedding the query with the model on CPU; "
            "peak RSS = ru_maxrss of a fresh process per row (includes the Python runtime, "
            "and for dense rows torch + the model + the cached vectors). "
            "load 1m = the machine's 1-minute load average when the row finished "
            "(2 cores: above 2 means other processes competed for the CPU).",
            "",
        ]
        sweeps = [r for r in results["scale"] if r.get("ef_search_sweep")]
        if sweeps:
            lines += [
                "### HNSW efSearch (M=32, efConstruction=80, default efSearch 256): "
                "recall@10 against exact search",
                "",
                "| passages | efSearch | recall@10 | search p50 ms | search p95 ms |",
                "|---:|---:|---:|---:|---:|",
            ]
            for r in sweeps:
                for point in r["ef_search_sweep"]:
                    lines.append(
                        f"| {r['n']:,} | {point['ef_search']} | {point['recall10']} "
                        f"| {point['p50_ms']} | {point['p95_ms']} |"
                    )
            lines.append("")
    qe = results.get("query_embedding")
    if qe:
        lines += [
            "### Embedding one query (all-MiniLM-L6-v2, CPU)",
            "",
            "| torch threads | p50 ms | p95 ms |",
            "|---:|---:|---:|",
            *(f"| {r['threads']} | {r['p50_ms']} | {r['p95_ms']} |" for r in qe["rows"]),
            "",
            f"(load average {qe['loadavg_1m']} on {os.cpu_count()} cores when measured)",
            "",
        ]
    for rec in results.get("recall", []):
        lines += [
            f"## Gold-paragraph recall: {rec['dataset']} open corpus "
            f"({rec['questions']} questions, {rec['passages']:,} passages, raw question as query)",
            "",
            "| retriever | "
            + " | ".join(f"R@{k}" for k in RECALL_KS)
            + " | "
            + " | ".join(f"both@{k}" for k in RECALL_KS)
            + " | latency p50 / p95 ms |",
            "|---|" + "---:|" * (2 * len(RECALL_KS) + 1),
        ]
        for kind, r in rec["retrievers"].items():
            lines.append(
                f"| {kind} | "
                + " | ".join(f"{r['recall'][k]:.3f}" for k in RECALL_KS)
                + " | "
                + " | ".join(f"{r['both'][k]:.3f}" for k in RECALL_KS)
                + f" | {r['latency']['p50_ms']} / {r['latency']['p95_ms']} |"
            )
        lines += [
            "",
            f"Index build (ingest + BM25 + embedding + FAISS) {rec['build_s']} s. "
            f"Gold titles absent from the corpus: {rec['gold_titles_missing_from_corpus']}.",
            "",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200, help="latency queries per run")
    parser.add_argument(
        "--cache-dir", type=Path, default=Path.home() / ".cache" / "hoptree" / "bench"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--no-hnsw", action="store_true")
    parser.add_argument("--embed-only", action="store_true", help="fill the vector cache, exit")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    if args.embed_only:
        cached_vectors(args.cache_dir, max(args.sizes), log)
        return 0
    results: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "model": MODEL,
        "queries": args.queries,
        "scale": [],
        "recall": [],
    }
    workroot = Path(tempfile.mkdtemp(prefix="hoptree-bench-"))
    try:
        if not args.skip_scale:
            cached_vectors(args.cache_dir, max(args.sizes), log)
            for n in sorted(args.sizes):
                for kind in ("sparse", "flat", "hnsw"):
                    if kind == "hnsw" and args.no_hnsw:
                        continue
                    work = workroot / f"{kind}-{n}"
                    work.mkdir()
                    if kind == "sparse":
                        row = run_isolated("_run_sparse", n, args.queries, str(work))
                    else:
                        row = run_isolated(
                            "_run_dense", n, args.queries, str(work), kind, str(args.cache_dir)
                        )
                    log(json.dumps(row))
                    results["scale"].append(row)
                    shutil.rmtree(work, ignore_errors=True)
            results["query_embedding"] = run_isolated("_run_query_embedding", args.queries)
            log(json.dumps(results["query_embedding"]))
        if not args.skip_recall:
            for label, rel in RECALL_SETS:
                results["recall"].append(run_recall(label, rel, workroot, log))
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(results)
    (args.out / "retrieval.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "retrieval.md").write_text(markdown + "\n")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
