"""The Elasticsearch index behind the sparse and dense retrievers: the scale-out path past one
machine.

One index holds both sides of the corpus: ``title``/``text`` for BM25 through ``query_string``
and an ``embedding`` ``dense_vector`` for kNN. The embedding model and its dimension are written
to the index ``_meta`` at creation so a retriever built with another model refuses to search
vectors it cannot compare with, the same rule as the local FAISS index. This module holds the
index: the client, the mapping, creating and checking it, bulk ingest, reading passages back and
turning every cluster failure into a ``RetrievalError``; the queries the retrievers send are
``searchers.elasticsearch_retrievers``.

Elasticsearch is optional, and everything that knows its API lives in those two modules, so
nothing else imports the client and removing the backend is deleting the two files. The store
stays one module: creating, writing and reading all go through one timeout-bound client and one
error translation (``cluster_errors``), and no part of it is used without the others.

The client is injected (``connect`` builds one from settings) so the CLI owns configuration and
tests can swap the transport for recorded responses. Every request carries ``request_timeout``;
every cluster failure becomes a ``RetrievalError`` that names the URL and the index.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import (
    ApiError,
    AuthenticationException,
    AuthorizationException,
    BadRequestError,
    Elasticsearch,
    NotFoundError,
    UnsupportedProductError,
)
from langchain_core.embeddings import Embeddings

from searchers.dense_faiss import embed_texts, passage_embedding_text
from searchers.passages import Passage
from searchers.retrieval import RetrievalError

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_BATCH_SIZE = 256
#: Bumped when the mapping changes incompatibly; an index with another version is refused.
SCHEMA_VERSION = 1
EMBEDDING_FIELD = "embedding"
PASSAGE_TEXT = "title+text"
#: Bulk items rejected with 429 (a busy cluster's write queue) are resent this many times.
BULK_MAX_ATTEMPTS = 4
#: Walking an error body's ``caused_by`` chain stops here; real chains are 2-4 deep.
_MAX_ERROR_DEPTH = 8

Progress = Callable[[int], None]


def connect(
    url: str,
    *,
    api_key: str | tuple[str, str] | None = None,
    basic_auth: tuple[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = 2,
    verify_certs: bool = True,
    ca_certs: str | None = None,
) -> Elasticsearch:
    """A client for the cluster at ``url`` (``http://localhost:9200``; the port is required).

    Timeouts are not retried: a cluster that does not answer in ``timeout_s`` is unlikely to
    answer the next time, and a search that waits ``max_retries`` times as long stalls the whole
    planner. Refused connections and 429/502/503/504 are retried ``max_retries`` times.
    """
    if not url or not url.strip():
        raise ValueError("Elasticsearch URL is empty; expected e.g. http://localhost:9200")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    try:
        return Elasticsearch(
            url.strip(),
            api_key=api_key,
            basic_auth=basic_auth,
            request_timeout=timeout_s,
            max_retries=max_retries,
            retry_on_timeout=False,
            verify_certs=verify_certs,
            ca_certs=ca_certs,
        )
    except ValueError as exc:
        raise ValueError(f"invalid Elasticsearch URL {url!r}: {exc}") from exc


def index_mapping(dim: int, embedding_model: str) -> dict[str, Any]:
    """The mapping ``create`` puts; public so the live tests and operators can inspect it.

    ``dynamic: strict`` makes a document with a stray field fail loudly instead of growing the
    mapping; ``metadata`` is kept in ``_source`` but not indexed, since its keys vary by source
    and would otherwise explode the field count. ``cosine`` rather than ``dot_product``: the two
    rank unit vectors identically, and cosine does not reject an injected model that forgets to
    normalize.
    """
    return {
        "_meta": {
            "hoptree": {
                "schema_version": SCHEMA_VERSION,
                "embedding_model": embedding_model,
                "dim": dim,
                # embedded as the FAISS index embeds them, so the two backends rank alike
                "passage_text": PASSAGE_TEXT,
            }
        },
        "dynamic": "strict",
        "properties": {
            "id": {"type": "keyword"},
            "title": {
                "type": "text",
                "fields": {"keyword": {"type": "keyword", "ignore_above": 512}},
            },
            "text": {"type": "text"},
            "metadata": {"type": "object", "enabled": False},
            EMBEDDING_FIELD: {
                "type": "dense_vector",
                "dims": dim,
                "index": True,
                "similarity": "cosine",
            },
        },
    }


@dataclass(frozen=True)
class IndexInfo:
    """What the index ``_meta`` says about the vectors in it."""

    index: str
    embedding_model: str
    dim: int
    schema_version: int


class EmbeddingModelMismatch(RetrievalError):
    """The index was built with another embedding model (or dimension): its vectors and the
    query's live in different spaces, so every kNN answer would be noise."""


def _cluster_url(client: Elasticsearch) -> str:
    """Base URLs of the client's nodes, for messages; never includes credentials (the transport
    keeps them in headers, not in the URL)."""
    try:
        nodes = client.transport.node_pool.all()
    except AttributeError:
        return "<unknown Elasticsearch URL>"
    urls = [node.base_url for node in nodes[:3]]
    if len(nodes) > 3:
        urls.append(f"... ({len(nodes)} nodes)")
    return ", ".join(urls) or "<no Elasticsearch nodes>"


def _error_chain(body: Any) -> Iterator[Mapping[str, Any]]:
    """Every error object in an Elasticsearch error body: the top error, its root causes, shard
    failures and ``caused_by`` links, bounded in depth."""
    if not isinstance(body, Mapping):
        return
    stack: list[tuple[Any, int]] = [(body.get("error"), 0)]
    budget = 64
    while stack and budget > 0:
        budget -= 1
        node, depth = stack.pop()
        if not isinstance(node, Mapping) or depth > _MAX_ERROR_DEPTH:
            continue
        yield node
        stack.append((node.get("caused_by"), depth + 1))
        for cause in node.get("root_cause") or []:
            stack.append((cause, depth + 1))
        for failure in node.get("failed_shards") or []:
            if isinstance(failure, Mapping):
                stack.append((failure.get("reason"), depth + 1))


def error_summary(exc: ApiError) -> str:
    """``type: reason`` of the most specific error in the body, else the exception's text."""
    errors = list(_error_chain(exc.body))
    for error in reversed(errors):
        if error.get("reason"):
            return f"{error.get('type', 'error')}: {error['reason']}"
    return str(exc.message or exc)


def is_query_parse_error(exc: ApiError) -> bool:
    """True for a 400 caused by the query text itself (``query_string`` syntax, too many clauses),
    as opposed to a broken mapping or request: only the former is fixed by simplifying the query."""
    if exc.meta.status != 400:
        return False
    for error in _error_chain(exc.body):
        kind = str(error.get("type", ""))
        reason = str(error.get("reason", ""))
        if kind in {"parse_exception", "query_parsing_exception", "too_many_nested_clauses"}:
            return True
        if kind == "query_shard_exception" and reason.startswith("Failed to parse query"):
            return True
    return False


def _is_index_missing(exc: NotFoundError) -> bool:
    return any(e.get("type") == "index_not_found_exception" for e in _error_chain(exc.body))


class ElasticsearchStore:
    """One Elasticsearch index of passages and their embeddings; the retrievers read through it.

    The client passed in is re-optioned with ``request_timeout`` so that no request made here can
    hang, whatever the caller configured.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        bulk_retry_backoff_s: float = 1.0,
    ) -> None:
        if not index or index != index.lower() or index.startswith(("_", "-", "+")):
            raise ValueError(
                f"invalid Elasticsearch index name {index!r}: lowercase, not starting with _ - +"
            )
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.index = index
        self.timeout_s = timeout_s
        self.url = _cluster_url(client)
        self._client = client.options(request_timeout=timeout_s)
        self._bulk_retry_backoff_s = bulk_retry_backoff_s

    def __repr__(self) -> str:
        return f"ElasticsearchStore(index={self.index!r}, url={self.url!r})"

    @property
    def client(self) -> Elasticsearch:
        """The timeout-bound client, for callers that need an API this class does not wrap."""
        return self._client

    @contextmanager
    def cluster_errors(self, action: str) -> Iterator[None]:
        """Turn every transport/API failure into a ``RetrievalError`` saying where and what."""
        where = f"index {self.index!r} at {self.url}"
        try:
            yield
        except ConnectionTimeout as exc:
            raise RetrievalError(
                f"Elasticsearch {action} on {where} timed out after {self.timeout_s:g}s"
            ) from exc
        except TransportConnectionError as exc:
            raise RetrievalError(
                f"cannot reach Elasticsearch at {self.url} ({action} on index {self.index!r}): "
                f"{exc.message}; is the cluster running and the URL right?"
            ) from exc
        except TransportError as exc:
            raise RetrievalError(f"Elasticsearch {action} on {where} failed: {exc}") from exc
        except NotFoundError as exc:
            if _is_index_missing(exc):
                raise RetrievalError(
                    f"Elasticsearch index {self.index!r} does not exist at {self.url}; "
                    "build it first (ElasticsearchStore.create + add)"
                ) from exc
            raise RetrievalError(
                f"Elasticsearch {action} on {where}: not found ({error_summary(exc)})"
            ) from exc
        except UnsupportedProductError as exc:
            raise RetrievalError(
                f"the server at {self.url} is not Elasticsearch (no 'X-Elastic-Product: "
                f"Elasticsearch' header in its answer to {action}); check the URL and port"
            ) from exc
        except (AuthenticationException, AuthorizationException) as exc:
            raise RetrievalError(
                f"Elasticsearch at {self.url} refused {action} on index {self.index!r} "
                f"(HTTP {exc.meta.status}): check the API key or user/password and its "
                f"privileges ({error_summary(exc)})"
            ) from exc
        except ApiError as exc:
            raise RetrievalError(
                f"Elasticsearch {action} on {where} failed with HTTP {exc.meta.status}: "
                f"{error_summary(exc)}"
            ) from exc

    # --- lifecycle -------------------------------------------------------------------------

    def create(self, dim: int, embedding_model: str) -> IndexInfo:
        """Create the index, or accept an existing one built with the same model and dim.

        Creating first and reading the existing ``_meta`` only on "already exists" is race-free
        when two ingest workers start at once; re-running an ingest is therefore safe, and
        ``add`` overwrites by id.
        """
        if dim < 1:
            raise ValueError(f"embedding dim must be >= 1, got {dim}")
        if not embedding_model:
            raise ValueError("embedding_model name is required (it is checked at every open)")
        with self.cluster_errors("index creation"):
            try:
                self._client.indices.create(
                    index=self.index, mappings=index_mapping(dim, embedding_model)
                )
            except BadRequestError as exc:
                kinds = {e.get("type") for e in _error_chain(exc.body)}
                if "resource_already_exists_exception" not in kinds:
                    raise
                return self.check(embedding_model, dim=dim)
        logger.info("created Elasticsearch index %s at %s (dim %d)", self.index, self.url, dim)
        return IndexInfo(self.index, embedding_model, dim, SCHEMA_VERSION)

    def info(self) -> IndexInfo:
        """What the index ``_meta`` records; raises if the index is missing or not hoptree's."""
        with self.cluster_errors("reading the mapping"):
            response = self._client.indices.get_mapping(index=self.index)
        metas = []
        for name, body in response.body.items():
            meta = ((body.get("mappings") or {}).get("_meta") or {}).get("hoptree")
            if not isinstance(meta, Mapping):
                raise RetrievalError(
                    f"Elasticsearch index {name!r} at {self.url} was not created by hoptree "
                    "(no _meta.hoptree in its mapping); use another index name"
                )
            try:
                metas.append(
                    IndexInfo(
                        index=name,
                        embedding_model=str(meta["embedding_model"]),
                        dim=int(meta["dim"]),
                        schema_version=int(meta.get("schema_version", 0)),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise RetrievalError(
                    f"Elasticsearch index {name!r} at {self.url} has a malformed _meta.hoptree "
                    f"({meta!r})"
                ) from exc
        if not metas:
            raise RetrievalError(f"Elasticsearch index {self.index!r} at {self.url} not found")
        first = metas[0]
        for other in metas[1:]:
            if (other.embedding_model, other.dim) != (first.embedding_model, first.dim):
                raise EmbeddingModelMismatch(
                    f"alias {self.index!r} at {self.url} spans indexes built with different "
                    f"embedding models ({first.index}: {first.embedding_model}/{first.dim}, "
                    f"{other.index}: {other.embedding_model}/{other.dim})"
                )
        if first.schema_version != SCHEMA_VERSION:
            raise RetrievalError(
                f"Elasticsearch index {self.index!r} at {self.url} has hoptree schema version "
                f"{first.schema_version}, this hoptree reads version {SCHEMA_VERSION}; rebuild it"
            )
        return IndexInfo(self.index, first.embedding_model, first.dim, first.schema_version)

    def check(self, embedding_model: str, *, dim: int | None = None) -> IndexInfo:
        """``info()`` plus the guarantee that its vectors come from ``embedding_model``."""
        info = self.info()
        if info.embedding_model != embedding_model or (dim is not None and info.dim != dim):
            wanted = embedding_model if dim is None else f"{embedding_model} (dim {dim})"
            raise EmbeddingModelMismatch(
                f"Elasticsearch index {self.index!r} at {self.url} was built with embedding "
                f"model {info.embedding_model} (dim {info.dim}), not {wanted}; use the same "
                f"model (HOPTREE_EMBEDDINGS__MODEL={info.embedding_model}) or rebuild the "
                "index under another name"
            )
        return info

    def delete(self) -> None:
        """Drop the index (tests, rebuilds); a missing index is not an error."""
        with self.cluster_errors("index deletion"):
            self._client.indices.delete(index=self.index, ignore_unavailable=True)

    # --- writing ---------------------------------------------------------------------------

    def add(
        self,
        passages: Iterable[Passage],
        embeddings: Embeddings,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Progress | None = None,
    ) -> int:
        """Embed and index ``passages``, ``batch_size`` per bulk request; returns how many.

        Idempotent by passage id (``index`` overwrites), so an interrupted ingest is resumed by
        running it again. One refresh at the end rather than per batch: refreshing is what makes
        bulk indexing slow. ``progress`` gets the running total after each batch.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        info = self.info()
        total = 0
        batch: list[Passage] = []
        for passage in passages:
            batch.append(passage)
            if len(batch) >= batch_size:
                total += self._add_batch(batch, embeddings, info.dim)
                batch = []
                if progress is not None:
                    progress(total)
        if batch:
            total += self._add_batch(batch, embeddings, info.dim)
            if progress is not None:
                progress(total)
        with self.cluster_errors("refresh"):
            self._client.indices.refresh(index=self.index)
        return total

    def _add_batch(self, batch: Sequence[Passage], embeddings: Embeddings, dim: int) -> int:
        vectors = embed_texts(embeddings, [passage_embedding_text(p, PASSAGE_TEXT) for p in batch])
        if vectors.shape[1] != dim:
            raise EmbeddingModelMismatch(
                f"the embedding model makes vectors of dim {vectors.shape[1]}, Elasticsearch "
                f"index {self.index!r} at {self.url} stores dim {dim}"
            )
        docs: dict[str, dict[str, Any]] = {}
        for passage, vector in zip(batch, vectors, strict=True):
            # a later duplicate id in one batch wins, as it would across batches
            docs[passage.id] = {
                "id": passage.id,
                "title": passage.title,
                "text": passage.text,
                "metadata": passage.metadata,
                EMBEDDING_FIELD: vector.tolist(),
            }
        self._bulk_index(docs)
        return len(docs)

    def _bulk_index(self, docs: dict[str, dict[str, Any]]) -> None:
        """Send one bulk request; resend only the items the cluster rejected as overloaded (429),
        a bounded number of times; any other item error fails the ingest with its reason."""
        pending = docs
        for attempt in range(BULK_MAX_ATTEMPTS):
            operations: list[dict[str, Any]] = []
            for doc_id, doc in pending.items():
                operations.append({"index": {"_index": self.index, "_id": doc_id}})
                operations.append(doc)
            with self.cluster_errors("bulk indexing"):
                response = self._client.bulk(operations=operations).body
            if not response.get("errors"):
                return
            retry: dict[str, dict[str, Any]] = {}
            failures: list[str] = []
            for item in response.get("items") or []:
                result = next(iter(item.values()), {}) if isinstance(item, Mapping) else {}
                status = int(result.get("status", 0))
                if status < 300:
                    continue
                doc_id = str(result.get("_id"))
                error = result.get("error") or {}
                if status == 429 and doc_id in pending:
                    retry[doc_id] = pending[doc_id]
                else:
                    failures.append(
                        f"{doc_id}: {error.get('type', status)}: {error.get('reason', '')}"
                    )
            if failures:
                shown = "; ".join(failures[:3])
                raise RetrievalError(
                    f"Elasticsearch rejected {len(failures)} of {len(pending)} documents for "
                    f"index {self.index!r} at {self.url}: {shown}"
                )
            if not retry:
                return
            pending = retry
            if attempt + 1 < BULK_MAX_ATTEMPTS:
                logger.warning(
                    "Elasticsearch at %s is overloaded: resending %d documents (attempt %d)",
                    self.url,
                    len(pending),
                    attempt + 2,
                )
                time.sleep(self._bulk_retry_backoff_s * 2**attempt)
        raise RetrievalError(
            f"Elasticsearch at {self.url} kept rejecting {len(pending)} documents for index "
            f"{self.index!r} as overloaded (429) after {BULK_MAX_ATTEMPTS} attempts"
        )

    # --- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        with self.cluster_errors("count"):
            response = self._client.count(index=self.index)
        return int(response.body["count"])

    def get(self, passage_id: str) -> Passage | None:
        with self.cluster_errors("get"):
            try:
                response = self._client.get(
                    index=self.index, id=passage_id, source_excludes=[EMBEDDING_FIELD]
                )
            except NotFoundError as exc:
                # a missing document is a 404 with found=false; a missing index is an error
                if isinstance(exc.body, Mapping) and exc.body.get("found") is False:
                    return None
                raise
        body = response.body
        if not body.get("found"):
            return None
        return passage_from_hit(body)

    def search_hits(self, body: dict[str, Any], *, action: str) -> list[dict[str, Any]]:
        """Run one ``_search`` and return its ``hits.hits``; shard failures that still left
        results are logged, since partial results beat none for a searcher. Raises the client's
        own exceptions so the sparse retriever can tell a query Elasticsearch could not parse
        from a broken cluster; callers wrap it in ``cluster_errors``."""
        response = self._client.search(index=self.index, **body).body
        shards = response.get("_shards") or {}
        if shards.get("failed"):
            logger.warning(
                "Elasticsearch %s on index %s at %s: %s of %s shards failed",
                action,
                self.index,
                self.url,
                shards.get("failed"),
                shards.get("total"),
            )
        return list((response.get("hits") or {}).get("hits") or [])


def passage_from_hit(hit: Mapping[str, Any]) -> Passage:
    source = hit.get("_source") or {}
    return Passage(
        id=str(hit["_id"]),
        title=str(source.get("title") or ""),
        text=str(source.get("text") or ""),
        metadata=dict(source.get("metadata") or {}),
    )
