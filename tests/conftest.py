"""Shared fixtures. Heavy real parts (the embedding model, the local llama.cpp server) are built
once per session; every test gets its own data directory so caches never leak between tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.settings import Settings, load_settings
from tests.child_env import ONNX_EXPORT_DIR

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# Every test has its own data dir, but the ONNX export of the embedding model (half a minute)
# is made once per machine, in the user's normal data dir, as the local model's GGUF is. Set in
# the environment so CLI subprocesses of the tests find it too.
os.environ.setdefault("HOPTREE_EMBEDDINGS__EXPORT_DIR", ONNX_EXPORT_DIR)
# A model server the tests start in a data dir of theirs stops soon after its last user (the
# session's own model holds a lease until the session ends), not two minutes later.
os.environ.setdefault("HOPTREE_LLM__LOCAL_IDLE_S", "5")


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Defaults with a private data dir; no hoptree.toml or HOPTREE_* from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("HOPTREE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOPTREE_EMBEDDINGS__EXPORT_DIR", ONNX_EXPORT_DIR)
    monkeypatch.setenv("HOPTREE_LLM__LOCAL_IDLE_S", "5")
    monkeypatch.chdir(tmp_path)
    return load_settings(data_dir=tmp_path / "data")


@pytest.fixture(scope="session")
def embeddings():
    """The default backend, as users get it (the torch path has its own tests)."""
    from agent.runtime.embeddings import make_embeddings
    from agent.settings import EmbeddingSettings

    return make_embeddings(EmbeddingSettings(), Path(ONNX_EXPORT_DIR).parent)


@pytest.fixture
def cli(settings: Settings, embeddings, monkeypatch: pytest.MonkeyPatch):
    """``hoptree`` in-process (typer's runner) with a private data dir and the session's
    embedding model, so a test's ``index build`` loads no model of its own."""
    from typer.testing import CliRunner

    import agent.indexing
    from agent.cli.main import app

    monkeypatch.setenv("HOPTREE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setattr(agent.indexing, "_embeddings", lambda _settings: embeddings)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture(scope="session")
def local_chat() -> Iterator:
    """The real embedded model (1.5B, llama.cpp on 127.0.0.1), started once; no response cache.

    The joined GGUF lives in the user's normal data dir so it is assembled once per machine.
    """
    from agent.runtime.chat_models import build_chat_model

    settings = load_settings()
    with build_chat_model(settings, cache=False) as handle:
        yield handle


# A real-model test decodes at a few tokens a second on a busy 2-core machine (a test of the
# doctor measured its 96-token probe past the default 600 s there): it gets three times as long.
LLM_TEST_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("llm") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(LLM_TEST_TIMEOUT_S))
