"""What a person runs, behind the thin CLIs in scripts/: the offline preview's mock engine (mockrun),
stack files (stackfiles), run.py's watch-and-destroy logic (runlib), the sizing advisor (advisor) and
catalog price editing (catalog_prices). Nothing here is imported by the Pulumi program or the node."""
