"""Binding and serving an ASGI app with uvicorn, refusing to expose it unauthenticated.

``check_bind_allowed`` refuses a non-loopback host without an API key (the agent spends LLM time
and reads the index for whoever can reach it); ``make_server`` builds the uvicorn server, which
tells the caller its bound address (port 0 picks a free one). Both ``hoptree serve`` (the HTTP
agent API) and ``hoptree mcp --http`` (the MCP server) bind through here, so this module knows
nothing of either app.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI

from agent.settings import ServerSettings


class ServeRefused(RuntimeError):
    """``serve`` will not expose an unauthenticated agent beyond this machine."""


def api_key_of(server: ServerSettings) -> str | None:
    """The key clients must send, or None when there is none (a blank key counts as none)."""
    key = server.api_key.get_secret_value().strip() if server.api_key is not None else ""
    return key or None


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 (and IPv4-mapped loopback) and ``localhost``."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def check_bind_allowed(server: ServerSettings) -> None:
    """Raise ``ServeRefused`` for a non-loopback host without an API key: the agent spends
    LLM time and reads the index for whoever can reach it."""
    if api_key_of(server) is None and not is_loopback_host(server.host):
        raise ServeRefused(
            f"refusing to serve on {server.host!r} without an API key: anyone who can reach it "
            "could run the agent. Set HOPTREE_SERVER__API_KEY (or [server] api_key in "
            "hoptree.toml), or bind a loopback host such as 127.0.0.1."
        )


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, telling the caller the bound address (port 0 picks a free one)."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[str], None] | None) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self._on_ready is not None:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            self._on_ready(base_url(host, port))


def make_server(
    app: FastAPI,
    server: ServerSettings,
    *,
    on_ready: Callable[[str], None] | None = None,
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info",
) -> uvicorn.Server:
    """A uvicorn server for ``app``; ``await it.serve()`` on the loop the agent lives on."""
    config = uvicorn.Config(
        app,
        host=server.host,
        port=server.port,
        log_level=log_level,
        timeout_graceful_shutdown=10,  # open trace streams must not hold a shutdown forever
        server_header=False,
    )
    return _Server(config, on_ready)
