"""Embedding backends compared on the same texts: throughput, query latency, recall.

Run on an idle machine (the numbers are the point):
    .venv/bin/python benchmarks/embedding_bench.py          (~45 min, half of it the 100k build)
    .venv/bin/python benchmarks/embedding_bench.py --sections throughput queries recall
    .venv/bin/python benchmarks/embedding_bench.py --sections scale --scale 100000
Results go to benchmarks/results/embeddings.{md,json,png}.

What is measured, per backend (torch = sentence-transformers on PyTorch, the old default;
onnx = our ONNX export in fp32; onnx-int8 = the same graph with int8 weights, the new default):
- passages/s embedding the HotpotQA ``_a`` open corpus (its 2,966 paragraphs as the index embeds
  them: title + text), through the ``Embeddings`` object the index build uses, after a warm-up;
- passages/s on the first N synthetic passages of ``retrieval_bench`` (the same pseudo-text
  corpus whose 100k took 4,298 s with torch in benchmarks/results/retrieval.md); torch runs on
  the first ``--torch-synthetic`` of them only (an hour for 100k), the same texts as the start
  of the others' run;
- for onnx-int8: batch sizes, and length buckets against batches in corpus order;
- query embedding latency (p50/p95 of single queries, 10 warm-ups);
- dense and hybrid gold recall@5/@10 on HotpotQA ``_a`` and 2Wiki, each index built by
  ``build_index`` with that backend (its build time is recorded too), plus the cross case: an
  index built with torch searched with onnx-int8 query vectors (what a user whose index predates
  the new default gets).

Why one file of this length: a benchmark is run as one script, and its backends, timings and
report read one configuration; none of it is imported by the package.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.progress import stage_progress  # noqa: E402
from benchmarks.retrieval_bench import (  # noqa: E402
    SHARED,
    _latency,
    gold_titles,
    synthetic_passages,
    synthetic_queries,
)

BACKENDS = ("torch", "onnx", "onnx-int8")
MODEL = "all-MiniLM-L6-v2"
RECALL_SETS = (
    ("HotpotQA dev_hard_300_a", "hotpotqa/dev_hard_300_a.jsonl"),
    ("2Wiki dev_first100", "2wikimultihopqa/dev_first100_flashrag.jsonl"),
)
RECALL_KS = (5, 10)
BATCH_SIZES = (8, 16, 32, 64)
THREADS = (0, 1)  # 0: ONNX Runtime's choice, one per core
# benchmarks/results/retrieval.md: 100k of the same synthetic passages embedded with torch
OLD_TORCH_100K_S = 4298


def _no_progress(label: str, done: int, total: int) -> None:
    pass


PROGRESS: Callable[[str, int, int], None] = _no_progress  # main() sets it for the run


def make(backend: str, batch_size: int | None = None, threads: int | None = None) -> Any:
    from agent.runtime.embeddings import make_embeddings
    from agent.settings import EmbeddingSettings, load_settings

    settings = load_settings()
    cfg = EmbeddingSettings(model=MODEL, backend=backend)  # the defaults, unless swept
    if batch_size is not None:
        cfg.batch_size = batch_size
    if threads is not None:
        cfg.threads = threads
    return make_embeddings(cfg, settings.models_dir)


def corpus_texts(rel: str) -> list[str]:
    """The open corpus of a question file as the index embeds it (title + text)."""
    from searchers.corpus import read_passages, resolve_format
    from searchers.dense_faiss import passage_embedding_text

    source = SHARED / rel
    fmt = resolve_format(source, "auto")
    return [passage_embedding_text(p) for p in read_passages(source, fmt)]


def throughput(
    embed: Callable[[list[str]], Any], texts: list[str], label: str = "", chunk: int = 256
) -> float:
    """Passages per second, fed in the index build's chunks of 256 (after a small warm-up);
    ``label`` names its progress (a bar on a terminal, lines in a log)."""
    embed(texts[:32])
    t0 = time.perf_counter()
    for start in range(0, len(texts), chunk):
        embed(texts[start : start + chunk])
        if label:
            PROGRESS(label, min(start + chunk, len(texts)), len(texts))
    return len(texts) / (time.perf_counter() - t0)


def section_throughput(log: Callable[[str], None], synthetic: int, torch_n: int) -> dict:
    from searchers.dense_faiss import passage_embedding_text

    hotpot = corpus_texts(RECALL_SETS[0][1])
    syn = [passage_embedding_text(p) for p in synthetic_passages(synthetic)]
    out: dict[str, Any] = {"hotpot_passages": len(hotpot), "synthetic": {}, "hotpot": {}}
    for backend in BACKENDS:
        emb = make(backend)
        emb.embed_array(["load and, once, export"])
        rate = throughput(emb.embed_array, hotpot, f"hotpot {backend}")
        out["hotpot"][backend] = round(rate, 1)
        log(f"hotpot {backend}: {rate:.1f} passages/s")
        n = min(torch_n, synthetic) if backend == "torch" else synthetic
        rate = throughput(emb.embed_array, syn[:n], f"synthetic {backend}")
        out["synthetic"][backend] = {"passages": n, "per_s": round(rate, 1)}
        log(f"synthetic {n} {backend}: {rate:.1f} passages/s")
        if backend != "torch" and n > torch_n:  # the torch run's texts, for a like-for-like rate
            rate = throughput(emb.embed_array, syn[:torch_n])
            out["synthetic"][backend]["first_n_per_s"] = round(rate, 1)
    out["synthetic_first_n"] = min(torch_n, synthetic)
    # batch size and threads, and length buckets, for the default backend (first 1,000 texts)
    sweep = {}
    for size in BATCH_SIZES:
        for threads in THREADS:
            emb = make("onnx-int8", batch_size=size, threads=threads)
            key = f"batch {size}, threads {threads or 'auto'}"
            sweep[key] = round(throughput(emb.embed_array, hotpot[:1000]), 1)
            log(f"onnx-int8 {key}: {sweep[key]} passages/s")
    out["batch_sweep"] = sweep
    emb = make("onnx-int8")  # the defaults, with and without length buckets
    size = emb.batch_size

    def corpus_order(texts: list[str]) -> Any:  # one call per batch: no reordering across it
        return [emb.embed_array(texts[i : i + size]) for i in range(0, len(texts), size)]

    out["default_batch"] = size
    out["bucketed_per_s"] = round(throughput(emb.embed_array, hotpot[:1000]), 1)
    out["unbucketed_per_s"] = round(throughput(corpus_order, hotpot[:1000]), 1)
    log(f"onnx-int8 defaults: {out['bucketed_per_s']} bucketed, {out['unbucketed_per_s']} not")
    return out


def section_scale(log: Callable[[str], None], n: int, workdir: Path) -> dict:
    """A whole ``hoptree index build`` of ``n`` synthetic passages with the default backend:
    reading, tantivy, embedding and FAISS, as a user runs it (its progress on stderr)."""
    from agent.indexing import build_progress
    from searchers.index_build import SourceSpec, build_index

    source = workdir / f"synthetic-{n}.jsonl"
    with source.open("w", encoding="utf-8") as fh:
        for p in synthetic_passages(n):
            fh.write(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n")
    emb = make("onnx-int8")
    emb.embed_array(["load and, once, export"])
    ends: dict[str, float] = {}  # stage -> time of its last progress event, in stage order

    def timed(progress: Callable[[str, int, int], None]) -> Callable[[str, int, int], None]:
        def update(stage: str, done: int, total: int) -> None:
            ends[stage] = time.perf_counter()
            progress(stage, done, total)

        return update

    t0 = time.perf_counter()
    with build_progress() as progress:  # bars on a terminal, lines in a log
        report = build_index(
            workdir / "scale-index",
            [SourceSpec(source)],
            embeddings=emb,
            embedding_model=MODEL,
            progress=timed(progress),
        )
    took = time.perf_counter() - t0
    stages, start = {}, t0
    for stage, end in ends.items():
        stages[stage] = round(end - start, 1)
        start = end
    stages["commit"] = round(t0 + took - start, 1)  # FAISS save, manifest
    log(f"index build of {report.total} synthetic passages: {took:.0f}s, stages {stages}")
    return {
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "passages": report.total,
        "seconds": round(took, 1),
        "per_s": round(report.total / took, 1),
        "stages_s": stages,
    }


def scale_runs(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The whole-build rows, smallest first (older files hold one row, not keyed by size)."""
    sc = results.get("scale") or {}
    rows = [sc] if "passages" in sc else list(sc.values())
    return sorted(rows, key=lambda r: r["passages"])


# Which int8 MatMuls stay in fp32, per variant (node-name substrings of our export's graph).
PRECISION_VARIANTS = {
    "all int8 (default)": (),
    "layer 0 fp32": ("/layer.0/",),
    "layers 0 and 5 fp32": ("/layer.0/", "/layer.5/"),
    "FFN and attention outputs fp32": ("output/dense",),
}
PRECISION_TEXTS = 2000


def section_precision(log: Callable[[str], None], workdir: Path) -> dict:
    """How much of int8's recall gap a few fp32 layers buy back, and at what speed.

    Each variant quantizes our fp32 export with some MatMuls left out, then embeds the first
    ``PRECISION_TEXTS`` HotpotQA passages (best of three, passages/s), compares the vectors
    with fp32's (cosine: mean, 5th percentile), and measures dense and hybrid gold recall on
    both question sets as ``section_recall`` does."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from agent.runtime.embeddings import resolve_model_path
    from agent.runtime.onnx_embeddings import OnnxEmbeddings
    from agent.runtime.onnx_export import ensure_export
    from searchers.index_build import SourceSpec, build_index
    from searchers.index_dir import IndexDir

    model_path = resolve_model_path(MODEL)
    fp32 = OnnxEmbeddings(model_path, workdir / "precision-fp32", variant="onnx")
    fp32_file = ensure_export(fp32.layout, workdir / "precision-fp32", "onnx")
    names = [n.name for n in onnx.load(str(fp32_file)).graph.node if n.op_type == "MatMul"]
    texts = corpus_texts("hotpotqa/dev_hard_300_a.jsonl")[:PRECISION_TEXTS]
    reference = fp32.embed_array(texts)
    sets = []  # (label, source file, its question rows): read once for every variant
    for label, rel in RECALL_SETS:
        lines = (SHARED / rel).read_text(encoding="utf-8").splitlines()
        sets.append((label, SHARED / rel, [json.loads(line) for line in lines if line]))
    out: dict[str, Any] = {"texts": len(texts)}
    for i, (variant, keep) in enumerate(PRECISION_VARIANTS.items()):
        root = workdir / f"precision-{i}"
        root.mkdir()
        excluded = [n for n in names if any(k in n for k in keep)]
        quantized = root / "model-int8.onnx"  # from the one fp32 export, not one per variant
        quantize_dynamic(
            str(fp32_file),
            str(quantized),
            per_channel=True,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=excluded,
        )
        emb = OnnxEmbeddings(model_path, root, variant="onnx", onnx_file=quantized)
        emb.embed_array(texts[:16])
        best = min(_timed(emb.embed_array, texts) for _ in range(3))
        vectors = emb.embed_array(texts)
        cos = (vectors * reference).sum(axis=1)
        row: dict[str, Any] = {
            "fp32_matmuls": len(excluded),
            "int8_matmuls": len(names) - len(excluded),
            "per_s": round(len(texts) / best, 1),
            "cosine_mean": round(float(cos.mean()), 4),
            "cosine_p5": round(float(np.percentile(cos, 5)), 4),
        }
        for label, source, rows in sets:
            path = root / f"index-{source.stem}"
            build_index(
                path, [SourceSpec(source)], embeddings=emb, embedding_model=MODEL, progress=PROGRESS
            )
            row[label] = _recall(IndexDir.open(path), emb, rows)
        out[variant] = row
        log(f"precision {variant}: {row}")
    return out


def _timed(fn: Callable[[list[str]], Any], texts: list[str]) -> float:
    t0 = time.perf_counter()
    fn(texts)
    return time.perf_counter() - t0


def render_precision(pr: dict[str, Any] | None) -> list[str]:
    if not pr:
        return []
    labels = [label for label, _ in RECALL_SETS]
    short = [lab.split()[0] for lab in labels]
    head = " | ".join(f"{name} dense R@10 | {name} hybrid R@10" for name in short)
    lines = [
        "## Which layers stay fp32: int8 recall bought back, and its price",
        "",
        f"Each variant quantizes the fp32 export with some MatMuls left in fp32. passages/s on "
        f"the first {pr['texts']:,} HotpotQA passages (best of 3); cosine to the fp32 vectors of "
        "the same passages; gold recall as above.",
        "",
        f"| variant | fp32 / int8 MatMuls | passages/s | cosine mean | cosine p5 | {head} |",
        "|---|---|---|---|---|" + "---|" * (2 * len(labels)),
    ]
    for variant, row in pr.items():
        if not isinstance(row, dict):
            continue
        recall = " | ".join(
            f"{row[lab]['dense']['R@10']} | {row[lab]['hybrid']['R@10']}" for lab in labels
        )
        lines.append(
            f"| {variant} | {row['fp32_matmuls']} / {row['int8_matmuls']} | {row['per_s']} | "
            f"{row['cosine_mean']} | {row['cosine_p5']} | {recall} |"
        )
    return [*lines, ""]


def section_queries(log: Callable[[str], None], n_queries: int) -> dict:
    queries = synthetic_queries(synthetic_passages(5000), n_queries)
    out = {}
    for backend in BACKENDS:
        emb = make(backend)
        out[backend] = _latency(emb.embed_query, queries)
        log(f"query {backend}: p50 {out[backend]['p50_ms']} ms")
    return out


def section_recall(log: Callable[[str], None], workdir: Path) -> dict:
    from searchers.index_build import SourceSpec, build_index
    from searchers.index_dir import IndexDir

    out: dict[str, Any] = {}
    for label, rel in RECALL_SETS:
        source = SHARED / rel
        rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
        rows = [r for r in rows if r]
        per: dict[str, Any] = {}
        for backend in BACKENDS:
            emb = make(backend)
            emb.embed_array(["load"])
            path = workdir / f"{source.stem}-{backend}"
            t0 = time.perf_counter()
            report = build_index(
                path, [SourceSpec(source)], embeddings=emb, embedding_model=MODEL, progress=PROGRESS
            )
            built = time.perf_counter() - t0
            per[backend] = {"build_s": round(built, 1), "passages": report.total}
            per[backend].update(_recall(IndexDir.open(path), emb, rows))
            log(f"{label} {backend}: built in {built:.1f}s, {per[backend]}")
        cross = _recall(IndexDir.open(workdir / f"{source.stem}-torch"), make("onnx-int8"), rows)
        per["torch index, onnx-int8 queries"] = cross
        log(f"{label} cross: {cross}")
        out[label] = per
    return out


def _recall(index: Any, emb: Any, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for kind in ("dense", "hybrid"):
        retriever = index.retriever(kind, embeddings=emb, model=MODEL)
        recall: dict[int, list[float]] = {k: [] for k in RECALL_KS}
        for row in rows:
            gold = gold_titles(row)
            hits = retriever.retrieve(row["question"], max(RECALL_KS))
            for k in RECALL_KS:
                recall[k].append(len({h.title for h in hits[:k]} & gold) / len(gold))
        result[kind] = {f"R@{k}": round(100 * float(np.mean(v)), 1) for k, v in recall.items()}
    return result


def render(results: dict[str, Any]) -> str:
    t, q = results.get("throughput"), results.get("queries")
    lines = [
        "# Embedding backends on the same texts",
        "",
        f"Run {results['finished_at']} on {results['machine']} "
        f"(load average at start {results['loadavg_start']}). "
        "Commands (`.venv/bin/python benchmarks/embedding_bench.py ...`), per section: "
        + "; ".join(f"{k}: `{v}`" for k, v in (results.get("commands") or {}).items())
        + ".",
        "",
        "torch = sentence-transformers on PyTorch (the old default); onnx = hoptree's ONNX "
        "export, fp32; onnx-int8 = the same graph with per-channel int8 weights (the default).",
        "",
    ]
    if t:
        torch_rate = t["hotpot"]["torch"]
        n = t["synthetic_first_n"]
        lines += [
            "## Throughput (passages/s, higher is better)",
            "",
            f"| backend | HotpotQA `_a` corpus ({t['hotpot_passages']:,}) | × torch | "
            f"synthetic, first {n:,} | synthetic, all |",
            "|---|---|---|---|---|",
        ]
        for b in BACKENDS:
            s = t["synthetic"][b]
            first = s.get("first_n_per_s", s["per_s"] if s["passages"] == n else "")
            whole = f"{s['per_s']} ({s['passages']:,})" if s["passages"] != n else ""
            lines.append(
                f"| {b} | {t['hotpot'][b]} | {t['hotpot'][b] / torch_rate:.2f} | {first} | "
                f"{whole} |"
            )
        sweep = ", ".join(f"{k}: {v}" for k, v in t["batch_sweep"].items())
        lines += [
            "",
            f"The rows ran at each backend's default batch size at the time ({t['default_batch']} "
            "for onnx-int8); the sweep below is what chose the default.",
            "",
            f"onnx-int8 by batch size and threads (first 1,000 of the HotpotQA corpus, "
            f"length-bucketed): {sweep}. "
            f"At the default batch ({t['default_batch']}), length buckets: "
            f"{t['bucketed_per_s']}, batches in corpus order: {t['unbucketed_per_s']}.",
            "",
        ]
    torch_rate = ((results.get("throughput") or {}).get("synthetic") or {}).get("torch", {})
    for sc in scale_runs(results):
        vs = ""
        if torch_rate.get("per_s"):
            vs = (
                f" torch embedded the first {torch_rate['passages']:,} of the same texts at "
                f"{torch_rate['per_s']} passages/s in the throughput run: "
                f"{sc['per_s'] / torch_rate['per_s']:.1f}× for the whole build."
            )
        when = f" Run {sc['finished_at']}." if sc.get("finished_at") else ""
        lines += [
            f"## A whole index build, {sc['passages']:,} synthetic passages (onnx-int8)",
            "",
            f"{sc['seconds']:,} s, {sc['per_s']} passages/s (stages, s: "
            + ", ".join(f"{k} {v}" for k, v in sc["stages_s"].items())
            + f").{vs} benchmarks/results/retrieval.md recorded {OLD_TORCH_100K_S:,} s for "
            f"embedding 100k of these texts with torch in an earlier run (23 passages/s).{when}",
            "",
        ]
    lines += render_precision(results.get("precision"))
    if q:
        lines += ["## Query embedding latency (single queries)", ""]
        lines += ["| backend | p50 ms | p95 ms |", "|---|---|---|"]
        lines += [f"| {b} | {q[b]['p50_ms']} | {q[b]['p95_ms']} |" for b in BACKENDS]
        lines.append("")
    for label, per in (results.get("recall") or {}).items():
        lines += [
            f"## Gold recall, {label}",
            "",
            "| backend | build s | dense R@5 | dense R@10 | hybrid R@5 | hybrid R@10 |",
            "|---|---|---|---|---|---|",
        ]
        for name, row in per.items():
            d, h = row["dense"], row["hybrid"]
            lines.append(
                f"| {name} | {row.get('build_s', '')} | {d['R@5']} | {d['R@10']} | "
                f"{h['R@5']} | {h['R@10']} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    from matplotlib.figure import Figure

    t = results.get("throughput")
    if not t:
        return
    fig = Figure(figsize=(6, 3))
    ax = fig.add_subplot()
    rates = [t["hotpot"][b] for b in BACKENDS]
    ax.barh(BACKENDS, rates, color=["#999999", "#6a9fd8", "#2b6cb0"])
    for y, rate in enumerate(rates):
        ax.text(rate, y, f" {rate:.0f}/s", va="center")
    ax.set_xlabel("passages/s, HotpotQA _a corpus, 2 CPU cores")
    ax.set_xlim(0, max(rates) * 1.25)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--synthetic", type=int, default=10_000)
    parser.add_argument("--torch-synthetic", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scale", type=int, default=100_000, help="passages of the scale run")
    parser.add_argument(
        "--sections",
        nargs="+",
        default=["throughput", "queries", "recall", "precision", "scale"],
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)

    def log(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)

    out_json = args.out / "embeddings.json"
    results: dict[str, Any] = json.loads(out_json.read_text()) if out_json.is_file() else {}
    results.update(
        argv=list(argv if argv is not None else sys.argv[1:]),
        machine=f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        loadavg_start=round(os.getloadavg()[0], 2),
    )
    global PROGRESS
    with (
        tempfile.TemporaryDirectory(prefix="hoptree-embed-bench-") as tmp,
        stage_progress(every_s=15.0) as PROGRESS,
    ):
        for section in args.sections:
            log(f"section {section}")
            if section == "throughput":
                results[section] = section_throughput(log, args.synthetic, args.torch_synthetic)
            elif section == "scale":
                runs = {str(r["passages"]): r for r in scale_runs(results)}
                runs[str(args.scale)] = section_scale(log, args.scale, Path(tmp))
                results[section] = runs  # one row per size: a 100k run keeps the 10k row
            elif section == "queries":
                results[section] = section_queries(log, args.queries)
            elif section == "recall":
                results[section] = section_recall(log, Path(tmp))
            elif section == "precision":
                results[section] = section_precision(log, Path(tmp))
            else:
                parser.error(f"unknown section {section}")
            results.setdefault("commands", {})[section] = " ".join(results["argv"]) or "(none)"
            results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            args.out.mkdir(parents=True, exist_ok=True)
            out_json.write_text(json.dumps(results, indent=2) + "\n")  # partial results survive
    (args.out / "embeddings.md").write_text(render(results))
    plot(results, args.out / "embeddings.png")
    log(f"wrote {args.out / 'embeddings.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
