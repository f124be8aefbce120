"""The embedded server's llama.cpp parameters come from the settings, through the shared
server's spec, without starting a model: ``LlamaServer.params`` is what ``start`` launches
(and what ``benchmarks/server_speed.py`` varies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.runtime.llama_server import LlamaServer
from agent.runtime.shared_server import ServerSpec
from agent.settings import Settings

xllamacpp = pytest.importorskip("xllamacpp")


def test_the_parameters_carry_every_setting() -> None:
    server = LlamaServer(
        Path("m.gguf"), alias="m", n_ctx=4096, threads=2, parallel=2, cache_reuse=256
    )
    params = server.params(xllamacpp)
    assert params.model.path == "m.gguf" and params.n_ctx == 4096 and params.n_parallel == 2
    assert params.cpuparams.n_threads == params.cpuparams_batch.n_threads == 2
    assert params.n_cache_reuse == 256 and params.model_alias == {"m"}
    assert params.no_extra_bufts is False  # llama.cpp's repacked weights, its default
    plain = LlamaServer(Path("m.gguf"), alias="m", repack=False).params(xllamacpp)
    assert plain.no_extra_bufts is True


def test_repacking_is_a_setting_of_the_shared_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPTREE_LLM__LOCAL_REPACK", raising=False)
    assert Settings().llm.local_repack is False  # measured faster here (planner-repack.md)
    monkeypatch.setenv("HOPTREE_LLM__LOCAL_REPACK", "true")
    assert Settings().llm.local_repack is True
    wanted = ServerSpec(gguf="m.gguf", alias="m", repack=False)
    running = ServerSpec(gguf="m.gguf", alias="m")
    assert wanted.llama_server().repack is False and running.llama_server().repack is True
    # a server started with other weights' layout is another server: it is named, not shared
    assert wanted.differences(running) == ["repack: True (wanted False)"]
    assert ServerSpec.from_json(wanted.to_json()) == wanted
