"""One guarded LLM call with a schema-enforced reply: budget charged first, a timeout always, and
failure returned as a value, so a bad reply degrades a search instead of ending it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from searchers.searcher import BudgetMeter

T = TypeVar("T", bound=BaseModel)
STEP_KEY = "hoptree_step"  # the metadata key agent.usage counts tokens by


@dataclass
class Reply(Generic[T]):
    value: T | None
    error: str | None = None


async def ask(
    chat: BaseChatModel,
    schema: type[T],
    messages: list[BaseMessage],
    *,
    meter: BudgetMeter,
    step: str,
) -> Reply[T]:
    """Ask for ``schema``; raises only ``BudgetExceeded`` (before spending anything)."""
    timeout = meter.charge()
    runnable = chat.with_structured_output(schema, method="json_schema", include_raw=True)
    try:
        out = await asyncio.wait_for(
            runnable.ainvoke(messages, config={"metadata": {STEP_KEY: step}}), timeout=timeout
        )
    except TimeoutError:
        return Reply(None, f"{step}: no reply within {timeout:.0f}s")
    except Exception as exc:  # transport and provider errors of every client library
        return Reply(None, f"{step}: {type(exc).__name__}: {str(exc)[:200]}")
    parsed = out.get("parsed") if isinstance(out, dict) else out
    if isinstance(parsed, schema):
        return Reply(parsed)
    problem = out.get("parsing_error") if isinstance(out, dict) else None
    return Reply(None, f"{step}: unparseable reply ({str(problem)[:200] or 'empty'})")
