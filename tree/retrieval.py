"""Retrieval over a stored RAPTOR tree: collapsed tree (the default) and tree traversal.

Collapsed tree (RAPTOR's better mode): every node of every layer sits in one FAISS inner-product
index over unit vectors (so scores are cosines); candidates come best first and are packed into
a token budget (default 2000, the paper's). The packing rule: walk the candidates in rank order
and take a node if its tokens fit in what is left of the budget; a node that would overflow is
skipped and the walk goes on, because a shorter, slightly less similar node may still fit (the
reference code stops at the first overflow and leaves budget unused when a long summary ranks
high). The walk ends when ``max_nodes`` are taken, when what is left of the budget is smaller
than every remaining candidate, or after ``candidate_pool`` candidates (default 1024: far more
than a 2000-token budget of ~100-token nodes can hold, and a bound on the work per query).

Tree traversal: start from the roots (nodes without parents: the top layer, or each document's
root in a per-document collection), keep the ``top_k`` most similar, descend to their children,
keep the ``top_k`` most similar of those, and so on down to the leaves; every kept node is a hit,
top layer first. The same budget rule applies to the kept nodes if a budget is given.

Hybrid hook: candidates come from a ``NodeRanker``. ``DenseNodeRanker`` (FAISS) is the default;
a BM25-over-node-texts ranker fused with it (the corpus's hybrid machinery) plugs in through
``TreeRetriever(ranker=...)`` without touching the packing or the hit format.

Hits are ``searchers.passages.Hit`` with ``retriever="tree"``; the passage metadata says where the
node sits: ``layer`` (0 = leaf), ``children``, ``source_ids`` (documents), ``tokens``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import faiss
import numpy as np
from langchain_core.embeddings import Embeddings

from searchers.passages import Hit, Passage
from searchers.retrieval import RetrievalError
from tree.embedding import embed_texts
from tree.store import Tree, TreeStoreError, load_tree

RETRIEVER_NAME = "tree"
DEFAULT_TOKEN_BUDGET = 2000
DEFAULT_CANDIDATE_POOL = 1024
DEFAULT_TRAVERSAL_K = 5

TreeMode = Literal["collapsed", "traversal"]


@runtime_checkable
class NodeRanker(Protocol):
    """Ranks a tree's nodes for a query: (row in ``tree.nodes``, score), best first."""

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]: ...


class DenseNodeRanker:
    """Cosine ranking of every node of every layer in one FAISS flat inner-product index."""

    def __init__(self, tree: Tree, embeddings: Embeddings) -> None:
        self.tree = tree
        self.embeddings = embeddings
        self.index = faiss.IndexFlatIP(max(tree.dimension, 1))
        if len(tree.nodes):
            self.index.add(np.ascontiguousarray(tree.embeddings, dtype=np.float32))

    def query_vector(self, query: str) -> np.ndarray:
        vector = embed_texts(self.embeddings, [query], self.tree.dimension)
        if vector.shape[1] != self.tree.dimension:
            raise RetrievalError(
                f"the query embedding has {vector.shape[1]} dimensions but the tree was built "
                f"with {self.tree.dimension} ({self.tree.embedding_model or 'unknown model'})"
            )
        return vector

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        limit = min(limit, self.index.ntotal)
        if limit <= 0:
            return []
        scores, rows = self.index.search(self.query_vector(query), limit)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]

    def score_rows(self, query: str, rows: Sequence[int]) -> np.ndarray:
        """Cosine of the query with the given rows (for traversal, which ranks a frontier)."""
        vector = self.query_vector(query)[0]
        return self.tree.embeddings[list(rows)] @ vector


def pack_by_budget(
    ranked: Iterable[tuple[int, float]],
    tokens: Sequence[int],
    budget: int | None,
    max_nodes: int | None = None,
) -> list[tuple[int, float]]:
    """Best-first packing into ``budget`` tokens with the skip-and-continue rule (module doc)."""
    ranked = list(ranked)
    if budget is None:
        return ranked[:max_nodes] if max_nodes is not None else ranked
    # smallest token count from each position on: lets the walk stop once nothing can fit
    suffix_min = [0] * (len(ranked) + 1)
    suffix_min[len(ranked)] = 1 << 62
    for i in range(len(ranked) - 1, -1, -1):
        suffix_min[i] = min(tokens[ranked[i][0]], suffix_min[i + 1])
    taken: list[tuple[int, float]] = []
    left = budget
    for i, (row, score) in enumerate(ranked):
        if max_nodes is not None and len(taken) >= max_nodes:
            break
        if left < suffix_min[i]:
            break
        if tokens[row] <= left:
            taken.append((row, score))
            left -= tokens[row]
    return taken


class TreeRetriever:
    """A ``Retriever`` over one stored tree (which may hold many documents)."""

    name = RETRIEVER_NAME

    def __init__(
        self,
        tree: Tree,
        embeddings: Embeddings,
        *,
        mode: TreeMode = "collapsed",
        token_budget: int | None = DEFAULT_TOKEN_BUDGET,
        traversal_k: int = DEFAULT_TRAVERSAL_K,
        candidate_pool: int = DEFAULT_CANDIDATE_POOL,
        ranker: NodeRanker | None = None,
    ) -> None:
        if mode not in ("collapsed", "traversal"):
            raise ValueError(f"mode must be collapsed or traversal, not {mode!r}")
        model = str(getattr(embeddings, "model_name", "") or "")
        if tree.embedding_model and model and _short(model) != _short(tree.embedding_model):
            raise RetrievalError(
                f"the tree was embedded with {tree.embedding_model!r}, the configured "
                f"embedding model is {model!r}; rebuild the tree or configure that model"
            )
        self.tree = tree
        self.mode: TreeMode = mode
        self.token_budget = token_budget
        self.traversal_k = traversal_k
        self.candidate_pool = candidate_pool
        self.dense = DenseNodeRanker(tree, embeddings)
        self.ranker: NodeRanker = ranker or self.dense
        self._tokens = [n.tokens for n in tree.nodes]
        self._titles = {d.id: d.title for d in tree.documents}

    @classmethod
    def open(cls, path: Path, embeddings: Embeddings, **options: object) -> TreeRetriever:
        """Open the tree stored at ``path`` (``INDEX/tree`` or a version directory)."""
        try:
            tree = load_tree(path)
        except TreeStoreError as exc:
            raise RetrievalError(str(exc)) from exc
        return cls(tree, embeddings, **options)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ Retriever protocol

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        """At most ``k`` hits within the token budget, by the configured mode."""
        if self.mode == "collapsed":
            return self.collapsed(query, max_nodes=k)
        return self.traverse(query)[:k]

    def get(self, passage_id: str) -> Passage | None:
        row = self.tree.index_of.get(passage_id)
        return None if row is None else self._passage(row)

    def __len__(self) -> int:
        return len(self.tree.nodes)

    # ------------------------------------------------------------------ the two modes

    def collapsed(
        self,
        query: str,
        *,
        token_budget: int | None = None,
        max_nodes: int | None = None,
        documents: Sequence[str] | None = None,
        layers: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Nodes of all layers by similarity until the budget is full (module doc for the rule).

        ``documents`` keeps nodes drawn from those documents; ``layers`` keeps nodes of those
        layers (``layers=[0]`` is plain leaf retrieval, the baseline the tree must beat).
        """
        budget = self.token_budget if token_budget is None else token_budget
        filtered = bool(documents) or layers is not None
        pool = len(self.tree.nodes) if filtered else min(self.candidate_pool, len(self.tree.nodes))
        ranked = self.ranker.rank(query, pool)
        if documents:
            wanted = set(documents)
            ranked = [
                (r, s) for r, s in ranked if wanted.intersection(self.tree.nodes[r].source_ids)
            ]
        if layers is not None:
            keep = set(layers)
            ranked = [(r, s) for r, s in ranked if self.tree.nodes[r].layer in keep]
        packed = pack_by_budget(ranked, self._tokens, budget, max_nodes)
        return [self._hit(row, score) for row, score in packed]

    def traverse(
        self, query: str, *, top_k: int | None = None, token_budget: int | None = None
    ) -> list[Hit]:
        """RAPTOR's tree traversal: ``top_k`` per level from the roots down, top level first."""
        k = top_k or self.traversal_k
        budget = self.token_budget if token_budget is None else token_budget
        frontier = [self.tree.index_of[n.id] for n in self.tree.roots()]
        selected: list[tuple[int, float]] = []
        seen: set[int] = set()
        for _level in range(self.tree.depth + 1):  # one level per step, so bounded by the depth
            frontier = [r for r in dict.fromkeys(frontier) if r not in seen]
            if not frontier:
                break
            scores = self.dense.score_rows(query, frontier)
            order = sorted(range(len(frontier)), key=lambda i: (-float(scores[i]), frontier[i]))
            chosen = [(frontier[i], float(scores[i])) for i in order[:k]]
            selected.extend(chosen)
            seen.update(row for row, _ in chosen)
            frontier = [
                self.tree.index_of[child]
                for row, _ in chosen
                for child in self.tree.nodes[row].children
            ]
        packed = pack_by_budget(selected, self._tokens, budget)
        return [self._hit(row, score) for row, score in packed]

    # ------------------------------------------------------------------ hits

    def _passage(self, row: int) -> Passage:
        node = self.tree.nodes[row]
        titles = [self._titles.get(s, s) for s in node.source_ids]
        title = titles[0] if len(titles) == 1 else f"{titles[0]} (+{len(titles) - 1} more)"
        return Passage(
            id=node.id,
            title=title,
            text=node.text,
            metadata={
                "layer": node.layer,
                "children": list(node.children),
                "source_ids": list(node.source_ids),
                "tokens": node.tokens,
                **({"fallback": True} if node.metadata.get("fallback") else {}),
            },
        )

    def _hit(self, row: int, score: float) -> Hit:
        return Hit(passage=self._passage(row), score=score, retriever=RETRIEVER_NAME)


def _short(model: str) -> str:
    """Hub-style and bare names of one model compare equal (".../all-MiniLM-L6-v2")."""
    return model.rstrip("/").rsplit("/", 1)[-1]
