"""Dates and numbers as a text states them: "December 3, 1937", "3 Dec 1937", "1937",
"24.15 million". Pure functions of text; the comparison of two findings
(``agent.checks.comparison``), the chain's date rules (``agent.checks.chains``) and the claims
of a sentence (``agent.rules.claims``) read them."""

from __future__ import annotations

import re

from agent.rules.question import Unit
from searchers.text import normalize_answer_folded

# a month's name or abbreviation (folded) -> its number
MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12,
    "dec": 12,
}  # fmt: skip
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")
_DAY = re.compile(r"\b([0-3]?\d)\b")
_NUMBER = re.compile(r"^\s*(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\b")


def parse_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) from "December 3, 1937", "3 December 1937", "1937" or "Dec 1937";
    month and day are 0 when the text does not say. None if there is no year."""
    years = _YEAR.findall(text)
    if len(years) != 1:  # a range or two dates: not one value
        return None
    year = int(years[0])
    words = normalize_answer_folded(text).split()
    month = next((MONTHS[w] for w in words if w in MONTHS), 0)
    day = 0
    if month:
        rest = _YEAR.sub(" ", text)
        days = [int(d) for d in _DAY.findall(rest) if 1 <= int(d) <= 31]
        day = days[0] if len(days) == 1 else 0
    return (year, month, day)


_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


def parse_number(text: str) -> float | None:
    """ "24.15 million" -> 24150000.0: a magnitude word scales the number (HotpotQA's "24
    million" against "105,000" was read as 24 before)."""
    match = _NUMBER.match(text)
    if not match:
        return None
    value = float(match.group(1).replace(",", ""))
    rest = normalize_answer_folded(text[match.end() :]).split()
    if rest and rest[0] in _SCALE:
        value *= _SCALE[rest[0]]
    return value


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def in_asked_unit(short: str, unit: Unit | None) -> str:
    """A date or year said in the unit the question asks (``Question.unit``): "What century
    did X live in?" with the finding "1710" is "18th century", "what decade" gives "1710s".
    Measured on MuSiQue, the chain's finding was the year and the reader copied it; the century
    is arithmetic, not reading. Anything else comes back unchanged."""
    if unit is None or "centur" in short.lower() or short.endswith("s"):
        return short
    date = parse_date(short)
    if date is None or date[0] <= 0:
        return short
    year = date[0]
    if unit == "century":
        return f"{_ordinal((year - 1) // 100 + 1)} century"
    return f"{year // 10 * 10}s"
