"""An answer's words against other text (``agent.rules.answer_text``): a restated query, and
the passage window that words an answer best."""

from __future__ import annotations

from agent.rules.answer_text import closest_window, restates


def test_an_answer_of_the_query_s_own_words_restates_it_unless_offered() -> None:
    assert restates("Tinted Windows", "first performance of Tinted Windows")
    assert not restates("Tulsa", "first performance of Tinted Windows")
    assert not restates("Hanson", "Who formed first, Tinted Windows or Hanson?")
    assert restates("Hanson", "Who formed first, Tinted Windows or Hanson?", offered=())


def test_the_closest_window_words_the_answer_as_the_passage_does() -> None:
    parts = ["Cain's Ballroom", "They played their first show at Cain's Ballroom in Tulsa."]
    assert closest_window("Cain Ballroom", parts) == (1.0, "Cain's Ballroom")
    assert closest_window("Paris", parts) == (0.0, "")
