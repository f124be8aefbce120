"""`hoptree ask` shows the plan as it unfolds: one progress line per step on stderr, from the
agent's own run (the CLI no longer drives the graph itself). Off a terminal (here, captured)
each line starts with the time, as the other long commands' plain lines do."""

from __future__ import annotations

import re

import pytest

from agent.cli.ask import run_question
from searchers.sparse_tantivy import TantivySparseIndex
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
