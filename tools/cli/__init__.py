"""The `gpu-training` command line (docs/cli.md): one entry point over the project's tools and scripts.

main.py holds the click group and its subcommands; each imports what it needs inside its own
function, so `gpu-training --help` loads click and nothing else (bench/cli_startup.py measures it).
"""
