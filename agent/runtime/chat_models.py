"""Building the chat model from settings: a remote OpenAI-compatible endpoint or the embedded one.

Everything downstream sees a langchain-core ``BaseChatModel``; only this module knows whether it
talks to OpenAI, vLLM, Ollama, a user's llama.cpp, or the llama.cpp server we start ourselves.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from agent.runtime.gguf_assembly import LOCAL_MODELS, ProgressFn, assemble
from agent.runtime.llama_server import LlamaServer
from agent.runtime.shared_server import SERVER_DIR, Lease, ServerDirectory, ServerSpec
from agent.runtime.usage import SERVER_TIMINGS_KEY
from agent.settings import Settings

LOCAL_API_KEY = "hoptree-local"  # the loopback server checks no key, but the client wants one


class ChatModelConfigError(ValueError):
    """A chat endpoint configuration that cannot work; the message says which setting to change."""


def _stable_json(value: Any) -> Any:
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value.model_json_schema()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return repr(value)


class HoptreeChatOpenAI(ChatOpenAI):
    """ChatOpenAI whose cache key names the model, not the transport.

    The stock key serializes the client, base URL included; the embedded server listens on a new
    port every run, so every cached answer would miss. We key on a stable identity (the model's
    content hash for the embedded model, endpoint + model otherwise) plus the call parameters.
    """

    cache_identity: str = ""

    def _get_llm_string(self, stop: list[str] | None = None, **kwargs: Any) -> str:
        params = {**self._get_invocation_params(stop=stop, **kwargs), **kwargs}
        params.pop("stream", None)  # streamed or not, the completion is the same
        params["model_identity"] = self.cache_identity or self.model_name
        return json.dumps(params, sort_keys=True, default=_stable_json)

    def _create_chat_result(
        self, response: dict[str, Any] | Any, generation_info: dict[str, Any] | None = None
    ) -> ChatResult:
        """The stock result drops fields OpenAI does not send; llama.cpp's ``timings`` (prompt
        and decode milliseconds, draft tokens tried and accepted) is what says where a call's
        seconds went, so it rides along in each message's ``response_metadata``."""
        result = super()._create_chat_result(response, generation_info)
        timings = (
            response.get("timings")
            if isinstance(response, dict)
            else getattr(response, "model_extra", None) and response.model_extra.get("timings")
        )
        if isinstance(timings, dict):
            for generation in result.generations:
                generation.message.response_metadata[SERVER_TIMINGS_KEY] = dict(timings)
        return result


@dataclass
class ChatModelHandle:
    """The chat model plus what keeps it alive and what to tell the user about it."""

    model: HoptreeChatOpenAI
    label: str
    endpoint: str
    embedded: bool
    server: LlamaServer | None = None  # a private server, stopped with the handle
    lease: Lease | None = None  # or a lease on the data dir's shared server, given back
    details: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        if self.lease is not None:
            self.lease.close()

    def __enter__(self) -> ChatModelHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_local_gguf(settings: Settings, progress: ProgressFn | None = None) -> tuple[str, Any]:
    """(label, path) of the GGUF the embedded server should load."""
    if settings.llm.gguf_path is not None:
        path = settings.llm.gguf_path.expanduser()
        return path.stem, path
    spec = LOCAL_MODELS[settings.llm.local_model]
    return spec.name, assemble(spec, settings.models_dir, progress)


def build_chat_model(
    settings: Settings,
    *,
    cache: BaseCache | bool | None = None,
    progress: ProgressFn | None = None,
    callbacks: list[BaseCallbackHandler] | None = None,
) -> ChatModelHandle:
    """Build the configured chat model; starts the embedded server when no endpoint is set.

    ``cache``: a ``BaseCache`` to use, ``False`` to disable caching, ``None`` for none.
    """
    llm = settings.llm
    common: dict[str, Any] = {
        "temperature": llm.temperature,
        "max_tokens": llm.max_tokens,
        "timeout": llm.timeout_s,
        "max_retries": llm.max_retries,
        "cache": cache if cache is not None else False,
        "callbacks": callbacks,
    }
    if not llm.embedded:
        if not llm.model.strip():
            raise ChatModelConfigError(
                f"HOPTREE_LLM__BASE_URL is set to {llm.base_url!r} but no model is named: "
                "set HOPTREE_LLM__MODEL (e.g. gpt-4o-mini, or the name your vLLM/Ollama serves)"
            )
        key = llm.api_key.get_secret_value() if llm.api_key else os.environ.get("OPENAI_API_KEY")
        model = HoptreeChatOpenAI(
            base_url=llm.base_url,
            model=llm.model,
            api_key=SecretStr(key or "not-needed"),
            cache_identity=f"{llm.base_url.rstrip('/')}|{llm.model}",
            **common,
        )
        return ChatModelHandle(model=model, label=llm.model, endpoint=llm.base_url, embedded=False)

    label, gguf = resolve_local_gguf(settings, progress)
    draft = None
    if "draft" in llm.local_speculative:
        draft = assemble(LOCAL_MODELS["qwen2.5-coder-0.5b"], settings.models_dir, progress)
    spec = ServerSpec(
        gguf=str(gguf),
        alias=label,
        n_ctx=llm.local_ctx,
        threads=llm.local_threads,
        parallel=llm.local_parallel,
        speculative=llm.local_speculative,
        draft_gguf=str(draft) if draft is not None else None,
        cache_reuse=llm.local_cache_reuse,
        repack=llm.local_repack,
        startup_timeout_s=llm.startup_timeout_s,
    )
    server: LlamaServer | None = None
    lease: Lease | None = None
    if llm.local_shared:
        lease = ServerDirectory(settings.data_dir / SERVER_DIR).acquire(
            spec, idle_s=llm.local_idle_s
        )
        if lease is not None and lease.differences:
            # not an error: the server's slots serve this process too, only not as configured
            print(
                f"hoptree: sharing the running model server (pid {lease.record.pid}), which "
                f"differs from your settings: {'; '.join(lease.differences)}",
                file=sys.stderr,
            )
    if lease is None:  # a private server: asked for, or the shared one serves another model
        server = spec.llama_server().start()
        base_url, load_seconds = server.base_url, server.load_seconds
        serving = "private, in this process"
    else:
        base_url, load_seconds = lease.base_url, lease.record.load_seconds
        serving = f"shared, pid {lease.record.pid} on port {lease.record.port}" + (
            " (started by this process)" if lease.started_here else ""
        )
    identity = f"local|{label}"
    if settings.llm.gguf_path is None:
        identity += f"|{LOCAL_MODELS[settings.llm.local_model].sha256[:16]}"
    else:
        stat = gguf.stat()
        identity += f"|{stat.st_size}|{stat.st_mtime_ns}"
    model = HoptreeChatOpenAI(
        base_url=base_url,
        model=label,
        api_key=SecretStr(LOCAL_API_KEY),
        cache_identity=identity,
        **common,
    )
    return ChatModelHandle(
        model=model,
        label=label,
        endpoint=base_url,
        embedded=True,
        server=server,
        lease=lease,
        details={
            "gguf": str(gguf),
            "load_seconds": load_seconds,
            "server": serving,
            **({"differs": lease.differences} if lease and lease.differences else {}),
            "n_ctx": llm.local_ctx,
            "speculative": llm.local_speculative,
        },
    )
