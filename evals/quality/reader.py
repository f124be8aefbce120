"""The multiple-choice reader: one call that picks an option from the retrieved excerpts.

Every QuALITY pipeline ends here with the same prompt (``choice_answer``) and passages packed
into the same token budget, so a difference between pipelines is a difference in what they
retrieved. The reply is schema-enforced (a letter from the options' range); when a model or an
endpoint ignores the schema, the raw text is read for one unambiguous letter or option number
("B", "(b)", "Answer: 2", ``{"answer": "C"}``). A reply that names none, or names two, is a
recorded failure of that question (``ChoiceReading.error``), never a crash and never a guess.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, create_model

import prompts
from evals.quality.data import LETTERS
from searchers.structured_calls import STEP_KEY, structured

STEP = "choice_answer"
REPLY_TOKENS = 32  # {"choice": "B"} is about eight tokens; a longer reply is a ramble
# "Answer: (B)", "the option is 2", "answer: (b)": after the word, a capital letter, a number,
# or a letter in brackets, so "the answer is a man who..." names no option
_MARKED = re.compile(
    r"\b(?i:answer|option|choice)\b[^A-Za-z0-9(\[]{0,12}(?:is\s+)?"
    r"(?:[(\[]([A-Za-z])[)\]]|[(\[]?([A-Z]|\d{1,2})\b)"
)
_ALONE = re.compile(r"^[\s\"'*(\[]*([A-Za-z]|\d{1,2})[\s\"'*)\].:]*$")


@cache
def choice_schema(count: int) -> type[BaseModel]:
    """``{"choice": "A"|...}`` for ``count`` options; one class per count, so the structured
    runnable built from it is cached too."""
    letters = tuple(LETTERS[:count])
    return create_model(
        f"Choice{count}",
        choice=(Literal[letters], Field(description="the letter of the chosen option")),
    )


@dataclass
class ChoiceReading:
    chosen: int | None  # 1-based option number; None when the reply named no option
    raw: str = ""  # the reply's text, kept when it had to be parsed by hand or failed
    error: str | None = None


def _to_number(token: str, count: int) -> int | None:
    token = token.strip()
    if token.isdigit():
        number = int(token)
        return number if 1 <= number <= count else None
    if len(token) == 1 and token.upper() in LETTERS[:count]:
        return LETTERS.index(token.upper()) + 1
    return None


def parse_choice(text: str, count: int) -> int | None:
    """The option a free-text reply names, 1-based, or None when it names none or several."""
    text = text.strip()
    if not text:
        return None
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("choice", "answer", "option", "letter"):
            value = data.get(key)
            if isinstance(value, int | str) and not isinstance(value, bool):
                number = _to_number(str(value), count)
                if number is not None:
                    return number
        return None
    alone = _ALONE.match(text)
    if alone:
        return _to_number(alone.group(1), count)
    named = {
        n for m in _MARKED.finditer(text) if (n := _to_number(m.group(1) or m.group(2), count))
    }
    return named.pop() if len(named) == 1 else None


def format_options(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


def format_passages(texts: Sequence[str]) -> str:
    return "\n\n".join(f"[{n}] {' '.join(t.split())}" for n, t in enumerate(texts, start=1))


def _content(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content or "")


async def read_choice(
    chat: BaseChatModel,
    question: str,
    options: Sequence[str],
    passages: Sequence[str],
    *,
    timeout_s: float,
) -> ChoiceReading:
    """Ask the model which option the passages support. Raises nothing a reply can cause."""
    schema = choice_schema(len(options))
    messages = prompts.render(
        "choice_answer",
        passages=format_passages(passages) if passages else "(no excerpts were found)",
        question=question,
        options=format_options(options),
    )
    runnable = structured(chat, schema, REPLY_TOKENS)
    try:
        out = await asyncio.wait_for(
            runnable.ainvoke(messages, config={"metadata": {STEP_KEY: STEP}}), timeout=timeout_s
        )
    except TimeoutError:
        return ChoiceReading(None, error=f"{STEP}: no reply within {timeout_s:.0f}s")
    except Exception as exc:  # transport and provider errors of every client library
        return ChoiceReading(None, error=f"{STEP}: {type(exc).__name__}: {str(exc)[:200]}")
    parsed = out.get("parsed") if isinstance(out, dict) else out
    if isinstance(parsed, schema):
        return ChoiceReading(LETTERS.index(parsed.choice) + 1)  # type: ignore[attr-defined]
    raw = _content(out.get("raw")) if isinstance(out, dict) else ""
    chosen = parse_choice(raw, len(options))
    if chosen is not None:
        return ChoiceReading(chosen, raw=raw[:500])
    return ChoiceReading(
        None, raw=raw[:500], error=f"{STEP}: unparseable reply {' '.join(raw.split())[:120]!r}"
    )
