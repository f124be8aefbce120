"""Token counting for sizing leaves, cluster budgets and retrieval budgets.

The builder takes any ``Callable[[str], int]``; pass a real tokenizer when one is at hand. The
default needs no download (tiktoken fetches its tables from the internet on first use, which
fails offline): it counts words and punctuation marks with a regex and scales the count by
``SUBWORD_PER_REGEX_TOKEN``. The factor was measured on the shared longdoc texts against
MiniLM's WordPiece tokenizer (1.06 on the QuALITY article, 1.09 on a NarrativeQA book), so the
estimate approximates subword tokens and stays on the safe (high) side for budgets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

TokenCounter = Callable[[str], int]

SUBWORD_PER_REGEX_TOKEN = 1.1
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def regex_token_count(text: str) -> int:
    """Words and punctuation marks, unscaled."""
    return len(_TOKEN.findall(text))


def approx_token_count(text: str) -> int:
    """Approximate subword tokens: regex tokens times the measured factor, rounded up."""
    return math.ceil(regex_token_count(text) * SUBWORD_PER_REGEX_TOKEN)


def truncate_to_tokens(text: str, max_tokens: int, count: TokenCounter) -> tuple[str, bool]:
    """Cut ``text`` at a word boundary so ``count`` says it fits; (text, was_cut).

    Binary search over the word list: ``count`` may be any monotone counter, not only ours.
    """
    if count(text) <= max_tokens:
        return text, False
    words = text.split()
    lo, hi = 0, len(words)
    for _ in range(64):  # log2 of any realistic word count; the loop always converges sooner
        if lo >= hi:
            break
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]), True
