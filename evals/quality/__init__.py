"""QuALITY: multiple-choice questions over long articles, run through a stack of its own on top
of the open-domain one (data, corpora, reader, pipelines, runner, report, compare)."""
