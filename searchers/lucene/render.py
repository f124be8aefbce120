"""Render the query model to each engine's dialect, giving both Lucene's meaning.

Both renderers first apply ``effective`` (Lucene's execution rules made explicit) and return
``""`` when the query matches nothing; backends should test ``is_empty`` and skip the engine.

tantivy 0.27's parser, checked by experiment: ``a AND NOT b`` returns nothing, ``&&``/``||`` are
plain text, an exclusion-only query is an error, ``a (-b)`` acts as ``a -b``, ``()`` and ``^1e3``
are syntax errors, ``term~1`` silently matches nothing, an unquoted ``foo-bar`` is a phrase, and
a clause whose words all exceed the tokenizer's 40-byte limit vanishes (so ``-x +longword``
becomes exclusion-only: an error). So the tantivy form uses only ``+``/``-`` prefixes, quotes
every leaf (inside quotes only ``"`` and ``\\`` are special), spells a many-word term as the
OR group Lucene would make of it, and drops leaves the tokenizer would drop.

Elasticsearch ``query_string`` takes classic Lucene syntax: reserved characters are
backslash-escaped; ``<`` and ``>`` cannot be escaped there, so terms are split at them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from searchers.lucene.lexer import SURROGATES
from searchers.lucene.model import (
    MAX_BOOST,
    MAX_SLOP,
    MIN_BOOST,
    Clause,
    Group,
    LuceneQuery,
    Occur,
    Phrase,
    Term,
    effective,
    searchable,
)

#: tantivy's default and en_stem tokenizers drop tokens of 40 bytes or more (RemoveLongFilter).
TANTIVY_MAX_TOKEN_BYTES = 39

_ES_RESERVED = re.compile(r'([+\-=&|!(){}\[\]^"~*?:\\/])')
_ES_SPLIT = re.compile("[\\s<>\ud800-\udfff]+")
_ES_KEYWORDS = frozenset({"AND", "OR", "NOT", "TO"})
_PREFIX = {Occur.SHOULD: "", Occur.MUST: "+", Occur.MUST_NOT: "-"}


def format_boost(boost: float) -> str:
    """Plain decimal with no exponent (tantivy rejects ``1e3``), clamped to the valid range."""
    value = min(max(boost, MIN_BOOST), MAX_BOOST)
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _quote(text: str) -> str:
    cleaned = " ".join(SURROGATES.sub(" ", text).split())
    return '"' + cleaned.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _render(query: LuceneQuery, leaf: Callable[[Term | Phrase], str]) -> str:
    parts = []
    for clause in query.clauses:
        parts.append(_render_clause(clause, leaf))
    return " ".join(parts)


def _render_clause(clause: Clause, leaf: Callable[[Term | Phrase], str]) -> str:
    node = clause.node
    body = f"({_render(node.query, leaf)})" if isinstance(node, Group) else leaf(node)
    if isinstance(node, Phrase) and node.slop > 0:
        body += f"~{min(node.slop, MAX_SLOP)}"
    if clause.boost is not None and clause.occur is not Occur.MUST_NOT:
        boost = format_boost(clause.boost)
        if boost != "1":
            body += f"^{boost}"
    field = f"{clause.field}:" if clause.field else ""
    return f"{_PREFIX[clause.occur]}{field}{body}"


def _word_char(ch: str) -> bool:
    # Rust's is_alphanumeric also counts many combining marks as letters; counting all of them
    # can only overestimate a word's length, which errs towards dropping, never towards an
    # engine error.
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def _tantivy_words(text: str) -> list[str]:
    """``text`` split the way tantivy's simple tokenizer splits it (before its filters)."""
    words: list[str] = []
    current: list[str] = []
    for ch in text + " ":
        if _word_char(ch):
            current.append(ch)
        elif current:
            words.append("".join(current))
            current = []
    return words


def tantivy_searchable(text: str) -> bool:
    """Whether tantivy's tokenizer (split on non-alphanumerics, drop tokens of 40+ bytes) keeps
    at least one token of ``text``."""
    return any(len(w.encode()) <= TANTIVY_MAX_TOKEN_BYTES for w in _tantivy_words(text))


def _tantivy_leaf(node: Term | Phrase) -> str:
    # tantivy turns a term of several tokens (foo-bar) into a phrase; Lucene's classic parser
    # makes it an OR of the tokens, so spell that out as a group.
    words = _tantivy_words(node.text) if isinstance(node, Term) else []
    if len(words) > 1:
        return "(" + " ".join(_quote(word) for word in words) + ")"
    return _quote(node.text)


def render_tantivy(query: LuceneQuery) -> str:
    """String for tantivy's ``Index.parse_query`` (default fields = the searched fields), or
    ``""`` when nothing can match. Field names must exist in the index schema."""
    eff = effective(query, tantivy_searchable)
    if eff is None:
        return ""
    return _render(eff, _tantivy_leaf)


def query_string_leaf(node: Term | Phrase) -> str:
    """One term or phrase in classic Lucene syntax, escaped (no field, slop or boost). A term
    holding whitespace or ``<``/``>`` (unescapable in ``query_string``) becomes a group of its
    parts: the OR Lucene would have made of it after analysis."""
    text = node.text
    if isinstance(node, Phrase) or text in _ES_KEYWORDS:
        return _quote(text)
    parts = _ES_SPLIT.split(text)
    if len(parts) > 1:
        inner = [query_string_leaf(Term(part)) for part in parts if part]
        return "(" + " ".join(inner) + ")" if len(inner) > 1 else "".join(inner)
    return _ES_RESERVED.sub(r"\\\1", text)


def render_query_string(query: LuceneQuery) -> str:
    """String for Elasticsearch ``query_string`` (classic Lucene syntax, default operator OR),
    or ``""`` when nothing can match (ES would read an exclusion-only query as "everything
    except", so it is never sent)."""
    eff = effective(query, searchable)
    if eff is None:
        return ""
    return _render(eff, query_string_leaf)
