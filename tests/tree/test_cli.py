"""``hoptree tree build|show`` through typer (the sub-app mounted on a root app, as agent.cli.main
does). One test drives a real build with the real local model, end to end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from agent.cli.tree import tree_app
from tests.locations import TESTS
from tests.scripted_chat import ScriptedChatModel
from tests.tree.test_build import ASTRONOMY, BAKING, reply
from tree.build import TreeBuilder, TreeConfig
from tree.documents import read_documents
from tree.store import Tree, load_tree, save_tree

root = typer.Typer()
root.add_typer(tree_app, name="tree")
runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment with a private data dir; returns a source directory with two books."""
    for name in list(__import__("os").environ):
        if name.startswith("HOPTREE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "data"))
    books = tmp_path / "books"
    books.mkdir()
    (books / "stars.txt").write_text(" ".join(ASTRONOMY))
    (books / "bread.md").write_text("# Bread\n\n" + " ".join(BAKING))
    return books


def _prebuild(embeddings, books: Path, index: Path) -> None:
    config = TreeConfig(clustering="leiden", chunk_tokens=20)
    builder = TreeBuilder(
        ScriptedChatModel(replies=[reply] * 100),
        embeddings,
        config,
        embedding_model="all-MiniLM-L6-v2",
    )
    tree = asyncio.run(builder.build(read_documents([books])))
    save_tree(tree, index / "tree")


def test_show_json_and_table(env: Path, embeddings, tmp_path: Path) -> None:
    index = tmp_path / "index"
    _prebuild(embeddings, env, index)
    result = runner.invoke(root, ["tree", "show", "--index", str(index), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["layers"][0] == 25 and len(report["layers"]) >= 2  # 24 sentences + "Bread"
    assert report["layers"] == load_tree(index / "tree").layer_counts()
    assert report["mean_children"] > 1 and 0 < report["compression"] < 1
    assert report["llm_calls"] == report["summary_nodes"]
    assert report["prompt_tokens"] == 10 * report["llm_calls"]  # the scripted model's usage
    assert report["documents"] == 2 and report["clustering"] == "leiden"
    table = runner.invoke(root, ["tree", "show", "--index", str(index)])
    assert table.exit_code == 0 and "children/parent" in table.stdout
    assert "ungrounded" in table.stdout


def test_show_prints_the_summaries_that_name_what_their_children_do_not(
    env: Path, embeddings, tmp_path: Path
) -> None:
    index = tmp_path / "index"
    _prebuild(embeddings, env, index)
    tree = load_tree(index / "tree")
    node = next(n for n in tree.nodes if n.layer == 1)
    node.text = "The bakers of Lyon met Paul McCartney here in 1964."
    save_tree(tree, index / "tree")
    args = ["tree", "show", "--index", str(index), "--ungrounded", "3"]
    report = json.loads(runner.invoke(root, [*args, "--json"]).stdout)
    assert report["grounding"]["with_unsupported_terms"] >= 1
    [example] = [e for e in report["ungrounded_examples"] if e["id"] == node.id]
    assert {"lyon", "mccartney", "paul", "1964"} <= set(example["unsupported"])
    table = runner.invoke(root, args, terminal_width=200)
    assert table.exit_code == 0 and f"{node.id} (layer 1), not in its children" in table.stdout


def test_show_without_a_tree(env: Path, tmp_path: Path) -> None:
    result = runner.invoke(root, ["tree", "show", "--index", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert "no tree at" in result.stderr


def test_build_with_nothing_new_starts_no_model(env: Path, embeddings, tmp_path: Path) -> None:
    index = tmp_path / "index"
    _prebuild(embeddings, env, index)
    args = ["tree", "build", "--index", str(index), "--clustering", "leiden"]
    result = runner.invoke(root, [*args, "--chunk-tokens", "20", "--json", str(env)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["note"] == "nothing new"
    other = runner.invoke(root, [*args, str(env)])  # chunk size differs from the stored tree
    assert other.exit_code == 2 and "other settings" in other.stderr and "--rebuild" in other.stderr


def test_build_names_the_files_it_could_not_read_and_exits_3(
    env: Path, embeddings, tmp_path: Path
) -> None:
    from tests.document_files import make_corrupt_pdf

    index = tmp_path / "index"
    _prebuild(embeddings, env, index)
    make_corrupt_pdf(env / "broken.pdf")
    (env / "photo.png").write_bytes(b"\x89PNG")
    args = ["tree", "build", "--index", str(index), "--clustering", "leiden"]
    result = runner.invoke(root, [*args, "--chunk-tokens", "20", "--json", str(env)])
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["note"] == "nothing new"  # the readable rest is in the tree
    stderr = " ".join(result.stderr.split())
    assert "broken.pdf: not a readable PDF" in stderr
    assert "photo.png: unsupported file type .png" in stderr


def test_build_argument_errors(env: Path, tmp_path: Path) -> None:
    index = ["--index", str(tmp_path / "index")]
    bad = runner.invoke(root, ["tree", "build", *index, "--clustering", "kmeans", str(env)])
    assert bad.exit_code == 2 and "gmm or leiden" in bad.stderr
    missing = runner.invoke(root, ["tree", "build", *index, str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr


@pytest.mark.llm
def test_build_and_show_with_the_local_model(
    local_chat, env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tree_summary prompt through ChatOpenAI to the real model: three leaves, one summary;
    then a rebuild that pays nothing."""
    monkeypatch.setenv("HOPTREE_LLM__BASE_URL", local_chat.endpoint)
    monkeypatch.setenv("HOPTREE_LLM__MODEL", local_chat.label)
    source = tmp_path / "short.txt"
    source.write_text(" ".join(ASTRONOMY[:3]))
    index = tmp_path / "index"
    args = ["tree", "build", "--index", str(index), "--chunk-tokens", "20", "--max-words", "40"]
    result = runner.invoke(root, [*args, "--json", str(source)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["layers"] == [3, 1]
    assert report["llm_calls"] == 1 and report["prompt_tokens"] > 50
    assert report["completion_tokens"] > 5 and report["fallback_summaries"] == 0
    assert report["last_build"]["usage_tracker"]["calls"] == 1
    (summary,) = load_tree(index / "tree").layer(1)
    assert len(summary.text.split()) <= 80 and any(
        word in summary.text.lower() for word in ("galaxy", "telescope", "andromeda", "redshift")
    )
    again = runner.invoke(root, [*args, "--rebuild", "--json", str(source)])
    assert again.exit_code == 0, again.output
    last = json.loads(again.stdout)["last_build"]
    assert last["llm_calls"] == 0 and last["summaries_reused"] == 1


def test_the_mode_rule() -> None:
    """--per-document / --one-tree when given; else the extended tree's own mode; else per
    document for a folder of several documents, one tree for files named one by one."""
    from agent.cli.tree import tree_mode
    from tree.documents import SourceDocument

    here = TESTS
    two = [SourceDocument(id=n, title=n, text="x", source=n) for n in ("a", "b")]
    one = two[:1]
    assert tree_mode(None, [here], two, None) == "per_document"
    assert tree_mode(None, [here], one, None) == "single"  # a folder of one document
    assert tree_mode(None, [here / "a.txt", here / "b.txt"], two, None) == "single"
    assert tree_mode(False, [here], two, None) == "single"
    assert tree_mode(True, [here / "a.txt"], one, None) == "per_document"
    single = Tree(nodes=[], embeddings=np.zeros((0, 4), dtype=np.float32), documents=[])
    assert tree_mode(None, [here], two, single) == "single"  # extending keeps the tree's mode
    assert tree_mode(True, [here], two, single) == "per_document"  # (then refused: --rebuild)


def test_a_folder_builds_one_tree_per_document_by_default(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real command and runtime, the chat model a scripted endpoint: the books
    folder gets a tree per book unless --one-tree; the choice is said on stderr."""
    from tests.child_env import ONNX_EXPORT_DIR
    from tests.routed_chat import RoutedChatModel
    from tests.routed_endpoint import routed_endpoint

    chat = RoutedChatModel(routes={"tree_summary": reply})
    monkeypatch.setenv("HOPTREE_EMBEDDINGS__EXPORT_DIR", ONNX_EXPORT_DIR)
    monkeypatch.setenv("HOPTREE_LLM__MODEL", "scripted")
    monkeypatch.setenv("HOPTREE_LLM__API_KEY", "unused")
    monkeypatch.setenv("HOPTREE_LLM__MAX_RETRIES", "0")
    args = ["tree", "build", "--clustering", "leiden", "--chunk-tokens", "20", "--json"]
    with routed_endpoint(chat) as url:
        monkeypatch.setenv("HOPTREE_LLM__BASE_URL", url)
        split = runner.invoke(root, [*args, "--index", str(tmp_path / "a"), str(env)])
        whole = runner.invoke(root, [*args, "--one-tree", "--index", str(tmp_path / "b"), str(env)])
    assert split.exit_code == 0, split.output
    report = json.loads(split.stdout)
    assert report["mode"] == "per_document" and report["documents"] == 2
    assert "one tree per document (2 documents from a folder" in split.stderr
    roots = load_tree(tmp_path / "a" / "tree").roots()
    assert len(roots) >= 2 and all(len({*r.source_ids}) == 1 for r in roots)
    assert whole.exit_code == 0, whole.output
    assert json.loads(whole.stdout)["mode"] == "single"
    assert "one tree per document" not in whole.stderr
