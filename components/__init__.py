"""gpu-training: Pulumi components that provision cloud GPU training environments."""
