"""One embedded model server per data directory, shared by every hoptree process that needs it.

Why: each process used to start llama.cpp inside itself with a thread per core. On two cores,
``hoptree serve`` beside ``hoptree ask`` (or an evaluation beside the tests) meant two servers
fighting for the same cores, and a 45 s question took 110-340 s. Now the first process that
needs the model starts a detached server process; the others find it and send their requests
to its slots, which llama.cpp schedules.

The directory ``<data_dir>/model-server/`` holds:

- ``server.json``: the running server's record (pid, port, what it serves), written by the
  server once it answers ``/health`` and removed when it stops;
- ``server.lock``: held while a process reads the record and takes its lease, while a new
  server is started, and by the server when it decides to stop, so a process never takes a
  lease on a server that is leaving;
- ``leases/<pid>-<id>``: one file per user; the server drops the leases of processes that
  died (a killed ``hoptree ask`` leaves its lease behind) and stops ``idle_s`` seconds after
  the last one is gone, so consecutive commands find the model warm;
- ``server.log``: the server process's own output.

A server nobody uses is replaced when a process wants other settings (context, slots,
speculation); one that others use is shared as it is and the difference is reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

import httpx
from filelock import FileLock, Timeout

from agent.runtime.llama_server import LlamaServer, LocalServerError

SERVER_DIR = "model-server"  # under the data dir
RECORD = "server.json"
LOCK = "server.lock"
LEASES = "leases"
LOG = "server.log"
POLL_S = 0.5
HEALTH_TIMEOUT_S = 3.0
STOP_WAIT_S = 30.0

Progress = Callable[[str], None]


class ModelServer(Protocol):
    """What ``ServerDirectory.serve`` runs: ``LlamaServer``, or a stand-in in tests."""

    port: int | None
    load_seconds: float | None

    def start(self) -> object: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ServerSpec:
    """What a server runs: the model and the llama.cpp settings that shape its capacity."""

    gguf: str
    alias: str
    n_ctx: int = 8192
    threads: int = 0
    parallel: int = 1
    speculative: str = "off"
    draft_gguf: str | None = None
    cache_reuse: int = 0
    repack: bool = True
    startup_timeout_s: float = 180.0

    def same_model(self, other: ServerSpec) -> bool:
        return (self.gguf, self.alias) == (other.gguf, other.alias)

    def differences(self, running: ServerSpec) -> list[str]:
        """What the running server does otherwise than this spec asks, as "name: running
        (wanted)"; the startup timeout is the client's business, not the server's."""
        return [
            f"{f.name}: {getattr(running, f.name)} (wanted {getattr(self, f.name)})"
            for f in fields(self)
            if f.name != "startup_timeout_s" and getattr(self, f.name) != getattr(running, f.name)
        ]

    def llama_server(self) -> LlamaServer:
        """The llama.cpp server this spec describes, not started: the shared server process
        and a private in-process server are built the same way."""
        return LlamaServer(
            Path(self.gguf),
            alias=self.alias,
            n_ctx=self.n_ctx,
            threads=self.threads,
            parallel=self.parallel,
            startup_timeout_s=self.startup_timeout_s,
            speculative=self.speculative,
            draft_gguf=Path(self.draft_gguf) if self.draft_gguf else None,
            cache_reuse=self.cache_reuse,
            repack=self.repack,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ServerSpec:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class ServerRecord:
    pid: int
    port: int
    spec: ServerSpec
    started_at: float
    load_seconds: float

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def to_json(self) -> str:
        data = asdict(self)
        return json.dumps(data, sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> ServerRecord:
        data = json.loads(text)
        spec = ServerSpec.from_json(json.dumps(data.pop("spec")))
        return cls(spec=spec, **data)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


@dataclass
class Lease:
    """One process's claim on the shared server; ``close`` gives it back (idempotent)."""

    record: ServerRecord
    path: Path
    started_here: bool
    differences: list[str]

    @property
    def base_url(self) -> str:
        return self.record.base_url

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


_LAUNCHED: list[subprocess.Popen[bytes]] = []  # polled so a stopped server leaves no zombie


def _reap() -> None:
    for process in list(_LAUNCHED):
        if process.poll() is not None:
            _LAUNCHED.remove(process)


class ServerDirectory:
    """The model-server folder of one data directory (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.record_path = root / RECORD
        self.leases_dir = root / LEASES
        self.log_path = root / LOG
        self.lock = FileLock(str(root / LOCK))

    # -- reading ------------------------------------------------------------------------------

    def read(self) -> ServerRecord | None:
        """The record of a server whose process is alive, or None (a stale record from a
        killed server is removed)."""
        try:
            record = ServerRecord.from_json(self.record_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, KeyError):
            self.record_path.unlink(missing_ok=True)  # torn or foreign: nobody can use it
            return None
        if not pid_alive(record.pid):
            self.record_path.unlink(missing_ok=True)
            return None
        return record

    @staticmethod
    def healthy(record: ServerRecord, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
        try:
            response = httpx.get(f"http://127.0.0.1:{record.port}/health", timeout=timeout_s)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def leases(self) -> list[Path]:
        """Live leases; those of processes that are gone are removed."""
        if not self.leases_dir.is_dir():
            return []
        live = []
        for path in sorted(self.leases_dir.iterdir()):
            try:
                pid = int(path.name.split("-", 1)[0])
            except ValueError:
                path.unlink(missing_ok=True)
                continue
            if pid_alive(pid):
                live.append(path)
            else:
                path.unlink(missing_ok=True)
        return live

    def status(self) -> dict[str, object] | None:
        """What ``hoptree doctor`` shows: who serves the model, for how many users."""
        record = self.read()
        if record is None:
            return None
        return {
            "pid": record.pid,
            "port": record.port,
            "model": record.spec.alias,
            "n_ctx": record.spec.n_ctx,
            "parallel": record.spec.parallel,
            "speculative": record.spec.speculative,
            "up_s": round(time.time() - record.started_at, 1),
            "users": len(self.leases()),
            "healthy": self.healthy(record),
        }

    # -- a client's side ----------------------------------------------------------------------

    def acquire(
        self,
        spec: ServerSpec,
        *,
        idle_s: float,
        progress: Progress | None = None,
        launch: Callable[[ServerSpec, float], subprocess.Popen[bytes]] | None = None,
    ) -> Lease | None:
        """A lease on the data directory's server, started if there is none. None when the
        running server serves another model to other users (the caller then runs its own)."""
        self.root.mkdir(parents=True, exist_ok=True)
        say = progress or (lambda _line: None)
        try:
            self.lock.acquire(timeout=spec.startup_timeout_s + STOP_WAIT_S)
        except Timeout as exc:
            raise LocalServerError(
                f"{self.root}: another process held the model server's lock for "
                f"{spec.startup_timeout_s + STOP_WAIT_S:.0f}s"
            ) from exc
        try:
            _reap()
            record = self.read()
            if record is not None and not self.healthy(record):
                say(f"model server pid {record.pid} does not answer: stopping it")
                self._stop(record)
                record = None
            differences: list[str] = []
            if record is not None:
                differences = spec.differences(record.spec)
                if differences and not self.leases():
                    say(
                        f"model server pid {record.pid} is unused: restarting it with your settings"
                    )
                    self._stop(record)
                    record = None
                elif not spec.same_model(record.spec):
                    return None
            started_here = record is None
            if record is None:
                record = self._start(spec, idle_s, say, launch or self._launch)
                differences = []
            self.leases_dir.mkdir(exist_ok=True)
            lease = self.leases_dir / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
            lease.write_text(str(time.time()), encoding="utf-8")
            return Lease(record, lease, started_here, differences)
        finally:
            self.lock.release()

    def _start(
        self,
        spec: ServerSpec,
        idle_s: float,
        say: Progress,
        launch: Callable[[ServerSpec, float], subprocess.Popen[bytes]],
    ) -> ServerRecord:
        say(f"starting the shared model server ({spec.alias}); its log: {self.log_path}")
        self.record_path.unlink(missing_ok=True)
        process = launch(spec, idle_s)
        _LAUNCHED.append(process)
        deadline = time.monotonic() + spec.startup_timeout_s + 10
        while time.monotonic() < deadline:
            record = self.read()
            if record is not None and record.pid == process.pid and self.healthy(record):
                return record
            code = process.poll()
            if code is not None:
                raise LocalServerError(
                    f"the model server stopped while starting (exit {code}): {self._log_tail()}"
                )
            time.sleep(POLL_S)
        process.terminate()
        raise LocalServerError(
            f"the model server did not answer within {spec.startup_timeout_s + 10:.0f}s: "
            f"{self._log_tail()}"
        )

    def _launch(self, spec: ServerSpec, idle_s: float) -> subprocess.Popen[bytes]:
        """The server as its own process in its own session: a Ctrl-C in the terminal that
        started it does not stop the other users' model."""
        log = self.log_path.open("ab")
        try:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent.runtime.shared_server",
                    str(self.root),
                    spec.to_json(),
                    str(idle_s),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            log.close()

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def _stop(self, record: ServerRecord) -> None:
        """SIGTERM the server and wait for it to go (the caller holds the lock)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while pid_alive(record.pid) and time.monotonic() < deadline:
            _reap()
            time.sleep(0.1)
        if pid_alive(record.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(record.pid, signal.SIGKILL)
        self.record_path.unlink(missing_ok=True)

    def stop(self) -> ServerRecord | None:
        """Stop the running server whoever uses it."""
        with self.lock:
            record = self.read()
            if record is not None:
                self._stop(record)
            return record

    # -- the server's side --------------------------------------------------------------------

    def serve(self, spec: ServerSpec, idle_s: float, server: ModelServer | None = None) -> None:
        """Run the server until it has had no user for ``idle_s`` seconds or is told to stop
        (SIGTERM, SIGINT). ``server`` is for tests; by default the spec's llama.cpp server."""
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        llama: ModelServer = server or spec.llama_server()
        llama.start()
        assert llama.port is not None
        record = ServerRecord(
            pid=os.getpid(),
            port=llama.port,
            spec=spec,
            started_at=time.time(),
            load_seconds=round(llama.load_seconds or 0.0, 2),
        )
        scratch = self.record_path.with_suffix(".tmp")
        scratch.write_text(record.to_json(), encoding="utf-8")
        os.replace(scratch, self.record_path)
        print(f"serving {spec.alias} on port {llama.port} (pid {os.getpid()})", flush=True)
        last_used = time.monotonic()
        try:
            while not stop.wait(POLL_S):
                if self.leases():
                    last_used = time.monotonic()
                    continue
                if time.monotonic() - last_used < idle_s:
                    continue
                # no user for idle_s: leave, unless a client is taking a lease right now
                try:
                    with self.lock.acquire(timeout=0):
                        if not self.leases():
                            self._remove_own_record()
                            print(f"no user for {idle_s:.0f}s: stopping", flush=True)
                            return
                except Timeout:
                    pass
                last_used = time.monotonic()
        finally:
            self._remove_own_record()
            llama.close()

    def _remove_own_record(self) -> None:
        record = self.read()
        if record is not None and record.pid == os.getpid():
            self.record_path.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    root, spec_json, idle = argv
    try:
        ServerDirectory(Path(root)).serve(ServerSpec.from_json(spec_json), float(idle))
    except LocalServerError as exc:
        print(f"error: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
