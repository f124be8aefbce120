"""`hoptree search`: one low-level searcher with its LLM loop, and the trace of what it tried."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from agent.progress import ProgressLines, byte_progress
from searchers.searcher import Attempt, SearchResult

out = Console(emoji=False)  # ":b:" in a passage title is text, not an emoji code
err = Console(stderr=True, emoji=False)


def _label(attempt: Attempt) -> str:
    verdict = attempt.verdict
    if verdict is None:
        mark = "[dim]not verified[/dim]"
    elif verdict.sufficient:
        mark = "[green]sufficient[/green]"
    else:
        mark = "[red]insufficient[/red]"
    cov = f" cov={verdict.coverage:.2f}" if verdict and verdict.coverage is not None else ""
    llm = f" llm={verdict.llm_says}" if verdict and verdict.llm_says is not None else ""
    note = f" [dim]({attempt.note})[/dim]" if attempt.note else ""
    query = attempt.query if len(attempt.query) < 160 else attempt.query[:157] + "..."
    return (
        f"#{attempt.id} [bold]{attempt.operation}[/bold] {query!r} -> {len(attempt.hit_ids)} hits,"
        f" {mark}{cov}{llm}{note}"
    )


def render_trace(result: SearchResult) -> Tree:
    """The refinement tree: each query under the one it was derived from."""
    root = Tree(
        f"[bold]{result.searcher}[/bold] searcher: {result.query!r} — stopped: {result.stopped}, "
        f"{result.llm_calls} LLM calls, {result.ms / 1000:.1f}s"
    )
    nodes: dict[int, Tree] = {}
    for attempt in result.attempts:
        parent = nodes.get(attempt.parent) if attempt.parent is not None else None
        label = _label(attempt)
        if attempt.id == result.best_attempt:
            label += " [yellow]<- best[/yellow]"
        nodes[attempt.id] = (parent or root).add(label)
    return root


def print_result(result: SearchResult) -> None:
    out.print(render_trace(result))
    if result.error:
        out.print(f"[yellow]note:[/yellow] {escape(result.error)}")
    table = Table(title="hits")
    table.add_column("#", justify="right")
    table.add_column("id")
    table.add_column("title")
    table.add_column("score", justify="right")
    table.add_column("text")
    for rank, hit in enumerate(result.hits, start=1):
        text = hit.text if len(hit.text) < 120 else hit.text[:117] + "..."
        table.add_row(
            str(rank), escape(hit.id), escape(hit.label), f"{hit.score:.3f}", escape(text)
        )
    out.print(table)


def search_command(
    query: Annotated[str, typer.Argument(help="one atomic query")],
    index: Annotated[Path, typer.Option("--index", help="index directory")],
    searcher: Annotated[
        str, typer.Option("--searcher", help="sparse | dense | web | ...")
    ] = "sparse",
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="hits to return")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Run one low-level searcher (LLM rewriting + refinement) and show what it tried."""
    from agent.cli.context import settings_or_exit
    from agent.rules.question import QuestionError, clean_question
    from agent.runtime.runtime import Runtime
    from agent.searching import create_searcher
    from searchers.registry import SearcherRegistryError
    from searchers.retrieval import RetrievalError

    settings = settings_or_exit()
    try:
        query = clean_question(query)
    except QuestionError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    # progress on stderr whatever stdout is (--json keeps stdout to its one document): the
    # local model's first join, then one line when the search starts and one when it ends,
    # since a stand-alone search may spend minutes on its LLM rewrites
    lines = ProgressLines(err)
    with (
        byte_progress("joining the local model") as joining,
        Runtime(settings, progress=joining) as runtime,
    ):
        try:
            engine = create_searcher(runtime, index, searcher)
        except (SearcherRegistryError, RetrievalError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        lines.note(f"{searcher} searching {query!r}")
        result = asyncio.run(engine.search(query, k=k))
        lines.note(
            f"{searcher} stopped ({result.stopped}): {len(result.hits)} hit(s), "
            f"{len(result.attempts)} queries tried, {result.llm_calls} LLM calls"
        )
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
    else:
        print_result(result)
