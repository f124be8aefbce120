"""Ingest and raw retrieval as the CLI (and later the server and evals) call them.

This is where settings meet the index machinery of ``searchers``: which embedding model, which
dense index kind, how big a chunk, where the index lives, and whether an Elasticsearch cluster
answers in place of tantivy and FAISS. ``searchers`` knows none of that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from agent.runtime.embeddings import BUNDLED_MODELS
from agent.settings import Settings
from searchers.corpus import select_sources
from searchers.dense_faiss import PassageText
from searchers.elasticsearch_retrievers import (
    ElasticsearchDenseRetriever,
    ElasticsearchSparseRetriever,
)
from searchers.elasticsearch_store import ElasticsearchStore, connect
from searchers.hybrid import HybridRetriever
from searchers.index_build import BuildReport, FailedSource, SourceSpec, build_index
from searchers.index_dir import RETRIEVER_KINDS, IndexDir
from searchers.index_generation import BuildProgress, DenseOptions
from searchers.jsonl import json_objects
from searchers.passages import Hit, Passage
from searchers.retrieval import Retriever

MAX_QUERY_LINES = 1_000_000

_STAGE_LABELS = {
    "read": "reading sources",
    "sparse": "sparse index",
    "dense": "embedding",
}

log = logging.getLogger(__name__)


class QueryFileError(ValueError):
    """A batch query file that cannot be used; the message names the line."""


def canonical_model_name(name: str) -> str:
    """One name per model, so "sentence-transformers/all-MiniLM-L6-v2" and "all-MiniLM-L6-v2"
    (the same bundled weights) do not count as a model change; local folders by absolute path."""
    if name in BUNDLED_MODELS:
        return name.removeprefix("sentence-transformers/")
    return str(Path(name).expanduser().resolve())


# --------------------------------------------------------------------------- Elasticsearch
# The backend when ``HOPTREE_ES__URL`` is set. The local index directory stays the source of
# truth (manifest, passage store); `index build` mirrors its passages into the cluster, and
# `retrieve`/`search` then ask the cluster instead of tantivy/FAISS. One place decides this so
# every command agrees on which backend answers.


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


def _embeddings(settings: Settings) -> Embeddings:
    # Built here, not through Runtime, so indexing never imports the chat stack; the model
    # itself loads on the first embedding call, so a no-op rebuild never pays for it.
    from agent.runtime.embeddings import make_embeddings

    return make_embeddings(settings.embeddings, settings.models_dir)


@contextmanager
def build_progress(enabled: bool | None = None) -> Iterator[BuildProgress]:
    """A bar per build stage on stderr, plain lines when stderr is not a terminal."""
    from agent.progress import stage_progress

    with stage_progress(enabled) as update:
        yield lambda stage, done, total: update(
            _STAGE_LABELS.get(stage, stage).strip(), done, total
        )


def build(
    settings: Settings,
    sources: Sequence[Path],
    index_dir: Path,
    *,
    fmt: str = "auto",
    rebuild: bool = False,
    embeddings: Embeddings | None = None,
    progress: BuildProgress | None = None,
    passage_text: PassageText = "title+text",
    remove: Sequence[Path] = (),
    sync: bool = False,
) -> BuildReport:
    """Ingest files and directories into ``index_dir`` (create, append, replace changed files,
    or rebuild). ``passage_text``: what a new index's vectors embed (an existing index keeps its
    own). ``remove``: recorded sources (files, or folders of them) to drop. ``sync``: the folders
    among ``sources`` are made to match the disk, so their indexed files that are gone (deleted,
    now hidden or ignored) leave the index too.

    The report names every file of a folder that was not read: ``failed`` (an unsupported type,
    a folder that cannot be listed, a file that could not be read: ``FailedSource`` lists the
    reasons) and ``skipped`` (stores, hidden, ignored, links to folders)."""
    selection = select_sources(sources)
    files = selection.files
    opts = settings.index
    embeddings = embeddings if embeddings is not None else _embeddings(settings)
    report = build_index(
        index_dir,
        [SourceSpec(path=f, format=fmt, named=f in selection.named) for f in files],
        embeddings=embeddings,
        embedding_model=canonical_model_name(settings.embeddings.model),
        dense=DenseOptions(
            kind=opts.dense_kind,
            hnsw_m=opts.hnsw_m,
            hnsw_ef_construction=opts.hnsw_ef_construction,
            hnsw_ef_search=opts.hnsw_ef_search,
            batch_size=opts.embed_batch_size,
            passage_text=passage_text,
        ),
        max_tokens=opts.chunk_tokens,
        rebuild=rebuild,
        remove=remove,
        sync_roots=[s for s in sources if s.is_dir()] if sync else (),
        unlisted=[s.path for s in selection.skipped if s.not_read],
        progress=progress,
    )
    not_read = [s for s in selection.skipped if s.not_read]
    report.failed = [
        *(FailedSource(str(s.path), s.reason, s.detail) for s in not_read),
        *report.failed,
    ]
    report.skipped = [s.to_json() for s in selection.skipped if not s.not_read]
    if es_enabled(settings):
        # the cluster mirrors the committed passage store; ids make the re-send idempotent
        index = IndexDir.open(index_dir)
        passages = list(index.passages().values())
        sent = mirror_passages(
            settings,
            passages,
            embeddings,
            dimension=index.embedding_dimension,
            model=index.embedding_model,
            progress=(lambda done: progress("elasticsearch", done, len(passages)))
            if progress
            else None,
        )
        log.info("mirrored %d passages into Elasticsearch index %s", sent, settings.es.index)
        if report.removed:
            log.warning(
                "%d passage(s) left the index directory but stay in Elasticsearch index %s: "
                "the mirror only adds; recreate the cluster index to drop them",
                report.removed,
                settings.es.index,
            )
    return report


def remove_sources(
    settings: Settings,
    paths: Sequence[Path],
    index_dir: Path,
    *,
    embeddings: Embeddings | None = None,
    progress: BuildProgress | None = None,
) -> BuildReport:
    """Drop the recorded sources at or under ``paths`` (the files may be gone already) with
    their passages, in one new generation; ``UnknownSourceError`` when a path is no source.
    The index must exist: a removal never creates one."""
    IndexDir.open(index_dir)
    return build(
        settings,
        [],
        index_dir,
        embeddings=embeddings,
        progress=progress,
        remove=[Path(p) for p in paths],
    )


def open_retriever(
    settings: Settings,
    index_dir: Path,
    kind: str,
    *,
    embeddings: Embeddings | None = None,
) -> Retriever:
    """The raw retriever ``kind`` over ``index_dir``; the embedding model is checked against
    the index before it is loaded, so a mismatch fails in milliseconds."""
    if kind not in RETRIEVER_KINDS:
        raise ValueError(f"unknown retriever {kind!r}; expected {', '.join(RETRIEVER_KINDS)}")
    if es_enabled(settings):
        model = canonical_model_name(settings.embeddings.model)
        emb = embeddings if embeddings is not None else _embeddings(settings)
        return es_retrievers(settings, emb, model)[kind]
    index = IndexDir.open(index_dir)
    if kind == "sparse":
        return index.sparse()
    model = canonical_model_name(settings.embeddings.model)
    index.check_embedding_model(model)
    return index.retriever(
        kind,
        embeddings=embeddings if embeddings is not None else _embeddings(settings),
        model=model,
        rrf_k=settings.index.rrf_k,
        depth=settings.index.hybrid_depth or None,
    )


@dataclass(frozen=True)
class BatchQuery:
    id: str
    query: str


def read_queries(path: Path) -> list[BatchQuery]:
    """All queries of a batch file, validated before any is run, so a bad line 900 fails the
    batch at once instead of after 899 results. ``question`` is accepted for ``query`` so the
    evaluation files can be fed in as they are; a missing id becomes the line number."""
    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise QueryFileError(f"cannot read queries from {path}: {exc.strerror}") from exc
    queries: list[BatchQuery] = []
    with fh:
        for lineno, record in json_objects(
            fh,
            path,
            error=QueryFileError,
            expected='expected an object {"id", "query"}',
            max_lines=MAX_QUERY_LINES,
        ):
            query = record.get("query", record.get("question"))
            if not isinstance(query, str) or not query.strip():
                raise QueryFileError(f"{path}:{lineno}: missing or empty 'query'")
            raw_id = record.get("id", lineno)
            if not isinstance(raw_id, str | int):
                raise QueryFileError(f"{path}:{lineno}: 'id' must be a string or an integer")
            queries.append(BatchQuery(id=str(raw_id), query=query))
    return queries


def run_batch(
    retriever: Retriever,
    queries: Sequence[BatchQuery],
    k: int,
    emit: Callable[[dict[str, Any]], None],
) -> None:
    """One result per query, in input order, emitted as soon as it is ready."""
    for q in queries:
        hits = retriever.retrieve(q.query, k)
        emit({"id": q.id, "query": q.query, "hits": [h.to_json() for h in hits]})


def hits_json(query: str, retriever: str, k: int, hits: Sequence[Hit]) -> dict[str, Any]:
    return {"query": query, "retriever": retriever, "k": k, "hits": [h.to_json() for h in hits]}
