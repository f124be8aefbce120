"""``evals.peers.offline``: tiktoken finds its encodings in an installed wheel (named as its cache
expects, checked as it checks them) and loads them without the network; a folder that lacks
them is not used, and no such folder at all is an error naming the encoding."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evals.peers import offline
from evals.peers.offline import OfflineError, tiktoken_cache_dir, tiktoken_cache_file
from tests.peer_endpoint import outside_connections


def test_tiktoken_cache_file_is_the_sha1_of_the_encodings_url() -> None:
    assert tiktoken_cache_file("cl100k_base") == "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"


def test_tiktoken_loads_cl100k_base_from_a_wheel_without_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load = pytest.importorskip("tiktoken.load", reason="tiktoken is not installed")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: not used
    try:
        folder = tiktoken_cache_dir()
    except OfflineError:
        pytest.skip("no installed wheel ships cl100k_base (litellm, llama-index-core)")
    assert folder != tmp_path and os.environ["TIKTOKEN_CACHE_DIR"] == str(folder)
    assert (folder / tiktoken_cache_file("cl100k_base")).is_file()
    url, sha256 = offline.TIKTOKEN_ENCODINGS["cl100k_base"]
    with outside_connections() as outside:  # read from the file, not from tiktoken's memo
        ranks = load.load_tiktoken_bpe(url, expected_hash=sha256)
    assert outside == [] and len(ranks) > 100_000


def test_no_folder_with_the_encoding_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(offline, "_SHIPPED", ())
    with pytest.raises(OfflineError, match="cl100k_base"):
        tiktoken_cache_dir()
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)
    with pytest.raises(KeyError):
        tiktoken_cache_dir(("no_such_encoding",))
