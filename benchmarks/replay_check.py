"""Did a change leave the planner's behaviour alone? Recorded rows against their replay, per
question: no model call, a second.

A replay runs the pipeline again with the recorded run's LLM cache on: when no prompt changed,
every call is a cache hit and each question's answer, calls and tokens come back exactly as
recorded. A cache miss means a prompt differs (and the call went to the model server). This
script pairs the rows of each (slice, pipeline) by question id and counts, per run, the
questions whose answer, calls or prompt tokens changed and the calls that missed the cache (a
hit records no completion tokens: a changed completion is a miss); it exits 1 when any of them
is not zero.

    python benchmarks/replay_check.py RECORDED REPLAYED [--out README.md]

``RECORDED`` and ``REPLAYED`` each hold ``<slice>/<pipeline>/details.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def prompt_tokens(row: Mapping[str, Any]) -> int:
    """The prompt tokens a question's calls read, from the model or from the cache: a cache hit
    counts its prompt under ``cache_hit_prompt_tokens`` and no completion tokens, so a recorded
    call that was made live and its replayed hit read the same prompt tokens."""
    return int(row.get("prompt_tokens") or 0) + int(row.get("cache_hit_prompt_tokens") or 0)


@dataclass(frozen=True)
class RunCheck:
    """One (slice, pipeline): its questions and what differs between record and replay."""

    run: str
    questions: int
    missing: int  # recorded questions the replay has no row for
    answers: int
    calls: int
    tokens: int
    misses: int  # replayed calls that were not cache hits

    @property
    def same(self) -> bool:
        return not (self.missing or self.answers or self.calls or self.tokens or self.misses)


def rows(path: Path) -> dict[str, dict[str, Any]]:
    """A run's rows by question id."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {row["id"]: row for row in map(json.loads, filter(None, lines))}


def check_run(
    run: str, recorded: Mapping[str, dict[str, Any]], replayed: Mapping[str, dict[str, Any]]
) -> RunCheck:
    """Pair the rows by question id and count the differences."""
    both = [qid for qid in recorded if qid in replayed]
    pairs = [(recorded[qid], replayed[qid]) for qid in both]
    return RunCheck(
        run=run,
        questions=len(both),
        missing=len(recorded) - len(both),
        answers=sum(a["prediction"] != b["prediction"] for a, b in pairs),
        calls=sum(a["llm_calls"] != b["llm_calls"] for a, b in pairs),
        tokens=sum(prompt_tokens(a) != prompt_tokens(b) for a, b in pairs),
        misses=sum(b["llm_calls"] - b.get("llm_cache_hits", 0) for _, b in pairs),
    )


def check_all(recorded: Path, replayed: Path) -> list[RunCheck]:
    """Every ``<slice>/<pipeline>`` of ``replayed`` against the same run of ``recorded``."""
    checks = []
    for details in sorted(replayed.glob("*/*/details.jsonl")):
        run = details.parent.relative_to(replayed).as_posix()
        checks.append(check_run(run, rows(recorded / run / "details.jsonl"), rows(details)))
    return checks


def table(checks: list[RunCheck]) -> str:
    """The checks as a markdown table, with a total row."""
    lines = [
        "| run | questions | answers changed | calls changed | prompt tokens changed"
        " | cache misses |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in checks:
        lines.append(
            f"| {c.run} | {c.questions} | {c.answers} | {c.calls} | {c.tokens} | {c.misses} |"
        )
    total = [
        sum(getattr(c, name) for c in checks)
        for name in ("questions", "answers", "calls", "tokens", "misses")
    ]
    lines.append("| all | " + " | ".join(str(n) for n in total) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recorded", type=Path)
    parser.add_argument("replayed", type=Path)
    args = parser.parse_args(argv)
    checks = check_all(args.recorded, args.replayed)
    print(table(checks))
    return 0 if checks and all(c.same for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
