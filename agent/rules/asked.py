"""What a question asks for: a date, a place, a date in a unit (a century, a decade), and which
way a comparison goes. Each rule is the one a step used to apply to the question's words where
it needed it; they are read once into the ``Question`` (``agent.rules.question``).

Two rules read "when" differently and both are kept as they were measured: ``asks_when`` (the
answer checks: may a date end a chain?) matches a time phrase anywhere in the normalised
question, "what decade" and "how long ago" included; ``asks_where`` (the planner's query
cleaning: a copied "birth date of #1" asks for the place instead) is off whenever the question
also says "when", "what year", "which year" or "what date".
"""

from __future__ import annotations

import re
from typing import Literal

from searchers.text import normalize_answer_folded

Unit = Literal["century", "decade"]
Way = Literal["min", "max"]  # "min" picks the smaller value (the earlier date), "max" the larger
Measure = Literal["date", "amount"]
Direction = tuple[Way, Measure]

# --- a date ---------------------------------------------------------------------------------

_WHEN = (
    "when",
    "what year",
    "which year",
    "what date",
    "which date",
    "what day",
    "what decade",
    "what century",
    "how long ago",
)


def asks_when(question: str) -> bool:
    """Does the question ask for a time ("when", "what year", "what date", "how long ago")?
    A chain whose last finding is a date answers only such a question (``checks.chains``):
    measured on HotpotQA v3, following "start date of #1" for "What league ... started in
    2013?" turned a right answer wrong (9db67f7)."""
    text = f" {normalize_answer_folded(question)} "
    return any(f" {w} " in text for w in _WHEN)


# --- a place --------------------------------------------------------------------------------

# asks for a place: "Where was ...", "What is the place of birth of ...", not "the city where"
_WHERE = re.compile(r"^\W*where\b|\bplace of\b|\bbirthplace\b", re.IGNORECASE)
_WHEN_WORDS = re.compile(r"\b(when|what year|which year|what date)\b", re.IGNORECASE)


def asks_where(question: str) -> bool:
    """Does the question ask for a place ("Where was ...", "the place of birth of ...",
    "birthplace") and not also for a time? The planner's query cleaning then turns a hop's
    copied "birth date of #1" into "birth place of #1" (``planner.queries.on_topic``): found on
    2Wiki v3 questions 51-100, where 10 of 22 compositional questions that asked where were
    planned with the prompt's "birth year of #1" (3db249c; measured since only on the questions
    it was found on, ``evals/results/HISTORY.md``)."""
    return bool(_WHERE.search(question)) and not _WHEN_WORDS.search(question)


# --- a date in a unit -----------------------------------------------------------------------

_CENTURY = re.compile(r"\b(?:what|which)\s+century\b", re.IGNORECASE)
_DECADE = re.compile(r"\b(?:what|which)\s+decade\b", re.IGNORECASE)


def asked_unit(question: str) -> Unit | None:
    """The unit a date is asked in: "What century did X live in?" asks a century, "which
    decade" a decade (a century when it says both), None otherwise. The answer checks say a year
    in it (``values.in_asked_unit``: 1710 -> "18th century"); measured on MuSiQue, the
    chain's finding was the year and the reader copied it (18634b4)."""
    if _CENTURY.search(question):
        return "century"
    if _DECADE.search(question):
        return "decade"
    return None


# --- which way a comparison goes --------------------------------------------------------------

# Words that say which way the question compares: "min" picks the smaller value (the earlier
# date), "max" the larger. Phrases are matched on the normalised question, longest first.
_DIRECTIONS: tuple[tuple[str, Way], ...] = (
    ("more recently", "max"),
    ("most recently", "max"),
    ("more recent", "max"),
    ("most recent", "max"),
    ("first", "min"),
    ("earlier", "min"),
    ("earliest", "min"),
    ("older", "min"),
    ("oldest", "min"),
    ("sooner", "min"),
    ("before", "min"),
    ("later", "max"),
    ("latest", "max"),
    ("last", "max"),
    ("younger", "max"),
    ("youngest", "max"),
    ("newer", "max"),
    ("newest", "max"),
    ("after", "max"),
)
_AMOUNTS: tuple[tuple[str, Way], ...] = (
    ("more", "max"),
    ("most", "max"),
    ("larger", "max"),
    ("largest", "max"),
    ("bigger", "max"),
    ("biggest", "max"),
    ("higher", "max"),
    ("highest", "max"),
    ("taller", "max"),
    ("tallest", "max"),
    ("longer", "max"),
    ("longest", "max"),
    ("fewer", "min"),
    ("fewest", "min"),
    ("less", "min"),
    ("least", "min"),
    ("smaller", "min"),
    ("smallest", "min"),
    ("shorter", "min"),
    ("shortest", "min"),
    ("lower", "min"),
    ("lowest", "min"),
)
# Questions whose comparison is not one value against another ("who lived longer" compares two
# lifespans, a difference of two dates each).
_NOT_A_VALUE = ("lived longer", "live longer", "lived shorter", "longer life", "age at death")


def direction(question: str) -> Direction | None:
    """("min"|"max", "date"|"amount"), or None when the question does not say which way: a
    time word ("first", "later", "younger") compares dates, an amount word ("more", "taller",
    "fewer") numbers. The answer checks compute an "A or B?" comparison with it
    (``checks.comparison.resolve``): measured on HotpotQA v3, the reader answered "Robert
    Jordan" to "Who was born first?" with both birth dates found and supported (a56f963)."""
    text = f" {normalize_answer_folded(question)} "
    if any(f" {phrase} " in text for phrase in _NOT_A_VALUE):
        return None
    for phrase, way in _DIRECTIONS:
        if f" {phrase} " in text:
            return way, "date"
    for phrase, way in _AMOUNTS:
        if f" {phrase} " in text:
            return way, "amount"
    return None
