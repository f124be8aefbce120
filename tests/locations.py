"""Where the tests' own files and the repository are, for test modules at any depth of the
folder that mirrors the packages (``tests/agent/planner/...``): ``TESTS / "data"`` instead of a
path counted up from a module's own file."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
