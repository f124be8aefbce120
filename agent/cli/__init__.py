"""The ``hoptree`` command line: ``main`` holds the root app and mounts one module per command
(``python -m agent.cli`` runs it too)."""
