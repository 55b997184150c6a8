"""Baidu AI Cloud: the provider package for the `baiducloud` cloud (started from components/providers/_template).

scripts/new_provider.py made this package and its registry line. Every module below says what it
must provide and raises or refuses until it does; docs/providers.md is the checklist, and
tests/providers/test_contract.py with tests/test_conformance.py tell what is still missing.
"""
