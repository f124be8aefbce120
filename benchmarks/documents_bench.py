"""A question answered from a PDF with page-numbered citations, and ``hoptree ask`` beside a
running ``hoptree serve``: the two claims of the documents and shared-model-server work, measured
through the real CLI.

Setup, in a work directory (``--work``, default ``$TMPDIR/hoptree-documents-bench-<mode>``):

- a 9-page PDF made with fpdf2 (``make_gazetteer``): a gazetteer whose facts need two hops and
  sit on known pages (page 3: "The Zorblat river flows through Quenton."; page 7: "Quenton was
  founded in 1712 by Mara Vell."), a look-alike pair on pages 5 and 9 (the Harrow river,
  Arbury), and filler pages;
- ``hoptree index build gazetteer.pdf --index idx`` (a subprocess, the real CLI);
- a private data directory (``<work>/data``): its own model server and no LLM cache
  (``HOPTREE_LLM__CACHE=false``), so every run decodes. The children get none of the caller's
  ``HOPTREE_*`` variables, except the ONNX export of the embedding model, which is read from
  where the tests keep it (``<user data dir>/models/onnx``) rather than made again. With the
  embedded model, ``HOPTREE_LLM__GGUF_PATH`` names the GGUF joined in the user's data dir, so the
  1.1 GB file is not joined again into the private one.

Phases:

A. PDF question: ``hoptree ask --index idx --json "<two-hop question>"``: seconds, LLM calls, the
   short answer, and whether the citations carry the right pages (the answer's page 7, the
   bridge's page 3); the cited sources are printed as the CLI labels them (``[n] title p. 7``).
B. ask beside serve: the same question ``--runs`` times (default 3) in three configurations:
   (i) alone; (ii) with ``hoptree serve --index idx`` running idle (started on a free port,
   ready once ``/healthz`` answers); (iii) with that server answering another question at the
   same time (``POST /v1/ask`` back to back from a thread for as long as the ask runs). Median
   seconds per configuration (the answer's own ``seconds``, and the process's wall time with its
   imports and loading) and the ratio to alone. While each ask runs, the data dir's model-server
   record (``<data_dir>/model-server/server.json``) and its lease files (``leases/<pid>-<id>``) are
   sampled, so the report says which model server each process used: with the embedded model,
   one server pid holding the leases of both the ask and the serve process.

``--stub`` starts ``benchmarks/stub_chat_server.py`` (schema-valid JSON by prompt, a fixed
latency per call) and points every process at it: the control flow checked in a minute without
the model. Its numbers say nothing about the product; its report says so at the top, and
``--write`` puts it in ``documents-stub.md``, never in ``documents.md``.

Every subprocess and HTTP call has a timeout; a phase that fails stops the run with the child's
last lines. Finished runs are kept in ``<work>/state.json``: a rerun after a failure or Ctrl-C
picks up where it stopped (``--fresh`` starts over). Progress goes to stderr from the first
second. The report (markdown, with the machine and its load) is printed and kept in the work
dir; ``--write`` also writes ``benchmarks/results/documents.md`` and ``.json``::

    nice -n 19 python benchmarks/documents_bench.py --stub            # the control flow, ~1 min
    nice -n 19 python benchmarks/documents_bench.py --write           # the embedded model
    nice -n 19 python benchmarks/documents_bench.py --runs 5 --timeout 1800 --fresh

Why one file of this length: a benchmark is run as one script (``python
benchmarks/documents_bench.py``), and its phases share the work directory, the resumable state
and the report; the pieces other benchmarks also need live in ``benchmarks/children.py``
(stopping a child) and ``benchmarks/machine_load.py`` (the machine and its other busy processes).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
STUB = ROOT / "benchmarks" / "stub_chat_server.py"
STARTED = time.monotonic()


def say(line: str) -> None:
    print(
        f"[documents_bench {time.monotonic() - STARTED:6.1f}s] {line}", file=sys.stderr, flush=True
    )


sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from agent.settings import default_data_dir  # noqa: E402
from benchmarks.children import stop_child  # noqa: E402
from benchmarks.machine_load import busy_processes, machine  # noqa: E402
from searchers.passages import source_label  # noqa: E402

# --------------------------------------------------------------------------- the PDF

TITLE = "Gazetteer of the Northern Marches"
QUESTION = "In what year was the town that the Zorblat river flows through founded?"
ANSWER = "1712"
BRIDGE_PAGE, ANSWER_PAGE = 3, 7
# what the serve process answers at the same time in configuration (iii): the look-alike pair
SERVE_QUESTION = "Who founded the town that the Harrow river flows through?"

# (heading, sentences) per page; the facts are the sentences the two questions need
PAGES: list[tuple[str, list[str]]] = [
    ("Introduction", [
        "This gazetteer describes the towns, rivers and roads of the Northern Marches.",
        "It was compiled from parish registers, toll books and the accounts of travellers.",
        "Distances are given in leagues from the old customs house at the border.",
    ]),
    ("Climate and seasons", [
        "Winters in the uplands are long, and snow lies on the passes until late spring.",
        "The lowland meadows flood each autumn, which keeps the soil rich for barley.",
        "Summer fairs are held after the hay harvest, when the tracks are dry.",
    ]),
    ("Rivers of the west", [
        "The Zorblat river flows through Quenton.",
        "Its waters run slow and brown in late summer, and ferrymen charge a copper a crossing.",
        "Eel traps line the shallows below the weirs.",
    ]),
    ("Roads and passes", [
        "The drovers' road climbs from the coast to the high moor in three days.",
        "A toll gate stands at every bridge, and the tolls are farmed out each Lady Day.",
        "Inns are found at the fords, seldom more than a day's walk apart.",
    ]),
    ("Rivers of the east", [
        "The Harrow river flows through Arbury.",
        "It freezes most winters, and skaters race on it from the mill to the church.",
        "Salmon run up it in autumn as far as the falls.",
    ]),
    ("Trade", [
        "Wool, slate and salted fish are the chief goods carried out of the Marches.",
        "Merchants from the south bring wine, iron tools and printed cloth.",
        "Most trade passes through the spring and autumn fairs.",
    ]),
    ("Towns of the west", [
        "Quenton was founded in 1712 by Mara Vell.",
        "It grew around a tannery and a market cross, and its charter allows a Tuesday market.",
        "The town hall keeps a standard yard of brass.",
    ]),
    ("Markets and fairs", [
        "The largest fair is held at the crossroads below the moor in the week of Michaelmas.",
        "Horses, cattle and cheese are sold there, and hiring of servants takes place.",
        "Disputes at the fair are judged by a court of pie powder.",
    ]),
    ("Towns of the east", [
        "Arbury was founded in 1690 by Tomas Gree.",
        "It lies in a bend of the valley, and its bridge has seven arches.",
        "A grammar school was endowed there by the guild of weavers.",
    ]),
]  # fmt: skip
FACTS = {
    BRIDGE_PAGE: "The Zorblat river flows through Quenton.",
    ANSWER_PAGE: "Quenton was founded in 1712 by Mara Vell.",
}


def make_gazetteer(path: Path) -> dict[int, list[str]]:
    """The PDF (a text layer in a core font, one section per page, in the outline, page numbers
    in the footer); returns the sentences printed on each page (1-based)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(TITLE)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # same bytes every run
    pdf.set_auto_page_break(auto=False)
    printed: dict[int, list[str]] = {}
    for number, (heading, sentences) in enumerate(PAGES, start=1):
        pdf.add_page()
        pdf.start_section(heading)
        pdf.set_font("Helvetica", "B", 15)
        pdf.multi_cell(0, 9, heading)
        pdf.ln(3)
        pdf.set_font("Helvetica", "", 11)
        for text in sentences:
            pdf.multi_cell(0, 6, text)
            pdf.ln(2)
        pdf.set_y(-15)
        pdf.set_font("Helvetica", "I", 8)
        pdf.cell(0, 10, f"- {number} -", align="C")
        printed[number] = list(sentences)
    pdf.output(str(path))
    return printed


# --------------------------------------------------------------------------- children


class PhaseError(RuntimeError):
    """A phase that could not finish; the message says which and why."""


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no output)"
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n    ".join(kept) or "(no output)"


def _last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        if lines:
            return lines[-1].strip()[:140]
    return ""


@dataclass
class Env:
    """Where everything runs and what the children get in their environment."""

    work: Path
    stub: bool
    timeout_s: float
    chat_url: str = ""  # the stub's base URL (--stub)
    gguf: str = ""  # the embedded model's joined GGUF

    @property
    def data_dir(self) -> Path:
        return self.work / "data"

    @property
    def index(self) -> Path:
        return self.work / "idx"

    @property
    def logs(self) -> Path:
        return self.work / "logs"

    def child(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOPTREE_")}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        env["HOPTREE_DATA_DIR"] = str(self.data_dir)
        env["HOPTREE_EMBEDDINGS__EXPORT_DIR"] = os.environ.get(
            "HOPTREE_EMBEDDINGS__EXPORT_DIR", str(default_data_dir() / "models" / "onnx")
        )
        env["HOPTREE_LLM__CACHE"] = "false"
        if self.stub:
            env["HOPTREE_LLM__BASE_URL"] = self.chat_url + "/v1"
            env["HOPTREE_LLM__MODEL"] = "stub"
        elif self.gguf:
            env["HOPTREE_LLM__GGUF_PATH"] = self.gguf
        return env


def hoptree(*args: str) -> list[str]:
    """The CLI of this checkout (``PYTHONPATH`` puts it first), as ``hoptree`` would run it."""
    return [sys.executable, "-m", "agent.cli", *args]


@dataclass
class Finished:
    code: int
    stdout: str
    wall_s: float
    pid: int
    stderr_log: Path


def run_child(
    env: Env,
    args: list[str],
    label: str,
    log_name: str,
    *,
    timeout_s: float | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Finished:
    """Run a child to its end under a timeout, its stderr in a log; a heartbeat with the log's
    last line every 15 s, so a long question shows where it is."""
    env.logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = env.logs / f"{log_name}.out", env.logs / f"{log_name}.err"
    limit = timeout_s or env.timeout_s
    started = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            args, cwd=env.work, env=env.child(), stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        if on_start is not None:
            on_start(proc)
        beat = started
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if now - started > limit:
                    proc.kill()
                    proc.wait(10)
                    raise PhaseError(
                        f"{label}: no result within {limit:.0f}s (killed); its stderr "
                        f"({err_path}):\n    {_tail(err_path)}"
                    )
                if now - beat >= 15:
                    beat = now
                    say(f"  {label}: {now - started:.0f}s ... {_last_line(err_path)}")
                time.sleep(0.2)
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            raise
    return Finished(
        proc.returncode,
        out_path.read_text(encoding="utf-8", errors="replace"),
        time.monotonic() - started,
        proc.pid,
        err_path,
    )


# --------------------------------------------------------------------------- model servers


class ServerWatch:
    """Samples, every half second while a phase runs, the data dir's model-server record and
    its leases (``leases/<pid>-<id>``): which server pid served, and whose leases it held."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "model-server"
        self.servers: dict[int, int] = {}  # pid -> port
        self.lease_pids: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            record = json.loads((self.root / "server.json").read_text(encoding="utf-8"))
            self.servers[int(record["pid"])] = int(record["port"])
        with contextlib.suppress(OSError):
            for lease in (self.root / "leases").iterdir():
                with contextlib.suppress(ValueError):
                    self.lease_pids.add(int(lease.name.split("-", 1)[0]))

    def __enter__(self) -> ServerWatch:
        def loop() -> None:
            while not self._stop.is_set():
                self.sample()
                self._stop.wait(0.5)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)


def stop_model_server(env: Env) -> None:
    """Stop the private data dir's model server, which our children started (it would otherwise
    stop by itself two minutes after its last user)."""
    record_path = env.data_dir / "model-server" / "server.json"
    if not record_path.is_file():
        return
    from agent.runtime.shared_server import SERVER_DIR, ServerDirectory

    record = ServerDirectory(env.data_dir / SERVER_DIR).stop()
    if record is not None:
        say(f"stopped the benchmark's model server (pid {record.pid})")


# --------------------------------------------------------------------------- the stub


@dataclass
class Stub:
    proc: subprocess.Popen[str]
    url: str

    def total_calls(self) -> int:
        return int(httpx.get(self.url + "/stats", timeout=10).json()["total"])

    def stop(self) -> None:
        stop_child(self.proc)


def start_stub(latency_s: float, timeout_s: float = 60.0) -> Stub:
    args = [sys.executable, str(STUB), "--port", "0", "--latency", str(latency_s)]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    found: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY ") and not found:
                found.append(line.split()[1])

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not found and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not found:
        proc.kill()
        proc.wait(5)
        raise PhaseError(f"the stub chat server did not start within {timeout_s:.0f}s")
    return Stub(proc, found[0])


# --------------------------------------------------------------------------- hoptree serve

_URL = re.compile(r"https?://[\w.\[\]:-]+:\d+")


@dataclass
class Serve:
    proc: subprocess.Popen[bytes]
    url: str
    out_log: Path
    err_log: Path

    def stop(self) -> None:
        stop_child(self.proc, grace_s=30)


def start_serve(env: Env, start_timeout_s: float) -> Serve:
    """``hoptree serve --index idx --port 0``; ready once its printed URL answers /healthz."""
    env.logs.mkdir(parents=True, exist_ok=True)
    out_log, err_log = env.logs / "serve.out", env.logs / "serve.err"
    args = hoptree("serve", "--index", str(env.index), "--host", "127.0.0.1", "--port", "0")
    with out_log.open("wb") as out, err_log.open("wb") as err:
        proc = subprocess.Popen(
            args, cwd=env.work, env=env.child(), stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
    started = beat = time.monotonic()
    try:
        while time.monotonic() - started < start_timeout_s:
            if proc.poll() is not None:
                raise PhaseError(
                    f"hoptree serve exited ({proc.returncode}) while starting:\n    "
                    f"{_tail(err_log)}\n    {_tail(out_log)}"
                )
            match = _URL.search(out_log.read_text(errors="replace"))
            if match:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(match.group(0) + "/healthz", timeout=5).status_code == 200:
                        return Serve(proc, match.group(0), out_log, err_log)
            if time.monotonic() - beat >= 15:
                beat = time.monotonic()
                say(f"  serve starting: {beat - started:.0f}s ... {_last_line(err_log)}")
            time.sleep(0.3)
        raise PhaseError(
            f"hoptree serve did not answer /healthz within {start_timeout_s:.0f}s:\n    "
            f"{_tail(err_log)}"
        )
    except BaseException:
        Serve(proc, "", out_log, err_log).stop()
        raise


class ServeLoad:
    """``POST /v1/ask`` to the server back to back on a thread, until told to stop (the
    question in flight then finishes): the server is answering throughout the ask."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.answers: list[dict[str, Any]] = []
        self.busy: list[tuple[float, float]] = []  # (start, end), monotonic
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=10)) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    response = client.post(self.url + "/v1/ask", json={"question": SERVE_QUESTION})
                except httpx.HTTPError as exc:
                    self.error = f"{type(exc).__name__}: {exc}"
                    return
                self.busy.append((started, time.monotonic()))
                if response.status_code != 200:
                    self.error = f"HTTP {response.status_code}: {response.text[:300]}"
                    return
                body = response.json()
                self.answers.append(
                    {
                        "seconds": body.get("seconds"),
                        "llm_calls": body.get("llm_calls"),
                        "short_answer": body.get("short_answer"),
                    }
                )

    def start(self) -> None:
        self._thread.start()

    def in_flight(self) -> bool:
        return self._thread.is_alive() and not self.error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.timeout_s + 15)
        if self._thread.is_alive():
            raise PhaseError(f"the server's question did not finish within {self.timeout_s}s")

    def overlap(self, start: float, end: float) -> float:
        """The share of [start, end] during which the server was answering."""
        covered = sum(max(0.0, min(end, b) - max(start, a)) for a, b in self.busy)
        return covered / (end - start) if end > start else 0.0


# --------------------------------------------------------------------------- asking


def ask(env: Env, label: str, log_name: str, **kwargs: Any) -> dict[str, Any]:
    """``hoptree ask --index idx --json QUESTION``: the JSON's measures, the process's wall."""
    done = run_child(
        env, hoptree("ask", "--index", str(env.index), "--json", QUESTION), label, log_name,
        **kwargs,
    )  # fmt: skip
    if done.code != 0:
        raise PhaseError(
            f"{label}: hoptree ask exited {done.code}; its stderr ({done.stderr_log}):\n    "
            f"{_tail(done.stderr_log)}"
        )
    try:
        result = json.loads(done.stdout)
    except ValueError as exc:
        raise PhaseError(
            f"{label}: hoptree ask --json printed no JSON: {done.stdout[:300]}"
        ) from exc
    citations = [
        {
            "n": c.get("n"),
            "title": c.get("title"),
            "page": c.get("page"),
            "label": source_label(c.get("title") or c.get("id") or "", c.get("page")),
            "text": " ".join(str(c.get("text", "")).split())[:160],
        }
        for c in result.get("citations", [])
    ]
    shared = [
        line.strip()
        for line in done.stderr_log.read_text(errors="replace").splitlines()
        if "model server" in line
    ]
    return {
        "pid": done.pid,
        "seconds": result.get("seconds"),
        "wall_s": round(done.wall_s, 2),
        "llm_calls": result.get("llm_calls"),
        "stopped": result.get("stopped"),
        "short_answer": result.get("short_answer"),
        "answer": result.get("answer"),
        "citations": citations,
        "errors": result.get("errors", []),
        "model_server_lines": shared[:3],
    }


def pages_check(run: dict[str, Any]) -> dict[str, Any]:
    pages = sorted({c["page"] for c in run["citations"] if c["page"] is not None})
    return {
        "pages_cited": pages,
        "answer_page_cited": ANSWER_PAGE in pages,
        "bridge_page_cited": BRIDGE_PAGE in pages,
        "answer_right": ANSWER in (run.get("short_answer") or ""),
    }


# --------------------------------------------------------------------------- state


class State:
    """Finished steps, kept in ``<work>/state.json`` so a rerun resumes."""

    def __init__(self, path: Path, fingerprint: dict[str, Any], fresh: bool) -> None:
        self.path = path
        data: dict[str, Any] = {}
        if path.is_file() and not fresh:
            with contextlib.suppress(ValueError):
                data = json.loads(path.read_text())
        if data.get("fingerprint") != fingerprint:
            if data:
                say("the stored state is of another setup: starting over")
            data = {"fingerprint": fingerprint}
        self.data = data

    def steps(self) -> int:
        """How many steps are done: the index, phase A, each run of phase B."""
        runs = sum(len(r) for r in self.data.get("phase_b", {}).values())
        return ("index" in self.data) + ("phase_a" in self.data) + runs

    def save(self) -> None:
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps(self.data, indent=1, ensure_ascii=False))
        os.replace(scratch, self.path)


# --------------------------------------------------------------------------- phases


def build_index(env: Env, state: State) -> None:
    pdf = env.work / "gazetteer.pdf"
    make_gazetteer(pdf)
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    built = state.data.get("index")
    if built and built.get("sha256") == digest and (env.index / "manifest.json").is_file():
        say(f"index: kept from an earlier run ({built['passages']} passages)")
        return
    shutil.rmtree(env.index, ignore_errors=True)
    say(f"index: hoptree index build {pdf.name} (embedding model on CPU)")
    args = hoptree("index", "build", str(pdf), "--index", str(env.index), "--json")
    done = run_child(env, args, "index build", "index-build", timeout_s=600)
    if done.code != 0:
        raise PhaseError(
            f"hoptree index build exited {done.code}:\n    {_tail(done.stderr_log)}\n    "
            f"{done.stdout[-500:]}"
        )
    report = json.loads(done.stdout)
    state.data["index"] = {
        "sha256": digest,
        "passages": report.get("total"),
        "wall_s": round(done.wall_s, 2),
        "pages": len(PAGES),
    }
    state.save()
    say(f"index: {report.get('total')} passages in {done.wall_s:.1f}s")


def phase_a(env: Env, state: State) -> None:
    if "phase_a" in state.data:
        say("phase A: kept from an earlier run")
    else:
        say(f"phase A: hoptree ask --json {QUESTION!r}")
        run = ask(env, "phase A ask", "phase-a")
        run.update(pages_check(run))
        state.data["phase_a"] = run
        state.save()
    run = state.data["phase_a"]
    say(
        f"phase A: {run['seconds']}s, {run['llm_calls']} calls, short answer "
        f"{run['short_answer']!r}; pages cited {run['pages_cited']}"
    )
    for line in cited_lines(run):
        say("  " + line)


def cited_lines(run: dict[str, Any]) -> list[str]:
    return [f"[{c['n']}] {c['label']}: {c['text'][:90]}" for c in run["citations"]]


CONFIGS = {
    "alone": "(i) alone",
    "idle": "(ii) beside `hoptree serve`, idle",
    "busy": "(iii) beside `hoptree serve` answering another question",
}


def phase_b(env: Env, state: State, runs: int, stub: Stub | None) -> None:
    results = state.data.setdefault("phase_b", {name: [] for name in CONFIGS})
    serve: Serve | None = None
    try:
        for name, title in CONFIGS.items():
            done = results[name]
            if len(done) >= runs:
                say(f"phase B {title}: {len(done)} runs kept from an earlier run")
                continue
            if name != "alone" and serve is None:
                say("phase B: starting hoptree serve --index idx (waiting for /healthz)")
                serve = start_serve(env, env.timeout_s)
                say(f"phase B: serve pid {serve.proc.pid} ready at {serve.url}")
            while len(done) < runs:
                number = len(done) + 1
                label = f"phase B {name} {number}/{runs}"
                say(f"{label}: hoptree ask")
                load = None
                if name == "busy":
                    assert serve is not None
                    load = ServeLoad(serve.url, env.timeout_s)
                    load.start()
                    time.sleep(0.5)
                    if not load.in_flight():
                        raise PhaseError(f"{label}: the server's question failed: {load.error}")
                calls_before = stub.total_calls() if stub else None
                started = time.monotonic()
                try:
                    with ServerWatch(env.data_dir) as watch:
                        run = ask(env, label, f"phase-b-{name}-{number}")
                        watch.sample()
                finally:
                    ended = time.monotonic()
                    if load is not None:
                        load.stop()
                run.update(pages_check(run))
                del run["answer"]
                run["model_servers"] = {str(pid): port for pid, port in watch.servers.items()}
                run["lease_pids"] = sorted(watch.lease_pids)
                if serve is not None:
                    run["serve_pid"] = serve.proc.pid
                    run["serve_leased"] = serve.proc.pid in watch.lease_pids
                run["ask_leased"] = run["pid"] in watch.lease_pids
                if load is not None:
                    if load.error:
                        raise PhaseError(f"{label}: the server's question failed: {load.error}")
                    run["serve_answers"] = load.answers
                    run["serve_overlap"] = round(load.overlap(started, ended), 3)
                if stub is not None and calls_before is not None:
                    run["stub_calls"] = stub.total_calls() - calls_before
                done.append(run)
                state.save()
                extra = (
                    f"; serve answered {len(run['serve_answers'])} question(s), busy "
                    f"{100 * run['serve_overlap']:.0f}% of the ask"
                    if "serve_answers" in run
                    else ""
                )
                served = (
                    f"the stub counted {run['stub_calls']} calls"
                    if stub is not None
                    else f"model server pid(s) {list(run['model_servers']) or '-'}"
                )
                say(
                    f"{label}: {run['seconds']}s ({run['wall_s']}s wall), {run['llm_calls']} "
                    f"calls, {served}{extra}"
                )
    finally:
        if serve is not None:
            say(f"phase B: stopping hoptree serve (pid {serve.proc.pid})")
            serve.stop()


# --------------------------------------------------------------------------- the machine


def busy_elsewhere() -> list[tuple[str, float]]:
    """Other processes using at least a tenth of a CPU (``machine_load.busy_processes``), named by
    their first words (a model server's command line carries its whole spec)."""
    with contextlib.suppress(Exception):
        return [(" ".join(name.split()[:4])[:80], share) for name, share in busy_processes()]
    return []


# --------------------------------------------------------------------------- the report


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def _servers_cell(runs: list[dict[str, Any]], stub: bool) -> str:
    if stub:
        calls = [r.get("stub_calls") for r in runs]
        return f"the stub endpoint (stub counted {calls} calls per ask, serve's included)"
    pids = sorted({pid for r in runs for pid in r["model_servers"]})
    if not pids:
        return "none seen"
    who = []
    if all(r["ask_leased"] for r in runs):
        who.append("ask")
    if runs and "serve_leased" in runs[0] and all(r["serve_leased"] for r in runs):
        who.append("serve")
    return f"pid {', '.join(pids)}, leased by {' and '.join(who) or 'nobody seen'}"


def _session_text(session: dict[str, Any]) -> str:
    busy = ", ".join(f"{n} {s:.0f}% CPU" for n, s in session["busy"]) or "none above 10%"
    return (
        f"{session['date']} (load average {session['load_start']} at the start, "
        f"{session.get('load_end')} at the end; other busy processes at the start: {busy})"
    )


def report(data: dict[str, Any], runs: int) -> str:
    stub = data["fingerprint"]["mode"] == "stub"
    lines: list[str] = []
    if stub:
        lines += [
            "> **STUB RUN: not the product's numbers.** The chat model was "
            "`benchmarks/stub_chat_server.py` (schema-valid JSON by prompt, "
            f"{data['fingerprint']['stub_latency_s']} s per call), not the embedded model. "
            "This run checks the benchmark's control flow only: times, answers and citations "
            "below say nothing about hoptree's speed or quality.",
            "",
        ]
    m = data["machine"]
    mode = "`--stub`" if stub else "the embedded model"
    lines += [
        "# A PDF question, and `hoptree ask` beside `hoptree serve`",
        "",
        f"`benchmarks/documents_bench.py` ({mode}, runs per configuration: {runs}), "
        f"{m['machine']}, {m['cores']} cores, Python {m['python']}, nice {m['niceness']}; LLM "
        "cache off, a private data dir. Measured in "
        + "; ".join(_session_text(s) for s in data["sessions"])
        + ".",
        "",
        f"The PDF: {data['index']['pages']} pages made with fpdf2, indexed by `hoptree index "
        f"build` into {data['index']['passages']} passages ({data['index']['wall_s']} s). "
        f'Page {BRIDGE_PAGE}: "{FACTS[BRIDGE_PAGE]}" Page {ANSWER_PAGE}: '
        f'"{FACTS[ANSWER_PAGE]}" (a look-alike pair about the Harrow river and Arbury on pages '
        "5 and 9).",
        "",
        "## A. The PDF question",
        "",
        f'`hoptree ask --index idx --json "{QUESTION}"` (expected: {ANSWER}, citing pages '
        f"{BRIDGE_PAGE} and {ANSWER_PAGE})",
        "",
        "| seconds | wall s | LLM calls | short answer | right answer | pages cited "
        f"| p. {ANSWER_PAGE} cited | p. {BRIDGE_PAGE} cited |",
        "|---:|---:|---:|---|---|---|---|---|",
    ]
    a = data.get("phase_a")
    if a:
        yes = {True: "yes", False: "no"}
        lines += [
            f"| {a['seconds']} | {a['wall_s']} | {a['llm_calls']} | {a['short_answer']} | "
            f"{yes[a['answer_right']]} | {', '.join(map(str, a['pages_cited'])) or '-'} | "
            f"{yes[a['answer_page_cited']]} | {yes[a['bridge_page_cited']]} |",
            "",
            "The cited sources, as `hoptree ask` labels them:",
            "",
            "```",
            *cited_lines(a),
            "```",
        ]
    lines += [
        "",
        "## B. `hoptree ask` beside `hoptree serve`",
        "",
        "The same question, median of the runs; seconds = the answer's own time, wall = the "
        "`hoptree ask` process from start to exit (imports, embedding model, model lease).",
        "",
        "| configuration | runs | median seconds | ratio to alone | median wall s | ratio to alone "
        "| LLM calls | model server |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    b = data.get("phase_b", {})
    alone = b.get("alone") or []
    base_s = _median([r["seconds"] for r in alone])
    base_wall = _median([r["wall_s"] for r in alone])
    for name, title in CONFIGS.items():
        got = b.get(name) or []
        if not got:
            continue
        med_s, med_wall = _median([r["seconds"] for r in got]), _median([r["wall_s"] for r in got])
        ratio_s = f"{med_s / base_s:.2f}" if base_s and med_s else "-"
        ratio_wall = f"{med_wall / base_wall:.2f}" if base_wall and med_wall else "-"
        calls = ", ".join(str(r["llm_calls"]) for r in got)
        lines.append(
            f"| {title} | {len(got)} | {med_s} | {ratio_s} | {med_wall} | {ratio_wall} | {calls} "
            f"| {_servers_cell(got, stub)} |"
        )
    busy_runs = b.get("busy") or []
    if busy_runs:
        answered = [s for r in busy_runs for s in r.get("serve_answers", [])]
        overlap = [r.get("serve_overlap", 0) for r in busy_runs]
        lines += [
            "",
            f'In (iii) the server answered "{SERVE_QUESTION}" {len(answered)} times '
            f"(median {_median([s['seconds'] for s in answered])} s each; short answers "
            f"{sorted({str(s['short_answer']) for s in answered})}), busy "
            f"{', '.join(f'{100 * o:.0f}%' for o in overlap)} of each ask's wall time.",
        ]
    if not stub and alone:
        lines += [
            "",
            "Model servers seen while each ask ran (`<data_dir>/model-server/server.json`), and "
            "whose leases they held:",
            "",
        ]
        for name in CONFIGS:
            for number, r in enumerate(b.get(name) or [], start=1):
                lines.append(
                    f"- {name} {number}: server pid(s) {', '.join(r['model_servers']) or '-'}; "
                    f"ask pid {r['pid']} leased: {r['ask_leased']}"
                    + (
                        f"; serve pid {r['serve_pid']} leased: {r['serve_leased']}"
                        if "serve_pid" in r
                        else ""
                    )
                )
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main() -> None:
    say("starting")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stub", action="store_true", help="the stub chat server, not the model")
    parser.add_argument("--stub-latency", type=float, default=0.2, help="seconds per stub call")
    parser.add_argument("--runs", type=int, default=3, help="asks per configuration of phase B")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per ask / serve start (default 1800; 120 with --stub)",
    )
    parser.add_argument("--work", type=Path, default=None, help="work dir (kept for resuming)")
    parser.add_argument("--fresh", action="store_true", help="forget earlier runs in --work")
    parser.add_argument(
        "--write",
        action="store_true",
        help="write benchmarks/results/documents.md and .json (documents-stub.* with --stub)",
    )
    args = parser.parse_args()
    mode = "stub" if args.stub else "embedded"
    work = args.work or Path(tempfile.gettempdir()) / f"hoptree-documents-bench-{mode}"
    work.mkdir(parents=True, exist_ok=True)
    env = Env(
        work=work.resolve(), stub=args.stub, timeout_s=args.timeout or (120 if args.stub else 1800)
    )
    say(f"work dir {env.work} ({mode}); logs in {env.logs}")
    fingerprint: dict[str, Any] = {"mode": mode, "question": QUESTION, "pages": len(PAGES)}
    if args.stub:
        fingerprint["stub_latency_s"] = args.stub_latency
    state = State(env.work / "state.json", fingerprint, args.fresh)
    say("measuring the machine's load for 1 s (other busy processes)")
    state.data["machine"] = machine()
    session = {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC}",
        "load_start": round(os.getloadavg()[0], 2),
        "busy": busy_elsewhere(),
    }
    before = state.steps()
    stub: Stub | None = None
    failed = None
    try:
        if args.stub:
            stub = start_stub(args.stub_latency)
            env.chat_url = stub.url
            say(f"stub chat server at {stub.url} ({args.stub_latency}s per call)")
        else:
            from agent.runtime.gguf_assembly import LOCAL_MODELS, assemble

            say("the embedded model's GGUF (joined once per machine in the user's data dir)")
            env.gguf = str(
                assemble(LOCAL_MODELS["qwen2.5-coder-1.5b"], default_data_dir() / "models")
            )
        build_index(env, state)
        phase_a(env, state)
        phase_b(env, state, args.runs, stub)
    except PhaseError as exc:
        failed = str(exc)
    except KeyboardInterrupt:
        failed = "interrupted"
    finally:
        if stub is not None:
            stub.stop()
        if not args.stub:
            with contextlib.suppress(Exception):
                stop_model_server(env)
    session["load_end"] = round(os.getloadavg()[0], 2)
    sessions = state.data.setdefault("sessions", [])
    if state.steps() > before or not sessions:  # a rerun that only reports adds no session
        sessions.append(session)
    state.save()
    if failed:
        say(f"FAILED: {failed}")
        say(f"finished steps are kept in {state.path}: run the same command again to resume")
        raise SystemExit(1)
    text = report(state.data, args.runs)
    (env.work / "report.md").write_text(text, encoding="utf-8")
    print(text)
    if args.write:
        name = "documents-stub" if args.stub else "documents"
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")
        clean = json.loads(json.dumps(state.data).replace(str(env.work), "<work>"))
        (RESULTS / f"{name}.json").write_text(
            json.dumps(clean, indent=1, ensure_ascii=False) + "\n"
        )
        say(f"wrote {RESULTS / name}.md and .json")


if __name__ == "__main__":
    main()
