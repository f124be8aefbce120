"""``hoptree tree build|show``: the RAPTOR tree of an index directory (``INDEX/tree/``).

A typer sub-app; ``agent.cli.main`` mounts it with ``app.add_typer(tree_app, name="tree")``.
Commands stay thin: read documents, wire the runtime's models into ``tree.build.TreeBuilder``,
commit the tree with ``tree.store.save_tree``, print. Progress bars go to stderr; ``--json`` prints
exactly one JSON document on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent.progress import ProgressLines
from tree.build import BuildEvent, ProgressFn, TreeBuildError, TreeConfig
from tree.documents import DocumentError, SourceDocument, UnreadFile, read_documents
from tree.report import tree_report, ungrounded_summaries
from tree.store import JOURNAL_FILE, Mode, Tree, TreeStoreError, tree_exists

TREE_SUBDIR = "tree"
# some files of the sources gave no document (as `index build`: unsupported, corrupt, encrypted,
# no text layer); the others are in the tree
EXIT_FILES_NOT_READ = 3

tree_app = typer.Typer(help="Build and inspect the RAPTOR tree of an index.", no_args_is_help=True)
out = Console(emoji=False)  # ":b:" in a passage title is text, not an emoji code
err = Console(stderr=True, emoji=False)


def _settings() -> Any:
    from agent.cli.context import settings_or_exit

    return settings_or_exit()


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(2)


def tree_dir_of(index: Path) -> Path:
    return Path(index) / TREE_SUBDIR


@contextmanager
def build_progress(enabled: bool | None = None) -> Iterator[ProgressFn]:
    """Bars on stderr: documents turned into leaves, then per layer its clusters and how many
    of their summaries are done. Without a terminal the same events become timestamped lines,
    because a tree build runs for hours, usually in the background."""
    bars = sys.stderr.isatty() if enabled is None else enabled
    progress = Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
        disable=not bars,
    )
    lines = None if bars else ProgressLines(err)
    tasks: dict[tuple[str, str, int], Any] = {}

    def update(event: BuildEvent) -> None:
        group = "" if event.group in ("*", "") else f"{event.group[:12]} "
        if event.stage == "leaves":
            key, label = ("leaves", "", 0), "leaves (documents)"
        elif event.stage == "summaries":
            key = ("sum", event.group, event.layer)
            label = f"{group}layer {event.layer}: {event.total} clusters, summaries"
        else:
            if lines is not None and event.stage == "cluster":
                lines.note(f"{group}clustering {event.total} nodes of layer {event.layer}")
            elif lines is not None and event.stage == "layer":
                lines.note(f"{group}layer {event.layer} done: {event.done} nodes")
            return
        if lines is not None:
            lines.update(label, event.done, event.total)
            return
        if key not in tasks:
            tasks[key] = progress.add_task(label, total=event.total)
        progress.update(tasks[key], completed=event.done, total=event.total)

    with progress:
        yield update


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _print_report(report: dict[str, Any], title: str) -> None:
    table = Table(title=title)
    for column in ("layer", "nodes", "children/parent", "compression", "ungrounded"):
        table.add_column(column, justify="right")
    table.add_row("0 (leaves)", str(report["leaves"]), "", "", "")
    for row in report["per_layer"]:
        compression = "" if row["compression"] is None else f"{row['compression']:.3f}"
        share = row.get("share_with_unsupported_terms")
        table.add_row(
            str(row["layer"]),
            str(row["nodes"]),
            f"{row['mean_children']:.2f}",
            compression,
            "" if share is None else f"{100 * share:.0f}%",
        )
    out.print(table)
    ground = report.get("grounding") or {}
    if ground.get("summaries"):
        out.print(
            f"[dim]ungrounded: {ground['with_unsupported_terms']} of {ground['summaries']} "
            "summaries name a person, place, title or number that none of their children "
            f"has ({_share(ground['unsupported_share_of_terms'])} of all such terms)[/dim]"
        )
    compression = report["compression"]
    out.print(
        f"{report['documents']} document(s), mode {report['mode']}, clustering "
        f"{report['clustering']}; {report['summary_nodes']} summaries, mean children "
        f"{report['mean_children']:.2f}, compression "
        f"{'n/a' if compression is None else f'{compression:.3f}'}; "
        f"{report['llm_calls']} LLM calls, {report['prompt_tokens']} prompt + "
        f"{report['completion_tokens']} completion tokens"
        + (
            f"; {report['fallback_summaries']} fallback node(s)"
            if report["fallback_summaries"]
            else ""
        )
    )


@tree_app.command("build")
def build(
    sources: Annotated[
        list[Path],
        typer.Argument(
            help="text/markdown, pdf, html, docx files or folders, QuALITY .jsonl, "
            "L-CiteEval NarrativeQA .json"
        ),
    ],
    index: Annotated[
        Path | None, typer.Option("--index", help="index directory (default: the data dir's)")
    ] = None,
    clustering: Annotated[str, typer.Option("--clustering", help="gmm|leiden")] = "gmm",
    per_document: Annotated[
        bool | None,
        typer.Option(
            "--per-document/--one-tree",
            help="one tree per document in the same store, or one tree over all documents; "
            "default: per document for a folder of several documents, one tree otherwise, "
            "and an existing tree's own mode when adding to it",
        ),
    ] = None,
    leaves: Annotated[str, typer.Option("--leaves", help="chunks|semantic")] = "chunks",
    chunk_tokens: Annotated[int, typer.Option("--chunk-tokens", min=16, max=2000)] = 100,
    max_words: Annotated[
        int, typer.Option("--max-words", min=10, max=1000, help="summary length")
    ] = 100,
    max_layers: Annotated[int, typer.Option("--max-layers", min=1, max=20)] = 5,
    max_cluster_tokens: Annotated[
        int, typer.Option("--max-cluster-tokens", min=200, max=100_000, help="summarizer input")
    ] = 3500,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=0, max=64, help="0 = the model's parallel slots")
    ] = 0,
    call_timeout: Annotated[
        float, typer.Option("--call-timeout", min=1.0, help="seconds per summary call")
    ] = 300.0,
    only: Annotated[
        list[str] | None, typer.Option("--doc", help="build only this document id (repeatable)")
    ] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="build anew from these sources (reusing summaries)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Build (or extend) the tree in INDEX/tree; a killed build resumes where it stopped.

    Exit 3 when some files gave no document (each is named on stderr), 2 on an error."""
    from agent.runtime.runtime import Runtime
    from tree.build import TreeBuilder
    from tree.journal import BuildJournal
    from tree.store import build_lock, load_tree, save_tree

    settings = _settings()
    if clustering not in ("gmm", "leiden"):
        raise _fail(f"--clustering must be gmm or leiden, not {clustering!r}")
    if leaves not in ("chunks", "semantic"):
        raise _fail(f"--leaves must be chunks or semantic, not {leaves!r}")
    target = tree_dir_of(index if index is not None else settings.default_index_dir)
    unread: list[UnreadFile] = []
    try:
        documents = read_documents(sources, only=only or (), unread=unread)
    except DocumentError as exc:
        raise _fail(str(exc)) from exc
    for item in unread:
        err.print(f"[yellow]not read[/yellow] {escape(str(item.path))}: {escape(item.detail)}")
    exit_code = EXIT_FILES_NOT_READ if unread else 0
    if not documents:
        raise _fail("the sources hold no documents with text")
    if concurrency == 0:
        concurrency = settings.llm.local_parallel if settings.llm.embedded else 4
    config = TreeConfig(
        clustering=clustering,
        leaves=leaves,  # type: ignore[arg-type]
        chunk_tokens=chunk_tokens,
        max_layers=max_layers,
        max_words=max_words,
        max_cluster_tokens=max_cluster_tokens,
        concurrency=concurrency,
        call_timeout_s=call_timeout,
    )
    try:
        with build_lock(target):
            previous = load_tree(target) if tree_exists(target) else None
            mode = tree_mode(per_document, sources, documents, None if rebuild else previous)
            if per_document is None:
                err.print(f"[dim]{_mode_note(mode, len(documents), previous, rebuild)}[/dim]")
            config = replace(config, mode=mode)
            if previous is not None and not rebuild:
                _check_extendable(previous, config, documents)
                known = {d.id for d in previous.documents}
                if all(d.id in known for d in documents):
                    _emit(previous, target, as_json, note="nothing new")
                    raise typer.Exit(exit_code)
            journal = BuildJournal(target / JOURNAL_FILE)
            with Runtime(settings) as runtime, build_progress() as progress:
                builder = TreeBuilder(
                    runtime.chat.model,
                    runtime.embeddings,
                    config,
                    journal=journal,
                    progress=progress,
                    embedding_model=settings.embeddings.model,
                )
                if previous is not None and not rebuild:
                    tree = asyncio.run(builder.add(previous, documents))
                else:
                    tree = asyncio.run(builder.build(documents, previous=previous))
                cache = runtime.llm_cache.stats.as_dict() if runtime.llm_cache else {}
                usage = runtime.usage.by_step().get("tree_summary")
                tree.stats["last_build"]["llm_cache"] = cache
                if usage is not None:
                    tree.stats["last_build"]["usage_tracker"] = usage.__dict__.copy()
                tree.stats["last_build"]["model"] = runtime.chat.label
            save_tree(tree, target)
            journal.remove()
    except (TreeBuildError, TreeStoreError) as exc:
        raise _fail(str(exc)) from exc
    _emit(tree, target, as_json)
    raise typer.Exit(exit_code)


def tree_mode(
    per_document: bool | None,
    sources: list[Path],
    documents: list[SourceDocument],
    extending: Tree | None,
) -> Mode:
    """``--per-document`` / ``--one-tree`` when given. Otherwise the tree being extended keeps
    its mode (a mode change needs ``--rebuild``); a new tree over a folder of several
    documents gets one tree per document, because clusters that mix unrelated documents make
    summaries that blend them (a small model then invents links between them), while one file
    or a list of files named one by one stays one tree, as before."""
    if per_document is not None:
        return "per_document" if per_document else "single"
    if extending is not None:
        return extending.mode
    folder = any(Path(source).is_dir() for source in sources)
    return "per_document" if folder and len(documents) > 1 else "single"


def _mode_note(mode: Mode, documents: int, previous: Tree | None, rebuild: bool) -> str:
    if previous is not None and not rebuild:
        kind = "one tree per document" if mode == "per_document" else "one tree over all"
        return f"adding to the index's tree, built as {kind}"
    if mode == "per_document":
        return f"one tree per document ({documents} documents from a folder; --one-tree for one)"
    return "one tree over all the documents (--per-document for one tree each)"


def _check_extendable(previous: Tree, config: TreeConfig, documents: list[SourceDocument]) -> None:
    shape = config.shape()
    if previous.config and previous.config != shape:
        changed = sorted(k for k in shape if previous.config.get(k) != shape[k])
        raise _fail(
            f"the tree in this index was built with other settings ({', '.join(changed)}); "
            "pass the same options to add documents, or --rebuild"
        )
    by_id = {d.id: d for d in previous.documents}
    for doc in documents:
        entry = by_id.get(doc.id)
        if entry is not None and entry.sha256 != doc.sha256:
            raise _fail(f"document {doc.id!r} changed since the tree was built; use --rebuild")


def _emit(tree: Tree, target: Path, as_json: bool, note: str = "", examples: int = 0) -> None:
    report = {"path": str(target), **tree_report(tree)}
    if note:
        report["note"] = note
    if examples:
        report["ungrounded_examples"] = ungrounded_summaries(tree, examples)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        return
    if note:
        err.print(f"[dim]{note}: every document is already in the tree[/dim]")
    _print_report(report, f"tree {target}")
    for example in report.get("ungrounded_examples", []):
        out.print(
            f"\n[bold]{example['id']}[/bold] (layer {example['layer']}), not in its children: "
            f"{', '.join(example['unsupported'])}\n{example['text'][:600]}",
            highlight=False,
        )
    last = report["last_build"]
    if last and not note:
        out.print(
            f"[dim]this build: {last.get('seconds', 0)}s, {last.get('summaries', 0)} new "
            f"summaries, {last.get('summaries_reused', 0)} reused, "
            f"{last.get('summaries_resumed', 0)} resumed, {last.get('llm_cache_hits', 0)} cache "
            f"hits, {last.get('fallbacks', 0)} fallbacks[/dim]"
        )


@tree_app.command("show")
def show(
    index: Annotated[Path | None, typer.Option("--index", help="index directory")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    ungrounded: Annotated[
        int,
        typer.Option(
            "--ungrounded",
            min=0,
            max=1000,
            help="also print this many summaries that name what their children do not",
        ),
    ] = 0,
) -> None:
    """Layers, nodes per layer, children per parent, compression, grounding and what the build
    cost."""
    from tree.store import load_tree

    settings = _settings()
    target = tree_dir_of(index if index is not None else settings.default_index_dir)
    try:
        tree = load_tree(target)
    except TreeStoreError as exc:
        raise _fail(str(exc)) from exc
    _emit(tree, target, as_json, examples=ungrounded)
