"""The names and numbers a text states. A sentence's claims, as the citation check reads them:
its names (runs of capitalised words, joined across "of", "de", ...), its numbers and the months
of its dates, and whether a text holds each one (``TextIndex``). A query's names (``anchors``),
as the support of a finding reads them, and whether a passage's words name one (``named``).
Pure functions of text; the answer's checks (``agent.checks.citations``, ``evidence``) apply
them to passages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.rules.names import NAME_CONNECTORS
from agent.rules.values import MONTHS
from searchers.text import STOPWORDS, WORD, fold, stem

_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
# Capitalised only because they open a sentence; STOPWORDS already covers "The", "It", "He".
_STARTERS = frozenset(
    """according although another additionally afterwards already although before both
    currently despite during either every formed founded furthermore hence however initially
    later like meanwhile moreover neither nevertheless originally previously since several
    therefore thus today together unlike while yes no instead""".split()
)

TermKind = Literal["name", "number", "month"]


@dataclass(frozen=True)
class Term:
    """One checkable claim of a sentence: a name, a number or a month next to a number."""

    kind: TermKind
    key: str  # the name's phrase of word keys, the number without commas, the month's number
    words: tuple[str, ...] = ()  # a name's content words; all must occur in a passage


def _key(word: str) -> str:
    """The form words are compared in: folded, possessive and plural stripped."""
    folded = fold(word).replace("’", "'")
    return stem(re.sub(r"'s$", "", folded))


def _number_key(number: str) -> str:
    return number.replace(",", "")


@dataclass(frozen=True)
class TextIndex:
    """What a passage (or the question) contains, in the forms terms are matched in."""

    words: frozenset[str]
    joined: str
    numbers: frozenset[str]
    months: frozenset[str]

    @classmethod
    def of(cls, text: str) -> TextIndex:
        keys = [_key(w) for w in WORD.findall(text)]
        months = {str(MONTHS[fold(w)]) for w in WORD.findall(text) if fold(w) in MONTHS}
        return cls(
            words=frozenset(keys),
            joined=f" {' '.join(keys)} ",
            numbers=frozenset(_number_key(n) for n in _NUMBER.findall(text)),
            months=frozenset(months),
        )

    def has(self, term: Term) -> bool:
        if term.kind == "number":
            return term.key in self.numbers
        if term.kind == "month":
            return term.key in self.months
        return all(w in self.words for w in term.words) or f" {term.key} " in self.joined


def _is_capitalised(token: str) -> bool:
    return token[0].isupper()


def _joinable(text: str, prev: re.Match[str], token: re.Match[str]) -> bool:
    """May ``token`` continue the name ``prev`` ends? Only across a space, a hyphen, or the
    period after an initial ("J. R. R. Tolkien")."""
    gap = text[prev.end() : token.start()]
    if re.fullmatch(r"\s+|-", gap):
        return True
    return len(prev.group()) == 1 and re.fullmatch(r"\.\s*", gap) is not None


def _date_months(tokens: Sequence[re.Match[str]]) -> set[int]:
    """The token positions of month names written as part of a date ("March 1901", "5 May")."""
    dates: set[int] = set()
    for i, tok in enumerate(tokens):
        if fold(tok.group()) in MONTHS and _is_capitalised(tok.group()):
            neighbours = [tokens[j] for j in (i - 1, i + 1) if 0 <= j < len(tokens)]
            if any(n.group()[0].isdigit() for n in neighbours):
                dates.add(i)
    return dates


def _name_runs(body: str, tokens: Sequence[re.Match[str]], dates: set[int]) -> list[list[int]]:
    """Runs of capitalised words (token positions), joined across at most two connectors
    ("Bank of England")."""
    runs: list[list[int]] = []
    current: list[int] = []
    pending: list[int] = []
    for i, tok in enumerate(tokens):
        word = tok.group()
        joinable = bool(current) and _joinable(body, tokens[i - 1], tok)
        if _is_capitalised(word) and i not in dates:
            if joinable:
                current += [*pending, i]
            else:
                if current:
                    runs.append(current)
                current = [i]
            pending = []
        elif joinable and fold(word) in NAME_CONNECTORS and len(pending) < 2:
            pending.append(i)
        else:
            if current:
                runs.append(current)
            current, pending = [], []
    if current:
        runs.append(current)
    return runs


def _run_name(
    run: list[int], tokens: Sequence[re.Match[str]], lowercase_words: frozenset[str]
) -> Term | None:
    """A run as a name to look up, or None: stopwords trimmed off both ends, not the
    sentence's first word capitalised only for being first, not initials alone."""
    words = [tokens[i].group() for i in run]
    while words and fold(words[0]) in STOPWORDS | _STARTERS:
        words.pop(0)
        run = run[1:]
    while words and fold(words[-1]) in STOPWORDS:
        words.pop()
    if not words:
        return None
    if run[0] == 0 and len(words) == 1 and fold(words[0]) in lowercase_words:
        return None  # capitalised only as the sentence's first word: "Formed in 2008, ..."
    keys = [_key(w) for w in words]
    content = [_key(w) for w in words if fold(w) not in STOPWORDS | NAME_CONNECTORS]
    # Initials and dotted acronyms ("J. R. R.", "U.S.") are written too many ways to check;
    # a name made only of them is not a claim we can look up.
    significant = tuple(w for w in content if len(w) > 1)
    return Term("name", " ".join(keys), significant) if significant else None


def claims(body: str, lowercase_words: frozenset[str]) -> list[Term]:
    """The names and numbers a sentence states; these are what its citations must back."""
    tokens = list(WORD.finditer(body))
    dates = _date_months(tokens)
    names = (_run_name(run, tokens, lowercase_words) for run in _name_runs(body, tokens, dates))
    months = (Term("month", str(MONTHS[fold(tokens[i].group())])) for i in sorted(dates))
    numbers = (Term("number", _number_key(number)) for number in _NUMBER.findall(body))
    terms: dict[tuple[str, str], Term] = {}
    for term in (*names, *months, *numbers):
        if term is not None:
            terms.setdefault((term.kind, term.key), term)
    return list(terms.values())


_NAME_RUN = re.compile(r"\b(?:[A-Z0-9][\w'’.-]*\s+){0,5}[A-Z0-9][\w'’.-]*")
_QUOTED = re.compile(r"[\"'‘“`]([^\"'’”`]{3,80})[\"'’”`]")


def anchors(query: str) -> list[frozenset[str]]:
    """The query's names and numbers, each as the set of its words (folded, stemmed): what a
    passage answering it is about. "city of Tinted Windows" -> [{"tinted", "window"}]."""
    found: list[frozenset[str]] = []
    for run in [*_QUOTED.findall(query), *_NAME_RUN.findall(query)]:
        words = frozenset(stem(fold(w)) for w in WORD.findall(run) if fold(w) not in STOPWORDS)
        if words and words not in found:
            found.append(words)
    return found


def named(name: frozenset[str], words: set[str]) -> bool:
    """All of a name's words occur, or all but one of a name of three or more: the planner
    writes titles into names ("Representative Thomas Tucker") that the passage spells
    otherwise ("Thomas Tudor Tucker ... a U.S. congressman"); measured on MuSiQue, such a
    finding was thrown away and the chain broke at its first hop."""
    present = len(name & words)
    return present == len(name) or (len(name) >= 3 and present >= len(name) - 1)
