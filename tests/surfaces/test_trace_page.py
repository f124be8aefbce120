"""The live trace page in a real headless Chromium (Debian's), against the real server and the
scripted agent: the key prompt, the plan tree growing from the SSE stream, the cited answer, and
a citation opening its passage. A screenshot lands in ``tests/artifacts/trace_page.png``. Draft
first runs the real planner (tests/draft_scripts.py): the draft shown, labelled, while the plan
is held, then confirmed or replaced with the reason (``trace_page_draft*.png``).

No browser download ever happens here (``playwright install`` is never run): the test drives
``/usr/bin/chromium``. Without it the test is skipped, unless ``CI`` is set, where a missing
browser is a broken machine and fails the test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_agent import ScriptedAgent
from tests.live_server import live_server
from tests.locations import TESTS

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = TESTS / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
API_KEY = "page-test-key"
EMPTY_SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/>"


def _require_browser() -> None:
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package is missing (pip install -e '.[dev]')")
    if missing:
        reason = "; ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the trace page test to run: {reason}")
        pytest.skip(reason)


@pytest.fixture
def page() -> Iterator:
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            context = browser.new_context(viewport={"width": 1360, "height": 1000})
            tab = context.new_page()
            tab.set_default_timeout(20_000)
            errors: list[str] = []
            tab.on("pageerror", lambda exc: errors.append(str(exc)))
            tab.on(
                "console",
                lambda msg: (
                    errors.append(msg.text)
                    if msg.type == "error" and "401" not in msg.text
                    else None
                ),
            )
            yield tab
            assert not errors, f"the page logged errors: {errors}"
        finally:
            browser.close()


def test_trace_page_grows_the_plan_and_opens_citations(page) -> None:
    from playwright.sync_api import expect

    agent = ScriptedAgent(latency_s=0.15)
    with live_server(agent, api_key=API_KEY) as url:
        page.goto(url + "/")
        # The server says 401: the page asks for the key and keeps it in sessionStorage.
        expect(page.locator("#key-form")).to_be_visible()
        page.fill("#api-key", API_KEY)
        page.click("#key-save")
        expect(page.locator("#key-form")).to_be_hidden()
        expect(page.locator("#searcher-chips .chip")).to_have_count(2)
        assert page.evaluate("sessionStorage.getItem('hoptree.apiKey')") == API_KEY

        page.fill("#question", "Which river flows through the city where the Eiffel Tower stands?")
        page.click("#ask")

        # While it runs, the tree grows: the first atomic query shows before the answer exists.
        expect(page.locator('.subquery[data-id="q1"]')).to_be_visible()
        expect(page.locator("#stop")).to_be_visible()

        # The finished tree: two rounds, two atomic queries (one a follow-up), four searches.
        expect(page.locator(".short-answer")).to_have_text("the Seine")
        expect(page.locator(".round")).to_have_count(2)
        expect(page.locator(".subquery")).to_have_count(2)
        expect(page.locator('.subquery[data-id="q2"] .badge.warn')).to_have_text("follow-up")
        expect(page.locator("details.search")).to_have_count(4)
        # The sparse searcher's refinement: an "extend" child under the "rewrite" root.
        q1_sparse = page.locator('.subquery[data-id="q1"] details.search[data-searcher="sparse"]')
        expect(q1_sparse.locator(".attempt")).to_have_count(2)
        expect(
            q1_sparse.locator('.attempt[data-op="rewrite"] .attempt[data-op="extend"]')
        ).to_contain_text("Paris")
        expect(q1_sparse.locator(".best")).to_have_count(1)
        expect(page.locator(".finding")).to_have_count(2)
        expect(page.locator(".verdict.no")).to_contain_text("which river flows through Paris")
        expect(page.locator(".verdict.ok")).to_have_count(1)
        expect(page.locator("#stop")).to_be_hidden()
        expect(page.locator("#status")).to_contain_text("stopped: sufficient")
        # the citation check's verdict on the answer's sentences is shown with the result
        expect(page.locator(".result-meta")).to_contain_text(
            "citations checked: 2 kept, 0 re-cited, 1 dropped"
        )

        # Every [n] of the answer is a button; [2] shows the Seine passage.
        expect(page.locator(".long-answer .cite")).to_have_count(3)
        page.locator('.long-answer .cite[data-n="2"]').click()
        passage = page.locator("#passage-card")
        expect(passage).to_be_visible()
        expect(passage.locator("h3")).to_have_text("[2] Seine")
        expect(passage.locator("blockquote")).to_contain_text("flows through Paris")
        expect(page.locator('.long-answer .cite[data-n="2"]')).to_have_class("cite active")

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(
            path=str(ARTIFACTS / "trace_page.png"), full_page=True, animations="disabled"
        )
        assert agent.completed == 1


def test_trace_page_shows_a_failed_run(page) -> None:
    from playwright.sync_api import expect

    agent = ScriptedAgent(fail_after=4, fail_message="chat endpoint down: connection refused")
    with live_server(agent) as url:
        page.goto(url + "/")
        expect(page.locator("#searcher-chips .chip")).to_have_count(2)
        page.fill("#question", "Which river?")
        page.click("#ask")
        expect(page.locator("#banner")).to_contain_text("chat endpoint down")
        expect(page.locator("#status")).to_have_text("failed")
        expect(page.locator("#ask")).to_be_enabled()
        # the tree keeps what was found before the failure
        expect(page.locator("details.search")).to_have_count(2)


def test_trace_page_stop_cancels_the_run(page) -> None:
    from playwright.sync_api import expect

    agent = ScriptedAgent(latency_s=1.0)
    with live_server(agent) as url:
        page.goto(url + "/")
        page.fill("#question", "Which river?")
        page.press("#question", "Enter")  # Enter asks; Shift+Enter would be a new line
        expect(page.locator('.subquery[data-id="q1"]')).to_be_visible()
        page.click("#stop")
        expect(page.locator("#status")).to_contain_text("stopped")
        assert agent.cancelled.wait(5), "closing the stream in the page did not cancel the run"
        assert agent.completed == 0


def test_api_docs_render_without_internet(page) -> None:
    """Swagger UI and ReDoc come from the server itself: every script, stylesheet or data request
    to another host fails the test. (ReDoc's bundle links one decorative image, the Redocly
    logo, from its own CDN; a missing image does not stop the page from rendering.)"""
    from playwright.sync_api import expect

    foreign: list[tuple[str, str]] = []

    def only_local(route) -> None:
        if route.request.url.startswith(url):
            route.continue_()
        else:
            foreign.append((route.request.resource_type, route.request.url))
            if route.request.resource_type == "image":  # an empty image: no console error
                route.fulfill(status=200, content_type="image/svg+xml", body=EMPTY_SVG)
            else:
                route.abort()

    with live_server(ScriptedAgent()) as url:
        page.route("**/*", only_local)
        page.goto(url + "/docs")
        expect(page.locator(".swagger-ui .title")).to_contain_text("hoptree")
        operation = page.locator(".opblock-summary-path", has_text="/v1/chat/completions")
        expect(operation).to_have_count(1)
        page.goto(url + "/redoc")
        expect(page.locator("h1", has_text="hoptree")).to_have_count(1)
    assert [(kind, u) for kind, u in foreign if kind != "image"] == []


@pytest.fixture(scope="module")
def passages(tmp_path_factory: pytest.TempPathFactory):
    from tests.planner_scripts import passages_index

    return passages_index(tmp_path_factory)


def test_the_draft_shows_at_once_and_the_result_replaces_it(page, passages) -> None:
    """Draft first on the real planner: the draft is shown, labelled, while the plan's first
    call is held (tests/draft_scripts.Gate), then the final answer replaces it and says why."""
    from playwright.sync_api import expect

    from tests.draft_scripts import QUESTION, Gate, draft_agent, draft_chat

    gate = Gate()
    with live_server(draft_agent(passages, draft_chat("Paris", gate))) as url:
        page.goto(url + "/")
        expect(page.locator("#searcher-chips .chip")).to_have_count(1)
        page.fill("#question", QUESTION)
        page.click("#ask")
        draft = page.locator("#answer .answer-block.draft")
        expect(draft.locator(".draft-badge")).to_have_text("draft")
        expect(draft.locator(".short-answer")).to_have_text("Paris")
        expect(draft.locator(".long-answer")).to_contain_text("Champ de Mars in Paris [1]")
        expect(draft.locator(".draft-status")).to_contain_text(
            "A plan is checking it (shape: chain)"
        )
        expect(draft.locator(".sources li")).to_have_count(1)
        expect(draft.locator(".sources li")).to_contain_text("Paris")
        draft.locator('.long-answer .cite[data-n="1"]').click()
        expect(page.locator("#passage-card blockquote")).to_contain_text("Champ de Mars")
        # the plan is provably still running: its first call waits for the gate
        assert gate.held.wait(10) and not gate.opened.is_set()
        expect(page.locator("#stop")).to_be_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "trace_page_draft.png"), full_page=True)
        gate.open()

        final = page.locator("#answer .answer-block.final")
        expect(final.locator(".draft-outcome.replaced")).to_contain_text(
            'replaced the draft "Paris": supported chain over one read'
        )
        expect(final.locator(":scope > .short-answer")).to_have_text("the Seine")
        expect(final.locator(":scope > .long-answer .cite")).to_have_count(2)
        expect(final.locator("details.replaced-draft .short-answer")).to_have_text("Paris")
        expect(page.locator("#stop")).to_be_hidden()
        page.screenshot(path=str(ARTIFACTS / "trace_page_draft_replaced.png"), full_page=True)


def test_a_draft_the_plan_agrees_with_is_confirmed(page, passages) -> None:
    from playwright.sync_api import expect

    from tests.draft_scripts import QUESTION, draft_agent, draft_chat

    with live_server(draft_agent(passages, draft_chat("Seine"))) as url:
        page.goto(url + "/")
        page.fill("#question", QUESTION)
        page.click("#ask")
        final = page.locator("#answer .answer-block.final.confirmed")
        expect(final.locator(".draft-outcome")).to_contain_text(
            "draft confirmed The draft answer stands: resolved agrees with the draft."
        )
        expect(final.locator(".short-answer")).to_have_text("the Seine")
        expect(page.locator("details.replaced-draft")).to_have_count(0)


def test_a_draft_that_stands_is_the_answer(page, passages) -> None:
    """A single fact: the router lets the draft stand, so no plan runs and the page says so."""
    from playwright.sync_api import expect

    from tests.draft_scripts import draft_agent, draft_chat

    with live_server(draft_agent(passages, draft_chat("Seine"))) as url:
        page.goto(url + "/")
        page.fill("#question", "Which river flows through Paris?")
        page.click("#ask")
        final = page.locator("#answer .answer-block.final.confirmed")
        expect(final.locator(".draft-outcome")).to_contain_text(
            "The draft answer stands: draft stands: supported."
        )
        expect(final.locator(".short-answer")).to_have_text("Seine")
        expect(page.locator(".subquery")).to_have_count(1)  # the question's own search only
