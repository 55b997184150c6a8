"""Entry point of the gpu-training Pulumi program (see components/program.py)."""
from components.program import main

main()
