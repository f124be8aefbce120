"""What counts as a question hoptree will work on, and the question as the rules read it.

``clean_question`` is checked once, at every entry point (the CLI, HTTP, MCP, the Studio graph,
the Python API). ``Question.read`` then reads the cleaned text once with every rule of this room;
the planner carries the result in its state as JSON (``Question.to_json``, the state's
``parsed``) and every step reads its fields (``Question.from_json``), never the words again.
Rules applied to other text (a planned query, a finding, a passage) still take strings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from typing_extensions import TypedDict

from agent.rules.alternatives import asks_yes_no, choices
from agent.rules.asked import Direction, Unit, asked_unit, asks_when, asks_where, direction
from agent.rules.relations import relation_plan
from agent.rules.shape import SHAPES, Shape, question_shape

# the rules' own types, read by every step through this module: it alone imports the parsers
__all__ = [
    "MAX_QUESTION_CHARS",
    "AskedFor",
    "Direction",
    "Question",
    "QuestionError",
    "QuestionRecord",
    "Shape",
    "Unit",
    "clean_question",
]

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


# What a question asks for, as far as a rule of this room decides it (``Question.asks_for``).
AskedFor = Literal["date", "place", "person", "unknown"]
_UNITS: tuple[Unit, ...] = ("century", "decade")
_WAYS = ("min", "max")
_MEASURES = ("date", "amount")


class QuestionRecord(TypedDict):
    """A ``Question`` as JSON, as the planner's checkpointed state holds it."""

    text: str
    shape: str
    choices: list[str]
    yes_no: bool
    asks_when: bool
    asks_where: bool
    unit: str | None
    direction: list[str] | None
    relation_plan: list[str] | None


@dataclass(frozen=True)
class Question:
    """One question, read once by the rules of ``agent.rules`` (``Question.read``).

    - ``text``: the question as asked (cleaned by ``clean_question`` at the entry points).
    - ``shape``: the plan it needs (``shape.question_shape``): which worked plans the decompose
      prompt shows and how the router groups it.
    - ``choices``: the alternatives it offers ("A or B?", ``alternatives.choices``), () if none.
    - ``yes_no``: it opens like a yes/no question and offers no alternatives
      (``alternatives.asks_yes_no``).
    - ``asks_when``: it asks for a time (``asked.asks_when``): a date may end its chain.
    - ``asks_where``: it asks for a place and not a time (``asked.asks_where``): a planned hop's
      copied "birth date of #1" asks for the place.
    - ``unit``: "century" or "decade" when a date is asked in that unit (``asked.asked_unit``).
    - ``direction``: which way a comparison goes, ("min"|"max", "date"|"amount")
      (``asked.direction``), None when it does not say.
    - ``relation_plan``: the queries a family relation with one reading defines
      (``relations.relation_plan``), None for any other question.
    """

    text: str
    shape: Shape
    choices: tuple[str, ...]
    yes_no: bool
    asks_when: bool
    asks_where: bool
    unit: Unit | None
    direction: Direction | None
    relation_plan: tuple[str, ...] | None

    @classmethod
    def read(cls, text: str) -> Question:
        """The question ``text`` as every rule reads it: the one place its words are parsed."""
        plan = relation_plan(text)
        return cls(
            text=text,
            shape=question_shape(text),
            choices=tuple(choices(text)),
            yes_no=asks_yes_no(text),
            asks_when=asks_when(text),
            asks_where=asks_where(text),
            unit=asked_unit(text),
            direction=direction(text),
            relation_plan=tuple(plan) if plan is not None else None,
        )

    @property
    def asks_for(self) -> AskedFor:
        """What it asks for, from the rules that decide it: a ``date`` when it asks when, a
        ``place`` when it asks where (and not when), a ``person`` when a family relation
        defines its plan ("Who is the mother of X?"), else ``unknown``. There is no ``number``:
        no rule reads "how many" today. Yes/no and "A or B?" are ``yes_no`` and ``choices``."""
        if self.asks_when:
            return "date"
        if self.asks_where:
            return "place"
        if self.relation_plan is not None:
            return "person"
        return "unknown"

    def to_json(self) -> QuestionRecord:
        """The record the planner's state keeps (JSON: the state is checkpointed to SQLite)."""
        return QuestionRecord(
            text=self.text,
            shape=self.shape,
            choices=list(self.choices),
            yes_no=self.yes_no,
            asks_when=self.asks_when,
            asks_where=self.asks_where,
            unit=self.unit,
            direction=list(self.direction) if self.direction is not None else None,
            relation_plan=list(self.relation_plan) if self.relation_plan is not None else None,
        )

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> Question:
        """The question a record holds, as ``to_json`` wrote it: nothing is read again. A record
        whose shape, unit or direction is none the rules write is refused (``ValueError``)."""
        plan = record["relation_plan"]
        return cls(
            text=str(record["text"]),
            shape=_one_of(record["shape"], SHAPES, "shape"),
            choices=tuple(str(c) for c in record["choices"]),
            yes_no=bool(record["yes_no"]),
            asks_when=bool(record["asks_when"]),
            asks_where=bool(record["asks_where"]),
            unit=None if record["unit"] is None else _one_of(record["unit"], _UNITS, "unit"),
            direction=_direction(record["direction"]),
            relation_plan=tuple(str(q) for q in plan) if plan is not None else None,
        )


def _one_of(value: Any, allowed: Sequence[str], what: str) -> Any:
    if value not in allowed:
        raise ValueError(f"a question record's {what} {value!r} is not one of {list(allowed)}")
    return value


def _direction(value: Sequence[str] | None) -> Direction | None:
    if value is None:
        return None
    way, measure = value
    return cast(Direction, (_one_of(way, _WAYS, "way"), _one_of(measure, _MEASURES, "measure")))
