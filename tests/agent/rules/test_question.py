"""What counts as a question (``clean_question``) and the ``Question`` read from it once: each
field as the rules read it, and its JSON record, which the planner's checkpointed state keeps."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agent.rules.question import Question, QuestionError, clean_question


def test_whitespace_and_control_characters_are_normalized() -> None:
    assert clean_question("  Who\twrote\n\x00 Hamlet?  ") == "Who wrote Hamlet?"


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", "\x00\x01"])
def test_empty_questions_are_refused(bad: str) -> None:
    with pytest.raises(QuestionError, match="empty"):
        clean_question(bad)


def test_huge_questions_are_refused_with_the_limit() -> None:
    with pytest.raises(QuestionError, match="limit is 50"):
        clean_question("why " * 30, max_chars=50)


def test_non_text_is_refused() -> None:
    with pytest.raises(QuestionError, match="must be text"):
        clean_question(42)  # type: ignore[arg-type]


# --- the Question ---------------------------------------------------------------------------

CHOICE = "Who was born first, Morgan Llywelyn or Robert Jordan?"
RELATION = "Who is the maternal grandfather of Elin Sarrow?"
WHERE = "Where was the director of film Harbour Lights born?"
CENTURY = "In what century did the composer of Silver Tide live?"
YES_NO = "Are Tinted Windows and Hanson both American bands?"
MEMBERS = "Was Pepper Keenan or Rob Parissi in the band with more members?"


def test_a_choice_question_offers_its_alternatives_and_a_direction() -> None:
    question = Question.read(CHOICE)
    assert question.text == CHOICE
    assert question.shape == "comparison"
    assert question.choices == ("Morgan Llywelyn", "Robert Jordan")
    assert question.direction == ("min", "date")
    assert not question.yes_no and not question.asks_when and not question.asks_where
    assert question.unit is None and question.relation_plan is None
    assert question.asks_for == "unknown"


def test_a_choice_that_opens_like_yes_no_is_no_yes_no_question() -> None:
    question = Question.read(MEMBERS)
    assert question.choices == ("Pepper Keenan", "Rob Parissi")
    assert not question.yes_no
    assert question.direction == ("max", "amount")


def test_a_yes_no_question_offers_nothing_to_choose() -> None:
    question = Question.read(YES_NO)
    assert question.yes_no and question.choices == ()
    assert question.shape == "comparison"
    assert question.direction is None


def test_a_family_relation_carries_its_plan_and_asks_for_a_person() -> None:
    question = Question.read(RELATION)
    assert question.shape == "inference"
    assert question.relation_plan == ("mother of Elin Sarrow", "father of #1")
    assert question.asks_for == "person"
    assert not question.yes_no and question.choices == ()


def test_a_question_about_a_place_asks_where() -> None:
    question = Question.read(WHERE)
    assert question.shape == "composition"
    assert question.asks_where and not question.asks_when
    assert question.asks_for == "place"
    assert question.relation_plan is None  # a chain through a film, the model's to plan


def test_a_question_about_a_century_asks_for_a_date_in_that_unit() -> None:
    question = Question.read(CENTURY)
    assert question.asks_when and question.unit == "century"
    assert question.asks_for == "date"
    assert Question.read("Which decade did the band form?").unit == "decade"
    # a time wins over a place: the chain's date answers it
    assert Question.read("In what year was the birthplace of X founded?").asks_for == "date"


@pytest.mark.parametrize("text", [CHOICE, RELATION, WHERE, CENTURY, YES_NO, MEMBERS, "?"])
def test_the_record_is_json_and_reads_back_the_same_question(text: str) -> None:
    question = Question.read(text)
    record = json.loads(json.dumps(question.to_json()))  # as a checkpoint stores it
    assert Question.from_json(record) == question
    assert isinstance(Question.from_json(record).choices, tuple)


def test_a_record_is_read_back_without_reading_the_words_again() -> None:
    record = {**Question.read(CHOICE).to_json(), "text": "Which of the two, A or B?"}
    question = Question.from_json(record)
    assert question.text == "Which of the two, A or B?"
    assert question.choices == ("Morgan Llywelyn", "Robert Jordan")  # the record's, not A, B


@pytest.mark.parametrize(
    ("field", "value"),
    [("shape", "chain"), ("unit", "year"), ("direction", ["up", "date"])],
)
def test_a_record_the_rules_could_not_have_written_is_refused(field: str, value: object) -> None:
    record = {**Question.read(CHOICE).to_json(), field: value}
    with pytest.raises(ValueError, match=field if field != "direction" else "way"):
        Question.from_json(record)


def test_a_question_is_frozen() -> None:
    question = Question.read(CHOICE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        question.text = "something else"  # type: ignore[misc]
    assert hash(question) == hash(Question.read(CHOICE))
