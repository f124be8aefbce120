"""Connecting to Elasticsearch over real sockets on 127.0.0.1, through the stock urllib3 node:
a refused connection, a server that never answers, credentials on the wire, a server that is not
Elasticsearch, and ``connect``'s own argument checks.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from searchers.elasticsearch_retrievers import ElasticsearchSparseRetriever
from searchers.elasticsearch_store import DEFAULT_TIMEOUT_S, ElasticsearchStore, connect
from searchers.retrieval import RetrievalError
from tests.elasticsearch_recorded import INDEX, recorded
from tests.loopback_http import serving


def sparse(store: ElasticsearchStore) -> ElasticsearchSparseRetriever:
    return ElasticsearchSparseRetriever(store)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_connect_to_a_closed_port_is_a_clear_retrieval_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    store = ElasticsearchStore(connect(url, timeout_s=2, max_retries=0), INDEX)
    with pytest.raises(RetrievalError) as caught:
        len(store)
    assert f"cannot reach Elasticsearch at {url}" in str(caught.value)


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        store = ElasticsearchStore(connect(url, max_retries=0), INDEX, timeout_s=0.3)
        with pytest.raises(RetrievalError, match=r"timed out after 0\.3s"):
            sparse(store).retrieve("solar", k=3)


class _Recorder(BaseHTTPRequestHandler):
    """A tiny HTTP server posing as Elasticsearch (or not) to see what goes over the wire."""

    seen: list[dict[str, str]]
    product: str | None

    def do_POST(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        payload = json.dumps(recorded("count")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.product:
            self.send_header("X-Elastic-Product", self.product)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Handler", (_Recorder,), {"seen": [], "product": "Elasticsearch"})
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as base:
        yield base, handler


def test_connect_sends_api_key_and_the_default_timeout_works(
    http_server: tuple[str, type[_Recorder]],
) -> None:
    url, handler = http_server
    store = ElasticsearchStore(connect(url, api_key="c2VjcmV0"), INDEX)
    assert len(store) == 3
    assert handler.seen[0]["authorization"] == "ApiKey c2VjcmV0"
    assert store.timeout_s == DEFAULT_TIMEOUT_S


def test_connect_sends_basic_auth(http_server: tuple[str, type[_Recorder]]) -> None:
    url, handler = http_server
    assert len(ElasticsearchStore(connect(url, basic_auth=("elastic", "pw")), INDEX)) == 3
    assert handler.seen[0]["authorization"] == "Basic ZWxhc3RpYzpwdw=="


def test_a_server_that_is_not_elasticsearch_is_reported(
    http_server: tuple[str, type[_Recorder]],
) -> None:
    url, handler = http_server
    handler.product = None
    with pytest.raises(RetrievalError, match="not Elasticsearch"):
        len(ElasticsearchStore(connect(url), INDEX))


def test_connect_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="empty"):
        connect(" ")
    with pytest.raises(ValueError, match="invalid Elasticsearch URL 'http://localhost'"):
        connect("http://localhost")
    with pytest.raises(ValueError, match="timeout_s"):
        connect("http://localhost:9200", timeout_s=0)
