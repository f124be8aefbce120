"""Dates and numbers as a text states them (``agent.rules.values``): a date in the forms
passages write it, a number with its magnitude word, a year in the unit a question asks."""

from __future__ import annotations

from agent.rules.question import Question
from agent.rules.values import in_asked_unit, parse_date, parse_number


def test_dates_are_read_in_the_forms_passages_write_them() -> None:
    assert parse_date("December 3, 1937") == (1937, 12, 3)
    assert parse_date("3 December 1937") == (1937, 12, 3)
    assert parse_date("1937") == (1937, 0, 0)
    assert parse_date("Dec 1937") == (1937, 12, 0)
    assert parse_date("1937–1948") is None  # two years: not one value
    assert parse_date("Robert Jordan") is None


def test_a_magnitude_word_scales_the_number() -> None:
    assert parse_number("24.15 million") == 24_150_000.0
    assert parse_number("105,000") == 105_000.0
    assert parse_number("about 3") is None


def test_a_year_is_said_in_the_unit_the_question_asks() -> None:
    century = Question.read("What century did the author of A live in?").unit
    assert century == "century"
    assert in_asked_unit("1710", century) == "18th century"
    assert in_asked_unit("3 May 1901", century) == "20th century"
    assert in_asked_unit("1700", century) == "17th century"
    decade = Question.read("Which decade did C start?").unit
    assert decade == "decade"
    assert in_asked_unit("1987", decade) == "1980s"
    assert in_asked_unit("18th century", century) == "18th century"
    assert in_asked_unit("1980s", decade) == "1980s"
    assert in_asked_unit("1710", Question.read("When did E die?").unit) == "1710"
    assert in_asked_unit("Paris", century) == "Paris"
