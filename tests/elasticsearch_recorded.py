"""Elasticsearch without a cluster: the real ``elasticsearch`` client with only its HTTP node
replaced (``FakeCluster.node_class()``), which checks each request against a script and answers
with a response body recorded in ``tests/fixtures/elasticsearch``; and ``HashingEmbeddings``, a
reproducible stand-in for an embedding model. Shared by the backend's tests.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from elastic_transport import (
    ApiResponseMeta,
    BaseNode,
    HttpHeaders,
    NodeConfig,
)
from elastic_transport._node import NodeApiResponse
from elastic_transport.client_utils import DEFAULT
from elasticsearch import Elasticsearch
from langchain_core.embeddings import Embeddings

FIXTURES = Path(__file__).parent / "fixtures" / "elasticsearch"
INDEX = "hoptree-test"
URL = "http://es.test:9200"
MODEL = "fake-hashing-16"
DIM = 16
NDJSON = "x-ndjson"


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


class HashingEmbeddings(Embeddings):
    """A deterministic stand-in for a sentence embedder, named for what it is: each word is hashed
    to a signed bucket of a 16-dim vector, then the vector is unit-normalized, so texts sharing
    words are similar and the exact floats are reproducible across runs."""

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for word in text.lower().split():
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            sign = 1.0 if digest[1] & 1 else -1.0
            vector[digest[0] % self.dim] += sign
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


# --- the recorded-response transport ---------------------------------------------------------


@dataclass
class Exchange:
    """One scripted request and the answer to give: a recorded body, or a transport error."""

    method: str
    path: str
    status: int = 200
    body: Any = None
    error: Exception | None = None


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, list[str]]
    headers: HttpHeaders
    body: Any
    request_timeout: Any


class FakeCluster:
    """The script of a conversation with Elasticsearch and the record of what the client sent.

    ``node_class()`` is handed to ``Elasticsearch(node_class=...)``; the transport builds its node
    from it, so every layer above the socket (serialization, compatibility headers, the product
    check, error mapping, retries) is the real client's.
    """

    def __init__(self) -> None:
        self.script: deque[Exchange] = deque()
        self.requests: list[Request] = []

    def expect(
        self,
        method: str,
        path: str,
        fixture: str | None = None,
        *,
        status: int = 200,
        error: Exception | None = None,
    ) -> None:
        body = recorded(fixture) if fixture else None
        self.script.append(Exchange(method, path, status, body, error))

    def node_class(self) -> type[BaseNode]:
        cluster = self

        class RecordedNode(BaseNode):
            _CLIENT_META_HTTP_CLIENT = ("rec", "1.0")

            def perform_request(
                self,
                method: str,
                target: str,
                body: bytes | None = None,
                headers: HttpHeaders | None = None,
                request_timeout: Any = DEFAULT,
            ) -> NodeApiResponse:
                return cluster.answer(
                    self.config, method, target, body, headers or HttpHeaders(), request_timeout
                )

        return RecordedNode

    def answer(
        self,
        config: NodeConfig,
        method: str,
        target: str,
        body: bytes | None,
        headers: HttpHeaders,
        request_timeout: Any,
    ) -> NodeApiResponse:
        assert self.script, f"unexpected request {method} {target}"
        exchange = self.script.popleft()
        path, _, query = target.partition("?")
        assert (method, path) == (exchange.method, exchange.path), (
            f"expected {exchange.method} {exchange.path}, client sent {method} {target}"
        )
        parsed: Any = None
        if body:
            text = body.decode("utf-8")
            if NDJSON in (headers.get("content-type") or ""):
                assert text.endswith("\n"), "bulk bodies must end with a newline"
                parsed = [json.loads(line) for line in text.splitlines()]
            else:
                parsed = json.loads(text)
        self.requests.append(
            Request(method, path, parse_qs(query), headers, parsed, request_timeout)
        )
        if exchange.error is not None:
            raise exchange.error
        response_headers = HttpHeaders(
            {
                "content-type": "application/vnd.elasticsearch+json;compatible-with=9",
                "x-elastic-product": "Elasticsearch",
            }
        )
        meta = ApiResponseMeta(
            status=exchange.status,
            http_version="1.1",
            headers=response_headers,
            duration=0.001,
            node=config,
        )
        payload = b"" if exchange.body is None else json.dumps(exchange.body).encode()
        return NodeApiResponse(meta, payload)


def client_for(cluster: FakeCluster, **kwargs: Any) -> Elasticsearch:
    kwargs.setdefault("max_retries", 0)
    return Elasticsearch(URL, node_class=cluster.node_class(), **kwargs)
