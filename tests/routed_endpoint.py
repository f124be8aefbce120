"""A ``RoutedChatModel`` behind a real OpenAI-compatible endpoint on 127.0.0.1, for tests that
run the real ``hoptree`` entry point in a child process: the child builds its chat model from
settings (``HOPTREE_LLM__BASE_URL``) as a user's would, and the replies are still the test's
script, chosen by which prompt was sent.

It is not a language model: ``POST /v1/chat/completions`` turns the request's messages into
LangChain messages, asks the routed model, and answers its reply as the content of an OpenAI
chat completion (with token counts, so usage accounting runs as usual). A route the script
does not know is a 500, which the child reports as a failed step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from tests.loopback_http import send_json, serving
from tests.routed_chat import RoutedChatModel
from tests.searchers.test_truncated_replies import completion

_ROLES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def _messages(body: dict[str, Any]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        if isinstance(content, list):  # text parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append(_ROLES.get(message.get("role"), HumanMessage)(content=content))
    return out


@contextmanager
def routed_endpoint(chat: RoutedChatModel) -> Iterator[str]:
    """Serves ``chat`` as an OpenAI-compatible endpoint; yields its base URL (``.../v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            try:
                reply = chat.invoke(_messages(body))
                data = completion(str(reply.content), "stop")
                status = 200
            except Exception as exc:  # an unscripted route: the child sees a failed call
                data = {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "stub"}}
                status = 500
            send_json(self, status, data)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as base:
        yield f"{base}/v1"
