"""`python -m tools.cli`: the same as the `gpu-training` console script."""
from tools.cli.main import main

main()
