"""__Cloud__: the provider package for the `__cloud__` cloud (started from components/providers/_template).

scripts/new_provider.py made this package and its registry line. Every module below says what it
must provide. The parts (network, identity, storage, compute, cluster) declare placeholder resources
(components/providers/placeholder.py) that the mock engine plans and a real `pulumi up` refuses; the
profile refuses what is not written yet (data_disk, object_store, and `rules.unsupported`: spot, the shared
file system, Kubernetes). docs/providers.md is the checklist, and tests/providers/test_contract.py with
tests/test_conformance.py tell what is still missing.
"""
