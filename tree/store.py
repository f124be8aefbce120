"""The on-disk RAPTOR tree: one JSON document plus one NumPy matrix, never pickle.

Layout of a tree directory (``INDEX/tree/``)::

    CURRENT              one line naming the live version directory; the commit point
    v-000007/tree.json   nodes (id, layer, text, children, parents, tokens, source_ids,
                         metadata), documents with their roots, config, build stats
    v-000007/embeddings.npy   float32 (nodes, dim) unit vectors, row i = nodes[i]
    journal.jsonl        only while a build runs (``tree.journal``); removed on commit
    .lock                flock'd by a build so two builds never interleave

Why a pointer file: a new version is written into a temporary directory, fsync'd, renamed to
``v-N`` and only then named by ``CURRENT`` through one atomic ``os.replace``. A build killed at
any point leaves the previous tree readable; stale version directories are swept later.

Loading validates everything a searcher relies on (unique ids, matrix shape and dtype, children
that exist one layer down, parents that mirror children, contiguous layers, known documents)
and stays fast: one ``json.load`` and one ``np.load``, no per-node files.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from searchers.locks import LockBusyError, exclusive_lock

FORMAT_NAME = "hoptree-tree"
FORMAT_VERSION = 1
CURRENT_FILE = "CURRENT"
TREE_FILE = "tree.json"
EMBEDDINGS_FILE = "embeddings.npy"
JOURNAL_FILE = "journal.jsonl"
LOCK_FILE = ".lock"
VERSION_PREFIX = "v-"
MAX_VERSIONS_SWEPT = 1000  # bound on the stale-version sweep

Mode = Literal["single", "per_document"]


class TreeStoreError(ValueError):
    """A tree directory that is missing, damaged or inconsistent; the message says what."""


@dataclass
class TreeNode:
    """One node. Leaves (layer 0) carry document text; summaries carry the LLM's text and, in
    ``metadata``, how it was made (content key, fallback flag, attempts, token usage)."""

    id: str
    layer: int
    text: str
    children: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    tokens: int = 0
    source_ids: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "layer": self.layer,
            "text": self.text,
            "children": self.children,
            "parents": self.parents,
            "tokens": self.tokens,
            "source_ids": self.source_ids,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TreeNode:
        return cls(
            id=data["id"],
            layer=data["layer"],
            text=data["text"],
            children=list(data.get("children") or []),
            parents=list(data.get("parents") or []),
            tokens=data.get("tokens", 0),
            source_ids=list(data.get("source_ids") or []),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass
class DocumentEntry:
    """A document in the tree; ``roots`` are its top nodes (its own tree's in per-document mode,
    the shared top layer in single mode)."""

    id: str
    title: str
    source: str
    sha256: str
    tokens: int
    leaves: int
    roots: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DocumentEntry:
        return cls(
            id=str(data["id"]),
            title=str(data.get("title", "")),
            source=str(data.get("source", "")),
            sha256=str(data.get("sha256", "")),
            tokens=int(data.get("tokens", 0)),
            leaves=int(data.get("leaves", 0)),
            roots=list(data.get("roots") or []),
        )


@dataclass
class Tree:
    nodes: list[TreeNode]
    embeddings: np.ndarray
    documents: list[DocumentEntry]
    mode: Mode = "single"
    config: dict[str, Any] = field(default_factory=dict)
    embedding_model: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""

    @cached_property
    def index_of(self) -> dict[str, int]:
        """Node id -> row in ``nodes`` and ``embeddings``."""
        return {node.id: i for i, node in enumerate(self.nodes)}

    def node(self, node_id: str) -> TreeNode:
        return self.nodes[self.index_of[node_id]]

    @property
    def dimension(self) -> int:
        return int(self.embeddings.shape[1]) if self.embeddings.ndim == 2 else 0

    @property
    def depth(self) -> int:
        """Number of summary layers above the leaves."""
        return max((n.layer for n in self.nodes), default=0)

    def layer(self, layer: int) -> list[TreeNode]:
        return [n for n in self.nodes if n.layer == layer]

    def layer_counts(self) -> list[int]:
        counts = [0] * (self.depth + 1) if self.nodes else []
        for node in self.nodes:
            counts[node.layer] += 1
        return counts

    def roots(self) -> list[TreeNode]:
        """Nodes without parents: the top of every (sub)tree, whatever its height."""
        return [n for n in self.nodes if not n.parents]

    def document(self, doc_id: str) -> DocumentEntry | None:
        return next((d for d in self.documents if d.id == doc_id), None)

    def validate(self) -> None:
        """Raise ``TreeStoreError`` naming the first inconsistency."""
        validate_tree(self)


# --------------------------------------------------------------------------- validation


def _fail(message: str) -> TreeStoreError:
    return TreeStoreError(f"invalid tree: {message}")


def validate_tree(tree: Tree) -> None:
    nodes = tree.nodes
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise _fail(f"duplicate node id {dup!r}")
    if any(not isinstance(i, str) or not i for i in ids):
        raise _fail("every node needs a non-empty string id")
    matrix = tree.embeddings
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[0] != len(nodes):
        raise _fail(
            f"embeddings must be float32 of shape ({len(nodes)}, dim), got "
            f"{matrix.dtype} {matrix.shape}"
        )
    if nodes and matrix.shape[1] < 1:
        raise _fail("embeddings have no dimensions")
    if not np.isfinite(matrix).all():
        raise _fail("embeddings contain NaN or infinity")
    known_docs = {d.id for d in tree.documents}
    if len(known_docs) != len(tree.documents):
        raise _fail("duplicate document id")
    by_id = {n.id: n for n in nodes}
    previous_layer = 0
    for node in nodes:
        if not isinstance(node.layer, int) or node.layer < 0:
            raise _fail(f"node {node.id!r} has layer {node.layer!r}")
        if node.layer < previous_layer:
            raise _fail(f"nodes are not ordered by layer (at {node.id!r})")
        previous_layer = node.layer
        if not isinstance(node.tokens, int) or node.tokens < 0:
            raise _fail(f"node {node.id!r} has token count {node.tokens!r}")
        if node.layer == 0 and node.children:
            raise _fail(f"leaf {node.id!r} has children")
        if node.layer > 0 and not node.children:
            raise _fail(f"summary node {node.id!r} (layer {node.layer}) has no children")
        for child_id in node.children:
            child = by_id.get(child_id)
            if child is None:
                raise _fail(f"node {node.id!r} names a missing child {child_id!r}")
            if child.layer != node.layer - 1:
                raise _fail(
                    f"child {child_id!r} of {node.id!r} is on layer {child.layer}, "
                    f"expected {node.layer - 1}"
                )
        unknown = [s for s in node.source_ids if s not in known_docs]
        if unknown or not node.source_ids:
            raise _fail(f"node {node.id!r} has unknown or no source documents {unknown}")
    # links are checked once every node's own fields are known good, so errors name the cause
    for node in nodes:
        for child_id in node.children:
            if node.id not in by_id[child_id].parents:
                raise _fail(f"{child_id!r} does not list its parent {node.id!r}")
        for parent_id in node.parents:
            parent = by_id.get(parent_id)
            if parent is None or node.id not in parent.children:
                raise _fail(f"node {node.id!r} names {parent_id!r} as parent, which does not")
    present = {n.layer for n in nodes}
    if present and present != set(range(max(present) + 1)):
        raise _fail(f"layers are not contiguous: {sorted(present)}")
    for doc in tree.documents:
        missing = [r for r in doc.roots if r not in by_id]
        if missing:
            raise _fail(f"document {doc.id!r} names missing roots {missing}")


# --------------------------------------------------------------------------- writing


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _versions(tree_dir: Path) -> list[Path]:
    found = sorted(p for p in tree_dir.glob(f"{VERSION_PREFIX}*") if p.is_dir())
    return found[:MAX_VERSIONS_SWEPT]


def _current_name(tree_dir: Path) -> str | None:
    pointer = tree_dir / CURRENT_FILE
    if not pointer.is_file():
        return None
    return pointer.read_text(encoding="utf-8").strip() or None


def _document_json(tree: Tree) -> dict[str, Any]:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created_at": tree.created_at,
        "updated_at": tree.updated_at,
        "mode": tree.mode,
        "config": tree.config,
        "embedding": {"model": tree.embedding_model, "dimension": tree.dimension},
        "layers": tree.layer_counts(),
        "documents": [d.to_json() for d in tree.documents],
        "stats": tree.stats,
        "nodes": [n.to_json() for n in tree.nodes],
    }


def save_tree(tree: Tree, tree_dir: Path) -> Path:
    """Write ``tree`` as the new live version of ``tree_dir``; returns the version directory.

    Validates first: a broken tree is never committed over a good one.
    """
    validate_tree(tree)
    tree_dir = Path(tree_dir)
    tree_dir.mkdir(parents=True, exist_ok=True)
    tree.created_at = tree.created_at or _now()
    tree.updated_at = _now()
    existing = _versions(tree_dir)
    number = 1 + max((int(p.name[len(VERSION_PREFIX) :]) for p in existing), default=0)
    final = tree_dir / f"{VERSION_PREFIX}{number:06d}"
    tmp = tree_dir / f".tmp-{final.name}-{os.getpid()}-{time.monotonic_ns()}"
    tmp.mkdir()
    try:
        with open(tmp / EMBEDDINGS_FILE, "wb") as fh:
            np.save(fh, np.ascontiguousarray(tree.embeddings, dtype=np.float32))
            fh.flush()
            os.fsync(fh.fileno())
        with open(tmp / TREE_FILE, "w", encoding="utf-8") as fh:
            json.dump(_document_json(tree), fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(tmp)
        tmp.rename(final)
        pointer_tmp = tree_dir / f".{CURRENT_FILE}.tmp-{os.getpid()}"
        pointer_tmp.write_text(final.name + "\n", encoding="utf-8")
        with open(pointer_tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(pointer_tmp, tree_dir / CURRENT_FILE)
        _fsync_dir(tree_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    sweep(tree_dir)
    return final


def sweep(tree_dir: Path) -> None:
    """Remove version and temporary directories that ``CURRENT`` does not name."""
    live = _current_name(tree_dir)
    for path in _versions(tree_dir):
        if path.name != live:
            shutil.rmtree(path, ignore_errors=True)
    for path in list(tree_dir.glob(".tmp-*"))[:MAX_VERSIONS_SWEPT]:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def build_lock(tree_dir: Path) -> Iterator[None]:
    """Exclusive, non-blocking: a second build fails fast instead of interleaving writes."""
    tree_dir.mkdir(parents=True, exist_ok=True)
    try:
        with exclusive_lock(tree_dir / LOCK_FILE, timeout_s=0):
            yield
    except LockBusyError as exc:
        raise TreeStoreError(f"another tree build holds {tree_dir / LOCK_FILE}") from exc


# --------------------------------------------------------------------------- reading


def resolve_version_dir(path: Path) -> Path:
    """A tree directory (with ``CURRENT``) or a version directory (with ``tree.json``)."""
    path = Path(path)
    if (path / TREE_FILE).is_file():
        return path
    name = _current_name(path)
    if name is None:
        raise TreeStoreError(f"no tree at {path} (no {CURRENT_FILE} file; build one first)")
    version = path / name
    if not (version / TREE_FILE).is_file():
        raise TreeStoreError(f"{path / CURRENT_FILE} names {name}, which has no {TREE_FILE}")
    return version


def tree_exists(tree_dir: Path) -> bool:
    try:
        resolve_version_dir(tree_dir)
    except TreeStoreError:
        return False
    return True


def load_tree(path: Path) -> Tree:
    """Load and validate; raises ``TreeStoreError`` with the reason on any damage."""
    version = resolve_version_dir(path)
    try:
        with open(version / TREE_FILE, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise TreeStoreError(f"cannot read {version / TREE_FILE}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise TreeStoreError(f"{version / TREE_FILE} is not a {FORMAT_NAME} file")
    if data.get("version") != FORMAT_VERSION:
        raise TreeStoreError(
            f"{version / TREE_FILE} has format version {data.get('version')}, "
            f"this hoptree reads {FORMAT_VERSION}"
        )
    try:
        matrix = np.load(version / EMBEDDINGS_FILE, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TreeStoreError(f"cannot read {version / EMBEDDINGS_FILE}: {exc}") from exc
    try:
        nodes = [TreeNode.from_json(n) for n in data["nodes"]]
        documents = [DocumentEntry.from_json(d) for d in data["documents"]]
        embedding = data.get("embedding") or {}
    except (KeyError, TypeError, ValueError) as exc:
        raise TreeStoreError(f"{version / TREE_FILE} is malformed: {exc!r}") from exc
    tree = Tree(
        nodes=nodes,
        embeddings=matrix,
        documents=documents,
        mode=data.get("mode", "single"),
        config=dict(data.get("config") or {}),
        embedding_model=str(embedding.get("model", "")),
        stats=dict(data.get("stats") or {}),
        created_at=str(data.get("created_at", "")),
        updated_at=str(data.get("updated_at", "")),
    )
    if tree.mode not in ("single", "per_document"):
        raise TreeStoreError(f"unknown tree mode {tree.mode!r}")
    if embedding.get("dimension") not in (None, tree.dimension) and nodes:
        raise TreeStoreError(
            f"tree.json says dimension {embedding.get('dimension')}, "
            f"{EMBEDDINGS_FILE} has {tree.dimension}"
        )
    validate_tree(tree)
    return tree
