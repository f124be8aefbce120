"""The composition root: settings in, concrete models and caches out, each built on first use.

Commands and the server hold one ``Runtime``; nothing below ``agent`` constructs a model itself.
"""

from __future__ import annotations

from functools import cached_property

from langchain_core.embeddings import Embeddings

from agent.runtime.chat_models import ChatModelHandle, build_chat_model
from agent.runtime.embeddings import make_embeddings
from agent.runtime.gguf_assembly import ProgressFn
from agent.runtime.llm_cache import SQLiteLLMCache
from agent.runtime.usage import UsageTracker
from agent.settings import Settings


class Runtime:
    def __init__(self, settings: Settings, *, progress: ProgressFn | None = None) -> None:
        self.settings = settings
        self.progress = progress
        self.usage = UsageTracker()
        self._chat: ChatModelHandle | None = None

    @cached_property
    def llm_cache(self) -> SQLiteLLMCache | None:
        if not self.settings.llm.cache:
            return None
        return SQLiteLLMCache(self.settings.llm_cache_path)

    @property
    def chat(self) -> ChatModelHandle:
        if self._chat is None:
            self._chat = build_chat_model(
                self.settings,
                # not `or`: an empty cache has len 0 and is falsy, and would switch caching off
                cache=self.llm_cache if self.llm_cache is not None else False,
                progress=self.progress,
                callbacks=[self.usage],
            )
        return self._chat

    @cached_property
    def embeddings(self) -> Embeddings:
        return make_embeddings(self.settings.embeddings, self.settings.models_dir)

    def close(self) -> None:
        if self._chat is not None:
            self._chat.close()
            self._chat = None
        if "llm_cache" in self.__dict__ and self.llm_cache is not None:
            self.llm_cache.close()
            del self.__dict__["llm_cache"]

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
