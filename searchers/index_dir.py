"""The index directory: passages, sparse and dense indexes, and the manifest that commits them.
This module reads one; ``searchers.index_build`` builds and commits one, writing its files
with ``searchers.index_generation``.

Layout::

    DIR/
      manifest.json        the commit point: names the live generation, models, counts, checksums
      .lock                flock'd by a build, so two builds never race
      gen-000002/          the live generation (the only one after a successful build)
        passages.jsonl     id -> Passage store, one JSON object per line, insertion order
        sparse/            tantivy (searchers.sparse_tantivy)
        dense/             FAISS: index.faiss, ids.json (row i = ids[i]), config.json
        owners-000003.json which passage ids each source file gave (the manifest names it)
      tree/                the RAPTOR tree, if one was built (``tree.store``; not this module's)

Why generations: a build never writes into the live files. It copies the live generation into a
new ``gen-N+1`` directory, appends there, and then replaces ``manifest.json`` with one atomic
``os.replace``. Until that rename the old manifest still names the old, untouched generation, so a
build that crashes (or is killed) at any point leaves the previous index fully usable; the partial
generation is garbage and the next build removes it. Replacing a single file is atomic on POSIX;
replacing a non-empty directory is not, hence the pointer file rather than a directory swap.

Readers take no lock: they read the manifest once and open the generation it names. A reader
that outlives its generation (a server, while ``index sync`` runs) notices the directory is gone
at its next lookup and opens the generation the manifest names now; until the commit it reads
the old one, whole.

Why owners: a file that is edited or deleted must take its passages with it, and a passage id
says nothing of its file (a dataset paragraph may come from several). The owners file maps every
source path to the ids it gave; a passage goes when no source owns it any more. It is a file of
its own, named by the manifest, so a build that only changes ownership (a copy of a known file)
writes a new owners file into the live generation and commits it with the manifest, without
copying the generation. Indexes built before owners existed get them from the passages'
``metadata.source`` (the file name: text and documents; dataset lines carry none, and are owned
from the next time their file is read).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from searchers.corpus import file_sha256
from searchers.dense_faiss import FaissDenseIndex
from searchers.hybrid import DEFAULT_RRF_K, HybridRetriever
from searchers.passages import Passage
from searchers.retrieval import RetrievalError, Retriever
from searchers.sparse_tantivy import TantivySparseIndex

log = logging.getLogger(__name__)

FORMAT_NAME = "hoptree-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
PASSAGES_FILE = "passages.jsonl"
SPARSE_DIR = "sparse"
DENSE_DIR = "dense"
GENERATION_PREFIX = "gen-"
OWNERS_PREFIX = "owners-"
TREE_DIR = "tree"  # INDEX/tree: the RAPTOR tree (tree.store); its pointer file names the version
TREE_POINTER = "CURRENT"
MAX_GENERATION_DIRS = 10_000  # bound on the stale-generation sweep

RetrieverKind = Literal["sparse", "dense", "hybrid"]
RETRIEVER_KINDS: tuple[str, ...] = ("sparse", "dense", "hybrid")


class IndexDirError(RetrievalError):
    """An index directory that cannot be used as asked: missing, corrupt, locked, mismatched."""


class EmbeddingModelMismatchError(IndexDirError):
    """The index's vectors come from another embedding model than the one configured."""


class IndexLockedError(IndexDirError):
    """Another build holds the index directory's lock."""


# --------------------------------------------------------------------------- passage store


class PassageStore(MutableMapping[str, Passage]):
    """An append-only JSON-lines file with an in-memory id -> Passage map.

    New passages are kept pending until ``flush`` appends them, so a build writes the file once.
    Deleting is refused: a deletion has to reach the sparse and dense indexes too, so a build that
    drops passages writes a new store of the kept ones in a new generation
    (``searchers.index_generation``) instead of editing this one.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._items: dict[str, Passage] = {}
        self._pending: list[Passage] = []

    @classmethod
    def load(cls, path: Path) -> PassageStore:
        store = cls(path)
        if not path.exists():
            return store
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    passage = Passage.from_json(json.loads(line))
                except (ValueError, KeyError, TypeError) as exc:
                    raise IndexDirError(f"{path}:{lineno}: corrupt passage record ({exc})") from exc
                store._items[passage.id] = passage
        return store

    def __getitem__(self, passage_id: str) -> Passage:
        return self._items[passage_id]

    def __setitem__(self, passage_id: str, passage: Passage) -> None:
        if passage_id != passage.id:
            raise ValueError(f"key {passage_id!r} != passage id {passage.id!r}")
        if passage_id in self._items:
            return  # first version wins: ingest never rewrites a stored passage
        self._items[passage_id] = passage
        self._pending.append(passage)

    def __delitem__(self, passage_id: str) -> None:
        raise TypeError("the passage store is append-only; rebuild the index to drop passages")

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def flush(self) -> None:
        if self.path is None:
            raise IndexDirError("this passage store has no file")
        if not self._pending:
            self.path.touch()
            return
        with self.path.open("a", encoding="utf-8") as fh:
            for passage in self._pending:
                fh.write(json.dumps(passage.to_json(), ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._pending.clear()


# --------------------------------------------------------------------------- manifest helpers


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def file_entries(root: Path) -> dict[str, dict[str, Any]]:
    """size and sha256 of every file under ``root`` (lock files excluded: they come and go)."""
    entries: dict[str, dict[str, Any]] = {}
    if root.is_file():
        return {root.name: {"size": root.stat().st_size, "sha256": file_sha256(root)}}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        if file.name.endswith(".lock") or file.name.endswith(".tmp"):
            continue
        entries[file.relative_to(root).as_posix()] = {
            "size": file.stat().st_size,
            "sha256": file_sha256(file),
        }
    return entries


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_manifest(path: Path) -> dict[str, Any]:
    manifest_path = Path(path) / MANIFEST
    if not manifest_path.is_file():
        hint = "build one with: hoptree index build SOURCE... --index " + str(path)
        if not Path(path).exists():
            raise IndexDirError(f"no index at {path} (the directory does not exist); {hint}")
        raise IndexDirError(f"no index at {path} (no {MANIFEST}); {hint}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexDirError(f"unreadable {manifest_path}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexDirError(f"{manifest_path} is not a hoptree index manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexDirError(
            f"{manifest_path} has index format version {version}; this hoptree reads version "
            f"{FORMAT_VERSION}: rebuild the index with hoptree index build --rebuild"
        )
    return manifest


def check_embedding_model(
    manifest: dict[str, Any], model: str, dimension: int | None, index_path: Path
) -> None:
    built = manifest.get("embedding") or {}
    built_model, built_dim = built.get("model"), built.get("dimension")
    if built_model != model or (dimension is not None and built_dim != dimension):
        raise EmbeddingModelMismatchError(
            f"the index at {index_path} was built with embedding model {built_model!r} "
            f"(dimension {built_dim}), but the configured model is {model!r}"
            + (f" (dimension {dimension})" if dimension is not None else "")
            + f"; set HOPTREE_EMBEDDINGS__MODEL={built_model} or rebuild the index with "
            "hoptree index build --rebuild"
        )


Owners = dict[str, list[str]]  # source path -> the passage ids it gave, in file order


def load_owners(data_path: Path, manifest: dict[str, Any], store: PassageStore) -> Owners:
    """The owners map of a committed generation; derived from ``metadata.source`` for an index
    written before owners were recorded (see the module docstring)."""
    entry = manifest.get("owners")
    if isinstance(entry, dict) and entry.get("file"):
        owners_path = data_path / str(entry["file"])
        try:
            data = json.loads(owners_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexDirError(f"unreadable {owners_path}: {exc}") from exc
        if not isinstance(data, dict):
            raise IndexDirError(f"{owners_path} is not an owners map")
        return {str(k): [str(i) for i in v] for k, v in data.items()}
    by_name: dict[str, list[str]] = {}
    for passage in store.values():
        name = passage.metadata.get("source")
        if isinstance(name, str):
            by_name.setdefault(name, []).append(passage.id)
    owners: Owners = {}
    for source in manifest.get("sources", []):
        ids = by_name.get(Path(str(source["path"])).name)
        if ids:
            owners[str(source["path"])] = list(ids)
    return owners


def tree_version(index_path: Path) -> str | None:
    """The version directory ``INDEX/tree/CURRENT`` names, or None without a tree."""
    try:
        return (Path(index_path) / TREE_DIR / TREE_POINTER).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def stale_tree(index_path: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest's ``tree`` record while it still applies, else None.

    A build that drops or replaces passages of an index with a tree records which sources
    changed (``searchers.index_build``); the tree's summaries still say what those files said.
    The record applies until the tree is rebuilt: a tree made after the record (its
    ``created_at``; extending a tree keeps the old date, and the old documents) clears it."""
    record = manifest.get("tree")
    if not isinstance(record, dict) or not record.get("stale"):
        return None
    version = tree_version(index_path)
    if version is None:
        return None  # the tree was deleted
    if version == record.get("tree_version"):
        return record
    try:
        tree_doc = Path(index_path) / TREE_DIR / version / "tree.json"
        with tree_doc.open(encoding="utf-8") as fh:
            created = str(json.load(fh).get("created_at") or "")
        if created and datetime.fromisoformat(created) > datetime.fromisoformat(record["since"]):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        pass  # an unreadable tree is not a fresh one
    return record


# --------------------------------------------------------------------------- reading an index


class IndexDir:
    """A read-only view of one committed generation."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.data_path = self.path / str(manifest["data_dir"])
        self._passages: PassageStore | None = None

    @classmethod
    def open(cls, path: Path) -> IndexDir:
        path = Path(path)
        # A build may commit and delete the old generation between our reading the manifest and
        # looking at the directory; re-reading the manifest then finds the new one.
        for _attempt in range(3):
            manifest = read_manifest(path)
            index = cls(path, manifest)
            if index.data_path.is_dir():
                return index
            time.sleep(0.05)
        raise IndexDirError(
            f"{path / MANIFEST} names {manifest['data_dir']}, which is missing: the index is "
            "corrupt; rebuild it with hoptree index build --rebuild"
        )

    @property
    def embedding_model(self) -> str:
        return str(self.manifest["embedding"]["model"])

    @property
    def embedding_dimension(self) -> int:
        return int(self.manifest["embedding"]["dimension"])

    def __len__(self) -> int:
        return int(self.manifest["passages"])

    def check_embedding_model(self, model: str, dimension: int | None = None) -> None:
        check_embedding_model(self.manifest, model, dimension, self.path)

    def passages(self) -> PassageStore:
        if self._passages is None:
            self._passages = PassageStore.load(self.data_path / PASSAGES_FILE)
        return self._passages

    def sparse(self) -> TantivySparseIndex:
        """The tantivy retriever; it follows the index to a later build's generation."""
        try:
            sparse = TantivySparseIndex.open(self.data_path / SPARSE_DIR)
        except (OSError, ValueError) as exc:
            raise IndexDirError(f"cannot open the sparse index of {self.path}: {exc}") from exc
        sparse.reopen = lambda: IndexDir.open(self.path).sparse()
        return sparse

    def dense(self, embeddings: Embeddings, model: str) -> FaissDenseIndex:
        """The FAISS retriever; ``model`` is the configured embedding model's name, checked
        against the one the vectors were made with before any query is embedded."""
        self.check_embedding_model(model)
        self._note_backend(embeddings)
        dense = FaissDenseIndex.load(self.data_path / DENSE_DIR, embeddings, self.passages())
        # follows the index to a later build's generation (a long-running server)
        dense.source_path = self.data_path
        dense.reopen = lambda: IndexDir.open(self.path).dense(embeddings, model)
        return dense

    def _note_backend(self, embeddings: Embeddings) -> None:
        """Another backend of the same model is allowed (the vectors agree within the measured
        tolerance), but said once in the log, since scores then differ in the third digit."""
        built = (self.manifest.get("embedding") or {}).get("backends") or ["torch"]
        backend = getattr(embeddings, "backend", None)
        if isinstance(backend, str) and backend not in built:
            log.info(
                "index %s holds %s vectors; queries are embedded with %s (same model: "
                "interchangeable within the tolerance in benchmarks/results/embeddings.md)",
                self.path,
                "+".join(built),
                backend,
            )

    def retriever(
        self,
        kind: str,
        *,
        embeddings: Embeddings | None = None,
        model: str | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        depth: int | None = None,
    ) -> Retriever:
        if kind not in RETRIEVER_KINDS:
            raise ValueError(f"unknown retriever {kind!r}; expected {', '.join(RETRIEVER_KINDS)}")
        if kind == "sparse":
            return self.sparse()
        if embeddings is None or model is None:
            raise ValueError(f"the {kind} retriever needs the embeddings and their model name")
        dense = self.dense(embeddings, model)
        if kind == "dense":
            return dense
        return HybridRetriever([self.sparse(), dense], rrf_k=rrf_k, depth=depth)

    def verify(self) -> list[str]:
        """Every recorded file's size and sha256 against the disk; the problems found."""
        problems: list[str] = []
        for name, component in self.manifest.get("components", {}).items():
            root = self.data_path / component["path"]
            for rel, expected in component.get("files", {}).items():
                file = root / rel if root.is_dir() else root
                if not file.is_file():
                    problems.append(f"{name}: missing {rel}")
                elif file.stat().st_size != expected["size"]:
                    problems.append(
                        f"{name}: {rel} has {file.stat().st_size} bytes, "
                        f"manifest says {expected['size']}"
                    )
                elif file_sha256(file) != expected["sha256"]:
                    problems.append(f"{name}: {rel} checksum differs from the manifest")
        owners = self.manifest.get("owners")
        if isinstance(owners, dict) and owners.get("file"):
            file = self.data_path / str(owners["file"])
            if not file.is_file():
                problems.append(f"owners: missing {owners['file']}")
            elif file_sha256(file) != owners.get("sha256"):
                problems.append(f"owners: {owners['file']} checksum differs from the manifest")
        return problems
