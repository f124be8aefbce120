"""What a question asks for (``agent.rules.asked``): a time, a place, a date's unit, and which
way a comparison goes."""

from __future__ import annotations

import pytest

from agent.rules.asked import asked_unit, asks_when, asks_where, direction


@pytest.mark.parametrize(
    "question",
    [
        "When did the league of Tom Arlen start?",
        "In what year was the son of Tom Arlen's wife born?",
        "Which date was the bridge opened?",
        "What decade did the band form?",
        "How long ago did the war end?",
    ],
)
def test_a_question_about_a_time_asks_when(question: str) -> None:
    assert asks_when(question)


@pytest.mark.parametrize(
    "question",
    [
        "Which league started on 17 August 2013?",
        "Who was the wife of Tom Arlen?",
        "Where was the director of Jaws born?",
        "Whenever he sang, who played the drums?",  # a word, not the phrase
    ],
)
def test_other_questions_do_not_ask_when(question: str) -> None:
    assert not asks_when(question)


def test_a_question_about_a_place_asks_where_unless_it_also_asks_when() -> None:
    assert asks_where("Where was the director of Jaws born?")
    assert asks_where("What is the place of birth of the director of Jaws?")
    assert asks_where("What is the birthplace of Tom Arlen's wife?")
    assert not asks_where("Where and when was the director of Jaws born?")
    assert not asks_where("In what year was the birthplace of Tom Arlen founded?")
    # "what decade" is a time for asks_when but not for asks_where: both rules as measured
    decade = "What decade was the birthplace of Tom Arlen founded?"
    assert asks_where(decade) and asks_when(decade)
    assert not asks_where("Which city is the band from, where the river meets the sea?")


def test_a_date_is_asked_in_a_century_or_a_decade() -> None:
    assert asked_unit("What century did the author of A live in?") == "century"
    assert asked_unit("In which century was B born?") == "century"
    assert asked_unit("Which decade did C start?") == "decade"
    assert asked_unit("Which decade of which century did D start?") == "century"
    assert asked_unit("When did E die?") is None
    assert asked_unit("How many centuries did the empire last?") is None


def test_the_question_says_which_way_it_compares() -> None:
    assert direction("Who was born first, A or B?") == ("min", "date")
    assert direction("Which film came out later, A or B?") == ("max", "date")
    assert direction("Who is younger, A or B?") == ("max", "date")
    assert direction("Which album was released more recently, A or B?") == ("max", "date")
    assert direction("Which band has more members, A or B?") == ("max", "amount")
    assert direction("Which band has fewer members, A or B?") == ("min", "amount")
    assert direction("Who lived longer, A or B?") is None  # two lifespans, not two values
    assert direction("Which is a band, A or B?") is None
