"""``evals.same_rows``: two recordings of the same questions compared row by row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.same_rows import comparable, compare, differences, main


def _row(qid: str, prediction: str = "Tulsa", **changes: Any) -> dict[str, Any]:
    row = {
        "id": qid,
        "prediction": prediction,
        "f1": 1.0,
        "seconds": 12.5,
        "llm_calls": 3,
        "llm_cache_hits": 3,
        "steps": {"draft": {"calls": 1, "prompt_ms": 900.0}},
        "planner": {"sub_queries": [{"query": "band of X", "finding": "Y"}], "first_answer_s": 4},
    }
    return {**row, **changes}


def _write(root: Path, part: str, rows: list[dict[str, Any]]) -> None:
    folder = root / part
    folder.mkdir(parents=True)
    (folder / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_clock_and_the_token_accounting_are_left_out_at_any_depth() -> None:
    subs = [{"query": "band of X", "finding": "Y"}]
    slow = _row("a", seconds=99.0, steps={}, planner={"sub_queries": subs, "first_answer_s": 40})
    assert comparable(slow) == comparable(_row("a"))
    other = _row("a", planner={"sub_queries": [{"query": "band of X", "finding": "Z"}]})
    assert list(differences(comparable(_row("a")), comparable(other))) == [
        "planner.sub_queries[0].finding"
    ]


def test_equal_rows_with_only_cache_hits_pass(tmp_path: Path, capsys) -> None:
    _write(tmp_path / "before", "hotpotqa/full", [_row("a"), _row("b")])
    _write(tmp_path / "after", "hotpotqa/full", [_row("b", seconds=1.0), _row("a")])
    assert main([str(tmp_path / "before"), str(tmp_path / "after")]) == 0
    assert "2 rows paired, same, 6 of 6 calls cache hits" in capsys.readouterr().out


def test_a_changed_answer_a_missing_row_or_a_cache_miss_fails(tmp_path: Path) -> None:
    _write(tmp_path / "before", "musique/full", [_row("a"), _row("b"), _row("c")])
    changed, missed = _row("a", prediction="Chicago"), _row("b", llm_cache_hits=2)
    _write(tmp_path / "after", "musique/full", [changed, missed])
    [report] = compare(tmp_path / "before", tmp_path / "after")
    assert report.differing == {"a": ["prediction"]} and report.only_before == ["c"]
    assert (report.calls, report.cache_hits) == (6, 5) and not report.all_hits
    assert main([str(tmp_path / "before"), str(tmp_path / "after")]) == 1


def test_no_folder_on_both_sides_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "before", "2wiki/full", [_row("a")])
    (tmp_path / "after").mkdir()
    assert main([str(tmp_path / "before"), str(tmp_path / "after")]) == 2


def test_a_live_call_and_its_replayed_hit_read_the_same_prompt_tokens(tmp_path: Path) -> None:
    live = _row("a", prompt_tokens=400, cache_hit_prompt_tokens=600)
    _write(tmp_path / "before", "hotpotqa/full", [live, _row("b", cache_hit_prompt_tokens=900)])
    hit = _row("a", cache_hit_prompt_tokens=1000)
    _write(tmp_path / "after", "hotpotqa/full", [hit, _row("b", cache_hit_prompt_tokens=950)])
    (report,) = compare(tmp_path / "before", tmp_path / "after")
    assert report.tokens_differ == ["b"] and not report.same
    assert "prompt tokens read differ in 1" in report.line()
