"""The question's shape (``agent.rules.shape``): which worked plans the decompose prompt shows
and how the router groups the question."""

from __future__ import annotations

import pytest

from agent.rules.shape import SHAPES, question_shape


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        ("Who was born first, Ilse Varnow or Dorian Maslow?", "comparison"),
        ("Are Harbrook Mills and Velta Foods based in the same country?", "comparison"),
        ("Was Ilse Varnow or Dorian Maslow born first?", "comparison"),
        ("Which film has the director who died first, Night at Kessel or Amber Gate?",
         "bridge_comparison"),
        ("Which film whose director is younger, Night at Kessel or Amber Gate?",
         "bridge_comparison"),
        ("Do both directors of films Kessel and Amber have the same nationality?",
         "bridge_comparison"),
        ("Who is the maternal grandfather of Elin Sarrow?", "inference"),
        ("Who is Jonas Brede's father-in-law?", "inference"),
        ("Where was the wife of Tomas Elvard born?", "composition"),
        ("When did Jean Arlen (Singer)'s husband die?", "composition"),
        ("The band who released Copper Rain first played in what city?", "composition"),
        ("Who married the narrator of Harbour Lights?", "composition"),
        ("When was the Varnow Bridge opened?", "single"),
    ],
)  # fmt: skip
def test_question_shapes(question: str, shape: str) -> None:
    assert question_shape(question) == shape


def test_every_question_has_one_of_the_shapes() -> None:
    for question in ("", "?", "Hanson", "Was it?", "Who is the father of elin sarrow?"):
        assert question_shape(question) in SHAPES
