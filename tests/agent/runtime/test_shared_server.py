"""One model server per data directory (``agent.runtime.shared_server``), shared across real
processes: found by the second process, kept while a user holds a lease, stopped when the last
user is gone, replaced when nobody uses it and another setting is asked for. The server stands
in for llama.cpp (``tests.fake_model_server``: a real HTTP server in a real process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.runtime.llama_server import LocalServerError
from agent.runtime.shared_server import ServerDirectory, ServerRecord, ServerSpec, pid_alive
from tests.fake_model_server import launcher
from tests.locations import REPO

SPEC = ServerSpec(gguf="/models/m.gguf", alias="m", n_ctx=2048, startup_timeout_s=30)
ROOT_DIR = REPO


def _wait(condition, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _client(root: Path, hold: Path, spec: ServerSpec = SPEC) -> tuple[subprocess.Popen[str], dict]:
    """Another process that takes a lease and holds it while ``hold`` exists."""
    hold.touch()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fake_model_server",
            "client",
            str(root),
            spec.to_json(),
            str(hold),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT_DIR,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"the client printed nothing (exit {process.poll()})"
    return process, json.loads(line)


def test_a_second_process_finds_the_running_server(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    first = directory.acquire(SPEC, idle_s=0.5, launch=launcher(tmp_path))
    assert first is not None and first.started_here
    other, seen = _client(tmp_path, tmp_path / "hold")
    try:
        assert (seen["pid"], seen["port"]) == (first.record.pid, first.record.port)
        status = directory.status()
        assert status is not None and status["users"] == 2 and status["healthy"] is True
    finally:
        (tmp_path / "hold").unlink()
        other.wait(timeout=30)
    first.close()
    # the last user is gone: the server stops after its idle time and removes its record
    assert _wait(lambda: not pid_alive(first.record.pid) or directory.read() is None)
    assert _wait(lambda: directory.read() is None)


def test_the_server_stays_while_a_user_holds_a_lease(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    other, seen = _client(tmp_path, tmp_path / "hold")
    try:
        time.sleep(1.5)  # three times the idle time, with a user
        record = directory.read()
        assert record is not None and record.pid == seen["pid"]
        assert directory.healthy(record)
    finally:
        (tmp_path / "hold").unlink()
        other.wait(timeout=30)
    assert _wait(lambda: directory.read() is None)


def test_a_killed_users_lease_does_not_keep_the_server(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    other, seen = _client(tmp_path, tmp_path / "hold")
    assert len(directory.leases()) == 1
    other.send_signal(signal.SIGKILL)
    other.wait(timeout=10)
    assert directory.leases() == []  # the dead process's lease is dropped
    assert _wait(lambda: directory.read() is None)
    assert _wait(lambda: not pid_alive(seen["pid"]))


def test_an_unused_server_with_other_settings_is_replaced(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    first = directory.acquire(SPEC, idle_s=30, launch=launcher(tmp_path))
    assert first is not None
    first.close()
    wider = ServerSpec(**{**SPEC.__dict__, "n_ctx": 4096, "parallel": 2})
    second = directory.acquire(wider, idle_s=0.5, launch=launcher(tmp_path))
    assert second is not None and second.started_here and second.differences == []
    assert second.record.pid != first.record.pid and second.record.spec.parallel == 2
    assert _wait(lambda: not pid_alive(first.record.pid))
    second.close()
    assert _wait(lambda: directory.read() is None)


def test_a_used_server_is_shared_as_it_is_and_the_difference_said(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    first = directory.acquire(SPEC, idle_s=0.5, launch=launcher(tmp_path))
    assert first is not None
    wider = ServerSpec(**{**SPEC.__dict__, "parallel": 2})
    second = directory.acquire(wider, idle_s=0.5, launch=launcher(tmp_path))
    assert second is not None and not second.started_here
    assert second.record.pid == first.record.pid
    assert second.differences == ["parallel: 1 (wanted 2)"]
    other_model = ServerSpec(**{**SPEC.__dict__, "gguf": "/models/other.gguf", "alias": "o"})
    assert directory.acquire(other_model, idle_s=0.5, launch=launcher(tmp_path)) is None
    first.close()
    second.close()
    assert _wait(lambda: directory.read() is None)


def test_a_stale_or_torn_record_is_dropped(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = ServerRecord(pid=dead.pid, port=9, spec=SPEC, started_at=0.0, load_seconds=0.0)
    directory.record_path.write_text(record.to_json())
    assert directory.read() is None and not directory.record_path.exists()
    directory.record_path.write_text('{"pid": ')
    assert directory.read() is None and not directory.record_path.exists()


def test_a_server_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    def broken(_spec: ServerSpec, _idle: float) -> subprocess.Popen[bytes]:
        (tmp_path / "server.log").write_text("error: GGUF model file not found: /models/m.gguf\n")
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])

    with pytest.raises(LocalServerError, match=r"exit 1.*GGUF model file not found"):
        ServerDirectory(tmp_path).acquire(SPEC, idle_s=0.5, launch=broken)
    assert not (tmp_path / "leases").exists() or not any((tmp_path / "leases").iterdir())


def test_a_lease_names_its_process(tmp_path: Path) -> None:
    directory = ServerDirectory(tmp_path)
    lease = directory.acquire(SPEC, idle_s=0.5, launch=launcher(tmp_path))
    assert lease is not None
    assert lease.path.name.startswith(f"{os.getpid()}-")
    lease.close()
    lease.close()  # giving it back twice is harmless
    assert _wait(lambda: directory.read() is None)
