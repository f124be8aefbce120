"""Check the documentation questions against the installed manual; refresh their gold titles.

``apache_httpd_questions.jsonl`` holds questions over the Apache HTTP Server 2.4 manual as Debian's
``apache2-doc`` package installs it (``README.md`` beside ``evals/data``). Each row names the
facts its answer needs as ``metadata.evidence``: the page (relative to the manual's English root),
the fact in a few words, a short quote of the page that states it, and optionally an ``anchor``
that must stand in the same passage as the quote (the directive a ``Compatibility:`` line belongs
to). This script reads every named page exactly as ``hoptree index build`` does
(``searchers.corpus.read_document``) and checks that

- every quote (and its anchor) is found in one passage of its page;
- every question needs two or more pages;
- the row's ``metadata.supporting_facts.title`` are the titles the index gives the passages that
  hold the quotes (what ``hoptree eval run`` compares retrieved titles with for gold recall), and
  ``metadata.context`` holds those titles with the quotes as their sentences;
- and it warns (without failing) when a page outside a question's evidence shares a title with
  one of its supporting passages: gold recall then counts that page's passages as gold too (the
  index titles some pages by their file name or by a comment of a configuration example).

With ``--write`` it rewrites ``supporting_facts`` and ``context`` from what it read (after a change
of the HTML converter, say) instead of failing on a difference. Usage, from the repository root::

    .venv/bin/python evals/data/docs/check_questions.py /usr/share/doc/apache2-doc/manual/en
    .venv/bin/python evals/data/docs/check_questions.py DOC_ROOT --write

Exit 0 when everything holds, 1 otherwise (each problem printed on its own line).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[3]
QUESTIONS = Path(__file__).with_name("apache_httpd_questions.jsonl")


def norm(text: str) -> str:
    """Text as compared: markdown marks (escapes, code ticks, emphasis, table pipes and rules,
    list dashes) dropped, whitespace collapsed, case folded; the converter writes tables and code
    as markdown while the quotes were taken from the rendered page."""
    text = text.replace("\\", "")
    text = re.sub(r"[`*|]", " ", text)
    text = re.sub(r"-{3,}", " ", text)
    text = re.sub(r"(?<!\S)-(?!\S)", " ", text)  # a list item's dash
    return " ".join(text.split()).casefold()


def read_pages(root: Path) -> dict[str, list[tuple[str, str]]]:
    """Every HTML page under ``root`` as ``hoptree index build`` reads it: (title, text) passages
    by page path relative to ``root``."""
    sys.path.insert(0, str(REPOSITORY))
    from searchers.corpus import read_document

    pages: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root).as_posix()
        pages[rel] = [(p.title, norm(p.text)) for p in read_document(path)]
    return pages


def check_row(
    row: dict[str, Any], pages: dict[str, list[tuple[str, str]]], owners: dict[str, set[str]]
) -> tuple[list[str], list[str], list[str], dict[str, list[str]]]:
    """Problems and warnings of one row, its supporting titles in evidence order and each title's
    quotes."""
    qid = row.get("id", "?")
    problems: list[str] = []
    warnings: list[str] = []
    titles: dict[str, list[str]] = {}
    evidence = row["metadata"]["evidence"]
    if len({e["page"] for e in evidence}) < 2:
        problems.append(f"{qid}: its evidence names fewer than two pages")
    for item in evidence:
        page, quote, anchor = item["page"], item["quote"], item.get("anchor")
        if page not in pages:
            problems.append(f"{qid}: no page {page}")
            continue
        want = norm(quote)
        found = [
            title
            for title, text in pages[page]
            if want in text and (anchor is None or norm(anchor) in text)
        ]
        if not found:
            where = f" beside {anchor!r}" if anchor else ""
            problems.append(f"{qid}: {page} has no passage with {quote!r}{where}")
            continue
        titles.setdefault(found[0], []).append(quote)
    gold_pages = {e["page"] for e in evidence}
    for title in titles:
        others = owners[title] - gold_pages
        if others:
            warnings.append(f"{qid}: title {title!r} is also used by {sorted(others)}")
    return problems, warnings, list(titles), titles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("doc_root", type=Path, help="the manual's English root (…/manual/en)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--write", action="store_true", help="rewrite titles and context")
    args = parser.parse_args(argv)
    if not args.doc_root.is_dir():
        print(f"{args.doc_root}: no such directory (is apache2-doc installed?)", file=sys.stderr)
        return 1
    rows = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines() if line]
    pages = read_pages(args.doc_root)
    owners: dict[str, set[str]] = defaultdict(set)
    for page, passages in pages.items():
        for title, _text in passages:
            owners[title].add(page)
    problems: list[str] = []
    warnings: list[str] = []
    for row in rows:
        found, shared, titles, quotes = check_row(row, pages, owners)
        problems += found
        warnings += shared
        metadata = row["metadata"]
        facts = {"title": titles, "sent_id": [0] * len(titles)}
        context = {"title": titles, "sentences": [quotes[t] for t in titles]}
        if args.write:
            metadata["supporting_facts"], metadata["context"] = facts, context
        elif metadata.get("supporting_facts", {}).get("title") != titles:
            problems.append(f"{row['id']}: supporting titles differ from the index's: {titles}")
    for warning in warnings:
        print(f"warning: {warning}")
    for problem in problems:
        print(problem)
    if args.write:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        args.questions.write_text(text, encoding="utf-8")
    print(
        f"{len(rows)} questions, {len(pages)} pages read, {len(problems)} problems, "
        f"{len(warnings)} warnings"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
