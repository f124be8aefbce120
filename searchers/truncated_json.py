"""Reading a JSON reply the model did not finish.

A schema-enforced reply that hits the token limit is cut mid-value: ``{"passage": "Paris is the
capital of France. It is the capital of France. It is the`` and the OpenAI client refuses it.
Most of such a reply is good; the loss is the tail. So we close it ourselves at the last place
where closing still makes sense (a sentence end inside the open string, the end of a whole
string, or the raw end) and keep the first closure that parses and validates. Whether a salvaged
value is good enough is the caller's business: a pseudo-document missing its last sentence still
searches well, and a verdict missing a field fails validation and is not salvaged at all.
"""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)
MAX_CUTS = 24  # closures tried per reply, from the longest down
_SENTENCE_ENDS = ".!?"
_CLOSERS = {"{": "}", "[": "]"}


def _closure(prefix: str) -> str | None:
    """What closes ``prefix`` into a JSON document, or None where no closure could parse
    (inside an escape, or right after a key, a colon or a comma)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    if escaped or not stack:
        return None
    return ('"' if in_string else "") + "".join(reversed(stack))


def _cut_points(text: str) -> list[int]:
    """Ends worth closing at, best first. If the text stops inside a string: the sentence ends
    in that string (a passage loses only its unfinished sentence), then the ends of whole
    strings, objects and arrays (a list loses only its cut item), then the raw end (a passage
    with no sentence end yet). Otherwise the raw end comes first."""
    whole: list[int] = []
    open_sentence_ends: list[int] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                whole.append(i + 1)
            elif ch in _SENTENCE_ENDS and (i + 1 == len(text) or text[i + 1] == " "):
                open_sentence_ends.append(i + 1)
        elif ch == '"':
            in_string = True
            open_sentence_ends = []  # only the string the text stops in counts
        elif ch in "}]":
            whole.append(i + 1)
    structure = sorted(whole, reverse=True)
    raw_end = len(text) - 1 if escaped else len(text)  # a dangling backslash escapes nothing
    if in_string:
        return sorted(open_sentence_ends, reverse=True) + structure + [raw_end]
    return [raw_end, *structure]


def salvage(text: str, schema: type[T], *, max_cuts: int = MAX_CUTS) -> T | None:
    """The longest prefix of a cut JSON reply that, closed, validates as ``schema``; else None."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    for tried, cut in enumerate(_cut_points(text)):
        if tried >= max_cuts:
            break
        prefix = text[:cut].rstrip().rstrip(",").rstrip()
        closing = _closure(prefix)
        if closing is None:
            continue
        try:
            return schema.model_validate(json.loads(prefix + closing))
        except (ValueError, ValidationError):
            continue
    return None
