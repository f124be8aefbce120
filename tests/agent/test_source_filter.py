"""What a folder source never gives to ``index build`` or ``tree build`` (issue 36 item 5): index
and tree directories, hidden files and folders, what a ``.hoptreeignore`` excludes. Real folders
made in the test; the builds run the real commands (the embedding model, never the LLM)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import agent.indexing
import agent.runtime.runtime
import searchers.index_dir
import tree.store
from agent.cli.tree import tree_app
from searchers import source_filter
from searchers.corpus import expand_sources, select_sources
from tests.scripted_chat import ScriptedChatModel
from tests.tree.test_build import ASTRONOMY, BAKING, reply
from tree.build import TreeBuilder, TreeConfig
from tree.documents import read_documents, select_paths
from tree.store import save_tree


def _write(path: Path, text: str = "Some words about rivers.\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _rel(root: Path, paths: list[Path]) -> list[str]:
    return [p.relative_to(root).as_posix() for p in paths]


def _skips(root: Path, skipped: list[source_filter.SkippedSource]) -> dict[str, str]:
    return {s.path.relative_to(root).as_posix(): s.reason for s in skipped}


def test_the_store_layouts_are_the_writers_own() -> None:
    assert source_filter.INDEX_MANIFEST == searchers.index_dir.MANIFEST
    assert source_filter.INDEX_FORMAT == searchers.index_dir.FORMAT_NAME
    assert source_filter.STORE_LOCK == searchers.index_dir.LOCK_FILE == tree.store.LOCK_FILE
    assert source_filter._GENERATION.fullmatch(f"{searchers.index_dir.GENERATION_PREFIX}000001")
    assert source_filter.TREE_POINTER == tree.store.CURRENT_FILE
    assert source_filter.TREE_JOURNAL == tree.store.JOURNAL_FILE
    assert source_filter._TREE_VERSION.fullmatch(f"{tree.store.VERSION_PREFIX}000007")


def test_hidden_files_and_folders_are_skipped_unless_named(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    _write(notes / "a.txt")
    _write(notes / ".draft.md")
    _write(notes / ".obsidian" / "workspace.json", '{"text": "editor state"}\n')
    _write(notes / "sub" / ".cache" / "c.txt")
    _write(notes / "sub" / "b.md", "# B\n\nbody\n")
    _write(notes / ".DS_Store", "x")  # not a source type: neither read nor reported
    selection = select_sources([notes])
    assert _rel(notes, selection.files) == ["a.txt", "sub/b.md"]
    assert _skips(notes, selection.skipped) == {
        ".draft.md": "hidden",
        ".obsidian": "hidden",
        "sub/.cache": "hidden",
    }
    assert selection.skipped[0].describe() == f"{notes / '.draft.md'}: a hidden file"
    # a hidden folder named on the command line is read (its own hidden entries are not)
    hidden = tmp_path / ".private"
    _write(hidden / "p.txt")
    _write(hidden / ".q.txt")
    assert expand_sources([hidden]) == [hidden / "p.txt"]
    # so is a hidden file named explicitly
    assert expand_sources([notes / ".draft.md"]) == [notes / ".draft.md"]
    assert select_paths([hidden]).files == [hidden / "p.txt"]  # the tree reads the same


def test_hoptreeignore_directory_negation_and_nested_files(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    _write(
        root / ".hoptreeignore",
        "# drafts anywhere, every .txt but keep.txt, top.md only at the top\n"
        "drafts/\n*.txt\n!keep.txt\n/top.md\n!drafts/rescued.md\n",
    )
    _write(root / "top.md")
    _write(root / "keep.txt")
    _write(root / "notes.txt")
    _write(root / "guide.md")
    _write(root / "drafts" / "d.md")
    _write(root / "drafts" / "rescued.md")  # below an ignored folder: cannot be re-included
    _write(root / "sub" / "top.md")  # /top.md is anchored to the ignore file's folder
    _write(root / "sub" / "drafts" / "deep.md")
    _write(root / "sub" / "kept.txt")
    _write(root / "sub" / "wanted.txt")
    _write(root / "sub" / "secret.md")
    _write(root / "sub" / "keep.txt")
    # a nested ignore file: its patterns are relative to sub/, and its lines win over the top's
    _write(root / "sub" / ".hoptreeignore", "secret.md\n!wanted.txt\nkeep.txt\n")
    selection = select_sources([root])
    assert _rel(root, selection.files) == ["guide.md", "keep.txt", "sub/top.md", "sub/wanted.txt"]
    assert _skips(root, selection.skipped) == {
        "drafts": "ignored",
        "notes.txt": "ignored",
        "sub/drafts": "ignored",
        "sub/keep.txt": "ignored",
        "sub/kept.txt": "ignored",
        "sub/secret.md": "ignored",
        "top.md": "ignored",
    }
    details = {s.path.name: s.detail for s in selection.skipped}
    assert details["drafts"] == f"ignored by {root / '.hoptreeignore'}: drafts/"
    assert details["secret.md"] == f"ignored by {root / 'sub' / '.hoptreeignore'}: secret.md"
    assert details["kept.txt"].endswith(": *.txt")
    # the tree reads the same files (of the suffixes both read)
    assert select_paths([root]).files == selection.files
    assert [d.id for d in read_documents([root])] == ["guide", "keep", "top", "wanted"]
    # a file named on the command line is read even when an ignore file would exclude it
    assert expand_sources([root / "notes.txt"]) == [root / "notes.txt"]


def test_stores_are_skipped_with_everything_below(tmp_path: Path) -> None:
    root = tmp_path / "src"
    _write(root / "a.md")
    index = root / "idx"
    _write(index / "manifest.json", json.dumps({"format": "hoptree-index", "format_version": 9}))
    _write(index / "gen-000001" / "passages.jsonl", '{"id": "x", "text": "stored"}\n')
    _write(index / "notes.txt")  # anything below a store, whatever it is
    crashed = root / "crashed"  # a first build killed before its first commit
    _write(crashed / ".lock", "")
    _write(crashed / "gen-000001" / "dense" / "config.json", "{}")
    trees = root / "trees"  # a tree store without an index beside it
    _write(trees / "CURRENT", "v-000002\n")
    _write(trees / "v-000002" / "tree.json", '{"format": "hoptree-tree"}')
    building = root / "building"  # a first tree build under way
    _write(building / ".lock", "")
    _write(building / "journal.jsonl", '{"kind": "summary"}\n')
    other = root / "app"  # someone else's manifest.json is a file like any other
    _write(other / "manifest.json", '{"name": "my web app"}')
    _write(other / "CURRENT", "v-000001\n")  # a pointer naming no folder is not a tree
    selection = select_sources([root])
    assert _rel(root, selection.files) == ["a.md", "app/manifest.json"]
    assert _skips(root, selection.skipped) == {
        "idx": "index",
        "crashed": "index",
        "trees": "index",
        "building": "index",
        "app/CURRENT": "unsupported",  # a file of the folder no reader takes: named, not hidden
    }
    details = {s.path.name: s.detail for s in selection.skipped}
    assert details["idx"] == "a hoptree index directory"
    assert details["trees"] == "a hoptree tree directory"
    # an index directory named as a source gives nothing, and says so
    named = select_sources([index])
    assert named.files == [] and [(s.path, s.reason) for s in named.skipped] == [(index, "index")]
    assert select_paths([root]).files == selection.files


# --------------------------------------------------------------------------- real builds


def _notes(root: Path) -> Path:
    _write(root / "river.txt", "The Zorblat river flows through Quenton city. It is 120 km long.\n")
    _write(root / "lake.md", "# Lake\n\nLake Morva lies north of Quenton. It is 40 m deep.\n")
    return root


def test_an_index_inside_its_source_folder_never_reads_itself(cli, tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes")
    index = notes / "idx"
    first = cli("index", "build", str(notes), "--index", str(index), "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert sorted(s["name"] for s in report["sources"]) == ["lake.md", "river.txt"]
    assert report["added"] == 2 and report["total"] == 2
    again = cli("index", "build", str(notes), "--index", str(index), "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert (report["changed"], report["added"], report["total"]) == (False, 0, 2)
    assert sorted(s["name"] for s in report["sources"]) == ["lake.md", "river.txt"]
    human = cli("index", "build", str(notes), "--index", str(index))
    assert human.exit_code == 0, human.output
    assert "nothing new; 0 passage(s); 2 in the index" in human.stdout
    skipped = select_sources([notes]).skipped
    assert [(s.path, s.reason) for s in skipped] == [(index, "index")]


def test_index_build_dot_into_a_hidden_index(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _notes(tmp_path / "work")
    _write(notes / ".hoptreeignore", "scratch/\n")
    _write(notes / "scratch" / "todo.txt", "Buy milk.\n")
    monkeypatch.chdir(notes)
    for added in (2, 0):
        result = cli("index", "build", ".", "--index", ".hoptree", "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert (report["added"], report["total"]) == (added, 2)
        assert sorted(s["name"] for s in report["sources"]) == ["lake.md", "river.txt"]
    assert (notes / ".hoptree" / "manifest.json").is_file()


def test_tree_build_beside_its_own_store_finds_nothing_new(
    embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("HOPTREE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "data"))
    books = tmp_path / "books"
    _write(books / "stars.txt", " ".join(ASTRONOMY))
    _write(books / "bread.md", "# Bread\n\n" + " ".join(BAKING))
    _write(books / ".notes.md", "# Hidden\n\nnot a book\n")
    _write(books / ".hoptreeignore", "drafts/\n")
    _write(books / "drafts" / "soup.md", "# Soup\n\nnot yet\n")
    index = books / "idx"
    config = TreeConfig(clustering="leiden", chunk_tokens=20)
    builder = TreeBuilder(
        ScriptedChatModel(replies=[reply] * 100),
        embeddings,
        config,
        embedding_model="all-MiniLM-L6-v2",
    )
    documents = read_documents([books])
    assert sorted(d.id for d in documents) == ["bread", "stars"]
    save_tree(asyncio.run(builder.build(documents)), index / "tree")
    assert [(s.path, s.reason) for s in select_paths([books]).skipped] == [
        (books / ".notes.md", "hidden"),
        (books / "drafts", "ignored"),
        (index / "tree", "index"),
    ]

    def no_model(*_args, **_kwargs):
        raise AssertionError("tree build started a model with nothing new to summarise")

    monkeypatch.setattr(agent.runtime.runtime, "Runtime", no_model)
    root = typer.Typer()
    root.add_typer(tree_app, name="tree")
    args = ["tree", "build", "--index", str(index), "--clustering", "leiden"]
    result = CliRunner().invoke(root, [*args, "--chunk-tokens", "20", "--json", str(books)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["note"] == "nothing new"
