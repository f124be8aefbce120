"""The question's shape picks the decompose prompt's worked plans (``agent.planner.shapes``)."""

from __future__ import annotations

import pytest

import prompts
from agent.planner.shapes import SHAPES, plan_examples, question_shape
from agent.planner.state import query_key


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


def test_every_shape_has_worked_plans_with_made_up_names() -> None:
    bank = prompts.example_bank("plan_examples")
    assert set(bank) == set(SHAPES)
    for shape in SHAPES:
        block = plan_examples(shape)
        assert bank[shape].hint in block
        for example in bank[shape].examples[:3]:
            assert example.question in block
            # every planned query of an example repeats a word of its question or builds on #n
            words = set(query_key(example.question).split())
            for line in example.answer:
                assert "#" in line or words & set(query_key(line).split()), line


def test_a_malformed_bank_is_a_clear_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "bad.toml").write_text('[single]\nhint = "x"\nexamples = [["q", "not a list"]]\n')
    monkeypatch.setattr(prompts, "PROMPT_DIR", tmp_path)
    with pytest.raises(prompts.PromptError, match=r"bad.toml \[single\]: each example"):
        prompts.example_bank("bad")
    with pytest.raises(prompts.PromptError, match="no example bank"):
        prompts.example_bank("missing")
