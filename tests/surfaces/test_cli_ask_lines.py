"""`hoptree ask` shows the plan as it unfolds: one progress line per step on stderr, from the
agent's own run (the CLI no longer drives the graph itself). Off a terminal (here, captured)
each line starts with the time, as the other long commands' plain lines do. Draft first: the
draft (its answer and sources) is on stderr before the plan starts, and the human output says
when the final answer replaced it."""

from __future__ import annotations

import re

import pytest

from agent.cli.ask import print_result, run_question
from searchers.sparse_tantivy import TantivySparseIndex
from tests.draft_scripts import draft_agent, draft_chat
from tests.planner_scripts import (
    QUESTION,
    KeywordSearcher,
    agent_with,
    passages_index,
    two_hop_chat,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_live_lines_come_from_the_agents_run(
    index,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = agent_with(two_hop_chat(), [KeywordSearcher(index)])
    result = await run_question(agent, QUESTION, None, live=True)
    stamped = capsys.readouterr().err.splitlines()
    assert stamped and all(re.match(r"\d\d:\d\d:\d\d ", line) for line in stamped)
    lines = [line[9:] for line in stamped]
    assert result.short_answer in ("the Seine", "Seine")
    assert any(line.startswith("planned 2 atomic queries") for line in lines)
    assert any("answer written" in line for line in lines)
    assert lines[0].startswith("planning the search (searchers: keywords")
    assert result.searchers == ["keywords"]  # the result names them too (ask --json)
    quiet = await run_question(agent, QUESTION, None, live=False)
    assert quiet.short_answer == result.short_answer and capsys.readouterr().err == ""


async def test_the_draft_is_on_stderr_before_the_plan_starts(
    index,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The draft's line, its cited answer and its sources' titles are on stderr by the time
    the plan's first call is made; the human output then says the final answer replaced it."""
    chat = draft_chat("Paris")
    at_plan: list[str] = []
    plan = chat.routes["decompose"]

    def decompose(messages):
        at_plan.append(capsys.readouterr().err)  # what stderr held when the plan began
        return plan(messages) if callable(plan) else plan

    chat.routes["decompose"] = decompose
    result = await run_question(draft_agent(index, chat), QUESTION, None, live=True)
    assert len(at_plan) == 1
    lines = [line[9:] for line in at_plan[0].splitlines()]
    assert lines[0].startswith("keywords searched 'Which river")  # the question, as written
    assert lines[1].startswith("draft answer after ")
    assert lines[1].endswith("'Paris', cites [1] Paris; a plan will check it (shape: chain)")
    assert lines[2:4] == [
        "  draft: The Eiffel Tower stands on the Champ de Mars in Paris [1].",
        "  Sources: [1] Paris",
    ]
    assert all(line.startswith("planning the search") for line in lines[4:])  # nothing else yet
    assert result.short_answer == "the Seine"
    print_result(result)
    out = capsys.readouterr().out
    assert "draft replaced: the plan's answer replaced the draft 'Paris': supported chain over" in (
        " ".join(out.split())
    )


async def test_no_replacement_line_when_the_draft_is_the_answer(
    index,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = draft_agent(index, draft_chat("Seine"))
    result = await run_question(agent, "Which river flows through Paris?", None, live=False)
    assert capsys.readouterr().err == ""  # --quiet: not even the draft
    assert result.final_choice == {"source": "draft", "reason": "draft stands: supported"}
    print_result(result)
    out = capsys.readouterr().out
    assert "Seine" in out and "draft replaced" not in out
    replanned = await run_question(agent, QUESTION, None, live=False)  # agrees with the draft
    assert replanned.final_choice == {"source": "plan", "reason": "resolved agrees with the draft"}
    print_result(replanned)
    assert "draft replaced" not in capsys.readouterr().out  # "the Seine" is the same answer
