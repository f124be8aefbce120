"""hoptree's default against the peers (FlashRAG's IRCoT, Iter-RetGen, Self-Ask and standard RAG,
a DSPy multi-hop program, LangGraph's ReAct agent) on the same questions, model and index.

Two commands:

``run``: the runs of the comparison, interleaved. Every pipeline of the comparison (hoptree's
``draft-first``, one-call ``bm25``, and each installed peer) runs on the same questions of each
report slice, in chunks: questions 1-5 of every pipeline, then 6-10 of every pipeline (the order
of the pipelines rotating from chunk to chunk), and so on. So each pipeline's seconds were taken
on the same machine in the same hour as the others', the only way seconds compare; and a session
that stops leaves every pipeline at about the same question. Each chunk is a child ``hoptree eval
run`` on ``evals/results/peers/<slice>/<pipeline>``, resumable: the same command goes on where
it stopped. A peer that is not installed is skipped with its install step printed.

``report``: ``benchmarks/results/peers.json`` and ``.md`` from the committed rows, no model call.
Per slice and peer: the peer's F1 and EM, hoptree's default F1 on the same questions, the
paired difference (hoptree minus peer) with its 95% bootstrap interval and hoptree's wins and
losses, the peer's median seconds, calls and prompt tokens. ``peer-standard`` (FlashRAG's
one-call RAG) is paired with hoptree's own one-call ``bm25`` on the same retriever: the check
that the plumbing is equal, reported first.

    python benchmarks/peers.py run --slices hotpotqa_b --limit 50 --chunk 5 --concurrency 2
    python benchmarks/peers.py report
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.catalogue import get_pipeline
from evals.paired import DEFAULT_RESAMPLES, DEFAULT_SEED, paired_diff
from evals.peers import PEERS, PeerMissingError
from evals.report import ReportError, read_details
from evals.suite import CHAINS_SUITE

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "evals" / "results" / "peers"
OUT = ROOT / "benchmarks" / "results" / "peers.json"
SLICES = ("hotpotqa_b", "2wiki", "musique")
HOPTREE = "draft-first"  # hoptree's default
ONE_CALL = "bm25"  # hoptree's one-call RAG on the peers' retriever
PLUMBING_PEER = "peer-standard"
DEFAULT_LIMIT = 50


# --------------------------------------------------------------------------- run


def pipelines_to_run(names: Sequence[str] | None) -> list[str]:
    """hoptree's two runs and every installed peer (or ``names``); missing peers are named."""
    wanted = list(names) if names else [HOPTREE, ONE_CALL, *PEERS]
    ready = []
    for name in wanted:
        try:
            get_pipeline(name)
        except PeerMissingError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
            continue
        ready.append(name)
    return ready


def run_args(key: str, pipeline: str, upto: int, concurrency: int) -> list[str]:
    part = CHAINS_SUITE.slices[key]
    return [
        "eval",
        "run",
        "--dataset",
        str(DATA / part.file),
        "--setting",
        "open",
        "--pipeline",
        pipeline,
        "--offset",
        str(part.offset),
        "--limit",
        str(upto),
        "--concurrency",
        str(concurrency),
        "--out",
        str(RESULTS / key / pipeline),
    ]


def run(args: argparse.Namespace) -> int:
    pipelines = pipelines_to_run(args.pipelines)
    hoptree = str(Path(sys.executable).with_name("hoptree"))
    for n, upto in enumerate(range(args.chunk, args.limit + args.chunk, args.chunk)):
        upto = min(upto, args.limit)
        turn = n % len(pipelines)
        order = pipelines[turn:] + pipelines[:turn]  # who goes first rotates
        for key in args.slices:
            for pipeline in order:
                command = [hoptree, *run_args(key, pipeline, upto, args.concurrency)]
                print(f"== {key} {pipeline} up to {upto}", file=sys.stderr, flush=True)
                code = subprocess.call(command)
                if code != 0:
                    print(f"{key} {pipeline}: exit {code}", file=sys.stderr)
                    if code == 2:  # bad input: the same command fails every time
                        return code
    return 0


# --------------------------------------------------------------------------- report


def rows_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    try:
        return {str(r["id"]): r for r in read_details(run_dir)}
    except ReportError:
        return {}


def _median(values: Sequence[float]) -> float | None:
    return round(float(statistics.median(values)), 2) if values else None


def _mean(rows: Sequence[Mapping[str, Any]], key: str) -> float:
    return round(100.0 * statistics.fmean(float(r.get(key) or 0.0) for r in rows), 2)


def pair(
    hoptree: Mapping[str, Mapping[str, Any]],
    peer: Mapping[str, Mapping[str, Any]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any] | None:
    """hoptree minus the peer on the questions both answered (the issue's ``peers.json`` row)."""
    ids = sorted(hoptree.keys() & peer.keys())
    if not ids:
        return None
    ours = {i: float(hoptree[i]["f1"]) for i in ids}
    theirs = {i: float(peer[i]["f1"]) for i in ids}
    diff = paired_diff(ours, theirs, resamples=resamples, seed=seed)
    peer_rows = [peer[i] for i in ids]
    return {
        "n": len(ids),
        "f1": _mean(peer_rows, "f1"),
        "em": _mean(peer_rows, "em"),
        "hoptree_f1": _mean([hoptree[i] for i in ids], "f1"),
        "delta": round(diff.mean, 2),
        "ci_low": round(diff.low, 2),
        "ci_high": round(diff.high, 2),
        "wins": diff.wins,
        "losses": diff.losses,
        "median_s": _median([float(r["seconds"]) for r in peer_rows]),
        "hoptree_median_s": _median([float(hoptree[i]["seconds"]) for i in ids]),
        "median_calls": _median([float(r["llm_calls"]) for r in peer_rows]),
        "median_prompt_tokens": _median([float(r["prompt_tokens"]) for r in peer_rows]),
        "errors": sum(1 for r in peer_rows if r.get("error")),
    }


def report(results: Path = RESULTS) -> dict[str, Any]:
    """Every slice folder under ``results``: each peer against hoptree's default, and the
    plumbing check (``peer-standard`` against ``bm25``)."""
    out: dict[str, Any] = {}
    for key in SLICES:
        folder = results / key
        if not folder.is_dir():
            continue
        hoptree = rows_of(folder / HOPTREE)
        entry: dict[str, Any] = {}
        for run_dir in sorted(p for p in folder.iterdir() if p.name.startswith("peer-")):
            row = pair(hoptree, rows_of(run_dir))
            if row is not None:
                entry[run_dir.name] = row
        plumbing = pair(rows_of(folder / ONE_CALL), rows_of(folder / PLUMBING_PEER))
        if plumbing is not None:
            entry["plumbing"] = {"against": ONE_CALL, "peer": PLUMBING_PEER, **plumbing}
        if entry:
            out[key] = entry
    return out


def markdown(data: Mapping[str, Any]) -> str:
    lines = [
        "# hoptree's default against the peers",
        "",
        "Written by `python benchmarks/peers.py report` from `evals/results/peers/<slice>/` "
        "(no model call). Δ is hoptree's default (`draft-first`) minus the peer, in F1 points, "
        "on the questions both answered, with the paired 95% bootstrap interval; W/L are "
        "hoptree's wins and losses. Every run of a slice was made interleaved in the same "
        "session (5 questions of each pipeline in turn), so seconds compare within a slice.",
        "",
    ]
    for key, entry in data.items():
        lines += [f"## {key}", ""]
        plumbing = entry.get("plumbing")
        if plumbing:
            lines += [
                f"Plumbing check: hoptree's `{plumbing['against']}` minus `{plumbing['peer']}` "
                f"(the same retriever, one call each) on {plumbing['n']} questions: "
                f"{plumbing['delta']:+.1f} [{plumbing['ci_low']:+.1f}, {plumbing['ci_high']:+.1f}]"
                f", W/L {plumbing['wins']}/{plumbing['losses']}.",
                "",
            ]
        lines += [
            "| peer | n | peer F1 | peer EM | hoptree F1 | Δ [95% CI] | W/L | median s "
            "(peer / hoptree) | median calls | median prompt tokens | errors |",
            "|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|",
        ]
        for name, r in entry.items():
            if name == "plumbing":
                continue
            lines.append(
                f"| {name} | {r['n']} | {r['f1']:.1f} | {r['em']:.1f} | {r['hoptree_f1']:.1f} "
                f"| {r['delta']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}] "
                f"| {r['wins']}/{r['losses']} | {r['median_s']} / {r['hoptree_median_s']} "
                f"| {r['median_calls']} | {r['median_prompt_tokens']} | {r['errors']} |"
            )
        lines.append("")
    return "\n".join(lines)


def write_report(args: argparse.Namespace) -> int:
    data = report(args.results)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(data), encoding="utf-8")
    print(markdown(data))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run", help="run the comparison, interleaved and resumable")
    runner.add_argument("--slices", nargs="+", default=list(SLICES), choices=SLICES)
    runner.add_argument("--pipelines", nargs="+", help="default: draft-first, bm25, every peer")
    runner.add_argument("--limit", type=int, default=DEFAULT_LIMIT)
    runner.add_argument("--chunk", type=int, default=5)
    runner.add_argument("--concurrency", type=int, default=1)
    reporter = sub.add_parser("report", help="peers.json and peers.md from the committed rows")
    reporter.add_argument("--results", type=Path, default=RESULTS)
    reporter.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.limit < 1 or args.chunk < 1:
            parser.error("--limit and --chunk must be >= 1")
        return run(args)
    return write_report(args)


if __name__ == "__main__":
    raise SystemExit(main())
