"""A ``http.server`` on 127.0.0.1 (a free port) in a background thread, for tests that need a
real HTTP peer: a stub OpenAI endpoint, an Elasticsearch stand-in, web search providers.
Stopping is bounded: shutdown, close, then a join of at most 5 s."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[str]:
    """Serves ``server`` (bound to ("127.0.0.1", 0)) until the block ends; yields its base URL."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def send_json(handler: BaseHTTPRequestHandler, status: int, data: Any) -> None:
    """Answer ``handler``'s request with ``data`` as JSON, its length declared."""
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
