"""``hoptree index remove|sync``, and the build report every index command prints.

Mounted on the ``index`` sub-app by ``agent.cli.main`` (which keeps ``build``, ``info`` and
``retrieve``). A removal or a sync is a build (``searchers.index_build.build_index``): it writes
a new generation without the passages that left and commits it with the manifest, so a killed
run leaves the previous index readable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from agent.cli.context import err, out, settings_or_exit, usage_error
from searchers.source_files import display_path

# some files of the sources were not read (unsupported, corrupt, encrypted, no text layer,
# binary, unreadable: searchers.source_reading.FailedSource lists the reasons)
EXIT_FILES_NOT_READ = 3


def print_build_report(report: Any, as_json: bool) -> int:
    """The report of a build, removal or sync, as a table and a summary line (or one JSON
    document); the exit code: 3 when some files were not read."""
    exit_code = EXIT_FILES_NOT_READ if report.failed else 0
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return exit_code
    if report.sources or report.removed_sources:
        table = Table(title=f"index {report.path} (generation {report.generation})")
        for column in ("source", "format", "change", "passages", "added", "removed"):
            if column in ("source", "format"):  # a long name folds; "text (windows-1252)" wraps
                table.add_column(column, overflow="fold", justify="left")
            else:
                table.add_column(column, justify="right", no_wrap=True)
        for src in report.sources:
            table.add_row(
                Text(display_path(src.name)), _format_cell(src), src.change, str(src.passages),
                str(src.added), str(src.removed),
            )  # fmt: skip
        for gone in report.removed_sources:
            table.add_row(Text(display_path(gone.name)), "", "removed", "", "", str(gone.removed))
        out.print(table)
    verb = "added" if report.changed else "nothing new;"
    removed = f", removed {report.removed}" if report.removed else ""
    out.print(
        f"{verb} {report.added} passage(s){removed}; {report.total} in the index; "
        f"{report.seconds:.1f}s"
    )
    if report.tree_stale:
        err.print(
            Text.assemble(
                ("tree stale ", "yellow"),
                f"{Path(report.path) / 'tree'} still summarises the previous text of changed or "
                "removed files; rebuild it: hoptree tree build SOURCES --index "
                f"{report.path} --rebuild",
            ),
            soft_wrap=True,
            highlight=False,
        )
    print_not_read(report.failed, report.skipped)
    return exit_code


def _format_cell(src: Any) -> Text:
    """The format column: ``text`` for UTF-8, ``text (windows-1252)`` when the file was read
    in another encoding, so a guessed encoding is seen where the file is listed."""
    encoding = getattr(src, "encoding", None)
    if encoding and encoding != "utf-8":
        return Text(f"{src.format} ({encoding})")
    return Text(src.format)


def print_not_read(failed: list[Any], skipped: list[dict[str, Any]]) -> None:
    """Every file of the sources that was not read, on stderr: the failed ones (exit 3) as
    warnings with their reason, the deliberately skipped ones (stores, hidden, ignored, links
    to folders) dimmed. A name is printed on one line whatever it holds (``display_path``)."""
    for item in skipped:
        path = display_path(item["path"])
        line = f"skipped {path}: {item.get('detail') or item['reason']}"
        err.print(Text(line, style="dim"), soft_wrap=True, highlight=False)
    for item in failed:
        err.print(
            Text.assemble(
                ("not read ", "yellow"),
                f"{display_path(item.path)}: {item.detail or item.reason} [{item.reason}]",
            ),
            soft_wrap=True,
            highlight=False,
        )
    if failed:
        err.print(
            f"{len(failed)} file(s) not read (exit {EXIT_FILES_NOT_READ}); the others are indexed"
            " (an indexed file that could not be read keeps its previous passages)",
            highlight=False,
        )


def _index_or_default(index: Path | None) -> tuple[Any, Path]:
    settings = settings_or_exit()
    return settings, index if index is not None else settings.default_index_dir


def index_remove(
    sources: Annotated[
        list[Path],
        typer.Argument(help="indexed files (they may be deleted already), or folders of them"),
    ],
    index: Annotated[Path | None, typer.Option("--index", help="index directory")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Remove files' passages from the sparse, dense and passage stores.

    Exit 2, writing nothing, when a path is not a source of the index (`index info` lists
    them). A passage another file also gave stays."""
    from agent.indexing import build_progress, remove_sources
    from searchers.corpus import CorpusError
    from searchers.retrieval import RetrievalError

    settings, target = _index_or_default(index)
    try:
        with build_progress() as progress:
            report = remove_sources(settings, sources, target, progress=progress)
    except (CorpusError, RetrievalError) as exc:
        raise usage_error(str(exc)) from exc
    raise typer.Exit(print_build_report(report, as_json))


def index_sync(
    folders: Annotated[
        list[Path],
        typer.Argument(help="folders (or files) the index must match"),
    ],
    index: Annotated[Path | None, typer.Option("--index", help="index directory")] = None,
    fmt: Annotated[
        str,
        typer.Option("--format", help="auto|jsonl|hotpotqa|flashrag|musique|text|pdf|html|docx"),
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Make the index match folders: add new files, replace changed ones, drop deleted ones.

    Unchanged files (same checksum) are not read again. Indexed files outside these folders are
    left alone; an index inside a folder it indexes is never read as a source. Exit 0, or 3
    when some files were not read (each is named; an indexed one keeps its passages)."""
    from agent.indexing import build, build_progress
    from searchers.corpus import FORMATS, CorpusError
    from searchers.retrieval import RetrievalError

    settings, target = _index_or_default(index)
    if fmt not in FORMATS:
        raise usage_error(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    try:
        with build_progress() as progress:
            report = build(settings, folders, target, fmt=fmt, sync=True, progress=progress)
    except (CorpusError, RetrievalError) as exc:
        raise usage_error(str(exc)) from exc
    raise typer.Exit(print_build_report(report, as_json))
