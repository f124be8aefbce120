from __future__ import annotations

from pathlib import Path

import pytest

from agent.settings import Settings, SettingsError, load_settings


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_work_without_any_configuration(settings: Settings, tmp_path: Path) -> None:
    assert settings.llm.embedded
    assert settings.llm.local_model == "qwen2.5-coder-1.5b"
    assert settings.llm.temperature == 0.0
    assert settings.embeddings.model == "all-MiniLM-L6-v2"
    assert settings.data_dir == tmp_path / "data"
    assert settings.llm_cache_path == tmp_path / "data" / "llm_cache.sqlite"
    assert settings.default_index_dir == tmp_path / "data" / "index"


def test_an_experiment_can_keep_its_own_llm_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOPTREE_LLM__CACHE_FILE", str(tmp_path / "arm-a.sqlite"))
    assert Settings().llm_cache_path == tmp_path / "arm-a.sqlite"


def test_file_overrides_default(settings: Settings, tmp_path: Path) -> None:
    cfg = write_toml(
        tmp_path / "custom.toml",
        '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "from-file"\n'
        "[budgets]\nmax_rounds = 5\n",
    )
    loaded = load_settings(cfg)
    assert loaded.llm.model == "from-file"
    assert not loaded.llm.embedded
    assert loaded.budgets.max_rounds == 5
    assert loaded.budgets.max_sub_queries == 8  # untouched keys keep their defaults


def test_hoptree_toml_in_working_dir_is_read(settings: Settings, tmp_path: Path) -> None:
    write_toml(tmp_path / "hoptree.toml", '[llm]\nmodel = "cwd-file"\n')
    assert load_settings().llm.model == "cwd-file"


def test_env_overrides_file(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_toml(tmp_path / "c.toml", '[llm]\nmodel = "from-file"\ntemperature = 0.5\n')
    monkeypatch.setenv("HOPTREE_LLM__MODEL", "from-env")
    loaded = load_settings(cfg)
    assert loaded.llm.model == "from-env"
    assert loaded.llm.temperature == 0.5  # env set one key; the file's other key survives


def test_argument_overrides_env(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_toml(tmp_path / "c.toml", '[llm]\nmodel = "from-file"\nmax_tokens = 77\n')
    monkeypatch.setenv("HOPTREE_LLM__MODEL", "from-env")
    monkeypatch.setenv("HOPTREE_DATA_DIR", str(tmp_path / "env-data"))
    loaded = load_settings(cfg, llm={"model": "from-arg"})
    assert loaded.llm.model == "from-arg"
    assert loaded.llm.max_tokens == 77
    assert loaded.data_dir == tmp_path / "env-data"


def test_config_file_from_env_var(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_toml(tmp_path / "elsewhere.toml", "[embeddings]\nbatch_size = 7\n")
    monkeypatch.setenv("HOPTREE_CONFIG", str(cfg))
    assert load_settings().embeddings.batch_size == 7


def test_bad_values_give_a_clear_error(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPTREE_LLM__TEMPERATURE", "hot")
    with pytest.raises(SettingsError, match=r"llm\.temperature"):
        load_settings()


def test_unknown_keys_are_refused(settings: Settings, tmp_path: Path) -> None:
    cfg = write_toml(tmp_path / "typo.toml", "[llm]\nmodle = 'x'\n")
    with pytest.raises(SettingsError, match="modle"):
        load_settings(cfg)


def test_missing_config_file_is_an_error(settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "nope.toml")


def test_api_key_is_secret(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPTREE_LLM__API_KEY", "sk-very-secret")
    loaded = load_settings()
    assert "sk-very-secret" not in repr(loaded)
    assert loaded.llm.api_key is not None
    assert loaded.llm.api_key.get_secret_value() == "sk-very-secret"


@pytest.mark.parametrize("raw", ["searxng,brave", '["searxng", "brave"]', " searxng , brave "])
def test_web_providers_from_env(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("HOPTREE_WEB__PROVIDERS", raw)
    monkeypatch.setenv("HOPTREE_WEB__BRAVE_API_KEY", "secret")
    loaded = load_settings()
    assert loaded.web.providers == ["searxng", "brave"]
    assert loaded.web.options()["brave_api_key"] == "secret"
    assert "secret" not in repr(loaded)


def test_unknown_web_provider_is_refused(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_WEB__PROVIDERS", "searxng,altavista")
    with pytest.raises(SettingsError, match=r"web\.providers"):
        load_settings()


def test_searcher_settings_reach_the_built_searchers(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.searching import searcher_options
    from searchers.sparse_searcher import SparseSearcherConfig

    monkeypatch.setenv("HOPTREE_SEARCHERS__SPARSE_MAX_DEPTH", "1")
    monkeypatch.setenv("HOPTREE_SEARCHERS__VERIFY_RULE", "extract_and_coverage")
    monkeypatch.setenv("HOPTREE_PLANNER__SEARCHERS", "sparse,tree")
    loaded = load_settings()
    assert loaded.planner.searchers == ["sparse", "tree"]
    config = SparseSearcherConfig(**searcher_options(loaded)["sparse"])
    assert config.max_depth == 1 and config.max_refinements == 27
    assert config.rule.kind == "extract_and_coverage" and config.rule.min_coverage == 0.6
    monkeypatch.setenv("HOPTREE_SEARCHERS__VERIFY_RULE", "maybe")
    with pytest.raises(SettingsError, match=r"searchers\.verify_rule"):
        load_settings()


def test_run_slots_follow_the_chat_endpoint(monkeypatch) -> None:
    from agent.settings import EMBEDDED_RUN_SLOTS, SERVED_RUN_SLOTS, load_settings

    for key in ("HOPTREE_LLM__BASE_URL", "HOPTREE_SERVER__MAX_CONCURRENCY"):
        monkeypatch.delenv(key, raising=False)
    assert load_settings().run_slots() == EMBEDDED_RUN_SLOTS == 2
    served = load_settings(llm={"base_url": "http://127.0.0.1:8000/v1"})
    assert served.run_slots() == SERVED_RUN_SLOTS == 32
    pinned = load_settings(
        llm={"base_url": "http://127.0.0.1:8000/v1"}, server={"max_concurrency": 3}
    )
    assert pinned.run_slots() == 3


def test_each_searcher_has_its_own_table_and_a_plugin_gets_its_table_as_written(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from agent.searching import searcher_options
    from searchers.registry import SearcherContext, SearcherRegistry, SearcherSpec
    from searchers.searcher import SearchResult

    toml = tmp_path / "hoptree.toml"
    toml.write_text(
        "[searchers.sparse]\nmax_refinements = 5\n"
        '[searchers.wiki_titles]\nboost = 2.5\nfields = ["title"]\n'
    )
    monkeypatch.setenv("HOPTREE_SEARCHERS__DENSE__MAX_REWRITES", "2")
    monkeypatch.setenv("HOPTREE_SEARCHERS__WIKI_TITLES__LANGUAGE", "en")
    loaded = load_settings(toml)
    options = searcher_options(loaded)
    assert options["sparse"]["max_refinements"] == 5 and options["sparse"]["max_depth"] == 3
    assert options["dense"]["max_rewrites"] == 2
    assert options["wiki_titles"] == {"boost": 2.5, "fields": ["title"], "language": "en"}

    seen: list[dict] = []

    class Titles:
        name, description = "wiki_titles", "a plugin"

        async def search(self, query: str, *, k: int = 10) -> SearchResult:
            return SearchResult.failed(self.name, query, "unused", 0.0)

    def factory(context: SearcherContext) -> Titles:
        seen.append(dict(context.options_for("wiki_titles")))
        return Titles()

    registry = SearcherRegistry([SearcherSpec("wiki_titles", "a plugin", factory)])
    registry.create("wiki_titles", SearcherContext(chat=None, options=options))  # type: ignore[arg-type]
    assert seen == [{"boost": 2.5, "fields": ["title"], "language": "en"}]


def test_a_searcher_table_that_is_not_a_table_is_refused(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_SEARCHERS__WIKI_TITLES", "on")
    with pytest.raises(SettingsError, match=r"searchers\.wiki_titles must be a table"):
        load_settings()
    monkeypatch.delenv("HOPTREE_SEARCHERS__WIKI_TITLES")
    monkeypatch.setenv("HOPTREE_SEARCHERS__SPARSE__MAX_DEPHT", "1")  # a typo in a built-in's
    with pytest.raises(SettingsError, match=r"max_depht"):
        load_settings()
