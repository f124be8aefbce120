"""With HOPTREE_ES__URL set, `index build` mirrors into Elasticsearch and `retrieve` asks the
cluster. Without a cluster here, the routing is shown by the cluster's own connection error;
with HOPTREE_ES_URL set, the same commands run against a real one."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from tests.cli_process import run_hoptree

LIVE = os.environ.get("HOPTREE_ES_URL")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("es_wiring")
    rows = [
        {"id": "s1", "title": "Solar", "text": "Solar panels turn sunlight into electricity."},
        {"id": "s2", "title": "Eclipse", "text": "A solar eclipse darkens the sky."},
        {"id": "w1", "title": "Wind", "text": "Wind turbines turn moving air into electricity."},
    ]
    path = root / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_an_unreachable_cluster_is_named_in_the_error(corpus: Path, tmp_path: Path) -> None:
    env = {"HOPTREE_ES__URL": "http://127.0.0.1:9", "HOPTREE_ES__TIMEOUT_S": "2"}
    build = run_hoptree(
        ["index", "build", str(corpus), "--index", str(tmp_path / "i")], env, tmp_path
    )
    assert build.returncode == 2
    assert "Elasticsearch at http://127.0.0.1:9" in build.stderr
    assert (tmp_path / "i" / "manifest.json").exists()  # the local index was built all the same
    got = run_hoptree(
        ["retrieve", "--index", str(tmp_path / "i"), "--retriever", "sparse", "solar"],
        env,
        tmp_path,
    )
    assert got.returncode == 2 and "http://127.0.0.1:9" in got.stderr


@pytest.mark.skipif(not LIVE, reason="HOPTREE_ES_URL not set: no Elasticsearch cluster")
def test_build_and_retrieve_through_a_real_cluster(corpus: Path, tmp_path: Path) -> None:
    index_name = f"hoptree-wiring-{uuid.uuid4().hex[:8]}"
    env = {"HOPTREE_ES__URL": str(LIVE), "HOPTREE_ES__INDEX": index_name}
    build = run_hoptree(
        ["index", "build", str(corpus), "--index", str(tmp_path / "i")], env, tmp_path
    )
    assert build.returncode == 0, build.stderr
    got = run_hoptree(
        [
            "retrieve",
            "--index",
            str(tmp_path / "i"),
            "--retriever",
            "sparse",
            "--json",
            "solar -eclipse",
        ],
        env,
        tmp_path,
    )
    assert got.returncode == 0, got.stderr
    ids = [h["id"] for h in json.loads(got.stdout)["hits"]]
    assert ids == ["s1"]
    from searchers.elasticsearch_store import ElasticsearchStore, connect

    ElasticsearchStore(connect(str(LIVE)), index_name).delete()
