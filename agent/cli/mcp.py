"""``hoptree mcp --index DIR [--http [--host H] [--port P]]``: the MCP server
(``agent.serve.mcp_server``) over stdio, the way desktop and IDE agents start a tool server, or over
streamable HTTP.

Over HTTP the rule of ``hoptree serve`` holds, through the very same check: a host other than
loopback needs ``HOPTREE_SERVER__API_KEY``, and with a key set every request must carry
``Authorization: Bearer <key>``. Over stdio the server belongs to the process that started it,
so there is no key.

On stdio, standard output is the protocol: the backend is opened (models loaded, the embedded
llama.cpp server started) with file descriptor 1 pointed at stderr, so a library that prints
cannot corrupt the stream, and while serving the SDK keeps the wire on a private duplicate.

``agent.cli.main`` mounts it with ``add_mcp_command(app, open_backend)``; the backend factory is
injected so tests can serve the real planner over a scripted chat model through this command.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agent.serve.http_server import ServeRefused, api_key_of, check_bind_allowed, make_server
from agent.serve.mcp_backend import McpBackend

if TYPE_CHECKING:
    from agent.settings import ServerSettings, Settings

OpenBackend = Callable[["Settings", Path], AbstractAsyncContextManager[McpBackend]]
DEFAULT_MCP_PORT = 8643  # next to `hoptree serve`'s 8642, so both can run
MCP_PATH = "/mcp"

err = Console(stderr=True)


def _default_settings() -> Settings:
    from agent.cli.context import settings_or_exit

    return settings_or_exit()


def _default_open_backend(settings: Settings, index: Path) -> AbstractAsyncContextManager:
    from agent.serve.mcp_backend import open_mcp_backend

    return open_mcp_backend(settings, index)


class RequireApiKey:
    """Bearer-key check in front of the MCP app (pure ASGI, so streamed responses pass
    untouched); lifespan events go straight through."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.key = api_key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.key):
                message = (
                    "missing or wrong API key: send 'Authorization: Bearer <key>'"
                    if header
                    else "this server needs an API key: send 'Authorization: Bearer <key>'"
                )
                response = JSONResponse(
                    {"error": {"message": message, "type": "authentication_error"}},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def mcp_http_app(backend: McpBackend, server: ServerSettings) -> ASGIApp:
    """The streamable-HTTP app at ``/mcp`` for ``backend``, behind the API key when one is set.
    DNS-rebinding protection (the SDK's Host/Origin check) is on for loopback binds."""
    from agent.serve.mcp_server import build_mcp_server

    app = build_mcp_server(backend).streamable_http_app(
        streamable_http_path=MCP_PATH, host=server.host
    )
    key = api_key_of(server)
    return RequireApiKey(app, key) if key else app


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 (and ``sys.stdout``) at stderr for the block, then restore it:
    nothing printed while models load can reach the protocol stream."""
    sys.stdout.flush()
    saved = os.dup(1)
    saved_stdout = sys.stdout
    try:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = saved_stdout
        os.dup2(saved, 1)
        os.close(saved)


async def _serve_stdio(open_backend: OpenBackend, settings: Settings, index: Path) -> None:
    from agent.serve.mcp_server import build_mcp_server

    async with AsyncExitStack() as stack:
        with stdout_to_stderr():
            backend = await stack.enter_async_context(open_backend(settings, index))
            server = build_mcp_server(backend)
        await server.run_stdio_async()


async def _serve_http(
    open_backend: OpenBackend, settings: Settings, index: Path, server: ServerSettings
) -> None:
    def announce(url: str) -> None:
        auth = "API key required" if api_key_of(server) else "no API key (loopback only)"
        # stdout, one line, flushed: scripts (and the tests) read the URL from it
        print(f"hoptree MCP server at {url}{MCP_PATH} ({auth}; Ctrl-C stops)", flush=True)

    async with open_backend(settings, index) as backend:
        app = mcp_http_app(backend, server)
        await make_server(app, server, on_ready=announce, log_level="warning").serve()  # type: ignore[arg-type]


def _run_or_exit(serving: Coroutine[Any, Any, None]) -> None:
    """Serve until Ctrl-C (uvicorn and the stdio loop have shut down cleanly by then); an
    index, searcher or model that cannot be opened is one clear line and exit status 2."""
    from agent.runtime.embeddings import EmbeddingModelError
    from searchers.retrieval import RetrievalError

    try:
        with suppress(KeyboardInterrupt):
            asyncio.run(serving)
    except (RetrievalError, EmbeddingModelError, LookupError, ValueError) as exc:
        err.print(Text.assemble(("error: ", "red"), str(exc)), soft_wrap=True, highlight=False)
        raise typer.Exit(2) from exc


def add_mcp_command(
    app: typer.Typer,
    open_backend: OpenBackend | None = None,
    *,
    load_settings: Callable[[], Settings] | None = None,
) -> None:
    """Register ``mcp`` on ``app``. ``open_backend(settings, index)`` defaults to the real
    planner, searchers and retrievers over the index; tests pass their own."""

    @app.command("mcp")
    def mcp_command(
        index: Annotated[
            Path | None, typer.Option("--index", help="index directory (default: the data dir's)")
        ] = None,
        http: Annotated[
            bool, typer.Option("--http", help="streamable HTTP instead of stdio")
        ] = False,
        host: Annotated[
            str | None, typer.Option("--host", help="with --http: bind address (127.0.0.1)")
        ] = None,
        port: Annotated[
            int | None,
            typer.Option(
                "--port", min=0, max=65535, help=f"with --http (default {DEFAULT_MCP_PORT})"
            ),
        ] = None,
    ) -> None:
        """Serve ask, search, retrieve, list_searchers and read_passage as MCP tools, and
        add_document and remove_document over a real index."""
        settings = (load_settings or _default_settings)()
        target = index if index is not None else settings.default_index_dir
        if not target.is_dir():
            err.print(f"[red]no index directory at {target}[/red] (hoptree index build ... first)")
            raise typer.Exit(2)
        opener = open_backend or _default_open_backend
        if not http:
            if host is not None or port is not None:
                err.print("[red]--host and --port need --http[/red] (stdio has no address)")
                raise typer.Exit(2)
            _run_or_exit(_serve_stdio(opener, settings, target))
            return
        server = settings.server.model_copy(
            update={
                "host": host if host is not None else settings.server.host,
                "port": port if port is not None else DEFAULT_MCP_PORT,
            }
        )
        try:
            check_bind_allowed(server)  # before any model is started
        except ServeRefused as exc:
            err.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from exc
        _run_or_exit(_serve_http(opener, settings, target, server))
