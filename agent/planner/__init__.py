"""The planner: a LangGraph graph that decomposes a question, searches, keeps supported
findings, verifies and answers (``graph`` wires the nodes, ``state`` types what they share,
``trace`` reports what they do)."""
