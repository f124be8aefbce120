"""The ``hoptree`` command line. Commands are thin: they parse, call into ``agent``, and print.

Human output goes through rich; ``--json`` prints exactly one JSON document on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from agent.settings import Settings, SettingsError, load_settings

app = typer.Typer(
    name="hoptree",
    help="Agentic hierarchical search for multi-hop questions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

DEMO_QUESTION = "Which river flows through the city where the Eiffel Tower stands?"


class _State:
    config: Path | None = None


@app.callback()
def _root(
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML settings file (default: ./hoptree.toml)")
    ] = None,
) -> None:
    _State.config = config


def settings_or_exit() -> Settings:
    try:
        return load_settings(_State.config)
    except SettingsError as exc:
        err.print(f"[red]settings error:[/red] {exc}")
        raise typer.Exit(2) from exc


def _print_doctor(report: dict[str, Any]) -> None:
    table = Table(title="hoptree doctor", show_lines=False)
    table.add_column("part")
    table.add_column("ok")
    table.add_column("details")
    for part in ("llm", "embeddings", "index", "cache"):
        info = report[part]
        mark = "[green]yes[/green]" if info["ok"] else "[red]NO[/red]"
        details = ", ".join(
            f"{k}={v}" for k, v in info.items() if k != "ok" and not isinstance(v, dict)
        )
        table.add_row(part, mark, details)
    out.print(table)


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Check every part (chat model, embeddings, index, cache) and measure its speed."""
    from agent.doctor import run_doctor
    from agent.progress import byte_progress

    settings = settings_or_exit()
    with byte_progress("joining the local model") as progress:
        report = run_doctor(settings, progress)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, default=str) + "\n")
    else:
        _print_doctor(report)
    raise typer.Exit(0 if report["ok"] else 1)


@app.command()
def demo(
    question: Annotated[str, typer.Argument(help="a question for the model")] = DEMO_QUESTION,
) -> None:
    """The main job on embedded defaults: doctor, then one question through the chat path."""
    from agent.closed_book import answer_closed_book
    from agent.doctor import run_doctor
    from agent.progress import byte_progress
    from agent.runtime import Runtime

    settings = settings_or_exit()
    with byte_progress("joining the local model") as progress:
        report = run_doctor(settings, progress)
        _print_doctor(report)
        if not report["ok"]:
            raise typer.Exit(1)
        with Runtime(settings, progress=progress) as runtime:
            t0 = time.monotonic()
            answer = asyncio.run(answer_closed_book(runtime.chat.model, question))
            seconds = time.monotonic() - t0
            usage = runtime.usage.total()
            cache = runtime.llm_cache.stats.as_dict() if runtime.llm_cache else {}
    out.print(f"\n[bold]Q:[/bold] {question}\n[bold]A:[/bold] {answer}")
    out.print(
        f"[dim]{seconds:.1f}s; {usage.calls} call(s), {usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion tokens; cache hits {cache.get('hits', 0)}[/dim]"
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
