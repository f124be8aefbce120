"""What counts as a question hoptree will work on; checked once, at every entry point."""

from __future__ import annotations

import unicodedata

MAX_QUESTION_CHARS = 2000


class QuestionError(ValueError):
    """A question the agent refuses before spending anything on it."""


def clean_question(text: str, *, max_chars: int = MAX_QUESTION_CHARS) -> str:
    """Normalize whitespace and control characters; refuse empty and oversized questions."""
    if not isinstance(text, str):
        raise QuestionError(f"a question must be text, got {type(text).__name__}")
    normalized = unicodedata.normalize("NFC", text)
    printable = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in normalized)
    cleaned = " ".join(printable.split())
    if not cleaned:
        raise QuestionError("the question is empty")
    if len(cleaned) > max_chars:
        raise QuestionError(
            f"the question is {len(cleaned)} characters long; the limit is {max_chars}"
        )
    return cleaned
