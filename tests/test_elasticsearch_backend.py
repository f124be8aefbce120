"""The Elasticsearch backend without a cluster: the real ``elasticsearch`` client runs end to end,
only its HTTP node is replaced by ``RecordedNode``, which checks each request against a script and
answers with a response body recorded in ``tests/fixtures/elasticsearch``. Failure modes that need
a socket (refused connection, a server that never answers, credentials on the wire, a server that
is not Elasticsearch) run against real sockets on 127.0.0.1 through the stock urllib3 node.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import socket
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from elastic_transport import (
    ApiResponseMeta,
    BaseNode,
    ConnectionError,
    ConnectionTimeout,
    HttpHeaders,
    NodeConfig,
)
from elastic_transport._node import NodeApiResponse
from elastic_transport.client_utils import DEFAULT
from elasticsearch import Elasticsearch
from langchain_core.embeddings import Embeddings

from searchers.dense_faiss import passage_embedding_text
from searchers.elasticsearch_retrievers import (
    ElasticsearchDenseRetriever,
    ElasticsearchSparseRetriever,
)
from searchers.elasticsearch_store import (
    DEFAULT_TIMEOUT_S,
    ElasticsearchStore,
    EmbeddingModelMismatch,
    connect,
)
from searchers.lucene import parse_lucene, render_query_string
from searchers.passages import Hit, Passage
from searchers.retrieval import RetrievalError, Retriever
from tests.loopback_http import serving

FIXTURES = Path(__file__).parent / "fixtures" / "elasticsearch"
INDEX = "hoptree-test"
URL = "http://es.test:9200"
MODEL = "fake-hashing-16"
DIM = 16
NDJSON = "x-ndjson"


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


class HashingEmbeddings(Embeddings):
    """A deterministic stand-in for a sentence embedder, named for what it is: each word is hashed
    to a signed bucket of a 16-dim vector, then the vector is unit-normalized, so texts sharing
    words are similar and the exact floats are reproducible across runs."""

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for word in text.lower().split():
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            sign = 1.0 if digest[1] & 1 else -1.0
            vector[digest[0] % self.dim] += sign
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


# --- the recorded-response transport ---------------------------------------------------------


@dataclass
class Exchange:
    """One scripted request and the answer to give: a recorded body, or a transport error."""

    method: str
    path: str
    status: int = 200
    body: Any = None
    error: Exception | None = None


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, list[str]]
    headers: HttpHeaders
    body: Any
    request_timeout: Any


class FakeCluster:
    """The script of a conversation with Elasticsearch and the record of what the client sent.

    ``node_class()`` is handed to ``Elasticsearch(node_class=...)``; the transport builds its node
    from it, so every layer above the socket (serialization, compatibility headers, the product
    check, error mapping, retries) is the real client's.
    """

    def __init__(self) -> None:
        self.script: deque[Exchange] = deque()
        self.requests: list[Request] = []

    def expect(
        self,
        method: str,
        path: str,
        fixture: str | None = None,
        *,
        status: int = 200,
        error: Exception | None = None,
    ) -> None:
        body = recorded(fixture) if fixture else None
        self.script.append(Exchange(method, path, status, body, error))

    def node_class(self) -> type[BaseNode]:
        cluster = self

        class RecordedNode(BaseNode):
            _CLIENT_META_HTTP_CLIENT = ("rec", "1.0")

            def perform_request(
                self,
                method: str,
                target: str,
                body: bytes | None = None,
                headers: HttpHeaders | None = None,
                request_timeout: Any = DEFAULT,
            ) -> NodeApiResponse:
                return cluster.answer(
                    self.config, method, target, body, headers or HttpHeaders(), request_timeout
                )

        return RecordedNode

    def answer(
        self,
        config: NodeConfig,
        method: str,
        target: str,
        body: bytes | None,
        headers: HttpHeaders,
        request_timeout: Any,
    ) -> NodeApiResponse:
        assert self.script, f"unexpected request {method} {target}"
        exchange = self.script.popleft()
        path, _, query = target.partition("?")
        assert (method, path) == (exchange.method, exchange.path), (
            f"expected {exchange.method} {exchange.path}, client sent {method} {target}"
        )
        parsed: Any = None
        if body:
            text = body.decode("utf-8")
            if NDJSON in (headers.get("content-type") or ""):
                assert text.endswith("\n"), "bulk bodies must end with a newline"
                parsed = [json.loads(line) for line in text.splitlines()]
            else:
                parsed = json.loads(text)
        self.requests.append(
            Request(method, path, parse_qs(query), headers, parsed, request_timeout)
        )
        if exchange.error is not None:
            raise exchange.error
        response_headers = HttpHeaders(
            {
                "content-type": "application/vnd.elasticsearch+json;compatible-with=9",
                "x-elastic-product": "Elasticsearch",
            }
        )
        meta = ApiResponseMeta(
            status=exchange.status,
            http_version="1.1",
            headers=response_headers,
            duration=0.001,
            node=config,
        )
        payload = b"" if exchange.body is None else json.dumps(exchange.body).encode()
        return NodeApiResponse(meta, payload)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    fake = FakeCluster()
    yield fake
    assert not fake.script, f"requests never sent: {[(e.method, e.path) for e in fake.script]}"


def client_for(cluster: FakeCluster, **kwargs: Any) -> Elasticsearch:
    kwargs.setdefault("max_retries", 0)
    return Elasticsearch(URL, node_class=cluster.node_class(), **kwargs)


@pytest.fixture
def store(cluster: FakeCluster) -> ElasticsearchStore:
    return ElasticsearchStore(client_for(cluster), INDEX, timeout_s=2.5, bulk_retry_backoff_s=0)


PASSAGES = [
    Passage(
        "p1", "Solar eclipse", "A solar eclipse occurs when the Moon passes between.", {"n": 0}
    ),
    Passage("p2", "Solar power", "Solar power is energy from sunlight.", {"n": 3}),
    Passage("p3", "Lunar eclipse", "A lunar eclipse occurs in the Earth's shadow.", {"n": 1}),
]


# --- index lifecycle ------------------------------------------------------------------------


def test_create_puts_mapping_with_model_and_dim_in_meta(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("PUT", f"/{INDEX}", "create_index")
    info = store.create(DIM, MODEL)

    assert (info.embedding_model, info.dim) == (MODEL, DIM)
    mappings = cluster.requests[0].body["mappings"]
    assert mappings["_meta"]["hoptree"] == {
        "schema_version": 1,
        "embedding_model": MODEL,
        "dim": DIM,
        "passage_text": "title+text",
    }
    props = mappings["properties"]
    assert props["id"] == {"type": "keyword"}
    assert props["title"]["type"] == "text"
    assert props["title"]["fields"]["keyword"]["type"] == "keyword"
    assert props["text"] == {"type": "text"}
    assert props["metadata"] == {"type": "object", "enabled": False}
    assert props["embedding"] == {
        "type": "dense_vector",
        "dims": DIM,
        "index": True,
        "similarity": "cosine",
    }
    assert mappings["dynamic"] == "strict"


def test_create_accepts_existing_index_of_same_model(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("PUT", f"/{INDEX}", "create_index_exists_400", status=400)
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    info = store.create(DIM, MODEL)
    assert (info.index, info.embedding_model, info.dim) == (INDEX, MODEL, DIM)


def test_create_refuses_existing_index_of_another_model(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("PUT", f"/{INDEX}", "create_index_exists_400", status=400)
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    with pytest.raises(EmbeddingModelMismatch) as caught:
        store.create(384, "all-MiniLM-L6-v2")
    message = str(caught.value)
    assert MODEL in message and "all-MiniLM-L6-v2" in message
    assert INDEX in message and URL in message


def test_check_rejects_other_model_and_other_dim(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    assert store.check(MODEL).dim == DIM
    with pytest.raises(EmbeddingModelMismatch, match="not other-model"):
        store.check("other-model")
    with pytest.raises(EmbeddingModelMismatch, match="dim 32"):
        store.check(MODEL, dim=32)


def test_index_without_hoptree_meta_is_refused(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping_foreign")
    with pytest.raises(RetrievalError, match="not created by hoptree"):
        store.info()


def test_missing_index_names_index_and_url(cluster: FakeCluster, store: ElasticsearchStore) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "index_not_found_404", status=404)
    with pytest.raises(RetrievalError) as caught:
        store.info()
    assert f"index {INDEX!r} does not exist at {URL}" in str(caught.value)


# --- writing --------------------------------------------------------------------------------


def test_add_bulk_indexes_batches_by_id_then_refreshes_once(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("PUT", "/_bulk", "bulk_two_created")
    cluster.expect("PUT", "/_bulk", "bulk_one_created")
    cluster.expect("POST", f"/{INDEX}/_refresh", "refresh")
    embeddings = HashingEmbeddings()
    seen: list[int] = []

    added = store.add(iter(PASSAGES), embeddings, batch_size=2, progress=seen.append)

    assert added == 3
    assert seen == [2, 3]
    assert embeddings.calls == [
        [passage_embedding_text(PASSAGES[0]), passage_embedding_text(PASSAGES[1])],
        [passage_embedding_text(PASSAGES[2])],
    ]
    first, second = cluster.requests[1], cluster.requests[2]
    assert "x-ndjson" in first.headers["content-type"]
    assert [line for line in first.body if "index" in line] == [
        {"index": {"_index": INDEX, "_id": "p1"}},
        {"index": {"_index": INDEX, "_id": "p2"}},
    ]
    doc = first.body[1]
    assert doc["id"] == "p1" and doc["title"] == "Solar eclipse"
    assert doc["text"] == PASSAGES[0].text and doc["metadata"] == {"n": 0}
    assert doc["embedding"] == pytest.approx(
        embeddings.embed_query(passage_embedding_text(PASSAGES[0]))
    )
    assert len(doc["embedding"]) == DIM
    assert second.body[0] == {"index": {"_index": INDEX, "_id": "p3"}}
    assert len(second.body) == 2


def test_add_resends_only_items_rejected_as_overloaded(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("PUT", "/_bulk", "bulk_one_rejected_429")
    cluster.expect("PUT", "/_bulk", "bulk_one_updated")
    cluster.expect("POST", f"/{INDEX}/_refresh", "refresh")

    assert store.add(PASSAGES[:2], HashingEmbeddings()) == 2
    resent = cluster.requests[2].body
    assert resent[0] == {"index": {"_index": INDEX, "_id": "p2"}}
    assert len(resent) == 2


def test_add_fails_with_the_document_error(cluster: FakeCluster, store: ElasticsearchStore) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("PUT", "/_bulk", "bulk_document_error")
    with pytest.raises(RetrievalError) as caught:
        store.add(PASSAGES[:2], HashingEmbeddings())
    message = str(caught.value)
    assert "rejected 1 of 2 documents" in message
    assert "p2: document_parsing_exception" in message and "zero magnitude" in message


def test_add_refuses_vectors_of_the_wrong_dim_before_sending(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    with pytest.raises(EmbeddingModelMismatch, match="dim 8"):
        store.add(PASSAGES[:1], HashingEmbeddings(dim=8))


# --- reading --------------------------------------------------------------------------------


def test_len_counts_and_get_reads_source(cluster: FakeCluster, store: ElasticsearchStore) -> None:
    cluster.expect("POST", f"/{INDEX}/_count", "count")
    cluster.expect("GET", f"/{INDEX}/_doc/p1", "get_found")
    cluster.expect("GET", f"/{INDEX}/_doc/nope", "get_missing_404", status=404)

    assert len(store) == 3
    passage = store.get("p1")
    assert passage == Passage("p1", "Solar eclipse", passage.text if passage else "")
    assert passage is not None and passage.metadata == {"source": "wiki", "para": 0}
    assert cluster.requests[1].params["_source_excludes"] == ["embedding"]
    assert store.get("nope") is None


def test_get_on_a_missing_index_is_an_error_not_none(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_doc/p1", "index_not_found_404", status=404)
    with pytest.raises(RetrievalError, match="does not exist"):
        store.get("p1")


# --- sparse ---------------------------------------------------------------------------------


def sparse(store: ElasticsearchStore) -> ElasticsearchSparseRetriever:
    return ElasticsearchSparseRetriever(store)


def test_sparse_sends_rendered_lucene_through_query_string(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_sparse")
    retriever = sparse(store)

    hits = retriever.retrieve("solar -eclipse", k=5)

    body = cluster.requests[0].body
    query_string = body["query"]["query_string"]
    assert query_string["query"] == render_query_string(parse_lucene("solar -eclipse").query)
    assert "-eclipse" in query_string["query"] and "solar" in query_string["query"]
    assert query_string["fields"] == ["title", "text"]
    assert "match" not in body["query"] and "multi_match" not in body["query"]
    assert body["size"] == 5
    assert body["_source"] == {"excludes": ["embedding"]}
    assert [(h.id, h.title, h.retriever) for h in hits] == [("p2", "Solar power", "sparse")]
    assert hits[0].score == pytest.approx(1.3862942)
    assert hits[0].passage.metadata == {"source": "wiki", "para": 3}
    assert isinstance(retriever, Retriever)


def test_sparse_retrieve_query_renders_the_model(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_sparse")
    query = parse_lucene('"solar power"^2 +sunlight').query
    hits = sparse(store).retrieve_query(query, k=3)
    sent = cluster.requests[0].body["query"]["query_string"]["query"]
    assert sent == render_query_string(query)
    assert '"solar power"' in sent and "^2" in sent and "+sunlight" in sent
    assert [h.id for h in hits] == ["p2"]


def test_sparse_escapes_reserved_characters_the_llm_wrote(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_empty")
    sparse(store).retrieve("AC/DC album: Back in Black", k=3)
    sent = cluster.requests[0].body["query"]["query_string"]["query"]
    assert "AC\\/DC" in sent
    assert "album:" not in sent  # a bare colon would make "album" a field name


def test_sparse_falls_back_to_plain_terms_when_es_cannot_parse(
    cluster: FakeCluster, store: ElasticsearchStore, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_parse_error_400", status=400)
    cluster.expect("POST", f"/{INDEX}/_search", "search_plain_terms")
    query = parse_lucene("solar +eclipse -lunar").query

    with caplog.at_level(logging.WARNING, logger="searchers.elasticsearch_retrievers"):
        result = sparse(store).search(query, k=4)

    assert result.fallback is True
    assert "Failed to parse query" in result.fallback_reason or "parse" in result.fallback_reason
    fallback = cluster.requests[1].body["query"]["query_string"]
    assert fallback["query"] == "solar eclipse"  # no operators, the excluded word dropped
    assert fallback["fields"] == ["title", "text"]
    assert result.query_string == "solar eclipse"
    assert [h.id for h in result.hits] == ["p1", "p2"]
    assert any("could not parse" in r.getMessage() for r in caplog.records)
    assert any("could not parse" in note for note in result.repairs)


def test_sparse_other_bad_requests_are_errors_not_fallbacks(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_illegal_argument_400", status=400)
    with pytest.raises(RetrievalError) as caught:
        sparse(store).retrieve("solar", k=3)
    assert "HTTP 400" in str(caught.value) and "Result window is too large" in str(caught.value)
    assert INDEX in str(caught.value)


def test_sparse_partial_shard_failure_still_returns_hits(
    cluster: FakeCluster, store: ElasticsearchStore, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_partial_shards")
    with caplog.at_level(logging.WARNING, logger="searchers.elasticsearch_store"):
        hits = sparse(store).retrieve("solar", k=3)
    assert [h.id for h in hits] == ["p2"]
    assert any("1 of 2 shards failed" in r.getMessage() for r in caplog.records)


def test_sparse_sends_nothing_for_queries_that_cannot_match(store: ElasticsearchStore) -> None:
    retriever = sparse(store)
    assert retriever.retrieve("", k=5) == []
    assert retriever.retrieve("-eclipse", k=5) == []
    assert retriever.retrieve("solar", k=0) == []


# --- dense ----------------------------------------------------------------------------------


def test_dense_runs_knn_with_the_query_embedding(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("POST", f"/{INDEX}/_search", "search_dense")
    embeddings = HashingEmbeddings()
    retriever = ElasticsearchDenseRetriever(store, embeddings, embedding_model=MODEL)

    hits = retriever.retrieve("when does a solar eclipse occur", k=3)

    body = cluster.requests[1].body
    knn = body["knn"]
    assert knn["field"] == "embedding"
    assert knn["k"] == 3 and knn["num_candidates"] == 100
    assert len(knn["query_vector"]) == DIM
    assert knn["query_vector"] == embeddings.embed_query("when does a solar eclipse occur")
    assert body["size"] == 3 and body["_source"] == {"excludes": ["embedding"]}
    assert "query" not in body
    assert [(h.id, h.retriever) for h in hits] == [
        ("p1", "dense"),
        ("p3", "dense"),
        ("p2", "dense"),
    ]
    # Elasticsearch's cosine score (1 + cos) / 2, mapped back to the cosine FAISS would report
    assert [h.score for h in hits] == pytest.approx([0.9024, 0.625, 0.0])
    assert isinstance(retriever, Retriever)


def test_dense_num_candidates_grows_with_k_and_is_capped(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("POST", f"/{INDEX}/_search", "search_empty")
    cluster.expect("POST", f"/{INDEX}/_search", "search_empty")
    retriever = ElasticsearchDenseRetriever(store, HashingEmbeddings(), embedding_model=MODEL)
    retriever.retrieve("solar", k=50)
    retriever.retrieve("solar", k=50_000)
    assert cluster.requests[1].body["knn"]["num_candidates"] == 500
    capped = cluster.requests[2].body["knn"]
    assert capped["k"] == 10_000 and capped["num_candidates"] == 10_000


def test_dense_refuses_an_index_built_with_another_model(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    with pytest.raises(EmbeddingModelMismatch) as caught:
        ElasticsearchDenseRetriever(store, HashingEmbeddings(), embedding_model="bge-small")
    assert "built with embedding model fake-hashing-16 (dim 16), not bge-small" in str(caught.value)


def test_dense_refuses_a_query_vector_of_the_wrong_dim(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    retriever = ElasticsearchDenseRetriever(store, HashingEmbeddings(dim=8), embedding_model=MODEL)
    with pytest.raises(EmbeddingModelMismatch, match="dim 8"):
        retriever.retrieve("solar", k=3)


# --- failures and timeouts ------------------------------------------------------------------


def test_every_request_carries_the_store_timeout(cluster: FakeCluster) -> None:
    client = client_for(cluster)  # the injected client itself sets no timeout
    store = ElasticsearchStore(client, INDEX, timeout_s=2.5)
    cluster.expect("POST", f"/{INDEX}/_count", "count")
    cluster.expect("POST", f"/{INDEX}/_search", "search_sparse")
    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("POST", f"/{INDEX}/_search", "search_dense")
    len(store)
    sparse(store).retrieve("solar", k=1)
    ElasticsearchDenseRetriever(store, HashingEmbeddings(), embedding_model=MODEL).retrieve("x")
    assert [r.request_timeout for r in cluster.requests] == [2.5] * 4


def test_timeout_becomes_retrieval_error_naming_index_and_url(cluster: FakeCluster) -> None:
    store = ElasticsearchStore(client_for(cluster), INDEX, timeout_s=2.5)
    cluster.expect(
        "POST", f"/{INDEX}/_search", error=ConnectionTimeout("Connection timed out during request")
    )
    with pytest.raises(RetrievalError) as caught:
        sparse(store).retrieve("solar", k=3)
    assert str(caught.value) == (
        f"Elasticsearch sparse search on index {INDEX!r} at {URL} timed out after 2.5s"
    )


def test_connection_errors_are_retried_then_reported(cluster: FakeCluster) -> None:
    store = ElasticsearchStore(client_for(cluster, max_retries=2), INDEX)
    for _ in range(3):
        cluster.expect("POST", f"/{INDEX}/_count", error=ConnectionError("Connection refused"))
    with pytest.raises(RetrievalError) as caught:
        len(store)
    assert f"cannot reach Elasticsearch at {URL}" in str(caught.value)
    assert "Connection refused" in str(caught.value)


def test_authentication_failure_says_to_check_credentials(cluster: FakeCluster) -> None:
    store = ElasticsearchStore(client_for(cluster), INDEX)
    cluster.expect("POST", f"/{INDEX}/_count", "security_exception_401", status=401)
    with pytest.raises(RetrievalError, match=r"HTTP 401.*check the API key"):
        len(store)


def test_store_rejects_invalid_index_names(cluster: FakeCluster) -> None:
    for bad in ("", "Upper", "_hidden"):
        with pytest.raises(ValueError, match="invalid Elasticsearch index name"):
            ElasticsearchStore(client_for(cluster), bad)


# --- real sockets on 127.0.0.1 ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_connect_to_a_closed_port_is_a_clear_retrieval_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    store = ElasticsearchStore(connect(url, timeout_s=2, max_retries=0), INDEX)
    with pytest.raises(RetrievalError) as caught:
        len(store)
    assert f"cannot reach Elasticsearch at {url}" in str(caught.value)


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        store = ElasticsearchStore(connect(url, max_retries=0), INDEX, timeout_s=0.3)
        with pytest.raises(RetrievalError, match=r"timed out after 0\.3s"):
            sparse(store).retrieve("solar", k=3)


class _Recorder(BaseHTTPRequestHandler):
    """A tiny HTTP server posing as Elasticsearch (or not) to see what goes over the wire."""

    seen: list[dict[str, str]]
    product: str | None

    def do_POST(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        payload = json.dumps(recorded("count")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.product:
            self.send_header("X-Elastic-Product", self.product)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Handler", (_Recorder,), {"seen": [], "product": "Elasticsearch"})
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as base:
        yield base, handler


def test_connect_sends_api_key_and_the_default_timeout_works(
    http_server: tuple[str, type[_Recorder]],
) -> None:
    url, handler = http_server
    store = ElasticsearchStore(connect(url, api_key="c2VjcmV0"), INDEX)
    assert len(store) == 3
    assert handler.seen[0]["authorization"] == "ApiKey c2VjcmV0"
    assert store.timeout_s == DEFAULT_TIMEOUT_S


def test_connect_sends_basic_auth(http_server: tuple[str, type[_Recorder]]) -> None:
    url, handler = http_server
    assert len(ElasticsearchStore(connect(url, basic_auth=("elastic", "pw")), INDEX)) == 3
    assert handler.seen[0]["authorization"] == "Basic ZWxhc3RpYzpwdw=="


def test_a_server_that_is_not_elasticsearch_is_reported(
    http_server: tuple[str, type[_Recorder]],
) -> None:
    url, handler = http_server
    handler.product = None
    with pytest.raises(RetrievalError, match="not Elasticsearch"):
        len(ElasticsearchStore(connect(url), INDEX))


def test_connect_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="empty"):
        connect(" ")
    with pytest.raises(ValueError, match="invalid Elasticsearch URL 'http://localhost'"):
        connect("http://localhost")
    with pytest.raises(ValueError, match="timeout_s"):
        connect("http://localhost:9200", timeout_s=0)


def test_hits_serialize_with_the_cli_field_names(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    cluster.expect("POST", f"/{INDEX}/_search", "search_sparse")
    (hit,) = sparse(store).retrieve("solar", k=1)
    assert isinstance(hit, Hit)
    assert {"id", "title", "score", "text"} <= set(hit.to_json())


def test_delete_tolerates_a_missing_index(cluster: FakeCluster, store: ElasticsearchStore) -> None:
    cluster.expect("DELETE", f"/{INDEX}", "delete_index")
    store.delete()
    assert cluster.requests[0].params["ignore_unavailable"] == ["true"]


def test_sparse_and_dense_fuse_in_the_generic_hybrid(
    cluster: FakeCluster, store: ElasticsearchStore
) -> None:
    from searchers.hybrid import HybridRetriever

    cluster.expect("GET", f"/{INDEX}/_mapping", "mapping")
    cluster.expect("POST", f"/{INDEX}/_search", "search_sparse")
    cluster.expect("POST", f"/{INDEX}/_search", "search_dense")
    dense = ElasticsearchDenseRetriever(store, HashingEmbeddings(), embedding_model=MODEL)
    hybrid = HybridRetriever([sparse(store), dense])

    hits = hybrid.retrieve("solar power", k=3)

    assert cluster.requests[1].body["size"] == 6  # the hybrid asks each side for 2k
    assert cluster.requests[2].body["knn"]["k"] == 6
    assert [h.id for h in hits] == ["p2", "p1", "p3"]  # p2 is ranked by both sides
    assert hits[0].passage.metadata["rrf_ranks"] == {"sparse": 1, "dense": 3}
