"""``hoptree eval run|compare|suite|pipelines``: the evaluation suites on the command line.

A typer sub-app mounted by ``agent`` through the entry-point group ``hoptree.commands``
(``agent.cli.plugins``), because ``agent`` must not import ``evals``. Commands validate their
input (pipeline name, dataset file and layout, output directory) before any model starts, so a
typo costs milliseconds, not a model load. Bad input exits with status 2 and one line on stderr;
tables go to stdout, progress bars to stderr.

Each command parses its options and prints what the module doing the work returns: a run is
``run_request.RunRequest`` (its checks, the models, the runner), a comparison
``compare.load_comparison``, a suite ``suite.SuiteSession``, the reports ``losses``, ``replay``,
``plan_outcomes`` and ``quality.compare``. Most of this module's length is typer's option
declarations.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from evals.catalogue import PIPELINES
from evals.compare import (
    Comparison,
    compare_columns,
    comparison_rows,
    load_comparison,
    write_comparison_plots,
)
from evals.paired import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    PairedComparison,
    cost_notes,
    cost_table,
    gains_table,
)
from evals.pipelines import DEFAULT_CONTEXT_TOKENS, DEFAULT_K
from evals.quality.pipelines import QUALITY_PIPELINES
from evals.report import REPORT_FILE, ReportError
from evals.run_directory import RunConfig
from evals.run_request import INPUT_ERRORS, ModelStartError, RunRequest, run_errors
from evals.scoreboard import HEADER as SCOREBOARD_HEADER
from evals.scoreboard import SliceScore, growing_runs, score_cells
from evals.suite import (
    DEFAULT_SUITE,
    SCOREBOARD,
    SUITES,
    TREE_JOURNAL,
    Suite,
    SuiteError,
    SuiteSession,
    get_suite,
    missing_dataset_files,
    suite_runs,
)

eval_app = typer.Typer(
    help="Evaluate pipelines on HotpotQA / 2WikiMultihopQA / QuALITY files and compare runs.",
    no_args_is_help=True,
)
out = Console()
err = Console(stderr=True)


def _fail(message: str) -> typer.Exit:
    """Exit 2 after one unwrapped line: messages carry FILE:LINE and paths users grep for."""
    err.print(Text.assemble(("error: ", "red"), message), soft_wrap=True, highlight=False)
    return typer.Exit(2)


def _need_rows(runs: Sequence[Path]) -> None:
    """Refuse, naming them, run directories without rows to read."""
    missing = [str(run) for run in runs if not (Path(run) / "details.jsonl").is_file()]
    if missing:
        raise _fail(f"no details.jsonl in: {', '.join(missing)}")


def _print_table(text: str, markdown: Path | None) -> None:
    """A markdown table on stdout, and in ``markdown`` too when given."""
    sys.stdout.write(text)
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(text, encoding="utf-8")


def _settings() -> Any:
    from agent.cli.context import settings_or_exit

    return settings_or_exit()


EVAL_METRICS = (
    "em",
    "f1",
    "acc",
    "retrieval_success",
    "gold_recall",
    "llm_calls_per_question",
    "prompt_tokens_per_question",
    "seconds_per_question",
    "errors",
)
QUALITY_METRICS = (
    "accuracy",
    "accuracy_hard",
    "hard_n",
    "unanswered",
    "summary_share",
    "llm_calls_per_question",
    "seconds_per_question",
    "errors",
)


def _metrics_table(metrics: dict[str, Any], *, quality: bool = False) -> Table:
    setting = "QuALITY" if quality else metrics["setting"]
    table = Table(title=f"{metrics['pipeline']} ({setting}, n={metrics['n']})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in QUALITY_METRICS if quality else EVAL_METRICS:
        value = metrics.get(key)
        table.add_row(key, "n/a" if value is None else str(value))
    return table


@eval_app.command("run")
def run_command(
    dataset: Annotated[
        Path, typer.Option("--dataset", help="HotpotQA / FlashRAG / QuALITY jsonl file")
    ],
    pipeline: Annotated[
        str,
        typer.Option(
            "--pipeline",
            help=f"one of: {', '.join(PIPELINES)}; for QuALITY: {', '.join(QUALITY_PIPELINES)}",
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="run directory (resumable)")],
    fmt: Annotated[str, typer.Option("--format", help="auto|hotpotqa|flashrag|quality")] = "auto",
    setting: Annotated[
        str, typer.Option("--setting", help="open (one index of all paragraphs) | distractor")
    ] = "open",
    limit: Annotated[
        int | None, typer.Option("--limit", help="the file's first N questions")
    ] = None,
    offset: Annotated[
        int,
        typer.Option(
            "--offset", help="skip the file's first N questions (with --limit: a later slice)"
        ),
    ] = 0,
    question_type: Annotated[
        list[str] | None,
        typer.Option(
            "--type",
            help="only questions of this type within the selection (repeatable; the file's "
            "type field: bridge, comparison, inference, 2hop, ...)",
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            help="questions at once (the embedded model decodes one request at a time; "
            "raise HOPTREE_LLM__LOCAL_PARALLEL or use a served endpoint for more)",
        ),
    ] = 1,
    index: Annotated[
        Path | None,
        typer.Option("--index", help="open setting: use this index (e.g. one with a tree)"),
    ] = None,
    k: Annotated[
        int, typer.Option("-k", help="passages read by vanilla RAG and single searchers")
    ] = DEFAULT_K,
    passage_chars: Annotated[
        int | None,
        typer.Option("--passage-chars", help="characters per passage shown (default: planner's)"),
    ] = None,
    context_tokens: Annotated[
        int,
        typer.Option(
            "--context-tokens",
            help="QuALITY: tokens of context every pipeline hands the reader",
        ),
    ] = DEFAULT_CONTEXT_TOKENS,
    tree_option: Annotated[
        list[str] | None,
        typer.Option(
            "--tree-option",
            help="QuALITY tree pipelines: KEY=VALUE to build a variant tree (repeatable), e.g. "
            "leaves=semantic, max_words=200, base_resolution=3 (see `hoptree eval pipelines`)",
        ),
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            help="a label written into every row of this invocation (an interleaved "
            "comparison's chunk: rows of two runs with the same label were made beside each "
            "other, so their seconds compare)",
        ),
    ] = None,
    metrics_only: Annotated[
        bool,
        typer.Option(
            "--metrics-only",
            help="run nothing: rewrite metrics.json and report.md over the finished rows of "
            "this selection (a stopped run's rows, to commit them with their tables)",
        ),
    ] = False,
) -> None:
    """Run a pipeline over a question file; rerun the same command to resume. A QuALITY file
    (multiple choice over long articles) indexes each article and builds its trees as needed."""
    request = RunRequest(
        RunConfig(
            dataset=dataset,
            pipeline=pipeline,
            out=out_dir,
            fmt=fmt,
            setting=setting,
            limit=limit,
            offset=offset,
            types=tuple(question_type or ()),
            concurrency=concurrency,
            index=index,
            tree_options=tuple(tree_option or ()),
            batch=batch,
        ),
        k=k,
        passage_chars=passage_chars,
        context_tokens=context_tokens,
    )
    try:  # everything checkable without a model, checked first
        quality = request.check(metrics_only=metrics_only)
        metrics = request.metrics_only() if metrics_only else None
    except INPUT_ERRORS as exc:
        raise _fail(str(exc)) from exc
    if metrics is None:
        try:
            metrics = request.run(_settings())
        except ModelStartError as exc:
            err.print(Text.assemble(("the chat model did not start: ", "red"), str(exc)))
            raise typer.Exit(1) from exc
        except run_errors() as exc:
            raise _fail(str(exc)) from exc
    out.print(_metrics_table(metrics, quality=quality))
    out.print(f"[dim]{out_dir / REPORT_FILE}[/dim]", highlight=False)


@eval_app.command("compare")
def compare_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="run directories (with metrics.json), or settings directories (each holding "
            "runs below it, e.g. <setting>/<slice>/<pipeline>) whose runs of one path are paired"
        ),
    ],
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="also write the table as markdown here")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="write a grouped bar chart (PNG) here, and the paired gains beside it "
            "(<stem>-gains.png)",
        ),
    ] = None,
    common: Annotated[
        bool,
        typer.Option(
            "--common",
            help="score every run on the questions all of them finished (one dataset file)",
        ),
    ] = False,
    resamples: Annotated[
        int, typer.Option("--resamples", help="bootstrap resamples of the paired intervals")
    ] = DEFAULT_RESAMPLES,
    seed: Annotated[int, typer.Option("--seed", help="seed of the bootstrap")] = DEFAULT_SEED,
) -> None:
    """One table over several runs (and optionally a markdown file and a chart). Runs over one
    dataset file are also compared question by question: paired gains with bootstrap
    intervals, headroom between the best one-call RAG run and the oracle, per question type (in
    the markdown), and each run's seconds, calls and tokens against the first run with the
    answers that changed (the paired gains and cost on the terminal too). Settings directories
    (``one-at-a-time/with-hyde one-at-a-time/without-hyde``) pool the runs below them: each
    run in the table, and one paired analysis over every question of every slice."""
    if resamples < 1:
        raise _fail("--resamples must be >= 1")
    try:
        comparison = load_comparison(runs, common=common, resamples=resamples, seed=seed)
    except ReportError as exc:
        raise _fail(str(exc)) from exc
    # Piped into a file, rich would squeeze 13 columns into 80; keep the table whole there.
    console = out if out.is_terminal else Console(width=240)
    console.print(_comparison_table(comparison))
    if comparison.paired is not None:
        pooled = comparison.pooled_note()
        if pooled:
            console.print(pooled, highlight=False, markup=False)
        console.print(_gains_table(comparison.paired))
        if comparison.paired.costs:
            console.print(_cost_table(comparison.paired))
            for note in cost_notes(comparison.paired):
                console.print(note, highlight=False, markup=False)
    for note in comparison.warnings():
        err.print(Text.assemble(("note: ", "yellow"), note), highlight=False)
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(comparison.markdown(), encoding="utf-8")
        out.print(f"[dim]{markdown}[/dim]", highlight=False)
    if plot is not None:
        for path in write_comparison_plots(comparison, plot):
            out.print(f"[dim]{path}[/dim]", highlight=False)


def _comparison_table(comparison: Comparison) -> Table:
    table = Table(title="hoptree eval compare")
    table.add_column("run", no_wrap=True)
    for key, label in compare_columns(comparison.runs):
        table.add_column(label, justify="left" if key in ("dataset", "setting") else "right")
    for row in comparison_rows(comparison.runs):
        table.add_row(*row)
    return table


def _paired_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """A paired section on the terminal: the run and what is compared on the left, numbers on
    the right, as its markdown table has them."""
    table = Table(title=title)
    for index, column in enumerate(header):
        table.add_column(column, justify="left" if index < 2 else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def _gains_table(paired: PairedComparison) -> Table:
    return _paired_table(
        f"paired gains over {paired.reference} on {len(paired.ids)} shared questions "
        f"(95% bootstrap CI, {paired.resamples} resamples, seed {paired.seed})",
        *gains_table(paired),
    )


def _cost_table(paired: PairedComparison) -> Table:
    return _paired_table(
        f"paired cost against {paired.cost_reference} on {len(paired.ids)} shared "
        f"questions (95% bootstrap CI, {paired.resamples} resamples, seed {paired.seed})",
        *cost_table(paired),
    )


@eval_app.command("losses")
def losses_command(
    runs: Annotated[list[Path], typer.Argument(help="run directories (with details.jsonl)")],
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="also write the table as markdown here")
    ] = None,
    common: Annotated[
        bool, typer.Option("--common/--all", help="only the questions every run finished")
    ] = True,
) -> None:
    """Why each run's wrong answers are wrong: wrong span, gold not retrieved, not in the
    answer's context, misread (read from the rows; nothing is re-run)."""
    from evals.losses import losses_markdown

    _need_rows(runs)
    text = losses_markdown([Path(run) for run in runs], common=common)
    _print_table(text, markdown)


@eval_app.command("replay")
def replay_command(
    runs: Annotated[list[Path], typer.Argument(help="run directories (with details.jsonl)")],
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="also write the result as markdown here")
    ] = None,
) -> None:
    """Re-apply today's no-call answer rules (chains, comparisons) to a planner run's recorded
    findings, and score the answers they give: an estimate in a second, not a new run."""
    from evals.replay import replay_markdown

    _need_rows(runs)
    text = replay_markdown([Path(run) for run in runs])
    _print_table(text, markdown)


@eval_app.command("suite")
def suite_command(
    suite_name: Annotated[
        str, typer.Option("--suite", help=f"one of {', '.join(SUITES)}")
    ] = DEFAULT_SUITE.name,
    data: Annotated[
        Path, typer.Option("--data", help="folder holding hotpotqa/, 2wikimultihopqa/, musique/")
    ] = Path("../shared/data"),
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="results folder (default: the suite's, "
            + ", ".join(f"{s.out} for {n}" for n, s in SUITES.items())
            + ")",
        ),
    ] = None,
    stages: Annotated[
        list[str] | None,
        typer.Option(
            "--stage",
            help="repeatable, default all; "
            + "; ".join(f"{n}: {', '.join(s.stages)}" for n, s in SUITES.items()),
        ),
    ] = None,
    datasets: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="a slice (its folder; a bare name also picks its tune/ slice), repeatable, "
            "default all; " + "; ".join(f"{n}: {', '.join(s.slices)}" for n, s in SUITES.items()),
        ),
    ] = None,
    go: Annotated[
        bool, typer.Option("--run", help="run the unfinished runs, then write the comparisons")
    ] = False,
    scoreboard: Annotated[
        bool,
        typer.Option(
            "--scoreboard",
            help=f"also write the scoreboard (full against the best one-call run, per slice) "
            f"to <out>/{SCOREBOARD}; --run writes it too",
        ),
    ] = False,
    keep_journals: Annotated[
        bool,
        typer.Option(
            "--keep-journals",
            help=f"copy the journals of unfinished tree builds to <out>/<dataset>/{TREE_JOURNAL}"
            " (commit them: --run on a new machine resumes from them)",
        ),
    ] = False,
) -> None:
    """A committed suite: how far each run got; with --run, continue it (resumable)."""
    try:
        suite = get_suite(suite_name)
        runs = suite_runs(stages or list(suite.stages), datasets, suite)
    except SuiteError as exc:
        raise _fail(str(exc)) from exc
    out_dir = out_dir or Path(suite.out)
    missing = missing_dataset_files(runs, data)
    undrawn = [m for m in missing if "draw.py" in m]  # a fresh slice: the status still shows
    if (go and missing) or len(undrawn) < len(missing):
        raise _fail(f"dataset file not found: {', '.join(missing)} (set --data)")
    for file in undrawn:  # the status reads only the results folders
        err.print(f"note: no question file {file}", highlight=False)
    session = SuiteSession(suite, runs, data, out_dir, _settings())
    if keep_journals:
        for kept, added in session.keep_journals():
            out.print(f"{kept}: {added} new record(s)", highlight=False)
    if go:
        session.continue_runs(err.print)
    env = " ".join(f"{key}={value}" for key, value in suite.env.items())
    caption = f"suite {suite.name}; every --run child gets {env}" if env else None
    table = Table(title=f"evaluation suite in {out_dir}", caption=caption)
    for column in ("dataset", "pipeline", "questions", "status", "EM", "F1"):
        table.add_column(column, justify="right" if column in ("EM", "F1") else "left")
    for row in session.status_rows():
        table.add_row(*row)
    out.print(table)
    scores = session.scores()
    if scores:
        out.print(scoreboard_table(scores, suite))
    if scores and (scoreboard or go):
        out.print(f"wrote {session.write_scoreboard(scores)}", highlight=False)


def scoreboard_table(scores: list[SliceScore], suite: Suite) -> Table:
    """Slices as columns, so three slices fit a terminal of 80 columns (the markdown page has
    a slice a row)."""
    table = Table(
        title=f"scoreboard of {scores[0].agent}",
        caption="; ".join(growing_runs(scores)) or None,
    )
    table.add_column("")
    cells = [score_cells(score, suite.targets.get(score.slice)) for score in scores]
    for column in cells:
        table.add_column(column[0], justify="right")
    for n, label in enumerate(SCOREBOARD_HEADER[1:], start=1):
        table.add_row(label, *(column[n] for column in cells))
    return table


@eval_app.command("pipelines")
def pipelines_command() -> None:
    """List the pipelines that eval run --pipeline accepts."""
    table = Table(title="pipelines")
    table.add_column("name")
    table.add_column("retrievers")
    table.add_column("what it is")
    for spec in PIPELINES.values():
        table.add_row(spec.name, ", ".join(spec.needs) or "-", spec.description)
    out.print(table)
    quality = Table(title="pipelines for QuALITY files (multiple choice, one corpus per article)")
    for column in ("name", "retrievers", "what it is"):
        quality.add_column(column)
    for q in QUALITY_PIPELINES.values():
        quality.add_row(q.name, ", ".join(q.needs), q.description)
    out.print(quality)
    from evals.quality.corpora import CLUSTERER_KEYS, TREE_KEYS

    out.print(
        "--tree-option KEY=VALUE (tree pipelines): "
        + ", ".join(TREE_KEYS)
        + "; "
        + "; ".join(f"{name} only: {', '.join(keys)}" for name, keys in CLUSTERER_KEYS.items())
    )


@eval_app.command("quality-report")
def quality_report_command(
    runs: Annotated[list[Path], typer.Argument(help="QuALITY run directories")],
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="also write the report here")
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="write the chart (PNG) here")] = None,
    common: Annotated[
        bool, typer.Option("--common/--all", help="only the questions every run finished")
    ] = True,
) -> None:
    """Accuracy and HARD accuracy per pipeline on the same questions, the summary share of the
    context, tree stats per clustering method, the tree's gains beside the papers'."""
    from evals.quality.compare import write_comparison

    try:
        text = write_comparison(runs, markdown=markdown, plot=plot, common=common)
    except ReportError as exc:
        raise _fail(str(exc)) from exc
    sys.stdout.write(text)


@eval_app.command("plans")
def plans_command(
    runs: Annotated[list[Path], typer.Argument(help="planner run directories (full, ablations)")],
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", help="the question file (default: the one run.json names)"),
    ] = None,
    against: Annotated[
        list[Path] | None,
        typer.Option("--against", help="another run (oracle, hybrid): its F1 on each class"),
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="also write the table as markdown here")
    ] = None,
) -> None:
    """Why plans stay open, from the gold hops (MuSiQue, 2Wiki): resolved on or off the chain,
    a nameless query, a wrong finding upstream, or the failing hop's gold paragraph shown,
    retrieved below what was shown, or not retrieved (read from the rows). HotpotQA, which has
    gold paragraphs and no gold hops, gets the classes those allow."""
    from evals.plan_outcomes import PlanOutcomeError, plan_outcomes, plan_outcomes_markdown

    others = [Path(run) for run in against or []]
    _need_rows([*runs, *others])
    try:
        results = [plan_outcomes(Path(run), dataset, others) for run in runs]
    except PlanOutcomeError as exc:
        raise _fail(str(exc)) from exc
    text = plan_outcomes_markdown(results)
    _print_table(text, markdown)
