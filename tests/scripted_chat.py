"""A scripted chat model for deterministic control-flow tests. It is not a language model: it
returns the replies it was given, in order, and records every request it saw."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import Field, ValidationError

Reply = str | Callable[[list[BaseMessage]], str]


class ScriptedChatModel(BaseChatModel):
    replies: list[Reply] = Field(default_factory=list)
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    prompt_tokens: int = 10
    completion_tokens: int = 5

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": "scripted"}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Sequence[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        if not self.replies:
            raise AssertionError("scripted chat model ran out of replies")
        reply = self.replies.pop(0)
        return self.result(reply(messages) if callable(reply) else reply)

    def result(self, text: str) -> ChatResult:
        """``text`` as one generation, with the scripted token counts as its usage."""
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": self.prompt_tokens,
                "output_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, method: str = "json_schema", include_raw: bool = False, **_: Any
    ) -> Runnable:
        """Parse the scripted reply into ``schema`` as langchain-openai's json_schema method
        does, including its include_raw form with ``parsing_error``."""

        def parse(message: AIMessage) -> Any:
            try:
                parsed, error = schema.model_validate_json(str(message.content)), None
            except ValidationError as exc:
                if not include_raw:
                    raise
                parsed, error = None, exc
            if include_raw:
                return {"raw": message, "parsed": parsed, "parsing_error": error}
            return parsed

        return self | RunnableLambda(parse)
