"""The reading benchmark (``benchmarks/reader_prompt.py``) on hand-made replies and rows: no
model, no shared data."""

from __future__ import annotations

from searchers.passages import Hit, Passage
from tests.benchmark_module import load_benchmark

rp = load_benchmark("reader_prompt")


def test_a_free_text_reply_gives_its_first_line_without_the_label_or_full_stop() -> None:
    assert rp.free_answer("\n  Answer: Tulsa.\nBecause passage 2 says so.") == "Tulsa"
    assert rp.free_answer('"The Seine"') == "The Seine"
    assert rp.free_answer("") == ""


def test_the_terse_reading_puts_the_documents_in_the_system_message() -> None:
    hits = [Hit(Passage("a", "Tulsa", "Tulsa is a city."), 1.0)]
    system, user = rp.free_messages("terse-whole", "Which city?", hits)
    assert "Document 1 (Title: Tulsa) Tulsa is a city." in system.content
    assert user.content == "Question: Which city?"
    system, user = rp.free_messages("plain-whole", "Which city?", hits)
    assert "Tulsa is a city." in user.content and "Which city?" in user.content


def test_the_summary_pairs_every_arm_with_the_drafts_reading() -> None:
    rows = [
        {"slice": "s", "id": i, "arm": arm, "answer": "", "f1": f1}
        for i, base, other in (("a", 1.0, 1.0), ("b", 0.0, 1.0), ("c", 1.0, 0.0), ("d", 0.0, 1.0))
        for arm, f1 in ((rp.BASELINE, base), ("terse-whole/bm25", other))
    ]
    text = rp.summary(rows)
    assert "| s | json-windows/draft | 4 | 50.0 |  |" in text
    assert "| s | terse-whole/bm25 | 4 | 75.0 | +25.0" in text and "2/1 |" in text
