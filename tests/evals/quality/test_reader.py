"""The multiple-choice reader: a schema-conforming reply, a free-text reply read for one
unambiguous option, and a reply that names none (a recorded failure, not a crash)."""

from __future__ import annotations

import pytest

from evals.quality.reader import choice_schema, parse_choice, read_choice
from tests.scripted_chat import ScriptedChatModel

OPTIONS = ["the lamp", "the goat", "the boat", "the winch"]


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("B", 2),
        ("(c)", 3),
        ("2.", 2),
        ('{"choice": "d"}', 4),
        ('{"answer": 1}', 1),
        ("Answer: (B)", 2),
        ("answer: (b)", 2),
        ("The correct option is D, because the winch turns.", 4),
        ("The answer is a keeper who stays.", None),  # "a" is an article, not option A
        ("option A or option C", None),  # two options named: no guess
        ("E", None),  # outside the four options
        ("5", None),
        ("I cannot tell.", None),
        ("", None),
    ],
)
def test_free_text_replies_name_one_option_or_none(text: str, chosen: int | None) -> None:
    assert parse_choice(text, 4) == chosen


def test_the_schema_allows_only_the_options_letters() -> None:
    schema = choice_schema(4).model_json_schema()
    assert schema["properties"]["choice"]["enum"] == ["A", "B", "C", "D"]
    assert choice_schema(4) is choice_schema(4)  # one class per count (its runnable is cached)


async def test_the_reader_sends_numbered_excerpts_and_lettered_options() -> None:
    chat = ScriptedChatModel(replies=['{"choice": "C"}'])
    reading = await read_choice(chat, "What sank?", OPTIONS, ["first  text", "second"], timeout_s=5)
    assert reading.chosen == 3 and reading.error is None
    user = str(chat.calls[0][-1].content)
    assert "[1] first text\n\n[2] second" in user
    assert "Question: What sank?" in user and "C. the boat" in user


async def test_a_reply_outside_the_schema_is_read_by_hand_and_kept() -> None:
    chat = ScriptedChatModel(replies=["The answer is D."])
    reading = await read_choice(chat, "What turns?", OPTIONS, [], timeout_s=5)
    assert reading.chosen == 4 and reading.raw == "The answer is D." and reading.error is None
    assert "(no excerpts were found)" in str(chat.calls[0][-1].content)


async def test_an_unparseable_reply_is_an_error_not_an_exception() -> None:
    chat = ScriptedChatModel(replies=["I cannot tell from these excerpts."])
    reading = await read_choice(chat, "Who?", OPTIONS, ["text"], timeout_s=5)
    assert reading.chosen is None
    assert reading.error and "unparseable reply" in reading.error
    assert reading.raw == "I cannot tell from these excerpts."


async def test_a_failing_model_is_an_error_not_an_exception() -> None:
    chat = ScriptedChatModel(replies=[])  # raises: it ran out of replies
    reading = await read_choice(chat, "Who?", OPTIONS, ["text"], timeout_s=5)
    assert reading.chosen is None and reading.error and "AssertionError" in reading.error
