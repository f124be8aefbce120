"""hoptree as an MCP server: the planner, its searchers and raw retrieval as tools an agent
framework, a desktop assistant or an IDE agent can call over the Model Context Protocol.

Built on the official ``mcp`` SDK's ``MCPServer`` (the high-level server that was called
``FastMCP`` before SDK 2.0): it derives each tool's input and output JSON schema from the type
hints below, so the limits (question length, k range) are in the schema a client sees, and an
argument outside them is refused as a tool error before any code here runs.

Tools: ``ask`` (the whole planner, with progress notifications of its trace steps and
cancellation), ``search`` (one low-level searcher's LLM loop), ``retrieve`` (a raw index lookup,
no LLM), ``list_searchers``, ``read_passage``, and (over a real index) ``add_document`` and
``remove_document``; the passages are also resources at
``hoptree://passage/{passage_id}``. A failure is a tool error with a message the caller can act
on; nothing a client sends takes the server down.

No ``from __future__ import annotations`` here: the SDK reads the tools' signatures at run
time, and their limits live in names local to ``build_mcp_server``.
"""

import json
import logging
import re
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from agent.results import AskResult, TraceEvent
from agent.rules.question import QuestionError, clean_question
from agent.runtime.embeddings import EmbeddingModelError
from agent.serve.documents import (
    DocumentInputError,
    DocumentStore,
    check_name,
    document_bytes,
    unread_message,
)
from agent.serve.mcp_backend import McpBackend
from agent.serve.mcp_schemas import (
    AskOutput,
    PassageOut,
    RetrieveOutput,
    SearcherInfo,
    SearchersOutput,
    SearchOutput,
    ask_output,
    hits_out,
    passage_output,
    search_output,
)
from agent.serve.openai_api import chat_content
from agent.serve.runs import THREAD_ID_RE, run_items
from agent.service import AgentError
from agent.trace_lines import progress_line
from searchers.retrieval import RetrievalError

log = logging.getLogger(__name__)

SERVER_NAME = "hoptree"
MAX_SEARCH_K = 100  # as `hoptree search -k`
MAX_RETRIEVE_K = 1000  # as `hoptree retrieve -k`
MAX_PASSAGE_ID_CHARS = 512
RETRIEVE_TIMEOUT_S = 120.0  # the first dense call loads the embedding model
OPEN_TIMEOUT_S = 300.0  # building a searcher may load models (and start the embedded one)
PASSAGE_URI = "hoptree://passage/{passage_id}"
RetrieverKind = Literal["sparse", "dense", "hybrid"]

# Errors whose own message tells the caller what to fix (unknown names, a missing index,
# an embedding model that does not match, an empty or oversized query).
EXPECTED = (
    LookupError,
    ValueError,
    RetrievalError,
    EmbeddingModelError,
    AgentError,
    QuestionError,
)

INSTRUCTIONS = """\
hoptree answers multi-hop questions over one document index with citations.
Use `ask` for a question that needs several facts combined (it plans atomic queries, searches,
checks the evidence and answers with [n] citations; it can take minutes on a local model and
reports its steps as progress). Use `search` to run one low-level searcher on one atomic query,
`retrieve` for a raw keyword/vector lookup without any LLM, and `read_passage` (or the resource
hoptree://passage/{id}) to read a cited passage in full."""

T = TypeVar("T")


async def _in_thread(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """Blocking index and model work off the event loop (it also carries other calls'
    progress); bounded, and abandoned (not awaited) when the caller cancels."""
    try:
        with anyio.fail_after(timeout_s):
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    except TimeoutError as exc:
        raise ToolError(f"{what} did not finish within {timeout_s:g} s") from exc


async def _tool_errors(call: Awaitable[T]) -> T:
    """Expected failures become tool errors with their own message; anything else is logged
    and reported by type, so the caller learns it was the server's fault, not its input."""
    try:
        return await call
    except ToolError:
        raise
    except EXPECTED as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        log.exception("MCP tool failed")
        raise ToolError(f"internal error: {type(exc).__name__}: {str(exc)[:300]}") from exc


def build_mcp_server(backend: McpBackend) -> MCPServer:
    """The MCP server over ``backend``; serve it with ``run_stdio_async`` or mount its
    ``streamable_http_app`` (``agent.cli.mcp`` does both)."""
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    slots = anyio.Semaphore(max(1, backend.run_slots))
    names = backend.registry.names()
    planner_names = list(backend.agent.searcher_names)
    default_searcher = next((n for n in planner_names if n in names), names[0] if names else "")
    max_chars = backend.max_question_chars

    Question = Annotated[
        str,
        Field(min_length=1, max_length=max_chars, description=f"at most {max_chars} characters"),
    ]
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True)

    def query_of(text: str) -> str:
        try:
            return clean_question(text, max_chars=max_chars)
        except QuestionError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool(title="Ask hoptree a multi-hop question", annotations=read_only)
    async def ask(
        question: Question,
        ctx: Context,
        thread_id: Annotated[
            str | None,
            Field(
                pattern=THREAD_ID_RE.pattern,
                description="a conversation thread: follow-up questions see its earlier turns",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, AskOutput]:
        """Answer a question that needs several facts combined: the planner splits it into
        atomic queries, searches the index for each, checks the evidence and answers with
        [n] citations (passage ids and titles). Progress notifications name each step."""
        result: AskResult | None = None
        step = 0

        async def report(line: str) -> None:
            nonlocal step
            step += 1
            await ctx.report_progress(step, None, line)

        if slots.value == 0:
            await report("waiting for a free run slot (other questions are running)")
        try:
            with anyio.fail_after(backend.deadline_s):
                await slots.acquire()
        except TimeoutError as exc:
            raise ToolError(
                f"no run slot came free within {backend.deadline_s:g} s; try again later"
            ) from exc
        try:
            items = run_items(backend.agent, question, thread_id or None, backend.deadline_s)
            async with aclosing(items) as stream:  # closing it cancels the run
                async for item in stream:
                    if isinstance(item, AskResult):
                        result = item
                        break
                    if item.kind == "error" and item.data.get("fatal"):
                        raise ToolError(str(item.data.get("error") or "the run failed"))
                    line = progress_line(item) if isinstance(item, TraceEvent) else None
                    if line:
                        await report(line)
        finally:
            slots.release()
        if result is None:
            raise ToolError("the run ended without a result")
        output = ask_output(result)
        return CallToolResult(
            content=[TextContent(type="text", text=chat_content(result))],
            structured_content=output.model_dump(mode="json"),
        )

    @server.tool(title="Run one low-level searcher", annotations=read_only)
    async def search(
        query: Question,
        searcher: Annotated[
            str,
            Field(
                min_length=1,
                max_length=64,
                description=f"a registered searcher: {', '.join(names) or 'none'}",
            ),
        ] = default_searcher,
        k: Annotated[int, Field(ge=1, le=MAX_SEARCH_K, description="hits to return")] = 10,
    ) -> SearchOutput:
        """Search for one atomic query with one low-level searcher and its LLM refinement
        loop (sparse: Lucene rewrite + extend/emphasize/filter; dense: HyDE). Returns the hits
        and every query it tried (the refinement tree)."""
        text = query_of(query)

        async def run() -> SearchOutput:
            engine = await _in_thread(
                lambda: backend.searcher(searcher), OPEN_TIMEOUT_S, "opening the searcher"
            )
            try:
                with anyio.fail_after(backend.search_timeout_s):
                    result = await engine.search(text, k=k)
            except TimeoutError as exc:
                raise ToolError(f"the search ran past {backend.search_timeout_s:g} s") from exc
            return search_output(result)

        return await _tool_errors(run())

    @server.tool(title="Raw index lookup (no LLM)", annotations=read_only)
    async def retrieve(
        query: Question,
        retriever: Annotated[
            RetrieverKind, Field(description="sparse = BM25, dense = embeddings, hybrid = fused")
        ] = "hybrid",
        k: Annotated[int, Field(ge=1, le=MAX_RETRIEVE_K, description="hits to return")] = 10,
    ) -> RetrieveOutput:
        """The top k passages for a query straight from the index: no LLM, milliseconds once
        the index is open. Sparse queries may use Lucene syntax."""
        text = query_of(query)

        def lookup() -> RetrieveOutput:
            hits = backend.retriever(retriever).retrieve(text, k)
            return RetrieveOutput(query=text, retriever=retriever, k=k, hits=hits_out(hits))

        return await _tool_errors(_in_thread(lookup, RETRIEVE_TIMEOUT_S, "the lookup"))

    @server.tool(title="List the searchers", annotations=read_only)
    def list_searchers() -> SearchersOutput:
        """The searchers `search` accepts (from the registry, plugins included), which of them
        `ask`'s planner uses, and the retrievers `retrieve` accepts."""
        return SearchersOutput(
            searchers=[
                SearcherInfo(
                    name=spec.name,
                    description=spec.description,
                    requires=list(spec.requires),
                    in_planner=spec.name in planner_names,
                )
                for spec in backend.registry.specs()
            ],
            retrievers=list(backend.retriever_kinds),
        )

    async def find_passage(passage_id: str) -> PassageOut | None:
        found = await _tool_errors(
            _in_thread(lambda: backend.passage(passage_id), RETRIEVE_TIMEOUT_S, "the lookup")
        )
        return passage_output(found) if found is not None else None

    @server.tool(title="Read a passage by id", annotations=read_only)
    async def read_passage(
        passage_id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_PASSAGE_ID_CHARS,
                description="an id from a citation, a hit or a sub-query's passage_ids",
            ),
        ],
    ) -> PassageOut:
        """The full text, title and metadata of one indexed passage, e.g. one `ask` cited."""
        found = await find_passage(passage_id)
        if found is None:
            raise ToolError(f"no passage with id {passage_id!r} in this index")
        return found

    if backend.documents is not None:
        add_document_tools(server, backend.documents)

    @server.resource(
        PASSAGE_URI,
        name="passage",
        title="An indexed passage",
        description="one passage of the index by id (JSON: id, title, text, metadata)",
        mime_type="application/json",
    )
    async def passage_resource(passage_id: str) -> str:
        if not passage_id or len(passage_id) > MAX_PASSAGE_ID_CHARS or re.search(r"\s", passage_id):
            raise ResourceError(f"not a passage id: {passage_id[:80]!r}")
        try:
            found = await find_passage(passage_id)
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc
        if found is None:
            raise ResourceError(f"no passage with id {passage_id!r} in this index")
        return json.dumps(found.model_dump(mode="json"), ensure_ascii=False)

    return server


WRITE_TIMEOUT_S = 1800.0  # a large PDF is converted and embedded on the server's CPU


def add_document_tools(server: MCPServer, store: DocumentStore) -> None:
    """``add_document`` and ``remove_document``: ``POST`` / ``DELETE /v1/documents`` as tools
    (``agent.serve.documents``); the build report comes back, a file that could not be read
    is a tool error. One write at a time; ``ask`` and ``retrieve`` see it from their next
    lookup."""
    lock = anyio.Lock()
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)

    async def write(step: Callable[[], Any]) -> dict[str, Any]:  # a BuildReport
        async with lock:
            report = await _tool_errors(_in_thread(step, WRITE_TIMEOUT_S, "the index update"))
        unread = unread_message(report)
        if unread is not None:
            raise ToolError(unread)
        return report.as_dict()

    @server.tool(title="Add or replace a document in the index", annotations=writes)
    async def add_document(
        name: Annotated[
            str, Field(min_length=1, max_length=200, description="file name: notes.md, a.pdf")
        ],
        text: Annotated[str | None, Field(description="the content of a text file")] = None,
        content_base64: Annotated[
            str | None, Field(description="or the bytes of any file, base64")
        ] = None,
    ) -> dict[str, Any]:
        """Index a document under ``name``; the same name again replaces its passages. The
        build report: passages added and removed, the index's total."""
        try:
            data = document_bytes(text, content_base64)
            checked = check_name(name)
        except DocumentInputError as exc:
            raise ToolError(str(exc)) from exc
        return await write(lambda: store.put(checked, data))

    @server.tool(
        title="Remove a document from the index",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    async def remove_document(
        source: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description="a name add_document used, or the path of an indexed file",
            ),
        ],
    ) -> dict[str, Any]:
        """Remove a document's passages from the index (and an added document's file)."""
        return await write(lambda: store.delete(source))
