"""The high-level searcher and the composition root: settings, model wiring, the planner graph,
the HTTP API and the ``hoptree`` CLI. The only package that builds concrete models."""
