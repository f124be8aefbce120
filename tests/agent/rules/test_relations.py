"""A family relation with one reading is planned from its definition (``agent.rules.relations``);
any other question is left to the model."""

from __future__ import annotations

import pytest

from agent.rules.relations import relation_plan


@pytest.mark.parametrize(
    ("question", "plan"),
    [
        ("Who is the maternal grandmother of Elin Sarrow?",
         ["mother of Elin Sarrow", "mother of #1"]),
        ("Who is the maternal grandfather of Elin Sarrow?",
         ["mother of Elin Sarrow", "father of #1"]),
        ("Who was Tomas Elvard's paternal grandmother?",
         ["father of Tomas Elvard", "mother of #1"]),
        ("Who is Ilse Varnow, Countess Of Kessel's father-in-law?",
         ["spouse of Ilse Varnow, Countess Of Kessel", "father of #1"]),
        ("Who is the mother in law of Dorian Maslow?", ["spouse of Dorian Maslow", "mother of #1"]),
        ("Who is Jonas Brede's child-in-law?", ["child of Jonas Brede", "spouse of #1"]),
        ("Who is the stepchild of Jonas Brede?", ["spouse of Jonas Brede", "child of #1"]),
        ("Who was the stepmother of Amber Kessel (1790–1840)?",
         ["father of Amber Kessel (1790–1840)", "spouse of #1"]),
        ("Who is Agnes' husband?", ["spouse of Agnes"]),
        ("who was the father of Catherine of Varn", ["father of Catherine of Varn"]),
        ("Who is the wife of Piet van der Aa?", ["spouse of Piet van der Aa"]),
    ],
)  # fmt: skip
def test_a_relation_with_one_reading_is_planned_by_its_definition(
    question: str, plan: list[str]
) -> None:
    assert relation_plan(question) == plan


@pytest.mark.parametrize(
    "question",
    [
        "Who is the grandfather of Elin Sarrow?",  # which side?
        "Who is the uncle of Elin Sarrow?",  # a parent's brother, or an aunt's husband?
        "Who is Elin Sarrow's brother-in-law?",
        "Who is the father of the director of film Amber Gate?",  # a chain through a film
        "Who is the mother of Tova's co-star in Harbour Lights?",  # a description, not a name
        "Who is Elin Sarrow's father's mother?",  # a relation of a relation
        "Where was the mother of Elin Sarrow born?",  # asks a place, not the person
        "Who is the maternal grandfather of ?",
        "Who is the father of elin sarrow?",  # not written as a name
    ],
)
def test_anything_else_is_left_to_the_model(question: str) -> None:
    assert relation_plan(question) is None
