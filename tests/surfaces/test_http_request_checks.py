"""The checks a request passes before a run, over a real uvicorn server on 127.0.0.1: their order
(the key before anything reads the body), strict types on the OpenAI-compatible endpoint, and
what a body that is not JSON is told (issue 63). The agent is the scripted test double; every
test ends by checking that none of its refused requests started a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from agent.serve.api import create_app
from agent.serve.documents import DocumentStore
from agent.settings import ServerSettings, Settings
from tests.fake_agent import QUESTION, ScriptedAgent
from tests.http_client import KEY, TIMEOUT, assert_openai_error, auth
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


# --------------------------------------------------------------------------- strict types


CHAT = [{"role": "user", "content": QUESTION}]


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"stream": "yes"}, "stream"),
        ({"stream": "true"}, "stream"),
        ({"stream": 1}, "stream"),
        (
            {"stream": True, "stream_options": {"include_usage": "false"}},
            "stream_options.include_usage",
        ),
        ({"temperature": "0.2"}, "temperature"),
        ({"max_tokens": "100"}, "max_tokens"),
        ({"n": 1.5}, "n"),
        ({"logprobs": "no"}, "logprobs"),
    ],
)
def test_chat_booleans_and_numbers_are_strict(
    url: str, agent: ScriptedAgent, extra: dict[str, Any], param: str
) -> None:
    """OpenAI answers 400 for a boolean or a number of the wrong JSON type; ``"stream": "yes"``
    used to start a streamed run."""
    runs = len(agent.calls)
    r = httpx.post(
        url + "/v1/chat/completions",
        json={"model": "hoptree", "messages": CHAT, **extra},
        headers=auth(),
        timeout=TIMEOUT,
    )
    error = assert_openai_error(r, 400, "invalid_type", param=param)
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(f"{param}: "), error
    assert len(agent.calls) == runs


def test_chat_strict_types_reach_the_openai_client_and_null_is_no_value(
    url: str, agent: ScriptedAgent
) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, timeout=20) as client:
        runs = len(agent.calls)
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(
                model="hoptree", messages=CHAT, extra_body={"stream": "yes"}
            )
        assert (info.value.code, info.value.param) == ("invalid_type", "stream")
        assert "boolean" in info.value.message and "string" in info.value.message
        assert len(agent.calls) == runs
        # what OpenAI accepts still runs: nulls, and a whole number where a float is expected
        completion = client.chat.completions.create(
            model="hoptree",
            messages=CHAT,
            temperature=0,
            max_tokens=100,
            n=1,
            extra_body={"stream": None, "stream_options": None, "logprobs": False},
        )
        assert completion.choices[0].message.content
        assert len(agent.calls) == runs + 1


# --------------------------------------------------------------------------- malformed JSON


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            b'{"question": "Who?",\n "thread_id" "t1"}',
            "Expecting ':' delimiter: line 2, column 14 (character 34)",
        ),
        (b'{"question": "Who', "Unterminated string starting at: line 1, column 14 (character 13)"),
        (b'{"question":', "Expecting value: line 1, column 13 (character 12, the end of the body)"),
    ],
)
def test_malformed_json_says_what_and_where(
    url: str, agent: ScriptedAgent, body: bytes, where: str
) -> None:
    """``/v1/ask`` once answered ``"34: JSON decode error"``; both API styles now name the
    expected token, the line, the column and the character."""
    runs = len(agent.calls)
    message = f"the request body is not valid JSON: {where}"
    for path in ("/v1/ask", "/v1/ask/stream"):
        r = post(url, path, body, auth())
        assert r.status_code == 422, r.text
        assert r.json() == {
            "error": {"message": message, "type": "invalid_request_error", "code": "invalid_json"}
        }
    r = post(url, "/v1/chat/completions", body, auth())
    assert assert_openai_error(r, 400, "invalid_json")["message"] == message
    assert len(agent.calls) == runs
