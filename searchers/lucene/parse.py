"""Parse Lucene strings written by a small LLM into the query model, repairing instead of raising.

Semantics follow Lucene's classic QueryParser with the default operator OR: ``+`` requires,
``-``/``!``/``NOT`` excludes, ``a AND b`` requires both (and makes the clause before ``AND``
required too), ``OR`` adds nothing beyond the default. What Lucene would reject is repaired and
each repair is reported, because the searcher's trace must show the query actually run:

- unbalanced ``"``: the stray quote is dropped (its words stay plain terms: a phrase to the end
  of the input would be far stricter than the model meant); unbalanced ``(``/``)`` are closed or
  dropped; nesting deeper than ``MAX_DEPTH`` is flattened.
- ``^`` without a valid positive number is dropped; boosts are clamped to [MIN_BOOST, MAX_BOOST].
- ``~`` after a term (fuzzy) is dropped: neither backend is configured for fuzzy matching and an
  LLM's ``~`` is more often noise than intent. ``"a b"~N`` (proximity) is kept, slop capped.
- ``*``/``?`` wildcards are dropped (tantivy's parser has none; the stem still matches).
- a lone ``+``/``-``/``!`` followed by a space is punctuation ("solar - wind"), not an operator.
- ``foo:bar`` with an unknown field is plain text; dangling or doubled operators are dropped.
- words with nothing searchable (``&&&``, ``...``) are dropped.
- a group of exclusions only matches nothing in Lucene; an LLM writing ``a (-b)`` means
  ``a -b``, so its exclusions move to the enclosing query (``-(-b)`` excludes nothing: dropped).
- at most ``MAX_CLAUSES`` leaf clauses are kept.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from searchers.lucene.lexer import Kind, Token, tokenize
from searchers.lucene.model import (
    MAX_BOOST,
    MAX_CLAUSES,
    MAX_DEPTH,
    MAX_SLOP,
    MIN_BOOST,
    Clause,
    Group,
    LuceneQuery,
    Node,
    Occur,
    ParsedQuery,
    Phrase,
    Term,
    has_positive,
    searchable,
)

DEFAULT_FIELDS: tuple[str, ...] = ("title", "text")

#: Notes beyond this many are summarized: the trace needs the gist, not a thousand lines.
MAX_NOTES = 20

_CONJUNCTIONS = {Kind.AND: "AND", Kind.OR: "OR"}
_MODIFIERS = {Kind.PLUS: "+", Kind.MINUS: "-", Kind.NOT: "NOT"}


class _Parser:
    """Recursive descent over the token list; each step consumes at least one token and the
    recursion depth is bounded by ``MAX_DEPTH``."""

    def __init__(self, tokens: list[Token], repairs: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.repairs = repairs
        self.leaves = 0
        self.dropped_leaves = 0
        self.flattened = 0

    def note(self, message: str) -> None:
        if message not in self.repairs:
            self.repairs.append(message)

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def sequence(self, depth: int) -> tuple[list[Clause], bool]:
        """Clauses up to the ``)`` closing this depth (consumed) or the end; True if closed."""
        clauses: list[Clause] = []
        while (tok := self.peek()) is not None:
            if tok.kind is Kind.RPAREN:
                self.pos += 1
                if self.flattened:
                    self.flattened -= 1
                elif depth > 0:
                    return clauses, True
                else:
                    self.note("dropped an unbalanced ')'")
                continue
            self.item(clauses, depth)
        return clauses, False

    def item(self, clauses: list[Clause], depth: int) -> None:
        """Parse ``[conjunction] [modifier] [field:] primary [^boost] [~slop]`` into ``clauses``."""
        conj, mod, field = self.prefixes(depth)
        if conj is not None and not clauses:
            self.note(f"dropped a leading {_CONJUNCTIONS[conj]!r}")
            conj = None
        tok = self.peek()
        if tok is None or tok.kind is Kind.RPAREN:
            self.dangling(conj, mod, field)
            return
        self.pos += 1
        new = self.primary(tok, depth, field)
        boost, slop = self.suffixes(new)
        if not new:
            return
        prohibited = mod in (Kind.MINUS, Kind.NOT)
        hoisted = new[0].occur is Occur.MUST_NOT
        if hoisted and prohibited:
            self.note("dropped an excluded group of exclusions (it excludes nothing)")
            return
        if conj is Kind.AND and clauses and clauses[-1].occur is not Occur.MUST_NOT:
            clauses[-1] = _with(clauses[-1], occur=Occur.MUST)
        if hoisted:
            self.note("a group of exclusions alone matches nothing: moved them out of it")
            clauses.extend(new)
            return
        if prohibited:
            occur = Occur.MUST_NOT
        elif mod is Kind.PLUS or conj is Kind.AND:
            occur = Occur.MUST
        else:
            occur = Occur.SHOULD
        clauses.append(_finish(new[0], occur, boost, slop))

    def dangling(self, conj: Kind | None, mod: Kind | None, field: str | None) -> None:
        if conj is not None:
            self.note(f"dropped a dangling {_CONJUNCTIONS[conj]!r} (nothing follows it)")
        if mod is not None:
            self.note(f"dropped a dangling {_MODIFIERS[mod]!r} (nothing follows it)")
        if field is not None:
            self.note(f"dropped a dangling '{field}:' (nothing follows it)")

    def prefixes(self, depth: int) -> tuple[Kind | None, Kind | None, str | None]:
        conj: Kind | None = None
        mod: Kind | None = None
        field: str | None = None
        while (tok := self.peek()) is not None:
            if tok.kind in _CONJUNCTIONS:
                if conj is None and mod is None and field is None:
                    conj = tok.kind
                else:
                    self.note(f"dropped a misplaced {tok.raw!r}")
            elif tok.kind in _MODIFIERS:
                if mod is None:
                    mod = tok.kind
                    if field is not None:
                        self.note(f"moved {tok.raw!r} before the field {field!r}")
                else:
                    self.note(f"dropped a repeated operator {tok.raw!r}")
            elif tok.kind is Kind.FIELD:
                if field is not None:
                    self.note(f"field {field!r} overridden by {tok.text!r}")
                field = tok.text
            elif tok.kind in (Kind.BOOST, Kind.TILDE):
                self.note(f"dropped a stray {tok.raw!r} (it follows no term)")
            elif tok.kind is Kind.LPAREN and depth >= MAX_DEPTH:
                self.flattened += 1
                self.note(f"flattened parentheses nested deeper than {MAX_DEPTH}")
            else:
                break
            self.pos += 1
        return conj, mod, field

    def primary(self, tok: Token, depth: int, field: str | None) -> list[Clause]:
        """One SHOULD clause for the primary token; none if dropped; for a group of exclusions
        alone, its MUST_NOT clauses (to be hoisted)."""
        if tok.kind is Kind.LPAREN:
            return self.group(depth, field)
        node: Node = Term(tok.text) if tok.kind is Kind.WORD else Phrase(" ".join(tok.text.split()))
        if not searchable(node.text):
            self.note(f"dropped {tok.raw!r}: nothing searchable in it")
            return []
        if self.leaves >= MAX_CLAUSES:
            self.dropped_leaves += 1
            return []
        self.leaves += 1
        return [Clause(node, field=field)]

    def group(self, depth: int, field: str | None) -> list[Clause]:
        inner, closed = self.sequence(depth + 1)
        if not closed:
            self.note("closed an unbalanced '('")
        if not inner:
            self.note("dropped empty parentheses")
            return []
        if not has_positive(LuceneQuery(tuple(inner))):
            return [c if c.field or not field else _with(c, field=field) for c in inner]
        if len(inner) == 1:  # (a)^2 is a^2: no group needed
            only = inner[0]
            return [_with(only, occur=Occur.SHOULD, field=only.field or field)]
        return [Clause(Group(LuceneQuery(tuple(inner))), field=field)]

    def suffixes(self, new: list[Clause]) -> tuple[float | None, int | None]:
        boost: float | None = None
        slop: int | None = None
        node = new[0].node if len(new) == 1 else None
        while (tok := self.peek()) is not None and tok.kind in (Kind.BOOST, Kind.TILDE):
            self.pos += 1
            if not new:
                continue
            if tok.kind is Kind.BOOST:
                boost = self.boost(tok, boost)
            elif isinstance(node, Phrase) and tok.number is not None and tok.number >= 0:
                slop = min(int(tok.number), MAX_SLOP)
                if tok.number > MAX_SLOP:
                    self.note(f"capped phrase slop {tok.raw!r} at {MAX_SLOP}")
            elif isinstance(node, Phrase):
                self.note(f"dropped {tok.raw!r}: slop needs a non-negative number")
            else:
                self.note(f"dropped fuzzy/proximity {tok.raw!r}: only phrases take '~'")
        return boost, slop

    def boost(self, tok: Token, current: float | None) -> float | None:
        value = tok.number
        if value is None or not math.isfinite(value) or value <= 0:
            self.note(f"dropped {tok.raw!r}: a boost needs a positive number")
            return current
        if current is not None:
            self.note(f"dropped a second boost {tok.raw!r}")
            return current
        clamped = min(max(value, MIN_BOOST), MAX_BOOST)
        if clamped != value:
            self.note(f"clamped boost {tok.raw!r} to {clamped:g}")
        return clamped


def _with(clause: Clause, *, occur: Occur | None = None, field: str | None = None) -> Clause:
    return Clause(
        clause.node,
        occur=occur or clause.occur,
        field=field if field is not None else clause.field,
        boost=clause.boost,
    )


def _finish(clause: Clause, occur: Occur, boost: float | None, slop: int | None) -> Clause:
    node = clause.node
    if slop is not None and isinstance(node, Phrase):
        node = Phrase(node.text, slop)
    if boost is not None and clause.boost is not None:
        boost = min(boost * clause.boost, MAX_BOOST)
    return Clause(node, occur=occur, field=clause.field, boost=boost or clause.boost)


def _summarize(repairs: list[str]) -> list[str]:
    if len(repairs) <= MAX_NOTES:
        return repairs
    return [*repairs[: MAX_NOTES - 1], f"... and {len(repairs) - MAX_NOTES + 1} more repairs"]


def parse_lucene(text: str, *, fields: Collection[str] = DEFAULT_FIELDS) -> ParsedQuery:
    """Parse ``text`` into a query plus notes of every repair; never raises, for any ``str``.

    ``fields`` are the names ``field:`` may use (matched case-insensitively); any other
    ``name:value`` is plain text. The result may be empty (see ``is_empty``), with a note.
    """
    repairs: list[str] = []
    if not isinstance(text, str):  # defensive: callers pass model output straight through
        text = "" if text is None else str(text)
    known = {name.casefold(): name for name in fields}
    parser = _Parser(tokenize(text, known, repairs), repairs)
    clauses, _ = parser.sequence(0)
    query = LuceneQuery(tuple(clauses))
    if parser.dropped_leaves:
        repairs.append(
            f"kept the first {MAX_CLAUSES} clauses, dropped {parser.dropped_leaves} more"
        )
    if not clauses:
        repairs.append("empty query: nothing to search" if text.strip() else "empty query")
    elif not has_positive(query):
        repairs.append("only excluded clauses: nothing to rank, so no results")
    return ParsedQuery(query, _summarize(repairs))
