"""Building and storing the RAPTOR tree. Models arrive by injection; never imports ``agent``
or ``searchers``."""
