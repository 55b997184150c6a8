"""The `gpu-training` commands' bodies; tools/cli/main.py is their command line."""
