"""The index directory: passages, sparse and dense indexes, and the manifest that commits them.

Layout::

    DIR/
      manifest.json        the commit point: names the live generation, models, counts, checksums
      .lock                flock'd by a build, so two builds never race
      gen-000002/          the live generation (the only one after a successful build)
        passages.jsonl     id -> Passage store, one JSON object per line, insertion order
        sparse/            tantivy (searchers.sparse_tantivy)
        dense/             FAISS: index.faiss, ids.json (row i = ids[i]), config.json

Why generations: a build never writes into the live files. It copies the live generation into a
new ``gen-N+1`` directory, appends there, and then replaces ``manifest.json`` with one atomic
``os.replace``. Until that rename the old manifest still names the old, untouched generation, so a
build that crashes (or is killed) at any point leaves the previous index fully usable; the partial
generation is garbage and the next build removes it. Replacing a single file is atomic on POSIX;
replacing a non-empty directory is not, hence the pointer file rather than a directory swap.

Readers take no lock: they read the manifest once and open the generation it names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from searchers.chunking import DEFAULT_MAX_TOKENS
from searchers.corpus import CorpusError, file_sha256, read_passages, resolve_format
from searchers.dense_faiss import DenseConfig, DenseKind, FaissDenseIndex
from searchers.hybrid import DEFAULT_RRF_K, HybridRetriever
from searchers.passages import Passage
from searchers.retrieval import RetrievalError, Retriever
from searchers.sparse_tantivy import TantivySparseIndex

FORMAT_NAME = "hoptree-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
PASSAGES_FILE = "passages.jsonl"
SPARSE_DIR = "sparse"
DENSE_DIR = "dense"
GENERATION_PREFIX = "gen-"
MAX_GENERATION_DIRS = 10_000  # bound on the stale-generation sweep

RetrieverKind = Literal["sparse", "dense", "hybrid"]
RETRIEVER_KINDS: tuple[str, ...] = ("sparse", "dense", "hybrid")

# (stage, done, total): stages are "read" (files), "sparse" and "dense" (passages). A callback may
# raise to abort the build; the live index is untouched either way.
BuildProgress = Callable[[str, int, int], None]


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
    Deleting is refused: ids are the unit of idempotent ingest, and a deletion would have to reach
    the sparse and dense indexes too (rebuild instead).
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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _file_entries(root: Path) -> dict[str, dict[str, Any]]:
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


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
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
        try:
            return TantivySparseIndex.open(self.data_path / SPARSE_DIR)
        except (OSError, ValueError) as exc:
            raise IndexDirError(f"cannot open the sparse index of {self.path}: {exc}") from exc

    def dense(self, embeddings: Embeddings, model: str) -> FaissDenseIndex:
        """The FAISS retriever; ``model`` is the configured embedding model's name, checked
        against the one the vectors were made with before any query is embedded."""
        self.check_embedding_model(model)
        return FaissDenseIndex.load(self.data_path / DENSE_DIR, embeddings, self.passages())

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
        return problems


# --------------------------------------------------------------------------- building


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
    ingested_at: str = field(default_factory=_now)


@dataclass
class BuildReport:
    path: str
    changed: bool
    added: int
    total: int
    generation: int
    sources: list[SourceReport]
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DenseOptions:
    kind: DenseKind = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 256
    batch_size: int = 256


class _BuildLock:
    """An exclusive ``flock`` on DIR/.lock; the kernel releases it if the process dies, so a
    crashed build never leaves a stale lock behind."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.file = path / LOCK_FILE
        self.timeout_s = timeout_s
        self._fd: int | None = None

    def __enter__(self) -> _BuildLock:
        fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                    os.close(fd)
                    raise IndexLockedError(
                        f"another build (pid {holder}) is writing {self.file.parent}; "
                        "wait for it to finish"
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


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
    with _BuildLock(path, lock_timeout_s):
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
        new, reports = _read_new(sources, set(store), max_tokens, report_progress)
        previous_sources = [] if (old is None or rebuild) else list(old.get("sources", []))
        merged_sources, sources_changed = _merge_sources(previous_sources, reports)

        if old is not None and base is not None and not new:
            if sources_changed:
                manifest = {**old, "sources": merged_sources, "updated_at": _now()}
                _write_json_atomic(path / MANIFEST, manifest)
            return BuildReport(
                path=str(path),
                changed=sources_changed,
                added=0,
                total=int(old["passages"]),
                generation=int(old["generation"]),
                sources=reports,
                seconds=time.monotonic() - started,
            )

        generation = (int(old["generation"]) + 1) if old is not None else 1
        data = path / f"{GENERATION_PREFIX}{generation:06d}"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir()
        components = _write_generation(
            data, base, store, new, embeddings, dense or DenseOptions(), report_progress
        )
        now = _now()
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
            },
            "passages": len(store),
            "chunking": {"max_tokens": max_tokens},
            "components": components,
            "sources": merged_sources,
        }
        _write_json_atomic(path / MANIFEST, manifest)  # the commit point
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
        )


def _read_new(
    sources: Sequence[SourceSpec],
    known: set[str],
    max_tokens: int,
    report_progress: BuildProgress,
) -> tuple[list[Passage], list[SourceReport]]:
    """Every passage of ``sources`` whose id is not in ``known`` (which grows), in source order.

    All of it is read before anything is written, so a malformed line anywhere fails the build
    before it has touched the disk.
    """
    new: list[Passage] = []
    reports: list[SourceReport] = []
    for done, spec in enumerate(sources, start=1):
        source_path = Path(spec.path)
        try:
            fmt = resolve_format(source_path, spec.format)
            sha256 = file_sha256(source_path)
            read = added = 0
            for passage in read_passages(source_path, fmt, max_tokens=max_tokens):
                read += 1
                if passage.id in known:
                    continue
                known.add(passage.id)
                new.append(passage)
                added += 1
            size = source_path.stat().st_size
        except OSError as exc:
            raise CorpusError(f"{source_path}: {exc}") from exc
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
    return new, reports


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
            "files": _file_entries(data / PASSAGES_FILE),
        },
        "sparse": {
            "path": SPARSE_DIR,
            "backend": "tantivy",
            "count": len(sparse),
            "files": _file_entries(data / SPARSE_DIR),
        },
        "dense": {
            "path": DENSE_DIR,
            "backend": "faiss",
            "metric": "inner_product",
            **asdict(dense.config),
            "count": len(dense),
            "files": _file_entries(data / DENSE_DIR),
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
