"""The tree store: JSON + NumPy round trip, atomic commits, validation of damaged trees."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tree.report import tree_report
from tree.store import (
    CURRENT_FILE,
    EMBEDDINGS_FILE,
    TREE_FILE,
    DocumentEntry,
    Tree,
    TreeNode,
    TreeStoreError,
    build_lock,
    load_tree,
    save_tree,
    tree_exists,
)

AXES = {"cats": 0, "ships": 1, "bread": 2, "misc": 3}


def vec(**weights: float) -> np.ndarray:
    row = np.zeros(4, dtype=np.float32)
    for axis, weight in weights.items():
        row[AXES[axis]] = weight
    return row / np.linalg.norm(row)


def hand_tree() -> Tree:
    """Two documents, four leaves, two layer-1 summaries, one root.

    root ── s-cats ── a0 "cats" (A), a1 "cats+misc" (A)
         └─ s-mix ─── b0 "ships" (B), b1 "bread" (B)
    """
    rows = [
        ("a0", 0, "Cats purr on warm windowsills.", [], 50, ["A"], vec(cats=1)),
        ("a1", 0, "Cats hunt mice at night.", [], 60, ["A"], vec(cats=1, misc=1)),
        ("b0", 0, "Ships sail across the harbour.", [], 40, ["B"], vec(ships=1)),
        ("b1", 0, "Bread bakes in the stone oven.", [], 70, ["B"], vec(bread=1)),
        ("s-cats", 1, "About cats.", ["a0", "a1"], 30, ["A"], vec(cats=0.9, misc=0.1)),
        ("s-mix", 1, "Ships and bread.", ["b0", "b1"], 30, ["B"], vec(ships=1, bread=1)),
        ("root", 2, "Cats, ships, bread.", ["s-cats", "s-mix"], 20, ["A", "B"],
         vec(cats=1, ships=1, bread=1)),
    ]  # fmt: skip
    parents = {"a0": ["s-cats"], "a1": ["s-cats"], "b0": ["s-mix"], "b1": ["s-mix"]}
    parents |= {"s-cats": ["root"], "s-mix": ["root"]}
    nodes = [
        TreeNode(
            id=i,
            layer=layer,
            text=text,
            children=kids,
            parents=parents.get(i, []),
            tokens=tokens,
            source_ids=sources,
            metadata={"usage": {"calls": 1, "prompt_tokens": 100, "completion_tokens": 10}}
            if layer
            else {},
        )
        for i, layer, text, kids, tokens, sources, _ in rows
    ]
    return Tree(
        nodes=nodes,
        embeddings=np.stack([r[-1] for r in rows]).astype(np.float32),
        documents=[
            DocumentEntry("A", "Cats", "a.txt", "sha-a", 110, 2, ["root"]),
            DocumentEntry("B", "Ships and bread", "b.txt", "sha-b", 110, 2, ["root"]),
        ],
        config={"clustering": "gmm"},
        embedding_model="fake-4d",
        stats={"last_build": {"seconds": 1.5}},
    )


def test_round_trip(tmp_path: Path) -> None:
    tree = hand_tree()
    version = save_tree(tree, tmp_path / "tree")
    assert version.name == "v-000001"
    assert (tmp_path / "tree" / CURRENT_FILE).read_text().strip() == "v-000001"
    loaded = load_tree(tmp_path / "tree")
    assert [n.to_json() for n in loaded.nodes] == [n.to_json() for n in tree.nodes]
    assert [d.to_json() for d in loaded.documents] == [d.to_json() for d in tree.documents]
    assert np.array_equal(loaded.embeddings, tree.embeddings)
    assert loaded.embeddings.dtype == np.float32
    assert loaded.stats == tree.stats and loaded.config == tree.config
    assert loaded.embedding_model == "fake-4d" and loaded.mode == "single"
    assert loaded.layer_counts() == [4, 2, 1] and [r.id for r in loaded.roots()] == ["root"]
    # the JSON is plain data, readable without hoptree
    raw = json.loads((version / TREE_FILE).read_text())
    assert raw["format"] == "hoptree-tree" and raw["layers"] == [4, 2, 1]


def test_a_new_version_replaces_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "tree"
    save_tree(hand_tree(), target)
    second = hand_tree()
    second.nodes[0].text = "Cats purr loudly."
    save_tree(second, target)
    assert load_tree(target).nodes[0].text == "Cats purr loudly."
    assert sorted(p.name for p in target.iterdir() if p.is_dir()) == ["v-000002"]


def test_a_failed_write_leaves_the_previous_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "tree"
    save_tree(hand_tree(), target)

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr("tree.store.json.dump", disk_full)
    changed = hand_tree()
    changed.nodes[0].text = "never committed"
    with pytest.raises(OSError, match="No space"):
        save_tree(changed, target)
    monkeypatch.undo()
    assert load_tree(target).nodes[0].text == "Cats purr on warm windowsills."
    assert sorted(p.name for p in target.iterdir()) == [CURRENT_FILE, "v-000001"]


def test_a_version_directory_loads_directly(tmp_path: Path) -> None:
    version = save_tree(hand_tree(), tmp_path / "tree")
    assert len(load_tree(version).nodes) == 7


def test_missing_tree(tmp_path: Path) -> None:
    assert not tree_exists(tmp_path)
    with pytest.raises(TreeStoreError, match="no tree at"):
        load_tree(tmp_path)


def _mutate(fn: Callable[[Tree], None]) -> Tree:
    tree = hand_tree()
    fn(tree)
    return tree


def _set(tree: Tree, node: int, **values: object) -> None:
    for name, value in values.items():
        setattr(tree.nodes[node], name, value)


BROKEN: dict[str, tuple[Callable[[Tree], None], str]] = {
    "duplicate id": (lambda t: _set(t, 1, id="a0"), "duplicate node id"),
    "missing child": (lambda t: _set(t, 4, children=["a0", "zz"]), "missing child"),
    "child on wrong layer": (lambda t: _set(t, 6, children=["s-cats", "b0"]), "layer 0"),
    "parent not mirrored": (lambda t: _set(t, 0, parents=[]), "does not list its parent"),
    "bogus parent": (lambda t: _set(t, 2, parents=["s-mix", "s-cats"]), "as parent"),
    "leaf with children": (lambda t: _set(t, 0, children=["a1"]), "leaf 'a0' has children"),
    "summary without children": (lambda t: _set(t, 6, children=[]), "has no children"),
    "unknown document": (lambda t: _set(t, 0, source_ids=["Z"]), "unknown or no source"),
    "no document": (lambda t: _set(t, 0, source_ids=[]), "unknown or no source"),
    "negative tokens": (lambda t: _set(t, 0, tokens=-1), "token count"),
    "wrong row count": (
        lambda t: setattr(t, "embeddings", t.embeddings[:-1]),
        "shape",
    ),
    "float64": (lambda t: setattr(t, "embeddings", t.embeddings.astype(np.float64)), "float32"),
    "nan": (lambda t: t.embeddings.__setitem__((0, 0), np.nan), "NaN"),
    "layer order": (
        lambda t: t.nodes.insert(0, t.nodes.pop(4)) or t.embeddings.__setitem__(slice(None), 0.5),
        "ordered by layer",
    ),
    "missing root": (lambda t: setattr(t.documents[0], "roots", ["nope"]), "missing roots"),
    "layer gap": (
        lambda t: [_set(t, i, layer=n.layer + 1 if n.layer else 0) for i, n in enumerate(t.nodes)],
        "layer",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_validation_rejects_damage(case: str, tmp_path: Path) -> None:
    mutate, message = BROKEN[case]
    tree = _mutate(mutate)
    with pytest.raises(TreeStoreError, match=message):
        tree.validate()
    with pytest.raises(TreeStoreError):
        save_tree(tree, tmp_path / "tree")  # a broken tree is never committed
    assert not tree_exists(tmp_path / "tree")


def test_damage_on_disk_is_reported(tmp_path: Path) -> None:
    target = tmp_path / "tree"
    version = save_tree(hand_tree(), target)
    np.save(version / EMBEDDINGS_FILE, np.zeros((7, 5), dtype=np.float32))
    with pytest.raises(TreeStoreError, match="dimension 4"):
        load_tree(target)
    np.save(version / EMBEDDINGS_FILE, np.array([{"x": 1}] * 7, dtype=object))
    with pytest.raises(TreeStoreError, match="cannot read"):
        load_tree(target)  # object arrays would need pickle: refused
    (version / TREE_FILE).write_text("{not json")
    with pytest.raises(TreeStoreError, match="cannot read"):
        load_tree(target)
    (version / TREE_FILE).write_text(json.dumps({"format": "hoptree-tree", "version": 99}))
    with pytest.raises(TreeStoreError, match="format version 99"):
        load_tree(target)


def test_build_lock_is_exclusive(tmp_path: Path) -> None:
    with (
        build_lock(tmp_path),
        pytest.raises(TreeStoreError, match="another tree build"),
        build_lock(tmp_path),
    ):
        pass
    with build_lock(tmp_path):  # released
        pass


def test_report_on_the_hand_made_tree() -> None:
    report = tree_report(hand_tree())
    assert report["layers"] == [4, 2, 1]
    assert report["summary_nodes"] == 3
    assert report["mean_children"] == 2.0
    # (30 + 30 + 20) summary tokens over (50+60 + 40+70 + 30+30) children tokens
    assert report["compression"] == pytest.approx(80 / 280, abs=1e-4)
    assert report["compression_mean_per_parent"] == pytest.approx(
        (30 / 110 + 30 / 110 + 20 / 60) / 3, abs=1e-4
    )
    assert report["per_layer"][0] == {
        "layer": 1,
        "nodes": 2,
        "mean_children": 2.0,
        "compression": pytest.approx(60 / 220, abs=1e-4),
        "share_with_unsupported_terms": 0.0,
    }
    assert (report["llm_calls"], report["prompt_tokens"], report["completion_tokens"]) == (
        3,
        300,
        30,
    )
