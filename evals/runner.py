"""Running one pipeline over one question file: resumable, bounded, scored as it goes.

An evaluation of the planner with the local model takes minutes per question, so a run must
survive being killed: every finished question is appended to ``details.jsonl`` at once (one
line, flushed), and a rerun into the same directory skips the ids already there and never runs
one twice. A line cut short by a kill is dropped and that question runs again. ``run.json``
records what the directory measures (dataset by content hash, setting, pipeline, k, model), and
a rerun that would mix in another configuration is refused rather than averaged in.

``--limit N`` selects the file's first N questions; metrics cover exactly that selection, so
``--limit 2`` then ``--limit 3`` runs one new question and reports three. ``--offset M`` skips
the first M (``--offset 50 --limit 50``: questions 51-100, a slice kept apart from tuning).

The open setting indexes the union of the file's paragraphs once, under
``<data_dir>/eval-indexes/<sha256 of the file>``, and every later run on the same file reuses
it. The distractor setting builds a tiny index per question from its own paragraphs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agent.runtime.usage import StepUsage
from evals.aggregate import aggregate
from evals.corpora import (
    Corpus,
    CorpusSetupError,
    check_distractor_needs,
    distractor_corpus,
    ensure_open_index,
    eval_index_dir,
    open_corpus,
)
from evals.datasets import EvalQuestion, load_questions, resolve_format
from evals.metrics import (
    answer_scores,
    gold_recall,
    hop_recall,
    retrieval_success,
    unmatched_queries,
)
from evals.pipelines import (
    EvalContext,
    PipelineError,
    PipelineOutput,
    PipelineSpec,
    SpentError,
    get_pipeline,
    usage_output,
)
from evals.provenance import code_version
from evals.report import (
    DETAILS_FILE,
    METRICS_FILE,
    ReportError,
    parse_details,
    write_report,
)
from searchers.corpus import file_sha256
from searchers.index_dir import now_iso
from searchers.index_generation import BuildProgress, embedding_dimension
from searchers.registry import SearcherRegistryError

log = logging.getLogger(__name__)

Setting = Literal["open", "distractor"]
SETTINGS: tuple[str, ...] = ("open", "distractor")
RUN_FILE = "run.json"
MAX_CONCURRENCY = 64
# Opens the progress display of an index build (``agent.indexing.build_progress`` fits).
IndexProgress = Callable[[], AbstractContextManager[BuildProgress]]
# Errors that say the run is set up wrong (not that one question went badly).
SETUP_ERRORS: tuple[type[Exception], ...] = (CorpusSetupError, PipelineError, SearcherRegistryError)
# What a run directory measures; a rerun must agree on all of these.
IDENTITY_KEYS = ("dataset_sha256", "setting", "pipeline", "k", "passage_chars", "model")


REPOSITORY = Path(__file__).resolve().parents[1]


def dataset_label(dataset: Path) -> str:
    """How results name their dataset: relative to the repository when it lies in it or
    beside it (``../shared/data/...``), else its file name; never an absolute path, which
    would say whose machine made the results and mean nothing on another one. The file's
    sha256, recorded beside it, is what identifies the data."""
    # as written first: a ``../shared`` that is a symlink resolves to somewhere else entirely
    for path in (Path(os.path.normpath(dataset.absolute())), dataset.resolve()):
        for base, prefix in ((REPOSITORY, ""), (REPOSITORY.parent, "../")):
            if path.is_relative_to(base):
                return prefix + path.relative_to(base).as_posix()
    return dataset.resolve().name


class EvalRunError(ValueError):
    """A run that cannot start as asked (bad options, a directory holding another run)."""


@dataclass
class RunConfig:
    dataset: Path
    pipeline: str
    out: Path
    fmt: str = "auto"
    setting: str = "open"
    limit: int | None = None
    offset: int = 0  # skip the file's first N questions (a held-out slice: --offset 50 --limit 50)
    concurrency: int = 1
    index: Path | None = None  # open setting: use this index instead of building one
    progress: bool | None = None  # None: a bar on a terminal, else one line per question
    tree_options: tuple[str, ...] = ()  # QuALITY tree pipelines: KEY=VALUE tree settings

    def check(self) -> None:
        if self.setting not in SETTINGS:
            raise EvalRunError(
                f"unknown setting {self.setting!r}; expected one of {', '.join(SETTINGS)}"
            )
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise EvalRunError(f"concurrency must be 1..{MAX_CONCURRENCY}, got {self.concurrency}")
        if self.limit is not None and self.limit < 0:
            raise EvalRunError(f"limit must be >= 0, got {self.limit}")
        if self.offset < 0:
            raise EvalRunError(f"offset must be >= 0, got {self.offset}")
        if self.index is not None and self.setting != "open":
            raise EvalRunError("--index applies to the open setting only")
        if self.index is not None and not (Path(self.index) / "manifest.json").is_file():
            raise EvalRunError(f"{self.index}: not an index directory (no manifest.json)")


# --------------------------------------------------------------------------- the run directory


class RunDirectory:
    """``run.json`` (what is measured) and ``details.jsonl`` (what is finished)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.details_path = self.path / DETAILS_FILE
        self.run_path = self.path / RUN_FILE

    def claim(
        self, identity: dict[str, Any], keys: Sequence[str] = IDENTITY_KEYS
    ) -> dict[str, Any]:
        """Create the directory for this run, or check that it already holds this run (the
        ``keys`` of ``identity`` are what must agree)."""
        if self.path.exists() and not self.path.is_dir():
            raise EvalRunError(f"{self.path}: exists and is not a directory")
        self.path.mkdir(parents=True, exist_ok=True)
        if self.run_path.is_file():
            try:
                recorded = json.loads(self.run_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise EvalRunError(f"{self.run_path}: unreadable ({exc})") from exc
            differs = [k for k in keys if recorded.get(k) != identity.get(k)]
            if differs:
                details = "; ".join(
                    f"{k}: {recorded.get(k)!r} there, {identity.get(k)!r} now" for k in differs
                )
                raise EvalRunError(
                    f"{self.path} holds another run ({details}); resume it with the same "
                    "options, or choose a new --out directory"
                )
            return recorded
        if self.details_path.is_file() and self.details_path.stat().st_size:
            raise EvalRunError(
                f"{self.path} has {DETAILS_FILE} but no {RUN_FILE}: it cannot be told which run "
                "the rows belong to; choose a new --out directory"
            )
        record = {**identity, "created": now_iso()}
        tmp = self.run_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.run_path)
        return record

    def finished(self) -> dict[str, dict[str, Any]]:
        """Rows by question id. A torn last line (a kill mid-write) is cut from the file, so its
        question runs again and the next row starts on a line of its own."""
        if not self.details_path.is_file():
            return {}
        raw = self.details_path.read_bytes()
        try:
            rows, torn = parse_details(raw, self.details_path)
        except ReportError as exc:
            raise EvalRunError(str(exc)) from exc
        if torn:
            log.warning(
                "%s: dropping an unfinished last line (%d bytes) left by an interrupted run",
                self.details_path,
                torn,
            )
            with self.details_path.open("r+b") as fh:
                fh.truncate(len(raw) - torn)
        return rows

    def open_for_append(self) -> IO[str]:
        return self.details_path.open("a", encoding="utf-8")


def append_row(handle: IO[str], row: dict[str, Any]) -> None:
    """One whole line, then flush: a killed process loses at most the line being written."""
    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    handle.flush()


# --------------------------------------------------------------------------- scoring


def run_fields(output: Any) -> dict[str, Any]:
    """The end of every details row, whatever the dataset: what the question cost, what went
    wrong, the planner's record if a planner ran, and which code made the row."""
    planner = {"planner": output.planner} if output.planner is not None else {}
    # the server's clock, when it kept one (llama.cpp does; OpenAI does not)
    server = {
        "cached_prompt_tokens": getattr(output, "cached_prompt_tokens", 0),
        "prompt_ms": round(getattr(output, "prompt_ms", 0.0), 1),
        "decode_ms": round(getattr(output, "decode_ms", 0.0), 1),
    }
    server = {k: v for k, v in server.items() if v}
    steps = getattr(output, "steps", None)
    return {
        "llm_calls": output.llm_calls,
        "prompt_tokens": output.prompt_tokens,
        "completion_tokens": output.completion_tokens,
        "llm_cache_hits": output.llm_cache_hits,
        "cache_hit_prompt_tokens": output.cache_hit_prompt_tokens,
        "seconds": round(output.seconds, 3),
        **server,
        **({"steps": steps} if steps else {}),
        "error": output.error,
        "warnings": output.warnings,
        **planner,
        "code": code_version(),
        "finished_at": now_iso(),
    }


def _gold_recall(question: EvalQuestion, output: PipelineOutput) -> float | None:
    """By title, as always; by id where titles repeat across paragraphs (MuSiQue) and the
    pipeline reported ids, else a distractor sharing a gold title would count as gold."""
    if not question.titles_identify_paragraphs and output.retrieved_ids:
        return gold_recall(question.supporting_ids, output.retrieved_ids)
    return gold_recall(question.supporting_titles, output.retrieved_titles)


def _hop_fields(question: EvalQuestion, output: PipelineOutput, retrieves: bool) -> dict[str, Any]:
    """``hop_recall`` (None without gold hops, for a pipeline that retrieves nothing, and for
    one that retrieved passages but reported no ids: unknown, not zero) and, when the output
    lists each planned query's passages, ``hop_queries_unmatched``."""
    reported = bool(output.retrieved_ids) or not output.retrieved_titles
    recall = (
        hop_recall(question.gold_hops, output.retrieved_ids) if retrieves and reported else None
    )
    fields: dict[str, Any] = {"hop_recall": recall}
    if retrieves and question.gold_hops and output.query_passage_ids:
        fields["hop_queries_unmatched"] = unmatched_queries(
            question.gold_hops, output.query_passage_ids
        )
    return fields


def score(
    question: EvalQuestion, output: PipelineOutput, *, retrieves: bool = True
) -> dict[str, Any]:
    """The details row of one finished question. A pipeline that ``retrieves`` nothing by
    design gets no retrieval scores (None, "n/a" in tables): a 0 would read as a search that
    failed on every question."""
    scores = answer_scores(output.prediction, question.answers)
    return {
        "id": question.id,
        "question": question.question,
        "type": question.type,
        "answers": question.answers,
        "prediction": output.prediction,
        "em": scores["em"],
        "f1": round(scores["f1"], 4),
        "acc": scores["acc"],
        "retrieval_success": (
            retrieval_success(question.answers, output.contexts) if retrieves else None
        ),
        "gold_recall": _gold_recall(question, output) if retrieves else None,
        **_hop_fields(question, output, retrieves),
        "supporting_titles": question.supporting_titles,
        "retrieved_titles": list(dict.fromkeys(output.retrieved_titles)),
        **run_fields(output),
    }


# --------------------------------------------------------------------------- progress


class RunProgress:
    """The running EM/F1 of every finished question of the selection, on stderr: a bar on a
    terminal, and one plain line per question otherwise, because a run left in the background
    (nohup, CI) must still say how far it got; a bar writes nothing there."""

    def __init__(
        self,
        label: str,
        total: int,
        rows: Sequence[dict[str, Any]],
        enabled: bool,
        lines: bool = False,
    ):
        self.label = label
        self.total = total
        self.em = sum(r["em"] for r in rows)
        self.f1 = sum(r["f1"] for r in rows)
        self.done = len(rows)
        self.lines = lines and not enabled
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not enabled,
        )
        self.task = self.progress.add_task(self._description(), total=total, completed=self.done)

    def _description(self) -> str:
        if not self.done:
            return f"{self.label}  EM  -   F1  -  "
        return (
            f"{self.label}  EM {100 * self.em / self.done:5.1f}  "
            f"F1 {100 * self.f1 / self.done:5.1f}"
        )

    def add(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.em += row["em"]
        self.f1 += row["f1"]
        self.progress.update(self.task, advance=1, description=self._description())
        if self.lines:
            error = f"  error: {row['error']}" if row.get("error") else ""
            self.console.print(
                f"[{self.done}/{self.total}] {row['id']}  em {row['em']:.0f} f1 {row['f1']:.2f}  "
                f"{row.get('llm_calls', 0)} calls {row.get('seconds', 0):.0f} s  |  "
                f"{self._description()}{error}"
            )

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


# --------------------------------------------------------------------------- the run


def _first_leaf(error: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups."""
    for _depth in range(100):
        if not isinstance(error, BaseExceptionGroup) or not error.exceptions:
            break
        error = error.exceptions[0]
    return error


def _failed(exc: BaseException, started: float, spent: StepUsage | None = None) -> PipelineOutput:
    error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
    return usage_output("", spent or StepUsage(), started, error=error)


async def _prepare_open(
    config: RunConfig,
    ctx: EvalContext,
    spec: PipelineSpec,
    fmt: str,
    sha256: str,
    index_progress: IndexProgress | None,
) -> Corpus:
    if not spec.needs:  # closed book, the oracle: no retriever, so no index to build
        return Corpus(name="none", retrievers={})
    index_dir = config.index
    if index_dir is None:
        index_dir = eval_index_dir(ctx.settings, sha256)
        # The build's bars live only while it runs: the run's own bar comes after.
        with index_progress() if index_progress else contextlib.nullcontext() as bar:
            await asyncio.to_thread(
                ensure_open_index,
                ctx.settings,
                config.dataset,
                fmt,
                index_dir,
                embeddings=ctx.embeddings,
                progress=bar,
            )
    return await asyncio.to_thread(
        open_corpus, ctx.settings, Path(index_dir), spec.needs, embeddings=ctx.embeddings
    )


def check_config(config: RunConfig) -> None:
    """A question-file run's options; ``--tree-option`` belongs to QuALITY runs only."""
    config.check()
    if config.tree_options:
        raise EvalRunError("--tree-option applies to QuALITY runs only")


async def run_eval(
    config: RunConfig,
    ctx: EvalContext,
    *,
    index_progress: IndexProgress | None = None,
) -> dict[str, Any]:
    """Run what is not finished yet, then write ``metrics.json``, ``report.md`` and the chart.
    Returns the metrics. Raises ``EvalRunError``, ``PipelineError``, ``DatasetError`` or
    ``CorpusSetupError`` before any question runs; a question that fails is a row with an
    error (scored zero), not the end of the run."""
    started_at = now_iso()
    wall = time.monotonic()
    # the code this process runs is the checkout as it was when it started (modules are
    # imported by now); ``code_version`` is cached, so a commit made while the run goes on
    # does not relabel its later rows
    code_version()
    check_config(config)
    spec = get_pipeline(config.pipeline)
    if spec.needs_embeddings and ctx.embeddings is None:
        raise PipelineError(f"pipeline {spec.name} needs the embedding model")
    dataset = Path(config.dataset)
    fmt = resolve_format(dataset, config.fmt)
    end = None if config.limit is None else config.offset + config.limit
    questions = load_questions(dataset, fmt, limit=end)[config.offset :]
    sha256 = file_sha256(dataset)
    identity = {
        "dataset_sha256": sha256,
        "dataset": dataset_label(dataset),
        "format": fmt,
        "setting": config.setting,
        "pipeline": spec.name,
        "k": ctx.k,
        "passage_chars": ctx.chars,
        "model": ctx.model_label,
    }
    run_dir = RunDirectory(config.out)
    run_dir.claim(identity)
    finished = run_dir.finished()
    pending = [q for q in questions if q.id not in finished]

    if pending:
        corpus: Corpus | None = None
        dimension: int | None = None
        if config.setting == "open":
            corpus = await _prepare_open(config, ctx, spec, fmt, sha256, index_progress)
        else:
            check_distractor_needs(spec.needs, ctx.embeddings)
            if "dense" in spec.needs and ctx.embeddings is not None:
                dimension = await asyncio.to_thread(embedding_dimension, ctx.embeddings)
        semaphore = asyncio.Semaphore(config.concurrency)
        done_rows = [finished[q.id] for q in questions if q.id in finished]
        enabled = sys.stderr.isatty() if config.progress is None else config.progress
        lines = config.progress is None and not enabled

        async def answer(question: EvalQuestion) -> PipelineOutput:
            if corpus is not None:
                return await spec.run(ctx, corpus, question)
            with tempfile.TemporaryDirectory(prefix="hoptree-distractor-") as workdir:
                own = await asyncio.to_thread(
                    distractor_corpus,
                    question,
                    spec.needs,
                    Path(workdir),
                    embeddings=ctx.embeddings,
                    dimension=dimension,
                )
                return await spec.run(ctx, own, question)

        with (
            run_dir.open_for_append() as handle,
            RunProgress(spec.name, len(questions), done_rows, enabled, lines) as progress,
        ):

            async def one(question: EvalQuestion) -> None:
                async with semaphore:
                    started = time.monotonic()
                    spent: StepUsage | None = None
                    try:
                        try:
                            output = await answer(question)
                        except SpentError as failure:
                            spent = failure.usage
                            raise failure.cause from None
                    except SETUP_ERRORS:
                        raise  # wrong for every question alike: stop the run
                    except Exception as exc:  # this question failed; the run goes on
                        log.warning("question %s failed: %s", question.id, exc)
                        output = _failed(exc, started, spent)
                    row = score(question, output, retrieves=spec.scores_context)
                    append_row(handle, row)
                    finished[question.id] = row
                    progress.add(row)

            try:
                async with asyncio.TaskGroup() as group:  # one failing cancels the others
                    for question in pending:
                        group.create_task(one(question))
            except ExceptionGroup as group_error:
                raise _first_leaf(group_error) from None

    rows = [finished[q.id] for q in questions if q.id in finished]
    metrics = {
        **aggregate(rows),
        "pipeline": spec.name,
        "dataset": identity["dataset"],
        "dataset_sha256": sha256,
        "format": fmt,
        "setting": config.setting,
        "model": ctx.model_label,
        "k": ctx.k,
        "passage_chars": ctx.chars,
        "limit": config.limit,
        "offset": config.offset,
        "concurrency": config.concurrency,
        "ran_now": len(pending),
        "wall_seconds": round(time.monotonic() - wall, 2),
        "started": started_at,
        "finished": now_iso(),
        # A resumed run's ``started`` is this resume; the first row's time says when it began.
        "resumed": len(pending) < len(rows),
        "first_row_at": min(
            (str(r["finished_at"]) for r in rows if r.get("finished_at")), default=None
        ),
        "scale": "percent",
    }
    out = Path(config.out)
    tmp = out / f".{METRICS_FILE}.tmp"
    tmp.write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out / METRICS_FILE)
    await asyncio.to_thread(write_report, out, metrics, [r for r in rows if r.get("error")])
    return metrics
