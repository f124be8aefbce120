"""`hoptree ask`: the whole planner on one question, with its plan tree and citations; and the
demo that builds the bundled corpus and asks a multi-hop question on the embedded defaults."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from agent.progress import ProgressLines
from agent.results import AskResult, TraceEvent
from agent.trace_lines import draft_sources, progress_line, replaced_line

out = Console(emoji=False)  # ":b:" in a passage title is text, not an emoji code
err = Console(stderr=True, emoji=False)

DEMO_CORPUS = Path(__file__).resolve().parent / "demo" / "hotpotqa_demo.jsonl"
DEMO_QUESTION = (
    'The band who released the debut album "Tinted Windows" had their first performance in '
    "what city?"
)


def _short(text: str, limit: int = 110) -> str:
    text = " ".join(text.split())
    return escape(text if len(text) <= limit else text[: limit - 3] + "...")


def _search_label(search: dict[str, Any]) -> str:
    mark = "[green]verified[/green]" if search["sufficient"] else "[yellow]unverified[/yellow]"
    if search.get("error") and search["stopped"] == "error":
        mark = f"[red]failed: {_short(search['error'], 80)}[/red]"
    return (
        f"[bold]{search['searcher']}[/bold] {mark} — {len(search['attempts'])} queries tried, "
        f"{search['llm_calls']} LLM calls, {search['ms'] / 1000:.1f}s, stopped: {search['stopped']}"
    )


def plan_tree(result: AskResult) -> Tree:
    """Question -> atomic queries (by round) -> each searcher's refinements -> the summary."""
    root = Tree(f"[bold]{_short(result.question, 150)}[/bold]")
    rounds: dict[int, Tree] = {}
    verdicts = {v.get("round"): v for v in result.verdicts}
    for sub in result.sub_queries:
        if sub.round not in rounds:
            rounds[sub.round] = root.add(f"round {sub.round} ({sub.origin})")
        mark = "[green]answered[/green]" if sub.answered else "[red]unanswered[/red]"
        node = rounds[sub.round].add(f"{sub.id}: [cyan]{_short(sub.query)}[/cyan] {mark}")
        for search in sub.searches:
            branch = node.add(_search_label(search))
            for attempt in search["attempts"][:12]:
                verdict = attempt.get("verdict") or {}
                ok = "[green]ok[/green]" if verdict.get("sufficient") else "[dim]no[/dim]"
                best = (
                    " [yellow]<- best[/yellow]" if attempt["id"] == search["best_attempt"] else ""
                )
                branch.add(f"{attempt['operation']}: {_short(attempt['query'], 90)} {ok}{best}")
            if len(search["attempts"]) > 12:
                branch.add(f"[dim]... {len(search['attempts']) - 12} more[/dim]")
        if sub.answered:
            node.add(f"finding: {_short(sub.summary, 200)}")
        elif sub.proposed:
            node.add(f"finding: [red]unsupported[/red] {_short(sub.proposed, 200)}")
        else:
            node.add("finding: [dim]not found[/dim]")
    for rnd, verdict in sorted(verdicts.items()):
        if rnd in rounds:
            ok = "[green]sufficient[/green]" if verdict["sufficient"] else "[red]insufficient[/red]"
            missing = f" — missing: {_short(verdict['missing'], 100)}" if verdict["missing"] else ""
            rounds[rnd].add(f"verdict: {ok}{missing}")
    return root


def print_result(result: AskResult) -> None:
    out.print(
        Panel(
            f"[bold]{escape(result.short_answer)}[/bold]\n\n{escape(result.answer)}",
            title="answer",
            expand=False,
        )
    )
    out.print(plan_tree(result))
    table = Table(title="citations")
    table.add_column("[n]", justify="right")
    table.add_column("title")
    table.add_column("passage")
    for c in result.citations:
        table.add_row(str(c.n), escape(c.label), _short(c.url or c.text, 140))
    out.print(table)
    out.print(
        f"[dim]{result.seconds:.1f}s, {result.llm_calls} LLM calls, {result.prompt_tokens} prompt +"
        f" {result.completion_tokens} completion tokens, stopped: {result.stopped}"
        + (f", searchers: {', '.join(result.searchers)}" if result.searchers else "")
        + "[/dim]"
    )
    replaced = replaced_line(result.draft, result.final_choice, result.short_answer)
    if replaced:
        out.print(f"[yellow]draft replaced:[/yellow] {escape(replaced)}")
    for problem in result.errors:
        out.print(f"[yellow]note:[/yellow] {escape(problem)}")


def progress_printer() -> Callable[[TraceEvent], None]:
    """Each step's progress line on stderr as it happens, whatever stdout is (``--json``
    writes its one document there, and a question on the local model takes minutes): dim on
    a terminal, timestamped plain lines in a pipe or a log, as the other long commands."""
    lines = None if err.is_terminal else ProgressLines(err)

    def note(line: str, *, dim: bool = True) -> None:
        if lines is not None:
            lines.note(escape(line))
        elif dim:
            err.print(f"[dim]{escape(line)}[/dim]", highlight=False)
        else:
            err.print(escape(line), highlight=False)

    def show(event: TraceEvent) -> None:
        line = progress_line(event)
        if not line:
            return
        note(line)
        if event.kind == "draft":
            for extra in draft_lines(event.data):
                note(extra, dim=False)  # an answer to read, not a step to skim

    return show


def draft_lines(data: dict[str, Any]) -> list[str]:
    """The draft's cited answer and its sources' titles, printed under its progress line the
    moment it exists: on the local model the plan may take a minute more, and the draft is
    often the answer. None for a draft that could not be written."""
    if data.get("short_answer") is None or not data.get("answer"):
        return []
    lines = [f"  draft: {' '.join(str(data['answer']).split())}"]
    sources = draft_sources(data)
    return [*lines, f"  {sources}"] if sources else lines


async def run_question(agent: Any, question: str, thread_id: str | None, live: bool) -> AskResult:
    """The agent's answer; with ``live``, each step's progress line on stderr as it happens."""
    show = progress_printer() if live else None
    return await agent.ask(question, thread_id=thread_id, on_event=show)


async def _ask(
    settings: Any,
    index: Path,
    question: str,
    thread: str | None,
    searchers: list[str] | None,
    live: bool,
) -> AskResult:
    from agent.hoptree_agent import open_agent
    from agent.progress import byte_progress

    # the first question on the embedded model joins its 1.1 GB file: say so on stderr too
    with byte_progress("joining the local model") as joining:
        async with open_agent(
            settings,
            index,
            searchers=searchers,
            threads=thread is not None,
            progress=joining if live else None,
        ) as agent:
            return await run_question(agent, question, thread, live)


def ask_command(
    question: Annotated[str, typer.Argument(help="the question")],
    index: Annotated[Path, typer.Option("--index", help="index directory")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    searcher: Annotated[
        list[str] | None,
        typer.Option("--searcher", help="searchers to use (repeat); default: settings"),
    ] = None,
    thread: Annotated[
        str | None, typer.Option("--thread", help="conversation id; follow-ups can refer back")
    ] = None,
    trace: Annotated[bool, typer.Option("--trace", help="with --json: include the trace")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="no progress lines on stderr")
    ] = False,
) -> None:
    """Answer a question with the whole planner; print the answer, plan tree and citations.

    Progress goes to stderr, one line per step, with --json too (stdout then holds only the
    JSON document). The searchers are the settings' (HOPTREE_PLANNER__SEARCHERS) or, unset,
    sparse and dense plus tree when the index has one; the result names them."""
    from agent.cli.context import settings_or_exit
    from agent.rules.question import QuestionError, clean_question
    from agent.service import AgentError
    from searchers.registry import SearcherRegistryError
    from searchers.retrieval import RetrievalError

    settings = settings_or_exit()
    try:
        question = clean_question(question, max_chars=settings.server.max_question_chars)
        result = asyncio.run(_ask(settings, index, question, thread, searcher, live=not quiet))
    except (QuestionError, SearcherRegistryError, RetrievalError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    except AgentError as exc:
        err.print(f"[red]the run failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(with_trace=trace), ensure_ascii=False) + "\n")
    else:
        print_result(result)


def demo_command(
    question: Annotated[str, typer.Argument(help="a multi-hop question")] = DEMO_QUESTION,
    index: Annotated[
        Path | None, typer.Option("--index", help="default: <data dir>/demo-index")
    ] = None,
) -> None:
    """The main job on embedded defaults: check the parts, index the bundled HotpotQA sample
    (300 paragraphs, CC BY-SA 4.0), and answer a multi-hop question with the plan tree."""
    from agent.cli.context import print_doctor, settings_or_exit
    from agent.cli.doctor import run_doctor
    from agent.indexing import build, build_progress
    from agent.progress import byte_progress
    from agent.service import AgentError

    settings = settings_or_exit()
    err.print(
        "[dim]checking every part: the chat model (the first run joins the 1.1 GB local model "
        "and starts llama.cpp), the embeddings, the index...[/dim]"
    )
    target = index or settings.data_dir / "demo-index"
    with byte_progress("joining the local model") as progress:
        report = run_doctor(settings, progress, index_dir=target)
    print_doctor(report)
    if not report["llm"]["ok"] or not report["embeddings"]["ok"]:
        raise typer.Exit(1)
    started = time.monotonic()
    err.print(f"[dim]indexing the bundled sample into {target}...[/dim]")
    with build_progress() as bar:
        built = build(settings, [DEMO_CORPUS], target, progress=bar)
    out.print(
        f"[dim]demo index {target}: {built.total} passages from the bundled HotpotQA "
        f"sample ({time.monotonic() - started:.0f}s)[/dim]"
    )
    out.print(f"\n[bold]Q:[/bold] {escape(question)}\n")
    try:
        result = asyncio.run(_ask(settings, target, question, None, None, live=True))
    except AgentError as exc:
        err.print(f"[red]the run failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    print_result(result)
    out.print(
        "\nNext: [bold]hoptree serve --index "
        f"{target}[/bold] and open the page it prints to watch the plan grow live."
    )
