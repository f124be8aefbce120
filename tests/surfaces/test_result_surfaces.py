"""Every surface hands out the result's one record (``AskResult.to_json``) or a part of it: the
HTTP API whole, the chat completion's ``hoptree`` extras, MCP's ``ask`` result (value and
schema) and an eval row's ``planner`` record each leave out what they name, so a field added to
``AskResult`` reaches them all. The key sets each surface sends are pinned here: a change to a
wire format is a change to this file."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agent.results import FINDING_NAMES, AskResult, Citation
from agent.serve.mcp_schemas import MCP_OMITS, MCP_SUB_QUERY_OMITS, AskOutput, ask_output
from agent.serve.openai_api import CHAT_OMITS, hoptree_extra
from evals.pipelines import ROW_OMITS, ROW_SUB_QUERY_OMITS, planner_record, planner_usage
from tests.fake_agent import scripted_events, scripted_result

CHAT_KEYS = {
    "short_answer", "citations", "stopped", "llm_calls", "thread_id", "errors", "citation_check",
    "degraded", "degraded_reasons", "draft", "final_choice", "first_answer_s",
}  # fmt: skip
MCP_KEYS = {
    "question", "short_answer", "answer", "citations", "sub_queries", "llm_calls",
    "prompt_tokens", "completion_tokens", "stopped", "degraded", "degraded_reasons", "thread_id",
    "seconds", "searchers", "draft", "final_choice", "first_answer_s",
}  # fmt: skip
MCP_SUB_QUERY_KEYS = {"id", "query", "round", "finding", "answered", "passage_ids"}
ROW_KEYS = {
    "rounds", "stopped", "sub_queries", "sources", "source_ids", "citation_check", "draft",
    "final_choice", "first_answer_s",
}  # fmt: skip
ROW_SUB_QUERY_KEYS = {
    "id", "query", "origin", "round", "answered", "finding", "proposed", "needs", "replaces",
    "passage_ids", "finding_sources",
}  # fmt: skip


def rich_result() -> AskResult:
    """The scripted run's result with every optional part filled in (a draft that lost)."""
    result = scripted_result(
        "Which river?", "t1", list(scripted_events("Which river?", "t1")), 9.876
    )
    draft = {
        "short_answer": "Paris",
        "answer": "Paris [1].",
        "citations": [Citation(1, "p", "Paris", "Paris is ...").to_json()],
        "seconds": 3.14159,
        "signals": {"shape": "chain"},
        "decision": {"escalate": True, "reason": "a chain", "policy": "fitted"},
    }
    shown = {"n": 1, "id": "p", "title": "Paris", "text": "Paris is ...", "shown": "Paris"}
    return replace(
        result,
        sources=[shown],
        searchers=["sparse", "dense"],
        usage_by_step={"answer": {"calls": 1, "prompt_ms": 5.0, "decode_ms": 2.5}},
        errors=["verify: bad reply"],
        degraded=True,
        degraded_reasons=["verify: bad reply"],
        draft=draft,
        final_choice={"source": "plan", "reason": "the plan resolved"},
        first_answer_s=3.14159,
    )


def without(record: dict[str, Any], omits: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in omits}


def test_the_chat_extras_are_the_record_but_what_they_leave_out() -> None:
    result = rich_result()
    extra = hoptree_extra(result)
    assert extra == without(result.to_json(with_trace=False), CHAT_OMITS)
    assert set(extra) == CHAT_KEYS
    assert extra["first_answer_s"] == 3.14  # every surface gives seconds to the hundredth


def test_mcps_result_and_schema_are_the_record_but_what_they_leave_out() -> None:
    result = rich_result()
    record = without(result.to_json(with_trace=False), MCP_OMITS)
    out = ask_output(result).model_dump(mode="json")
    assert set(out) == set(record) == MCP_KEYS == set(AskOutput.model_fields)
    assert out["citations"] == [without(c, frozenset({"text"})) for c in record["citations"]]
    subs = [  # its omits name the dataclass's fields; the wire has the finding's words
        {FINDING_NAMES.get(k, k): v for k, v in without(q.to_json(), MCP_SUB_QUERY_OMITS).items()}
        for q in result.sub_queries
    ]
    assert out["sub_queries"] == subs and set(subs[0]) == MCP_SUB_QUERY_KEYS
    plain = ("seconds", "stopped", "degraded_reasons", "first_answer_s", "searchers")
    assert {k: out[k] for k in plain} == {k: record[k] for k in plain}
    assert out["draft"]["short_answer"] == "Paris" and out["final_choice"]["source"] == "plan"
    schema = AskOutput.model_json_schema()
    assert set(schema["properties"]) == MCP_KEYS
    assert {"degraded", "degraded_reasons", "stopped"} <= set(schema["required"])


def test_an_eval_rows_planner_record_is_the_record_but_what_it_leaves_out() -> None:
    result = rich_result()
    record = without(result.to_json(with_trace=False), ROW_OMITS)
    row = planner_record(result)
    assert set(row) == ROW_KEYS
    for key in ("stopped", "citation_check", "final_choice", "first_answer_s"):
        assert row[key] == record[key]
    assert row["sub_queries"] == [
        without(q.finding_json(), ROW_SUB_QUERY_OMITS) for q in result.sub_queries
    ]
    assert set(row["sub_queries"][0]) == ROW_SUB_QUERY_KEYS
    assert row["sources"] == ["Paris"] and row["source_ids"] == ["p"]
    assert row["draft"]["citation_ids"] == ["p"] and "answer" not in row["draft"]
    # without a draft a row has no draft fields, as before draft first
    assert set(planner_record(replace(result, draft=None))) == ROW_KEYS - {
        "draft",
        "final_choice",
        "first_answer_s",
    }
    usage = planner_usage(result)
    assert (usage.calls, usage.prompt_ms, usage.decode_ms) == (result.llm_calls, 5.0, 2.5)


@dataclass(kw_only=True)
class Wider(AskResult):
    """An ``AskResult`` with a field added, as a later change would add one."""

    confidence: float = 0.5


def test_a_field_added_to_the_result_reaches_every_surface() -> None:
    wider = Wider(**{k: getattr(rich_result(), k) for k in AskResult.__dataclass_fields__})
    assert wider.to_json()["confidence"] == 0.5  # the HTTP API, ``hoptree ask --json``
    assert hoptree_extra(wider)["confidence"] == 0.5
    assert planner_record(wider)["confidence"] == 0.5
    # MCP's schema is made from AskResult's fields: all of them but its omits are in it
    fields = set(AskResult.__dataclass_fields__)
    assert set(AskOutput.model_fields) == fields - MCP_OMITS
