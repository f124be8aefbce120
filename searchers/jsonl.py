"""The one reader of JSON-lines files: corpora, evaluation questions and batch query files all
come as one JSON object per line, and each reader used to repeat the same loop with slightly
different checks. Each caller keeps its own error type (so a CLI can say which kind of file was
wrong) and its wording of what an object should be; blank lines are skipped, a line that is not
JSON or not an object names its line number, and an optional line limit bounds a file that is
far larger than any reasonable one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def json_objects(
    handle: IO[str],
    path: Path,
    *,
    error: type[Exception],
    expected: str = "expected a JSON object per line",
    max_lines: int | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of ``handle``, an open text file read
    from ``path`` (named in messages). Raises ``error`` for text that is not UTF-8, a line that
    is not JSON or not an object, and more than ``max_lines`` lines."""
    lineno = 0
    while True:
        lineno += 1
        try:
            line = handle.readline()
        except UnicodeDecodeError as exc:
            raise error(f"{path}:{lineno}: not UTF-8 text ({exc.reason})") from exc
        if not line:
            return
        if max_lines is not None and lineno > max_lines:
            raise error(f"{path}: more than {max_lines} lines")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{lineno}: malformed JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise error(f"{path}:{lineno}: {expected}")
        yield lineno, record
