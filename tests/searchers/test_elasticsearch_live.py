"""The Elasticsearch backend against a real cluster, with the real embedding model.

Runs only when ``HOPTREE_ES_URL`` points at a cluster (``HOPTREE_ES_API_KEY`` if it is secured);
see the compose file in docs/documents.md for a local single node. Each run creates its own
uniquely named index and deletes it at the end, so it is safe against a shared cluster.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from searchers.elasticsearch_retrievers import (
    ElasticsearchDenseRetriever,
    ElasticsearchSparseRetriever,
)
from searchers.elasticsearch_store import (
    ElasticsearchStore,
    EmbeddingModelMismatch,
    connect,
)
from searchers.lucene import parse_lucene
from searchers.passages import Passage
from searchers.retrieval import RetrievalError

ES_URL = os.environ.get("HOPTREE_ES_URL", "").strip()
ES_API_KEY = os.environ.get("HOPTREE_ES_API_KEY", "").strip() or None

pytestmark = pytest.mark.skipif(
    not ES_URL, reason="HOPTREE_ES_URL not set: no Elasticsearch cluster"
)

PASSAGES = [
    Passage(
        "p1",
        "Solar eclipse",
        "A solar eclipse happens when the Moon passes between the Earth and the Sun, "
        "blocking the Sun's light for a few minutes.",
        {"source": "live-test", "n": 1},
    ),
    Passage(
        "p2",
        "Solar power",
        "Solar power turns sunlight into electricity with photovoltaic panels on rooftops.",
        {"source": "live-test", "n": 2},
    ),
    Passage(
        "p3",
        "Lunar eclipse",
        "A lunar eclipse happens when the Moon moves into the Earth's shadow at full moon.",
        {"source": "live-test", "n": 3},
    ),
    Passage(
        "p4",
        "Chess opening",
        "The Sicilian Defence is a chess opening that answers 1.e4 with c5.",
        {"source": "live-test", "n": 4},
    ),
    Passage(
        "p5",
        "AC/DC",
        "AC/DC are an Australian rock band; Back in Black is their best-selling album.",
        {"source": "live-test", "n": 5},
    ),
]


@pytest.fixture(scope="module")
def live_store(embeddings) -> Iterator[ElasticsearchStore]:
    client = connect(ES_URL, api_key=ES_API_KEY, timeout_s=30)
    store = ElasticsearchStore(client, f"hoptree-live-{uuid.uuid4().hex[:12]}", timeout_s=30)
    try:
        store.create(embeddings.dimension, embeddings.model_name)
        store.add(PASSAGES, embeddings, batch_size=2)
        yield store
    finally:
        store.delete()
        client.close()


def ids(hits) -> list[str]:
    return [h.id for h in hits]


def test_count_get_and_idempotent_add(live_store: ElasticsearchStore, embeddings) -> None:
    assert len(live_store) == len(PASSAGES)
    passage = live_store.get("p2")
    assert passage is not None
    assert (passage.title, passage.text) == (PASSAGES[1].title, PASSAGES[1].text)
    assert passage.metadata == {"source": "live-test", "n": 2}
    assert live_store.get("missing") is None
    live_store.add(PASSAGES[:2], embeddings)  # same ids: overwritten, not duplicated
    assert len(live_store) == len(PASSAGES)


def test_create_again_with_same_model_is_accepted_and_other_model_refused(
    live_store: ElasticsearchStore, embeddings
) -> None:
    info = live_store.create(embeddings.dimension, embeddings.model_name)
    assert info.embedding_model == embeddings.model_name
    with pytest.raises(EmbeddingModelMismatch):
        live_store.create(embeddings.dimension, "some-other-model")
    with pytest.raises(EmbeddingModelMismatch):
        ElasticsearchDenseRetriever(live_store, embeddings, embedding_model="some-other-model")


def test_sparse_honours_exclusion(live_store: ElasticsearchStore) -> None:
    retriever = ElasticsearchSparseRetriever(live_store)
    assert set(ids(retriever.retrieve("solar", k=5))) >= {"p1", "p2"}
    excluded = ids(retriever.retrieve("solar -eclipse", k=5))
    assert excluded == ["p2"]


def test_sparse_honours_required_phrase_field_and_boost(live_store: ElasticsearchStore) -> None:
    retriever = ElasticsearchSparseRetriever(live_store)
    assert ids(retriever.retrieve('"lunar eclipse"', k=5)) == ["p3"]
    assert ids(retriever.retrieve("eclipse +moon +shadow", k=5)) == ["p3"]
    assert ids(retriever.retrieve("title:power", k=5)) == ["p2"]
    boosted = ids(retriever.retrieve("eclipse lunar^5", k=5))
    assert boosted[0] == "p3"
    retriever_query = retriever.retrieve_query(parse_lucene("sicilian chess").query, k=5)
    assert ids(retriever_query) == ["p4"]


def test_sparse_survives_what_an_llm_writes(live_store: ElasticsearchStore) -> None:
    retriever = ElasticsearchSparseRetriever(live_store)
    for text in ("AC/DC album: Back in Black", "solar AND (eclipse", 'moon "shadow', "c5)^^"):
        result = retriever.search(text, k=5)
        assert isinstance(result.hits, list)
    assert ids(retriever.retrieve("AC/DC album: Back in Black", k=1)) == ["p5"]


def test_dense_finds_paraphrases(live_store: ElasticsearchStore, embeddings) -> None:
    retriever = ElasticsearchDenseRetriever(
        live_store, embeddings, embedding_model=embeddings.model_name
    )
    hits = retriever.retrieve("the moon blocks the light of the sun", k=3)
    assert hits[0].id == "p1"
    assert all(h.retriever == "dense" for h in hits)
    assert -1.0 <= hits[-1].score <= hits[0].score <= 1.0
    assert ids(retriever.retrieve("renewable electricity from panels", k=1)) == ["p2"]


def test_missing_index_is_a_clear_error() -> None:
    client = connect(ES_URL, api_key=ES_API_KEY, timeout_s=30)
    store = ElasticsearchStore(client, f"hoptree-missing-{uuid.uuid4().hex[:12]}")
    with pytest.raises(RetrievalError, match="does not exist"):
        len(store)
    client.close()
