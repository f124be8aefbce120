"""The checks a request passes before a run, over a real uvicorn server on 127.0.0.1: their order
(the key before anything reads the body), strict types on the OpenAI-compatible endpoint, and
what a body that is not JSON is told (issue 63). The agent is the scripted test double; every
test ends by checking that none of its refused requests started a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.serve.api import create_app
from agent.serve.documents import DocumentStore
from agent.settings import ServerSettings, Settings
from tests.fake_agent import ScriptedAgent
from tests.http_client import KEY, TIMEOUT, auth
from tests.live_server import serving

BODY_LIMIT = 1024
POST_PATHS = ("/v1/ask", "/v1/ask/stream", "/v1/chat/completions", "/v1/documents")
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def url(agent: ScriptedAgent, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A keyed server with every POST route mounted (documents too: its store is never reached
    by these requests) and a small body limit."""
    settings = ServerSettings(host="127.0.0.1", port=0, api_key=KEY, max_body_bytes=BODY_LIMIT)
    index = tmp_path_factory.mktemp("index")
    store = DocumentStore(Settings(data_dir=Path(index) / "data"), Path(index))
    with serving(create_app(agent, settings, store), settings) as base:
        yield base


def post(url: str, path: str, content: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url + path, content=content, headers={**JSON, **headers}, timeout=TIMEOUT)


# --------------------------------------------------------------------------- the key comes first


@pytest.mark.parametrize(
    ("body", "status_with_key"),
    [
        (b'{"model":', {"/v1/chat/completions": 400, "default": 422}),  # malformed JSON
        (b'{"question": "' + b"x" * 2 * BODY_LIMIT + b'"}', {"default": 413}),  # too large
        (b"[1, 2]", {"/v1/chat/completions": 400, "default": 422}),  # not an object
    ],
    ids=["malformed", "too-large", "not-an-object"],
)
def test_the_key_is_checked_before_the_body(
    url: str, agent: ScriptedAgent, body: bytes, status_with_key: dict[str, int]
) -> None:
    """Without the key, no route says anything about the body: 401 whatever was sent. With
    it, the same body gets its own error, which shows the key was checked first."""
    runs = len(agent.calls)
    for path in POST_PATHS:
        for headers in ({}, auth("wrong-key")):
            r = post(url, path, body, headers)
            assert r.status_code == 401, (path, headers, r.text)
            error = r.json()["error"]
            assert (error["type"], error["code"]) == ("authentication_error", "invalid_api_key")
            assert r.headers["www-authenticate"] == "Bearer"
            assert ("param" in error) == (path == "/v1/chat/completions")  # each path's style
        expected = status_with_key.get(path, status_with_key["default"])
        assert post(url, path, body, auth()).status_code == expected, path
    assert len(agent.calls) == runs
