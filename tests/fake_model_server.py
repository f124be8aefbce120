"""A stand-in for llama.cpp behind ``agent.runtime.shared_server``: a real HTTP server on
127.0.0.1 that answers ``/health``, run by the real ``ServerDirectory.serve`` loop in its own
process. The sharing, leasing and idle-stop logic is what the tests exercise; the real model's
server is exercised by the ``llm`` tests.

    python -m tests.fake_model_server serve ROOT SPEC_JSON IDLE_S   # the server process
    python -m tests.fake_model_server client ROOT SPEC_JSON HOLD_FILE  # lease, hold, give back
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agent.runtime.shared_server import ServerDirectory, ServerSpec


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')

    def log_message(self, *_args: object) -> None:
        pass


class FakeLlama:
    """What ``serve`` needs of a ``LlamaServer``: start, port, load_seconds, close."""

    def __init__(self) -> None:
        self.port: int | None = None
        self.load_seconds: float | None = None
        self._http: ThreadingHTTPServer | None = None

    def start(self) -> FakeLlama:
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
        self.port = self._http.server_address[1]
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self.load_seconds = 0.01
        return self

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()


def launcher(root: Path):
    """A ``launch`` for ``ServerDirectory.acquire`` that starts this module's fake server."""

    def launch(spec: ServerSpec, idle_s: float) -> subprocess.Popen[bytes]:
        log = (root / "server.log").open("ab")
        command = [
            sys.executable,
            "-m",
            "tests.fake_model_server",
            "serve",
            str(root),
            spec.to_json(),
            str(idle_s),
        ]
        return subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    return launch


def main(argv: list[str]) -> int:
    mode, root, spec_json = argv[0], Path(argv[1]), ServerSpec.from_json(argv[2])
    directory = ServerDirectory(root)
    if mode == "serve":
        directory.serve(spec_json, float(argv[3]), server=FakeLlama())
        return 0
    hold = Path(argv[3])
    lease = directory.acquire(spec_json, idle_s=0.5, launch=launcher(root))
    assert lease is not None
    print(json.dumps({"pid": lease.record.pid, "port": lease.record.port}), flush=True)
    deadline = time.monotonic() + 60
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    lease.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
