"""Elasticsearch as the index backend, when ``HOPTREE_ES__URL`` is set.

The local index directory stays the source of truth (manifest, passage store); `index build`
mirrors its passages into the cluster, and `retrieve`/`search` then ask the cluster instead of
tantivy/FAISS. One place decides this so every command agrees on which backend answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.embeddings import Embeddings

from agent.settings import Settings
from searchers.elasticsearch_retrievers import (
    ElasticsearchDenseRetriever,
    ElasticsearchSparseRetriever,
)
from searchers.elasticsearch_store import ElasticsearchStore, connect
from searchers.hybrid import HybridRetriever
from searchers.passages import Passage


def es_enabled(settings: Settings) -> bool:
    return bool(settings.es.url.strip())


def es_store(settings: Settings) -> ElasticsearchStore:
    cfg = settings.es
    basic = None
    if cfg.username and cfg.password is not None:
        basic = (cfg.username, cfg.password.get_secret_value())
    client = connect(
        cfg.url,
        api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
        basic_auth=basic,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
        verify_certs=cfg.verify_certs,
        ca_certs=str(cfg.ca_certs) if cfg.ca_certs else None,
    )
    return ElasticsearchStore(client, cfg.index, timeout_s=cfg.timeout_s)


def mirror_passages(
    settings: Settings,
    passages: Iterable[Passage],
    embeddings: Embeddings,
    *,
    dimension: int,
    model: str,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Create the cluster index if needed (refusing another embedding model) and add passages;
    ids make it idempotent, so re-running a build re-sends nothing new."""
    store = es_store(settings)
    store.create(dimension, model)
    return store.add(passages, embeddings, batch_size=settings.es.batch_size, progress=progress)


def es_retrievers(settings: Settings, embeddings: Embeddings, model: str) -> dict[str, Any]:
    store = es_store(settings)
    sparse = ElasticsearchSparseRetriever(store)
    dense = ElasticsearchDenseRetriever(store, embeddings, embedding_model=model)
    hybrid = HybridRetriever(
        [sparse, dense], rrf_k=settings.index.rrf_k, depth=settings.index.hybrid_depth or None
    )
    return {"sparse": sparse, "dense": dense, "hybrid": hybrid}
