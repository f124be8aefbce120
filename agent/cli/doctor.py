"""``hoptree doctor``: is every part of this installation working, and how fast is it?

Each check measures rather than assumes: the chat model answers a real request (and a
schema-enforced one), the embedding model embeds real sentences. A failing part is reported with
its error and makes the whole report not ok; it never hides the other parts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agent.runtime.chat_models import build_chat_model
from agent.runtime.embeddings import make_embeddings
from agent.runtime.gguf_assembly import ProgressFn
from agent.runtime.shared_server import SERVER_DIR, ServerDirectory
from agent.runtime.usage import SERVER_TIMINGS_KEY
from agent.settings import Settings
from searchers.index_generation import embedding_dimension

SPEED_PROMPT = "Count from 1 to 60, separated by spaces, and nothing else."
SPEED_MAX_TOKENS = 96
# Reading a prompt and writing a reply run at different speeds (on a CPU, prompt reading is
# compute-bound and a few times faster per token than decoding, which waits on memory); a
# planner question reads about 2,000 prompt tokens and writes about 400, so doctor measures
# both. The reading probe is a prompt of about this many tokens the server has not seen.
READ_PROBE_WORDS = 300
EMBED_SENTENCES = 512


class _Probe(BaseModel):
    city: str
    country: str


def _read_probe() -> str:
    """A prompt no earlier call shares a prefix with (a fresh nonce first), so the server reads
    all of it and its prompt timing is a reading speed, not a cache hit."""
    words = " ".join(f"river{i} city{i % 17}" for i in range(READ_PROBE_WORDS // 2))
    return f"{time.time_ns()} Repeat nothing; reply with one word.\n{words}"


def check_llm(settings: Settings, progress: ProgressFn | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {
        "ok": False,
        "model": settings.llm.model or settings.llm.local_model,
        "endpoint": settings.llm.base_url or "embedded llama.cpp on 127.0.0.1",
        "embedded": settings.llm.embedded,
    }
    started = time.monotonic()
    try:
        # No cache here: the point is to measure the model, not the cache.
        with build_chat_model(settings, cache=False, progress=progress) as handle:
            report["load_seconds"] = round(time.monotonic() - started, 2)
            report["model"] = handle.label
            report["endpoint"] = handle.endpoint
            report.update({k: v for k, v in handle.details.items() if k != "load_seconds"})
            fast = handle.model.bind(max_tokens=SPEED_MAX_TOKENS)
            t0 = time.monotonic()
            reply = fast.invoke([HumanMessage(content=SPEED_PROMPT)])
            seconds = time.monotonic() - t0
            usage = reply.usage_metadata or {}
            out_tokens = int(usage.get("output_tokens", 0))
            report["completion_tokens"] = out_tokens
            report["tokens_per_second"] = round(out_tokens / seconds, 1) if seconds > 0 else None
            timings = reply.response_metadata.get(SERVER_TIMINGS_KEY) or {}
            if timings.get("predicted_per_second"):
                report["decode_tokens_per_second"] = round(timings["predicted_per_second"], 1)
            read = handle.model.bind(max_tokens=1).invoke([HumanMessage(content=_read_probe())])
            timings = read.response_metadata.get(SERVER_TIMINGS_KEY) or {}
            if timings.get("prompt_per_second"):
                report["prompt_tokens_per_second"] = round(timings["prompt_per_second"], 1)
            structured = handle.model.with_structured_output(_Probe, method="json_schema")
            probe = structured.invoke(
                [HumanMessage(content="Where is the Eiffel Tower? Give city and country.")]
            )
            report["structured_output"] = isinstance(probe, _Probe)
            report["ok"] = out_tokens > 0 and report["structured_output"]
            if handle.lease is not None:  # who serves the model, for how many processes
                report["shared_server"] = ServerDirectory(settings.data_dir / SERVER_DIR).status()
            if not report["ok"]:
                report["error"] = "the model answered without tokens or without valid JSON"
    except Exception as exc:  # doctor reports every failure instead of dying on the first
        report["error"] = f"{type(exc).__name__}: {exc}"
    return report


def check_embeddings(settings: Settings) -> dict[str, Any]:
    report: dict[str, Any] = {
        "ok": False,
        "model": settings.embeddings.model,
        "backend": settings.embeddings.backend,
    }
    try:
        t0 = time.monotonic()
        emb = make_embeddings(settings.embeddings, settings.models_dir)
        emb.embed_query("load probe")  # the first call loads (and, once, exports) the model
        report["dim"] = embedding_dimension(emb)
        report["load_seconds"] = round(time.monotonic() - t0, 2)
        sentences = [
            f"Sentence number {i} mentions a city, a river and the year {1800 + i}."
            for i in range(EMBED_SENTENCES)
        ]
        t0 = time.monotonic()
        vectors = np.asarray(emb.embed_documents(sentences), dtype=np.float32)
        seconds = time.monotonic() - t0
        report["sentences_per_second"] = round(len(sentences) / seconds, 1)
        report["ok"] = vectors.shape == (EMBED_SENTENCES, report["dim"])
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
    return report


def check_index(index_dir: Path) -> dict[str, Any]:
    """An index that was never built is not broken; one whose manifest is unreadable is."""
    manifest = index_dir / "manifest.json"
    report: dict[str, Any] = {"ok": True, "path": str(index_dir), "built": manifest.is_file()}
    if manifest.is_file():
        try:
            report["manifest"] = json.loads(manifest.read_text())
        except (OSError, ValueError) as exc:
            report.update(ok=False, error=f"unreadable manifest: {exc}")
    return report


def check_cache(settings: Settings) -> dict[str, Any]:
    from agent.runtime.llm_cache import SQLiteLLMCache

    report: dict[str, Any] = {"ok": False, "path": str(settings.llm_cache_path)}
    if not settings.llm.cache:
        return {**report, "ok": True, "enabled": False}
    try:
        cache = SQLiteLLMCache(settings.llm_cache_path)
        report.update(ok=True, enabled=True, entries=len(cache))
        cache.close()
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
    return report


def run_doctor(
    settings: Settings, progress: ProgressFn | None = None, index_dir: Path | None = None
) -> dict[str, Any]:
    """Every part's health. ``index_dir``: the index the caller is about to use (the demo's
    own), not the configured default, so the table describes what runs next."""
    report = {
        "llm": check_llm(settings, progress),
        "embeddings": check_embeddings(settings),
        "index": check_index(index_dir or settings.default_index_dir),
        "cache": check_cache(settings),
        "data_dir": str(settings.data_dir),
    }
    report["ok"] = all(part["ok"] for part in report.values() if isinstance(part, dict))
    return report
