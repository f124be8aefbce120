"""The alternatives a question offers and whether it asks yes or no
(``agent.rules.alternatives``), on the ways questions of the shared files write them."""

from __future__ import annotations

import pytest

from agent.rules.alternatives import asks_yes_no, choices, opens_yes_no

QUESTION = "Which band was formed first, Tinted Windows or Hanson?"


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
        # a software manual's lowercase identifiers (the Apache manual set, issue 65 item 4)
        (
            "Which module became available in an earlier httpd version, mod_http2 or "
            "mod_proxy_express?",
            ["mod_http2", "mod_proxy_express"],
        ),
        ("Which file is read first, httpd.conf or ports.conf?", ["httpd.conf", "ports.conf"]),
        ("Which came first, cats or dogs?", []),  # plain lowercase words are no names
    ],
)
def test_choices(question: str, expected: list[str]) -> None:
    assert choices(question) == expected


def test_a_question_offering_two_names_is_not_a_yes_no_question() -> None:
    assert not asks_yes_no("Was Pepper Keenan or Rob Parissi born first?")
    assert asks_yes_no("Are Tinted Windows and Hanson both American bands?")
    assert asks_yes_no("Was Steve Sekely known by multiple names or nicknames?")


def test_a_yes_no_opening_is_read_on_the_first_word_only() -> None:
    assert opens_yes_no('"Did Hanson play in Tulsa?"')
    assert opens_yes_no("was it Hanson?")
    assert not opens_yes_no("Which band did Hanson play with?")
    assert not opens_yes_no("")
