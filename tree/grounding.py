"""Names and numbers a summary states that its children do not: a lexical check of grounding.

A small summarizer given a cluster of unrelated passages blends them: one HotpotQA summary
called R.E.M. "a New Zealand rock band formed in 1982 by lead singer Paul McCartney and drummer
John Lennon". A tree searcher that returns such a node hands the reader a confident falsehood,
so how often it happens is worth knowing for every tree. An LLM judge would cost a call a
summary; this check costs none and catches one common failure, a name or number that none of
the children has. It cannot see a wrong relation between names that are all present (the blend
of two true facts), so it is a floor under the rate of unfaithful summaries, not a measure of it.
Nor is every term it flags unfaithful: "Dutch" for a bank "based in the Netherlands" says the
same in other words. It reads words, not meanings.

A term is a word that starts with a capital letter inside a sentence, or a number; it is
supported when its lower-cased form occurs as a word anywhere in the children.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[\w'’-]+")
_TERM = re.compile(r"\b(?:[A-Z][\w'’-]*|\d[\d,.]*\d|\d)\b")
# capitalised only because they open a sentence, or too common to name anything
_COMMON = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "it", "its", "he", "she", "they",
        "his", "her", "their", "we", "our", "i", "in", "on", "at", "of", "for", "from", "with",
        "by", "to", "as", "and", "but", "or", "both", "also", "after", "before", "during",
        "while", "when", "where", "which", "who", "whose", "there", "here", "however",
        "although", "since", "despite", "other", "another", "each", "some", "many", "most",
        "one", "two", "three", "all", "several", "various", "additionally", "furthermore",
        "overall", "meanwhile", "later", "today", "known", "born", "located", "based",
    }
)  # fmt: skip


_POSSESSIVE = re.compile(r"['’]s$")


def _key(term: str) -> str:
    """Lower-cased, without a possessive ("Jovi's" is "jovi") or a number's commas."""
    return _POSSESSIVE.sub("", term.lower().replace(",", "").rstrip(".")).strip("'’-")


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\n\"'“”‘’([")
    if not before:
        return True
    if before[-1] != "." or not re.search(r"(?:^|\s)[A-Z]\.$", before):
        return before[-1] in ".!?:;"
    return False  # "J. R. R. Tolkien": a stop after an initial ends no sentence


def terms(text: str) -> set[str]:
    """The name-like words and numbers of ``text``, lower-cased (numbers without commas). A
    capitalised word that opens a sentence is left out: "About", "Together" and "Famous" are
    capitalised there for grammar, and a name there usually has a second, capitalised word."""
    found = set()
    for match in _TERM.finditer(text):
        term = match.group()
        if term[0].isalpha() and _opens_sentence(text, match.start()):
            continue
        key = _key(term)
        # single letters are initials or the pieces of "R.E.M.", and a single digit is as often
        # written out as a word ("five") in the passages: neither names anything on its own
        if len(key) > 1 and key not in _COMMON:
            found.add(key)
    return found


def unsupported_terms(summary: str, sources: Iterable[str]) -> list[str]:
    """The summary's terms that occur in none of ``sources``, sorted."""
    supported = {_key(w) for source in sources for w in _WORD.findall(source)}
    supported |= {_key(t) for source in sources for t in _TERM.findall(source)}  # "1,000"
    return sorted(terms(summary) - supported)


@dataclass(frozen=True)
class Grounding:
    summaries: int
    with_unsupported: int  # summaries stating at least one term their children lack
    terms: int  # terms in all summaries
    unsupported: int  # of which unsupported

    def __add__(self, other: Grounding) -> Grounding:
        """Counts add up: a tree's grounding is the sum of its layers'."""
        return Grounding(
            self.summaries + other.summaries,
            self.with_unsupported + other.with_unsupported,
            self.terms + other.terms,
            self.unsupported + other.unsupported,
        )

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "summaries": self.summaries,
            "with_unsupported_terms": self.with_unsupported,
            "share_with_unsupported_terms": (
                round(self.with_unsupported / self.summaries, 4) if self.summaries else None
            ),
            "unsupported_share_of_terms": (
                round(self.unsupported / self.terms, 4) if self.terms else None
            ),
        }


def grounding(pairs: Sequence[tuple[str, Sequence[str]]]) -> Grounding:
    """Over (summary, children texts) pairs."""
    with_unsupported = term_count = unsupported = 0
    for summary, children in pairs:
        missing = unsupported_terms(summary, children)
        with_unsupported += bool(missing)
        term_count += len(terms(summary))
        unsupported += len(missing)
    return Grounding(len(pairs), with_unsupported, term_count, unsupported)
