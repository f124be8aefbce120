"""Clustering: tiny inputs, clusters that will not split, limits, determinism, Leiden schedule."""

from __future__ import annotations

import numpy as np
import pytest

from tree.clustering import (
    Clusterer,
    GMMClusterer,
    LeidenClusterer,
    canonical,
    enforce_limits,
    knn_edges,
    make_clusterer,
    split_by_order,
)


def unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def blobs(centres: int, per: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    middle = rng.normal(size=(centres, dim)) * 4
    return unit(np.concatenate([c + rng.normal(size=(per, dim)) for c in middle]))


def check_partition(clusters: list[list[int]], n: int) -> None:
    assert clusters, "no clusters"
    assert all(c == sorted(c) and c for c in clusters)
    assert set().union(*map(set, clusters)) == set(range(n)), "a node fell out of the layer"
    assert [c[0] for c in clusters] == sorted(c[0] for c in clusters)


CLUSTERERS = [GMMClusterer(), LeidenClusterer()]


@pytest.mark.parametrize("clusterer", CLUSTERERS, ids=lambda c: c.name)
@pytest.mark.parametrize("n", [1, 2, 3, 11])
def test_tiny_inputs(clusterer: Clusterer, n: int) -> None:
    vectors = unit(np.random.default_rng(n).normal(size=(n, 32)))
    clusters = clusterer.cluster(vectors, [50] * n, layer=0)
    check_partition(clusters, n)
    assert len(clusters) <= n


@pytest.mark.parametrize("clusterer", CLUSTERERS, ids=lambda c: c.name)
def test_empty_input(clusterer: Clusterer) -> None:
    assert clusterer.cluster(np.zeros((0, 8), dtype=np.float32), [], layer=0) == []


def test_gmm_small_input_is_one_cluster_split_by_order_when_over_budget() -> None:
    vectors = unit(np.random.default_rng(0).normal(size=(11, 16)))
    assert GMMClusterer().cluster(vectors, [10] * 11, 0) == [list(range(11))]
    parts = GMMClusterer(max_cluster_tokens=50).cluster(vectors, [10] * 11, 0)
    assert sorted(len(p) for p in parts) == [3, 4, 4]  # contiguous, balanced, each <= 50 tokens
    assert [i for p in parts for i in p] == list(range(11))


@pytest.mark.parametrize("clusterer", CLUSTERERS, ids=lambda c: c.name)
def test_identical_vectors_respect_the_budget(clusterer: Clusterer) -> None:
    """12 identical vectors: nothing to separate them, and their text is over budget."""
    vectors = unit(np.ones((12, 16)))
    tokens = [400] * 12
    clusters = clusterer.cluster(vectors, tokens, layer=0)
    check_partition(clusters, 12)
    assert all(sum(tokens[i] for i in c) <= clusterer.max_cluster_tokens for c in clusters)


def test_a_cluster_that_refuses_to_split_ends_in_an_order_split() -> None:
    calls: list[int] = []

    def stubborn(members: list[int], depth: int) -> list[list[int]]:
        calls.append(depth)
        return [list(members)]  # the reference recursed forever on this

    tokens = [100] * 30
    result = enforce_limits(
        [list(range(30))], tokens, max_tokens=1000, max_size=30, split=stubborn, max_depth=4
    )
    assert [len(c) for c in result] == [10, 10, 10]
    assert calls == [0]  # no progress at once -> order split, no retry storm


def test_splitting_stops_at_the_depth_limit() -> None:
    calls: list[int] = []

    def peel(members: list[int], depth: int) -> list[list[int]]:
        calls.append(depth)
        return [members[:1], members[1:]]  # progress, but one node at a time

    result = enforce_limits(
        [list(range(40))], [100] * 40, max_tokens=500, max_size=40, split=peel, max_depth=3
    )
    assert max(calls) == 2 and len(calls) == 3
    assert all(sum(100 for _ in c) <= 500 for c in result)
    assert set().union(*map(set, result)) == set(range(40))


def test_a_single_oversized_node_stays_alone() -> None:
    result = enforce_limits(
        [[0, 1, 2]],
        [5000, 10, 10],
        max_tokens=100,
        max_size=10,
        split=lambda members, depth: None,
        max_depth=2,
    )
    assert result == [[0], [1, 2]]


def test_split_by_order_balances_tokens_and_handles_zero_tokens() -> None:
    assert split_by_order(list(range(6)), [10, 10, 10, 10, 10, 10], 30, 100) == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    assert split_by_order([0, 1, 2, 3], [0, 0, 0, 0], 10, 2) == [[0, 1], [2, 3]]
    assert split_by_order([0], [999], 10, 10) == [[0]]


def test_canonical_sorts_and_dedupes() -> None:
    assert canonical([[3, 1], [1, 3], [], [0]]) == [[0], [1, 3]]


@pytest.mark.parametrize("clusterer", CLUSTERERS, ids=lambda c: c.name)
def test_deterministic_for_a_seed(clusterer: Clusterer) -> None:
    vectors = blobs(4, 15)
    tokens = [120] * len(vectors)
    first = clusterer.cluster(vectors, tokens, layer=0)
    assert clusterer.cluster(vectors, tokens, layer=0) == first
    check_partition(first, len(vectors))
    assert 1 < len(first) < len(vectors)


def test_gmm_soft_membership_and_budget_on_blobs() -> None:
    vectors = blobs(3, 20)
    tokens = [100] * 60
    clusters = GMMClusterer(max_cluster_tokens=800).cluster(vectors, tokens, layer=0)
    check_partition(clusters, 60)
    assert all(len(c) <= 8 for c in clusters)


def test_leiden_finds_separated_groups() -> None:
    vectors = blobs(3, 20)
    clusters = LeidenClusterer().cluster(vectors, [10] * 60, layer=0)
    assert sorted(clusters) == [list(range(0, 20)), list(range(20, 40)), list(range(40, 60))]


def test_leiden_schedule_per_layer() -> None:
    leiden = LeidenClusterer()
    assert [leiden.k_for(layer) for layer in range(4)] == [15, 20, 25, 30]
    assert [leiden.resolution_for(layer) for layer in (0, 1, 2, 4, 5, 9)] == pytest.approx(
        [1.0, 0.8, 0.6, 0.2, 0.1, 0.1]
    )


def test_leiden_caps_cluster_size() -> None:
    vectors = unit(np.ones((250, 8)) + np.random.default_rng(1).normal(size=(250, 8)) * 1e-3)
    clusters = LeidenClusterer(max_cluster_tokens=10**9).cluster(vectors, [1] * 250, layer=3)
    check_partition(clusters, 250)
    assert max(len(c) for c in clusters) <= 100


def test_knn_graph_is_symmetric_without_self_loops() -> None:
    vectors = blobs(2, 5, dim=8)
    edges = knn_edges(vectors, 3)
    assert all(i < j for i, j in edges)
    assert all(w > 0 for w in edges.values())
    degree = np.zeros(10, dtype=int)
    for i, j in edges:
        degree[i] += 1
        degree[j] += 1
    assert degree.min() >= 3
    assert knn_edges(vectors[:1], 3) == {}


def test_make_clusterer() -> None:
    assert make_clusterer("gmm", seed=1).describe()["seed"] == 1
    assert make_clusterer("leiden").name == "leiden"
    with pytest.raises(ValueError, match="unknown clustering"):
        make_clusterer("kmeans")
