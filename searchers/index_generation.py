"""Writing one generation of an index directory: the passage store, the tantivy and FAISS
indexes (passages embedded in batches) and the owners map, in a ``gen-NNNNNN`` folder no reader
knows until the manifest names it. ``searchers.index_build`` decides what goes in (which sources,
which passages are new or dropped) and commits the generation by replacing the manifest;
``searchers.index_dir`` describes the layout and reads it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from searchers.corpus import file_sha256
from searchers.dense_faiss import DenseConfig, DenseKind, FaissDenseIndex, PassageText
from searchers.index_dir import (
    DENSE_DIR,
    GENERATION_PREFIX,
    MAX_GENERATION_DIRS,
    OWNERS_PREFIX,
    PASSAGES_FILE,
    SPARSE_DIR,
    IndexDirError,
    Owners,
    PassageStore,
    file_entries,
)
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex

# (stage, done, total): stages are "read" (files), "sparse" and "dense" (passages). A callback may
# raise to abort the build; the live index is untouched either way.
BuildProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class DenseOptions:
    kind: DenseKind = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 256
    batch_size: int = 256
    # what a passage's vector embeds (a new index only; a live one keeps its recorded choice)
    passage_text: PassageText = "title+text"


def generation_dirs(path: Path) -> list[Path]:
    """The generation folders of the index at ``path``: the live one and any a crashed build
    left behind."""
    found = []
    for i, child in enumerate(path.iterdir()):
        if i > MAX_GENERATION_DIRS:
            break
        if child.is_dir() and child.name.startswith(GENERATION_PREFIX):
            found.append(child)
    return found


def embedding_dimension(embeddings: Embeddings) -> int:
    """The length of the model's vectors: its ``dimension`` when it has one, else measured."""
    dim = getattr(embeddings, "dimension", None)
    if isinstance(dim, int) and dim > 0:
        return dim
    return len(embeddings.embed_query("dimension probe"))


def write_owners(data: Path, owners: Owners, old: dict[str, Any] | None) -> dict[str, Any]:
    """Write the owners map into generation ``data`` under a name no reader knows yet (the
    manifest that names it is the commit); its manifest entry."""
    serial = 1
    if old is not None and isinstance(old.get("owners"), dict):
        serial = int(old["owners"].get("serial", 0)) + 1
    name = f"{OWNERS_PREFIX}{serial:06d}.json"
    target = data / name
    with target.open("w", encoding="utf-8") as fh:
        json.dump(owners, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    return {"file": name, "serial": serial, "sources": len(owners), "sha256": file_sha256(target)}


def sweep_owners(data: Path, manifest: dict[str, Any]) -> None:
    """Remove the owners files of ``data`` that the committed manifest does not name."""
    keep = str((manifest.get("owners") or {}).get("file") or "")
    for file in data.glob(f"{OWNERS_PREFIX}*.json"):
        if file.name != keep:
            file.unlink(missing_ok=True)


def write_generation(
    data: Path,
    base: Path | None,
    store: PassageStore,
    new: list[Passage],
    dropped: set[str],
    embeddings: Embeddings,
    options: DenseOptions,
    report_progress: BuildProgress,
) -> dict[str, Any]:
    """Fill the new generation ``data``: a copy of ``base`` (the live generation, None for a
    fresh index) without the ``dropped`` ids, plus ``new``. Returns the manifest's component
    entries. Never touches ``base``: a removal is a copy that leaves passages out."""
    if dropped:  # a fresh store of the kept passages, in their order
        kept = PassageStore(data / PASSAGES_FILE)
        for pid, passage in store.items():
            if pid not in dropped:
                kept[pid] = passage
        store = kept
    elif base is not None:
        shutil.copyfile(base / PASSAGES_FILE, data / PASSAGES_FILE)
    store.path = data / PASSAGES_FILE
    for passage in new:
        store[passage.id] = passage

    if base is not None:
        shutil.copytree(base / SPARSE_DIR, data / SPARSE_DIR)
        sparse = TantivySparseIndex.open(data / SPARSE_DIR)
        sparse.remove(dropped)
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
        dense.remove(dropped)
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
