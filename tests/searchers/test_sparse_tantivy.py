"""TantivySparseIndex on real tantivy directories: lifecycle, idempotent ingest, concurrency."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from searchers.lucene import Clause, LuceneQuery, Term
from searchers.passages import Passage
from searchers.retrieval import RetrievalError, Retriever
from searchers.sparse_tantivy import PROGRESS_EVERY, TantivySparseIndex

PASSAGES = [
    Passage("a", "Solar power", "Rooftop solar panels.", {"source": "wiki", "n": [1, 2]}),
    Passage("b", "Solar eclipse", "The moon hides the sun.", {"source": "wiki"}),
    Passage("c", "São Paulo", "Largest city in Brazil; runs a metro.", {"lang": "pt", "é": "ü"}),
]


@pytest.fixture
def index(tmp_path: Path) -> TantivySparseIndex:
    built = TantivySparseIndex.create(tmp_path / "sparse")
    built.add(PASSAGES)
    return built


def test_new_index_is_empty_and_a_retriever(tmp_path: Path) -> None:
    empty = TantivySparseIndex.create(tmp_path / "new" / "sparse")
    assert isinstance(empty, Retriever)
    assert empty.name == "sparse"
    assert len(empty) == 0 and empty.ids() == set()
    assert empty.retrieve("solar") == []
    assert empty.get("a") is None


def test_create_refuses_a_non_empty_directory(tmp_path: Path, index: TantivySparseIndex) -> None:
    with pytest.raises(FileExistsError):
        TantivySparseIndex.create(index.path)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        TantivySparseIndex.create(tmp_path / "other")
    assert (tmp_path / "other" / "notes.txt").read_text() == "keep me"


def test_add_get_len_ids_round_trip(index: TantivySparseIndex) -> None:
    assert len(index) == 3
    assert index.ids() == {"a", "b", "c"}
    for passage in PASSAGES:
        got = index.get(passage.id)
        assert got == passage
        assert got is not None and got.metadata == passage.metadata
    assert index.get("missing") is None


def test_reopen_sees_everything(index: TantivySparseIndex) -> None:
    reopened = TantivySparseIndex.open(index.path)
    assert len(reopened) == 3
    assert reopened.get("c") == PASSAGES[2]
    assert [hit.id for hit in reopened.retrieve("eclipse")] == ["b"]


def test_re_adding_is_idempotent(index: TantivySparseIndex) -> None:
    assert index.add(PASSAGES) == 0
    fresh = Passage("d", "Wind", "Wind turbines.")
    assert index.add([fresh, fresh, PASSAGES[0]]) == 1
    assert len(index) == 4
    assert [hit.id for hit in index.retrieve("wind", k=10)] == ["d"]


def test_progress_reports_increments_that_sum_to_the_input(tmp_path: Path) -> None:
    big = TantivySparseIndex.create(tmp_path / "big")
    calls: list[int] = []
    count = 2 * PROGRESS_EVERY + 7
    passages = (Passage(f"p{i}", f"t{i}", f"text {i}") for i in range(count))
    assert big.add(passages, progress=calls.append) == count
    assert calls == [PROGRESS_EVERY, PROGRESS_EVERY, 7]
    assert len(big) == count


def test_another_instance_sees_writes_after_commit(index: TantivySparseIndex) -> None:
    reader = TantivySparseIndex.open(index.path)
    assert reader.retrieve("turbines") == []
    index.add([Passage("d", "Wind", "Wind turbines.")])
    assert [hit.id for hit in reader.retrieve("turbines")] == ["d"]
    assert len(reader) == 4 and "d" in reader.ids()
    assert reader.get("d") == Passage("d", "Wind", "Wind turbines.")


def test_a_second_writer_is_refused_and_corrupts_nothing(index: TantivySparseIndex) -> None:
    other = TantivySparseIndex.open(index.path)
    refused: list[RetrievalError] = []

    def passages() -> Iterator[Passage]:
        yield Passage("d", "Wind", "Wind turbines.")
        try:  # index's writer holds the lock while it consumes this generator
            other.add([Passage("e", "Hydro", "Dams.")])
        except RetrievalError as exc:
            refused.append(exc)
        yield Passage("f", "Tides", "Tidal power.")

    assert index.add(passages()) == 2
    assert len(refused) == 1 and "locked" in str(refused[0])
    assert TantivySparseIndex.open(index.path).ids() == {"a", "b", "c", "d", "f"}
    assert other.add([Passage("e", "Hydro", "Dams.")]) == 1  # the lock was released


def test_a_failed_add_commits_nothing_and_releases_the_lock(index: TantivySparseIndex) -> None:
    def broken() -> Iterator[Passage]:
        yield Passage("d", "Wind", "Wind turbines.")
        raise RuntimeError("source file vanished")

    with pytest.raises(RuntimeError):
        index.add(broken())
    assert len(index) == 3 and index.get("d") is None
    assert index.add([Passage("d", "Wind", "Wind turbines.")]) == 1


def test_open_missing_or_broken_index_raises_retrieval_error(tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match="no sparse index"):
        TantivySparseIndex.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RetrievalError):
        TantivySparseIndex.open(tmp_path / "empty")
    broken = TantivySparseIndex.create(tmp_path / "broken").path
    (broken / "meta.json").write_text("{not json")
    with pytest.raises(RetrievalError, match="unusable"):
        TantivySparseIndex.open(broken)


def test_open_refuses_a_foreign_tantivy_index(tmp_path: Path) -> None:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=True)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    writer = tantivy.Index(builder.build(), path=str(foreign)).writer(15_000_000, 1)
    writer.commit()
    writer.wait_merging_threads()
    with pytest.raises(RetrievalError, match="unusable"):
        TantivySparseIndex.open(foreign)


def test_hits_are_ranked_capped_and_tagged(index: TantivySparseIndex) -> None:
    hits = index.retrieve("solar moon sun", k=10)
    assert [hit.id for hit in hits][:1] == ["b"]  # three matching words beat one word twice
    assert {hit.id for hit in hits} == {"a", "b"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(hit.retriever == "sparse" for hit in hits)
    assert len(index.retrieve("solar moon sun", k=1)) == 1
    assert index.retrieve("solar", k=0) == []
    assert hits[0].to_json()["metadata"] == {"source": "wiki"}


def test_analysis_folds_accents_and_stems(index: TantivySparseIndex) -> None:
    assert [hit.id for hit in index.retrieve("sao paulo")] == ["c"]
    assert [hit.id for hit in index.retrieve("running")] == ["c"]  # runs -> run <- running
    assert [hit.id for hit in index.retrieve("title:PAULO")] == ["c"]


def test_unknown_field_in_a_hand_built_model_falls_back_to_default_fields(
    index: TantivySparseIndex,
) -> None:
    query = LuceneQuery((Clause(Term("eclipse"), field="author"),))
    assert [hit.id for hit in index.retrieve_query(query)] == ["b"]
