"""The embedded OpenAI-compatible llama.cpp server (xllamacpp), bound to 127.0.0.1.

xllamacpp serves from inside this process; dropping the last reference to its ``Server`` stops it
and closes the port. We pick a free loopback port, wait for ``/health`` with a deadline, and stop
the server on ``close()``, on context exit, or at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx

GGUF_MAGIC = b"GGUF"


class LocalServerError(RuntimeError):
    """The embedded model server could not start or answer."""


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_gguf(path: Path) -> None:
    """Refuse a path that is not a GGUF before llama.cpp prints a wall of C++ errors about it."""
    if not path.is_file():
        raise LocalServerError(f"GGUF model file not found: {path}")
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise LocalServerError(f"{path} is not a GGUF file (bad magic bytes)")


class LlamaServer:
    """One llama.cpp server process-thread serving one GGUF under one alias."""

    def __init__(
        self,
        gguf: Path,
        *,
        alias: str,
        n_ctx: int = 8192,
        threads: int = 0,
        parallel: int = 1,
        startup_timeout_s: float = 180.0,
        speculative: str = "off",
        draft_gguf: Path | None = None,
        cache_reuse: int = 0,
        repack: bool = True,
    ) -> None:
        if "draft" in speculative and draft_gguf is None:
            raise LocalServerError(f"speculative={speculative!r} needs a draft model GGUF")
        self.gguf = gguf
        self.alias = alias
        self.n_ctx = n_ctx
        self.threads = threads or os.cpu_count() or 1
        self.parallel = parallel
        self.startup_timeout_s = startup_timeout_s
        self.speculative = speculative
        self.draft_gguf = draft_gguf
        self.cache_reuse = cache_reuse
        self.repack = repack
        self.port: int | None = None
        self.load_seconds: float | None = None
        self._server: Any = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalServerError("the local model server is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> LlamaServer:
        with self._lock:
            if self._server is not None:
                return self
            check_gguf(self.gguf)
            import xllamacpp  # heavy native import, only when the embedded model is used

            params = self.params(xllamacpp)
            started = time.monotonic()
            last_error: Exception | None = None
            for _attempt in range(3):  # the free port can be taken between probe and bind
                self.port = free_loopback_port()
                params.port = self.port
                try:
                    self._server = xllamacpp.Server(params)
                    break
                except Exception as exc:
                    last_error = exc
            else:
                self.port = None
                raise LocalServerError(f"llama.cpp server failed to start: {last_error}")
            try:
                self._wait_healthy(started)
            except BaseException:
                self._server = None
                self.port = None
                raise
            self.load_seconds = time.monotonic() - started
            atexit.register(self.close)
            return self

    def params(self, xllamacpp: Any) -> Any:
        """The server's ``CommonParams`` (no port yet): what ``start`` launches.
        ``benchmarks/server_speed.py`` launches the same with one knob changed."""
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf)
        params.n_ctx = self.n_ctx
        params.n_parallel = self.parallel
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.hostnames = ["127.0.0.1"]
        params.model_alias = {self.alias}
        params.verbosity = -1  # llama.cpp logs go nowhere; our trace says what matters
        params.n_cache_reuse = self.cache_reuse
        # the CPU backend's extra buffer types hold the weights repacked for its kernels
        params.no_extra_bufts = not self.repack
        self._speculate(params, xllamacpp)
        return params

    def _speculate(self, params: Any, xllamacpp: Any) -> None:
        """Speculative decoding: drafts from n-grams already in the context (no model, no
        cost when they miss) and/or from a small model sharing the tokenizer. The target model
        checks every drafted token, so a greedy reply is the one it would write alone."""
        kinds = xllamacpp.common_speculative_type
        types = []
        if "ngram" in self.speculative:
            types.append(kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE)
        if "draft" in self.speculative and self.draft_gguf is not None:
            check_gguf(self.draft_gguf)
            params.speculative.draft.mparams.path = str(self.draft_gguf)
            params.speculative.draft.cpuparams.n_threads = self.threads
            params.speculative.draft.cpuparams_batch.n_threads = self.threads
            types.append(kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE)
        if types:
            params.speculative.types = types

    def _wait_healthy(self, started: float) -> None:
        url = f"http://127.0.0.1:{self.port}/health"
        deadline = started + self.startup_timeout_s
        last = "no answer"
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                try:
                    response = client.get(url)
                    if response.status_code == 200:
                        return
                    last = f"HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                time.sleep(0.2)
        raise LocalServerError(
            f"local model server on port {self.port} not healthy after "
            f"{self.startup_timeout_s:.0f}s (last: {last})"
        )

    def close(self) -> None:
        with self._lock:
            self._server = None  # the native destructor stops the loop and frees the port
            self.port = None
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
