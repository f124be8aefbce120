"""Load test of the HTTP agent API serving the real planner: limits under a burst, and the chat
endpoint going down mid-run.

Setup, all on loopback:

- a small real index: the bundled 300 HotpotQA paragraphs (``agent/demo/hotpotqa_demo.jsonl``)
  built with ``agent.indexing.build`` into a temporary directory. Only its tantivy (sparse) side
  is used; the dense side is built with placeholder vectors so no embedding model is loaded.
- a stub chat endpoint (``benchmarks/stub_chat_server.py``, its own process): OpenAI-compatible
  ``/v1/chat/completions`` with a fixed latency per call, answering schema-valid JSON by prompt.
- the server: the real app (``create_app`` + ``make_server``) in its own process (so its memory
  is measured alone, from ``/proc/<pid>/status``), serving ``HoptreeAgent``, the real LangGraph
  planner, with the real sparse searcher (tantivy, query rewrite and refinement) and
  ``HoptreeChatOpenAI`` pointed at the stub (``max_retries=0``, 10 s timeout).

A run makes 11 chat calls over two planner rounds (see the stub's docstring). Phases:

1. burst: 50 concurrent ``POST /v1/ask`` at ``max_concurrency`` 4: 4 answered, 46 refused with
   429 and ``Retry-After``; none may be lost or hang.
2. retrying clients: the same 50, each honouring ``Retry-After`` (bounded attempts) until served.
3. stream burst: 50 concurrent ``POST /v1/ask/stream``; a 200 must end with the ``result`` event.
4. chat endpoint down: 25 ``/v1/ask`` and 25 ``/v1/ask/stream`` clients (retrying 429s); once
   runs are in flight the stub is killed (SIGKILL). Clients must get 502 naming the connection
   failure, or a fatal ``error`` event saying the same on a stream; ``/healthz`` must keep
   answering during and after.
5. chat endpoint back: the stub restarts on the same port; the same server answers again.

Server RSS is sampled before, during (peak) and after every phase; "lost" = no HTTP response.

    .venv/bin/python benchmarks/load_test.py            # writes benchmarks/results/load.md
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
CORPUS = ROOT / "agent" / "demo" / "hotpotqa_demo.jsonl"
STUB = ROOT / "benchmarks" / "stub_chat_server.py"
QUESTION = (
    'The band who released the debut album "Tinted Windows" had their first performance in '
    "what city?"
)
CLIENTS = 50
MAX_CONCURRENCY = 4
CHAT_LATENCY_S = 0.2  # per chat call, at the stub
CHAT_TIMEOUT_S = 10.0  # the chat client's timeout per call
RUN_DEADLINE_S = 60.0  # the server's per-run deadline
REQUEST_TIMEOUT = httpx.Timeout(30.0)
PHASE_LIMIT_S = 180.0
MAX_ATTEMPTS = 60
RECOVERY_CLIENTS = 8
MEMORY_SLACK_MIB = 25.0  # allowed RSS growth from the end of phase 1 to the end of the run
START_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------- the child server


def serve_child(chat_url: str, index_dir: Path, max_concurrency: int) -> None:
    """Child process: the real planner over the sparse index, talking to the stub chat endpoint;
    serve it on a free loopback port, print the URL, run until SIGINT/SIGTERM."""
    from pydantic import SecretStr

    from agent.chat_models import HoptreeChatOpenAI
    from agent.hoptree_agent import HoptreeAgent
    from agent.http_api import create_app, make_server
    from agent.settings import BudgetSettings, PlannerSettings, ServerSettings
    from searchers.index_dir import IndexDir
    from searchers.lucene import render_tantivy
    from searchers.searcher import SearchBudget
    from searchers.sparse_searcher import SparseSearcher

    chat = HoptreeChatOpenAI(
        base_url=chat_url + "/v1",
        model="stub",
        api_key=SecretStr("x"),
        timeout=CHAT_TIMEOUT_S,
        max_retries=0,
        temperature=0,
    )
    sparse = SparseSearcher(
        chat,
        IndexDir.open(index_dir).sparse(),
        budget=SearchBudget(deadline_s=RUN_DEADLINE_S, llm_timeout_s=CHAT_TIMEOUT_S),
        render=render_tantivy,
    )
    agent = HoptreeAgent(
        chat,
        {"sparse": sparse},
        planner=PlannerSettings(searchers=["sparse"]),
        budgets=BudgetSettings(deadline_s=RUN_DEADLINE_S, searcher_deadline_s=RUN_DEADLINE_S),
        llm_timeout_s=CHAT_TIMEOUT_S,
        model_label="hoptree (stub chat)",
    )
    settings = ServerSettings(
        host="127.0.0.1",
        port=0,
        max_concurrency=max_concurrency,
        request_deadline_s=RUN_DEADLINE_S,
    )

    def ready(url: str) -> None:
        print(f"READY {url}", flush=True)

    server = make_server(create_app(agent, settings), settings, on_ready=ready, log_level="error")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises SIGINT after shutting down
        asyncio.run(server.serve())


@dataclass
class Proc:
    """A child process that printed ``READY <url>``."""

    name: str
    proc: subprocess.Popen[str]
    url: str

    def rss_kib(self) -> int:
        """Resident set size (VmRSS), in KiB; -1 once the process is gone."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return -1

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def kill(self) -> None:
        """SIGKILL: the process dies with its connections open, as a crashed endpoint does."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def spawn(name: str, args: list[str]) -> Proc:
    """Start a child and wait (bounded) for its ``READY <url>`` line; stdout is read on a thread,
    so a child that hangs without printing cannot block us."""
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:  # ends when the child closes stdout (exits)
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    ends = time.monotonic() + START_TIMEOUT_S
    while (left := ends - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line.startswith("READY "):
            return Proc(name, proc, line.split()[1])
        if not line:
            break
    proc.kill()
    proc.wait(5)
    raise RuntimeError(f"the {name} process did not start within {START_TIMEOUT_S:.0f} s")


def start_stub(port: int = 0) -> Proc:
    args = [sys.executable, str(STUB), "--port", str(port), "--latency", str(CHAT_LATENCY_S)]
    return spawn("stub chat", args)


def start_server(chat_url: str, index_dir: Path) -> Proc:
    args = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--serve",
        "--chat-url",
        chat_url,
        "--index",
        str(index_dir),
        "--max-concurrency",
        str(MAX_CONCURRENCY),
    ]
    return spawn("server", args)


def build_index(data_dir: Path) -> tuple[Path, float]:
    """The demo corpus as a real index; placeholder dense vectors (the dense side is unused)."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from agent.indexing import build
    from agent.settings import load_settings

    index_dir = data_dir / "index"
    started = time.monotonic()
    build(
        load_settings(data_dir=data_dir),
        [CORPUS],
        index_dir,
        embeddings=DeterministicFakeEmbedding(size=384),
    )
    return index_dir, time.monotonic() - started


# --------------------------------------------------------------------------- clients


@dataclass
class Outcome:
    status: int | None  # None = no HTTP answer at all (lost)
    seconds: float
    attempts: int = 1
    detail: str = ""  # error message, or the last event of a stream
    retry_after: float | None = None
    llm_calls: int = 0  # of a served run
    answered: bool = False  # a served run with a short answer and citations
    ended_at: float = 0.0  # time.monotonic() when the answer was complete


@dataclass
class Phase:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    rss_after_kib: int = 0
    wall_s: float = 0.0
    chat_calls: int | None = None
    health: list[float] = field(default_factory=list)  # /healthz latencies; inf = failed
    notes: list[str] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter("lost" if o.status is None else str(o.status) for o in self.outcomes)


def _served(data: dict[str, Any]) -> tuple[int, bool]:
    calls = int(data.get("llm_calls") or 0)
    return calls, bool(data.get("short_answer")) and bool(data.get("citations"))


async def ask_once(client: httpx.AsyncClient, url: str) -> Outcome:
    """One /v1/ask."""
    started = time.monotonic()
    try:
        r = await client.post(url + "/v1/ask", json={"question": QUESTION})
        body = r.json()
    except (httpx.HTTPError, ValueError) as exc:
        return Outcome(None, time.monotonic() - started, detail=type(exc).__name__)
    out = Outcome(r.status_code, time.monotonic() - started, ended_at=time.monotonic())
    if r.status_code == 200:
        out.llm_calls, out.answered = _served(body)
    else:
        out.detail = body.get("error", {}).get("message", "")
    if "retry-after" in r.headers:
        out.retry_after = float(r.headers["retry-after"])
    return out


async def stream_once(client: httpx.AsyncClient, url: str) -> Outcome:
    """One /v1/ask/stream read to its end; the detail is the last event's name (and message)."""
    started = time.monotonic()
    try:
        async with client.stream("POST", url + "/v1/ask/stream", json={"question": QUESTION}) as r:
            if r.status_code != 200:
                body = json.loads(await r.aread())
                out = Outcome(r.status_code, time.monotonic() - started)
                out.detail = body.get("error", {}).get("message", "")
                if "retry-after" in r.headers:
                    out.retry_after = float(r.headers["retry-after"])
                out.ended_at = time.monotonic()
                return out
            last_event, last_data = "", ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    last_event = line[6:].strip()
                elif line.startswith("data:"):
                    last_data = line[5:].strip()
    except (httpx.HTTPError, ValueError) as exc:
        return Outcome(None, time.monotonic() - started, detail=type(exc).__name__)
    out = Outcome(200, time.monotonic() - started, detail=last_event, ended_at=time.monotonic())
    if last_event == "result":
        out.llm_calls, out.answered = _served(json.loads(last_data)["data"])
    elif last_event == "error":
        out.detail = "error: " + json.loads(last_data)["data"]["error"]
    return out


Attempt = Callable[[httpx.AsyncClient, str], Awaitable[Outcome]]


async def until_served(attempt: Attempt, client: httpx.AsyncClient, url: str) -> Outcome:
    """Retry 429s after their ``Retry-After`` (at most 10 s, ``MAX_ATTEMPTS`` tries)."""
    started = time.monotonic()
    outcome = Outcome(None, 0.0)
    for n in range(1, MAX_ATTEMPTS + 1):
        outcome = await attempt(client, url)
        outcome.attempts = n
        if outcome.status != 429:
            outcome.seconds = time.monotonic() - started
            return outcome
        await asyncio.sleep(min(outcome.retry_after or 1.0, 10.0))
    outcome.seconds = time.monotonic() - started
    outcome.detail = f"gave up after {MAX_ATTEMPTS} attempts"
    return outcome


def new_client(n: int = CLIENTS) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=REQUEST_TIMEOUT,
        limits=httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10),
    )


async def stub_stats(stub: Proc) -> dict[str, Any] | None:
    if not stub.alive():
        return None
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            return (await client.get(stub.url + "/stats")).json()
    except httpx.HTTPError:
        return None


async def watch(server: Proc, client: httpx.AsyncClient, phase: Phase, stop: asyncio.Event) -> None:
    """Every 100 ms until ``stop``: /healthz latency and the server's RSS (peak)."""
    for _ in range(int(PHASE_LIMIT_S / 0.1)):  # bounded by the phase limit
        if stop.is_set():
            return
        phase.rss_peak_kib = max(phase.rss_peak_kib, server.rss_kib())
        started = time.monotonic()
        try:
            r = await client.get(server.url + "/healthz")
            ok = r.status_code == 200
        except httpx.HTTPError:
            ok = False
        phase.health.append(time.monotonic() - started if ok else float("inf"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


async def run_phase(
    name: str,
    server: Proc,
    stub: Proc,
    clients: Callable[[httpx.AsyncClient], list[Coroutine[Any, Any, Outcome]]],
    *,
    during: Callable[[httpx.AsyncClient, Phase], Coroutine[Any, Any, None]] | None = None,
) -> Phase:
    phase = Phase(name, rss_before_kib=server.rss_kib())
    phase.rss_peak_kib = phase.rss_before_kib
    calls_before = await stub_stats(stub)
    started = time.monotonic()
    async with new_client() as client, asyncio.timeout(PHASE_LIMIT_S):
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(server, client, phase, stop))
        side = asyncio.create_task(during(client, phase)) if during else None
        phase.outcomes = list(await asyncio.gather(*clients(client)))
        if side is not None:
            await side
        stop.set()
        await watcher
    phase.wall_s = time.monotonic() - started
    phase.rss_after_kib = server.rss_kib()
    calls_after = await stub_stats(stub)
    if calls_before is not None and calls_after is not None:
        phase.chat_calls = calls_after["total"] - calls_before["total"]
    ok = [x for x in phase.health if x != float("inf")]
    phase.notes.append(
        f"/healthz during the phase: {len(ok)}/{len(phase.health)} answered"
        + (f", max {max(ok) * 1000:.0f} ms" if ok else "")
    )
    return phase


# --------------------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def table(phases: list[Phase]) -> str:
    rows = [
        "| phase | requests | answers by status | lost | p50 / max s (200) | attempts (max) "
        "| chat calls | wall s | server RSS MiB before -> peak -> after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in phases:
        counts = p.counts()
        by_status = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()) if k != "lost")
        served = [o.seconds for o in p.outcomes if o.status == 200]
        attempts = max((o.attempts for o in p.outcomes), default=0)
        calls = "-" if p.chat_calls is None else str(p.chat_calls)
        rows.append(
            f"| {p.name} | {len(p.outcomes)} | {by_status} | {counts.get('lost', 0)} "
            f"| {pct(served, 0.5):.2f} / {max(served, default=float('nan')):.2f} | {attempts} "
            f"| {calls} | {p.wall_s:.1f} | {mib(p.rss_before_kib)} -> {mib(p.rss_peak_kib)} -> "
            f"{mib(p.rss_after_kib)} |"
        )
    return "\n".join(rows)


def details(phases: list[Phase]) -> list[str]:
    lines = []
    for p in phases:
        messages = Counter(o.detail for o in p.outcomes if o.detail)
        lines.append(f"- **{p.name}**: " + "; ".join(p.notes))
        for message, n in messages.most_common(5):
            lines.append(f"  - {n} x `{message}`")
    return lines


def run_notes(phase: Phase) -> None:
    """What the served runs did: planner LLM calls per run, answers with citations."""
    served = [o for o in phase.outcomes if o.status == 200 and o.llm_calls]
    if served:
        calls = Counter(o.llm_calls for o in served)
        phase.notes.append(
            f"{len(served)} runs answered by the planner ("
            f"{sum(o.answered for o in served)} with a short answer and citations), "
            "LLM calls per run: " + ", ".join(f"{k} x{v}" for k, v in sorted(calls.items()))
        )
    retry_after = [o.retry_after for o in phase.outcomes if o.status == 429]
    if retry_after:
        given = [r for r in retry_after if r is not None]
        phase.notes.append(
            f"{len(given)}/{len(retry_after)} 429s carried Retry-After"
            + (f" ({min(given):g}-{max(given):g} s)" if given else "")
        )


# --------------------------------------------------------------------------- the phases


@dataclass
class Kill:
    at: float = 0.0  # time.monotonic() of the kill
    after_s: float = 0.0  # into the phase
    running: int = -1  # runs in progress on the server at the kill
    chat_in_flight: int = -1  # calls waiting at the stub just before the kill
    chat_calls: int = -1  # calls the stub had answered or was answering in the phase


async def kill_mid_run(stub: Proc, kill: Kill, client: httpx.AsyncClient, server: Proc) -> None:
    """Once the server runs ``MAX_CONCURRENCY`` runs and each has made about two chat calls (the
    decomposition and a search rewrite are done or under way), SIGKILL the stub."""
    started = time.monotonic()
    before = await stub_stats(stub)
    base = before["total"] if before else 0
    for _ in range(200):  # at most ~20 s
        try:
            running = (await client.get(server.url + "/healthz")).json()["running"]
        except (httpx.HTTPError, ValueError, KeyError):
            running = -1
        stats = await stub_stats(stub)
        if stats and running >= MAX_CONCURRENCY and stats["total"] - base >= 2 * MAX_CONCURRENCY:
            kill.running, kill.chat_in_flight = running, stats["in_flight"]
            kill.chat_calls = stats["total"] - base
            break
        await asyncio.sleep(0.1)
    stub.kill()
    kill.at = time.monotonic()
    kill.after_s = kill.at - started


async def main_async(index_dir: Path) -> tuple[list[Phase], dict[str, Any]]:
    phases: list[Phase] = []
    info: dict[str, Any] = {}
    stub = start_stub()
    port = int(stub.url.rsplit(":", 1)[1])
    server = start_server(stub.url, index_dir)
    info["rss_start_kib"] = server.rss_kib()
    try:
        one = await run_phase(
            "1 burst /v1/ask",
            server,
            stub,
            lambda c: [ask_once(c, server.url) for _ in range(CLIENTS)],
        )
        phases.append(one)
        phases.append(
            await run_phase(
                "2 retry on 429",
                server,
                stub,
                lambda c: [until_served(ask_once, c, server.url) for _ in range(CLIENTS)],
            )
        )
        phases.append(
            await run_phase(
                "3 burst /v1/ask/stream",
                server,
                stub,
                lambda c: [stream_once(c, server.url) for _ in range(CLIENTS)],
            )
        )
        stats = await stub_stats(stub)
        info["stub_stats_before_kill"] = stats

        kill = Kill()
        down = await run_phase(
            "4 chat endpoint down",
            server,
            stub,
            lambda c: [
                *(until_served(ask_once, c, server.url) for _ in range(CLIENTS // 2)),
                *(until_served(stream_once, c, server.url) for _ in range(CLIENTS - CLIENTS // 2)),
            ],
            during=lambda c, _phase: kill_mid_run(stub, kill, c, server),
        )
        down.chat_calls = kill.chat_calls
        before = [o for o in down.outcomes if o.ended_at and o.ended_at < kill.at]
        down.notes.append(
            f"stub killed (SIGKILL) {kill.after_s:.2f} s into the phase with {kill.running} runs "
            f"in progress on the server and {kill.chat_in_flight} chat calls in flight; "
            f"{len(before)} answers were complete before the kill"
        )
        async with new_client(4) as client:
            r = await client.get(server.url + "/healthz")
            down.notes.append(f"/healthz after: {r.status_code} {r.text}")
        down.notes.append(
            f"server process alive after the phase: {server.alive()} (pid {server.proc.pid})"
        )
        phases.append(down)

        stub = start_stub(port)  # the same port: the agent's base URL does not change
        phases.append(
            await run_phase(
                "5 chat endpoint back",
                server,
                stub,
                lambda c: [until_served(ask_once, c, server.url) for _ in range(RECOVERY_CLIENTS)],
            )
        )
        info["stub_stats_after_restart"] = await stub_stats(stub)
    finally:
        server.stop()
        stub.stop()
    for phase in phases:
        run_notes(phase)
    return phases, info


def write_report(phases: list[Phase], info: dict[str, Any]) -> str:
    load = os.getloadavg()
    stats = info.get("stub_stats_before_kill") or {}
    calls = stats.get("calls") or {}
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(calls.items()))
    refinement = ""
    if calls and not any(
        k in calls for k in ("sparse_extend", "sparse_emphasize", "sparse_filter")
    ):
        refinement = (
            " The sparse searcher's first rewrite already covered the queries' key terms, so its "
            "refinement branch was not exercised."
        )
    header = [
        "# HTTP API load test",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M UTC} on {platform.node()}: {os.cpu_count()} CPUs "
        "(shared with a background LLM job), "
        f"Python {platform.python_version()}, load average {load[0]:.2f} at the end.",
        "",
        "Setup, all on loopback: the real app (`create_app` + `make_server`, uvicorn) in its own "
        f"process with `max_concurrency={MAX_CONCURRENCY}` and a {RUN_DEADLINE_S:g} s run "
        "deadline, serving `HoptreeAgent`: the real LangGraph planner with the real sparse "
        "searcher (tantivy BM25 over the bundled 300 HotpotQA paragraphs, indexed with "
        "`agent.indexing.build` at start; LLM query rewrite, coverage check, extend/emphasize/"
        "filter refinement when coverage fails). The dense searcher is not used, so no embedding "
        "model is loaded (the index's dense side holds placeholder vectors). The chat model is "
        "`HoptreeChatOpenAI` (langchain-openai, `response_format: json_schema`, `max_retries=0`, "
        f"{CHAT_TIMEOUT_S:g} s timeout) pointed at `benchmarks/stub_chat_server.py`, a stub "
        "OpenAI-compatible endpoint in its own process that waits a fixed "
        f"{CHAT_LATENCY_S} s per call and answers schema-valid JSON chosen by the prompt's system "
        "text, with token counts in `usage` (no model, no LLM cache). Its replies give every run "
        "the planner's two-round shape: decompose into 2 atomic queries, search, summarize, "
        "verify (not yet sufficient), supplement (1 follow-up query), search, summarize, verify "
        "(sufficient), answer with citations: 11 calls, 8 of them one after another, so a run "
        f"waits at least {8 * CHAT_LATENCY_S:.1f} s on the stub. So this measures the server "
        "and the planner's orchestration under load, not model quality or speed. "
        f"Question: `{QUESTION}`.",
        "",
        f"{CLIENTS} concurrent clients per phase (phase 5: {RECOVERY_CLIENTS}). Phase 4: half "
        "the clients use `/v1/ask`, half `/v1/ask/stream`, all retrying 429s; once runs are in "
        "flight the stub is killed with SIGKILL. Phase 5 restarts the stub on the same port; "
        "the server is never restarted. Lost = no HTTP response. Seconds = from a client's "
        "first attempt to its complete answer, 429 waits included. Chat calls = calls the stub "
        "received during the phase (phase 4: before the kill)"
        + (f" (phases 1-3 by prompt: {kinds})." if kinds else ".")
        + refinement,
        "",
        "`benchmarks/load_test.py` regenerates this file.",
        "",
    ]
    start = info.get("rss_start_kib", -1)
    end = phases[-1].rss_after_kib if phases else -1
    warm = phases[0].rss_after_kib if phases else -1
    memory = (
        f"Server RSS: {mib(start)} MiB idle after start, {mib(warm)} MiB after phase 1, "
        f"{mib(end)} MiB at the end ({(end - warm) / 1024:+.1f} MiB after phase 1, "
        f"{sum(len(p.outcomes) for p in phases)} requests in all)."
    )
    body = [table(phases), "", memory, "", *details(phases), ""]
    text = "\n".join(header + body)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "load.md").write_text(text)
    return text


def _connection_error(message: str) -> bool:
    return "connection" in message.casefold()


def check(phases: list[Phase], info: dict[str, Any]) -> list[str]:
    """What must hold; printed, and the exit code is 1 if anything fails."""
    problems = []
    if len(phases) != 5:
        return [f"only {len(phases)} of 5 phases ran"]
    for p in phases:
        if p.counts().get("lost"):
            problems.append(f"{p.name}: {p.counts()['lost']} requests got no answer")
        if any(x == float("inf") for x in p.health):
            problems.append(f"{p.name}: /healthz failed during the phase")
    for p in (phases[0], phases[2]):
        counts = p.counts()
        want = {"200": MAX_CONCURRENCY, "429": CLIENTS - MAX_CONCURRENCY}
        if dict(counts) != want:
            problems.append(f"{p.name}: statuses {dict(counts)}, expected {want}")
        if any(o.retry_after is None for o in p.outcomes if o.status == 429):
            problems.append(f"{p.name}: a 429 without Retry-After")
    for p in phases[:3] + phases[4:]:
        for o in p.outcomes:
            if o.status == 200 and not o.answered:
                problems.append(f"{p.name}: a 200 without a cited answer ({o.detail!r})")
    for p in (phases[1], phases[4]):
        if set(p.counts()) != {"200"}:
            problems.append(f"{p.name}: retrying clients were not all served: {dict(p.counts())}")
    down = phases[3]
    failed = 0
    for o in down.outcomes:
        if o.status == 200 and o.answered:
            continue  # finished before the kill
        failed += 1
        if o.status == 502 and not _connection_error(o.detail):
            problems.append(f"chat endpoint down: unclear 502 message: {o.detail}")
        elif o.status == 200 and not (
            o.detail.startswith("error: ") and _connection_error(o.detail)
        ):
            problems.append(f"chat endpoint down: a stream ended with {o.detail!r}")
        elif o.status not in (200, 502):
            problems.append(f"chat endpoint down: unexpected status {o.status} {o.detail!r}")
    if failed == 0:
        problems.append("chat endpoint down: no run failed, the kill missed the runs")
    if not any("after: 200" in n for n in down.notes):
        problems.append("/healthz did not answer after the chat endpoint went down")
    stats = info.get("stub_stats_before_kill") or {}
    if stats.get("unknown"):
        problems.append(f"the stub got {stats['unknown']} prompts it did not recognise")
    growth = (phases[-1].rss_after_kib - phases[0].rss_after_kib) / 1024
    if growth > MEMORY_SLACK_MIB:
        problems.append(f"server RSS grew {growth:.1f} MiB after warm-up (> {MEMORY_SLACK_MIB})")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--chat-url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--max-concurrency", type=int, default=MAX_CONCURRENCY, help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.serve:
        serve_child(args.chat_url, args.index, args.max_concurrency)
        return
    with tempfile.TemporaryDirectory(prefix="hoptree-load-") as tmp:
        index_dir, build_s = build_index(Path(tmp))
        print(f"index built in {build_s:.1f} s: {index_dir}", flush=True)
        phases, info = asyncio.run(main_async(index_dir))
    print(write_report(phases, info))
    problems = check(phases, info)
    for problem in problems:
        print(f"FAIL: {problem}")
    print("all checks passed" if not problems else f"{len(problems)} check(s) failed")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
