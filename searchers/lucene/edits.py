"""LevelRAG's three feedback operations on the query model, plus a key for deduplication.

The refinement loop applies these to whatever the LLM proposes, so each is total: a keyword with
nothing searchable in it, or a query already at ``MAX_CLAUSES``, returns the query unchanged.
Where a keyword already occurs, the latest operation wins: ``extend``/``emphasize`` of an
excluded keyword lift its exclusion, ``exclude`` of a wanted keyword removes it from the wanted
clauses. Matching is case-insensitive on whitespace-normalized text and ignores fields, so
``title:Solar`` counts as an occurrence of "solar".
"""

from __future__ import annotations

import math

from searchers.lucene.model import (
    MAX_BOOST,
    MAX_CLAUSES,
    Clause,
    Group,
    LuceneQuery,
    Node,
    Occur,
    Phrase,
    Term,
    count_clauses,
    searchable,
)
from searchers.lucene.render import format_boost, query_string_leaf


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def keyword_node(keyword: str) -> Node | None:
    """The node for an LLM-proposed keyword: one word is a term, several a phrase (LevelRAG
    quotes them); surrounding quotes are the LLM's, not part of the keyword."""
    text = " ".join(keyword.strip().strip('"').split())
    if not searchable(text):
        return None
    return Phrase(text) if " " in text else Term(text)


def _same(node: Node, text: str) -> bool:
    return not isinstance(node, Group) and _normal(node.text) == _normal(text)


def _without(query: LuceneQuery, text: str, occurs: frozenset[Occur]) -> LuceneQuery:
    kept = tuple(c for c in query.clauses if not (c.occur in occurs and _same(c.node, text)))
    return LuceneQuery(kept)


_WANTED = frozenset({Occur.SHOULD, Occur.MUST})
_EXCLUDED = frozenset({Occur.MUST_NOT})


def _has(query: LuceneQuery, text: str, occurs: frozenset[Occur]) -> bool:
    return any(c.occur in occurs and _same(c.node, text) for c in query.clauses)


def extend(query: LuceneQuery, keyword: str) -> LuceneQuery:
    """Add ``keyword`` as a quoted SHOULD clause (LevelRAG's "extend"): it widens what can match
    and ranks documents holding it higher, without requiring it. No-op when already wanted."""
    node = keyword_node(keyword)
    if node is None or _has(query, node.text, _WANTED):
        return query
    base = _without(query, node.text, _EXCLUDED)
    if count_clauses(base) >= MAX_CLAUSES:
        return query
    return LuceneQuery((*base.clauses, Clause(node)))


def _boosted(clause: Clause, factor: float) -> Clause:
    boost = min((clause.boost or 1.0) * factor, MAX_BOOST)
    return Clause(clause.node, clause.occur, clause.field, boost)


def _emphasized(query: LuceneQuery, text: str, factor: float) -> tuple[LuceneQuery, bool]:
    clauses: list[Clause] = []
    found = False
    for clause in query.clauses:
        if clause.occur is Occur.MUST_NOT:
            clauses.append(clause)
        elif isinstance(clause.node, Group):
            inner, hit = _emphasized(clause.node.query, text, factor)
            clauses.append(Clause(Group(inner), clause.occur, clause.field, clause.boost))
            found = found or hit
        elif _same(clause.node, text):
            clauses.append(_boosted(clause, factor))
            found = True
        else:
            clauses.append(clause)
    return LuceneQuery(tuple(clauses)), found


def emphasize(query: LuceneQuery, keyword: str, factor: float = 2.0) -> LuceneQuery:
    """Boost ``keyword`` with ``^`` (LevelRAG's "emphasize").

    Every wanted occurrence (nested groups included) has its boost *multiplied* by ``factor``
    (an unboosted clause counts as 1, so ``a`` -> ``a^2`` -> ``a^4``), capped at MAX_BOOST:
    repeated emphasis keeps growing geometrically, as repeated LLM advice means. A keyword not
    present is added as a SHOULD clause boosted by ``factor``. ``factor`` must be finite and > 0.
    """
    if not math.isfinite(factor) or factor <= 0:
        raise ValueError(f"emphasize factor must be a positive number, not {factor!r}")
    node = keyword_node(keyword)
    if node is None:
        return query
    boosted, found = _emphasized(_without(query, node.text, _EXCLUDED), node.text, factor)
    if found:
        return boosted
    if count_clauses(boosted) >= MAX_CLAUSES:
        return query
    return LuceneQuery((*boosted.clauses, Clause(node, boost=min(factor, MAX_BOOST))))


def exclude(query: LuceneQuery, keyword: str) -> LuceneQuery:
    """Add ``keyword`` as a MUST_NOT clause (LevelRAG's "filter"), removing it from the wanted
    top-level clauses: no document holding it can be returned. Excluding the last wanted clause
    leaves an empty query (``is_empty``), which retrieves nothing rather than everything."""
    node = keyword_node(keyword)
    if node is None or _has(query, node.text, _EXCLUDED):
        return query
    base = _without(query, node.text, _WANTED)
    if count_clauses(base) >= MAX_CLAUSES:
        return query
    return LuceneQuery((*base.clauses, Clause(node, Occur.MUST_NOT)))


def _node_key(node: Node) -> str:
    if isinstance(node, Group):
        return f"({_query_key(node.query)})"
    text = _normal(node.text)
    if isinstance(node, Phrase) and (" " in text or node.slop):
        slop = f"~{node.slop}" if node.slop else ""
        return query_string_leaf(Phrase(text)) + slop
    return query_string_leaf(Term(text))


def _clause_key(clause: Clause) -> str:
    node = clause.node
    if isinstance(node, Group) and len(node.query.clauses) == 1:
        only = node.query.clauses[0]
        if only.occur is not Occur.MUST_NOT and not (clause.boost and only.boost):
            boost = clause.boost or only.boost
            node_field = only.field or clause.field
            return _clause_key(Clause(only.node, clause.occur, node_field, boost))
    prefix = {Occur.SHOULD: "", Occur.MUST: "+", Occur.MUST_NOT: "-"}[clause.occur]
    field = f"{clause.field}:" if clause.field else ""
    boost = ""
    if clause.boost is not None and clause.occur is not Occur.MUST_NOT:
        formatted = format_boost(clause.boost)
        boost = "" if formatted == "1" else f"^{formatted}"
    return f"{prefix}{field}{_node_key(node)}{boost}"


def _query_key(query: LuceneQuery) -> str:
    return " ".join(sorted(_clause_key(clause) for clause in query.clauses))


def query_key(query: LuceneQuery) -> str:
    """A normalized form equal for queries that mean the same: clauses sorted (a boolean query
    is order-free), text case-folded and whitespace-collapsed, a one-word phrase equal to the
    term, a boost of 1 equal to none, a one-clause group equal to its clause. Used to skip
    refinements already tried."""
    return _query_key(query)
