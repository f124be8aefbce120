"""``searchers.hop_reader``: a hop read one passage at a time, the passage most about it first,
until a passage states an answer it holds."""

from __future__ import annotations

import asyncio
import json

from agent.checks.evidence import support
from searchers.hop_reader import about_order, read_hop
from searchers.passages import Hit, Passage
from searchers.searcher import RunScope
from tests.routed_chat import RoutedChatModel

ALBUM = Hit(Passage("a", "Country Man (album)", "Country Man is an album by Jerry Reed.", {}), 1)
SONG = Hit(Passage("s", "Country Man", "Country Man is a song performed by Luke Bryan.", {}), 1)
TOWN = Hit(Passage("t", "Leesburg", "Leesburg is a city in Lee County, Georgia.", {}), 1)


def replies(*answers: str):
    """A routed reply per call, in order, and the passages each call was shown."""
    queue = list(answers)
    shown: list[str] = []

    def reply(messages) -> str:
        shown.append(str(messages[-1].content))
        return json.dumps({"answer": queue.pop(0)})

    return reply, shown


def read(reply, hits: list[Hit], **options):
    chat = RoutedChatModel(routes={"hop_read": reply})
    query = "performer of Country Man"
    return asyncio.run(read_hop(chat, query, hits, scope=RunScope(), supported=support, **options))


def test_the_passage_whose_title_the_hop_names_comes_first() -> None:
    order = about_order("performer of Country Man", [TOWN, ALBUM, SONG])
    assert order[0] in (SONG, ALBUM) and order[-1] is TOWN
    assert about_order("Leesburg county", [SONG, TOWN])[0] is TOWN


def test_passages_are_read_alone_until_one_holds_the_answer() -> None:
    reply, shown = replies("", "Jerry Reed")  # the first passage read (the song's) says nothing
    found = read(reply, [ALBUM, SONG, TOWN])
    assert found.answer == "Jerry Reed" and found.hit is ALBUM and found.calls == 2
    assert len(shown) == 2 and all(text.count("Country Man") >= 1 for text in shown)
    assert not any("Leesburg" in text for text in shown)  # one passage a call, never the third
    assert "Luke Bryan" in shown[0] and "Jerry Reed" in shown[1]


def test_a_reply_its_passage_does_not_hold_is_no_finding() -> None:
    # the model names the subject itself, then a name the passage does not hold
    reply, _shown = replies("Country Man", "Garth Brooks", "Atlanta")
    found = read(reply, [SONG, ALBUM, TOWN])
    assert found.answer == "" and found.hit is None and found.calls == 3


def test_at_most_max_reads_calls() -> None:
    reply, shown = replies("", "", "")
    found = read(reply, [SONG, ALBUM, TOWN], max_reads=1)
    assert found.calls == 1 and len(shown) == 1 and found.answer == ""
