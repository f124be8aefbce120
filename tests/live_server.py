"""Run the real app under uvicorn on 127.0.0.1 (a free port) in a background thread.

The server gets its own thread and event loop so tests can call it with blocking clients (httpx,
the official ``openai`` client, a browser) as well as async ones. Start and stop are bounded.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent.serve.api import create_app
from agent.serve.http_server import make_server
from agent.service import AgentLike
from agent.settings import ServerSettings


@contextmanager
def serving(app: Any, settings: ServerSettings, what: str = "test server") -> Iterator[str]:
    """Serve any ASGI ``app`` under uvicorn in its own thread; yields its base URL."""
    ready = threading.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    server = make_server(app, settings, on_ready=on_ready, log_level="warning")
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    if not ready.wait(15):
        server.should_exit = True
        thread.join(5)
        raise RuntimeError(f"the {what} did not start within 15 s")
    try:
        yield urls[0]
    finally:
        server.should_exit = True
        thread.join(20)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)


@contextmanager
def live_server(agent: AgentLike, **server_settings: Any) -> Iterator[str]:
    """Yields the base URL (``http://127.0.0.1:PORT``) of a running server for ``agent``."""
    settings = ServerSettings(host="127.0.0.1", port=0, **server_settings)
    with serving(create_app(agent, settings), settings) as url:
        yield url
