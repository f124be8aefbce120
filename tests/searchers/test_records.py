"""Records that cross a boundary as JSON come back whole: a search result through the
planner's checkpointed state, and JSON-lines files through the one reader they all share."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from searchers.jsonl import json_objects
from searchers.passages import Hit, Passage
from searchers.searcher import Attempt, SearchResult, Verdict


def test_a_search_result_survives_its_json_form() -> None:
    hit = Hit(Passage("p1", "Tinted Windows", "a band", {"layer": 1}), 2.5, retriever="sparse")
    verdict = Verdict(True, llm_says=None, coverage=0.75, reason="coverage rule", answer="Tulsa")
    result = SearchResult(
        searcher="sparse",
        query="first show of Tinted Windows",
        hits=[hit],
        attempts=[
            Attempt(0, "original", "Tinted Windows", hit_ids=["p1"], verdict=verdict, ms=3.25),
            Attempt(1, "extend", "Tinted Windows show", parent=0, depth=1),
        ],
        best_attempt=0,
        sufficient=True,
        stopped="sufficient",
        llm_calls=1,
        ms=12.0,
        error=None,
    )
    again = SearchResult.from_json(result.to_json())
    assert again == result
    assert again.hits[0].passage.metadata == {"layer": 1}
    assert again.attempts[0].verdict == verdict


def test_a_failed_result_survives_its_json_form() -> None:
    failed = SearchResult.failed("tree", "q", "disk gone", started=0.0)
    again = SearchResult.from_json(failed.to_json())
    assert again.stopped == "error" and again.error == "disk gone" and again.hits == []


class BadFile(ValueError):
    pass


def read(text: str, **kw) -> list[tuple[int, dict]]:
    return list(json_objects(io.StringIO(text), Path("f.jsonl"), error=BadFile, **kw))


def test_json_lines_skip_blanks_and_keep_line_numbers() -> None:
    assert read('{"a": 1}\n\n  \n{"b": 2}\n') == [(1, {"a": 1}), (4, {"b": 2})]


@pytest.mark.parametrize(
    ("text", "kw", "message"),
    [
        ('{"a": 1}\n{oops\n', {}, r"f\.jsonl:2: malformed JSON"),
        ("[1, 2]\n", {"expected": "expected a row"}, r"f\.jsonl:1: expected a row"),
        ('{"a": 1}\n{"a": 2}\n{"a": 3}\n', {"max_lines": 2}, r"f\.jsonl: more than 2 lines"),
    ],
)
def test_json_lines_errors_name_the_line_in_the_callers_error(text, kw, message) -> None:
    with pytest.raises(BadFile, match=message):
        read(text, **kw)


def test_json_lines_that_are_not_utf8_are_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"a": 1}\n{"b": "caf\xe9"}\n'.encode("latin-1"))
    with path.open(encoding="utf-8") as fh, pytest.raises(BadFile, match="not UTF-8"):
        list(json_objects(fh, path, error=BadFile))
