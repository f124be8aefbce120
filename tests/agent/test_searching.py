"""The planner's searchers follow the index unless the user chose them: sparse and dense, plus
the RAPTOR tree searcher when `hoptree tree build` has committed a tree in the index; a list
the user set (environment, TOML, ``--searcher``) is taken as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.searching import index_has_tree, planner_searchers
from agent.settings import Settings, load_settings
from tree.store import CURRENT_FILE, TREE_FILE


def commit_fake_tree(index: Path) -> None:
    """What ``tree_exists`` looks for: ``CURRENT`` naming a version with a ``tree.json``."""
    version = index / "tree" / "v-000001"
    version.mkdir(parents=True)
    (version / TREE_FILE).write_text("{}")
    (index / "tree" / CURRENT_FILE).write_text("v-000001\n")


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(__import__("os").environ):
        if name.startswith("HOPTREE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


def test_an_index_without_a_tree_gets_sparse_and_dense(clean_env: Path) -> None:
    settings = load_settings()
    assert settings.planner.searchers is None  # unset: the index decides
    assert planner_searchers(settings, clean_env / "idx") == ["sparse", "dense"]


def test_a_tree_directory_without_a_committed_tree_is_no_tree(clean_env: Path) -> None:
    """A first build killed before its commit leaves ``tree/`` with a journal only."""
    (clean_env / "idx" / "tree").mkdir(parents=True)
    (clean_env / "idx" / "tree" / "journal.jsonl").write_text("")
    assert not index_has_tree(clean_env / "idx")
    assert planner_searchers(load_settings(), clean_env / "idx") == ["sparse", "dense"]


def test_an_index_with_a_tree_adds_the_tree_searcher(clean_env: Path) -> None:
    commit_fake_tree(clean_env / "idx")
    assert index_has_tree(clean_env / "idx")
    assert planner_searchers(load_settings(), clean_env / "idx") == ["sparse", "dense", "tree"]


@pytest.mark.parametrize("value", ["sparse,dense", "sparse", '["dense"]'])
def test_an_explicit_setting_wins_over_the_tree(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    commit_fake_tree(clean_env / "idx")
    monkeypatch.setenv("HOPTREE_PLANNER__SEARCHERS", value)
    expected = {"sparse,dense": ["sparse", "dense"], "sparse": ["sparse"]}.get(value, ["dense"])
    assert planner_searchers(load_settings(), clean_env / "idx") == expected


def test_the_toml_setting_wins_too(clean_env: Path) -> None:
    commit_fake_tree(clean_env / "idx")
    (clean_env / "hoptree.toml").write_text('[planner]\nsearchers = ["sparse", "web"]\n')
    assert planner_searchers(load_settings(), clean_env / "idx") == ["sparse", "web"]


def test_an_empty_value_means_the_default(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commit_fake_tree(clean_env / "idx")
    monkeypatch.setenv("HOPTREE_PLANNER__SEARCHERS", "")
    assert load_settings().planner.searchers is None
    assert planner_searchers(load_settings(), clean_env / "idx") == ["sparse", "dense", "tree"]


def test_other_planner_settings_leave_the_searchers_unset(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_PLANNER__K", "5")
    commit_fake_tree(clean_env / "idx")
    settings = load_settings()
    assert settings.planner.k == 5
    assert planner_searchers(settings, clean_env / "idx") == ["sparse", "dense", "tree"]


def test_the_settings_round_trip_keeps_the_choice_open(clean_env: Path) -> None:
    """The server and the studio graph key their caches on the settings' JSON: None must
    survive a dump and reload as "unset", not turn into a chosen list."""
    settings = load_settings()
    again = Settings.model_validate_json(settings.model_dump_json())
    assert again.planner.searchers is None


def test_the_studio_graph_follows_the_same_rule(clean_env: Path) -> None:
    from agent.studio_graph import studio_options

    commit_fake_tree(clean_env / "idx")
    options = studio_options({"configurable": {"index_dir": str(clean_env / "idx")}})
    assert options.searchers == ("sparse", "dense", "tree")
    chosen = studio_options(
        {"configurable": {"index_dir": str(clean_env / "idx"), "searchers": "sparse"}}
    )
    assert chosen.searchers == ("sparse",)
