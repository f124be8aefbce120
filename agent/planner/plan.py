"""The plan of one question, typed: its atomic queries, what each searcher found for them, their
fused passages and their findings, and every question the nodes ask about that state.

The graph's state stays JSON (``agent.planner.state``); a node reads it as a ``Plan``
(``Plan.from_json``) and asks the plan which queries are ready, blocked, open or answered
(``answer_of``, ``active``) and whether the chain resolved (``resolved``), and changes it
through the plan's updates (``first_round``, ``next_round``, ``new_finding``,
``findings_update``), the only writers of its records. A (query, searcher) result is keyed by
``ResultKey``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.checks.chains import Hop
from agent.checks.evidence import Finding
from agent.planner.queries import spell_out
from agent.planner.state import FindingRecord, SearchEntry, SubQuery, question_of
from agent.results import SubQueryReport
from agent.rules.query_text import names_nothing, query_key
from agent.rules.question import Question
from searchers.fusion import fuse_results
from searchers.passages import Hit, HitRecord
from searchers.searcher import SearchResult

# the question itself, searched as written (``routing.question_sends``): not a planned query
QUESTION_SEARCH_ID = "q0"


@dataclass(frozen=True)
class ResultKey:
    """Which search a result answers: one atomic query (or the question, ``q0``) on one
    searcher."""

    sub_query_id: str
    searcher: str

    def to_json(self) -> str:
        """The state's key: "q1|sparse" (the searcher's name may hold no "|"; the query id
        never does)."""
        return f"{self.sub_query_id}|{self.searcher}"

    @classmethod
    def from_json(cls, key: str) -> ResultKey:
        sub_query_id, _, searcher = key.partition("|")
        return cls(sub_query_id, searcher)


@dataclass(frozen=True)
class Plan:
    """One question's plan as the nodes read it; built from the state, never stored itself.
    ``question`` is the question as ``fresh_question`` read it: its text and what the rules
    found in it."""

    question: Question
    shape: str = ""
    sub_queries: Mapping[str, SubQuery] = field(default_factory=dict)
    waiting: tuple[str, ...] = ()  # planned, not yet searched: they need an earlier answer
    pending: tuple[str, ...] = ()  # searched in the current round
    searches: Mapping[ResultKey, SearchEntry] = field(default_factory=dict)
    fused: Mapping[str, list[str]] = field(default_factory=dict)  # query id -> passage ids
    passages: Mapping[str, HitRecord] = field(default_factory=dict)
    findings: Mapping[str, FindingRecord] = field(default_factory=dict)

    # ------------------------------------------------------------------ state

    @classmethod
    def from_json(cls, state: Mapping[str, Any]) -> Plan:
        """The plan held by a graph state (``PlannerState``); missing or reset maps are empty.
        The state's question record (``parsed``) is required: every run's input has one."""
        return cls(
            question=question_of(state),
            shape=state.get("shape") or "",
            sub_queries=dict(state.get("sub_queries") or {}),
            waiting=tuple(state.get("waiting") or ()),
            pending=tuple(state.get("pending") or ()),
            searches={
                ResultKey.from_json(key): record
                for key, record in (state.get("searches") or {}).items()
            },
            fused=dict(state.get("fused") or {}),
            passages=dict(state.get("passages") or {}),
            findings=dict(state.get("findings") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """The plan's fields of the graph state, as ``from_json`` reads them back."""
        return {
            "question": self.question.text,
            "parsed": self.question.to_json(),
            "shape": self.shape,
            "sub_queries": dict(self.sub_queries),
            "waiting": list(self.waiting),
            "pending": list(self.pending),
            "searches": {key.to_json(): record for key, record in self.searches.items()},
            "fused": dict(self.fused),
            "passages": dict(self.passages),
            "findings": dict(self.findings),
        }

    @staticmethod
    def search_update(key: ResultKey, record: SearchEntry) -> dict[str, dict[str, SearchEntry]]:
        """The state update that adds one search's result (merged with the parallel ones)."""
        return {"searches": {key.to_json(): record}}

    # ------------------------------------------------------------------ searches

    def results_of(self, sub_query_id: str) -> list[SearchResult]:
        """Every searcher's result for one query, in the order they were recorded."""
        return [SearchResult.from_json(record) for record in self.records_of(sub_query_id)]

    def records_of(self, sub_query_id: str) -> list[SearchEntry]:
        """Every searcher's record for one query, in the order they were recorded."""
        return [r for key, r in self.searches.items() if key.sub_query_id == sub_query_id]

    def fused_hits(self, sub_query_id: str, k: int) -> list[Hit]:
        """The one fusion of a query's results (its searchers' hits, best first): what the
        findings step reads for a planned query and the answer step for the question."""
        results = self.results_of(sub_query_id)
        return fuse_results(results, k=k) if results else []

    def question_hits(self, k: int) -> list[Hit]:
        """The question's own as-written retrieval, fused: one-call RAG's passages."""
        return self.fused_hits(QUESTION_SEARCH_ID, k)

    def ranked(self) -> list[list[str]]:
        """Each planned query's fused passage ids, in plan order."""
        return [self.fused.get(qid, []) for qid in self.sub_queries]

    # ------------------------------------------------------------------ findings

    def active(self) -> list[SubQuery]:
        """Searched queries whose findings still count: not replaced by a supported follow-up."""
        return [
            sub
            for qid, sub in self.sub_queries.items()
            if qid in self.findings and not self.findings[qid].get("superseded_by")
        ]

    def supported(self, qid: str) -> bool:
        finding = self.findings.get(qid)
        return bool(finding and finding.get("supported"))

    def own_finding(self, qid: str) -> str | None:
        """``qid``'s own supported finding, or None (a follow-up's counts too in
        ``answer_of``)."""
        finding = self.findings.get(qid)
        return finding["finding"] if finding and finding.get("supported") else None

    def unread_sources(self, qid: str) -> list[str]:
        """The passages that stand in for ``qid``'s finding when no findings call read them
        (the step ablated, LevelRAG's no-summarize): the ids its record keeps; [] for a
        finding that was read."""
        finding = self.findings.get(qid)
        if finding and finding.get("skipped") and not finding.get("finding"):
            return list(finding["sources"])
        return []

    def unanswered(self) -> list[SubQuery]:
        """Searched queries with no supported finding, none of whose follow-ups has one."""
        answered_by_follow_up = {
            sub.get("replaces") for qid, sub in self.sub_queries.items() if self.supported(qid)
        }
        return [
            sub
            for sub in self.active()
            if not self.findings[sub["id"]].get("supported")
            and sub["id"] not in answered_by_follow_up
            and not (sub.get("replaces") and sub.get("replaces") in answered_by_follow_up)
        ]

    def answered(self) -> list[SubQuery]:
        """Queries with a supported finding of their own, in the order their findings came."""
        return [self.sub_queries[q] for q, f in self.findings.items() if f.get("supported")]

    def answer_of(self, qid: str) -> str | None:
        """The supported answer to ``qid``, or to the follow-up that replaced it."""
        finding = self.findings.get(qid)
        replaced_by = finding.get("superseded_by") if finding else None
        if replaced_by:
            return self.answer_of(replaced_by)
        if finding and finding.get("supported"):
            return finding["finding"]
        for other, sub in self.sub_queries.items():
            if sub.get("replaces") == qid and self.supported(other):
                return self.findings[other]["finding"]
        return None

    def settled(self, qid: str) -> bool:
        """A needed query that a waiting one may build on: it has a supported finding (its own
        or a follow-up's), or no findings call was made for it (the findings switch off, or the
        call skipped for the budget), so there is no finding to wait for."""
        finding = self.findings.get(qid)
        skipped = bool(finding and finding.get("skipped"))
        return self.answer_of(qid) is not None or skipped

    def supported_findings(self) -> list[Finding]:
        """The findings the answer step may lean on, in query order."""
        out = []
        for sub in self.active():
            finding = self.findings[sub["id"]]
            if finding.get("supported"):
                out.append(Finding(sub["query"], finding["finding"], tuple(finding["sources"])))
        return out

    # ------------------------------------------------------------------ the chain

    def spelled_out(self, sub: SubQuery) -> SubQuery:
        """``sub`` with each ``#n`` filled by that query's answer (``queries.spell_out``)."""
        return spell_out(sub, self.sub_queries, self.answer_of)

    def ready(self) -> tuple[list[SubQuery], list[str], list[str]]:
        """(queries now ready to search, ids still waiting, the waiting ids that are blocked).

        A waiting query is ready when every query it needs has been searched and answered (by
        its own finding or a follow-up's). It is blocked when a query it needs was searched and
        found nothing: it stays unsearched until a follow-up answers that query, and never goes
        out with the missing answer's words in its place (such hops found only wrong findings:
        docs/architecture.md). An open chain's answer reads the question's own retrieval
        instead (``planner.answer``)."""
        ready, still, blocked = [], [], []
        for qid in self.waiting:
            sub = self.sub_queries[qid]
            needs = sub.get("needs", [])
            if not all(need in self.findings for need in needs):
                still.append(qid)
            elif all(self.settled(need) for need in needs):
                ready.append(self.spelled_out(sub))
            else:
                still.append(qid)
                blocked.append(qid)
        return ready, still, blocked

    def found_everything(self) -> bool:
        """Every searched query has a supported finding (its own or a follow-up's) and no
        planned query waits."""
        return bool(self.findings) and not self.unanswered() and not self.waiting

    def nameless(self) -> list[str]:
        """The searched queries that name nothing (``queries.names_nothing``): no name, number,
        quoted title or ``#n``, such as "year of overlap" or "originates from"."""
        return [
            sub["query"] for sub in self.active() if names_nothing(sub["query"], self.question.text)
        ]

    def resolved(self) -> bool:
        """The plan found everything (``found_everything``) and every query it searched names
        something: the one rule of a resolved plan, which the answer step reads
        (``answer.choose_mode``) and the result reports (``citation_check.plan_resolved``).

        A query that names nothing does not resolve a plan, even with a finding ("year of
        overlap" found "2010"; such plans scored below one-call RAG: docs/architecture.md)."""
        return self.found_everything() and not self.nameless()

    def whole(self) -> bool:
        """Does the plan cover the question? A question of one fact is covered by one query; a
        chain or a comparison needs two or more; a 4-hop question planned as one query keeps
        the wider context."""
        return self.shape == "single" or len(self.active()) >= 2

    def needed(self, qid: str) -> bool:
        """Whether a planned query's answer is filled into another query (``#1``)."""
        return any(qid in q.get("needs", []) for q in self.sub_queries.values())

    def hops(self) -> list[Hop]:
        """Every searched query as a link of its chain (``agent.checks.chains``)."""
        return [
            Hop(
                id=qid,
                needs=tuple(sub.get("needs") or ()),
                replaces=sub.get("replaces"),
                answer=self.findings[qid]["finding"] if self.supported(qid) else None,
                superseded=bool(self.findings[qid].get("superseded_by")),
            )
            for qid, sub in self.sub_queries.items()
            if qid in self.findings
        ]

    def focus(self) -> str:
        """What the answer step's passages are trimmed around: the question and its queries."""
        queries = " ".join(q["query"] for q in self.sub_queries.values())
        return f"{self.question.text} {queries}"

    # ------------------------------------------------------------------ growing the plan

    def asked_keys(self) -> set[str]:
        """The normalized form of every query planned so far: nothing is asked twice."""
        return {q["key"] for q in self.sub_queries.values()}

    def follow_up(self, query: str, key: str, replaces: str | None, added: int = 0) -> SubQuery:
        """A follow-up query numbered after the plan's queries (and ``added`` others of its
        round), asking ``replaces`` again when it names one."""
        return SubQuery(
            id=f"q{len(self.sub_queries) + added + 1}",
            query=query,
            round=0,
            origin="supplement",
            key=key,
            needs=[],
            replaces=replaces,
        )

    def is_question_itself(self, subs: list[SubQuery]) -> bool:
        """A plan of one query that is the question as written."""
        return [q["key"] for q in subs] == [query_key(self.question.text)]

    def reports(self) -> list[SubQueryReport]:
        """Every planned query as the result reports it (``AskResult.sub_queries``), in plan
        order: its searches, fused passages and finding (empty for one never searched)."""
        reports = []
        for qid, sub in self.sub_queries.items():
            finding = self.findings.get(qid)
            reports.append(
                SubQueryReport(
                    id=qid,
                    query=sub["query"],
                    round=sub["round"],
                    origin=sub["origin"],  # type: ignore[arg-type]  # "decompose" | "supplement"
                    searches=[dict(r) for r in self.records_of(qid)],
                    passage_ids=list(self.fused.get(qid, [])),
                    summary=finding.get("finding", "") if finding else "",
                    summary_sources=list(finding.get("sources", [])) if finding else [],
                    answered=bool(finding and finding.get("answered")),
                    summary_skipped=bool(finding and finding.get("skipped")),
                    proposed=finding.get("proposed", "") if finding else "",
                    needs=list(sub.get("needs", [])),
                    replaces=sub.get("replaces"),
                    superseded_by=finding.get("superseded_by") if finding else None,
                )
            )
        return reports

    # ------------------------------------------------------------------ writing the plan
    # The nodes write the plan's records through these, never by hand: what a query or a
    # finding record holds, and how a round is sent, is written here once. Each returns the
    # state update (JSON, as a thread is checkpointed); the nodes' inputs are not changed.

    @staticmethod
    def sent(subs: Iterable[SubQuery], rnd: int) -> list[SubQuery]:
        """``subs`` as searched in round ``rnd`` (a query waits with round 0)."""
        out: list[SubQuery] = []
        for sub in subs:
            copy: SubQuery = {**sub, "round": rnd}
            out.append(copy)
        return out

    @staticmethod
    def first_round(ready: list[SubQuery], waiting: list[SubQuery]) -> dict[str, Any]:
        """The state update of a new plan: ``ready`` searched in round 1, ``waiting`` held
        until the answers they need are known (``ready()``)."""
        sent = Plan.sent(ready, 1)
        return {
            "round": 1,
            "sub_queries": {q["id"]: q for q in [*sent, *waiting]},
            "pending": [q["id"] for q in sent],
            "waiting": [q["id"] for q in waiting],
        }

    @staticmethod
    def next_round(rnd: int, new: list[SubQuery], waiting: Iterable[str]) -> dict[str, Any]:
        """The state update that searches ``new`` in round ``rnd`` (planned hops now ready, or
        follow-ups: ``follow_up``), the hops in ``waiting`` still held."""
        sent = Plan.sent(new, rnd)
        return {
            "round": rnd,
            "sub_queries": {q["id"]: q for q in sent},
            "pending": [q["id"] for q in sent],
            "waiting": list(waiting),
        }

    @staticmethod
    def new_finding(
        sub: SubQuery,
        span: str,
        sources: list[str],
        *,
        supported: bool,
        answered: bool,
        skipped: bool,
    ) -> FindingRecord:
        """A query's finding as the state keeps it: ``finding`` is the span only when
        supported, ``proposed`` what the model said either way (the trace shows both), and no
        follow-up has replaced it yet (``superseded``)."""
        return {
            "id": sub["id"],
            "query": sub["query"],
            "finding": span if supported else "",
            "proposed": span,
            "sources": sources,
            "answered": answered,
            "supported": supported,
            "skipped": skipped,
            "superseded_by": None,
        }

    def superseded(
        self, subs: Iterable[SubQuery], new: Mapping[str, FindingRecord]
    ) -> dict[str, FindingRecord]:
        """The earlier findings a supported follow-up among ``subs`` (its finding in ``new``)
        replaces: from then on only the follow-up's counts (``active``, ``answer_of``)."""
        replaced: dict[str, FindingRecord] = {}
        for sub in subs:
            old = sub.get("replaces")
            if old and new[sub["id"]]["supported"] and old in self.findings:
                record: FindingRecord = {**self.findings[old], "superseded_by": sub["id"]}
                replaced[old] = record
        return replaced

    def findings_update(
        self,
        subs: list[SubQuery],
        new: Mapping[str, FindingRecord],
        fused: Mapping[str, list[Hit]],
    ) -> dict[str, Any]:
        """The state update of a round's findings: each of ``subs``' finding (``new``), the
        earlier findings their follow-ups replace (``superseded``), each query's fused
        passages (ids, best first) and the passages themselves."""
        return {
            "findings": {**new, **self.superseded(subs, new)},
            "fused": {qid: [h.id for h in hits] for qid, hits in fused.items()},
            "passages": {h.id: h.to_json() for hits in fused.values() for h in hits},
        }
