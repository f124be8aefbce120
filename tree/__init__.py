"""Building and storing the RAPTOR tree. Models arrive by injection; never imports ``agent``
or ``searchers``.

Modules, in the order data flows through them:

- ``documents``: long documents (text/markdown, QuALITY jsonl, L-CiteEval NarrativeQA json)
  -> ``SourceDocument``;
- ``leaves``: sentence-preserving ~100-token chunks, or semantic segments (cosine distance of
  adjacent sentences > 0.7); ``tokens``: the injected token counter and its offline default;
- ``clustering``: the ``Clusterer`` protocol, ``GMMClusterer`` (RAPTOR: UMAP + BIC-chosen
  Gaussian mixture, global then local, soft membership) and ``LeidenClusterer`` (enhanced
  RAPTOR: k-NN graph, layer-adaptive k and resolution), both kept within the summarizer budget;
- ``summarize``: one ``tree_summary`` call per cluster with timeout, retries and fallback;
- ``journal``: the fsync'd JSON-lines record that makes a killed build resumable;
- ``build``: ``TreeConfig`` and ``TreeBuilder`` (``build``, ``add``): the layer loop;
- ``store``: ``Tree``/``TreeNode`` and the JSON + NumPy store (``save_tree``, ``load_tree``,
  ``tree_report``).

Collections: one store holds one tree over many documents (``mode="single"``) or one tree per
document (``mode="per_document"``, each document entry naming its roots); retrieval can filter
by document either way. See ``tree.build`` for exactly what adding documents recomputes.
"""
