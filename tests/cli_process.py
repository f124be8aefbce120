"""The real ``hoptree`` entry point in a child process, for tests about what a shell user sees:
exit codes, stdout kept clean for ``--json``, stderr messages. The parent's HOPTREE_* variables
are dropped so a developer's own configuration cannot leak into a test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.child_env import child_environment

HOPTREE = [sys.executable, "-m", "agent.cli"]


def run_hoptree(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    clean = child_environment()
    return subprocess.run(
        [*HOPTREE, *args],
        env={**clean, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
