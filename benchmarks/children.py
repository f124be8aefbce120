"""What the benchmarks that start child processes (the stub chat server, ``hoptree serve``)
share: stopping one the way a user would, Ctrl-C first, so it can shut down cleanly."""

from __future__ import annotations

import signal
import subprocess


def stop_child(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGINT, then SIGKILL if the child is still there after ``grace_s`` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
