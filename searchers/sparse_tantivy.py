"""BM25 sparse index on tantivy: the single-machine backend of the sparse retriever.

Schema: ``id`` (raw token, stored: exact lookup, idempotent re-ingest, deletion),
``title`` and ``text`` (stored, analyzed by ``hoptree_en``), ``metadata`` (stored JSON bytes,
not indexed). Queries search title + text with BM25 and Lucene's default operator OR.

``hoptree_en`` = simple tokenizer (split on non-alphanumerics), drop tokens of 40+ bytes,
lowercase, ASCII folding, English Snowball stemming. Folding is the one step beyond tantivy's
built-in ``en_stem``: multi-hop corpora are full of accented names (Beyoncé, São Paulo) that a
model often writes unaccented. No stop words: BM25's IDF already discounts them, and phrases like
"The Who" need them. Custom tokenizers are not persisted by tantivy, so every open registers it;
open the index through this class, not raw tantivy.

Concurrency: tantivy's lock file allows one writer per directory (a second ``add`` anywhere
raises ``RetrievalError`` instead of corrupting); readers reload before every lookup, so any
instance sees another's committed writes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import tantivy

from searchers.lucene import Group, LuceneQuery, parse_lucene, render_tantivy
from searchers.passages import Hit, Passage
from searchers.retrieval import RetrievalError

log = logging.getLogger(__name__)

TOKENIZER = "hoptree_en"
SEARCH_FIELDS: tuple[str, ...] = ("title", "text")
WRITER_HEAP_BYTES = 128_000_000
#: How often ``add`` reports progress, in passages.
PROGRESS_EVERY = 1000


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("title", stored=True, tokenizer_name=TOKENIZER)
    builder.add_text_field("text", stored=True, tokenizer_name=TOKENIZER)
    builder.add_bytes_field("metadata", stored=True, indexed=False)
    return builder.build()


def _analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _fields_restricted(query: LuceneQuery, allowed: tuple[str, ...]) -> LuceneQuery:
    """Unknown fields fall back to the default fields: tantivy refuses a query naming a field
    its schema lacks, and a hand-built model may carry one the parser would have rejected."""
    clauses = []
    for clause in query.clauses:
        node = clause.node
        if isinstance(node, Group):
            node = Group(_fields_restricted(node.query, allowed))
        field = clause.field if clause.field in allowed else None
        clauses.append(replace(clause, node=node, field=field))
    return LuceneQuery(tuple(clauses))


def _passage(doc: tantivy.Document) -> Passage:
    raw = doc.get_first("metadata")
    metadata: dict[str, Any] = json.loads(bytes(raw).decode()) if raw else {}
    return Passage(
        id=str(doc.get_first("id")),
        title=str(doc.get_first("title") or ""),
        text=str(doc.get_first("text") or ""),
        metadata=metadata,
    )


class TantivySparseIndex:
    """A tantivy index of passages; satisfies ``searchers.retrieval.Retriever``."""

    name = "sparse"

    def __init__(self, index: tantivy.Index, path: Path) -> None:
        """Use ``create`` or ``open``: both register the analyzer the schema depends on."""
        index.register_tokenizer(TOKENIZER, _analyzer())
        self._index = index
        self.path = path
        self._gone_noted = False
        # set by ``IndexDir.sparse``: the index's live sparse index, when a build replaced ours
        self.reopen: Callable[[], TantivySparseIndex] | None = None

    @classmethod
    def create(cls, path: Path) -> TantivySparseIndex:
        """A new empty index in ``path``, which must be missing or empty (never overwrite: a
        failed rebuild must leave the previous index intact)."""
        path = Path(path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise FileExistsError(f"cannot create a sparse index in non-empty {path}")
        path.mkdir(parents=True, exist_ok=True)
        return cls(tantivy.Index(_schema(), path=str(path), reuse=False), path)

    @classmethod
    def open(cls, path: Path) -> TantivySparseIndex:
        """Reopen an index made by ``create``; ``RetrievalError`` if missing, corrupt, or not
        ours (wrong schema)."""
        path = Path(path)
        if not path.is_dir() or not (path / "meta.json").is_file():
            raise RetrievalError(f"no sparse index at {path}")
        try:
            index = tantivy.Index.open(str(path))
            opened = cls(index, path)
            index.parse_query("probe", list(SEARCH_FIELDS))
            index.searcher().doc_freq("id", "probe")
        except ValueError as exc:
            raise RetrievalError(f"unusable sparse index at {path}: {exc}") from exc
        return opened

    def _searcher(self) -> tantivy.Searcher:
        try:
            self._index.reload()
        except ValueError:
            if self.path.is_dir():
                raise
            # A later build committed a new generation and deleted this one (a long-running
            # server opened it): follow the index to its new generation when we know how,
            # else keep answering from the one we opened (its open segments still read)
            # rather than fail every query until a restart.
            if self._follow():
                return self._index.searcher()
            if not self._gone_noted:
                self._gone_noted = True
                log.warning("%s was replaced by a newer build; restart to read it", self.path)
        return self._index.searcher()

    def _follow(self) -> bool:
        if self.reopen is None:
            return False
        try:
            live = self.reopen()
        except (RetrievalError, OSError, ValueError) as exc:
            log.warning("cannot follow %s to the index's new generation: %s", self.path, exc)
            return False
        log.info("sparse index %s replaced by a newer build: now reading %s", self.path, live.path)
        self._index, self.path = live._index, live.path
        self._index.reload()
        return True

    def add(
        self, passages: Iterable[Passage], *, progress: Callable[[int], None] | None = None
    ) -> int:
        """Index and commit ``passages``; returns how many were new. Ids already indexed (or
        repeated in ``passages``) are skipped, so re-ingesting a source is idempotent.
        ``progress`` gets the number of passages handled since its previous call (fits
        ``tqdm.update``). Nothing is visible, and nothing lost, until the single commit."""
        searcher = self._searcher()
        try:
            writer = self._index.writer(WRITER_HEAP_BYTES)
        except ValueError as exc:
            raise RetrievalError(f"sparse index at {self.path} is locked: {exc}") from exc
        added = handled = 0
        seen: set[str] = set()
        try:
            for passage in passages:
                handled += 1
                if passage.id not in seen and not searcher.doc_freq("id", passage.id):
                    seen.add(passage.id)
                    writer.add_document(self._document(passage))
                    added += 1
                if progress is not None and handled % PROGRESS_EVERY == 0:
                    progress(PROGRESS_EVERY)
        except BaseException:
            writer.rollback()
            raise
        writer.commit()
        writer.wait_merging_threads()  # consumes the writer: releases the lock for others
        if progress is not None and handled % PROGRESS_EVERY:
            progress(handled % PROGRESS_EVERY)
        self._index.reload()
        return added

    def remove(self, passage_ids: Iterable[str]) -> int:
        """Delete the documents of ``passage_ids`` in one commit; returns how many were there.
        (Tantivy marks them deleted; a later merge reclaims the space.)"""
        searcher = self._searcher()
        present = [pid for pid in dict.fromkeys(passage_ids) if searcher.doc_freq("id", pid)]
        if not present:
            return 0
        try:
            writer = self._index.writer(WRITER_HEAP_BYTES)
        except ValueError as exc:
            raise RetrievalError(f"sparse index at {self.path} is locked: {exc}") from exc
        try:
            for pid in present:
                writer.delete_documents_by_term("id", pid)
        except BaseException:
            writer.rollback()
            raise
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        return len(present)

    @staticmethod
    def _document(passage: Passage) -> tantivy.Document:
        doc = tantivy.Document(id=passage.id, title=passage.title, text=passage.text)
        doc.add_bytes("metadata", json.dumps(passage.metadata, ensure_ascii=False).encode())
        return doc

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        """Best ``k`` hits for a Lucene string, repaired by ``parse_lucene`` (callers that want
        the repair notes parse first and call ``retrieve_query``)."""
        parsed = parse_lucene(query, fields=SEARCH_FIELDS)
        if parsed.repairs:
            log.debug("repaired sparse query %r: %s", query, "; ".join(parsed.repairs))
        return self.retrieve_query(parsed.query, k)

    def compile_query(self, query: LuceneQuery) -> tantivy.Query | None:
        """The tantivy query for a model, or None when it can match nothing. Raises tantivy's
        ``ValueError`` if the engine refuses the rendered string (a renderer bug: the tests
        hold every hostile input to this)."""
        rendered = render_tantivy(_fields_restricted(query, SEARCH_FIELDS))
        if not rendered:
            return None
        return self._index.parse_query(rendered, list(SEARCH_FIELDS))

    def retrieve_query(self, query: LuceneQuery, k: int = 10) -> list[Hit]:
        """Best ``k`` hits for a query model; no hits (never an error) when it can match
        nothing, e.g. exclusions only."""
        if k <= 0:
            return []
        try:
            compiled = self.compile_query(query)
        except ValueError:  # a renderer bug must degrade one search, not crash the request
            log.exception("tantivy refused the rendering of %r", query)
            return []
        if compiled is None:
            return []
        searcher = self._searcher()
        hits: list[Hit] = []
        seen: set[str] = set()
        for score, address in searcher.search(compiled, k).hits:
            passage = _passage(searcher.doc(address))
            if passage.id not in seen:
                seen.add(passage.id)
                hits.append(Hit(passage, float(score), self.name))
        return hits

    def get(self, passage_id: str) -> Passage | None:
        searcher = self._searcher()
        query = tantivy.Query.term_query(self._index.schema, "id", passage_id)
        found = searcher.search(query, 1).hits
        return _passage(searcher.doc(found[0][1])) if found else None

    def __len__(self) -> int:
        return self._searcher().num_docs

    def ids(self) -> set[str]:
        """Every indexed passage id, read from the term dictionary (no document loads)."""
        searcher = self._searcher()
        return {term for term, _ in searcher.terms_with_prefix("id", "")}
