"""The Lucene query model: parse what an LLM wrote (repairing it), edit it, render it per engine.

- ``parse_lucene`` never raises; it returns the query and notes of every repair (see
  ``searchers.lucene.parse`` for the rules: fuzzy ``~`` on terms and ``*``/``?`` wildcards are
  dropped, phrase slop is kept, unknown ``field:`` is text, exclusion-only groups are hoisted).
- ``is_empty`` says the query can match nothing (e.g. exclusions only): backends return no hits
  without calling the engine, and both renderers return ``""`` for it.
- ``render_tantivy`` / ``render_query_string`` give tantivy and Elasticsearch ``query_string``
  Lucene's meaning, escaping whatever the LLM wrote.
- ``extend``/``emphasize``/``exclude`` are LevelRAG's feedback operations on the model (never
  string surgery); ``query_key`` dedupes equivalent queries.
"""

from searchers.lucene.edits import emphasize, exclude, extend, query_key
from searchers.lucene.model import (
    MAX_CLAUSES,
    Clause,
    Group,
    LuceneQuery,
    Occur,
    ParsedQuery,
    Phrase,
    Term,
    is_empty,
)
from searchers.lucene.parse import DEFAULT_FIELDS, parse_lucene
from searchers.lucene.render import render_query_string, render_tantivy

__all__ = [
    "DEFAULT_FIELDS",
    "MAX_CLAUSES",
    "Clause",
    "Group",
    "LuceneQuery",
    "Occur",
    "ParsedQuery",
    "Phrase",
    "Term",
    "emphasize",
    "exclude",
    "extend",
    "is_empty",
    "parse_lucene",
    "query_key",
    "render_query_string",
    "render_tantivy",
]
