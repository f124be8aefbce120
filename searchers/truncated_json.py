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


def _cut_points(text: str) -> list[tuple[int, str | None]]:
    """Ends worth closing at, best first, each with what closes the text there into a JSON
    document (None where nothing could: no open bracket, or after a stray closer). One pass
    reads both, since the closure at a cut is the scanner's state there.

    If the text stops inside a string: the sentence ends in that string (a passage loses only
    its unfinished sentence), then the ends of whole strings, objects and arrays (a list loses
    only its cut item), then the raw end (a passage with no sentence end yet). Otherwise the raw
    end comes first."""
    stack: list[str] = []
    in_string = escaped = broken = False

    def closing() -> str | None:
        if broken or not stack:
            return None
        return ('"' if in_string else "") + "".join(reversed(stack))

    whole: list[tuple[int, str | None]] = []
    open_sentence_ends: list[tuple[int, str | None]] = []
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                whole.append((i + 1, closing()))
            elif ch in _SENTENCE_ENDS and (i + 1 == len(text) or text[i + 1] == " "):
                open_sentence_ends.append((i + 1, closing()))
        elif ch == '"':
            in_string = True
            open_sentence_ends = []  # only the string the text stops in counts
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]":
            broken = broken or not stack or stack.pop() != ch
            whole.append((i + 1, closing()))
    # a dangling backslash escapes nothing: the raw end is before it, in the same string
    raw_end = (len(text) - 1 if escaped else len(text), closing())
    structure = sorted(whole, reverse=True)
    if in_string:
        return sorted(open_sentence_ends, reverse=True) + structure + [raw_end]
    return [raw_end, *structure]


def salvage(text: str, schema: type[T], *, max_cuts: int = MAX_CUTS) -> T | None:
    """The longest prefix of a cut JSON reply that, closed, validates as ``schema``; else None."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    for cut, closing in _cut_points(text)[:max_cuts]:
        if closing is None:
            continue
        # whitespace and commas change no scanner state: the closure at the cut still fits
        prefix = text[:cut].rstrip().rstrip(",").rstrip()
        try:
            return schema.model_validate(json.loads(prefix + closing))
        except (ValueError, ValidationError):
            continue
    return None
