"""``hoptree serve --index DIR [--host H] [--port P]``: the agent API and the live trace page.

``agent.cli.main`` mounts it with ``add_serve_command(app, open_agent)``, where
``open_agent(index_dir)`` returns an async context manager that yields an ``AgentLike`` (the planner
over that index). The factory is injected so this module does not import the planner, and tests can
serve a scripted agent through the very same command.

The agent is opened inside the server's event loop: its HTTP clients, the embedded llama.cpp
server and the checkpointer belong to that loop, and closing the context manager on Ctrl-C shuts
them down cleanly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agent.serve.api import serve
from agent.serve.documents import DocumentStore
from agent.serve.http_server import ServeRefused, api_key_of, check_bind_allowed
from agent.service import AgentLike

if TYPE_CHECKING:
    from agent.settings import ServerSettings, Settings

OpenAgent = Callable[[Path], AbstractAsyncContextManager[AgentLike]]

out = Console(emoji=False)  # ":b:" in a passage title is text, not an emoji code
err = Console(stderr=True, emoji=False)


def _default_settings() -> Settings:
    from agent.cli.context import settings_or_exit

    return settings_or_exit()


async def _run(
    open_agent: OpenAgent, index: Path, server: ServerSettings, settings: Settings
) -> None:
    def announce(url: str) -> None:
        auth = "API key required" if api_key_of(server) else "no API key (loopback only)"
        out.print(f"hoptree is serving the trace page at [bold]{url}/[/bold]", soft_wrap=True)
        out.print(f"  API: {url}/v1 (OpenAI-compatible chat at {url}/v1/chat/completions)")
        out.print(f"  docs: {url}/docs · {auth} · Ctrl-C stops")

    async with open_agent(index) as agent:
        await serve(agent, server, on_ready=announce, documents=DocumentStore(settings, index))


def add_serve_command(
    app: typer.Typer,
    open_agent: OpenAgent,
    *,
    load_settings: Callable[[], Settings] | None = None,
) -> None:
    """Register ``serve`` on ``app``. ``load_settings`` defaults to the CLI's own loader (which
    honours ``hoptree --config``); tests pass their own."""

    @app.command("serve")
    def serve_command(
        index: Annotated[Path, typer.Option("--index", help="index directory")],
        host: Annotated[
            str | None, typer.Option("--host", help="bind address (default: settings, 127.0.0.1)")
        ] = None,
        port: Annotated[
            int | None,
            typer.Option("--port", min=0, max=65535, help="port (default: settings, 8642)"),
        ] = None,
    ) -> None:
        """Serve the agent API (OpenAI-compatible too) and the live trace page."""
        settings = (load_settings or _default_settings)()
        update: dict[str, object] = {}
        if host is not None:
            update["host"] = host
        if port is not None:
            update["port"] = port
        update["max_concurrency"] = settings.run_slots()
        server = settings.server.model_copy(update=update)
        if not index.is_dir():
            err.print(f"[red]no index directory at {index}[/red] (hoptree index build ... first)")
            raise typer.Exit(2)
        try:
            check_bind_allowed(server)  # before the agent (and its model) is started
        except ServeRefused as exc:
            err.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from exc
        with suppress(KeyboardInterrupt):  # uvicorn has shut down cleanly by then
            asyncio.run(_run(open_agent, index, server, settings))
