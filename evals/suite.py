"""The committed evaluation suite: which pipeline runs on which questions, how far each run got,
and the comparison tables over them.

On the local model a planner question costs minutes, so the suite takes many sessions. Every run
is an ordinary resumable ``hoptree eval run`` directory under ``<out>/<dataset>/<pipeline>``, and
``hoptree eval suite --run`` runs whatever is unfinished, one run at a time (the embedded model
decodes one request at a time; two runs at once only share the cores), in the order that gives
the cheapest complete comparisons first.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from evals.pipelines import PIPELINES
from evals.report import DETAILS_FILE, METRICS_FILE
from tree.journal import BuildJournal
from tree.store import JOURNAL_FILE

# dataset key -> file under the data directory (../shared/data here)
DATASETS = {
    "hotpotqa": "hotpotqa/dev_hard_300_a.jsonl",
    "2wiki": "2wikimultihopqa/dev_first100_flashrag.jsonl",
}
# stage -> (pipeline, questions): vanilla RAG on 100, searchers, planner and ablations on 30
STAGES: dict[str, tuple[tuple[str, int], ...]] = {
    "cheap": (("no-retrieval", 100), ("bm25", 100), ("dense", 100), ("hybrid", 100)),
    "searchers": (("sparse-searcher", 30), ("dense-searcher", 30)),
    "planner": (("full", 30), ("no-decompose", 30), ("no-summarize", 30), ("no-supplement", 30)),
    "tree": (("full+tree", 30),),
}
COMPARE_ALL = "compare_all.md"
COMPARE_COMMON = "compare_common.md"
COMPARE_PLOT = "compare_common.png"
TREE_JOURNAL = "tree-journal.jsonl"


class SuiteError(ValueError):
    """A suite request that names no known stage or dataset."""


@dataclass(frozen=True)
class SuiteRun:
    dataset: str
    pipeline: str
    limit: int

    def out_dir(self, out: Path) -> Path:
        return out / self.dataset / self.pipeline

    def dataset_file(self, data: Path) -> Path:
        return data / DATASETS[self.dataset]

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
            "--limit",
            str(self.limit),
            "--out",
            str(self.out_dir(out)),
        ]


def suite_runs(stages: Sequence[str], datasets: Sequence[str] = tuple(DATASETS)) -> list[SuiteRun]:
    """Stage by stage, and within a stage pipeline by pipeline over every dataset, so a session
    that stops early leaves whole rows of the comparison rather than scattered cells."""
    unknown = [s for s in stages if s not in STAGES] + [d for d in datasets if d not in DATASETS]
    if unknown:
        raise SuiteError(
            f"unknown stage or dataset {', '.join(unknown)}; stages: {', '.join(STAGES)}; "
            f"datasets: {', '.join(DATASETS)}"
        )
    return [
        SuiteRun(dataset, pipeline, limit)
        for stage in stages
        for pipeline, limit in STAGES[stage]
        for dataset in datasets
    ]


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


def run_child(command: list[str]) -> int:
    """Run ``command`` and wait; if this process is stopped (SIGTERM, Ctrl-C) the child stops
    too. Without this a killed suite leaves its current run going, and a restarted suite then
    runs a second model beside it on the same cores and files."""
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
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


def execute_cli(args: list[str]) -> int:
    """One ``hoptree`` command in a child process: each run frees its model and memory."""
    return run_child([sys.executable, "-m", "agent.cli", *args])


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


def compare_args(out: Path, dataset: str, common: bool) -> list[str] | None:
    """``hoptree eval compare`` over the dataset's runs that have metrics (None: fewer than 2)."""
    root = out / dataset
    pipelines = [p for stage in STAGES.values() for p, _ in stage]
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
