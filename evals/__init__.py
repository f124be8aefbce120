"""Dataset loaders, metrics, the evaluation runner and its reports."""
