"""What a person runs, behind the thin CLIs in scripts/: the offline preview's mock engine (mockrun),
stack files (stackfiles), run.py's watch-and-destroy logic (runlib), the sizing advisor (advisor),
catalog price editing (catalog_prices) and the scripts' shared argparse scaffold (cliargs). Nothing here is imported by the Pulumi program or the node."""
