"""Comparison questions, no model (``agent.checks.comparison``): a short answer mapped onto one
of the question's alternatives, and two-way comparisons decided from the findings' dates and
numbers. The alternatives and the direction are the rules'
(``tests/agent/rules/test_alternatives.py``, ``tests/agent/rules/test_asked.py``); here they
are read from the ``Question``."""

from __future__ import annotations

from collections.abc import Sequence

from agent.checks.comparison import Comparison, resolve
from agent.rules.question import Question

QUESTION = "Which band was formed first, Tinted Windows or Hanson?"
OFFERED = Question.read(QUESTION).choices

BORN = [
    ("birth date of Morgan Llywelyn", "December 3, 1937"),
    ("birth date of Robert Jordan", "October 17, 1948"),
]


def compare(question: str, findings: Sequence[tuple[str, str]]) -> Comparison | None:
    """``resolve`` on the question as the planner reads it."""
    return resolve(Question.read(question), findings)


def test_the_earlier_birth_answers_born_first_and_the_later_born_later() -> None:
    picked = compare("Who was born first, Morgan Llywelyn or Robert Jordan?", BORN)
    assert picked is not None and picked.picked == "Morgan Llywelyn"
    assert picked.values == {
        "Morgan Llywelyn": "December 3, 1937",
        "Robert Jordan": "October 17, 1948",
    }
    later = compare("Who was born later, Morgan Llywelyn or Robert Jordan?", BORN)
    assert later is not None and later.picked == "Robert Jordan"


def test_numbers_compare_by_amount() -> None:
    found = [("members of Alpha", "12"), ("members of Beta", "4")]
    assert compare("Which band has fewer members, Alpha or Beta?", found).picked == "Beta"
    assert compare("Which band has more members, Alpha or Beta?", found).picked == "Alpha"


def test_anything_unclear_is_left_to_the_reader() -> None:
    question = "Who was born first, Morgan Llywelyn or Robert Jordan?"
    assert compare(question, BORN[:1]) is None  # one alternative has no finding
    assert compare(question, [*BORN, ("birthday of Robert Jordan", "1950")]) is None  # two
    assert compare(question, [BORN[0], ("birth date of Robert Jordan", "Ireland")]) is None
    tie = [BORN[0], ("birth date of Robert Jordan", "1937")]  # by year, the precision shared
    assert compare(question, tie) is None
    assert compare("Who was born in Paris, A or B?", BORN) is None  # no direction
    assert compare("When was Robert Jordan born?", BORN) is None  # no alternatives


def test_a_magnitude_word_scales_its_number() -> None:
    found = [("population of Shanghai", "24.15 million"), ("population of Hanggin", "105,000")]
    question = "Which has the larger population, Shanghai or Hanggin?"
    assert compare(question, found).picked == "Shanghai"


# "Which film has the director born first?": each film's finding is a name, and the date is
# one hop on, in the query the planner sent with that name filled in (made-up films and names)
DIRECTORS = [
    ("director of Harbour Lights", "Ada Quill"),
    ("director of The Salt Road", "Bram Okafor"),
    ("birth date of Ada Quill", "4 May 1911"),
    ("birth date of Bram Okafor", "June 2, 1898"),
]


def test_a_comparison_one_hop_away_follows_each_alternative_to_its_date() -> None:
    question = "Which film has the director born first, Harbour Lights or The Salt Road?"
    picked = compare(question, DIRECTORS)
    assert picked is not None and picked.picked == "The Salt Road"
    assert picked.values == {"Harbour Lights": "4 May 1911", "The Salt Road": "June 2, 1898"}
    younger = compare(
        "Which film's director is younger, Harbour Lights or The Salt Road?", DIRECTORS
    )
    assert younger is not None and younger.picked == "Harbour Lights"


def test_a_missing_or_forked_hop_leaves_the_comparison_to_the_reader() -> None:
    question = "Which film has the director born first, Harbour Lights or The Salt Road?"
    assert compare(question, DIRECTORS[:3]) is None  # no date for the second director
    forked = [*DIRECTORS, ("death date of Ada Quill", "1980")]
    assert compare(question, forked) is None  # two dates one hop from the first film
