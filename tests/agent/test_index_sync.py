"""Files that change or go away: a re-build replaces a changed file's passages, `index remove`
drops a file's, `index sync` makes the index match a folder; each is a new generation that a
crash leaves uncommitted. Real tantivy, real FAISS, the real embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent.indexing
from agent.settings import Settings
from searchers import index_build as index_build_module
from searchers import source_reading
from searchers.index_build import SourceSpec, UnknownSourceError, build_index
from searchers.index_dir import MANIFEST, IndexDir
from searchers.index_generation import DenseOptions
from searchers.sparse_tantivy import TantivySparseIndex

MODEL = "all-MiniLM-L6-v2"
OLD = "The Zorblat river flows through Quenton city. It is 120 km long."
NEW = "The Zorblat river flows through Pellam town. It is 95 km long."


def _texts(index_path: Path, query: str, embeddings) -> dict[str, list[str]]:
    """Every passage text each retriever returns for ``query`` (k = 10: the whole index)."""
    index = IndexDir.open(index_path)
    found = {}
    for kind in ("sparse", "dense"):
        retriever = index.retriever(kind, embeddings=embeddings, model=MODEL)
        found[kind] = [hit.text for hit in retriever.retrieve(query, 10)]
    return found


def _build(index_path: Path, embeddings, *files: Path, **kw):
    return build_index(
        index_path,
        [SourceSpec(f) for f in files],
        embeddings=embeddings,
        embedding_model=MODEL,
        **kw,
    )


def test_an_edited_file_replaces_its_passages(cli, tmp_path: Path, embeddings) -> None:
    """The reported case: after the edit only the new text is found, and the counts agree."""
    index = tmp_path / "idx"
    note = tmp_path / "zorblat.txt"
    note.write_text(OLD)
    assert cli("index", "build", str(note), "--index", str(index)).exit_code == 0
    note.write_text(NEW)
    result = cli("index", "build", str(note), "--index", str(index), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["added"], report["removed"], report["total"]) == (1, 1, 1)
    assert report["sources"][0]["change"] == "changed"

    for kind, texts in _texts(index, "Zorblat river", embeddings).items():
        assert texts == [NEW], kind
    info = cli("index", "info", "--index", str(index), "--verify", "--json")
    assert info.exit_code == 0, info.output
    doc = json.loads(info.stdout)
    assert (doc["generation"], doc["passages"], doc["problems"]) == (2, 1, [])
    assert [(s["path"], s["passages"]) for s in doc["sources"]] == [(str(note.resolve()), 1)]
    human = cli("index", "build", str(note), "--index", str(index))  # unchanged: nothing to do
    assert "nothing new; 0 passage(s); 1 in the index" in human.stdout


def test_remove_drops_a_files_passages_everywhere(cli, tmp_path: Path, embeddings) -> None:
    index = tmp_path / "idx"
    (tmp_path / "docs").mkdir()
    note, other = tmp_path / "docs" / "zorblat.txt", tmp_path / "docs" / "mellow.txt"
    note.write_text(OLD)
    other.write_text("The Mellow lake lies north of Quenton city.")
    assert cli("index", "build", str(tmp_path / "docs"), "--index", str(index)).exit_code == 0
    before = (index / MANIFEST).read_bytes()

    refused = cli("index", "remove", str(note), str(tmp_path / "nope.txt"), "--index", str(index))
    assert refused.exit_code == 2 and "not a source of the index" in refused.output
    assert (index / MANIFEST).read_bytes() == before  # all or nothing

    note.unlink()  # a file removed after it was deleted from the disk
    result = cli("index", "remove", str(note), "--index", str(index), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["removed"], report["total"]) == (1, 1)
    assert [s["name"] for s in report["removed_sources"]] == ["zorblat.txt"]
    for texts in _texts(index, "Zorblat river Quenton", embeddings).values():
        assert texts == ["The Mellow lake lies north of Quenton city."]
    opened = IndexDir.open(index)
    assert [Path(s["path"]).name for s in opened.manifest["sources"]] == ["mellow.txt"]
    assert opened.verify() == []
    missing = cli("index", "remove", str(note), "--index", str(tmp_path / "no-index"))
    assert missing.exit_code == 2 and not (tmp_path / "no-index").exists()


def test_sync_adds_changes_and_deletes_with_the_index_inside_the_folder(
    cli, tmp_path: Path, embeddings
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    index = docs / "idx"
    (docs / "zorblat.txt").write_text(OLD)
    (docs / "mellow.txt").write_text("The Mellow lake lies north of Quenton city.")
    (docs / "gone.md").write_text("# Gone\n\nThe Ostra bridge was torn down.")
    first = cli("index", "sync", str(docs), "--index", str(index), "--json")
    assert first.exit_code == 0, first.output
    assert {s["change"] for s in json.loads(first.stdout)["sources"]} == {"added"}

    (docs / "zorblat.txt").write_text(NEW)
    (docs / "gone.md").unlink()
    (docs / "new.txt").write_text("The Pellam ferry crosses the Zorblat.")
    result = cli("index", "sync", str(docs), "--index", str(index), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    changes = {s["name"]: s["change"] for s in report["sources"]}
    assert changes == {"mellow.txt": "unchanged", "new.txt": "added", "zorblat.txt": "changed"}
    assert [s["name"] for s in report["removed_sources"]] == ["gone.md"]
    assert (report["added"], report["removed"], report["total"]) == (2, 2, 3)
    assert any(s["reason"] == "index" for s in report["skipped"])  # never its own source

    texts = _texts(index, "Zorblat Ostra bridge Quenton", embeddings)
    for kind, found in texts.items():
        assert OLD not in found and NEW in found, kind
        assert not any("Ostra" in t for t in found), kind
    human = cli("index", "sync", str(docs), "--index", str(index))
    assert human.exit_code == 0 and "nothing new; 0 passage(s); 3 in the index" in human.stdout
    assert "unchanged" in human.stdout


def test_an_unchanged_file_is_not_read_again(
    tmp_path: Path, embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = tmp_path / "zorblat.txt"
    note.write_text(OLD)
    _build(tmp_path / "idx", embeddings, note)

    def refuse(*_args, **_kw):
        raise AssertionError("an unchanged file was read again")

    monkeypatch.setattr(source_reading, "read_file", refuse)
    report = _build(tmp_path / "idx", embeddings, note)
    assert report.failed == []  # a read would be caught as this file's failure
    assert (report.changed, report.sources[0].change, report.sources[0].passages) == (
        False,
        "unchanged",
        1,
    )


def test_a_passage_two_files_give_stays_until_both_are_gone(tmp_path: Path, embeddings) -> None:
    row = {"id": "zorblat", "title": "Zorblat", "text": OLD}
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(row) + "\n")
    second.write_text(json.dumps(row) + "\n" + json.dumps({**row, "id": "b2", "text": NEW}) + "\n")
    index = tmp_path / "idx"
    _build(index, embeddings, first, second)
    kept = _build(index, embeddings, remove=[first])
    assert (kept.removed, kept.total, kept.removed_sources[0].removed) == (0, 2, 0)
    gone = _build(index, embeddings, remove=[second])
    assert (gone.removed, gone.total) == (2, 0)
    assert IndexDir.open(index).verify() == []
    with pytest.raises(UnknownSourceError, match=r"a\.jsonl"):
        _build(index, embeddings, remove=[first])


def test_removal_from_an_hnsw_index(tmp_path: Path, embeddings) -> None:
    files = []
    for i, text in enumerate([OLD, "The Mellow lake lies north of Quenton city.", NEW]):
        files.append(tmp_path / f"f{i}.txt")
        files[-1].write_text(text)
    index = tmp_path / "idx"
    _build(index, embeddings, *files, dense=DenseOptions(kind="hnsw"))
    report = _build(index, embeddings, remove=[files[0]])
    assert (report.removed, report.total) == (1, 2)
    opened = IndexDir.open(index)
    assert opened.manifest["components"]["dense"]["kind"] == "hnsw"
    assert OLD not in _texts(index, "Zorblat river", embeddings)["dense"]


def test_an_index_built_before_owners_replaces_by_file_name(tmp_path: Path, embeddings) -> None:
    """Older manifests have no owners file: a text file's passages are found by their
    ``metadata.source``, and the next build records the owners."""
    note = tmp_path / "zorblat.txt"
    note.write_text(OLD)
    index = tmp_path / "idx"
    _build(index, embeddings, note)
    manifest = json.loads((index / MANIFEST).read_text())
    del manifest["owners"]
    (index / MANIFEST).write_text(json.dumps(manifest))
    note.write_text(NEW)
    report = _build(index, embeddings, note)
    assert (report.added, report.removed, report.total) == (1, 1, 1)
    assert "owners" in IndexDir.open(index).manifest


class InjectedCrash(RuntimeError):
    pass


def test_a_crash_before_the_commit_keeps_the_previous_generation(
    tmp_path: Path, embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zorblat.txt").write_text(OLD)
    (docs / "mellow.txt").write_text("The Mellow lake lies north of Quenton city.")
    index = tmp_path / "idx"
    _build(index, embeddings, docs / "zorblat.txt", docs / "mellow.txt")
    before = (index / MANIFEST).read_bytes()
    (docs / "zorblat.txt").unlink()

    def torn_write(path: Path, data: dict) -> None:
        # the new generation is written; die before the rename that commits it
        path.with_name(f".{path.name}.tmp").write_text(json.dumps(data)[:100])
        raise InjectedCrash("killed before os.replace")

    monkeypatch.setattr(index_build_module, "write_json_atomic", torn_write)
    with pytest.raises(InjectedCrash):
        _build(index, embeddings, docs / "mellow.txt", sync_roots=[docs])
    monkeypatch.undo()

    assert (index / MANIFEST).read_bytes() == before
    assert (index / "gen-000002").is_dir()  # the uncommitted generation, without zorblat
    old = IndexDir.open(index)
    assert len(old) == 2 and old.verify() == []
    assert OLD in _texts(index, "Zorblat river", embeddings)["sparse"]

    report = _build(index, embeddings, docs / "mellow.txt", sync_roots=[docs])
    assert (report.removed, report.total, report.generation) == (1, 1, 2)
    assert IndexDir.open(index).verify() == []


def test_a_tree_is_marked_stale_until_it_is_rebuilt(cli, tmp_path: Path) -> None:
    index = tmp_path / "idx"
    note = tmp_path / "zorblat.txt"
    note.write_text(OLD)
    assert cli("index", "build", str(note), "--index", str(index)).exit_code == 0
    tree = index / "tree"
    (tree / "v-000001").mkdir(parents=True)
    (tree / "v-000001" / "tree.json").write_text('{"created_at": "2026-01-01T00:00:00+00:00"}')
    (tree / "CURRENT").write_text("v-000001\n")

    note.write_text(NEW)
    result = cli("index", "build", str(note), "--index", str(index))
    assert result.exit_code == 0, result.output
    assert "tree stale" in result.stderr
    info = cli("index", "info", "--index", str(index), "--json")
    doc = json.loads(info.stdout)
    assert doc["tree_stale"] and doc["tree"]["sources"] == [str(note.resolve())]
    assert "tree stale" in cli("index", "info", "--index", str(index)).stderr

    # `hoptree tree build --rebuild` writes a new version with a new creation date
    (tree / "v-000002").mkdir()
    (tree / "v-000002" / "tree.json").write_text('{"created_at": "2099-01-01T00:00:00+00:00"}')
    (tree / "CURRENT").write_text("v-000002\n")
    assert (
        json.loads(cli("index", "info", "--index", str(index), "--json").stdout)["tree_stale"]
        is False
    )


def test_readers_opened_before_a_removal_follow_the_index(tmp_path: Path, embeddings) -> None:
    """A server opened the old generation; the removal commits and deletes it. Its retrievers
    read the new generation from their next lookup; a bare tantivy reader (nothing to follow)
    keeps the view it opened instead of failing every query."""
    note, other = tmp_path / "zorblat.txt", tmp_path / "mellow.txt"
    note.write_text(OLD)
    other.write_text("The Mellow lake lies north of Quenton city.")
    index = tmp_path / "idx"
    _build(index, embeddings, note, other)
    opened = IndexDir.open(index)
    retrievers = {
        kind: opened.retriever(kind, embeddings=embeddings, model=MODEL)
        for kind in ("sparse", "dense", "hybrid")
    }
    bare = TantivySparseIndex.open(opened.data_path / "sparse")
    assert OLD in [h.text for h in retrievers["hybrid"].retrieve("Zorblat river", 5)]

    _build(index, embeddings, remove=[note])
    assert not opened.data_path.exists()
    for kind, retriever in retrievers.items():
        texts = [h.text for h in retriever.retrieve("Zorblat river Quenton", 5)]
        assert texts == ["The Mellow lake lies north of Quenton city."], kind
    assert len(retrievers["dense"]) == 1 and retrievers["dense"].get("zorblat") is None
    assert [h.text for h in bare.retrieve("Zorblat river", 1)] == [OLD]


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture
def http(settings: Settings, embeddings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The app in-process (TestClient) with the document routes over a fresh index; the agent
    is the scripted double: these tests are about the writes."""
    from fastapi.testclient import TestClient
    from pydantic import SecretStr

    from agent.serve.api import create_app
    from agent.serve.documents import DocumentStore
    from agent.settings import ServerSettings
    from tests.fake_agent import ScriptedAgent

    monkeypatch.setattr(agent.indexing, "_embeddings", lambda _settings: embeddings)
    index = tmp_path / "idx"
    server = ServerSettings(api_key=SecretStr("k"))
    app = create_app(ScriptedAgent(), server, DocumentStore(settings, index))
    with TestClient(app, headers={"Authorization": "Bearer k"}) as client:
        yield client, index


def test_documents_over_http_add_replace_and_remove(http, tmp_path: Path, embeddings) -> None:
    client, index = http
    assert client.post("/v1/documents", json={"name": "z.txt", "text": OLD}).status_code == 200
    put = client.post("/v1/documents", json={"name": "z.txt", "text": NEW})
    assert put.status_code == 200, put.text
    assert (put.json()["added"], put.json()["removed"], put.json()["total"]) == (1, 1, 1)
    assert put.json()["sources"][0]["change"] == "changed"
    for texts in _texts(index, "Zorblat river", embeddings).values():
        assert texts == [NEW]
    listed = client.get("/v1/documents").json()["documents"]
    assert [(d["name"], d["passages"]) for d in listed] == [("z.txt", 1)]

    # a file indexed from the command line is removed by its path
    cli_file = tmp_path / "mellow.txt"
    cli_file.write_text("The Mellow lake lies north of Quenton city.")
    _build(index, embeddings, cli_file)
    gone = client.delete(f"/v1/documents/{cli_file.resolve()}")
    assert gone.status_code == 200 and gone.json()["removed"] == 1, gone.text
    for folder in ("..", str(tmp_path), "/"):  # never a folder: one request cannot empty it
        assert client.delete(f"/v1/documents/{folder}").status_code == 404, folder
    gone = client.delete("/v1/documents/z.txt")
    assert gone.status_code == 200 and gone.json()["total"] == 0, gone.text
    assert not (index / "documents" / "z.txt").exists()
    assert client.delete("/v1/documents/z.txt").status_code == 404


def test_documents_over_http_refuse_bad_input_and_need_the_key(http) -> None:
    client, index = http
    for body, param in (
        ({"name": "../escape.txt", "text": "x"}, "plain file name"),
        ({"name": ".hidden.txt", "text": "x"}, "plain file name"),
        ({"name": "sheet.xlsx", "text": "x"}, "the index reads"),
        ({"name": "a.pdf", "content_base64": "not base64!"}, "content_base64"),
        ({"name": "a.txt"}, None),
    ):
        r = client.post("/v1/documents", json=body)
        assert r.status_code == 422, (body, r.text)
        assert (param or "either") in r.json()["error"]["message"], r.text
    broken = client.post("/v1/documents", json={"name": "bad.pdf", "content_base64": "JVBERi0="})
    assert broken.status_code == 422 and broken.json()["error"]["code"] == "corrupt", broken.text
    assert not (index / "documents" / "bad.pdf").exists()  # a failed upload is not kept
    for method, path in (("POST", "/v1/documents"), ("DELETE", "/v1/documents/x.txt")):
        r = client.request(method, path, json={}, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
