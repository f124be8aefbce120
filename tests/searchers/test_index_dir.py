"""The index directory: manifest, idempotent ingest, append, model mismatch, crash safety, lock.

Real tantivy, real FAISS, the real embedding model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from searchers import index_build as index_build_module
from searchers.dense_faiss import FaissDenseIndex
from searchers.index_build import SourceSpec, build_index
from searchers.index_dir import (
    FORMAT_VERSION,
    LOCK_FILE,
    MANIFEST,
    EmbeddingModelMismatchError,
    IndexDir,
    IndexDirError,
    IndexLockedError,
    PassageStore,
)
from searchers.index_generation import DenseOptions
from searchers.locks import exclusive_lock
from searchers.passages import Passage
from tests.locations import TESTS

DATA = TESTS / "data"
MODEL = "all-MiniLM-L6-v2"


def _build(path: Path, embeddings, *names: str, **kw):
    return build_index(
        path,
        [SourceSpec(DATA / n) for n in names],
        embeddings=embeddings,
        embedding_model=kw.pop("model", MODEL),
        **kw,
    )


def _snapshot(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``path`` with its size and modification time in nanoseconds (but the
    build lock, which records the pid of each build that takes it)."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_build_writes_manifest_and_every_retriever_works(tmp_path: Path, embeddings) -> None:
    index_path = tmp_path / "idx"
    report = _build(index_path, embeddings, "passages.jsonl", "hotpot_hf.jsonl")
    assert (report.changed, report.added, report.total, report.generation) == (True, 10, 10, 1)

    manifest = json.loads((index_path / MANIFEST).read_text())
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["embedding"] == {
        "model": MODEL,
        "dimension": 384,
        "backends": [embeddings.backend],
    }
    assert manifest["passages"] == 10
    assert manifest["data_dir"] == "gen-000001"
    assert manifest["created_at"] == manifest["updated_at"]
    components = manifest["components"]
    assert {c["count"] for c in components.values()} == {10}
    assert components["dense"]["kind"] == "flat"
    assert components["sparse"]["backend"] == "tantivy"
    data = index_path / "gen-000001"
    for name, component in components.items():
        assert component["files"], name
        for rel, entry in component["files"].items():
            file = data / component["path"] if name == "passages" else data / name / rel
            assert file.stat().st_size == entry["size"]
    sources = {Path(s["path"]).name: s for s in manifest["sources"]}
    assert sources["passages.jsonl"]["format"] == "jsonl"
    assert sources["hotpot_hf.jsonl"]["format"] == "hotpotqa"
    assert sources["hotpot_hf.jsonl"]["passages"] == 4
    assert len(sources["passages.jsonl"]["sha256"]) == 64

    index = IndexDir.open(index_path)
    assert index.verify() == []
    assert len(index) == 10
    for kind in ("sparse", "dense", "hybrid"):
        retriever = index.retriever(kind, embeddings=embeddings, model=MODEL)
        assert len(retriever) == 10
        hits = retriever.retrieve("Which river flows through Vienna?", k=3)
        # the Danube paragraph is in both files ("danube" and "danube-<hash>"): either will do
        assert "Danube" in {h.title for h in hits}, kind
        assert hits[0].retriever == kind


def test_rerun_is_a_no_op_and_append_adds_only_new(tmp_path: Path, embeddings) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl", "hotpot_hf.jsonl")
    before = _snapshot(index_path)
    again = _build(index_path, embeddings, "passages.jsonl", "hotpot_hf.jsonl")
    assert (again.changed, again.added, again.total, again.generation) == (False, 0, 10, 1)
    assert _snapshot(index_path) == before  # nothing rewritten, not even the manifest

    appended = _build(index_path, embeddings, "hotpot_hf.jsonl", "guide.md", "river_notes.txt")
    assert appended.changed and appended.generation == 2
    assert appended.added == 5 and appended.total == 15  # 4 markdown chunks + 1 text chunk
    assert [s.added for s in appended.sources] == [0, 4, 1]
    assert not (index_path / "gen-000001").exists()  # the old generation is gone
    manifest = json.loads((index_path / MANIFEST).read_text())
    assert manifest["created_at"] <= manifest["updated_at"]
    assert len(manifest["sources"]) == 4
    index = IndexDir.open(index_path)
    assert index.verify() == []
    dense = index.dense(embeddings, MODEL)
    assert len(dense) == len(index.sparse()) == len(index.passages()) == 15
    # old passages keep their place; new ones follow
    assert dense.ids()[:10] == list(index.passages())[:10]
    assert index.sparse().retrieve("Rhine Basel Cologne", 1)[0].title == "river notes"
    assert dense.retrieve("Where does the Rhine start?", 1)[0].title == "river notes"


def test_a_new_file_of_known_passages_is_recorded_without_a_new_generation(
    tmp_path: Path, embeddings
) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl")
    copy = tmp_path / "copy.jsonl"
    copy.write_text((DATA / "passages.jsonl").read_text())
    report = build_index(
        index_path, [SourceSpec(copy)], embeddings=embeddings, embedding_model=MODEL
    )
    assert (report.changed, report.added, report.generation) == (True, 0, 1)
    manifest = json.loads((index_path / MANIFEST).read_text())
    assert str(copy.resolve()) in {s["path"] for s in manifest["sources"]}


def test_embedding_model_mismatch_names_both_models(tmp_path: Path, embeddings) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl")
    with pytest.raises(EmbeddingModelMismatchError, match=r"'all-MiniLM-L6-v2'.*'other-model'"):
        _build(index_path, embeddings, "guide.md", model="other-model")
    index = IndexDir.open(index_path)
    with pytest.raises(EmbeddingModelMismatchError, match=r"'all-MiniLM-L6-v2'.*'other-model'"):
        index.dense(embeddings, "other-model")
    with pytest.raises(EmbeddingModelMismatchError):
        index.retriever("hybrid", embeddings=embeddings, model="other-model")
    assert len(index.retriever("sparse")) == 6  # sparse needs no embedding model
    # a rebuild may change the model: it replaces everything
    rebuilt = _build(index_path, embeddings, "guide.md", model="renamed", rebuild=True)
    assert (rebuilt.total, rebuilt.generation) == (4, 2)
    assert IndexDir.open(index_path).embedding_model == "renamed"


class InjectedCrash(RuntimeError):
    pass


@pytest.mark.parametrize("stage", ["sparse", "dense", "save", "manifest"])
def test_crash_mid_build_keeps_the_previous_index(
    tmp_path: Path, embeddings, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl")
    manifest_before = (index_path / MANIFEST).read_bytes()

    big = tmp_path / "big.jsonl"
    with big.open("w") as fh:
        for i in range(3000):
            row = {"id": f"n{i}", "title": f"Town {i}", "text": f"Town {i} lies on river {i}."}
            fh.write(json.dumps(row) + "\n")

    def crash_halfway(name: str, done: int, total: int) -> None:
        if name == stage and done >= total // 2:
            raise InjectedCrash(f"injected in {name} at {done}/{total}")

    if stage == "save":
        monkeypatch.setattr(
            FaissDenseIndex, "save", lambda self, path: (_ for _ in ()).throw(InjectedCrash())
        )
    if stage == "manifest":

        def torn_write(path: Path, data: dict) -> None:
            # die after writing the temporary file, before the rename that commits it
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(json.dumps(data)[:100])
            raise InjectedCrash("killed before os.replace")

        monkeypatch.setattr(index_build_module, "write_json_atomic", torn_write)
    with pytest.raises(InjectedCrash):
        build_index(
            index_path,
            [SourceSpec(big)],
            embeddings=embeddings,
            embedding_model=MODEL,
            dense=DenseOptions(batch_size=256),
            progress=crash_halfway,
        )
    monkeypatch.undo()

    assert (index_path / MANIFEST).read_bytes() == manifest_before
    assert (index_path / "gen-000002").is_dir()  # the debris of the failed build
    old = IndexDir.open(index_path)
    assert len(old) == 6 and old.verify() == []
    for kind in ("sparse", "dense", "hybrid"):
        retriever = old.retriever(kind, embeddings=embeddings, model=MODEL)
        assert len(retriever) == 6
        assert retriever.retrieve("Eiffel Tower city", 1)[0].id == "paris"

    # the next build clears the debris and succeeds
    report = build_index(
        index_path, [SourceSpec(DATA / "guide.md")], embeddings=embeddings, embedding_model=MODEL
    )
    assert (report.total, report.generation) == (10, 2)
    assert IndexDir.open(index_path).verify() == []


def test_a_second_build_is_refused_while_one_holds_the_lock(tmp_path: Path, embeddings) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl")
    with (
        exclusive_lock(index_path / LOCK_FILE),  # what a build running elsewhere holds
        pytest.raises(IndexLockedError, match=f"pid {os.getpid()}"),
    ):
        _build(index_path, embeddings, "guide.md")
    assert _build(index_path, embeddings, "guide.md").added == 4  # released afterwards


def test_missing_corrupt_and_foreign_directories(tmp_path: Path, embeddings) -> None:
    with pytest.raises(IndexDirError, match="does not exist"):
        IndexDir.open(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexDirError, match=r"no manifest\.json"):
        IndexDir.open(tmp_path / "empty")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(IndexDirError, match="not empty"):
        _build(foreign, embeddings, "passages.jsonl")
    assert (foreign / "thesis.tex").read_text() == "precious"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(IndexDirError, match="is a file"):
        _build(a_file, embeddings, "passages.jsonl")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / MANIFEST).write_text("{not json")
    with pytest.raises(IndexDirError, match="unreadable"):
        IndexDir.open(bad)


def test_verify_detects_a_damaged_file(tmp_path: Path, embeddings) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl")
    with (index_path / "gen-000001" / "passages.jsonl").open("a") as fh:
        fh.write("\n")
    problems = IndexDir.open(index_path).verify()
    assert problems and "passages" in problems[0]


def test_hnsw_option_is_recorded_and_kept_on_append(tmp_path: Path, embeddings) -> None:
    index_path = tmp_path / "idx"
    _build(index_path, embeddings, "passages.jsonl", dense=DenseOptions(kind="hnsw", hnsw_m=8))
    _build(index_path, embeddings, "guide.md")  # default options: the index keeps its kind
    manifest = json.loads((index_path / MANIFEST).read_text())
    assert (manifest["components"]["dense"]["kind"], manifest["components"]["dense"]["hnsw_m"]) == (
        "hnsw",
        8,
    )
    dense = IndexDir.open(index_path).dense(embeddings, MODEL)
    assert len(dense) == 10
    assert dense.retrieve("oldest bridge in Paris", 1)[0].title.endswith("Bridges")


def test_passage_store_is_append_only(tmp_path: Path) -> None:
    store = PassageStore(tmp_path / "p.jsonl")
    store["a"] = Passage("a", "A", "first")
    store["a"] = Passage("a", "A", "second")  # ignored: first version wins
    store.flush()
    store["b"] = Passage("b", "B", "bee")
    store.flush()
    reloaded = PassageStore.load(tmp_path / "p.jsonl")
    assert [(p.id, p.text) for p in reloaded.values()] == [("a", "first"), ("b", "bee")]
    with pytest.raises(TypeError, match="append-only"):
        del reloaded["a"]
    with pytest.raises(ValueError, match="key"):
        reloaded["c"] = Passage("d", "D", "mismatch")
