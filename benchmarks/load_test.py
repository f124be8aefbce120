"""Load test of the HTTP agent API: limits under a burst, and a chat endpoint going down.

The server is the real app under uvicorn in a child process (so its memory is measured alone,
from ``/proc/<pid>/status``), serving the scripted test agent (``tests.fake_agent``) with a fixed
latency per trace event: this measures the server (admission, streaming, cancellation, error
paths), not the planner or a model.

Phases:

1. burst: 50 concurrent ``POST /v1/ask`` at ``max_concurrency`` 4. Every request must get an
   answer (200 or 429 with ``Retry-After``); none may be lost or hang.
2. retrying clients: the same 50, each honouring ``Retry-After`` (bounded attempts) until served.
3. stream burst: 50 concurrent ``POST /v1/ask/stream``; a 200 must end with the ``result`` event.
4. chat endpoint down: a server whose agent fails mid-run (``AgentError``, as when the chat
   endpoint refuses connections). Clients must get 502 with a clear message, or a fatal
   ``error`` event on a stream, and ``/healthz`` must keep answering during and after.

    .venv/bin/python benchmarks/load_test.py            # writes benchmarks/results/load.md
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
QUESTION = "Which river flows through the city where the Eiffel Tower stands?"
CLIENTS = 50
MAX_CONCURRENCY = 4
LATENCY_S = 0.1  # per trace event; the scripted run has 12 delayed events: ~1.2 s per run
REQUEST_TIMEOUT = httpx.Timeout(30.0)
PHASE_LIMIT_S = 180.0
MAX_ATTEMPTS = 60


# --------------------------------------------------------------------------- the child server


def serve_child(latency_s: float, max_concurrency: int, fail_after: int | None) -> None:
    """Child process: serve the scripted agent on a free loopback port, print the URL, run
    until SIGINT/SIGTERM (uvicorn handles both)."""
    from agent.http_api import create_app, make_server
    from agent.settings import ServerSettings
    from tests.fake_agent import ScriptedAgent

    agent = ScriptedAgent(latency_s=latency_s, fail_after=fail_after)
    settings = ServerSettings(
        host="127.0.0.1", port=0, max_concurrency=max_concurrency, request_deadline_s=60.0
    )

    def ready(url: str) -> None:
        print(f"READY {url}", flush=True)

    server = make_server(create_app(agent, settings), settings, on_ready=ready, log_level="error")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises SIGINT after shutting down
        asyncio.run(server.serve())


@dataclass
class Child:
    proc: subprocess.Popen[str]
    url: str

    def rss_kib(self) -> int:
        """Resident set size of the server process (VmRSS), in KiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return -1

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_child(fail_after: int | None = None) -> Child:
    args = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--serve",
        "--latency",
        str(LATENCY_S),
        "--max-concurrency",
        str(MAX_CONCURRENCY),
    ]
    if fail_after is not None:
        args += ["--fail-after", str(fail_after)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ends = time.monotonic() + 30
    while time.monotonic() < ends:
        line = proc.stdout.readline()
        if line.startswith("READY "):
            return Child(proc, line.split()[1])
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("the server process did not start within 30 s")


# --------------------------------------------------------------------------- clients


@dataclass
class Outcome:
    status: int | None  # None = no HTTP answer at all (lost)
    seconds: float
    attempts: int = 1
    detail: str = ""


@dataclass
class Phase:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    rss_before_kib: int = 0
    rss_after_kib: int = 0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter("lost" if o.status is None else str(o.status) for o in self.outcomes)


async def ask_once(client: httpx.AsyncClient, url: str) -> tuple[Outcome, float | None]:
    """One /v1/ask; returns the outcome and the Retry-After it was given, if any."""
    started = time.monotonic()
    try:
        r = await client.post(url + "/v1/ask", json={"question": QUESTION})
    except httpx.HTTPError as exc:
        return Outcome(None, time.monotonic() - started, detail=type(exc).__name__), None
    took = time.monotonic() - started
    detail = ""
    if r.status_code != 200:
        detail = r.json().get("error", {}).get("message", "")
    retry_after = float(r.headers["retry-after"]) if "retry-after" in r.headers else None
    return Outcome(r.status_code, took, detail=detail), retry_after


async def ask_until_served(client: httpx.AsyncClient, url: str) -> Outcome:
    started = time.monotonic()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        outcome, retry_after = await ask_once(client, url)
        if outcome.status != 429:
            outcome.attempts = attempt
            outcome.seconds = time.monotonic() - started
            return outcome
        await asyncio.sleep(min(retry_after or 1.0, 10.0))
    return Outcome(429, time.monotonic() - started, MAX_ATTEMPTS, "gave up")


async def stream_once(client: httpx.AsyncClient, url: str) -> tuple[Outcome, float | None]:
    """One /v1/ask/stream read to its end; the detail is the last event's name."""
    started = time.monotonic()
    try:
        async with client.stream("POST", url + "/v1/ask/stream", json={"question": QUESTION}) as r:
            if r.status_code != 200:
                await r.aread()
                retry_after = r.headers.get("retry-after")
                return Outcome(r.status_code, time.monotonic() - started), (
                    float(retry_after) if retry_after else None
                )
            last_event, last_data = "", ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    last_event = line[6:].strip()
                elif line.startswith("data:"):
                    last_data = line[5:].strip()
            detail = last_event
            if last_event == "error":
                detail = "error: " + json.loads(last_data)["data"]["error"]
            return Outcome(200, time.monotonic() - started, detail=detail), None
    except httpx.HTTPError as exc:
        return Outcome(None, time.monotonic() - started, detail=type(exc).__name__), None


async def stream_until_served(client: httpx.AsyncClient, url: str) -> Outcome:
    started = time.monotonic()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        outcome, retry_after = await stream_once(client, url)
        if outcome.status != 429:
            outcome.attempts = attempt
            outcome.seconds = time.monotonic() - started
            return outcome
        await asyncio.sleep(min(retry_after or 1.0, 10.0))
    return Outcome(429, time.monotonic() - started, MAX_ATTEMPTS, "gave up")


async def stream_once_outcome(client: httpx.AsyncClient, url: str) -> Outcome:
    outcome, _ = await stream_once(client, url)
    return outcome


async def poll_health(client: httpx.AsyncClient, url: str, stop: asyncio.Event) -> list[float]:
    """/healthz latencies (s; inf = failed) every 50 ms until ``stop``; bounded by the phase."""
    latencies: list[float] = []
    for _ in range(int(PHASE_LIMIT_S / 0.05)):
        if stop.is_set():
            break
        started = time.monotonic()
        try:
            r = await client.get(url + "/healthz")
            latencies.append(time.monotonic() - started if r.status_code == 200 else float("inf"))
        except httpx.HTTPError:
            latencies.append(float("inf"))
        await asyncio.sleep(0.05)
    return latencies


def new_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=REQUEST_TIMEOUT,
        limits=httpx.Limits(max_connections=CLIENTS + 10, max_keepalive_connections=CLIENTS + 10),
    )


async def run_phase(name: str, child: Child, make_tasks: Any) -> Phase:
    phase = Phase(name, rss_before_kib=child.rss_kib())
    started = time.monotonic()
    async with new_client() as client, asyncio.timeout(PHASE_LIMIT_S):
        stop = asyncio.Event()
        health = asyncio.create_task(poll_health(client, child.url, stop))
        phase.outcomes = list(await asyncio.gather(*make_tasks(client)))
        stop.set()
        latencies = await health
    phase.wall_s = time.monotonic() - started
    phase.rss_after_kib = child.rss_kib()
    ok = [x for x in latencies if x != float("inf")]
    phase.notes.append(
        f"/healthz during the phase: {len(ok)}/{len(latencies)} answered"
        + (f", max {max(ok) * 1000:.0f} ms" if ok else "")
    )
    return phase


# --------------------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def table(phases: list[Phase]) -> str:
    rows = [
        "| phase | requests | answers by status | lost | p50 / max s (200) | attempts (max) "
        "| wall s | server RSS MiB before -> after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in phases:
        counts = p.counts()
        by_status = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()) if k != "lost")
        served = [o.seconds for o in p.outcomes if o.status == 200]
        attempts = max((o.attempts for o in p.outcomes), default=0)
        rows.append(
            f"| {p.name} | {len(p.outcomes)} | {by_status} | {counts.get('lost', 0)} "
            f"| {pct(served, 0.5):.2f} / {max(served, default=float('nan')):.2f} | {attempts} "
            f"| {p.wall_s:.1f} | {p.rss_before_kib / 1024:.1f} -> {p.rss_after_kib / 1024:.1f} |"
        )
    return "\n".join(rows)


def details(phases: list[Phase]) -> list[str]:
    lines = []
    for p in phases:
        messages = Counter(o.detail for o in p.outcomes if o.detail)
        lines.append(f"- **{p.name}**: " + "; ".join(p.notes))
        for message, n in messages.most_common(4):
            lines.append(f"  - {n} x `{message}`")
    return lines


async def main_async() -> list[Phase]:
    phases: list[Phase] = []
    child = start_child()
    try:
        phases.append(
            await run_phase(
                "1 burst /v1/ask",
                child,
                lambda c: [ask_once_outcome(c, child.url) for _ in range(CLIENTS)],
            )
        )
        phases.append(
            await run_phase(
                "2 retry on 429",
                child,
                lambda c: [ask_until_served(c, child.url) for _ in range(CLIENTS)],
            )
        )
        phases.append(
            await run_phase(
                "3 burst /v1/ask/stream",
                child,
                lambda c: [stream_once_outcome(c, child.url) for _ in range(CLIENTS)],
            )
        )
    finally:
        child.stop()

    failing = start_child(fail_after=4)
    try:
        phase = await run_phase(
            "4 chat endpoint down",
            failing,
            lambda c: [
                *(ask_until_served(c, failing.url) for _ in range(CLIENTS // 2)),
                *(stream_until_served(c, failing.url) for _ in range(CLIENTS // 2)),
            ],
        )
        async with new_client() as client:
            r = await client.get(failing.url + "/healthz")
            phase.notes.append(f"/healthz after: {r.status_code} {r.text}")
        phase.notes.append(
            "the 200s are streams: the status was sent before the failure, which arrives as a "
            "fatal `error` event"
        )
        phases.append(phase)
    finally:
        failing.stop()
    return phases


async def ask_once_outcome(client: httpx.AsyncClient, url: str) -> Outcome:
    outcome, _ = await ask_once(client, url)
    return outcome


def write_report(phases: list[Phase]) -> str:
    load = os.getloadavg()
    header = [
        "# HTTP API load test",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M UTC} on {platform.node()}: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load[0]:.2f} at the end.",
        "Server: the real app under uvicorn in its own process, "
        f"`max_concurrency={MAX_CONCURRENCY}`, "
        f"serving the scripted test agent with {LATENCY_S} s per trace event (~"
        f"{12 * LATENCY_S:.1f} s per run). {CLIENTS} concurrent clients per phase. "
        "Phase 4's agent raises `AgentError` after 4 events, as when the chat endpoint goes "
        "down; half its clients use `/v1/ask`, half `/v1/ask/stream`, all retrying 429s.",
        "",
        "`benchmarks/load_test.py` regenerates this file.",
        "",
    ]
    body = [table(phases), "", *details(phases), ""]
    text = "\n".join(header + body)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "load.md").write_text(text)
    return text


def check(phases: list[Phase]) -> list[str]:
    """What must hold; printed, and the exit code is 1 if anything fails."""
    problems = []
    for p in phases:
        if p.counts().get("lost"):
            problems.append(f"{p.name}: {p.counts()['lost']} requests got no answer")
    burst = phases[0].counts()
    if burst.get("200", 0) + burst.get("429", 0) != CLIENTS:
        problems.append(f"burst: unexpected statuses {dict(burst)}")
    if phases[1].counts().get("200") != CLIENTS:
        problems.append(f"retrying clients were not all served: {dict(phases[1].counts())}")
    complete = sum(1 for o in phases[2].outcomes if o.detail == "result")
    if complete != phases[2].counts().get("200"):
        problems.append("a 200 stream did not end with its result event")
    down = phases[3]
    for o in down.outcomes:
        if o.status == 502 and "unreachable" not in o.detail:
            problems.append(f"unclear 502 message: {o.detail}")
        if o.status == 200 and not o.detail.startswith("error: "):
            problems.append(f"a stream from the failing agent ended with {o.detail!r}")
        if o.status not in (200, 502):
            problems.append(f"chat endpoint down: unexpected status {o.status}")
    if not any("after: 200" in n for n in down.notes):
        problems.append("/healthz did not answer after the failures")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help=argparse.SUPPRESS)
    parser.add_argument(
        "--max-concurrency", type=int, default=MAX_CONCURRENCY, help=argparse.SUPPRESS
    )
    parser.add_argument("--fail-after", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_child(args.latency, args.max_concurrency, args.fail_after)
        return
    phases = asyncio.run(main_async())
    print(write_report(phases))
    problems = check(phases)
    for problem in problems:
        print(f"FAIL: {problem}")
    print("all checks passed" if not problems else f"{len(problems)} check(s) failed")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
