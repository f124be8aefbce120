"""The engine-neutral Lucene query model.

Searchers refine queries by editing this model (extend, emphasize, exclude) and each backend
renders it to its own dialect, so nothing ever splices query strings: the public LevelRAG code
did, and escaped its own boosts into garbage. Everything is frozen so a query can be shared by
the refinement tree's nodes, hashed and deduplicated without defensive copies.

Text inside ``Term`` and ``Phrase`` is stored *unescaped* (what the user meant); escaping belongs
to the renderers, because tantivy and Elasticsearch disagree on what needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

#: Clause cap per query (nested clauses included): a runaway LLM can write thousands of words,
#: and both engines get slow or refuse (ES ``max_clause_count``) long before that.
MAX_CLAUSES = 64

#: Nesting cap for parentheses; deeper groups are flattened by the parser.
MAX_DEPTH = 8


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
    """True when the query can retrieve nothing: no clauses, or exclusions only. Backends check
    this first and return no hits instead of sending the engine a query it refuses."""
    return not has_positive(query)


def count_clauses(query: LuceneQuery) -> int:
    """Leaf clauses, nested ones included: the unit that ``MAX_CLAUSES`` caps."""
    total = 0
    for clause in query.clauses:
        if isinstance(clause.node, Group):
            total += count_clauses(clause.node.query)
        else:
            total += 1
    return total
