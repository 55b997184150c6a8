"""The Kubernetes path (docs/kubernetes.md): a managed GPU cluster and a gang-scheduled training Job.

spec.py holds the `kubernetes:` section's record, KubernetesSpec (components/validation/kubernetes.py
validates the section into it); manifests.py builds the Kubernetes objects as plain dicts (schema-checked
by the tests); workload.py registers them through pulumi-kubernetes; training.py composes the provider's
cluster part (components/providers/<cloud>/cluster.py) with them.
"""
