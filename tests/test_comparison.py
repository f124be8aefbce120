"""Comparison questions, no model: the alternatives a question offers, a short answer mapped
onto one of them, and two-way comparisons decided from the findings' dates and numbers."""

from __future__ import annotations

import pytest

from agent.checks.comparison import (
    asks_yes_no,
    choices,
    direction,
    parse_date,
    pick_choice,
    resolve,
)

QUESTION = "Which band was formed first, Tinted Windows or Hanson?"

BORN = [
    ("birth date of Morgan Llywelyn", "December 3, 1937"),
    ("birth date of Robert Jordan", "October 17, 1948"),
]


def test_dates_are_read_in_the_forms_passages_write_them() -> None:
    assert parse_date("December 3, 1937") == (1937, 12, 3)
    assert parse_date("3 December 1937") == (1937, 12, 3)
    assert parse_date("1937") == (1937, 0, 0)
    assert parse_date("Dec 1937") == (1937, 12, 0)
    assert parse_date("1937–1948") is None  # two years: not one value
    assert parse_date("Robert Jordan") is None


def test_the_question_says_which_way_it_compares() -> None:
    assert direction("Who was born first, A or B?") == ("min", "date")
    assert direction("Which film came out later, A or B?") == ("max", "date")
    assert direction("Who is younger, A or B?") == ("max", "date")
    assert direction("Which band has more members, A or B?") == ("max", "amount")
    assert direction("Who lived longer, A or B?") is None  # two lifespans, not two values
    assert direction("Which is a band, A or B?") is None


def test_the_earlier_birth_answers_born_first_and_the_later_born_later() -> None:
    picked = resolve("Who was born first, Morgan Llywelyn or Robert Jordan?", BORN)
    assert picked is not None and picked.picked == "Morgan Llywelyn"
    assert picked.values == {
        "Morgan Llywelyn": "December 3, 1937",
        "Robert Jordan": "October 17, 1948",
    }
    later = resolve("Who was born later, Morgan Llywelyn or Robert Jordan?", BORN)
    assert later is not None and later.picked == "Robert Jordan"


def test_numbers_compare_by_amount() -> None:
    found = [("members of Alpha", "12"), ("members of Beta", "4")]
    assert resolve("Which band has fewer members, Alpha or Beta?", found).picked == "Beta"
    assert resolve("Which band has more members, Alpha or Beta?", found).picked == "Alpha"


def test_anything_unclear_is_left_to_the_reader() -> None:
    question = "Who was born first, Morgan Llywelyn or Robert Jordan?"
    assert resolve(question, BORN[:1]) is None  # one alternative has no finding
    assert resolve(question, [*BORN, ("birthday of Robert Jordan", "1950")]) is None  # two
    assert resolve(question, [BORN[0], ("birth date of Robert Jordan", "Ireland")]) is None
    tie = [BORN[0], ("birth date of Robert Jordan", "1937")]  # by year, the precision shared
    assert resolve(question, tie) is None
    assert resolve("Who was born in Paris, A or B?", BORN) is None  # no direction
    assert resolve("When was Robert Jordan born?", BORN) is None  # no alternatives


def test_a_magnitude_word_scales_its_number() -> None:
    found = [("population of Shanghai", "24.15 million"), ("population of Hanggin", "105,000")]
    question = "Which has the larger population, Shanghai or Hanggin?"
    assert resolve(question, found).picked == "Shanghai"


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
    picked = resolve(question, DIRECTORS)
    assert picked is not None and picked.picked == "The Salt Road"
    assert picked.values == {"Harbour Lights": "4 May 1911", "The Salt Road": "June 2, 1898"}
    younger = resolve(
        "Which film's director is younger, Harbour Lights or The Salt Road?", DIRECTORS
    )
    assert younger is not None and younger.picked == "Harbour Lights"


def test_a_missing_or_forked_hop_leaves_the_comparison_to_the_reader() -> None:
    question = "Which film has the director born first, Harbour Lights or The Salt Road?"
    assert resolve(question, DIRECTORS[:3]) is None  # no date for the second director
    forked = [*DIRECTORS, ("death date of Ada Quill", "1980")]
    assert resolve(question, forked) is None  # two dates one hop from the first film


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (QUESTION, ["Tinted Windows", "Hanson"]),
        (
            "Who was born earlier, Ada Lovelace or Charles Babbage?",
            ["Ada Lovelace", "Charles Babbage"],
        ),
        (
            "Which magazine was started first Arthur's Magazine or First for Women?",
            ["Arthur's Magazine", "First for Women"],
        ),
        # without a serial comma, a comma is inside a title (2Wiki writes such titles often)
        (
            "Which is the oldest, Hanson, Tinted Windows or Corrosion of Conformity?",
            ["Hanson, Tinted Windows", "Corrosion of Conformity"],
        ),
        (
            "Which film came out earlier, Amber Gate or That Night, Kessel?",
            ["Amber Gate", "That Night, Kessel"],
        ),
        (
            "Which film has the director born first, Harbour Lights, Part One or Salt: 3,000 "
            "Miles?",
            ["Harbour Lights, Part One", "Salt: 3,000 Miles"],
        ),
        (
            "Which film was released earlier, Kessel: The Wanderer or Amber Gate 4: The Return?",
            ["Kessel: The Wanderer", "Amber Gate 4: The Return"],
        ),
        (
            "Which film was nominated, Salt Road: The Cotton or Amber Gate, the 1970 documentary?",
            ["Salt Road: The Cotton", "Amber Gate"],
        ),
        (
            "Which band, Copper Rain or Tinted Windows, had more members?",
            ["Copper Rain", "Tinted Windows"],
        ),
        (
            "In Tulsa, Oklahoma, which band formed first, Hanson or Tinted Windows?",
            ["Hanson", "Tinted Windows"],
        ),
        (
            "Which university is older: University of Varn, Kessel or Arlen University?",
            ["University of Varn, Kessel", "Arlen University"],
        ),
        (
            "Which city is larger: Tulsa, Raleigh, or Oklahoma City?",
            ["Tulsa", "Raleigh", "Oklahoma City"],
        ),
        ("Who, Ada or Bob, was born first?", ["Ada", "Bob"]),
        ("Are Tinted Windows and Hanson both American bands?", []),
        ("Is Hanson or Tinted Windows older?", ["Hanson", "Tinted Windows"]),
        ("Was Pepper Keenan or Rob Parissi born first?", ["Pepper Keenan", "Rob Parissi"]),
        (
            "Does the band God Lives Underwater or the band The Dear Hunter come from a "
            "larger state?",
            ["God Lives Underwater", "The Dear Hunter"],
        ),
        (
            "Is the Marsilea or the Brabejum the genus of more individual species of plants?",
            ["Marsilea", "Brabejum"],
        ),
        ("Was Steve Sekely and Willian King Baggot known by multiple names or nicknames?", []),
        ("Did Hanson play in Tulsa, Oklahoma or Texas?", []),
        (
            "Between two scientists Ernst Messerschmid and Philippe Perrin, who is older?",
            ["Ernst Messerschmid", "Philippe Perrin"],
        ),
        (
            "In between Polytechnic University of the Philippines and California Polytechnic "
            "State University which was founded as a vocational high school?",
            [
                "Polytechnic University of the Philippines",
                "California Polytechnic State University",
            ],
        ),
        (
            "Among Kele Okereke and Jon Hume who made the band Evermore?",
            ["Kele Okereke", "Jon Hume"],
        ),
        (
            "Of the retired tennis players Ross Case and Slobodan Živojinović, which player "
            "reached a higher rank?",
            ["Ross Case", "Slobodan Živojinović"],
        ),
        ("Who was born first out of Heng Pov and Rajesh Bhola?", ["Heng Pov", "Rajesh Bhola"]),
        ("What sport is played by both Justin Gimelstob and Angelique Kerber?", []),
        ("Which city lies between Tulsa and Oklahoma City?", []),
        ("Who founded Candlelight Records?", []),
    ],
)
def test_choices(question: str, expected: list[str]) -> None:
    assert choices(question) == expected


def test_pick_choice_maps_the_short_answer_to_the_question_wording() -> None:
    assert pick_choice("hanson", "", QUESTION) == "Hanson"
    assert pick_choice("the band Tinted Windows", "", QUESTION) == "Tinted Windows"


def test_pick_choice_resolves_a_category_answer_through_the_long_answer() -> None:
    long = "Hanson was formed in 1992 in Tulsa [3]."
    assert pick_choice("the American pop rock band", long, QUESTION) == "Hanson"


def test_pick_choice_leaves_the_short_answer_when_unsure() -> None:
    long = "Hanson was formed in 1992 [3] and Tinted Windows in 2008 [1]."
    assert pick_choice("the older band", long, QUESTION) == "the older band"
    assert pick_choice("yes", "Both are American.", "Are Hanson and Tinted Windows American?") == (
        "yes"
    )


def test_a_question_offering_two_names_is_not_a_yes_no_question() -> None:
    assert not asks_yes_no("Was Pepper Keenan or Rob Parissi born first?")
    assert asks_yes_no("Are Tinted Windows and Hanson both American bands?")
    assert asks_yes_no("Was Steve Sekely known by multiple names or nicknames?")
