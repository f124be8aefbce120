"""Replies cut at the token limit: salvaging a cut JSON reply, dropping repeated sentences, and
counting the call the OpenAI client refuses. The end-to-end cases run the real ``ChatOpenAI``
against a stub OpenAI-compatible server on 127.0.0.1 that answers ``finish_reason: length``."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from agent.runtime.usage import UsageTracker
from searchers.repetition import drop_repetition
from searchers.searcher import SearchBudget
from searchers.structured_calls import Reply, ask, capped, truncated_text
from searchers.truncated_json import salvage
from tests.loopback_http import serving
from tests.scripted_chat import ScriptedChatModel
from tree.summarize import Summarizer, clean_summary


class Passage(BaseModel):
    passage: str


class Verdict(BaseModel):
    sufficient: bool
    reason: str


class Terms(BaseModel):
    terms: list[str]


# --- salvage -------------------------------------------------------------------------------


def test_a_cut_string_is_closed_at_its_last_sentence_end() -> None:
    cut = '{"passage": "Paris is the capital of France. It lies on the Seine. It is the'
    value = salvage(cut, Passage)
    assert value == Passage(passage="Paris is the capital of France. It lies on the Seine.")


def test_without_a_sentence_end_the_raw_end_is_kept() -> None:
    assert salvage('{"passage": "Paris is the capital of', Passage) == Passage(
        passage="Paris is the capital of"
    )


def test_a_list_keeps_its_whole_strings_only() -> None:
    assert salvage('{"terms": ["Tinted Windows", "debut gig", "Ta', Terms) == Terms(
        terms=["Tinted Windows", "debut gig"]
    )
    # cut right after a comma: the dangling comma goes
    assert salvage('{"terms": ["a", "b", ', Terms) == Terms(terms=["a", "b"])


def test_a_reply_missing_a_required_field_is_not_salvaged() -> None:
    assert salvage('{"sufficient": true, "rea', Verdict) is None
    assert salvage('{"sufficient": true, "reason": "the hits name the city. And', Verdict) == (
        Verdict(sufficient=True, reason="the hits name the city.")
    )


def test_escapes_and_nesting_are_read_as_json_reads_them() -> None:
    cut = '{"passage": "He said \\"yes.\\" Then {left}. More'
    assert salvage(cut, Passage) == Passage(passage='He said "yes." Then {left}.')
    assert salvage('{"passage": "ends in an escape \\', Passage) == Passage(
        passage="ends in an escape"
    )


def test_text_that_is_not_a_json_object_is_not_salvaged() -> None:
    assert salvage("", Passage) is None
    assert salvage("Sure! Here is the passage", Passage) is None
    assert salvage('["passage"', Passage) is None


def test_salvage_tries_a_bounded_number_of_cuts() -> None:
    # many sentence ends, none closable into a valid Verdict: the loop stops at its bound
    cut = '{"sufficient": "maybe. ' + "x. " * 5000
    assert salvage(cut, Verdict, max_cuts=3) is None


# --- repeated sentences ----------------------------------------------------------------------


def test_repeated_sentences_are_dropped_and_a_cut_tail_with_them() -> None:
    looping = "Paris is in France. It is big. It is big. It is BIG! It is"
    assert drop_repetition(looping) == "Paris is in France. It is big. It is"
    assert drop_repetition(looping, cut=True) == "Paris is in France. It is big."
    assert drop_repetition("A lone fragment", cut=True) == "A lone fragment"
    assert drop_repetition("") == ""


def test_a_phrase_loop_inside_one_sentence_is_cut_where_it_starts_again() -> None:
    loop = "Confederate sympathizers' inability to deface the names, "
    text = "The memorial lists the dead. It survived because of the " + loop * 5 + loop[:20]
    assert drop_repetition(text) == "The memorial lists the dead."
    alone = "because of the " + loop * 4
    assert drop_repetition(alone) == "because of the " + loop.strip()  # all there is: kept
    # a phrase said twice is style, and one said thrice with other words between is a list
    twice = "He won the award for best actor. In 1990 he won the award for best actor again."
    assert drop_repetition(twice) == twice
    albums = (
        "Old is the seventh full-length album released by Starflyer 59. Fashion Focus is the "
        "fourth full-length album released by Starflyer 59. Portuguese Blues is the eighth "
        "full-length album released by Starflyer 59."
    )
    assert drop_repetition(albums) == albums


def test_the_loop_scan_stops_at_its_bound() -> None:
    from searchers.repetition import LOOP_SCAN_WORDS

    filler = " ".join(f"w{i}" for i in range(LOOP_SCAN_WORDS))
    loop = "the same phrase again, " * 4
    assert drop_repetition(filler + " " + loop) == filler + " " + loop.strip()  # past the bound
    assert drop_repetition(loop + filler) == "the same phrase again,"  # inside it: cut


def test_a_summary_cut_at_the_limit_loses_its_loop_and_its_unfinished_sentence() -> None:
    raw = "Summary: The band formed in Boston. The band formed in Boston. Its first gig was in"
    text, clipped = clean_summary(raw, max_words=100, cut=True)
    assert text == "The band formed in Boston." and not clipped


# --- capped models ---------------------------------------------------------------------------


def test_capping_lowers_the_limit_on_a_copy_and_leaves_scripted_models_alone() -> None:
    chat = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="k", max_tokens=512)
    low = capped(chat, 256)
    assert isinstance(low, ChatOpenAI) and low.max_tokens == 256 and chat.max_tokens == 512
    assert capped(chat, 1024) is chat  # never raises a limit
    assert capped(chat, None) is chat
    scripted = ScriptedChatModel(replies=[])
    assert capped(scripted, 256) is scripted
    assert truncated_text(ValueError("no completion here")) is None


# --- the stub OpenAI server ------------------------------------------------------------------


def completion(content: str, finish_reason: str, prompt: int = 40, output: int = 30) -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
        },
    }


@contextmanager
def stub_openai(replies: list[dict]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serves ``replies`` in order to POST /v1/chat/completions; yields (base URL, requests)."""
    requests: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                requests.append(body)
                reply = replies[min(len(requests), len(replies)) - 1]
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as base:
        yield f"{base}/v1", requests


def stub_chat(url: str, tracker: UsageTracker) -> ChatOpenAI:
    return ChatOpenAI(
        model="stub",
        base_url=url,
        api_key="stub",
        max_tokens=512,
        timeout=10,
        max_retries=0,
        callbacks=[tracker],
    )


def ask_once(chat: BaseChatModel, schema: type[BaseModel], step: str, **options: Any) -> Reply:
    """One ``ask`` with a fresh budget and a one-line prompt, run to completion."""
    messages = [HumanMessage("q")]
    return asyncio.run(
        ask(chat, schema, messages, scope=SearchBudget().scope(), step=step, **options)
    )


def test_a_cut_structured_reply_is_salvaged_and_its_call_counted() -> None:
    cut = '{"passage": "Tinted Windows formed in 2009. They played first in Austin. They pl'
    tracker = UsageTracker()
    with stub_openai([completion(cut, "length", prompt=70, output=256)]) as (url, requests):
        reply = ask_once(stub_chat(url, tracker), Passage, "hyde", max_tokens=256)
    assert reply.cut and reply.error is None
    assert reply.value == Passage(
        passage="Tinted Windows formed in 2009. They played first in Austin."
    )
    sent = requests[0]
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == 256  # the cap was sent
    usage = tracker.by_step()["hyde"]
    assert (usage.calls, usage.errors) == (0, 1)  # one call made, and the client refused it
    assert (usage.prompt_tokens, usage.completion_tokens) == (70, 256)


def test_an_unsalvageable_cut_reply_is_an_error_that_still_counts_its_tokens() -> None:
    tracker = UsageTracker()
    with stub_openai([completion('{"sufficient": tr', "length", output=512)]) as (url, _):
        reply = ask_once(stub_chat(url, tracker), Verdict, "verify")
    assert reply.value is None and reply.cut
    assert reply.error is not None and reply.error.startswith("verify: LengthFinishReasonError")
    assert tracker.by_step()["verify"].completion_tokens == 512


def test_a_failed_call_without_a_reply_counts_as_an_error_only() -> None:
    tracker = UsageTracker()
    chat = ChatOpenAI(
        model="stub",
        base_url="http://127.0.0.1:9/v1",  # nothing listens on the discard port
        api_key="stub",
        timeout=5,
        max_retries=0,
        callbacks=[tracker],
    )
    reply = ask_once(chat, Passage, "hyde")
    assert reply.value is None and not reply.cut
    usage = tracker.by_step()["hyde"]
    assert (usage.calls, usage.errors, usage.prompt_tokens) == (0, 1, 0)


def test_a_tree_summary_cut_at_the_limit_keeps_its_finished_sentences() -> None:
    looping = "The band formed in Boston. The band formed in Boston. The band formed in Bo"
    tracker = UsageTracker()
    with stub_openai([completion(looping, "length", output=300)]) as (url, requests):
        summarizer = Summarizer(stub_chat(url, tracker), max_attempts=1, timeout_s=10)
        result = asyncio.run(summarizer.summarize(["The band formed in Boston in 2009."]))
    sent = requests[0]
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == 300  # 3 per word
    assert result.text == "The band formed in Boston."
    assert result.clipped and not result.fallback
    assert result.completion_tokens == 300


@pytest.mark.parametrize("finish_reason", ["stop", "length"])
def test_a_whole_reply_is_read_as_usual(finish_reason: str) -> None:
    whole = '{"passage": "Tinted Windows formed in 2009."}'
    tracker = UsageTracker()
    with stub_openai([completion(whole, finish_reason)]) as (url, _):
        reply = ask_once(stub_chat(url, tracker), Passage, "hyde")
    if finish_reason == "stop":
        assert reply == type(reply)(Passage(passage="Tinted Windows formed in 2009."))
        assert tracker.by_step()["hyde"].errors == 0
    else:  # the client refuses even a complete reply that says it hit the limit: salvaged whole
        assert reply.cut and reply.value == Passage(passage="Tinted Windows formed in 2009.")


# --- the bound OpenAI path against the parser chain ------------------------------------------


def both_paths(
    monkeypatch: pytest.MonkeyPatch, reply: dict, schema: type[BaseModel]
) -> list[tuple[Reply, dict[str, Any], list[str]]]:
    """``ask`` against the same stub reply twice: through the bound model (OpenAI models'
    path), then through the parser chain (every other model's). Per path: the reply, the
    request body sent and the LLM-cache keys (``llm_string``) the call computed."""
    import searchers.structured_calls as calls

    keys: list[str] = []
    real = ChatOpenAI._get_llm_string

    def spy(self: Any, *args: Any, **kwargs: Any) -> str:
        keys.append(real(self, *args, **kwargs))
        return keys[-1]

    monkeypatch.setattr(ChatOpenAI, "_get_llm_string", spy)
    out = []
    with stub_openai([reply]) as (url, requests):
        for lean in (True, False):
            if not lean:
                monkeypatch.setattr(calls, "bound_to_schema", lambda *_args: None)
            chat = stub_chat(url, UsageTracker())
            chat.cache = InMemoryCache()  # a fresh one, so both calls reach the endpoint
            got = ask_once(chat, schema, "verify")
            out.append((got, requests[-1], keys[:]))
            keys.clear()
    return out


def test_openai_models_skip_the_parser_chain_and_send_the_same_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import searchers.structured_calls as calls

    chat = stub_chat("http://127.0.0.1:9/v1", UsageTracker())
    assert calls.bound_to_schema(chat, Verdict, None) is not None
    assert calls.bound_to_schema(ScriptedChatModel(), Verdict, None) is None
    assert (
        calls.bound_to_schema(chat.model_copy(update={"model_name": "gpt-4"}), Verdict, None)
        is None
    )
    whole = completion('{"sufficient": true, "reason": "both hops found"}', "stop")
    (lean, lean_body, lean_keys), (chain, chain_body, chain_keys) = both_paths(
        monkeypatch, whole, Verdict
    )
    assert lean == chain == Reply(Verdict(sufficient=True, reason="both hops found"))
    assert lean_body == chain_body  # same schema, same limits: the endpoint cannot tell
    assert lean_keys and lean_keys == chain_keys  # so LLM cache entries stay valid


def test_a_reply_outside_the_schema_is_an_error_on_either_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = completion('{"sufficient": "perhaps"}', "stop")
    for reply, _, _ in both_paths(monkeypatch, wrong, Verdict):
        assert reply.value is None and not reply.cut
        assert reply.error is not None and reply.error.startswith("verify: ")


def test_the_servers_timings_are_counted_per_step() -> None:
    """llama.cpp adds ``timings`` to each reply (prompt and decode milliseconds, prompt tokens
    reused from its cache, drafts tried and kept); the stock client drops fields OpenAI does
    not send, ``HoptreeChatOpenAI`` keeps them and the tracker sums them per step, for plain
    and structured calls alike. A reply without them counts zero, not an error."""
    from agent.runtime.chat_models import HoptreeChatOpenAI

    timed = completion('{"sufficient": true, "reason": "ok"}', "stop", prompt=200, output=12)
    timed["timings"] = {
        "cache_n": 150,
        "prompt_n": 50,
        "prompt_ms": 1350.5,
        "predicted_n": 12,
        "predicted_ms": 800.25,
        "draft_n": 8,
        "draft_n_accepted": 6,
    }
    tracker = UsageTracker()
    with stub_openai([timed, completion('{"sufficient": false, "reason": "no"}', "stop")]) as (
        url,
        _,
    ):
        chat = HoptreeChatOpenAI(
            model="stub", base_url=url, api_key="stub", timeout=10, max_retries=0,
            callbacks=[tracker],
        )  # fmt: skip
        assert ask_once(chat, Verdict, "verify").value == Verdict(sufficient=True, reason="ok")
        assert ask_once(chat, Verdict, "answer").value is not None
    verify, answer = tracker.by_step()["verify"], tracker.by_step()["answer"]
    assert (verify.prompt_ms, verify.decode_ms) == (1350.5, 800.25)
    assert (verify.cached_prompt_tokens, verify.draft_tokens, verify.draft_accepted) == (150, 8, 6)
    assert (answer.calls, answer.prompt_ms, answer.decode_ms) == (1, 0.0, 0.0)
    assert tracker.by_step_json()["verify"]["prompt_ms"] == 1350.5
    assert "prompt_ms" not in tracker.by_step_json()["answer"]  # zeros are left out
