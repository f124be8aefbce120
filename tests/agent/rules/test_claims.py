"""The claims a sentence states (``agent.rules.claims``): its names, numbers and the months of
its dates, and whether a text holds each."""

from __future__ import annotations

from agent.rules.claims import Term, TextIndex, claims


def test_a_sentence_states_its_names_numbers_and_date_months() -> None:
    body = "Formed in 2008, Tinted Windows played the Bank of England on 18 March 2009"
    found = claims(body, frozenset({"formed", "played"}))
    assert [(t.kind, t.key) for t in found] == [
        ("name", "tinted window"),
        ("name", "bank of england"),
        ("month", "3"),
        ("number", "2008"),
        ("number", "18"),
        ("number", "2009"),
    ]


def test_a_text_holds_a_name_by_its_words_a_number_without_commas() -> None:
    index = TextIndex.of("Cain's Ballroom in Tulsa seats 1,700 since May 1930.")
    assert index.has(Term("name", "cain ballroom", ("cain", "ballroom")))
    assert index.has(Term("number", "1700")) and index.has(Term("month", "5"))
    assert not index.has(Term("name", "hanson", ("hanson",)))
