"""Growing the RAPTOR tree: leaves, then cluster -> summarize -> embed, layer after layer.

The loop stops when a layer is one node, when clustering cannot reduce it (as many clusters as
nodes), or after ``max_layers`` summary layers. Summaries of a layer run concurrently, bounded by
one ``asyncio.Semaphore`` of ``concurrency`` slots.

Nothing is paid twice. Before calling the model for a cluster the builder looks its content key
up in (1) the tree being extended or rebuilt, (2) the build journal of a killed run; the
injected model's own cache (hoptree's SQLite cache) catches the rest. Fallback summaries (the
model failed) are the exception: they are neither journaled nor reused, so the next run retries
them. Each finished summary and
each layer's clustering is journaled (fsync'd) as it completes, so a resumed build re-clusters
nothing and re-asks nothing that finished. Ids are content-derived (a leaf: document id and
position; a summary: layer and its children's ids), so a resumed or repeated build yields the
same tree.

Collections. ``mode="single"`` builds one tree over all documents (clusters may mix documents;
every node lists its ``source_ids``); ``mode="per_document"`` grows one tree per document in the
same store (clusters never cross documents; each document entry names its roots), which keeps a
book's summaries about that book and lets documents be added or rebuilt independently.

Adding documents to a tree (``TreeBuilder.add``) recomputes exactly this:

- per_document: the new documents' trees, nothing else;
- single: leaves and embeddings of the new documents; layer 1 = the existing layer-1 clusters
  unchanged (their summaries and vectors reused, zero calls) plus clusters of the new leaves
  among themselves (new summaries); every layer above 1 is re-clustered over the full layer
  below and re-summarized, where a cluster whose passages did not change reuses its summary.
  Old leaves are never re-clustered, so old and new text meet from layer 2 up. Layer 1 holds
  ~85% of a RAPTOR tree's summaries, so the cost tracks the size of the addition; rebuild from
  scratch (``build`` with all documents) when the additions dominate, to let them mix at layer 1.

Why one module of this length: the build is one resumable state machine (layers, clustering,
the journal, reuse of earlier summaries, per-document trees); its steps share the builder's
caches and counters, and splitting them would pass that state through every call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from tree.clustering import Clusterer, make_clusterer
from tree.documents import SourceDocument
from tree.embedding import embed_texts
from tree.journal import BuildJournal
from tree.leaves import (
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_SEMANTIC_MAX_TOKENS,
    DEFAULT_SEMANTIC_MIN_TOKENS,
    DEFAULT_SEMANTIC_THRESHOLD,
    LeafText,
    chunk_text,
    semantic_segments,
)
from tree.store import DocumentEntry, Mode, Tree, TreeNode
from tree.summarize import Summarizer, SummaryResult
from tree.tokens import TokenCounter, approx_token_count

LeafMode = Literal["chunks", "semantic"]


class TreeBuildError(ValueError):
    """A build that cannot start as asked (mismatched configuration, duplicate documents)."""


@dataclass(frozen=True)
class TreeConfig:
    """Everything that shapes the tree. ``concurrency``, ``call_timeout_s`` and ``max_attempts``
    change how a build runs, not what it builds, and are left out of ``shape()``."""

    clustering: str = "gmm"
    mode: Mode = "single"
    leaves: LeafMode = "chunks"
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS
    semantic_threshold: float = DEFAULT_SEMANTIC_THRESHOLD
    semantic_min_tokens: int = DEFAULT_SEMANTIC_MIN_TOKENS
    semantic_max_tokens: int = DEFAULT_SEMANTIC_MAX_TOKENS
    max_layers: int = 5
    max_words: int = 100
    max_cluster_tokens: int = 3500
    seed: int = 224
    clustering_options: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 4
    call_timeout_s: float = 300.0
    max_attempts: int = 3

    def __post_init__(self) -> None:
        if self.mode not in ("single", "per_document"):
            raise ValueError(f"mode must be single or per_document, not {self.mode!r}")
        if self.leaves not in ("chunks", "semantic"):
            raise ValueError(f"leaves must be chunks or semantic, not {self.leaves!r}")
        if self.max_layers < 1 or self.concurrency < 1 or self.max_cluster_tokens < 1:
            raise ValueError("max_layers, concurrency and max_cluster_tokens must be >= 1")

    def clusterer(self) -> Clusterer:
        return make_clusterer(
            self.clustering,
            max_cluster_tokens=self.max_cluster_tokens,
            seed=self.seed,
            **self.clustering_options,
        )

    def shape(self) -> dict[str, Any]:
        data = asdict(self)
        for runtime_only in ("concurrency", "call_timeout_s", "max_attempts"):
            data.pop(runtime_only)
        data["clusterer"] = self.clusterer().describe()
        return data


@dataclass(frozen=True)
class BuildEvent:
    """Progress: ``stage`` is "leaves" (documents done/total), "cluster" (a layer's clustering
    started: total = nodes), "summaries" (done/total of a layer) or "layer" (a layer finished:
    done = its node count)."""

    stage: str
    layer: int
    done: int
    total: int
    group: str = ""


ProgressFn = Callable[[BuildEvent], None]


@dataclass
class BuildStats:
    """What one run of the builder did; stored as ``stats["last_build"]``."""

    seconds: float = 0.0
    documents_added: int = 0
    leaves_added: int = 0
    clusterings: int = 0
    clusterings_resumed: int = 0
    summaries: int = 0
    summaries_reused: int = 0  # from the tree being extended/rebuilt
    summaries_resumed: int = 0  # from the journal of a killed build
    llm_calls: int = 0
    llm_cache_hits: int = 0
    llm_failed_attempts: int = 0
    prompt_tokens: int = 0  # spent by this run, cache hits excluded
    completion_tokens: int = 0
    fallbacks: int = 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 2)
        return data


def _digest(*parts: Any) -> str:
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class _Layer:
    nodes: list[TreeNode]
    vectors: np.ndarray


class TreeBuilder:
    """Builds and extends trees with injected models; one builder per build."""

    def __init__(
        self,
        chat: BaseChatModel,
        embeddings: Embeddings,
        config: TreeConfig | None = None,
        *,
        count_tokens: TokenCounter = approx_token_count,
        journal: BuildJournal | None = None,
        progress: ProgressFn | None = None,
        embedding_model: str = "",
    ) -> None:
        self.config = config or TreeConfig()
        self.embeddings = embeddings
        self.count = count_tokens
        self.clusterer = self.config.clusterer()
        self.summarizer = Summarizer(
            chat,
            max_words=self.config.max_words,
            max_input_tokens=self.config.max_cluster_tokens,
            timeout_s=self.config.call_timeout_s,
            max_attempts=self.config.max_attempts,
            count=count_tokens,
        )
        self.journal = journal or BuildJournal(None)
        self.progress = progress or (lambda event: None)
        self.embedding_model = embedding_model or str(getattr(embeddings, "model_name", ""))
        self.stats = BuildStats()
        self._reuse_summaries: dict[str, TreeNode] = {}
        self._reuse_vectors: dict[str, np.ndarray] = {}
        self._dim: int | None = None
        self._semaphore: asyncio.Semaphore | None = None

    # ------------------------------------------------------------------ public API

    async def build(
        self, documents: Sequence[SourceDocument], *, previous: Tree | None = None
    ) -> Tree:
        """A new tree over ``documents``. ``previous`` (e.g. the tree being rebuilt) only lends
        summaries and vectors whose content keys match; its structure is not kept."""
        started = time.monotonic()
        self._check_documents(documents)
        if previous is not None:
            self._remember(previous)
        self._semaphore = asyncio.Semaphore(self.config.concurrency)
        leaves = self._make_leaves(documents)
        layers_by_group = await self._grow_groups(documents, leaves)
        tree = self._assemble(documents, layers_by_group, existing=None)
        self._finish(tree, started)
        return tree

    async def add(self, tree: Tree, documents: Sequence[SourceDocument]) -> Tree:
        """``tree`` plus ``documents`` (ids new to it); see the module doc for what is redone.

        A document whose id is already in the tree with the same text is skipped; with other
        text it is an error (rebuild to replace documents).
        """
        started = time.monotonic()
        shape = self.config.shape()
        if tree.config and tree.config != shape:
            changed = sorted(k for k in shape if tree.config.get(k) != shape[k])
            raise TreeBuildError(
                f"the tree was built with other settings ({', '.join(changed)} differ); "
                "rebuild it to change them"
            )
        known = {d.id: d for d in tree.documents}
        new_docs = []
        for doc in documents:
            entry = known.get(doc.id)
            if entry is None:
                new_docs.append(doc)
            elif entry.sha256 != doc.sha256:
                raise TreeBuildError(
                    f"document {doc.id!r} is already in the tree with different text; "
                    "rebuild the tree to replace it"
                )
        self._check_documents(new_docs)
        if not new_docs:
            return tree
        self._remember(tree)
        self._semaphore = asyncio.Semaphore(self.config.concurrency)
        leaves = self._make_leaves(new_docs)
        if self.config.mode == "per_document":
            grown = await self._grow_groups(new_docs, leaves)
            result = self._assemble(new_docs, grown, existing=tree)
        else:
            result = await self._add_single(tree, new_docs, leaves)
        self._finish(result, started)
        return result

    # ------------------------------------------------------------------ pieces

    def _check_documents(self, documents: Sequence[SourceDocument]) -> None:
        ids = [d.id for d in documents]
        if len(set(ids)) != len(ids):
            raise TreeBuildError("two documents share an id")
        if not all(d.text.strip() for d in documents):
            raise TreeBuildError("a document has no text")

    def _remember(self, tree: Tree) -> None:
        for i, node in enumerate(tree.nodes):
            key = node.metadata.get("key")
            if node.layer > 0 and key and not node.metadata.get("fallback"):
                self._reuse_summaries[key] = node
            self._reuse_vectors[node.text] = tree.embeddings[i]
        if tree.nodes:
            self._dim = tree.dimension

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, reusing any the tree being extended already holds."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._reuse_vectors]
        if missing:
            fresh = embed_texts(self.embeddings, missing, self._dim)
            self._dim = fresh.shape[1]
            for text, vector in zip(missing, fresh, strict=True):
                self._reuse_vectors[text] = vector
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.stack([self._reuse_vectors[t] for t in texts]).astype(np.float32)

    def _leaf_texts(self, doc: SourceDocument) -> list[LeafText]:
        cfg = self.config
        if cfg.leaves == "semantic":
            return semantic_segments(
                doc.text,
                self.embeddings,
                threshold=cfg.semantic_threshold,
                min_tokens=cfg.semantic_min_tokens,
                max_tokens=cfg.semantic_max_tokens,
                count=self.count,
            )
        return chunk_text(doc.text, cfg.chunk_tokens, self.count)

    def _make_leaves(self, documents: Sequence[SourceDocument]) -> dict[str, _Layer]:
        result: dict[str, _Layer] = {}
        for done, doc in enumerate(documents, start=1):
            texts = self._leaf_texts(doc)
            nodes = [
                TreeNode(
                    id=f"{doc.id}#{position}",
                    layer=0,
                    text=leaf.text,
                    tokens=leaf.tokens,
                    source_ids=[doc.id],
                    metadata={"position": position, "sentences": leaf.sentences},
                )
                for position, leaf in enumerate(texts)
            ]
            result[doc.id] = _Layer(nodes, self._embed([n.text for n in nodes]))
            self.stats.leaves_added += len(nodes)
            self.progress(BuildEvent("leaves", 0, done, len(documents), doc.id))
        self.stats.documents_added += len(documents)
        return result

    async def _grow_groups(
        self, documents: Sequence[SourceDocument], leaves: dict[str, _Layer]
    ) -> dict[str, list[_Layer]]:
        """Layers per group: one group per document, or one group "*" for a single tree."""
        if self.config.mode == "per_document":
            groups = [(d.id, leaves[d.id]) for d in documents]
        else:
            nodes = [n for d in documents for n in leaves[d.id].nodes]
            vectors = (
                np.concatenate([leaves[d.id].vectors for d in documents])
                if documents
                else self._embed([])
            )
            groups = [("*", _Layer(nodes, vectors))]
        grown = await asyncio.gather(*(self._grow(name, layer, None) for name, layer in groups))
        return {name: layers for (name, _), layers in zip(groups, grown, strict=True)}

    def _cluster(self, group: str, layer: _Layer, depth: int) -> list[list[int]]:
        ids = [n.id for n in layer.nodes]
        key = _digest("clusters", self.clusterer.describe(), depth, ids)
        cached = self.journal.clusterings.get(key)
        position = {node_id: i for i, node_id in enumerate(ids)}
        if cached is not None and all(m in position for c in cached for m in c):
            self.stats.clusterings_resumed += 1
            return [[position[m] for m in c] for c in cached]
        self.progress(BuildEvent("cluster", depth, 0, len(ids), group))
        clusters = self.clusterer.cluster(layer.vectors, [n.tokens for n in layer.nodes], depth)
        self.stats.clusterings += 1
        self.journal.record_clusters(key, [[ids[i] for i in c] for c in clusters])
        return clusters

    async def _grow(
        self, group: str, leaves: _Layer, first_clusters: list[list[int]] | None
    ) -> list[_Layer]:
        layers = [leaves]
        current = leaves
        for depth in range(self.config.max_layers):  # bounded: at most max_layers summaries
            if len(current.nodes) <= 1:
                break
            if depth == 0 and first_clusters is not None:
                clusters = first_clusters
            else:
                clusters = self._cluster(group, current, depth)
            if len(clusters) >= len(current.nodes):
                break  # clustering cannot reduce this layer any more
            parents = await self._summarize_layer(group, current.nodes, clusters, depth + 1)
            current = _Layer(parents, self._embed([n.text for n in parents]))
            layers.append(current)
            self.journal.record_layer(group, depth + 1, len(parents))
            self.progress(BuildEvent("layer", depth + 1, len(parents), len(parents), group))
        return layers

    async def _summarize_layer(
        self, group: str, children: list[TreeNode], clusters: list[list[int]], layer: int
    ) -> list[TreeNode]:
        total = len(clusters)
        done = 0
        self.progress(BuildEvent("summaries", layer, 0, total, group))

        async def one(cluster: list[int]) -> TreeNode:
            nonlocal done
            members = [children[i] for i in cluster]
            node = await self._summary_node(members, layer)
            done += 1
            self.progress(BuildEvent("summaries", layer, done, total, group))
            return node

        return list(await asyncio.gather(*(one(c) for c in clusters)))

    async def _summary_node(self, members: list[TreeNode], layer: int) -> TreeNode:
        passages = [m.text for m in members]
        key = self.summarizer.key(passages)
        child_ids = [m.id for m in members]
        node_id = f"L{layer}:{_digest(child_ids)[:16]}"
        sources = sorted({s for m in members for s in m.source_ids})
        reused = self._reuse_summaries.get(key)
        if reused is not None:
            self.stats.summaries_reused += 1
            text, metadata = reused.text, dict(reused.metadata)
        elif key in self.journal.summaries:
            self.stats.summaries_resumed += 1
            record = self.journal.summaries[key]
            text, metadata = record["text"], dict(record["metadata"])
        else:
            assert self._semaphore is not None
            async with self._semaphore:
                result = await self.summarizer.summarize(passages)
            self._count(result)
            text, metadata = result.text, {"key": key, **result.metadata()}
            if not result.fallback:  # a fallback is retried by the next run, never replayed
                self.journal.record_summary(key, {"text": text, "metadata": metadata})
        metadata["key"] = key
        metadata["child_tokens"] = sum(m.tokens for m in members)
        return TreeNode(
            id=node_id,
            layer=layer,
            text=text,
            children=child_ids,
            tokens=self.count(text),
            source_ids=sources,
            metadata=metadata,
        )

    def _count(self, result: SummaryResult) -> None:
        s = self.stats
        s.summaries += 1
        s.llm_calls += result.calls
        s.llm_cache_hits += result.cache_hits
        s.llm_failed_attempts += result.attempts - (0 if result.fallback else 1)
        s.prompt_tokens += result.new_prompt_tokens
        s.completion_tokens += result.new_completion_tokens
        s.fallbacks += int(result.fallback)

    async def _add_single(
        self, tree: Tree, new_docs: Sequence[SourceDocument], leaves: dict[str, _Layer]
    ) -> Tree:
        old_leaves = tree.layer(0)
        new_nodes = [n for d in new_docs for n in leaves[d.id].nodes]
        all_leaves = [*(_fresh(n) for n in old_leaves), *new_nodes]
        vectors = np.concatenate(
            [tree.embeddings[: len(old_leaves)], *(leaves[d.id].vectors for d in new_docs)]
        )
        combined = _Layer(all_leaves, vectors)
        first: list[list[int]] | None = None
        if tree.depth >= 1:
            position = {n.id: i for i, n in enumerate(all_leaves)}
            first = [[position[c] for c in n.children] for n in tree.layer(1)]
            offset = len(old_leaves)
            new_part = _Layer(new_nodes, vectors[offset:])
            own = self._cluster("+new", new_part, 0) if len(new_nodes) > 1 else [[0]]
            first += [[offset + i for i in c] for c in own]
        all_docs = [*_as_sources(tree), *new_docs]
        layers = await self._grow("*", combined, first)
        return self._assemble(all_docs, {"*": layers}, existing=None, entries=tree.documents)

    def _assemble(
        self,
        documents: Sequence[SourceDocument],
        grown: dict[str, list[_Layer]],
        *,
        existing: Tree | None,
        entries: Sequence[DocumentEntry] = (),
    ) -> Tree:
        """Stack layers into one node list (ordered by layer), link parents, name roots."""
        by_layer: dict[int, list[tuple[TreeNode, np.ndarray]]] = {}
        if existing is not None:
            for i, node in enumerate(existing.nodes):
                by_layer.setdefault(node.layer, []).append((_fresh(node), existing.embeddings[i]))
        for layers in grown.values():
            for depth, layer in enumerate(layers):
                bucket = by_layer.setdefault(depth, [])
                bucket.extend((_fresh(n), layer.vectors[i]) for i, n in enumerate(layer.nodes))
        ordered = [pair for depth in sorted(by_layer) for pair in by_layer[depth]]
        nodes = [node for node, _ in ordered]
        matrix = (
            np.stack([vector for _, vector in ordered]).astype(np.float32)
            if ordered
            else np.zeros((0, self._dim or 0), dtype=np.float32)
        )
        by_id = {n.id: n for n in nodes}
        for node in nodes:
            for child in node.children:
                by_id[child].parents.append(node.id)
        roots = [n for n in nodes if not n.parents]
        old_entries = {e.id: e for e in (existing.documents if existing else entries)}
        docs: list[DocumentEntry] = []
        if existing is not None:
            docs.extend(_copy_entry(e) for e in existing.documents)
        for doc in documents:
            old = old_entries.get(doc.id)
            if existing is not None and old is not None:
                continue
            docs.append(
                DocumentEntry(
                    id=doc.id,
                    title=doc.title,
                    source=doc.source or (old.source if old else ""),
                    sha256=old.sha256 if old and not doc.text else doc.sha256,
                    tokens=old.tokens if old and not doc.text else self.count(doc.text),
                    leaves=sum(1 for n in nodes if n.layer == 0 and n.source_ids == [doc.id]),
                )
            )
        for entry in docs:
            entry.roots = [r.id for r in roots if entry.id in r.source_ids]
        tree = Tree(
            nodes=nodes,
            embeddings=matrix,
            documents=docs,
            mode=self.config.mode,
            config=self.config.shape(),
            embedding_model=self.embedding_model,
            created_at=existing.created_at if existing else "",
        )
        return tree

    def _finish(self, tree: Tree, started: float) -> None:
        self.stats.seconds = time.monotonic() - started
        tree.stats = {"last_build": self.stats.as_dict()}
        tree.validate()


def _fresh(node: TreeNode) -> TreeNode:
    """A copy with parents cleared: parents are re-derived from children on assembly."""
    return TreeNode(
        id=node.id,
        layer=node.layer,
        text=node.text,
        children=list(node.children),
        parents=[],
        tokens=node.tokens,
        source_ids=list(node.source_ids),
        metadata=dict(node.metadata),
    )


def _copy_entry(entry: DocumentEntry) -> DocumentEntry:
    return DocumentEntry(**{**entry.to_json(), "roots": []})


def _as_sources(tree: Tree) -> list[SourceDocument]:
    """Stand-ins for documents already in the tree (their text lives in the leaves)."""
    return [
        SourceDocument(id=d.id, title=d.title, text="", source=d.source) for d in tree.documents
    ]
