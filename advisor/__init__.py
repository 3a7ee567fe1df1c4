"""advisor: explain why a network's numbers drifted after migration.

The pipeline has five stages, one package each:
ingest (files -> ComparisonTable), facts (table -> facts), engine (rule packs fire through
durable_rules -> Diagnosis), report (Diagnosis -> html/md/json/txt) and cli.
"""

__version__ = "0.1.0"
