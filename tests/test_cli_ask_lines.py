"""`hoptree ask` shows the plan as it unfolds: one progress line per step on stderr, from the
agent's own run (the CLI no longer drives the graph itself)."""

from __future__ import annotations

import pytest

from agent.cli.ask import run_question
from tests.test_planner import QUESTION, KeywordSearcher, agent_with, index, two_hop_chat  # noqa: F401


async def test_live_lines_come_from_the_agents_run(
    index,  # noqa: F811 (the fixture imported above)
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = agent_with(two_hop_chat(), [KeywordSearcher(index)])
    result = await run_question(agent, QUESTION, None, live=True)
    lines = capsys.readouterr().err.splitlines()
    assert result.short_answer in ("the Seine", "Seine")
    assert any(line.startswith("planned 2 atomic queries") for line in lines)
    assert any("answer written" in line for line in lines)
    quiet = await run_question(agent, QUESTION, None, live=False)
    assert quiet.short_answer == result.short_answer and capsys.readouterr().err == ""
