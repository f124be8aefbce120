"""The engine-neutral Lucene query model.

Searchers refine queries by editing this model (extend, emphasize, exclude) and each backend
renders it to its own dialect, so nothing ever splices query strings: the public LevelRAG code
did, and escaped its own boosts into garbage. Everything is frozen so a query can be shared by
the refinement tree's nodes, hashed and deduplicated without defensive copies.

Text inside ``Term`` and ``Phrase`` is stored *unescaped* (what the user meant); escaping belongs
to the renderers, because tantivy and Elasticsearch disagree on what needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

#: Clause cap per query (nested clauses included): a runaway LLM can write thousands of words,
#: and both engines get slow or refuse (ES ``max_clause_count``) long before that.
MAX_CLAUSES = 64

#: Nesting cap for parentheses; deeper groups are flattened by the parser.
MAX_DEPTH = 8

#: Boosts are clamped into this range: tantivy's grammar has no exponent notation, a zero boost
#: silently zeroes scores, and Elasticsearch rejects negative boosts.
MIN_BOOST = 0.001
MAX_BOOST = 1000.0

#: Phrase slop cap: beyond a few dozen positions a "phrase" is just a conjunction.
MAX_SLOP = 50


class Occur(StrEnum):
    """How a clause takes part in the match, as in Lucene's ``BooleanClause.Occur``."""

    SHOULD = "should"
    MUST = "must"
    MUST_NOT = "must_not"


@dataclass(frozen=True)
class Term:
    """One word as written (it may still contain punctuation the analyzer will split on)."""

    text: str


@dataclass(frozen=True)
class Phrase:
    """Quoted words that must appear in order; ``slop`` is Lucene's ``"a b"~N`` proximity."""

    text: str
    slop: int = 0


@dataclass(frozen=True)
class Group:
    """A parenthesised sub-query, matched as a whole (``+(a b)`` requires a or b)."""

    query: LuceneQuery


Node = Term | Phrase | Group


@dataclass(frozen=True)
class Clause:
    """A node with its occurrence, optional field and optional boost (``None`` = 1, unboosted)."""

    node: Node
    occur: Occur = Occur.SHOULD
    field: str | None = None
    boost: float | None = None


@dataclass(frozen=True)
class LuceneQuery:
    """A boolean query: Lucene's default operator OR, so plain clauses are SHOULD."""

    clauses: tuple[Clause, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.clauses)


@dataclass(frozen=True)
class ParsedQuery:
    """A repaired query plus human-readable notes of each repair, for the searcher's trace."""

    query: LuceneQuery
    repairs: list[str] = field(default_factory=list, compare=False, hash=False)


def searchable(text: str) -> bool:
    """True when an analyzer keeps something of ``text``: both engines' tokenizers split on
    non-alphanumerics, and Lucene drops a clause whose text analyzes to nothing."""
    return any(ch.isalnum() for ch in text)


def effective(query: LuceneQuery, keep: Callable[[str], bool] = searchable) -> LuceneQuery | None:
    """The query as Lucene would execute it, or None when it matches nothing.

    Makes Lucene's quiet rules explicit so renderers can hand engines that disagree (tantivy
    refuses exclusion-only queries and mis-reads negative groups; Elasticsearch turns them into
    match-all-except) the same meaning: leaves that analyze to nothing vanish; a group that can
    match nothing vanishes when optional or excluded and empties the whole query when required;
    a query of exclusions alone matches nothing. ``keep`` decides which leaf texts survive
    analysis, so an engine-specific renderer can apply its tokenizer's limits.
    """
    kept: list[Clause] = []
    for clause in query.clauses:
        node = clause.node
        if isinstance(node, Group):
            inner = effective(node.query, keep)
            if inner is None:
                if clause.occur is Occur.MUST:
                    return None
                continue
            kept.append(replace(clause, node=Group(inner)))
        elif keep(node.text):
            kept.append(clause)
    if all(clause.occur is Occur.MUST_NOT for clause in kept):
        return None
    return LuceneQuery(tuple(kept))


def has_positive(query: LuceneQuery) -> bool:
    """True when some SHOULD/MUST clause can match: a query of exclusions alone matches nothing
    in Lucene (and tantivy refuses it), so there is nothing to rank."""
    for clause in query.clauses:
        if clause.occur is Occur.MUST_NOT:
            continue
        if not isinstance(clause.node, Group) or has_positive(clause.node.query):
            return True
    return False


def is_empty(query: LuceneQuery) -> bool:
    """True when the query can retrieve nothing (no clauses, exclusions only, a required group
    that cannot match, see ``effective``). Backends check this first and return no hits instead
    of sending the engine a query it refuses or reads as "everything except"."""
    return effective(query) is None


def count_clauses(query: LuceneQuery) -> int:
    """Leaf clauses, nested ones included: the unit that ``MAX_CLAUSES`` caps."""
    total = 0
    for clause in query.clauses:
        if isinstance(clause.node, Group):
            total += count_clauses(clause.node.query)
        else:
            total += 1
    return total
