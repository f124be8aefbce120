"""The committed evaluation suites: which pipeline runs on which questions, how far each run
got, and the comparison tables over them.

On the local model a planner question costs minutes, so a suite takes many sessions. Every run
is an ordinary resumable ``hoptree eval run`` directory under ``<out>/<slice>/<pipeline>``, and
``hoptree eval suite --run`` runs whatever is unfinished, one run at a time (the embedded model
decodes one request at a time; two runs at once only share the cores), in the order that gives
the cheapest complete comparisons first.

Two suites: ``default`` (the first measurements, ``evals/results/<dataset>``) and ``chains``
(issue 33: held-out report slices, tuning slices and the MuSiQue ablations, in
``evals/results/v4``, LLM cache off; issue 53's draft-first runs on the same slices beside it,
in ``evals/results/v5``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from agent.settings import Settings
from evals.catalogue import PIPELINES
from evals.corpora import TREE_SUBDIR, eval_index_dir
from evals.peer_scores import HOPTREE, ONE_CALL, PEERS_FOLDER, peer_scores, peers_markdown
from evals.peers import PEERS
from evals.report import DETAILS_FILE, METRICS_FILE
from evals.scoreboard import SliceScore, Targets, scoreboard_markdown, slice_score
from searchers.corpus import file_sha256
from tree.journal import BuildJournal, merge_journal
from tree.store import JOURNAL_FILE, tree_exists

COMPARE_ALL = "compare_all.md"
COMPARE_COMMON = "compare_common.md"
COMPARE_PLOT = "compare_common.png"
SCOREBOARD = "scoreboard.md"
TREE_JOURNAL = "tree-journal.jsonl"


class SuiteError(ValueError):
    """A suite request that names no known suite, stage or dataset."""


@dataclass(frozen=True)
class Slice:
    """Questions ``offset + 1`` to ``offset + limit`` of a file under the data directory."""

    file: str
    offset: int = 0
    limit: int = 0  # 0: the stage says how many


@dataclass(frozen=True)
class Stage:
    """Every pipeline on every slice; ``limit`` (when set) overrides the slices' own.

    ``folder`` (when set) names a sibling of the suite's results folder that the stage's runs
    go to (``v5`` beside ``v4``): a new version of the agent measured against the committed runs
    without entering their comparison tables, which were written over another code version."""

    pipelines: tuple[str, ...]
    slices: tuple[str, ...]
    limit: int = 0
    folder: str = ""


@dataclass(frozen=True)
class Suite:
    name: str
    out: str  # the results folder, relative to the checkout
    slices: Mapping[str, Slice]  # key: the slice's folder under ``out``
    stages: Mapping[str, Stage]  # in cost order
    env: Mapping[str, str] = field(default_factory=dict)  # added to every --run child's
    targets: Mapping[str, Targets] = field(default_factory=dict)  # slice -> what is asked there

    @property
    def pipelines(self) -> list[str]:
        return list(dict.fromkeys(p for stage in self.stages.values() for p in stage.pipelines))


# dataset key -> file under the data directory (../shared/data here)
DATASETS = {
    "hotpotqa": "hotpotqa/dev_hard_300_a.jsonl",
    "2wiki": "2wikimultihopqa/dev_first100_flashrag.jsonl",
}
_BOTH = tuple(DATASETS)
# vanilla RAG on 100, searchers, planner and ablations on 30
DEFAULT_SUITE = Suite(
    name="default",
    out="evals/results",
    slices={key: Slice(file) for key, file in DATASETS.items()},
    stages={
        "cheap": Stage(("no-retrieval", "bm25", "dense", "hybrid"), _BOTH, 100),
        "searchers": Stage(("sparse-searcher", "dense-searcher"), _BOTH, 30),
        "planner": Stage(("full", "no-decompose", "no-summarize", "no-supplement"), _BOTH, 30),
        "tree": Stage(("full+tree",), _BOTH, 30),
    },
)

# Issue 33: report on held-out slices, tune on others; measured with the LLM cache off, so that
# no run borrows calls from another.
MUSIQUE = "musique/musique_ans_dev_174.jsonl"
_REPORT = ("hotpotqa_b", "2wiki", "musique")
# issue 65 (item 5): report slices nobody has read, drawn by evals/data/fresh/draw.py from public
# copies of the official dev files. The drawn files stay in the checkout, uncommitted; a run on
# one that is missing says how to draw it. Absolute here so that they need no data directory.
FRESH = Path(__file__).resolve().parent / "data" / "fresh"
FRESH_SLICES = {
    "fresh/hotpotqa": Slice(str(FRESH / "hotpotqa_dev_hard_fresh_100.jsonl"), 0, 100),
    "fresh/2wiki": Slice(str(FRESH / "2wiki_dev_fresh_100.jsonl"), 0, 100),
    "fresh/musique": Slice(str(FRESH / "musique_ans_dev_fresh_80.jsonl"), 0, 80),
}
_TUNE = ("tune/musique", "tune/2wiki", "tune/hotpotqa")
# issue 53: draft first, measured in a folder of its own beside v4 (v4's tables compare runs of
# the code before it). v5 holds the first router's report runs (chains whose draft was sure
# kept it) and the time to the first answer on HotpotQA _a 1-30, as the issue asks (the draft's
# own time, the same whatever the router does next); v6 the current router's runs and its
# tuning runs; v7 the report runs with the residual last hop, the current ones.
DRAFT_FOLDER = "v7"
DRAFT_TUNE_FOLDER = "v6"
FIRST_ANSWER_FOLDER = "v5"
FIRST_ANSWER = "first-answer/hotpotqa_a"
# issue 62: hoptree's default beside other projects' pipelines on the first 50 questions of each
# report slice (run interleaved by benchmarks/peers.py; the scoreboard's peers section)
PEERS_STAGE = "peers"
PEERS_LIMIT = 50
CHAINS_SUITE = Suite(
    name="chains",
    out="evals/results/v4",
    slices={
        "hotpotqa_b": Slice("hotpotqa/dev_hard_300_b.jsonl", 0, 100),
        "2wiki": Slice("2wikimultihopqa/dev_163_official.jsonl", 0, 163),
        "musique": Slice(MUSIQUE, 87, 87),  # the last 87 of 174
        "tune/musique": Slice(MUSIQUE, 0, 87),
        "tune/2wiki": Slice(DATASETS["2wiki"], 0, 100),
        "tune/hotpotqa": Slice(DATASETS["hotpotqa"], 0, 100),
        FIRST_ANSWER: Slice(DATASETS["hotpotqa"], 0, 30),
        **FRESH_SLICES,
    },
    stages={
        "cheap": Stage(("bm25", "hybrid", "oracle", "no-retrieval"), _REPORT),
        "planner": Stage(("full",), _REPORT),
        "ablations": Stage(("no-decompose", "no-summarize", "no-supplement"), ("musique",)),
        "tune": Stage(("bm25", "hybrid", "oracle", "full"), _TUNE),
        "draft": Stage(("draft-first",), _REPORT, folder=DRAFT_FOLDER),
        "first-answer": Stage(("draft-first",), (FIRST_ANSWER,), folder=FIRST_ANSWER_FOLDER),
        "draft-tune": Stage(("draft-first",), _TUNE, folder=DRAFT_TUNE_FOLDER),
        PEERS_STAGE: Stage(
            (HOPTREE, ONE_CALL, *PEERS),
            (*_REPORT, *FRESH_SLICES),
            limit=PEERS_LIMIT,
            folder=PEERS_FOLDER,
        ),
    },
    env={"HOPTREE_LLM__CACHE": "false"},
    # issue 33's bar: on each report slice, half the headroom and an interval above zero; hop
    # recall where the dataset names its hops
    targets={
        "hotpotqa_b": Targets(),
        "2wiki": Targets(hop_recall=85.0),
        "musique": Targets(hop_recall=75.0),
    },
)
SUITES = {suite.name: suite for suite in (DEFAULT_SUITE, CHAINS_SUITE)}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise SuiteError(f"unknown suite {name}; suites: {', '.join(SUITES)}")
    return SUITES[name]


@dataclass(frozen=True)
class SuiteRun:
    dataset: str  # the slice's folder under the suite's results folder
    pipeline: str
    limit: int
    offset: int = 0
    file: str = ""  # under the data directory; empty: the default suite's DATASETS entry
    folder: str = ""  # the stage's sibling of the results folder; empty: the folder itself

    def results_dir(self, out: Path) -> Path:
        """The results folder the run's slice folder sits in: ``out``, or its stage's sibling."""
        return out.parent / self.folder if self.folder else out

    def out_dir(self, out: Path) -> Path:
        return self.results_dir(out) / self.dataset / self.pipeline

    def label(self) -> str:
        """The slice as the status table names it: its folder said where it is not the suite's."""
        return f"{self.dataset} ({self.folder})" if self.folder else self.dataset

    def dataset_file(self, data: Path) -> Path:
        return data / (self.file or DATASETS[self.dataset])

    def questions(self) -> str:
        """How many questions, and which when the slice does not start at the first."""
        if not self.offset:
            return str(self.limit)
        return f"{self.limit} ({self.offset + 1}-{self.offset + self.limit})"

    def eval_args(self, data: Path, out: Path) -> list[str]:
        """The ``hoptree eval run`` arguments: the same command resumes the run."""
        return [
            "eval",
            "run",
            "--dataset",
            str(self.dataset_file(data)),
            "--setting",
            "open",
            "--pipeline",
            self.pipeline,
            "--offset",
            str(self.offset),
            "--limit",
            str(self.limit),
            "--out",
            str(self.out_dir(out)),
        ]


def _selects(key: str, names: Sequence[str]) -> bool:
    """``--only musique`` picks ``musique`` and ``tune/musique``; ``--only tune/musique`` one."""
    return key in names or key.rsplit("/", 1)[-1] in names


def suite_runs(
    stages: Sequence[str], datasets: Sequence[str] | None = None, suite: Suite = DEFAULT_SUITE
) -> list[SuiteRun]:
    """Stage by stage, and within a stage pipeline by pipeline over every slice, so a session
    that stops early leaves whole rows of the comparison rather than scattered cells."""
    names = list(suite.slices) if datasets is None else list(datasets)
    unknown = [s for s in stages if s not in suite.stages] + [
        d for d in names if not any(_selects(key, [d]) for key in suite.slices)
    ]
    if unknown:
        raise SuiteError(
            f"unknown stage or dataset {', '.join(unknown)}; stages: {', '.join(suite.stages)}; "
            f"datasets: {', '.join(suite.slices)}"
        )
    runs = []
    for stage in stages:
        spec = suite.stages[stage]
        for pipeline in spec.pipelines:
            for key in (k for k in spec.slices if _selects(k, names)):
                part = suite.slices[key]
                limit = spec.limit or part.limit
                runs.append(SuiteRun(key, pipeline, limit, part.offset, part.file, spec.folder))
    if not runs:
        raise SuiteError(f"stage {', '.join(stages)} has no run on {', '.join(names)}")
    return runs


def finished_questions(run_dir: Path) -> int:
    """Whole rows in ``details.jsonl`` (a torn last line is not a finished question)."""
    path = run_dir / DETAILS_FILE
    if not path.is_file():
        return 0
    return path.read_bytes().count(b"\n")


def run_status(run: SuiteRun, out: Path) -> str:
    done = finished_questions(run.out_dir(out))
    if done >= run.limit:
        return "finished"
    return "not started" if done == 0 else f"{done}/{run.limit}"


Execute = Callable[[list[str]], int]


CHILD_GRACE_S = 30.0


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def run_child(command: list[str], env: Mapping[str, str] | None = None) -> int:
    """Run ``command`` (``env`` added to this process's environment) and wait; if this process
    is stopped (SIGTERM, Ctrl-C) the child stops too. Without this a killed suite leaves its
    current run going, and a restarted suite then runs a second model beside it on the same
    cores and files."""
    environment = {**os.environ, **env} if env else None
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=environment)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if in_main else None
    try:
        return child.wait()
    except BaseException:
        child.terminate()
        try:
            child.wait(timeout=CHILD_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise
    finally:
        if previous is not None:  # None: not in the main thread, or a handler set outside Python
            signal.signal(signal.SIGTERM, previous)


def execute_cli(args: list[str], env: Mapping[str, str] | None = None) -> int:
    """One ``hoptree`` command in a child process: each run frees its model and memory."""
    return run_child([sys.executable, "-m", "agent.cli", *args], env=env)


Setup = Callable[[SuiteRun], list[list[str]]]


def tree_setup(run: SuiteRun, data: Path, index_dir: Path, has_tree: bool) -> list[list[str]]:
    """The ``hoptree`` commands a run needs before its first question and does not run itself:
    a pipeline that searches a RAPTOR tree gets the open index and its tree built first, or
    their builds resumed (both are resumable; an index build over a finished index adds
    nothing). Without this a ``full+tree`` run fails at once and waits for a manual build."""
    if has_tree or "tree" not in PIPELINES[run.pipeline].needs:
        return []
    source = str(run.dataset_file(data))
    return [
        ["index", "build", "--index", str(index_dir), source],
        ["tree", "build", "--index", str(index_dir), source],
    ]


def kept_journal(run: SuiteRun, out: Path) -> Path:
    """Where a dataset's tree build journal is kept beside its results. A RAPTOR tree over a
    HotpotQA corpus takes longer than one machine's session lasts, and the build's own journal
    sits in a cache a new machine lacks: committed here, it lets the next machine resume."""
    return out / run.dataset / TREE_JOURNAL


def tree_progress(tree_dir: Path, has_tree: bool) -> str:
    """How far a run's RAPTOR tree got, for the suite's status: its build takes hours, and a
    ``full+tree`` run shown only as "not started" would hide that."""
    if has_tree:
        return "tree built"
    journal = tree_dir / JOURNAL_FILE
    if not journal.is_file():
        return "no tree yet"
    record = BuildJournal(journal)
    done = f"tree building, {len(record.summaries)} summaries done"
    if not record.clusterings:
        return done
    latest = list(record.clusterings.values())[-1]  # dicts keep the journal's order
    return f"{done}; the latest layer has {len(latest)} clusters"


def run_unfinished(
    runs: Sequence[SuiteRun],
    data: Path,
    out: Path,
    execute: Execute = execute_cli,
    setup: Setup = lambda run: [],
) -> list[tuple[SuiteRun, int]]:
    """Run each unfinished run to its limit, after its ``setup`` commands; a failing run (or a
    failing setup, which skips its run) is reported and the next one goes on."""
    outcomes = []
    for run in runs:
        if run_status(run, out) == "finished":
            continue
        code = 0
        for command in setup(run):
            code = execute(command)
            if code != 0:
                break
        if code == 0:
            code = execute(run.eval_args(data, out))
        outcomes.append((run, code))
    return outcomes


def compare_args(
    out: Path, dataset: str, common: bool, suite: Suite = DEFAULT_SUITE
) -> list[str] | None:
    """``hoptree eval compare`` over the slice's runs that have metrics (None: fewer than 2).
    The runs of one slice share its file, so the comparison adds the paired statistics."""
    root = out / dataset
    pipelines = suite.pipelines
    runs = [root / p for p in pipelines if (root / p / METRICS_FILE).is_file()]
    if len(runs) < 2:
        return None
    args = ["eval", "compare", *map(str, runs)]
    if common:
        return [*args, "--common", "--markdown", str(root / COMPARE_COMMON), "--plot",
                str(root / COMPARE_PLOT)]  # fmt: skip
    return [*args, "--markdown", str(root / COMPARE_ALL)]


def metrics_of(run: SuiteRun, out: Path) -> dict[str, object] | None:
    path = run.out_dir(out) / METRICS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def suite_scores(
    suite: Suite, slices: Sequence[str], out: Path, agent: str = "full"
) -> list[SliceScore]:
    """The scoreboard lines (``evals.scoreboard``) of ``slices`` where ``agent`` and a one-call
    run have questions in common. Every stage's runs of a slice take part, whichever stages the
    command was asked for: a comparison of baselines without the agent scores nothing."""
    every = suite_runs(list(suite.stages), None, suite)
    scores = []
    for key in dict.fromkeys(slices):
        mine = [r for r in every if r.dataset == key]
        if not mine:
            continue
        pipelines = list(dict.fromkeys(r.pipeline for r in mine))
        score = slice_score(out, key, pipelines, max(r.limit for r in mine), agent)
        if score is not None:
            scores.append(score)
    return scores


Note = Callable[[str], None]


def missing_dataset_files(runs: Sequence[SuiteRun], data: Path) -> list[str]:
    """The runs' question files that are not there, checked before anything loads, each said
    with where it comes from: the data directory, or ``draw.py`` for a fresh slice."""
    files = {r.dataset_file(data) for r in runs}
    return sorted(
        f"{f} (draw it: python evals/data/fresh/draw.py)" if f.parent == FRESH else str(f)
        for f in files
        if not f.is_file()
    )


@dataclass
class SuiteSession:
    """One ``hoptree eval suite`` over a data folder and a results folder: where each run's
    open index and tree live (``<data_dir>/eval-indexes/<sha256 of the file>``), the kept tree
    journals, continuing the unfinished runs and the status of each. The command only parses
    its options and prints what this returns; ``note`` receives the lines it prints on stderr."""

    suite: Suite
    runs: list[SuiteRun]
    data: Path
    out: Path
    settings: Settings
    _sha256: dict[Path, str] = field(default_factory=dict)

    def index_of(self, run: SuiteRun) -> Path:
        path = run.dataset_file(self.data)
        if path not in self._sha256:  # once per file, not once per run
            self._sha256[path] = file_sha256(path)
        return eval_index_dir(self.settings, self._sha256[path])

    def _uses_tree(self, run: SuiteRun) -> bool:
        return "tree" in PIPELINES[run.pipeline].needs

    def keep_journals(self) -> list[tuple[Path, int]]:
        """Each unfinished tree build's journal merged into the copy kept beside the results
        (``kept_journal``); returns (kept copy, records added)."""
        kept = []
        for run in self.runs:
            journal = self.index_of(run) / TREE_SUBDIR / JOURNAL_FILE
            if self._uses_tree(run) and journal.is_file():
                copy = kept_journal(run, self.out)
                kept.append((copy, merge_journal(journal, copy)))
        return kept

    def setup(self, run: SuiteRun, note: Note) -> list[list[str]]:
        """The builds a run needs first (``tree_setup``), with a kept journal restored into the
        tree build's own before it starts (merging into a journal being written could tear it)."""
        tree_dir = self.index_of(run) / TREE_SUBDIR
        commands = tree_setup(run, self.data, self.index_of(run), tree_exists(tree_dir))
        if commands:
            kept = kept_journal(run, self.out)
            restored = merge_journal(kept, tree_dir / JOURNAL_FILE)
            if restored:
                note(f"[dim]{restored} tree journal record(s) restored from {kept}[/dim]")
        return commands

    def continue_runs(self, note: Note) -> None:
        """Every unfinished run to its limit (each in a child ``hoptree``), then each slice's
        comparisons over all its questions and over the common ones."""

        def execute(args: list[str]) -> int:
            return execute_cli(args, env=self.suite.env)

        setup = lambda run: self.setup(run, note)  # noqa: E731
        for run, code in run_unfinished(self.runs, self.data, self.out, execute, setup=setup):
            if code != 0:
                note(f"[yellow]{run.dataset}/{run.pipeline} exited with {code}[/yellow]")
        for dataset in dict.fromkeys(r.dataset for r in self.runs):
            for common in (False, True):
                args = compare_args(self.out, dataset, common, self.suite)
                if args is not None:
                    execute(args)

    def status_rows(self) -> list[list[str]]:
        """(dataset, pipeline, questions, status, EM, F1) per run; an unfinished tree run's
        status says how far its tree got."""
        rows = []
        for run in self.runs:
            metrics = metrics_of(run, self.out) or {}
            status = run_status(run, self.out)
            if status != "finished" and self._uses_tree(run):
                tree_dir = self.index_of(run) / TREE_SUBDIR
                status = f"{status} ({tree_progress(tree_dir, tree_exists(tree_dir))})"
            em, f1 = str(metrics.get("em", "")), str(metrics.get("f1", ""))
            rows.append([run.label(), run.pipeline, run.questions(), status, em, f1])
        return rows

    def scores(self) -> list[SliceScore]:
        return suite_scores(self.suite, [r.dataset for r in self.runs], self.out)

    def write_scoreboard(self, scores: list[SliceScore]) -> Path:
        path = self.out / SCOREBOARD
        text = scoreboard_markdown(scores, self.suite.targets, self.suite.name)
        if PEERS_STAGE in self.suite.stages:
            peers = peer_scores(self.out.parent / PEERS_FOLDER)
            text += "\n" + peers_markdown(peers, heading="##")
        path.write_text(text, encoding="utf-8")
        return path
