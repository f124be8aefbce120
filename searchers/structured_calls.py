"""One guarded LLM call with a schema-enforced reply: budget charged first, a timeout always, and
failure returned as a value, so a bad reply degrades a search instead of ending it. A reply cut at
the token limit is read as far as it got (``searchers.truncated_json``) rather than thrown away."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai.chat_models.base import BaseChatOpenAI
from pydantic import BaseModel

from searchers.searcher import RunScope
from searchers.truncated_json import salvage

T = TypeVar("T", bound=BaseModel)
STEP_KEY = "hoptree_step"  # the metadata key agent.runtime.usage counts tokens by


@dataclass
class Reply(Generic[T]):
    value: T | None
    error: str | None = None
    cut: bool = False  # the model stopped at its token limit; ``value`` is what was salvaged
    timed_out: bool = False  # no reply in time (the model is alive but slow or queued)
    # (token, log-probability) of each reply token, when asked for (``ask(logprobs=True)``)
    # and the server returned them; empty otherwise
    token_logprobs: tuple[tuple[str, float], ...] = ()


def capped(chat: BaseChatModel, max_tokens: int | None) -> BaseChatModel:
    """``chat`` with its reply limit lowered to ``max_tokens``: a shallow copy, so the HTTP
    client and the LLM cache are shared. Models without a ``max_tokens`` field (scripted ones)
    are returned as they are."""
    if max_tokens is None or "max_tokens" not in getattr(type(chat), "model_fields", {}):
        return chat
    current = getattr(chat, "max_tokens", None)
    if current is not None and current <= max_tokens:
        return chat
    return chat.model_copy(update={"max_tokens": max_tokens})


def truncated_text(exc: BaseException) -> str | None:
    """The text of a reply the client refused because it hit the token limit (the OpenAI
    client's ``LengthFinishReasonError`` keeps the completion), else None."""
    choices = getattr(getattr(exc, "completion", None), "choices", None) or []
    content = getattr(getattr(choices[0], "message", None), "content", None) if choices else None
    return content if isinstance(content, str) and content else None


_Cache = dict[tuple[int, type[BaseModel], int | None], tuple[BaseChatModel, Runnable]]
_RUNNABLES: _Cache = {}  # the parser chains of ``structured``
_BOUND: _Cache = {}  # the bound models of ``bound_to_schema``
_MAX_RUNNABLES = 64


def _built_once(
    cache: _Cache,
    chat: BaseChatModel,
    schema: type[BaseModel],
    max_tokens: int | None,
    build: Callable[[BaseChatModel], Runnable],
) -> Runnable:
    """``build(capped model)``, once per (model, schema, limit). The entry keeps its model alive
    and checks identity, so a recycled ``id`` cannot return another model's runnable."""
    key = (id(chat), schema, max_tokens)
    cached = cache.get(key)
    if cached is not None and cached[0] is chat:
        return cached[1]
    runnable = build(capped(chat, max_tokens))
    if len(cache) >= _MAX_RUNNABLES:
        cache.clear()  # a handful of models and schemas in practice; bounded anyway
    cache[key] = (chat, runnable)
    return runnable


def structured(chat: BaseChatModel, schema: type[T], max_tokens: int | None) -> Runnable:
    """``chat`` bound to reply with ``schema``, built once per (model, schema, limit): building
    it writes the JSON schema out twice and copies the model, which cost about a fifth of a
    planner run's CPU when every call rebuilt it (100 ms a run against a stub endpoint, where
    the server's CPU is what concurrent runs queue for)."""
    return _built_once(
        _RUNNABLES,
        chat,
        schema,
        max_tokens,
        lambda model: model.with_structured_output(schema, method="json_schema", include_raw=True),
    )


async def _invoke(
    runnable: Runnable, messages: list[BaseMessage], step: str, timeout: float
) -> object:
    """One call tagged with its usage step (``STEP_KEY``), within ``timeout``."""
    return await asyncio.wait_for(
        runnable.ainvoke(messages, config={"metadata": {STEP_KEY: step}}), timeout=timeout
    )


def _no_reply(step: str, timeout: float) -> Reply[Any]:
    return Reply(None, f"{step}: no reply within {timeout:.0f}s", timed_out=True)


def _failed(step: str, exc: Exception, *, cut: bool = False) -> Reply[Any]:
    """A call the client raised on, as a value; a timeout of the client's own (openai, httpx)
    is one."""
    return Reply(
        None,
        f"{step}: {type(exc).__name__}: {str(exc)[:200]}",
        cut=cut,
        timed_out="Timeout" in type(exc).__name__,
    )


async def ask(
    chat: BaseChatModel,
    schema: type[T],
    messages: list[BaseMessage],
    *,
    scope: RunScope | None = None,
    step: str,
    max_tokens: int | None = None,
    meter: RunScope | None = None,
    logprobs: bool = False,
) -> Reply[T]:
    """Ask for ``schema``; the call is charged to ``scope`` first, and the timeout it gets is
    the one the scope returns. Raises only ``BudgetExceeded`` (before spending anything).
    ``max_tokens`` lowers the model's reply limit for this call. ``meter`` is the deprecated
    name of ``scope``, kept for plugins written against ``BudgetMeter``. ``logprobs`` asks an
    OpenAI-compatible server for each reply token's log-probability (``Reply.token_logprobs``;
    other models reply without them)."""
    if scope is None:
        if meter is None:
            raise TypeError("ask() needs the scope to charge the call to (scope=...)")
        warnings.warn("ask(meter=...) is deprecated; pass scope=", DeprecationWarning, 2)
        scope = meter
    timeout = scope.charge()
    lean = bound_to_schema(chat, schema, max_tokens)
    runnable = lean if lean is not None else structured(chat, schema, max_tokens)
    if logprobs and lean is not None:
        runnable = lean.bind(logprobs=True)
    try:
        out = await _invoke(runnable, messages, step, timeout)
    except TimeoutError:
        return _no_reply(step, timeout)
    except Exception as exc:  # transport and provider errors of every client library
        text = truncated_text(exc)
        value = salvage(text, schema) if text else None
        if value is not None:
            return Reply(value, cut=True)
        return _failed(step, exc, cut=text is not None)
    tokens = reply_logprobs(out) if logprobs else ()
    if lean is not None:
        out = _parsed_message(out, schema)
    parsed = out.get("parsed") if isinstance(out, dict) else out
    if isinstance(parsed, schema):
        return Reply(parsed, token_logprobs=tokens)
    problem = out.get("parsing_error") if isinstance(out, dict) else None
    return Reply(None, f"{step}: unparseable reply ({str(problem)[:200] or 'empty'})")


class Text(BaseModel):
    """A free-text reply (``ask_text``): no schema binds it."""

    text: str


async def ask_text(
    chat: BaseChatModel,
    messages: list[BaseMessage],
    *,
    scope: RunScope,
    step: str,
    max_tokens: int | None = None,
    logprobs: bool = False,
) -> Reply[Text]:
    """``ask`` for a reply in free text: the same guard (charged to ``scope`` first, its
    timeout, failure as a value), no response format. The 1.5B reads whole passages better
    when it may answer in plain words than when a JSON schema binds its reply
    (``benchmarks/results/reader-prompt.md``). A reply cut at ``max_tokens`` is kept as far as
    it got (``Reply.cut``)."""
    timeout = scope.charge()
    model = capped(chat, max_tokens)
    runnable: Runnable = model
    if logprobs and isinstance(model, BaseChatOpenAI):
        runnable = model.bind(logprobs=True)
    try:
        out = await _invoke(runnable, messages, step, timeout)
    except TimeoutError:
        return _no_reply(step, timeout)
    except Exception as exc:  # transport and provider errors of every client library
        return _failed(step, exc)
    content = getattr(out, "content", "")
    text = content if isinstance(content, str) else ""
    meta = getattr(out, "response_metadata", None) or {}
    tokens = reply_logprobs(out) if logprobs else ()
    return Reply(Text(text=text), cut=meta.get("finish_reason") == "length", token_logprobs=tokens)


def reply_logprobs(message: object) -> tuple[tuple[str, float], ...]:
    """(token, log-probability) pairs of an OpenAI-compatible reply's message, as
    langchain-openai keeps them (``response_metadata["logprobs"]["content"]``); empty when
    the server sent none."""
    meta = getattr(message, "response_metadata", None) or {}
    content = (meta.get("logprobs") or {}).get("content") or []
    pairs = []
    for item in content:
        if isinstance(item, dict) and isinstance(item.get("logprob"), int | float):
            pairs.append((str(item.get("token", "")), float(item["logprob"])))
    return tuple(pairs)


def bound_to_schema(
    chat: BaseChatModel, schema: type[T], max_tokens: int | None
) -> Runnable | None:
    """For OpenAI-compatible models (langchain-openai): the model bound to the schema's
    response format and nothing around it, or None for other models. The OpenAI client parses
    the reply into ``schema`` itself (``additional_kwargs["parsed"]``), so the parser chain
    ``with_structured_output`` wraps around the model (a parallel map, a lambda, a fallback,
    each with its own callback manager) only costs CPU here: measured against a stub endpoint
    that answers at once, a planner run took 45 ms of CPU this way against 65 ms through the
    chain, and that CPU is what concurrent runs in one server queue for. The bound arguments
    are the ones ``with_structured_output`` binds, so LLM cache keys do not change. Models
    the OpenAI API serves without structured outputs keep the chain (it falls back to tools)."""
    if not isinstance(chat, BaseChatOpenAI) or _no_structured_outputs(chat.model_name):
        return None
    return _built_once(
        _BOUND,
        chat,
        schema,
        max_tokens,
        lambda model: model.bind(
            response_format=schema,  # langchain-openai's documented form; the client parses it
            ls_structured_output_format={
                "kwargs": {"method": "json_schema", "strict": None},
                "schema": convert_to_openai_tool(schema),
            },
        ),
    )


def _no_structured_outputs(model: str | None) -> bool:
    """The OpenAI models ``with_structured_output`` switches to function calling for."""
    name = model or ""
    return name.startswith(("gpt-3", "gpt-4-")) or name == "gpt-4"


def _parsed_message(message: object, schema: type[T]) -> dict[str, object]:
    """The ``{"parsed", "parsing_error"}`` shape ``with_structured_output(include_raw=True)``
    gives, from a bound model's reply."""
    kwargs = getattr(message, "additional_kwargs", None) or {}
    parsed = kwargs.get("parsed")
    try:
        if isinstance(parsed, dict):
            parsed = schema(**parsed)
        elif parsed is None:
            content = getattr(message, "content", "")
            parsed = schema.model_validate_json(content) if isinstance(content, str) else None
    except ValueError as exc:  # pydantic's ValidationError, JSON errors
        return {"parsed": None, "parsing_error": exc}
    return {"parsed": parsed, "parsing_error": None}
