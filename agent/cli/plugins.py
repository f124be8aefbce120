"""Command groups that other packages add to ``hoptree``, found through entry points.

``agent`` must not import ``evals`` (imports go one way: evals -> agent -> searchers -> tree),
yet ``hoptree eval ...`` belongs on the same command line. So command groups are announced in the
entry-point group ``hoptree.commands`` (name = the sub-command, value = a ``typer.Typer``) and
mounted here at start-up; this package's own ``eval`` group arrives the same way a third-party
one would:

    [project.entry-points."hoptree.commands"]
    eval = "evals.cli:eval_app"

A plugin that fails to import, or is not a Typer app, is logged and skipped: one broken
package must not take the whole command line down with it.
"""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint, entry_points

import typer

log = logging.getLogger(__name__)

COMMAND_GROUP = "hoptree.commands"


def _registered_names(app: typer.Typer) -> set[str]:
    """Names the app already answers to. A command added without a name gets its function's
    name, dashed, only when typer builds the click command: derive it the same way here."""
    names = {group.name for group in app.registered_groups if group.name}
    for command in app.registered_commands:
        name = command.name or getattr(command.callback, "__name__", "")
        if name:
            names.add(name.lower().replace("_", "-"))
    return names


def mount_command_plugins(app: typer.Typer, group: str = COMMAND_GROUP) -> list[str]:
    """Add every Typer app announced in ``group`` as a sub-command of ``app``; returns the
    names mounted. A name the app already has is skipped, so a plugin cannot shadow a
    built-in command."""
    mounted: list[str] = []
    taken = _registered_names(app)
    points: list[EntryPoint] = sorted(entry_points(group=group), key=lambda p: p.name)
    for point in points:
        if point.name in taken:
            log.warning(
                "skipping command plugin %s (%s): the name is taken", point.name, point.value
            )
            continue
        try:
            loaded = point.load()
        except Exception as exc:  # any import-time failure of a third-party package
            log.warning("skipping command plugin %s (%s): %s", point.name, point.value, exc)
            continue
        if not isinstance(loaded, typer.Typer):
            log.warning(
                "skipping command plugin %s (%s): %r is not a typer.Typer",
                point.name,
                point.value,
                loaded,
            )
            continue
        app.add_typer(loaded, name=point.name)
        taken.add(point.name)
        mounted.append(point.name)
    return mounted
