"""Make hoptree's QuALITY subset from the release file, by the rule PROVENANCE.md states.

    python evals/data/quality/make_subset.py QuALITY.v1.0.1.htmlstripped.dev \
        --articles 10 > evals/data/quality/quality_dev_subset.jsonl

Rule: the first N distinct articles of the file in file order, each with the questions of every
question set (writer) the file holds for it, sets in file order. The release stores one set per
line and repeats the article on each; the subset keeps one line per article with the fields a
run reads (article, its bibliographic fields, and per question its id, text, options, gold label
and HARD flag), dropping the annotators' validation records. Run on the release file, it
reproduces the committed subset byte for byte (PROVENANCE.md gives the sha256 to compare).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

ARTICLE_FIELDS = ("article_id", "title", "author", "year", "source", "topic", "url", "license")
QUESTION_FIELDS = ("question_unique_id", "question", "options", "gold_label", "difficult")


def subset(sets: Iterable[dict[str, Any]], articles: int) -> list[dict[str, Any]]:
    """The first ``articles`` articles of ``sets`` (release records, file order) with all
    their sets' questions."""
    chosen: dict[str, dict[str, Any]] = {}
    for record in sets:
        article_id = str(record["article_id"])
        row = chosen.get(article_id)
        if row is None:
            if len(chosen) >= articles:
                continue  # a later set of a chosen article may still follow
            row = {k: record[k] for k in ARTICLE_FIELDS if k in record}
            row["article_id"] = article_id
            row["set_unique_ids"] = []
            row["article"] = record["article"]
            row["questions"] = []
            chosen[article_id] = row
        elif row["article"] != record["article"]:
            raise ValueError(f"article {article_id} differs between its sets")
        row["set_unique_ids"].append(record["set_unique_id"])
        row["questions"] += [{k: q[k] for k in QUESTION_FIELDS} for q in record["questions"]]
    return list(chosen.values())


def dump(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def read_sets(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.strip():
            yield json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", help="QuALITY.v1.0.1.htmlstripped.dev")
    parser.add_argument("--articles", type=int, default=10)
    args = parser.parse_args()
    with open(args.release, encoding="utf-8") as fh:
        sys.stdout.write(dump(subset(read_sets(fh), args.articles)))


if __name__ == "__main__":
    main()
