"""The pieces of scripts/run.py (up -> watch -> destroy): pure marker logic and destroy decisions, the
object-storage reader, the watcher, the thin Pulumi Automation layer, and the driver that joins them.
"""
