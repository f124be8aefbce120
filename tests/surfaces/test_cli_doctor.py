"""`hoptree doctor` and `hoptree demo` as a user runs them: a subprocess, real parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import run_hoptree


@pytest.mark.llm
def test_doctor_json_reports_every_part(local_chat, tmp_path: Path) -> None:
    env = {
        "HOPTREE_DATA_DIR": str(tmp_path / "data"),
        "HOPTREE_LLM__GGUF_PATH": local_chat.details["gguf"],
        "HOPTREE_LLM__LOCAL_CTX": "2048",
        "HOPTREE_LLM__LOCAL_IDLE_S": "0",
    }
    proc = run_hoptree(["doctor", "--json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    assert report["llm"]["ok"] is True and report["llm"]["embedded"] is True
    assert report["llm"]["model"]
    assert report["llm"]["tokens_per_second"] > 0
    # the server's own clock: reading and writing speeds apart (they differ a few times on a CPU)
    assert report["llm"]["prompt_tokens_per_second"] > 0
    assert report["llm"]["decode_tokens_per_second"] > 0
    assert report["llm"]["structured_output"] is True
    # the model ran as the data dir's shared server, started by this doctor, used by it alone
    assert "started by this process" in report["llm"]["server"]
    assert report["llm"]["shared_server"]["users"] == 1
    assert report["llm"]["shared_server"]["healthy"] is True
    assert report["embeddings"]["ok"] is True and report["embeddings"]["dim"] == 384
    assert report["embeddings"]["sentences_per_second"] > 0
    assert report["index"]["built"] is False


def test_doctor_exits_1_and_names_each_broken_part(tmp_path: Path) -> None:
    env = {
        "HOPTREE_DATA_DIR": str(tmp_path / "data"),
        "HOPTREE_LLM__GGUF_PATH": str(tmp_path / "missing.gguf"),
        "HOPTREE_EMBEDDINGS__MODEL": str(tmp_path / "no-such-model"),
    }
    proc = run_hoptree(["doctor", "--json"], env, tmp_path)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["ok"] is False
    assert report["llm"]["ok"] is False and "missing.gguf" in report["llm"]["error"]
    assert report["embeddings"]["ok"] is False and "no-such-model" in report["embeddings"]["error"]
    assert report["cache"]["ok"] is True  # healthy parts are still reported as healthy


def test_bad_settings_exit_2_with_a_message(tmp_path: Path) -> None:
    proc = run_hoptree(["doctor"], {"HOPTREE_LLM__TEMPERATURE": "hot"}, tmp_path)
    assert proc.returncode == 2
    assert "llm.temperature" in proc.stderr
