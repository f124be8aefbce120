"""Checks of an answer that cost no model call: citations, evidence, chains of hops and
"A or B?" comparisons."""
