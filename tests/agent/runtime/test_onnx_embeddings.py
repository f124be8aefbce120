"""The ONNX embedding backends: the same vectors as sentence-transformers on PyTorch (fp32 to
float rounding, int8 within a stated tolerance), rows in input order whatever the length
buckets, an export that is made once and re-made when it cannot be trusted, clear errors for
models the export cannot reproduce, and indexes that say which backend wrote their vectors."""

from __future__ import annotations

import json
import logging
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from agent.runtime import onnx_export
from agent.runtime.embeddings import (
    EmbeddingModelError,
    SentenceTransformerEmbeddings,
    make_embeddings,
    resolve_model_path,
)
from agent.runtime.onnx_embeddings import OnnxEmbeddings
from agent.runtime.onnx_export import EXPORT_RECORD, ModelLayout, OnnxExportError, ensure_export
from agent.settings import EmbeddingSettings, load_settings
from searchers.index_build import SourceSpec, build_index
from searchers.index_dir import MANIFEST, IndexDir
from tests.child_env import ONNX_EXPORT_DIR
from tests.locations import TESTS

DATA = TESTS / "data"
MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def texts() -> list[str]:
    lines = (DATA / "passages.jsonl").read_text(encoding="utf-8").splitlines()
    passages = [str(json.loads(line)["text"]) for line in lines if line.strip()]
    # short, long (truncated at 256 tokens) and in between, in no particular order
    extra = ["x", "Tinted Windows first gig", "word " * 600, "Cain's Ballroom in Tulsa. " * 20]
    return passages + extra


@pytest.fixture(scope="module")
def reference(texts: list[str]) -> np.ndarray:
    return SentenceTransformerEmbeddings(MODEL).embed_array(texts)


def onnx(variant: str, **kw) -> OnnxEmbeddings:
    return OnnxEmbeddings(resolve_model_path(MODEL), Path(ONNX_EXPORT_DIR), variant=variant, **kw)


def test_fp32_export_gives_pytorch_vectors(texts: list[str], reference: np.ndarray) -> None:
    got = onnx("onnx").embed_array(texts)
    assert got.shape == reference.shape and got.dtype == np.float32
    assert np.abs(got - reference).max() < 1e-4


def test_int8_stays_within_the_stated_tolerance(texts: list[str], reference: np.ndarray) -> None:
    got = onnx("onnx-int8").embed_array(texts)
    cosine = (got * reference).sum(axis=1)
    # measured on HotpotQA paragraphs: mean 0.994, min 0.977 (per-tensor scales gave 0.95)
    assert cosine.mean() > 0.99 and cosine.min() > 0.96
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)


def test_a_given_graph_file_replaces_the_export(texts: list[str]) -> None:
    """``onnx_file`` (the benchmark's mixed-precision variants) loads that graph, whatever the
    variant's name says: here the fp32 file under the int8 label gives fp32's vectors."""
    fp32 = onnx("onnx")
    graph = ensure_export(fp32.layout, Path(ONNX_EXPORT_DIR), "onnx")
    named_int8 = onnx("onnx-int8", onnx_file=graph)
    assert np.abs(named_int8.embed_array(texts) - fp32.embed_array(texts)).max() < 1e-6
    assert np.abs(onnx("onnx-int8").embed_array(texts) - fp32.embed_array(texts)).max() > 1e-3


def test_length_buckets_keep_the_input_order(texts: list[str]) -> None:
    embeddings = onnx("onnx", batch_size=3)
    shuffled = texts[:]
    random.Random(3).shuffle(shuffled)
    together = embeddings.embed_array(shuffled)
    alone = np.stack([embeddings.embed_array([t])[0] for t in shuffled])
    assert np.abs(together - alone).max() < 1e-4  # padding is masked out, so it cannot matter
    assert embeddings.embed_array([]).shape == (0, 384)
    assert len(embeddings.embed_query("Tulsa")) == 384


def test_backend_setting_picks_the_implementation(tmp_path: Path) -> None:
    torch_backend = make_embeddings(EmbeddingSettings(backend="torch"), tmp_path)
    assert isinstance(torch_backend, SentenceTransformerEmbeddings)
    default = make_embeddings(EmbeddingSettings(), tmp_path)
    assert isinstance(default, OnnxEmbeddings) and default.backend == "onnx-int8"
    assert default.export_root == tmp_path / "onnx"  # <data_dir>/models/onnx unless configured


def test_backend_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOPTREE_EMBEDDINGS__BACKEND", "torch")
    assert load_settings(data_dir=tmp_path).embeddings.backend == "torch"
    monkeypatch.setenv("HOPTREE_EMBEDDINGS__BACKEND", "openvino")
    with pytest.raises(Exception, match="backend"):
        load_settings(data_dir=tmp_path)


# --- the export's trust rules, with the expensive steps replaced by fakes --------------------


@pytest.fixture
def small_model(tmp_path: Path) -> Path:
    """A copy of the bundled model's small files, with fake weights (never loaded here)."""
    source = resolve_model_path(MODEL)
    folder = tmp_path / "model"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    (folder / "model.safetensors").write_bytes(b"weights v1")
    return folder


@pytest.fixture
def exports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []

    def fake_export(layout: ModelLayout, target: Path) -> None:
        made.append("onnx")
        target.write_bytes(b"fp32 graph of " + layout.weights.read_bytes())

    def fake_quantize(source: Path, target: Path) -> None:
        made.append("onnx-int8")
        target.write_bytes(b"int8 of " + source.read_bytes())

    monkeypatch.setattr(onnx_export, "_export_fp32", fake_export)
    monkeypatch.setattr(onnx_export, "_quantize", fake_quantize)
    return made


def test_an_export_is_made_once_and_reused(
    small_model: Path, tmp_path: Path, exports: list[str]
) -> None:
    layout = ModelLayout.read(small_model)
    root = tmp_path / "onnx"
    first = ensure_export(layout, root, "onnx-int8")
    assert exports == ["onnx", "onnx-int8"]
    assert ensure_export(layout, root, "onnx-int8") == first
    assert ensure_export(layout, root, "onnx") == first.with_name("model.onnx")
    assert exports == ["onnx", "onnx-int8"]  # nothing exported again
    record = json.loads((first.parent / EXPORT_RECORD).read_text())
    assert record["source_sha256"] == onnx_export.file_sha256(layout.weights)
    assert record["files"]["onnx-int8"] == onnx_export.file_sha256(first)


def test_a_damaged_export_is_made_again(
    small_model: Path, tmp_path: Path, exports: list[str]
) -> None:
    layout = ModelLayout.read(small_model)
    root = tmp_path / "onnx"
    target = ensure_export(layout, root, "onnx-int8")
    target.write_bytes(b"half a file")  # a crash, a disk error, a hand edit
    assert ensure_export(layout, root, "onnx-int8") == target
    assert exports == ["onnx", "onnx-int8", "onnx-int8"]  # the fp32 graph was still good
    assert target.read_bytes() == b"int8 of fp32 graph of weights v1"


def test_new_weights_mean_a_new_export(
    small_model: Path, tmp_path: Path, exports: list[str]
) -> None:
    root = tmp_path / "onnx"
    ensure_export(ModelLayout.read(small_model), root, "onnx")
    (small_model / "model.safetensors").write_bytes(b"weights v2, fine-tuned")
    target = ensure_export(ModelLayout.read(small_model), root, "onnx")
    assert exports == ["onnx", "onnx"] and target.read_bytes().endswith(b"v2, fine-tuned")


def test_touched_but_equal_weights_keep_the_export(
    small_model: Path, tmp_path: Path, exports: list[str]
) -> None:
    root = tmp_path / "onnx"
    ensure_export(ModelLayout.read(small_model), root, "onnx")
    weights = small_model / "model.safetensors"
    weights.write_bytes(weights.read_bytes())  # a new mtime, the same content
    ensure_export(ModelLayout.read(small_model), root, "onnx")
    assert exports == ["onnx"]


def test_a_model_the_export_cannot_reproduce_is_a_clear_error(
    small_model: Path, tmp_path: Path
) -> None:
    pooling = small_model / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(
        json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True})
    )
    with pytest.raises(OnnxExportError, match="HOPTREE_EMBEDDINGS__BACKEND=torch"):
        ModelLayout.read(small_model)
    settings = EmbeddingSettings(model=str(small_model))
    with pytest.raises(EmbeddingModelError, match="mean-pooled"):
        make_embeddings(settings, tmp_path)
    (small_model / "tokenizer.json").unlink()
    with pytest.raises(OnnxExportError, match=r"tokenizer\.json"):
        ModelLayout.read(small_model)


# --- indexes record the backend ----------------------------------------------------------------


def test_the_index_records_its_backends_and_accepts_another(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    int8, fp32 = onnx("onnx-int8"), onnx("onnx")
    index_path = tmp_path / "idx"
    build_index(
        index_path, [SourceSpec(DATA / "passages.jsonl")], embeddings=int8, embedding_model=MODEL
    )
    embedding = json.loads((index_path / MANIFEST).read_text())["embedding"]
    assert embedding == {"model": MODEL, "dimension": 384, "backends": ["onnx-int8"]}

    with caplog.at_level(logging.INFO, logger="searchers.index_dir"):
        dense = IndexDir.open(index_path).dense(fp32, MODEL)
    assert "holds onnx-int8 vectors; queries are embedded with onnx" in caplog.text
    top = dense.retrieve("Which river flows through Paris?", k=1)
    assert "Seine" in top[0].passage.text

    build_index(
        index_path, [SourceSpec(DATA / "hotpot_hf.jsonl")], embeddings=fp32, embedding_model=MODEL
    )
    embedding = json.loads((index_path / MANIFEST).read_text())["embedding"]
    assert embedding["backends"] == ["onnx", "onnx-int8"]
