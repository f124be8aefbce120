"""``benchmarks/replay_check.py`` on tiny rows: a replay that matches its record passes; a changed
answer, call count, prompt or a cache miss fails, and the table counts each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.benchmark_module import load_benchmark

rc = load_benchmark("replay_check")


def _row(qid: str, answer: str, calls: int, hits: int, prompt: int, cached: int) -> dict:
    return {
        "id": qid,
        "prediction": answer,
        "llm_calls": calls,
        "llm_cache_hits": hits,
        "prompt_tokens": prompt,
        "cache_hit_prompt_tokens": cached,
    }


def _write(root: Path, rows: list[dict[str, Any]]) -> None:
    run = root / "hotpotqa" / "full"
    run.mkdir(parents=True)
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_replay_of_live_calls_as_hits_matches(tmp_path: Path) -> None:
    # recorded: one call made live (400 prompt tokens); replayed: the same call a cache hit
    _write(tmp_path / "a", [_row("q1", "Tulsa", 2, 1, 400, 600)])
    _write(tmp_path / "b", [_row("q1", "Tulsa", 2, 2, 0, 1000)])
    assert rc.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0


def test_each_difference_is_counted(tmp_path: Path) -> None:
    _write(
        tmp_path / "a",
        [_row("q1", "Tulsa", 2, 2, 0, 1000), _row("q2", "Paris", 3, 3, 0, 900)],
    )
    _write(
        tmp_path / "b",
        [_row("q1", "Tulsa, Oklahoma", 3, 2, 50, 1000), _row("q2", "Paris", 3, 3, 0, 900)],
    )
    (check,) = rc.check_all(tmp_path / "a", tmp_path / "b")
    assert (check.questions, check.answers, check.calls, check.tokens, check.misses) == (
        2, 1, 1, 1, 1,
    )  # fmt: skip
    assert not check.same
    assert "| hotpotqa/full | 2 | 1 | 1 | 1 | 1 |" in rc.table([check])
    assert rc.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
