"""How much of a planner question's prompt reading could a shared prompt prefix save?

llama.cpp keeps a slot's last prompt in its KV cache (and, with its host-memory prompt cache,
earlier prompts too): a new prompt that starts with the same tokens is read only from where it
differs. The planner's prompts each open with their own instructions, so consecutive calls of a
question share almost nothing up front. Reordering them (question and passages first,
instructions last) would move every reply of the 1.5B model, so before anyone does it this
benchmark measures what it could buy at most, on the real prompts of real questions:

1. it runs ``hoptree eval run`` (LLM cache off, one question at a time) against a recording
   proxy in front of the embedded model server, which keeps every request's messages and the
   server's timings (``cache_n``: prompt tokens the server did not read again);
2. it renders and tokenizes each prompt with the server's own chat template and tokenizer
   (``/apply-template``, ``/tokenize``) and reports, per planner step:

   - ``reused``: prompt tokens the server reported as reused today (from the slot, or from
     llama.cpp's host-memory cache of earlier prompts: a step's instructions, read for the same
     step of an earlier question, are found there);
   - ``prefix_prev``: the common token prefix with the question's previous call (what one slot
     alone would reuse);
   - ``shared_prev`` / ``shared_any``: tokens of the prompt's lines that occur verbatim in the
     previous call / in any earlier call of the same question (the question line, a passage, a
     finding, a step's instructions the second time the step runs);
   - ``shared_ever``: tokens of its lines that occur in any earlier call of the run, whatever
     the question. No order of the prompt texts can let the server skip a line it has never
     read, so ``shared_ever - reused`` bounds what any reordering could still save (it is a
     loose bound: lines shared with different earlier prompts cannot all lead one prefix).

Seconds are tokens at the prompt-reading speed the server measured in the same run.

    python benchmarks/prompt_prefix.py --limit 6      # HotpotQA dev_hard_300_a 1-6, `full`

Rerunning resumes (questions already recorded are skipped); ``--report-only`` rewrites the
tables from the recording.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from prompts import template_of  # noqa: E402

DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "hotpotqa" / "dev_hard_300_a.jsonl"
DEFAULT_WORK = ROOT / ".cache" / "prompt-prefix"
DEFAULT_OUT = HERE / "results" / "prompt-prefix"
UPSTREAM_TIMEOUT_S = 600.0  # one call of the embedded model; the eval's own timeout is shorter
FIELDS = ("prompt_tokens", "reused", "prefix_prev", "shared_prev", "shared_any", "shared_ever")


class Recorder:
    """The proxy's state: where requests go, which question they belong to, what was sent."""

    def __init__(self, upstream: str, log: Path) -> None:
        self.upstream = upstream.rstrip("/")
        self.log = log
        self.question = -1
        self.lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self.lock, self.log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def make_handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                url = recorder.upstream + self.path
                status, payload = _send(url, body, UPSTREAM_TIMEOUT_S)
            except urllib.error.HTTPError as exc:
                status, payload = exc.code, exc.read()
            if self.path.endswith("/chat/completions") and status == 200:
                sent = json.loads(body)
                reply = json.loads(payload)
                recorder.write(
                    {
                        "question": recorder.question,
                        "messages": sent.get("messages", []),
                        "usage": reply.get("usage", {}),
                        "timings": reply.get("timings", {}),
                    }
                )
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _send(url: str, body: bytes, timeout_s: float) -> tuple[int, bytes]:
    """POST a JSON body to the model server: its reply's status and bytes (an HTTP error
    raises)."""
    request = urllib.request.Request(
        url,
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return response.status, response.read()


def _post(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_send(url, json.dumps(payload).encode(), 60.0)[1])


def server_root(handle: Any) -> str:
    """The embedded server's address without the OpenAI path: ``/tokenize`` and
    ``/apply-template`` sit beside ``/v1``."""
    return handle.endpoint.rstrip("/").removesuffix("/v1")


def record(args: argparse.Namespace, log: Path) -> None:
    """Run the questions not yet in ``log`` through a recording proxy."""
    from agent.runtime.chat_models import build_chat_model
    from agent.settings import Settings

    logged = read_log(log)
    done = {r["question"] for r in logged if r.get("done")}
    todo = [i for i in range(args.offset, args.offset + args.limit) if i not in done]
    if not todo:
        return
    # a question cut short left some of its calls: drop them, it is recorded again whole
    kept = [r for r in logged if r["question"] in done]
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), "utf-8")
    os.environ["HOPTREE_LLM__CACHE"] = "false"
    settings = Settings()
    handle = build_chat_model(settings, cache=False)  # starts or leases the embedded server
    recorder = Recorder(server_root(handle), log)
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(recorder))
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    env = {
        **os.environ,
        "HOPTREE_LLM__CACHE": "false",
        "HOPTREE_LLM__BASE_URL": f"http://127.0.0.1:{proxy.server_port}/v1",
        "HOPTREE_LLM__MODEL": handle.label,
    }
    try:
        for index in todo:
            print(f"[prefix] question {index + 1}", flush=True)
            recorder.question = index
            out = args.work / "runs" / f"q{index + 1}"
            flags = {
                "--dataset": str(args.dataset.resolve()),
                "--pipeline": args.pipeline,
                "--out": str(out.resolve()),
                "--offset": str(index),
                "--limit": "1",
                "--concurrency": "1",
            }
            cmd = [sys.executable, "-m", "agent.cli.main", "eval", "run"]
            cmd += [part for flag in flags.items() for part in flag]
            subprocess.run(cmd, env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
            recorder.write({"question": index, "done": True})
    finally:
        proxy.shutdown()
        handle.close()


def read_log(log: Path) -> list[dict[str, Any]]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def lines_of(messages: list[dict[str, Any]]) -> list[str]:
    return [
        line.strip()
        for m in messages
        for line in str(m.get("content") or "").splitlines()
        if line.strip()
    ]


def analyze(records: list[dict[str, Any]], upstream: str) -> list[dict[str, Any]]:
    """Per call: its step, tokens, what the server reused and what a reordering could share."""
    token_cache: dict[str, int] = {}

    def tokens_of_text(text: str) -> list[int]:
        return _post(upstream + "/tokenize", {"content": text})["tokens"]

    def count(line: str) -> int:
        if line not in token_cache:
            token_cache[line] = len(tokens_of_text(line)) + 1  # + the line break
        return token_cache[line]

    calls: list[dict[str, Any]] = []
    ever: set[str] = set()  # every line the server has read in this run, any question
    by_question: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        rendered = _post(upstream + "/apply-template", {"messages": rec["messages"]})["prompt"]
        tokens = tokens_of_text(rendered)
        system = next((m["content"] for m in rec["messages"] if m["role"] == "system"), "")
        earlier = by_question[rec["question"]]
        lines = lines_of(rec["messages"])
        prev_lines = set(earlier[-1]["lines"]) if earlier else set()
        any_lines = {line for e in earlier for line in e["lines"]}
        call = {
            "question": rec["question"],
            "step": template_of(system) or "other",
            "lines": lines,
            "tokens": tokens,
            "prompt_tokens": len(tokens),
            "reused": int(rec["timings"].get("cache_n") or 0),
            "prompt_ms": float(rec["timings"].get("prompt_ms") or 0.0),
            "read_tokens": int(rec["timings"].get("prompt_n") or 0),
            "prefix_prev": common_prefix(tokens, earlier[-1]["tokens"]) if earlier else 0,
            "shared_prev": sum(count(line) for line in lines if line in prev_lines),
            "shared_any": sum(count(line) for line in lines if line in any_lines),
            "shared_ever": sum(count(line) for line in lines if line in ever),
        }
        ever.update(lines)
        earlier.append(call)
        calls.append(call)
    return calls


def summarize(calls: list[dict[str, Any]]) -> dict[str, Any]:
    read_ms = sum(c["prompt_ms"] for c in calls)
    read_tokens = sum(c["read_tokens"] for c in calls)
    ms_per_token = read_ms / read_tokens if read_tokens else 0.0
    questions = sorted({c["question"] for c in calls})
    n = len(questions) or 1
    steps: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in calls:
        steps[c["step"]]["calls"] += 1
        for field in FIELDS:
            steps[c["step"]][field] += c[field]
    per_question = []
    for q in questions:
        mine = [c for c in calls if c["question"] == q]
        per_question.append({field: sum(c[field] for c in mine) for field in FIELDS})
    return {
        "questions": len(questions),
        "calls": len(calls),
        "prompt_ms_per_token": round(ms_per_token, 2),
        "per_step_per_question": {
            step: {k: round(v / n, 1) for k, v in values.items()}
            for step, values in sorted(steps.items())
        },
        "per_question_median": {
            field: statistics.median(p[field] for p in per_question) for field in FIELDS
        },
        "per_question_median_seconds": {
            field: round(statistics.median(p[field] for p in per_question) * ms_per_token / 1000, 1)
            for field in FIELDS
        },
    }


def markdown(result: dict[str, Any], note: str) -> str:
    head = "| step | calls | " + " | ".join(FIELDS) + " |"
    rule = "|---" * (len(FIELDS) + 2) + "|"
    lines = ["# Prompt tokens a shared prefix could save", ""]
    if note:
        lines += [note, ""]
    lines += [
        f"{result['questions']} questions, {result['calls']} calls; the server read prompts at "
        f"{result['prompt_ms_per_token']} ms a token. Per question (mean over questions):",
        "",
        head,
        rule,
    ]
    for step, values in result["per_step_per_question"].items():
        cells = [f"{values.get(k, 0):g}" for k in ("calls", *FIELDS)]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    med, sec = result["per_question_median"], result["per_question_median_seconds"]
    lines.append(
        "| **median question** | | " + " | ".join(f"{med[k]:g} ({sec[k]} s)" for k in FIELDS) + " |"
    )
    lines += [
        "",
        "`reused`: prompt tokens the server did not read again (its `cache_n`: from the slot "
        "or its host-memory cache of earlier prompts); `prefix_prev`: the common token prefix "
        "with the question's previous call; `shared_prev` / `shared_any`: tokens of prompt lines "
        "that occur verbatim in the previous / any earlier call of the same question; "
        "`shared_ever`: in any earlier call of the run. The server cannot skip a line it has "
        "never read, so `shared_ever` - `reused` bounds what any order of the prompt texts "
        "could still save. Seconds: tokens at the measured reading speed.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--pipeline", default="full")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="writes .json and .md")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--note", default="", help="a paragraph put under the title")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / "requests.jsonl"
    if not args.report_only:
        record(args, log)
    records = [r for r in read_log(log) if not r.get("done")]
    if not records:
        print("nothing recorded", file=sys.stderr)
        return 1
    from agent.runtime.chat_models import build_chat_model
    from agent.settings import Settings

    handle = build_chat_model(Settings(), cache=False)
    try:
        calls = analyze(records, server_root(handle))
    finally:
        handle.close()
    result = summarize(calls)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(result, args.note), encoding="utf-8")
    print(markdown(result, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
