"""Load test of the HTTP agent API serving the real planner: limits under a burst, and the chat
endpoint going down mid-run.

Setup, all on loopback:

- a small real index: the bundled 300 HotpotQA paragraphs (``agent/cli/demo/hotpotqa_demo.jsonl``)
  built with ``agent.indexing.build`` into a temporary directory. Only its tantivy (sparse) side
  is used; the dense side is built with placeholder vectors so no embedding model is loaded.
- a stub chat endpoint (``benchmarks/stub_chat_server.py``, its own process): OpenAI-compatible
  ``/v1/chat/completions`` with a fixed latency per call, answering schema-valid JSON by prompt.
- the server: the real app (``create_app`` + ``make_server``) in its own process (so its memory
  is measured alone, from ``/proc/<pid>/status``), serving the real LangGraph planner as
  ``build_agent`` assembles it for every entry point, with the real sparse searcher (tantivy,
  query rewrite and refinement) and ``HoptreeChatOpenAI`` pointed at the stub
  (``max_retries=0``, 10 s timeout).

A run takes the planner's two-round shape (see the stub's docstring). Phases, with N clients
(``--clients``, 50) against a server running at most C runs at once (``--max-concurrency``,
the served default ``SERVED_RUN_SLOTS``):

0. one run alone, three times in a row: the single-run time the others are held against.
1. burst: N concurrent ``POST /v1/ask``: C answered, the rest refused with 429 and
   ``Retry-After``; none may be lost or hang.
2. retrying clients: the same N, each honouring ``Retry-After`` (bounded attempts) until
   served. Target: p50 at most twice the single run's time, nothing lost.
3. stream burst: N concurrent ``POST /v1/ask/stream``; a 200 must end with the ``result`` event.
4. chat endpoint down: N/2 ``/v1/ask`` and N/2 ``/v1/ask/stream`` clients (retrying 429s); once
   runs are in flight the stub is killed (SIGKILL). Clients must get 502 naming the connection
   failure, or a fatal ``error`` event saying the same on a stream; ``/healthz`` must keep
   answering during and after.
5. chat endpoint back: the stub restarts on the same port; the same server answers again.

Server RSS is sampled before, during (peak) and after every phase; "lost" = no HTTP response.
The machine's load (load average, and other processes busy when the test starts) is recorded
with the figures, since a 2-core machine shared with a model run gives other numbers than an
idle one. Progress goes to stderr from the first second (bars on a terminal, lines otherwise).

    .venv/bin/python benchmarks/load_test.py                 # prints the report
    .venv/bin/python benchmarks/load_test.py --write         # and writes benchmarks/results/load.md
    .venv/bin/python benchmarks/load_test.py --clients 20 --max-concurrency 8 --latency 0.5

Why one file of this length: a benchmark is run as one script, and its phases (the stub, the
server child, the client load, the report) share one set of sizes and one timeline; what other
benchmarks also need lives in ``benchmarks/children.py`` (stopping a child) and
``benchmarks/machine_load.py`` (what else the machine was doing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import queue
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

from agent.progress import StageFn, stage_progress  # noqa: E402
from agent.settings import SERVED_RUN_SLOTS  # noqa: E402
from benchmarks.children import stop_child  # noqa: E402
from benchmarks.machine_load import Load, busy_processes, stat_ticks  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CORPUS = ROOT / "agent" / "cli" / "demo" / "hotpotqa_demo.jsonl"
STUB = ROOT / "benchmarks" / "stub_chat_server.py"
QUESTION = (
    'The band who released the debut album "Tinted Windows" had their first performance in '
    "what city?"
)
CLIENTS = 50
CHAT_LATENCY_S = 0.2  # per chat call, at the stub
SINGLE_RUNS = 3  # phase 0: one run at a time, this many times
TARGET_RATIO = 2.0  # phase 2's p50 against the single run's time
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
    from agent.hoptree_agent import build_agent
    from agent.runtime.runtime import Runtime
    from agent.searching import searcher_context
    from agent.serve.api import create_app
    from agent.serve.http_server import make_server
    from agent.settings import load_settings

    # the product's own wiring (build_agent), pointed at the stub endpoint
    config = load_settings(
        data_dir=index_dir.parent / "data",
        llm={
            "base_url": chat_url + "/v1",
            "model": "stub",
            "timeout_s": CHAT_TIMEOUT_S,
            "max_retries": 0,
            "cache": False,
        },
        planner={"searchers": ["sparse"]},
        budgets={"deadline_s": RUN_DEADLINE_S, "searcher_deadline_s": RUN_DEADLINE_S},
        server={
            "host": "127.0.0.1",
            "port": 0,
            "max_concurrency": max_concurrency,
            "request_deadline_s": RUN_DEADLINE_S,
        },
    )
    runtime = Runtime(config)
    agent = build_agent(
        config,
        searcher_context(runtime, index_dir, ["sparse"]),
        ["sparse"],
        model_label="hoptree (stub chat)",
    )
    settings = config.server

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

    def cpu_s(self) -> float:
        """CPU time (user + system) the process has used so far; -1 once it is gone."""
        try:
            text = Path(f"/proc/{self.proc.pid}/stat").read_text()
        except OSError:
            return -1.0
        return stat_ticks(text) / os.sysconf("SC_CLK_TCK")

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
        stop_child(self.proc)

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


@dataclass(frozen=True)
class Sizes:
    """The test's sizes, from the command line."""

    clients: int = CLIENTS
    max_concurrency: int = SERVED_RUN_SLOTS
    latency_s: float = CHAT_LATENCY_S


def start_stub(sizes: Sizes, port: int = 0) -> Proc:
    args = [sys.executable, str(STUB), "--port", str(port), "--latency", str(sizes.latency_s)]
    return spawn("stub chat", args)


def start_server(chat_url: str, index_dir: Path, sizes: Sizes) -> Proc:
    args = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--serve",
        "--chat-url",
        chat_url,
        "--index",
        str(index_dir),
        "--max-concurrency",
        str(sizes.max_concurrency),
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


LOAD = Load()


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
    server_cpu_s: float = 0.0  # CPU time the server process used during the phase
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
        LOAD.sample()
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
    progress: StageFn,
    *,
    during: Callable[[httpx.AsyncClient, Phase], Coroutine[Any, Any, None]] | None = None,
    one_at_a_time: bool = False,
) -> Phase:
    phase = Phase(name, rss_before_kib=server.rss_kib())
    cpu_before = server.cpu_s()
    phase.rss_peak_kib = phase.rss_before_kib
    calls_before = await stub_stats(stub)
    started = time.monotonic()
    async with new_client() as client, asyncio.timeout(PHASE_LIMIT_S):
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(server, client, phase, stop))
        side = asyncio.create_task(during(client, phase)) if during else None
        runs = clients(client)
        done = 0
        progress(name, 0, len(runs))

        async def counted(run: Coroutine[Any, Any, Outcome]) -> Outcome:
            nonlocal done
            outcome = await run
            done += 1
            progress(name, done, len(runs))
            return outcome

        if one_at_a_time:
            phase.outcomes = [await counted(run) for run in runs]
        else:
            phase.outcomes = list(await asyncio.gather(*(counted(run) for run in runs)))
        if side is not None:
            await side
        stop.set()
        await watcher
    phase.wall_s = time.monotonic() - started
    phase.rss_after_kib = server.rss_kib()
    phase.server_cpu_s = server.cpu_s() - cpu_before
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
        "| chat calls | wall s | server CPU s | server RSS MiB before -> peak -> after |",
        "|---|---|---|---|---|---|---|---|---|---|",
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
            f"| {calls} | {p.wall_s:.1f} | {p.server_cpu_s:.1f} "
            f"| {mib(p.rss_before_kib)} -> {mib(p.rss_peak_kib)} -> {mib(p.rss_after_kib)} |"
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


async def kill_mid_run(
    stub: Proc, kill: Kill, client: httpx.AsyncClient, server: Proc, slots: int
) -> None:
    """Once the server runs ``slots`` runs (its limit, or every client) and they have made about
    two chat calls each (the decomposition and a search or findings call are done or under
    way), SIGKILL the stub."""
    started = time.monotonic()
    before = await stub_stats(stub)
    base = before["total"] if before else 0
    for _ in range(200):  # at most ~20 s
        try:
            running = (await client.get(server.url + "/healthz")).json()["running"]
        except (httpx.HTTPError, ValueError, KeyError):
            running = -1
        stats = await stub_stats(stub)
        if stats and running >= slots and stats["total"] - base >= 2 * slots:
            kill.running, kill.chat_in_flight = running, stats["in_flight"]
            kill.chat_calls = stats["total"] - base
            break
        await asyncio.sleep(0.1)
    stub.kill()
    kill.at = time.monotonic()
    kill.after_s = kill.at - started


async def main_async(
    index_dir: Path, sizes: Sizes, progress: StageFn
) -> tuple[list[Phase], dict[str, Any]]:
    phases: list[Phase] = []
    info: dict[str, Any] = {}
    n = sizes.clients
    stub = start_stub(sizes)
    port = int(stub.url.rsplit(":", 1)[1])
    server = start_server(stub.url, index_dir, sizes)
    info["rss_start_kib"] = server.rss_kib()

    async def phase(name: str, clients: Any, **kw: Any) -> Phase:
        return await run_phase(name, server, stub, clients, progress, **kw)

    try:
        alone = await phase(
            "0 one run alone",
            lambda c: [ask_once(c, server.url) for _ in range(SINGLE_RUNS)],
            one_at_a_time=True,
        )
        info["single_stats"] = await stub_stats(stub)
        phases.append(alone)
        phases.append(
            await phase("1 burst /v1/ask", lambda c: [ask_once(c, server.url) for _ in range(n)])
        )
        phases.append(
            await phase(
                "2 retry on 429",
                lambda c: [until_served(ask_once, c, server.url) for _ in range(n)],
            )
        )
        phases.append(
            await phase(
                "3 burst /v1/ask/stream", lambda c: [stream_once(c, server.url) for _ in range(n)]
            )
        )
        info["stub_stats_before_kill"] = await stub_stats(stub)

        kill = Kill()
        slots = min(sizes.max_concurrency, n)
        down = await phase(
            "4 chat endpoint down",
            lambda c: [
                *(until_served(ask_once, c, server.url) for _ in range(n // 2)),
                *(until_served(stream_once, c, server.url) for _ in range(n - n // 2)),
            ],
            during=lambda c, _phase: kill_mid_run(stub, kill, c, server, slots),
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

        stub = start_stub(sizes, port)  # the same port: the agent's base URL does not change
        phases.append(
            await phase(
                "5 chat endpoint back",
                lambda c: [until_served(ask_once, c, server.url) for _ in range(RECOVERY_CLIENTS)],
            )
        )
        info["stub_stats_after_restart"] = await stub_stats(stub)
    finally:
        server.stop()
        stub.stop()
    for p in phases:
        run_notes(p)
    return phases, info


def single_run_s(phases: list[Phase]) -> float:
    """Phase 0's median run time: what one run takes with nothing else on the server."""
    served = [o.seconds for o in phases[0].outcomes if o.status == 200] if phases else []
    return pct(served, 0.5)


def concurrency_line(phases: list[Phase], sizes: Sizes) -> str:
    """Phase 2's p50 against the single run's time, the figure the target is about."""
    single = single_run_s(phases)
    served = [o.seconds for o in phases[2].outcomes if o.status == 200]
    p50, p90 = pct(served, 0.5), pct(served, 0.9)
    return (
        f"**{sizes.clients} concurrent runs** (phase 2, at most {sizes.max_concurrency} at once "
        f"on the server, the rest retrying 429s): p50 {p50:.2f} s, p90 {p90:.2f} s, against "
        f"{single:.2f} s for one run alone (phase 0 median): p50 = {p50 / single:.2f}x a single "
        f"run (target at most {TARGET_RATIO:g}x). The server process used "
        f"{phases[2].server_cpu_s:.1f} s of CPU for the phase's {len(served)} runs "
        f"({phases[2].server_cpu_s / max(1, len(served)) * 1000:.0f} ms a run); one process "
        "holds one core at most (the GIL), so that CPU time, not the chat endpoint, is what "
        "many concurrent runs queue for."
    )


def _per_run(stats: dict[str, Any] | None, runs: int) -> str:
    calls = (stats or {}).get("calls") or {}
    if not calls or not runs:
        return "unknown"
    kinds = ", ".join(f"{k} {v / runs:g}" for k, v in sorted(calls.items()))
    return f"{sum(calls.values()) / runs:g} ({kinds})"


def report(phases: list[Phase], info: dict[str, Any], sizes: Sizes) -> str:
    stats = info.get("stub_stats_before_kill") or {}
    calls = stats.get("calls") or {}
    refinement = ""
    if calls and not any(
        k in calls for k in ("sparse_extend", "sparse_emphasize", "sparse_filter")
    ):
        refinement = (
            " The sparse searcher's first search already covered the queries' key terms, so its "
            "refinement branch was not exercised."
        )
    runs = sum(o.status == 200 for o in phases[0].outcomes) if phases else 0
    header = [
        "# HTTP API load test",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M UTC}: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; {LOAD.text()}.",
        "",
        "Setup, all on loopback: the real app (`create_app` + `make_server`, uvicorn) in its own "
        f"process with `max_concurrency={sizes.max_concurrency}` and a {RUN_DEADLINE_S:g} s run "
        "deadline, serving `HoptreeAgent`: the real LangGraph planner with the real sparse "
        "searcher (tantivy BM25 over the bundled 300 HotpotQA paragraphs, indexed with "
        "`agent.indexing.build` at start). The dense searcher is not used, so no embedding "
        "model is loaded (the index's dense side holds placeholder vectors). The chat model is "
        "`HoptreeChatOpenAI` (langchain-openai, `response_format: json_schema`, `max_retries=0`, "
        f"{CHAT_TIMEOUT_S:g} s timeout) pointed at `benchmarks/stub_chat_server.py`, a stub "
        "OpenAI-compatible endpoint in its own process that waits a fixed "
        f"{sizes.latency_s:g} s per call and answers schema-valid JSON chosen by the prompt's "
        "system text, with token counts in `usage` (no model, no LLM cache). Its replies give "
        "every run the planner's two-round shape (decompose, search, findings, verify with one "
        "follow-up, search, findings, answer with citations); chat calls per run, measured in "
        f"phase 0: {_per_run(info.get('single_stats'), runs)}. So this measures the server and "
        "the planner's orchestration under load, not model quality or speed. "
        f"Question: `{QUESTION}`.",
        "",
        f"{sizes.clients} concurrent clients per phase (phase 0: {SINGLE_RUNS} runs one after "
        f"another; phase 5: {RECOVERY_CLIENTS}). Phase 4: half the clients use `/v1/ask`, half "
        "`/v1/ask/stream`, all retrying 429s; once runs are in flight the stub is killed with "
        "SIGKILL. Phase 5 restarts the stub on the same port; the server is never restarted. "
        "Lost = no HTTP response. Seconds = from a client's first attempt to its complete "
        "answer, 429 waits included. Chat calls = calls the stub received during the phase "
        "(phase 4: before the kill)." + refinement,
        "",
        "`benchmarks/load_test.py --write` regenerates this file (`--help` lists its flags; "
        "the README's HTTP section says what the figures mean).",
        "",
    ]
    start = info.get("rss_start_kib", -1)
    end = phases[-1].rss_after_kib if phases else -1
    warm = phases[1].rss_after_kib if len(phases) > 1 else -1
    memory = (
        f"Server RSS: {mib(start)} MiB idle after start, {mib(warm)} MiB after phase 1, "
        f"{mib(end)} MiB at the end ({(end - warm) / 1024:+.1f} MiB after phase 1, "
        f"{sum(len(p.outcomes) for p in phases)} requests in all)."
    )
    body = [
        concurrency_line(phases, sizes) if len(phases) > 2 else "",
        "",
        table(phases),
        "",
        memory,
        "",
        *details(phases),
        "",
    ]
    return "\n".join(header + body)


def _connection_error(message: str) -> bool:
    return "connection" in message.casefold()


def check(phases: list[Phase], info: dict[str, Any], sizes: Sizes) -> list[str]:
    """What must hold; printed, and the exit code is 1 if anything fails."""
    problems = []
    if len(phases) != 6:
        return [f"only {len(phases)} of 6 phases ran"]
    alone, phases = phases[0], phases[1:]  # phase 0 gives the single-run time
    for p in phases:
        if p.counts().get("lost"):
            problems.append(f"{p.name}: {p.counts()['lost']} requests got no answer")
        if any(x == float("inf") for x in p.health):
            problems.append(f"{p.name}: /healthz failed during the phase")
    for p in (phases[0], phases[2]):
        counts = p.counts()
        slots = min(sizes.max_concurrency, sizes.clients)
        want = (
            {"200": slots, "429": sizes.clients - slots}
            if slots < sizes.clients
            else {"200": slots}
        )
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
    alone_runs = [o for o in alone.outcomes if o.status == 200 and o.answered]
    if len(alone_runs) != SINGLE_RUNS:
        problems.append(f"one run alone: {len(alone_runs)} of {SINGLE_RUNS} runs answered")
    single = pct([o.seconds for o in alone_runs], 0.5)
    p50 = pct([o.seconds for o in phases[1].outcomes if o.status == 200], 0.5)
    if alone_runs and p50 > TARGET_RATIO * single:
        problems.append(
            f"{sizes.clients} concurrent runs: p50 {p50:.2f} s is more than {TARGET_RATIO:g}x "
            f"the single run's {single:.2f} s"
        )
    growth = (phases[-1].rss_after_kib - phases[0].rss_after_kib) / 1024
    if growth > MEMORY_SLACK_MIB:
        problems.append(f"server RSS grew {growth:.1f} MiB after warm-up (> {MEMORY_SLACK_MIB})")
    return problems


def say(text: str) -> None:
    """A timestamped progress line on stderr (stdout carries the report)."""
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=CLIENTS, help="concurrent clients a phase")
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=SERVED_RUN_SLOTS,
        help="runs the server takes at once (default: hoptree's default with a remote endpoint)",
    )
    parser.add_argument(
        "--latency", type=float, default=CHAT_LATENCY_S, help="the stub's seconds per chat call"
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write the report to {RESULTS.name}/load.md"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "load.md", help="where --write goes")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--chat-url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_child(args.chat_url, args.index, args.max_concurrency)
        return
    if args.clients < 2 or args.max_concurrency < 1 or args.latency < 0:
        parser.error("--clients must be at least 2, --max-concurrency at least 1, --latency >= 0")
    sizes = Sizes(args.clients, args.max_concurrency, args.latency)
    say("measuring the machine's load for 1 s (other busy processes)")
    LOAD.busy = busy_processes()
    LOAD.start = LOAD.peak = os.getloadavg()[0]
    say(f"{LOAD.text()}; building the demo index")
    with tempfile.TemporaryDirectory(prefix="hoptree-load-") as tmp:
        index_dir, build_s = build_index(Path(tmp))
        say(f"index built in {build_s:.1f} s; starting the stub chat endpoint and the server")
        with stage_progress(every_s=5.0) as progress:
            phases, info = asyncio.run(main_async(index_dir, sizes, progress))
    LOAD.end = os.getloadavg()[0]
    text = report(phases, info, sizes)
    print(text)
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        say(f"wrote {args.out}")
    problems = check(phases, info, sizes)
    for problem in problems:
        print(f"FAIL: {problem}")
    print("all checks passed" if not problems else f"{len(problems)} check(s) failed")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
