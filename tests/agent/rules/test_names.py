"""The name runs a question writes (``agent.rules.names``): capitalised words with the lowercase
connectors a name may hold."""

from __future__ import annotations

from agent.rules.names import NAME_CONNECTORS, capitalised, capitalised_head, capitalised_tail


def test_a_name_may_hold_lowercase_connectors() -> None:
    assert {"of", "van", "der", "de"} <= NAME_CONNECTORS
    assert "and" not in NAME_CONNECTORS  # "A and B" is two names
    assert capitalised("Hanson") and capitalised("1984") and not capitalised("band")


def test_the_name_that_ends_a_text() -> None:
    assert capitalised_tail("Which magazine was started first Arthur's Magazine") == (
        "Arthur's Magazine"
    )
    assert capitalised_tail("the band Corrosion of Conformity") == "Corrosion of Conformity"
    assert capitalised_tail("a song of the Beatles") == "Beatles"  # no leading connector
    assert capitalised_tail("Was Pepper Keenan") == ""  # a yes/no verb opens no name
    assert capitalised_tail("was started first") == ""


def test_the_name_that_opens_a_text() -> None:
    assert capitalised_head("the band The Dear Hunter come from") == "The Dear Hunter"
    assert capitalised_head("Ludwig van Beethoven, who was born") == "Ludwig van Beethoven"
    assert capitalised_head("Rob Parissi born first?") == "Rob Parissi"
    assert capitalised_head("Brabejum of the genus") == "Brabejum"  # no trailing connector
    assert capitalised_head("who was born first") == ""
    assert capitalised_head("Which band") == ""  # a question word opens no name
