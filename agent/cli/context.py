"""What every ``hoptree`` command shares: the ``--config`` path given to the root command and
the settings read from it, and the doctor's table (``doctor`` and ``demo`` both print it).

It sits below ``agent.cli.main`` and every command of ``agent/cli/``, so a command module never
imports the root app that mounts it (the CLI's files import one way: root -> commands -> this)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from agent.settings import Settings, SettingsError, load_settings

out = Console(emoji=False)  # ":b:" in a passage title is text, not an emoji code
err = Console(stderr=True, emoji=False)


class _State:
    config: Path | None = None


def set_config(path: Path | None) -> None:
    """Called by the root command with its ``--config`` option, before any subcommand runs."""
    _State.config = path


def settings_or_exit() -> Settings:
    """The settings, or exit status 2 with the reason (a bad file, a bad variable)."""
    try:
        return load_settings(_State.config)
    except SettingsError as exc:
        err.print(f"[red]settings error:[/red] {exc}")
        raise typer.Exit(2) from exc


def print_doctor(report: dict[str, Any]) -> None:
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


def usage_error(message: str) -> typer.Exit:
    """Exit 2 after one unwrapped line on stderr: messages carry paths and "file:line" that
    users grep for, and may hold brackets that rich must not read as markup."""
    from rich.text import Text

    err.print(Text.assemble(("error: ", "red"), message), soft_wrap=True, highlight=False)
    return typer.Exit(2)
