"""Low-level searchers and the indexes they search. Models arrive by injection (langchain-core
interfaces); this package never imports ``agent``."""
