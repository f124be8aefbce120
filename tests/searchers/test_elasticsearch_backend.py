"""The Elasticsearch backend without a cluster: the real ``elasticsearch`` client runs end to end,
only its HTTP node is replaced by ``RecordedNode``, which checks each request against a script and
answers with a response body recorded in ``tests/fixtures/elasticsearch`` (``tests/
elasticsearch_recorded.py``). Failure modes that need a socket (refused connection, a server that
never answers, credentials on the wire, a server that is not Elasticsearch) are
``tests/searchers/test_elasticsearch_connect.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from elastic_transport import (
    ConnectionError,
    ConnectionTimeout,
)

from searchers.dense_faiss import passage_embedding_text
from searchers.elasticsearch_retrievers import (
    ElasticsearchDenseRetriever,
    ElasticsearchSparseRetriever,
)
from searchers.elasticsearch_store import (
    ElasticsearchStore,
    EmbeddingModelMismatch,
)
from searchers.lucene import parse_lucene, render_query_string
from searchers.passages import Hit, Passage
from searchers.retrieval import RetrievalError, Retriever
from tests.elasticsearch_recorded import (
    DIM,
    INDEX,
    MODEL,
    URL,
    FakeCluster,
    HashingEmbeddings,
    client_for,
)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    fake = FakeCluster()
    yield fake
    assert not fake.script, f"requests never sent: {[(e.method, e.path) for e in fake.script]}"


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
