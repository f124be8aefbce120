"""The decompose prompt's worked plans, one bank per question shape
(``agent.planner.examples``)."""

from __future__ import annotations

import pytest

import prompts
from agent.planner.examples import copies_an_example, example_names, plan_examples
from agent.rules.query_text import query_key
from agent.rules.shape import SHAPES


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


def test_a_query_copying_an_example_name_the_question_does_not_name_is_a_copy() -> None:
    names = example_names()
    assert {"Silver", "Tides", "Elvard"} <= names
    assert not names & {"The", "A", "An", "Of", "And"}  # title words name nothing
    capital = "Which county borders the capital of the state where Johnson Hagood was born?"
    assert copies_an_example("county where the composer of Silver Tide was born", capital)
    assert not copies_an_example("state where Johnson Hagood was born", capital)
    film = "Who directed the film Silver Tides of Harbrook?"
    assert not copies_an_example("director of Silver Tides of Harbrook", film)
