"""gpu-training node agent: runs the training job on a GPU node, syncs checkpoints, survives spot
preemption, reports utilisation and releases the node when the work is safely stored.

See docs/agent.md and docs/node-config.md. Run as `python -m node_agent --config FILE`.
"""
