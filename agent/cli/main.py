"""The ``hoptree`` command line. Commands are thin: they parse, call into ``agent``, and print.

Human output goes through rich; ``--json`` prints exactly one JSON document on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from agent.cli.context import (
    err,
    out,
    print_doctor,
    set_config,
    settings_or_exit,
    usage_error,
)
from agent.cli.index import index_remove, index_sync, print_build_report
from agent.cli.plugins import mount_command_plugins
from agent.settings import Settings

app = typer.Typer(
    name="hoptree",
    help="Agentic hierarchical search for multi-hop questions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML settings file (default: ./hoptree.toml)")
    ] = None,
) -> None:
    set_config(config)


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Check every part (chat model, embeddings, index, cache) and measure its speed."""
    from agent.cli.doctor import run_doctor
    from agent.progress import byte_progress

    settings = settings_or_exit()
    with byte_progress("joining the local model") as progress:
        report = run_doctor(settings, progress)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, default=str) + "\n")
    else:
        print_doctor(report)
    raise typer.Exit(0 if report["ok"] else 1)


# --------------------------------------------------------------------------- index and retrieve

index_app = typer.Typer(help="Build and inspect index directories.", no_args_is_help=True)
app.add_typer(index_app, name="index")


def _index_dir_or_default(index: Path | None, settings: Settings) -> Path:
    return index if index is not None else settings.default_index_dir


_usage_error = usage_error


@index_app.command("build")
def index_build(
    sources: Annotated[
        list[Path],
        typer.Argument(
            help="files or folders: jsonl, HotpotQA/FlashRAG/MuSiQue, text, md, pdf, html, docx"
        ),
    ],
    index: Annotated[
        Path | None, typer.Option("--index", help="index directory (default: the data dir's)")
    ] = None,
    fmt: Annotated[
        str,
        typer.Option("--format", help="auto|jsonl|hotpotqa|flashrag|musique|text|pdf|html|docx"),
    ] = "auto",
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="replace the index with these sources only")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the build report as JSON")] = False,
) -> None:
    """Ingest files or dataset paragraphs; re-runs add only what is new, and a file whose
    content changed replaces its passages (`index sync` also drops deleted files).

    Exit 0 when every file was read, 3 when some were not (an unsupported type, a corrupt or
    encrypted document, a PDF without a text layer, binary data, a dangling link, a file or
    folder it may not read: each is named with its reason, the rest is indexed), 2 on a usage
    error (nothing is written)."""
    from agent.indexing import build, build_progress
    from searchers.corpus import FORMATS, CorpusError
    from searchers.retrieval import RetrievalError

    settings = settings_or_exit()
    if fmt not in FORMATS:
        raise _usage_error(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    target = _index_dir_or_default(index, settings)
    try:
        with build_progress() as progress:
            report = build(settings, sources, target, fmt=fmt, rebuild=rebuild, progress=progress)
    except (CorpusError, RetrievalError) as exc:
        raise _usage_error(str(exc)) from exc
    raise typer.Exit(print_build_report(report, as_json))


index_app.command("remove")(index_remove)
index_app.command("sync")(index_sync)


@index_app.command("info")
def index_info(
    index: Annotated[Path | None, typer.Option("--index", help="index directory")] = None,
    verify: Annotated[
        bool, typer.Option("--verify", help="check every file's size and sha256")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the manifest as JSON")] = False,
) -> None:
    """Show an index's manifest: models, counts, sources, a stale tree; exit 1 if --verify
    finds damage."""
    from rich.text import Text

    from searchers.index_dir import IndexDir, IndexDirError, stale_tree

    settings = settings_or_exit()
    try:
        opened = IndexDir.open(_index_dir_or_default(index, settings))
    except IndexDirError as exc:
        raise _usage_error(str(exc)) from exc
    problems = opened.verify() if verify else []
    stale = stale_tree(opened.path, opened.manifest)
    if as_json:
        doc = {
            **opened.manifest,
            "tree_stale": stale is not None,
            **({"problems": problems} if verify else {}),
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        m = opened.manifest
        dense = m["components"]["dense"]
        out.print(
            f"[bold]{opened.path}[/bold] generation {m['generation']}, {m['passages']} passages"
        )
        emb = m["embedding"]
        backends = f", vectors by {' + '.join(emb['backends'])}" if emb.get("backends") else ""
        out.print(f"embedding model {emb['model']} (dim {emb['dimension']}{backends})")
        out.print(
            f"dense index {dense['kind']}; created {m['created_at']}, updated {m['updated_at']}"
        )
        for src in m["sources"]:
            out.print(f"  {src['path']}  {src['format']}  {src['passages']} passages")
        if stale is not None:
            err.print(
                Text.assemble(
                    ("tree stale ", "yellow"),
                    f"{opened.path / 'tree'}: {len(stale.get('sources', []))} source(s) changed "
                    f"or removed since {stale.get('since')}; rebuild it: hoptree tree build "
                    f"SOURCES --index {opened.path} --rebuild",
                ),
                soft_wrap=True,
                highlight=False,
            )
        for problem in problems:
            err.print(f"[red]damaged:[/red] {problem}")
        if verify and not problems:
            out.print("[green]all files match the manifest[/green]")
    raise typer.Exit(1 if problems else 0)


def _print_hits(query: str, hits: list[Any], kind: str) -> None:
    table = Table(title=f"{kind}: {escape(query)}", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("title")
    table.add_column("id", style="dim", overflow="fold")
    table.add_column("text")
    for rank, hit in enumerate(hits, start=1):
        text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
        table.add_row(
            str(rank), f"{hit.score:.4f}", escape(hit.label), escape(hit.id), escape(text)
        )
    out.print(table)


@app.command()
def retrieve(
    query: Annotated[str | None, typer.Argument(help="the query (or use --queries)")] = None,
    index: Annotated[Path | None, typer.Option("--index", help="index directory")] = None,
    retriever: Annotated[str, typer.Option("--retriever", help="sparse|dense|hybrid")] = "hybrid",
    k: Annotated[int, typer.Option("-k", help="hits per query", min=1, max=1000)] = 10,
    queries: Annotated[
        Path | None,
        typer.Option("--queries", help='batch: JSON lines {"id", "query"}, one result line each'),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Raw index lookup (no LLM): the top k passages for a query."""
    from agent.indexing import QueryFileError, hits_json, open_retriever, read_queries, run_batch
    from agent.runtime.embeddings import EmbeddingModelError
    from searchers.index_dir import RETRIEVER_KINDS
    from searchers.retrieval import RetrievalError

    settings = settings_or_exit()
    if retriever not in RETRIEVER_KINDS:
        raise _usage_error(f"--retriever must be one of {', '.join(RETRIEVER_KINDS)}")
    if (query is None) == (queries is None):
        raise _usage_error("give either a QUERY or --queries FILE.jsonl, not both or neither")
    if query is not None and not query.strip():
        raise _usage_error("the query is empty")
    batch = []
    if queries is not None:
        try:
            batch = read_queries(queries)
        except QueryFileError as exc:
            raise _usage_error(str(exc)) from exc
    try:
        searcher = open_retriever(settings, _index_dir_or_default(index, settings), retriever)
        if query is not None:
            hits = searcher.retrieve(query, k)
            if as_json:
                sys.stdout.write(json.dumps(hits_json(query, retriever, k, hits)) + "\n")
            else:
                _print_hits(query, hits, retriever)
            return

        def emit(result: dict[str, Any]) -> None:
            if as_json:
                sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            else:
                from searchers.passages import Hit, Passage

                _print_hits(
                    f"[{result['id']}] {result['query']}",
                    [Hit(Passage.from_json(h), h["score"], h["retriever"]) for h in result["hits"]],
                    retriever,
                )

        run_batch(searcher, batch, k, emit)
    except (RetrievalError, EmbeddingModelError) as exc:
        raise _usage_error(str(exc)) from exc


@asynccontextmanager
async def _open_served_agent(index: Path) -> AsyncIterator[Any]:
    """The planner over ``index`` with conversation threads, for ``hoptree serve``."""
    from agent.hoptree_agent import open_agent

    async with open_agent(settings_or_exit(), index, threads=True) as agent:
        yield agent


def _mount_subcommands() -> None:
    """Command groups that live in their own modules; they share ``agent.cli.context`` with
    this one and never import it back."""
    from agent.cli.ask import ask_command, demo_command
    from agent.cli.mcp import add_mcp_command
    from agent.cli.search import search_command
    from agent.cli.serve import add_serve_command
    from agent.cli.tree import tree_app

    app.command("search")(search_command)
    app.command("ask")(ask_command)
    app.command("demo")(demo_command)
    add_serve_command(app, _open_served_agent)
    add_mcp_command(app)
    app.add_typer(tree_app, name="tree")


_mount_subcommands()
mount_command_plugins(app)  # `hoptree eval` and any other package's commands


def main() -> None:
    app()


if __name__ == "__main__":
    main()
