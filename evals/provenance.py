"""Which code made a result: the git commit of the checkout the evaluation runs from.

A suite spans sessions, and the code moves under it; a row that does not say which code made it
cannot be compared with another honestly. Every eval row records ``code``: the short commit,
with ``+dirty`` when tracked files differ from it, or the package version outside a checkout.
Committed results are not the code: a run resumed into its tracked folder under
``evals/results`` rewrites its own rows, and that must not mark the rows it goes on to write.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

GIT_TIMEOUT_S = 5.0
SOURCE_ROOT = Path(__file__).resolve().parents[1]  # the checkout this module was imported from
RESULTS = "evals/results"  # data the evaluations write, not code


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _package_version() -> str:
    try:
        return f"hoptree {metadata.version('hoptree')}"
    except metadata.PackageNotFoundError:
        return "hoptree (unknown version)"


@lru_cache(maxsize=4)
def code_version(root: Path = SOURCE_ROOT) -> str:
    """``a1b2c3d``, ``a1b2c3d+dirty``, or ``hoptree 0.1.0`` where git cannot tell."""
    commit = _git(root, "rev-parse", "--short=7", "HEAD")
    if not commit:
        return _package_version()
    changed = _git(
        root, "status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){RESULTS}"
    )
    return f"{commit}+dirty" if changed else commit
