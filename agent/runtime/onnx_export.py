"""Export a sentence-transformers model to ONNX once, locally, from the weights on disk.

Why our own export: sentence-transformers' ONNX backend goes through ``optimum``, whose current
release pins an older ``transformers`` than the rest of hoptree needs. The model is small and
its forward pass is plain, so we trace it ourselves: the token embeddings and the encoder with an
additive attention mask we build (transformers' own mask helpers do not survive a trace: the
traced graph fixed the mask to the example's shape and lost 3-7% cosine), then mean pooling and
L2 normalization, so the graph returns the final sentence vectors.

The int8 variant is ONNX Runtime's dynamic quantization with per-channel weight scales; one
scale per tensor (the default) cost 5% cosine against PyTorch on HotpotQA paragraphs, per
channel 0.6%.

An export lives in ``<data_dir>/models/onnx/<key>/`` beside ``export.json``, which records the
source weights and the sha256 of every file written. A file that is missing or whose hash no
longer matches, or source weights that changed, mean a fresh export (under a lock, written to
temporary names and renamed, so a crash or a second process never leaves half a model).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchers.corpus import file_sha256
from searchers.locks import exclusive_lock

# Bump when the exported graph changes: old exports are then rebuilt, not trusted.
EXPORT_VERSION = 1
EXPORT_RECORD = "export.json"
ONNX_FILES = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class OnnxExportError(RuntimeError):
    """The model cannot be exported or its export cannot be trusted; the message says why."""


@dataclass(frozen=True)
class ModelLayout:
    """What the ONNX path needs to know about a sentence-transformers folder."""

    path: Path
    weights: Path
    max_seq_length: int
    dimension: int

    @classmethod
    def read(cls, path: Path) -> ModelLayout:
        """Checks that the folder is a model the exported graph reproduces: a BERT-style
        encoder, mean pooling, normalized output. Anything else is an error naming the way out."""
        weights = next((path / f for f in _WEIGHT_FILES if (path / f).is_file()), None)
        if weights is None:
            raise OnnxExportError(f"no weights ({' or '.join(_WEIGHT_FILES)}) in {path}")
        if not (path / "tokenizer.json").is_file():
            raise OnnxExportError(f"no tokenizer.json in {path}; the onnx backend needs one")
        modules = _json(path / "modules.json", [])
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        pooling = _json(path / "1_Pooling" / "config.json", {})
        if kinds != ["Transformer", "Pooling", "Normalize"] or not pooling.get(
            "pooling_mode_mean_tokens"
        ):
            raise OnnxExportError(
                f"{path} is not a mean-pooled, normalized sentence-transformers model "
                f"(modules {kinds or 'unknown'}); the onnx backends reproduce only that shape: "
                "set HOPTREE_EMBEDDINGS__BACKEND=torch for this model"
            )
        config = _json(path / "config.json", {})
        if config.get("model_type") not in {"bert", "roberta", "xlm-roberta", "mpnet"}:
            # the traced forward calls .embeddings and .encoder, which BERT-like models share
            raise OnnxExportError(
                f"{path}: model type {config.get('model_type')!r} is not BERT-like; "
                "set HOPTREE_EMBEDDINGS__BACKEND=torch for this model"
            )
        st_config = _json(path / "sentence_bert_config.json", {})
        max_len = int(st_config.get("max_seq_length") or config.get("max_position_embeddings", 512))
        dimension = int(pooling.get("word_embedding_dimension") or config["hidden_size"])
        return cls(path=path, weights=weights, max_seq_length=max_len, dimension=dimension)


def _json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise OnnxExportError(f"cannot read {path}: {exc}") from exc


def _source_stamp(weights: Path) -> dict[str, Any]:
    st = weights.stat()
    return {"file": weights.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def export_key(layout: ModelLayout) -> str:
    """A folder name per source model: its own name when it looks like one, plus a short hash
    of the absolute path, so two local folders called ``model`` never share an export."""
    resolved = str(layout.path.resolve())
    return f"{layout.path.name or 'model'}-{hashlib.sha256(resolved.encode()).hexdigest()[:10]}"


def ensure_export(layout: ModelLayout, root: Path, variant: str) -> Path:
    """The path of a trusted ONNX file of ``variant`` ("onnx" or "onnx-int8"), exporting it
    first when it is missing, damaged, or made from other weights."""
    if variant not in ONNX_FILES:
        raise ValueError(f"unknown onnx variant {variant!r}; expected {', '.join(ONNX_FILES)}")
    folder = root / export_key(layout)
    target = folder / ONNX_FILES[variant]
    if _trusted(layout, folder, variant):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder / ".lock", timeout_s=None):  # waits: the export is shared
        if _trusted(layout, folder, variant):  # another process finished it while we waited
            return target
        record = _read_record(folder, layout)
        # long enough to look like a hang, and once per machine: say what it is (stderr, so a
        # command's --json on stdout stays clean)
        print(
            f"exporting the embedding model to ONNX ({variant}), once per machine; about "
            f"half a minute on 2 cores, into {folder}",
            file=sys.stderr,
            flush=True,
        )
        if not (folder / ONNX_FILES["onnx"]).is_file() or not _file_ok(record, folder, "onnx"):
            _export_fp32(layout, folder / ONNX_FILES["onnx"])
            record["files"]["onnx"] = file_sha256(folder / ONNX_FILES["onnx"])
            record["files"].pop("onnx-int8", None)  # made from the old graph
        if variant == "onnx-int8":
            _quantize(folder / ONNX_FILES["onnx"], target)
            record["files"]["onnx-int8"] = file_sha256(target)
        if record["source_sha256"] is None:
            record["source_sha256"] = file_sha256(layout.weights)
        record["written_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        tmp = folder / f".{EXPORT_RECORD}.tmp"
        tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, folder / EXPORT_RECORD)
    return target


def _read_record(folder: Path, layout: ModelLayout) -> dict[str, Any]:
    """The export record if it belongs to these weights and this exporter; a fresh one else."""
    fresh = {
        "export_version": EXPORT_VERSION,
        "source": _source_stamp(layout.weights),
        "source_sha256": None,
        "files": {},
    }
    try:
        record = json.loads((folder / EXPORT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return fresh
    if record.get("export_version") != EXPORT_VERSION or not isinstance(record.get("files"), dict):
        return fresh
    if record.get("source") != _source_stamp(layout.weights):
        # touched or replaced: compare content before throwing an export away
        if record.get("source_sha256") != file_sha256(layout.weights):
            return fresh
        record["source"] = _source_stamp(layout.weights)
    return record


def _file_ok(record: dict[str, Any], folder: Path, variant: str) -> bool:
    expected = record["files"].get(variant)
    path = folder / ONNX_FILES[variant]
    return bool(expected) and path.is_file() and file_sha256(path) == expected


def _trusted(layout: ModelLayout, folder: Path, variant: str) -> bool:
    if not (folder / EXPORT_RECORD).is_file():
        return False
    record = _read_record(folder, layout)
    return record["source_sha256"] is not None and _file_ok(record, folder, variant)


def _export_fp32(layout: ModelLayout, target: Path) -> None:
    """Trace the PyTorch model (torch and transformers are imported here only)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a per-tensor bar is noise here
    try:
        model = AutoModel.from_pretrained(
            str(layout.path), attn_implementation="eager", local_files_only=True
        ).eval()
    except Exception as exc:  # transformers raises many types here
        raise OnnxExportError(f"cannot load {layout.path} for export: {exc}") from exc

    class SentenceVectors(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.inner.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
            mask = attention_mask.to(hidden.dtype)
            additive = (1.0 - mask[:, None, None, :]) * torch.finfo(hidden.dtype).min
            states = self.inner.encoder(hidden, attention_mask=additive).last_hidden_state
            pooled = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    # two rows of different lengths, so padding is part of what the trace sees
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    example = (ids, (ids != 0).long(), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    tmp = target.with_name(f".{target.name}.tmp")
    with torch.inference_mode():
        torch.onnx.export(
            SentenceVectors(model),
            example,
            str(tmp),
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes={**axes, OUTPUT_NAME: {0: "batch"}},
            opset_version=17,
            dynamo=False,  # the dynamo exporter needs onnxscript; the tracer is enough here
        )
    os.replace(tmp, target)


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_name(f".{target.name}.tmp")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # it advises a pre-processing pass we measured no need for
    try:
        quantize_dynamic(str(source), str(tmp), per_channel=True, weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)
    os.replace(tmp, target)
