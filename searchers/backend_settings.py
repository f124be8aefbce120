"""Where the searchers' passages come from, as the settings describe it: the embedding model
the dense index is read with, the local index's layout, an Elasticsearch cluster, the web's
providers. Sections of ``agent.settings.Settings`` (``[embeddings]``, ``[index]``, ``[es]``,
``[web]``), kept beside the searchers they configure and free of their heavy imports, so that
reading the settings loads no index, client or model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import NoDecode


def comma_separated(value: Any) -> Any:
    """A list setting from the environment: ``a,b`` reads as ``["a", "b"]`` (JSON lists work
    too), so HOPTREE_WEB__PROVIDERS=searxng,brave needs no brackets and quotes."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class EmbeddingSettings(BaseModel):
    model_config = {"extra": "forbid"}

    model: str = Field(
        "all-MiniLM-L6-v2",
        description="a bundled model name or a local sentence-transformers folder",
    )
    backend: Literal["onnx-int8", "onnx", "torch"] = Field(
        "onnx-int8",
        description="onnx-int8: ONNX Runtime with int8 weights (fastest; exported once from the "
        "bundled weights into <data_dir>/models/onnx); onnx: the same graph in fp32 (vectors "
        "equal to torch's); torch: sentence-transformers on PyTorch",
    )
    batch_size: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="texts per forward pass; None = the backend's measured best "
        "(onnx 8, torch 64; benchmarks/results/embeddings.md)",
    )
    threads: int = Field(0, ge=0, le=256, description="onnx backends: 0 = one per core")
    export_dir: Path | None = Field(
        None, description="where ONNX exports live; None = <data_dir>/models/onnx"
    )
    device: str = Field("cpu", description="torch backend only")


class IndexSettings(BaseModel):
    """How ``hoptree index build`` lays out a new index and how retrievers read it.

    The dense kind and HNSW parameters apply when an index is created (or rebuilt); an existing
    index keeps the kind recorded in its directory, so appending never mixes index types.
    """

    model_config = {"extra": "forbid"}

    dense_kind: Literal["flat", "hnsw"] = Field(
        "flat", description="flat = exact inner product; hnsw = approximate, for large corpora"
    )
    hnsw_m: int = Field(32, ge=4, le=256, description="HNSW graph degree")
    hnsw_ef_construction: int = Field(80, ge=8, le=4096)
    hnsw_ef_search: int = Field(256, ge=8, le=8192, description="raised to k when k is larger")
    chunk_tokens: int = Field(
        150, ge=16, le=2000, description="max tokens per chunk of text/markdown files"
    )
    embed_batch_size: int = Field(256, ge=1, le=65536, description="passages per embedding call")
    rrf_k: int = Field(60, ge=0, le=10000, description="reciprocal-rank fusion constant")
    hybrid_depth: int = Field(
        0, ge=0, le=10000, description="hits asked of each fused retriever; 0 = 2k"
    )


class ElasticsearchSettings(BaseModel):
    """An Elasticsearch 9.x cluster for the sparse and dense indexes (beyond one machine)."""

    model_config = {"extra": "forbid"}

    url: str = Field("", description="e.g. http://localhost:9200; empty = not used")
    index: str = "hoptree"
    api_key: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None
    timeout_s: float = Field(10.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    verify_certs: bool = True
    ca_certs: Path | None = None
    batch_size: int = Field(256, ge=1, le=10000)


class WebSettings(BaseModel):
    """Web search providers, tried in order; one without its URL or key is skipped."""

    model_config = {"extra": "forbid"}

    providers: Annotated[list[Literal["searxng", "brave", "tavily", "bing"]], NoDecode] = [
        "searxng"
    ]
    searxng_url: str | None = None
    brave_api_key: SecretStr | None = None
    tavily_api_key: SecretStr | None = None
    bing_api_key: SecretStr | None = None
    brave_url: str | None = None
    tavily_url: str | None = None
    bing_url: str | None = None
    timeout_s: float = Field(10.0, gt=0)
    connect_timeout_s: float = Field(3.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    backoff_s: float = Field(0.5, ge=0)
    max_backoff_s: float = Field(8.0, ge=0)
    max_concurrency: int = Field(4, ge=1, le=32)

    _providers_list = field_validator("providers", mode="before")(comma_separated)

    def options(self) -> dict[str, Any]:
        """Plain values for the web searcher's factory (secrets unwrapped only here)."""
        values = self.model_dump()
        for key, value in list(values.items()):
            if isinstance(value, SecretStr):
                values[key] = value.get_secret_value()
        return {k: v for k, v in values.items() if v is not None}
