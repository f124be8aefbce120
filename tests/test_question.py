from __future__ import annotations

import pytest

from agent.question import QuestionError, clean_question


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
