"""Elasticsearch's sparse and dense retrievers: queries over the index of
``searchers.elasticsearch_store``.

BM25 goes through ``query_string``, so the Lucene operators the sparse searcher writes are
honoured (unlike the reference code's plain ``match``), and a query Elasticsearch cannot parse
degrades to a plain-terms query instead of failing the search; kNN embeds the query with the
injected model, checked once against the model recorded in the index. Hits come back in the
engine's order, each passage once, scored as the local backends score them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import BadRequestError
from langchain_core.embeddings import Embeddings

from searchers.elasticsearch_store import (
    EMBEDDING_FIELD,
    ElasticsearchStore,
    EmbeddingModelMismatch,
    error_summary,
    is_query_parse_error,
    passage_from_hit,
)
from searchers.lucene import (
    DEFAULT_FIELDS,
    Group,
    LuceneQuery,
    Occur,
    is_empty,
    parse_lucene,
    render_query_string,
)
from searchers.lucene.model import MAX_DEPTH
from searchers.passages import Hit, Passage
from searchers.text import PLAIN_WORD

logger = logging.getLogger(__name__)

#: Elasticsearch's ``index.max_result_window`` and kNN ``num_candidates`` ceiling.
MAX_K = 10_000
_SOURCE_FILTER = {"excludes": [EMBEDDING_FIELD]}


@dataclass(frozen=True)
class SparseSearch:
    """One sparse search with what it took to run it, for the searcher's trace: the string
    actually sent, the parser's repairs, and whether Elasticsearch refused the Lucene query and
    plain terms were searched instead."""

    hits: list[Hit]
    query_string: str
    repairs: list[str] = field(default_factory=list)
    fallback: bool = False
    fallback_reason: str = ""


def _hits(
    raw: Sequence[Mapping[str, Any]], retriever: str, k: int, score: Callable[[float], float]
) -> list[Hit]:
    """Hits in the engine's order, each passage once (an alias over several indexes can return
    one id twice)."""
    seen: set[str] = set()
    hits: list[Hit] = []
    for item in raw:
        passage = passage_from_hit(item)
        if passage.id in seen:
            continue
        seen.add(passage.id)
        value = score(float(item.get("_score") or 0.0))
        hits.append(Hit(passage=passage, score=value, retriever=retriever))
        if len(hits) >= k:
            break
    return hits


def _plain_terms(query: LuceneQuery, depth: int = 0) -> list[str]:
    """The words of every clause that can match, lowercased so none reads as AND/OR/NOT: only
    letters and digits survive, so the result needs no escaping in any Lucene dialect."""
    words: list[str] = []
    if depth > MAX_DEPTH:
        return words
    for clause in query.clauses:
        if clause.occur is Occur.MUST_NOT:
            continue
        if isinstance(clause.node, Group):
            words.extend(_plain_terms(clause.node.query, depth + 1))
        else:
            words.extend(w.lower() for w in PLAIN_WORD.findall(clause.node.text))
    return list(dict.fromkeys(words))


class ElasticsearchSparseRetriever:
    """BM25 over ``title`` and ``text`` with Lucene syntax, through ``query_string``.

    Satisfies ``searchers.retrieval.Retriever`` with the same methods as the tantivy index, so
    the sparse searcher can refine a ``LuceneQuery`` and hand it to either backend.
    """

    name = "sparse"

    def __init__(
        self, store: ElasticsearchStore, *, fields: Sequence[str] = DEFAULT_FIELDS
    ) -> None:
        self.store = store
        self.fields = tuple(fields)

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        return self.search(query, k).hits

    def retrieve_query(self, query: LuceneQuery, k: int = 10) -> list[Hit]:
        return self.search(query, k).hits

    def search(self, query: str | LuceneQuery, k: int = 10) -> SparseSearch:
        """Search and report how: the parser's repairs and any fallback to plain terms."""
        repairs: list[str] = []
        if isinstance(query, str):
            parsed = parse_lucene(query, fields=self.fields)
            model, repairs = parsed.query, list(parsed.repairs)
        else:
            model = query
        if k < 1 or is_empty(model):
            return SparseSearch(hits=[], query_string="", repairs=repairs)
        k = min(k, MAX_K)
        rendered = render_query_string(model)
        with self.store.cluster_errors("sparse search"):
            try:
                raw = self.store.search_hits(self._body(rendered, k), action="sparse search")
                return SparseSearch(
                    hits=_hits(raw, self.name, k, float), query_string=rendered, repairs=repairs
                )
            except BadRequestError as exc:
                if not is_query_parse_error(exc):
                    raise
                reason = error_summary(exc)
            plain = " ".join(_plain_terms(model))
            logger.warning(
                "Elasticsearch index %s at %s could not parse query %r (%s); searching plain "
                "terms %r instead",
                self.store.index,
                self.store.url,
                rendered,
                reason,
                plain,
            )
            hits: list[Hit] = []
            if plain:
                raw = self.store.search_hits(self._body(plain, k), action="sparse fallback search")
                hits = _hits(raw, self.name, k, float)
            return SparseSearch(
                hits=hits,
                query_string=plain,
                repairs=[*repairs, f"Elasticsearch could not parse {rendered!r}: {reason}"],
                fallback=True,
                fallback_reason=reason,
            )

    def _body(self, query_string: str, k: int) -> dict[str, Any]:
        return {
            "query": {
                "query_string": {
                    "query": query_string,
                    "fields": list(self.fields),
                    "default_operator": "or",
                }
            },
            "size": k,
            "source": _SOURCE_FILTER,
            "track_total_hits": False,
        }

    def get(self, passage_id: str) -> Passage | None:
        return self.store.get(passage_id)

    def __len__(self) -> int:
        return len(self.store)


class ElasticsearchDenseRetriever:
    """kNN over the passages' embeddings with the query embedded by the injected model.

    The index's embedding model is checked once, here, at construction: a mismatch is a
    configuration error to report before any search, not per query. Scores are cosine
    similarities (Elasticsearch's ``(1 + cos) / 2`` mapped back), comparable with FAISS's inner
    product over unit vectors.
    """

    name = "dense"

    def __init__(
        self,
        store: ElasticsearchStore,
        embeddings: Embeddings,
        *,
        embedding_model: str,
        num_candidates_factor: int = 10,
        min_num_candidates: int = 100,
    ) -> None:
        if num_candidates_factor < 1 or min_num_candidates < 1:
            raise ValueError("num_candidates_factor and min_num_candidates must be >= 1")
        self.store = store
        self.embeddings = embeddings
        self.info = store.check(embedding_model)
        self.num_candidates_factor = num_candidates_factor
        self.min_num_candidates = min_num_candidates

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        if k < 1 or not query.strip():
            return []
        return self.retrieve_vector(self.embeddings.embed_query(query), k)

    def retrieve_vector(self, vector: Sequence[float], k: int = 10) -> list[Hit]:
        """kNN for an already embedded query (a HyDE pseudo-document embedded in a batch)."""
        if k < 1:
            return []
        values = [float(x) for x in vector]
        if len(values) != self.info.dim:
            raise EmbeddingModelMismatch(
                f"query embedding has dim {len(values)}, Elasticsearch index "
                f"{self.store.index!r} at {self.store.url} stores {self.info.embedding_model} "
                f"vectors of dim {self.info.dim}"
            )
        k = min(k, MAX_K)
        candidates = min(MAX_K, max(k * self.num_candidates_factor, self.min_num_candidates, k))
        body = {
            "knn": {
                "field": EMBEDDING_FIELD,
                "query_vector": values,
                "k": k,
                "num_candidates": candidates,
            },
            "size": k,
            "source": _SOURCE_FILTER,
            "track_total_hits": False,
        }
        with self.store.cluster_errors("dense search"):
            raw = self.store.search_hits(body, action="dense search")
        return _hits(raw, self.name, k, _cosine)

    def get(self, passage_id: str) -> Passage | None:
        return self.store.get(passage_id)

    def __len__(self) -> int:
        return len(self.store)


def _cosine(es_score: float) -> float:
    """Elasticsearch scores cosine kNN as ``(1 + cos) / 2`` to keep scores positive."""
    return 2.0 * es_score - 1.0
