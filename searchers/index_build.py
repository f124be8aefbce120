"""Building an index directory: read sources, write a new generation beside the live one,
then commit it by replacing the manifest (``searchers.index_dir`` describes the layout and why
generations make a crashed build harmless). Ingestion, not search: a searcher only reads what
this wrote, through ``IndexDir``."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from searchers.chunking import DEFAULT_MAX_TOKENS
from searchers.corpus import CorpusError, file_sha256, read_passages, resolve_format
from searchers.dense_faiss import DenseConfig, DenseKind, FaissDenseIndex, PassageText
from searchers.documents import DocumentError
from searchers.index_dir import (
    DENSE_DIR,
    FORMAT_NAME,
    FORMAT_VERSION,
    GENERATION_PREFIX,
    LOCK_FILE,
    MANIFEST,
    MAX_GENERATION_DIRS,
    PASSAGES_FILE,
    SPARSE_DIR,
    IndexDirError,
    IndexLockedError,
    PassageStore,
    check_embedding_model,
    file_entries,
    now_iso,
    read_manifest,
    write_json_atomic,
)
from searchers.locks import LockBusyError, exclusive_lock
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex

# (stage, done, total): stages are "read" (files), "sparse" and "dense" (passages). A callback may
# raise to abort the build; the live index is untouched either way.
BuildProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SourceSpec:
    path: Path
    format: str = "auto"


@dataclass
class SourceReport:
    path: str
    name: str
    format: str
    sha256: str
    size: int
    passages: int  # read from the file (after in-file dedupe)
    added: int  # new to the index
    ingested_at: str = field(default_factory=now_iso)


@dataclass(frozen=True)
class FailedSource:
    """A file that was not read, and why: ``reason`` is ``unsupported`` (no reader takes its
    type), ``corrupt``, ``encrypted`` or ``no-text`` (a PDF without a text layer); ``detail``
    says it for a person. The rest of the batch is read; the CLI exits 3."""

    path: str
    reason: str
    detail: str = ""


@dataclass
class BuildReport:
    path: str
    changed: bool
    added: int
    total: int
    generation: int
    sources: list[SourceReport]
    seconds: float = 0.0
    # files not read (the caller adds a folder's unsupported files to those that failed here)
    failed: list[FailedSource] = field(default_factory=list)
    # what a folder held that is never a source: index and tree stores, hidden, .hoptreeignore'd
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DenseOptions:
    kind: DenseKind = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 256
    batch_size: int = 256
    # what a passage's vector embeds (a new index only; a live one keeps its recorded choice)
    passage_text: PassageText = "title+text"


@contextlib.contextmanager
def _build_lock(path: Path, timeout_s: float) -> Iterator[None]:
    """DIR/.lock, held for the whole build; a second build waits ``timeout_s``, then is
    refused with the holder's pid."""
    try:
        with exclusive_lock(path / LOCK_FILE, timeout_s=timeout_s):
            yield
    except LockBusyError as exc:
        raise IndexLockedError(
            f"another build (pid {exc.holder}) is writing {path}; wait for it to finish"
        ) from None


def _generation_dirs(path: Path) -> list[Path]:
    found = []
    for i, child in enumerate(path.iterdir()):
        if i > MAX_GENERATION_DIRS:
            break
        if child.is_dir() and child.name.startswith(GENERATION_PREFIX):
            found.append(child)
    return found


def _check_target(path: Path) -> None:
    """Refuse to turn an unrelated non-empty directory into an index."""
    if (path / MANIFEST).exists():
        return
    allowed = {LOCK_FILE, f".{MANIFEST}.tmp"}
    strangers = [
        p.name
        for p in path.iterdir()
        if p.name not in allowed and not p.name.startswith(GENERATION_PREFIX)
    ]
    if strangers:
        raise IndexDirError(
            f"{path} is not empty and holds no {MANIFEST} "
            f"(found {', '.join(sorted(strangers)[:5])}); choose an empty or new directory"
        )


def embedding_dimension(embeddings: Embeddings) -> int:
    dim = getattr(embeddings, "dimension", None)
    if isinstance(dim, int) and dim > 0:
        return dim
    return len(embeddings.embed_query("dimension probe"))


def _backends_entry(old: dict[str, Any] | None, embeddings: Embeddings) -> dict[str, Any]:
    """``{"backends": [...]}``: every embedding backend whose vectors are in the index (an
    append may use another backend than the first build; they are interchangeable within the
    tolerance measured in benchmarks/results/embeddings.md, but the index says so)."""
    backends = set((old or {}).get("embedding", {}).get("backends", []))
    backend = getattr(embeddings, "backend", None)
    if isinstance(backend, str):
        backends.add(backend)
    return {"backends": sorted(backends)} if backends else {}


def build_index(
    path: Path,
    sources: Sequence[SourceSpec],
    *,
    embeddings: Embeddings,
    embedding_model: str,
    dense: DenseOptions | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    rebuild: bool = False,
    progress: BuildProgress | None = None,
    lock_timeout_s: float = 0.0,
) -> BuildReport:
    """Ingest ``sources`` into the index at ``path``: create, append, or (``rebuild``) replace.

    Idempotent by passage id: passages already indexed are skipped, and when nothing is new no
    generation is written (only the manifest's source list, if a new file brought nothing new).
    """
    started = time.monotonic()
    path = Path(path)
    report_progress: BuildProgress = progress or (lambda stage, done, total: None)
    if path.exists() and not path.is_dir():
        raise IndexDirError(f"{path} is a file, not an index directory")
    path.mkdir(parents=True, exist_ok=True)
    with _build_lock(path, lock_timeout_s):
        _check_target(path)
        old = None if not (path / MANIFEST).exists() else read_manifest(path)
        if old is not None and not rebuild:
            check_embedding_model(old, embedding_model, None, path)
        live = path / old["data_dir"] if old is not None else None
        for stale in _generation_dirs(path):
            if stale != live:
                shutil.rmtree(stale, ignore_errors=True)  # debris of a crashed build

        base = live if (live is not None and not rebuild) else None
        store = PassageStore.load(base / PASSAGES_FILE) if base is not None else PassageStore()
        new, reports, failed = _read_new(sources, set(store), max_tokens, report_progress)
        previous_sources = [] if (old is None or rebuild) else list(old.get("sources", []))
        merged_sources, sources_changed = _merge_sources(previous_sources, reports)

        if old is not None and base is not None and not new:
            if sources_changed:
                manifest = {**old, "sources": merged_sources, "updated_at": now_iso()}
                write_json_atomic(path / MANIFEST, manifest)
            return BuildReport(
                path=str(path),
                changed=sources_changed,
                added=0,
                total=int(old["passages"]),
                generation=int(old["generation"]),
                sources=reports,
                seconds=time.monotonic() - started,
                failed=failed,
            )

        generation = (int(old["generation"]) + 1) if old is not None else 1
        data = path / f"{GENERATION_PREFIX}{generation:06d}"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir()
        components = _write_generation(
            data, base, store, new, embeddings, dense or DenseOptions(), report_progress
        )
        now = now_iso()
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "generation": generation,
            "data_dir": data.name,
            "created_at": old["created_at"] if (old is not None and base is not None) else now,
            "updated_at": now,
            "embedding": {
                "model": embedding_model,
                "dimension": components["dense"]["dimension"],
                **_backends_entry(old if base is not None else None, embeddings),
            },
            "passages": len(store),
            "chunking": {"max_tokens": max_tokens},
            "components": components,
            "sources": merged_sources,
        }
        write_json_atomic(path / MANIFEST, manifest)  # the commit point
        if live is not None and live != data:
            shutil.rmtree(live, ignore_errors=True)
        return BuildReport(
            path=str(path),
            changed=True,
            added=len(new),
            total=len(store),
            generation=generation,
            sources=reports,
            seconds=time.monotonic() - started,
            failed=failed,
        )


def _read_new(
    sources: Sequence[SourceSpec],
    known: set[str],
    max_tokens: int,
    report_progress: BuildProgress,
) -> tuple[list[Passage], list[SourceReport], list[FailedSource]]:
    """Every passage of ``sources`` whose id is not in ``known`` (which grows), in source order,
    and the files that could not be read.

    All of it is read before anything is written, so a malformed line anywhere fails the build
    before it has touched the disk. A document that cannot be converted (corrupt, encrypted, no
    text layer, a text file that is not UTF-8) is a ``FailedSource`` instead: it is one file of
    a batch, and the others are still worth indexing.
    """
    new: list[Passage] = []
    reports: list[SourceReport] = []
    failed: list[FailedSource] = []
    for done, spec in enumerate(sources, start=1):
        source_path = Path(spec.path)
        try:
            fmt = resolve_format(source_path, spec.format)
            sha256 = file_sha256(source_path)
            # the whole file first: a file that fails half-way adds nothing
            passages = list(read_passages(source_path, fmt, max_tokens=max_tokens))
            size = source_path.stat().st_size
        except DocumentError as exc:
            failed.append(FailedSource(str(source_path), exc.reason, exc.detail))
            report_progress("read", done, len(sources))
            continue
        except OSError as exc:
            raise CorpusError(f"{source_path}: {exc}") from exc
        read = added = 0
        for passage in passages:
            read += 1
            if passage.id in known:
                continue
            known.add(passage.id)
            new.append(passage)
            added += 1
        reports.append(
            SourceReport(
                path=str(source_path.resolve()),
                name=source_path.name,
                format=fmt,
                sha256=sha256,
                size=size,
                passages=read,
                added=added,
            )
        )
        report_progress("read", done, len(sources))
    return new, reports, failed


def _write_generation(
    data: Path,
    base: Path | None,
    store: PassageStore,
    new: list[Passage],
    embeddings: Embeddings,
    options: DenseOptions,
    report_progress: BuildProgress,
) -> dict[str, Any]:
    """Fill the new generation ``data``: a copy of ``base`` (the live generation, None for a
    fresh index) plus ``new``. Returns the manifest's component entries. Never touches ``base``."""
    if base is not None:
        shutil.copyfile(base / PASSAGES_FILE, data / PASSAGES_FILE)
    store.path = data / PASSAGES_FILE
    for passage in new:
        store[passage.id] = passage

    if base is not None:
        shutil.copytree(base / SPARSE_DIR, data / SPARSE_DIR)
        sparse = TantivySparseIndex.open(data / SPARSE_DIR)
    else:
        sparse = TantivySparseIndex.create(data / SPARSE_DIR)
    sparse_done = 0

    def sparse_step(increment: int) -> None:  # tantivy reports increments, not totals
        nonlocal sparse_done
        sparse_done += increment
        report_progress("sparse", sparse_done, len(new))

    sparse.add(new, progress=sparse_step)

    if base is not None:  # the live index keeps its kind and parameters
        dense = FaissDenseIndex.load(base / DENSE_DIR, embeddings, store)
    else:
        config = DenseConfig(
            dimension=embedding_dimension(embeddings),
            kind=options.kind,
            hnsw_m=options.hnsw_m,
            hnsw_ef_construction=options.hnsw_ef_construction,
            hnsw_ef_search=options.hnsw_ef_search,
            passage_text=options.passage_text,
        )
        dense = FaissDenseIndex(config, embeddings, store)
    dense.add(
        new,
        progress=lambda n: report_progress("dense", n, len(new)),
        batch_size=options.batch_size,
    )
    store.flush()
    dense.save(data / DENSE_DIR)

    counts = {"passages": len(store), "sparse": len(sparse), "dense": len(dense)}
    if len(set(counts.values())) != 1:
        raise IndexDirError(f"inconsistent build, not committed: {counts}")
    return {
        "passages": {
            "path": PASSAGES_FILE,
            "count": len(store),
            "files": file_entries(data / PASSAGES_FILE),
        },
        "sparse": {
            "path": SPARSE_DIR,
            "backend": "tantivy",
            "count": len(sparse),
            "files": file_entries(data / SPARSE_DIR),
        },
        "dense": {
            "path": DENSE_DIR,
            "backend": "faiss",
            "metric": "inner_product",
            **asdict(dense.config),
            "count": len(dense),
            "files": file_entries(data / DENSE_DIR),
        },
    }


def _merge_sources(
    previous: list[dict[str, Any]], current: list[SourceReport]
) -> tuple[list[dict[str, Any]], bool]:
    """The manifest's source list after this build: one entry per file path, the latest
    checksum winning; whether anything differs from before."""
    merged = {entry["path"]: entry for entry in previous}
    changed = False
    for report in current:
        before = merged.get(report.path)
        if before is None or before.get("sha256") != report.sha256:
            merged[report.path] = asdict(report)
            changed = True
    return list(merged.values()), changed
