"""Grouping one layer's nodes into the clusters the next layer summarizes.

Two strategies behind one ``Clusterer`` protocol, both seeded and deterministic:

``GMMClusterer`` (RAPTOR): UMAP to ``reduction_dim`` dimensions (cosine), a Gaussian mixture whose
component count minimizes BIC, a global pass and then a local pass inside each global cluster,
soft membership (a node joins every cluster whose probability exceeds ``threshold``; a node that
passes none joins its most probable one, so nothing drops out of the tree as in the reference).

``LeidenClusterer`` (enhanced RAPTOR): Leiden communities on a k-nearest-neighbour cosine graph,
with k = 15 + 5 per layer and resolution 1.0 - 0.2 per layer (at least 0.1); hard membership.

Both then enforce the summarizer's limits (``enforce_limits``): a cluster whose text exceeds
``max_cluster_tokens`` (or, for Leiden, whose size exceeds ``max_cluster_size``) is clustered
again on its own; when that does not make progress (identical vectors, a recursion depth limit)
it is split by document order into contiguous, token-balanced parts. Every step of that loop
makes each part strictly smaller, so it always ends.

The reference's small-input failures are guarded: UMAP's ``n_neighbors``/``n_components`` are
capped by the input size, and a GMM input of at most ``reduction_dim + 1`` nodes (where UMAP's
spectral layout and a 10-dimensional mixture are degenerate; the reference stops the whole tree
there) becomes one cluster, split by order only if its text is over budget.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

Clusters = list[list[int]]
# (members, depth) -> parts, indices into the layer; None = "cannot split, use the fallback"
SplitFn = Callable[[list[int], int], Clusters | None]


@runtime_checkable
class Clusterer(Protocol):
    name: str
    max_cluster_tokens: int

    def cluster(self, vectors: np.ndarray, tokens: Sequence[int], layer: int) -> Clusters:
        """Clusters of row indices for the nodes of ``layer`` (0 = leaves).

        Each cluster is sorted and non-empty, together they cover every row (they may overlap),
        and they come ordered by first member, so the next layer keeps document order.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """Every parameter that changes the result; recorded in the store and journal keys."""
        ...


# --------------------------------------------------------------------------- shared limits


def canonical(clusters: Sequence[Sequence[int]]) -> Clusters:
    """Sorted members, no empty or duplicate clusters, ordered by (first member, size)."""
    seen: set[tuple[int, ...]] = set()
    result: Clusters = []
    for cluster in clusters:
        members = tuple(sorted({int(i) for i in cluster}))
        if members and members not in seen:
            seen.add(members)
            result.append(list(members))
    result.sort(key=lambda c: (c[0], len(c), c))
    return result


def _greedy_by_order(
    members: list[int], tokens: Sequence[int], max_tokens: int, max_size: int
) -> Clusters:
    groups: Clusters = []
    current: list[int] = []
    size = 0
    for index in members:
        if current and (size + tokens[index] > max_tokens or len(current) >= max_size):
            groups.append(current)
            current, size = [], 0
        current.append(index)
        size += tokens[index]
    if current:
        groups.append(current)
    return groups


def split_by_order(
    members: list[int], tokens: Sequence[int], max_tokens: int, max_size: int
) -> Clusters:
    """Contiguous parts in document order, each within both limits (a lone oversized node is
    its own part). Tries the fewest token-balanced parts first, so the last part is not a stub;
    falls back to greedy packing, which always fits."""
    n = len(members)
    total = sum(tokens[i] for i in members)
    if n < 2:
        return [list(members)]
    fewest = max(2, math.ceil(total / max(max_tokens, 1)), math.ceil(n / max(max_size, 1)))
    for parts in range(fewest, min(n, fewest + 8) + 1):
        if total > 0:
            cumulative = 0
            labels = []
            for index in members:
                middle = cumulative + tokens[index] / 2
                labels.append(min(parts - 1, int(parts * middle / total)))
                cumulative += tokens[index]
        else:
            labels = [min(parts - 1, j * parts // n) for j in range(n)]
        groups: Clusters = [[] for _ in range(parts)]
        for index, label in zip(members, labels, strict=True):
            groups[label].append(index)
        groups = [g for g in groups if g]
        if len(groups) >= 2 and all(
            len(g) == 1 or (sum(tokens[i] for i in g) <= max_tokens and len(g) <= max_size)
            for g in groups
        ):
            return groups
    return _greedy_by_order(members, tokens, max_tokens, max_size)


def _progress(parts: Clusters | None, members: list[int]) -> bool:
    if not parts:
        return False
    covered = set().union(*(set(p) for p in parts))
    return covered == set(members) and all(0 < len(p) < len(members) for p in parts)


def enforce_limits(
    clusters: Clusters,
    tokens: Sequence[int],
    *,
    max_tokens: int,
    max_size: int,
    split: SplitFn,
    max_depth: int,
) -> Clusters:
    """Re-cluster (then split by order) every cluster over ``max_tokens`` or ``max_size``.

    Terminates: each part pushed back is strictly smaller than its cluster, and the step counter
    is a belt on top of that proof.
    """
    done: Clusters = []
    stack: list[tuple[list[int], int]] = [(list(c), 0) for c in reversed(clusters)]
    steps_left = 20 * (sum(len(c) for c in clusters) + 1)
    while stack:
        steps_left -= 1
        if steps_left < 0:
            raise RuntimeError("cluster splitting did not converge (this is a bug)")
        members, depth = stack.pop()
        size_tokens = sum(tokens[i] for i in members)
        if len(members) == 1 or (size_tokens <= max_tokens and len(members) <= max_size):
            done.append(members)
            continue
        parts = split(members, depth) if depth < max_depth else None
        if not _progress(parts, members):
            parts = split_by_order(members, tokens, max_tokens, max_size)
        assert parts is not None
        stack.extend((list(p), depth + 1) for p in reversed(parts))
    return canonical(done)


# --------------------------------------------------------------------------- RAPTOR: UMAP + GMM


def _umap(vectors: np.ndarray, n_neighbors: int, dim: int, seed: int) -> np.ndarray:
    import umap  # slow to import (numba); only GMM builds pay for it

    n = len(vectors)
    n_neighbors = max(2, min(n_neighbors, n - 1))
    dim = max(1, min(dim, n - 2))
    with warnings.catch_warnings():
        # random_state forces n_jobs=1 and small inputs make spectral init fall back; both are
        # expected here and only noise on the console.
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(
            n_neighbors=n_neighbors,
            n_components=dim,
            metric="cosine",
            random_state=seed,
            init="spectral" if n > 4 * (dim + 1) else "random",
            n_jobs=1,
        )
        return np.asarray(reducer.fit_transform(vectors), dtype=np.float64)


def _gmm_memberships(
    points: np.ndarray, threshold: float, max_clusters: int, seed: int
) -> tuple[list[list[int]], int]:
    """(cluster labels of each point, number of components), components chosen by BIC."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits

    n = len(points)
    candidates = range(1, max(2, min(max_clusters, n)))
    # One BLAS thread: these matrices are tiny, and thread start-up made each fit 20-30x slower
    # on the 2-core build machine (a 40-point BIC sweep took 20 s instead of under 1 s).
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        bics = [
            GaussianMixture(n_components=k, random_state=seed).fit(points).bic(points)
            for k in candidates
        ]
        best = int(list(candidates)[int(np.argmin(bics))])
        mixture = GaussianMixture(n_components=best, random_state=seed).fit(points)
        probabilities = mixture.predict_proba(points)
    labels = []
    for row in probabilities:
        chosen = [int(c) for c in np.flatnonzero(row > threshold)]
        labels.append(chosen or [int(np.argmax(row))])
    return labels, best


def _members_by_label(labels: list[list[int]], count: int) -> Clusters:
    return [[i for i, own in enumerate(labels) if c in own] for c in range(count)]


@dataclass(frozen=True)
class GMMClusterer:
    """RAPTOR's clustering; the defaults are the paper code's (dim 10, threshold 0.1, 3500
    tokens per cluster, at most 50 components, seed 224)."""

    max_cluster_tokens: int = 3500
    reduction_dim: int = 10
    threshold: float = 0.1
    max_clusters: int = 50
    local_neighbors: int = 10
    seed: int = 224
    max_recluster_depth: int = 4
    name: str = "gmm"

    def describe(self) -> dict[str, Any]:
        return asdict(self)

    def _raptor(self, vectors: np.ndarray) -> Clusters:
        n = len(vectors)
        if n <= self.reduction_dim + 1:
            return [list(range(n))]
        global_points = _umap(
            vectors, int(math.sqrt(n - 1)), min(self.reduction_dim, n - 2), self.seed
        )
        labels, count = _gmm_memberships(
            global_points, self.threshold, self.max_clusters, self.seed
        )
        clusters: Clusters = []
        for members in _members_by_label(labels, count):
            if not members:
                continue
            if len(members) <= self.reduction_dim + 1:
                clusters.append(members)
                continue
            local_points = _umap(
                vectors[members], self.local_neighbors, self.reduction_dim, self.seed
            )
            local_labels, local_count = _gmm_memberships(
                local_points, self.threshold, self.max_clusters, self.seed
            )
            for local in _members_by_label(local_labels, local_count):
                if local:
                    clusters.append([members[j] for j in local])
        return canonical(clusters)

    def cluster(self, vectors: np.ndarray, tokens: Sequence[int], layer: int) -> Clusters:
        if len(vectors) == 0:
            return []

        def split(members: list[int], depth: int) -> Clusters | None:
            return [[members[j] for j in part] for part in self._raptor(vectors[members])]

        return enforce_limits(
            self._raptor(vectors),
            tokens,
            max_tokens=self.max_cluster_tokens,
            max_size=len(vectors),
            split=split,
            max_depth=self.max_recluster_depth,
        )


# --------------------------------------------------------------------------- Leiden


def knn_edges(vectors: np.ndarray, k: int) -> dict[tuple[int, int], float]:
    """Undirected k-NN cosine graph as {(i, j): weight} with i < j; weights are similarities
    floored at a small positive value (Leiden needs non-negative weights)."""
    import faiss

    n = len(vectors)
    k = min(k, n - 1)
    if k < 1:
        return {}
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    scores, neighbours = index.search(np.ascontiguousarray(vectors, dtype=np.float32), k + 1)
    edges: dict[tuple[int, int], float] = {}
    for i in range(n):
        taken = 0
        for score, j in zip(scores[i], neighbours[i], strict=True):
            if j < 0 or j == i or taken >= k:
                continue
            taken += 1
            key = (min(i, int(j)), max(i, int(j)))
            edges[key] = max(edges.get(key, 0.0), max(float(score), 1e-4))
    return edges


@dataclass(frozen=True)
class LeidenClusterer:
    """Enhanced RAPTOR's clustering: layer-adaptive k and resolution, clusters of at most 100."""

    max_cluster_tokens: int = 3500
    base_k: int = 15
    k_step: int = 5
    base_resolution: float = 1.0
    resolution_step: float = 0.2
    min_resolution: float = 0.1
    max_cluster_size: int = 100
    iterations: int = 5
    seed: int = 224
    max_recluster_depth: int = 4
    name: str = "leiden"

    def describe(self) -> dict[str, Any]:
        return asdict(self)

    def k_for(self, layer: int) -> int:
        return self.base_k + self.k_step * layer

    def resolution_for(self, layer: int) -> float:
        return max(self.min_resolution, self.base_resolution - self.resolution_step * layer)

    def _leiden(self, vectors: np.ndarray, k: int, resolution: float) -> Clusters:
        import igraph
        import leidenalg

        n = len(vectors)
        if n <= 1:
            return [list(range(n))]
        edges = knn_edges(vectors, k)
        graph = igraph.Graph(n=n, edges=list(edges))
        partition = leidenalg.find_partition(
            graph,
            leidenalg.RBConfigurationVertexPartition,
            weights=list(edges.values()),
            resolution_parameter=resolution,
            seed=self.seed,
            n_iterations=self.iterations,
        )
        return canonical([list(community) for community in partition])

    def cluster(self, vectors: np.ndarray, tokens: Sequence[int], layer: int) -> Clusters:
        if len(vectors) == 0:
            return []
        k, resolution = self.k_for(layer), self.resolution_for(layer)

        def split(members: list[int], depth: int) -> Clusters | None:
            # A community too big to summarize is first re-run on its own k-NN graph (its inner
            # structure, like GMM's local pass), then at finer resolutions; doubling at once
            # shatters near-duplicate text into singletons.
            finer = resolution * 1.5**depth
            return [[members[j] for j in part] for part in self._leiden(vectors[members], k, finer)]

        return enforce_limits(
            self._leiden(vectors, k, resolution),
            tokens,
            max_tokens=self.max_cluster_tokens,
            max_size=self.max_cluster_size,
            split=split,
            max_depth=self.max_recluster_depth,
        )


def make_clusterer(name: str, **options: Any) -> Clusterer:
    """The clusterer called ``name`` ("gmm" or "leiden") with the given parameter overrides."""
    if name == "gmm":
        return GMMClusterer(**options)
    if name == "leiden":
        return LeidenClusterer(**options)
    raise ValueError(f"unknown clustering {name!r}: use gmm or leiden")
