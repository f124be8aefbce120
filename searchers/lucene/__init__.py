"""The Lucene query model: parse what an LLM wrote (repairing it), edit it, render it per engine.

``parse_lucene`` never raises; ``render_tantivy`` and ``render_query_string`` only produce strings
their engine accepts; ``extend``/``emphasize``/``exclude`` are LevelRAG's feedback operations,
done on the model rather than by string surgery.
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
