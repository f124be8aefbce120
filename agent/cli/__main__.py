"""``python -m agent.cli``: the ``hoptree`` command line."""

from agent.cli.main import main

if __name__ == "__main__":
    main()
