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
it stopped, and a chunk its folder already holds starts no child run. A peer that is not
installed is skipped with its install step printed.

``report``: ``benchmarks/results/peers.json`` and ``.md`` from the committed rows, no model call
(``evals.peer_scores``): per slice and peer, the peer's F1 and EM, hoptree's default F1 on the
same questions, the paired difference (hoptree minus peer) with its 95% bootstrap interval and
hoptree's wins and losses, the peer's median seconds, calls and prompt tokens; and the plumbing
check, ``peer-standard`` (FlashRAG's one-call RAG) against hoptree's ``bm25``; and ``peers.png``,
the paired differences drawn, one panel a fresh slice.

``why``: ``benchmarks/results/peers-why.md``, the questions each peer scored above hoptree's
default, sorted by why (``evals.peer_wins``: the plan changed a right draft, a wrong span, a gold
paragraph the peer read and hoptree did not, or a misreading), with their ids to read.

Slices: today's report slices (``hotpotqa_b``, ``2wiki``, ``musique``; read while hoptree's
planner was designed, so they flatter hoptree) and the fresh ones nobody has read
(``fresh/hotpotqa``, ``fresh/2wiki``, ``fresh/musique``; drawn by ``evals/data/fresh/draw.py``
into the checkout, uncommitted), the fair comparison.

    python benchmarks/peers.py run --slices hotpotqa_b --limit 50 --chunk 5 --concurrency 2
    python benchmarks/peers.py report
    python benchmarks/peers.py why
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.catalogue import get_pipeline
from evals.peer_scores import (
    FRESH,
    ONE_CALL,
    PEERS_FOLDER,
    SLICES,
    peer_scores,
    peers_markdown,
    peers_plot,
)
from evals.peer_wins import wins_markdown, wins_of
from evals.peers import PeerMissingError
from evals.report import details_or_none
from evals.suite import CHAINS_SUITE, PEERS_LIMIT, PEERS_STAGE, SuiteRun, missing_dataset_files

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "evals" / "results" / PEERS_FOLDER
OUT = ROOT / "benchmarks" / "results" / "peers.json"


# --------------------------------------------------------------------------- run


def pipelines_to_run(names: Sequence[str] | None) -> list[str]:
    """The chains suite's peers stage (hoptree's two runs and every peer), or ``names``; the
    peers that are not installed are named and left out."""
    wanted = list(names) if names else list(CHAINS_SUITE.stages[PEERS_STAGE].pipelines)
    ready = []
    for name in wanted:
        try:
            get_pipeline(name)
        except PeerMissingError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
            continue
        ready.append(name)
    return ready


def run_of(key: str) -> SuiteRun:
    part = CHAINS_SUITE.slices[key]
    return SuiteRun(key, ONE_CALL, PEERS_LIMIT, part.offset, part.file, PEERS_FOLDER)


def run_args(
    key: str, pipeline: str, upto: int, concurrency: int, batch: str | None = None
) -> list[str]:
    """The child ``hoptree eval run`` of one chunk; ``batch`` labels its rows (the chunk of this
    invocation, the same for every pipeline: rows made beside each other)."""
    part = CHAINS_SUITE.slices[key]
    labelled = ["--batch", batch] if batch else []
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
        *labelled,
    ]


def rows_written(folder: Path) -> int:
    """The questions a run folder has finished, read as every report reads its rows
    (``evals.report``: a torn last line, left by a kill mid-write, does not count; a damaged
    file counts none, so the child run starts and says what is wrong with it)."""
    return len(details_or_none(folder) or [])


def run(args: argparse.Namespace) -> int:
    pipelines = pipelines_to_run(args.pipelines)
    hoptree = str(Path(sys.executable).with_name("hoptree"))
    started = datetime.now(UTC).isoformat(timespec="microseconds")  # this invocation
    for n, upto in enumerate(range(args.chunk, args.limit + args.chunk, args.chunk)):
        upto = min(upto, args.limit)
        turn = n % len(pipelines)
        order = pipelines[turn:] + pipelines[:turn]  # who goes first rotates
        for key in args.slices:
            missing = missing_dataset_files([run_of(key)], DATA)
            if missing:
                print(f"{key}: no question file {missing[0]}", file=sys.stderr)
                return 2
            for pipeline in order:
                if rows_written(RESULTS / key / pipeline) >= upto:
                    continue  # a finished chunk: no child run (each costs seconds to start)
                batch = f"{started} {key} {upto}"  # this invocation's chunk of this slice
                command = [hoptree, *run_args(key, pipeline, upto, args.concurrency, batch)]
                print(f"== {key} {pipeline} up to {upto}", file=sys.stderr, flush=True)
                code = subprocess.call(command)
                if code != 0:
                    print(f"{key} {pipeline}: exit {code}", file=sys.stderr)
                    if code == 2:  # bad input: the same command fails every time
                        return code
    return 0


# --------------------------------------------------------------------------- report


def write_report(args: argparse.Namespace) -> int:
    data = peer_scores(args.results)
    text = peers_markdown(data)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    # the fair comparison only: the former report slices' peers ran on 5 questions
    picture = peers_plot(data, args.out.with_suffix(".png"), FRESH)
    print(text)
    if picture is not None:
        print(f"the picture: {picture}")
    return 0


def write_why(args: argparse.Namespace) -> int:
    text = wins_markdown(wins_of(args.results))
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run", help="run the comparison, interleaved and resumable")
    runner.add_argument("--slices", nargs="+", default=list(SLICES), choices=SLICES)
    runner.add_argument("--pipelines", nargs="+", help="default: draft-first, bm25, every peer")
    runner.add_argument("--limit", type=int, default=PEERS_LIMIT)
    runner.add_argument("--chunk", type=int, default=5)
    runner.add_argument("--concurrency", type=int, default=1)
    reporter = sub.add_parser("report", help="peers.json and peers.md from the committed rows")
    reporter.add_argument("--results", type=Path, default=RESULTS)
    reporter.add_argument("--out", type=Path, default=OUT)
    why = sub.add_parser("why", help="peers-why.md: the questions each peer won, by class")
    why.add_argument("--results", type=Path, default=RESULTS)
    why.add_argument("--out", type=Path, default=OUT.with_name("peers-why.md"))
    args = parser.parse_args(argv)
    if args.command == "why":
        return write_why(args)
    if args.command == "run":
        if args.limit < 1 or args.chunk < 1:
            parser.error("--limit and --chunk must be >= 1")
        return run(args)
    return write_report(args)


if __name__ == "__main__":
    raise SystemExit(main())
