"""Packing an image data set into verified tar shards, and uploading it to a stack's bucket.

source.py lists the samples (a class-per-subfolder folder, or a list file), shards.py writes one
shard and reads a manifest, packer.py runs the whole pack (parallel, resumable, bad images
reported), upload.py puts the shards and then the manifest into the bucket. The format is in
docs/data.md; the node agent stages it (node_agent/staging.py) and the example trainer reads it
(examples/cnn/cnn_shards.py).
"""
