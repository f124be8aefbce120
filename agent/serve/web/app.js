// hoptree live trace page. No build step, no dependencies: it must work offline.
//
// The page POSTs the question to v1/ask/stream and reads the server-sent events with fetch() and
// a ReadableStream reader (EventSource cannot POST or send an Authorization header). Every event
// grows the plan tree; a "draft" event (draft first: one-call RAG over the question's own hits)
// shows a cited answer labelled as a draft within seconds, and the final "result" event fills the
// cited answer, confirming the draft or replacing it and saying why. All text from the server
// (questions, LLM output, passages) goes into the DOM through textContent, never as HTML.
//
// Why one file of this length: with no build step there are no modules to import, and a page
// that must load offline from the server's own routes is simplest as one script.
"use strict";

(() => {
  const KEY_STORE = "hoptree.apiKey";
  const $ = (id) => document.getElementById(id);

  /** el("div", {class: "x", text: "y", onclick: f}, child, ...) */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "class") node.className = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;

  // ------------------------------------------------------------------ state

  const state = {
    running: false,
    controller: null,
    startedAt: 0,
    timer: null,
    roundBase: null,
    currentRound: null,
    rounds: new Map(), // round -> {section, body}
    subqueries: new Map(), // id -> {card, body, searchesEl, waitEl, findingEl, searches}
    passages: new Map(), // passage id -> {id, title, text, url}
    citations: new Map(), // n -> citation
    draft: null, // the draft event's data while a draft is shown
    searches: 0,
    sawResult: false,
    sawFatal: false,
    finalStatus: null, // the status line's last word once the run is over
    pending: null, // {question, thread} to retry after the key is entered
    searchers: [],
  };

  // ------------------------------------------------------------------ server access

  function apiKey() {
    return sessionStorage.getItem(KEY_STORE) || "";
  }

  function headers(json) {
    const h = { Accept: json ? "text/event-stream" : "application/json" };
    if (json) h["Content-Type"] = "application/json";
    const key = apiKey();
    if (key) h.Authorization = `Bearer ${key}`;
    return h;
  }

  async function errorMessage(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch (_) {
      /* not JSON */
    }
    return `HTTP ${response.status}`;
  }

  async function loadInfo() {
    try {
      const response = await fetch("v1/searchers", { headers: headers(false) });
      if (response.status === 401) {
        $("model-label").textContent = "API key needed";
        showKeyForm(await errorMessage(response));
        return;
      }
      if (!response.ok) throw new Error(await errorMessage(response));
      const info = await response.json();
      state.searchers = info.searchers || [];
      $("model-label").textContent = info.chat_model || "";
      const chips = $("searcher-chips");
      chips.replaceChildren(...state.searchers.map((name) => el("span", { class: "chip", text: name })));
      $("forget-key").classList.toggle("hidden", !apiKey());
    } catch (err) {
      $("model-label").textContent = `server unreachable (${err.message})`;
    }
  }

  function showKeyForm(message) {
    $("key-message").textContent = message || "This server needs an API key.";
    $("key-form").classList.remove("hidden");
    $("api-key").focus();
  }

  // ------------------------------------------------------------------ SSE over fetch

  function parseBlock(block) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue; // comments are keep-alive pings
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    return data.length ? { event, data: data.join("\n") } : null;
  }

  async function* sseEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        // Normalise CRLF/CR; a trailing CR waits for the next chunk, which may start with LF.
        const tail = buffer.endsWith("\r") ? "\r" : "";
        buffer = buffer.slice(0, buffer.length - tail.length).replace(/\r\n|\r/g, "\n") + tail;
        let cut = buffer.indexOf("\n\n");
        while (cut >= 0) {
          const parsed = parseBlock(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (parsed) yield parsed;
          cut = buffer.indexOf("\n\n");
        }
      }
    } finally {
      reader.releaseLock();
    }
  }

  // ------------------------------------------------------------------ running a question

  function setRunning(running) {
    state.running = running;
    $("ask").disabled = running;
    $("stop").classList.toggle("hidden", !running);
    if (running) {
      state.startedAt = performance.now();
      clearInterval(state.timer);
      state.timer = setInterval(renderStatus, 200);
    } else {
      clearInterval(state.timer);
      state.timer = null;
    }
    renderStatus();
  }

  /** The status line: a ticking "working" line while running, then the final word, once set. */
  function renderStatus(final) {
    const status = $("status");
    if (final) state.finalStatus = final;
    const seconds = ((performance.now() - state.startedAt) / 1000).toFixed(1);
    if (state.finalStatus) {
      status.replaceChildren(state.finalStatus);
    } else if (state.running) {
      const round = state.currentRound === null ? "" : ` · round ${roundLabel(state.currentRound)}`;
      status.replaceChildren(
        el("span", { class: "spinner" }),
        `working · ${seconds} s${round} · ${plural(state.searches, "search", "searches")}`,
      );
    } else {
      status.replaceChildren();
    }
  }

  function banner(message, kind) {
    const node = $("banner");
    node.textContent = message;
    node.className = `banner${kind === "info" ? " info" : ""}`;
  }

  function clearBanner() {
    $("banner").className = "banner hidden";
  }

  function resetView(question, thread) {
    state.roundBase = null;
    state.currentRound = null;
    state.rounds.clear();
    state.subqueries.clear();
    state.passages.clear();
    state.citations.clear();
    state.draft = null;
    state.searches = 0;
    state.sawResult = false;
    state.sawFatal = false;
    state.finalStatus = null;
    clearBanner();
    $("passage-card").classList.add("hidden");
    $("plan-meta").textContent = "";
    $("plan").replaceChildren(
      el(
        "p",
        { class: "question-root" },
        el("span", { class: "muted", text: "Question " }),
        question,
        thread ? el("span", { class: "muted", text: `  · thread ${thread}` }) : null,
      ),
    );
    $("answer").replaceChildren(
      el("p", { class: "waiting" }, el("span", { class: "spinner" }), "the planner is working…"),
    );
  }

  async function ask(question, thread) {
    if (state.running) return;
    resetView(question, thread);
    const controller = new AbortController();
    state.controller = controller;
    setRunning(true);
    let response;
    try {
      response = await fetch("v1/ask/stream", {
        method: "POST",
        headers: headers(true),
        body: JSON.stringify({ question, thread_id: thread || null }),
        signal: controller.signal,
      });
    } catch (err) {
      setRunning(false);
      finishView(controller.signal.aborted ? "stopped" : `could not reach the server: ${err.message}`);
      return;
    }
    if (!response.ok) {
      const message = await errorMessage(response);
      setRunning(false);
      if (response.status === 401) {
        state.pending = { question, thread };
        showKeyForm(message);
        finishView("API key needed");
      } else if (response.status === 429) {
        const wait = response.headers.get("Retry-After");
        finishView(`${message}${wait ? ` (try again in ${wait} s)` : ""}`);
      } else {
        finishView(message);
      }
      return;
    }
    try {
      for await (const { event, data } of sseEvents(response)) {
        let parsed;
        try {
          parsed = JSON.parse(data);
        } catch (_) {
          continue;
        }
        handleEvent(event, parsed);
      }
    } catch (err) {
      if (!controller.signal.aborted) banner(`the stream broke: ${err.message}`);
    } finally {
      setRunning(false);
    }
    if (controller.signal.aborted) finishView("stopped");
    else if (!state.sawResult && !state.sawFatal) finishView("the stream ended without a result");
  }

  /** Ends a run that produced no answer: clears the spinners and says why. */
  function finishView(message) {
    for (const sq of state.subqueries.values()) if (sq.waitEl) sq.waitEl.remove();
    if (!state.sawResult) {
      $("answer").replaceChildren(el("p", { class: "empty muted", text: "No answer." }));
    }
    if (message !== "stopped") banner(message);
    renderStatus(el("span", { text: message === "stopped" ? "stopped (the run was cancelled)" : "failed" }));
  }

  // ------------------------------------------------------------------ the plan tree

  function roundLabel(round) {
    return state.roundBase === null ? round : round - state.roundBase + 1;
  }

  function roundSection(round) {
    if (state.roundBase === null) state.roundBase = round;
    state.currentRound = round;
    let entry = state.rounds.get(round);
    if (!entry) {
      const body = el("div", { class: "round-body" });
      const section = el(
        "section",
        { class: "round appear", "data-round": round },
        el("div", { class: "round-title" }, el("span", { class: "round-dot" }), `Round ${roundLabel(round)}`),
        body,
      );
      $("plan").append(section);
      entry = { section, body };
      state.rounds.set(round, entry);
    }
    return entry;
  }

  function renderPlanMeta() {
    const searches = state.searches;
    $("plan-meta").textContent =
      `${plural(state.rounds.size, "round")} · ` +
      `${plural(state.subqueries.size, "atomic query", "atomic queries")} · ` +
      `${plural(searches, "search", "searches")}`;
  }

  function addSubqueries(round, subQueries, origin) {
    const { body } = roundSection(round);
    for (const sq of subQueries || []) {
      if (state.subqueries.has(sq.id)) continue;
      const searchesEl = el("div", { class: "searches" });
      const waitEl = el(
        "div",
        { class: "waiting" },
        el("span", { class: "spinner" }),
        `searching with ${state.searchers.length ? state.searchers.join(", ") : "the searchers"}…`,
      );
      const findingEl = el("div");
      const card = el(
        "article",
        { class: "subquery appear", "data-id": sq.id },
        el(
          "div",
          { class: "subquery-head" },
          el("span", { class: "qid", text: sq.id }),
          el("span", { class: "qtext", text: sq.query }),
          el("span", { class: "spacer" }),
          origin === "supplement"
            ? el("span", { class: "badge warn", text: "follow-up" })
            : origin === "hop"
              ? el("span", { class: "badge accent", text: `next hop: uses ${(sq.needs || []).join(", ")}` })
              : el("span", { class: "badge accent", text: "planned" }),
        ),
        el("div", { class: "subquery-body" }, searchesEl, waitEl, findingEl),
      );
      body.append(card);
      state.subqueries.set(sq.id, { card, body, searchesEl, waitEl, findingEl, searches: 0 });
    }
    renderPlanMeta();
  }

  function subquery(id, round, query) {
    if (!state.subqueries.has(id)) addSubqueries(round, [{ id, query: query || id }], "decompose");
    return state.subqueries.get(id);
  }

  function rememberHit(hit) {
    if (hit && hit.id && !state.passages.has(hit.id)) {
      state.passages.set(hit.id, { id: hit.id, title: hit.title, text: hit.text, url: hit.url || null });
    }
  }

  function passageButton(id, label) {
    const known = state.passages.get(id);
    return el("button", {
      type: "button",
      class: "passage-link",
      text: label || (known && known.title) || id,
      title: id,
      onclick: () => showPassage(state.passages.get(id) || { id, title: id, text: "(passage text not in the trace)" }),
    });
  }

  function verdictBits(verdict) {
    if (!verdict) return [el("span", { class: "badge", text: "not judged" })];
    const bits = [
      verdict.sufficient
        ? el("span", { class: "badge ok", text: "✓ sufficient" })
        : el("span", { class: "badge warn", text: "✗ not sufficient" }),
    ];
    if (typeof verdict.coverage === "number") {
      bits.push(el("span", { class: "stats", text: `coverage ${Math.round(verdict.coverage * 100)}%` }));
    }
    if (verdict.llm_says === true || verdict.llm_says === false) {
      bits.push(el("span", { class: "stats", text: `LLM: ${verdict.llm_says ? "yes" : "no"}` }));
    }
    return bits;
  }

  function renderAttempts(attempts, bestId) {
    const ids = new Set(attempts.map((a) => a.id));
    const children = new Map();
    for (const a of attempts) {
      const parent = a.parent !== null && a.parent !== undefined && ids.has(a.parent) ? a.parent : null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(a);
    }
    const build = (parent, depth) => {
      const list = el("ul", { class: "attempts" });
      for (const a of children.get(parent) || []) {
        const verdict = a.verdict || null;
        const hitCount = (a.hit_ids || []).length;
        const line = el(
          "div",
          { class: "attempt-line" },
          el("span", { class: `op op-${a.operation}`, text: a.operation }),
          el("code", { class: "query", text: a.query }),
          el("span", { class: "stats", text: plural(hitCount, "hit") }),
          ...verdictBits(verdict),
          a.id === bestId ? el("span", { class: "best", title: "best attempt", text: "★ best" }) : null,
        );
        const reason = verdict && (verdict.reason || verdict.answer)
          ? el(
              "div",
              { class: "reason" },
              verdict.reason || "",
              verdict.answer ? el("span", {}, verdict.reason ? " · answer: " : "answer: ", el("span", { class: "said", text: verdict.answer })) : null,
            )
          : null;
        const item = el("li", { class: "attempt", "data-op": a.operation }, line, reason);
        if (depth < 8 && children.has(a.id)) item.append(build(a.id, depth + 1));
        list.append(item);
      }
      return list;
    };
    return build(null, 0);
  }

  function addSearch(event) {
    const d = event.data;
    const sq = subquery(d.sub_query_id, event.round, d.query);
    state.searches += 1;
    sq.searches += 1;
    (d.hits || []).forEach(rememberHit);
    const attempts = d.attempts || [];
    const status = d.error
      ? el("span", { class: "badge bad", text: "error" })
      : d.sufficient
        ? el("span", { class: "badge ok", text: "✓ sufficient" })
        : el("span", { class: "badge warn", text: d.stopped || "not sufficient" });
    const hits = d.hits || [];
    const details = el(
      "details",
      { class: "search appear", "data-searcher": d.searcher, open: attempts.length <= 6 },
      el(
        "summary",
        {},
        el("span", { class: "searcher-name", text: d.searcher }),
        status,
        el("span", {
          class: "stats",
          text:
            `${plural(attempts.length, "query", "queries")} · ${plural(d.llm_calls || 0, "LLM call")}` +
            ` · ${plural(hits.length, "hit")} · ${fmtMs(d.ms || 0)}`,
        }),
      ),
      attempts.length ? renderAttempts(attempts, d.best_attempt) : null,
      d.error ? el("div", { class: "event-error", text: d.error }) : null,
      hits.length
        ? el(
            "ul",
            { class: "hits-list" },
            el("li", { class: "stats", text: "top hits" }),
            ...hits.slice(0, 5).map((h) =>
              el(
                "li",
                {},
                passageButton(h.id, h.title || h.id),
                " ",
                el("span", { class: "score", text: typeof h.score === "number" ? h.score.toFixed(2) : "" }),
              ),
            ),
          )
        : null,
    );
    sq.searchesEl.append(details);
    if (sq.waitEl) {
      const total = state.searchers.length;
      sq.waitEl.lastChild.textContent =
        total && sq.searches >= total ? "reading the findings…" : `${sq.searches}${total ? `/${total}` : ""} searchers done…`;
    }
    renderPlanMeta();
  }

  function addFinding(event) {
    const d = event.data;
    const sq = subquery(d.id, event.round, d.query);
    if (sq.waitEl) {
      sq.waitEl.remove();
      sq.waitEl = null;
    }
    const sources = d.sources || [];
    sq.findingEl.replaceChildren(
      el(
        "div",
        { class: "finding appear" },
        el(
          "div",
          {},
          el("span", { class: "label", text: "Finding " }),
          d.answered
            ? el("span", { class: "badge ok", text: "supported by its passages" })
            : el("span", { class: "badge warn", text: d.proposed ? "unsupported: not followed" : "not found" }),
          " ",
          d.skipped ? el("span", { class: "badge", text: "no findings call" }) : null,
        ),
        el("p", {
          class: "finding-text",
          text: d.finding || (d.proposed ? `the model said "${d.proposed}", which no passage holds` : "(nothing found)"),
        }),
        sources.length
          ? el(
              "div",
              {},
              el("span", { class: "stats", text: "sources " }),
              ...sources.map((id) =>
                el("button", {
                  type: "button",
                  class: "source-chip",
                  text: (state.passages.get(id) || {}).title || id,
                  title: id,
                  onclick: () => showPassage(state.passages.get(id) || { id, title: id, text: "(passage text not in the trace)" }),
                }),
              ),
            )
          : null,
      ),
    );
  }

  function addVerdict(event) {
    const d = event.data;
    const { body } = roundSection(event.round);
    const missing = (Array.isArray(d.open) ? d.open : [].concat(d.missing || [])).filter(Boolean);
    const next = (d.follow_ups || []).filter(Boolean);
    body.append(
      el(
        "div",
        { class: `verdict appear ${d.sufficient ? "ok" : "no"}` },
        el("strong", { text: d.sufficient ? "✓ Enough to answer" : "✗ Not enough yet" }),
        el("span", { text: d.reason || "" }),
        missing.length ? el("span", {}, el("strong", { text: "open: " }), missing.join("; ")) : null,
        next.length ? el("span", {}, el("strong", { text: "next: " }), next.join("; ")) : null,
        d.stopped ? el("span", { class: "badge", text: `stop: ${d.stopped}` }) : null,
      ),
    );
  }

  function addError(event) {
    const d = event.data || {};
    if (d.fatal) {
      state.sawFatal = true;
      finishView(d.error || "the run failed");
      return;
    }
    const target = state.currentRound === null ? $("plan") : roundSection(state.currentRound).body;
    target.append(
      el("div", { class: "event-error appear", text: `⚠ ${d.where ? `${d.where}: ` : ""}${d.error || "error"}` }),
    );
  }

  // ------------------------------------------------------------------ the answer

  function citedText(text, citations) {
    const known = citations || state.citations;
    const nodes = [];
    const pattern = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (match.index > last) nodes.push(text.slice(last, match.index));
      for (const part of match[1].split(",")) {
        const n = Number(part.trim());
        const citation = known.get(n);
        nodes.push(
          citation
            ? el("button", {
                type: "button",
                class: "cite",
                "data-n": n,
                title: citeLabel(citation),
                text: `[${n}]`,
                onclick: (e) => showCitation(n, known, e.currentTarget),
              })
            : `[${n}]`,
        );
      }
      last = match.index + match[0].length;
    }
    if (last < text.length) nodes.push(text.slice(last));
    return nodes;
  }

  // "title p. 7" for a passage from a PDF page (citations from older indexes have no page)
  function citeLabel(c) {
    const title = c.title || c.id;
    return c.page ? `${title} p. ${c.page}` : title;
  }

  /** The numbered list of an answer's cited sources; each opens its passage. */
  function sourcesList(citations, known) {
    if (!citations.length) return null;
    return el(
      "ol",
      { class: "sources" },
      ...citations.map((c) =>
        el(
          "li",
          {},
          el("span", { class: "n", text: `[${c.n}]` }),
          el("button", { type: "button", class: "passage-link", text: citeLabel(c), onclick: () => showCitation(c.n, known) }),
          el("span", { class: "sid", text: c.id }),
        ),
      ),
    );
  }

  function citationMap(citations) {
    return new Map((citations || []).map((c) => [c.n, c]));
  }

  /** The draft as an answer block labelled as one: its short answer, cited answer and sources,
   *  and what happens next (a plan checks it, or it stands). Its [n] open the draft's own
   *  passages: the final answer may number its sources differently. */
  function draftBlock(d, status) {
    const known = citationMap(d.citations);
    const seconds = typeof d.seconds === "number" ? ` after ${d.seconds.toFixed(1)} s` : "";
    return el(
      "div",
      { class: "answer-block draft appear" },
      el(
        "div",
        { class: "answer-label" },
        el("span", { class: "badge draft-badge", text: "draft" }),
        el("span", { class: "stats", text: `one-call answer from the question's own hits${seconds}` }),
      ),
      status,
      d.short_answer ? el("p", { class: "short-answer", text: d.short_answer }) : null,
      d.answer ? el("p", { class: "long-answer" }, ...citedText(d.answer, known)) : null,
      sourcesList(d.citations || [], known),
    );
  }

  function addDraft(event) {
    const d = event.data || {};
    const decision = d.decision || {};
    if (d.short_answer === undefined || d.short_answer === null) {
      const why = d.error || decision.reason || "no draft";
      $("answer").replaceChildren(
        el("p", { class: "draft-none muted", text: `No draft (${why}); the planner is answering…` }),
      );
      return;
    }
    state.draft = d;
    for (const c of d.citations || []) rememberHit(c);
    const status = el(
      "p",
      { class: `draft-status ${d.final ? "stands" : "checking"}` },
      d.final ? null : el("span", { class: "spinner" }),
      d.final
        ? `This draft stands as the answer (${decision.reason || "the router kept it"}).`
        : `A plan is checking it (${decision.reason || "the router asked for it"})…`,
    );
    $("answer").replaceChildren(draftBlock(d, status));
  }

  const fold = (text) => String(text || "").toLowerCase().replace(/^(the|a|an)\s+/, "").replace(/[^\p{L}\p{N}]+/gu, " ").trim();

  /** How the result relates to the draft shown before it: "confirmed" (the draft won, or the
   *  plan found the same answer) or "replaced" (with the final choice's reason); null without
   *  a draft. */
  function draftOutcome(result) {
    const draft = state.draft;
    if (!draft) return null;
    const choice = result.final_choice || {};
    if (choice.source === "draft" || fold(result.short_answer) === fold(draft.short_answer)) {
      return { confirmed: true, reason: choice.reason || "the plan found the same answer" };
    }
    return { confirmed: false, reason: choice.reason || "the plan found another answer" };
  }

  function renderAnswer(short, long, result) {
    const parts = [];
    const outcome = result ? draftOutcome(result) : null;
    if (outcome) {
      parts.push(
        el(
          "div",
          { class: `draft-outcome ${outcome.confirmed ? "confirmed" : "replaced"}` },
          el("span", { class: `badge ${outcome.confirmed ? "ok" : "warn"}`, text: outcome.confirmed ? "draft confirmed" : "draft replaced" }),
          el("span", {
            class: "why",
            text: outcome.confirmed
              ? ` The draft answer stands: ${outcome.reason}.`
              : ` The final answer replaced the draft "${state.draft.short_answer}": ${outcome.reason}.`,
          }),
        ),
      );
    }
    if (short) parts.push(el("p", { class: "short-answer", text: short }));
    if (long) parts.push(el("p", { class: "long-answer" }, ...citedText(long)));
    if (result) {
      const sources = sourcesList(result.citations || [], state.citations);
      if (sources) parts.push(sources);
      parts.push(
        el(
          "div",
          { class: "result-meta" },
          el("span", { class: `badge ${result.stopped === "sufficient" ? "ok" : "warn"}`, text: `stopped: ${result.stopped}` }),
          checkBadge(result.citation_check),
          result.degraded
            ? el("span", { class: "badge warn", text: "degraded", title: (result.degraded_reasons || []).join("\n") })
            : null,
          el("span", { class: "badge", text: plural(result.llm_calls || 0, "LLM call") }),
          el("span", { class: "badge", text: `${(result.prompt_tokens || 0) + (result.completion_tokens || 0)} tokens` }),
          el("span", { class: "badge", text: `${Number(result.seconds || 0).toFixed(1)} s` }),
          ...(result.errors || []).map((e) => el("span", { class: "badge bad", text: e })),
        ),
      );
      if (outcome && !outcome.confirmed) {
        // the replaced draft stays readable, folded away under the final answer
        parts.push(el("details", { class: "replaced-draft" }, el("summary", { text: "the draft it replaced" }), draftBlock(state.draft, null)));
      }
    }
    const block = el("div", { class: `answer-block final${outcome && outcome.confirmed ? " confirmed" : ""}` }, ...parts);
    $("answer").replaceChildren(block);
  }

  // The lexical check of the cited answer: how many sentences stood, were re-cited or dropped.
  function checkBadge(check) {
    if (!check || check.sentences === undefined) return null;
    const dropped = check.dropped || 0;
    const text = `citations checked: ${check.kept || 0} kept, ${check.recited || 0} re-cited, ${dropped} dropped`;
    return el("span", { class: `badge ${dropped ? "warn" : "ok"}`, text, title: (check.dropped_sentences || []).join("\n") });
  }

  function addResult(event) {
    const result = event.data;
    state.sawResult = true;
    state.citations.clear();
    for (const c of result.citations || []) {
      state.citations.set(c.n, c);
      state.passages.set(c.id, { id: c.id, title: c.title, text: c.text, url: c.url });
    }
    for (const sq of state.subqueries.values()) {
      if (sq.waitEl) {
        sq.waitEl.remove();
        sq.waitEl = null;
      }
    }
    renderAnswer(result.short_answer, result.answer, result);
    renderStatus(
      el(
        "span",
        {},
        `done in ${Number(result.seconds || 0).toFixed(1)} s · ${plural(result.llm_calls || 0, "LLM call")} · stopped: ${result.stopped}`,
      ),
    );
  }

  function showCitation(n, citations, button) {
    const c = (citations || state.citations).get(n);
    if (!c) return;
    const answerBlock = button && button.closest(".long-answer");
    for (const cite of document.querySelectorAll(".cite")) {
      const same = answerBlock ? cite.closest(".long-answer") === answerBlock : !cite.closest(".draft");
      cite.classList.toggle("active", same && Number(cite.dataset.n) === n);
    }
    showPassage({ ...c, label: `[${n}]` });
  }

  function showPassage(p) {
    const safeUrl = p.url && /^https?:\/\//i.test(p.url) ? p.url : null;
    const parts = [
      el("h3", { text: `${p.label ? `${p.label} ` : ""}${p.title || p.id}` }),
      el("div", { class: "pid", text: p.id }),
    ];
    if (safeUrl) {
      parts.push(el("p", {}, el("a", { href: safeUrl, target: "_blank", rel: "noopener noreferrer", text: safeUrl })));
    }
    parts.push(el("blockquote", { text: p.text || "" }));
    $("passage").replaceChildren(...parts);
    const card = $("passage-card");
    card.classList.remove("hidden");
    card.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  // ------------------------------------------------------------------ dispatch

  function handleEvent(name, event) {
    const kind = event.kind || name;
    switch (kind) {
      case "started":
        state.searchers = (event.data && event.data.searchers) || state.searchers;
        break;
      case "decompose":
        addSubqueries(event.round, event.data.sub_queries, "decompose");
        break;
      case "next_round":
        addSubqueries(event.round, event.data.sub_queries, event.data.origin === "hop" ? "hop" : "supplement");
        break;
      case "search":
        addSearch(event);
        break;
      case "finding":
        addFinding(event);
        break;
      case "verify":
        addVerdict(event);
        break;
      case "draft":
        addDraft(event);
        break;
      case "answer":
        // with a draft shown, the result (right behind this event) confirms or replaces it
        if (!state.draft) renderAnswer(event.data.short_answer, event.data.answer, null);
        break;
      case "error":
        addError(event);
        break;
      case "result":
        addResult(event);
        break;
      default:
        break;
    }
  }

  // ------------------------------------------------------------------ wiring

  document.addEventListener("DOMContentLoaded", () => {
    $("ask-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const question = $("question").value.trim();
      if (question) ask(question, $("thread").value.trim());
    });
    $("question").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    $("stop").addEventListener("click", () => state.controller && state.controller.abort());
    $("key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const key = $("api-key").value.trim();
      if (!key) return;
      sessionStorage.setItem(KEY_STORE, key);
      $("api-key").value = "";
      $("key-form").classList.add("hidden");
      clearBanner();
      loadInfo();
      const pending = state.pending;
      state.pending = null;
      if (pending) ask(pending.question, pending.thread);
    });
    $("forget-key").addEventListener("click", () => {
      sessionStorage.removeItem(KEY_STORE);
      $("forget-key").classList.add("hidden");
      loadInfo();
    });
    $("passage-close").addEventListener("click", () => {
      $("passage-card").classList.add("hidden");
      for (const button of document.querySelectorAll(".cite.active")) button.classList.remove("active");
    });
    loadInfo();
  });
})();
