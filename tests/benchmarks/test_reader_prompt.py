"""The reading benchmark (``benchmarks/reader_prompt.py``) on hand-made replies and rows: no
model, no shared data."""

from __future__ import annotations

from searchers.passages import Hit, Passage
from tests.benchmark_module import load_benchmark

rp = load_benchmark("reader_prompt")


def test_the_plain_reading_puts_documents_and_question_in_one_message() -> None:
    """(The terse reading is the product's free reader: ``tests/searchers/test_reader.py``.)"""
    hits = [Hit(Passage("a", "Tulsa", "Tulsa is a city."), 1.0)]
    system, user = rp.plain_messages("Which city?", hits)
    assert "Tulsa is a city." in user.content and "Which city?" in user.content
    assert "Tulsa" not in system.content


def test_the_summary_pairs_every_arm_with_the_drafts_reading() -> None:
    rows = [
        {"slice": "s", "id": i, "arm": arm, "answer": "", "f1": f1}
        for i, base, other in (("a", 1.0, 1.0), ("b", 0.0, 1.0), ("c", 1.0, 0.0), ("d", 0.0, 1.0))
        for arm, f1 in ((rp.BASELINE, base), ("terse-whole/bm25", other))
    ]
    text = rp.summary(rows)
    assert "| s | json-windows/draft | 4 | 50.0 |  |" in text
    assert "| s | terse-whole/bm25 | 4 | 75.0 | +25.0" in text and "2/1 |" in text
