"""The storage part's cloud-neutral policy: `StorageComponent`, which every cloud's storage.py subclasses.

What it decides, once for every cloud: the checkpoint bucket is made only when `spec.checkpoint.create`
asks for it, and retained on delete (checkpoints must outlive the stack: destroy leaves the bucket and
its data); every file of `all_artifacts(spec)` is uploaded after the bucket, one object each, named
`<name>-file-<index>`, with an input that depends on the file's content so that a changed file is a
changed input (`pulumi up` uploads it again); the shared file system comes last and gives the mount
address. The boot payload (components/bootstrap/render.py: what the loader in user-data fetches) is an
object whose content the program makes, uploaded after the bucket too, through `parts().put_text`. What
each cloud decides is in four small hooks: how it makes the bucket, one object from a file, one object
from text, and the shared file system (docs/providers.md, "storage.py").
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import pulumi

from components.artifacts import Artifact, all_artifacts
from components.providers.part_records import NetworkParts, PartContext, StorageParts

# (spec, resource name, artifact, options) -> the cloud's object resource: one file in the bucket.
PutObject = Callable[[Any, str, Artifact, pulumi.ResourceOptions], pulumi.Resource]


def upload(spec: Any, name: str, artifacts: list[Artifact], put: PutObject, opts: pulumi.ResourceOptions) -> list:
    """One object per file, `<name>-file-<index>` in the artifacts' order: the VM path's storage part and a
    platform stack's code upload (components/platforms/training.py) name them the same way."""
    return [put(spec, f"{name}-file-{index}", artifact, opts) for index, artifact in enumerate(artifacts)]


class StorageComponent(pulumi.ComponentResource):
    """A storage part's component (`gpu-training:<cloud>:Storage`): the policy above, the cloud's hooks below.

    Hooks see `self.child` (options parenting a resource under the component) and `self.tags` (the
    stack's tags as a plain dict)."""

    def __init__(self, cloud: str, spec: Any, ctx: PartContext, network: Optional[NetworkParts]):
        super().__init__(f"gpu-training:{cloud}:Storage", f"{ctx.name}-storage", None, ctx.opts())
        self.child = pulumi.ResourceOptions(parent=self)
        self.tags = dict(ctx.tags)
        self.spec = spec
        bucket_dependency = []
        if spec.checkpoint.bucket and spec.checkpoint.create:
            # Checkpoints must outlive the stack: destroy leaves the bucket (and its data) in place.
            bucket_dependency = [self.checkpoint_bucket(
                spec, f"{ctx.name}-checkpoints", pulumi.ResourceOptions(parent=self, retain_on_delete=True))]
        self.after_bucket = pulumi.ResourceOptions(parent=self, depends_on=bucket_dependency)
        self.objects = upload(spec, ctx.name, all_artifacts(spec), self.put_object, self.after_bucket)
        self.address = self.shared_fs(spec, ctx, network)
        # None is no output at all (the SDK leaves it out): a cloud without a shared FS registers none.
        self.register_outputs({"sharedFsAddress": self.address})

    def parts(self) -> StorageParts:
        return StorageParts(shared_fs_address=self.address, put_text=self._put_text)

    def _put_text(self, name: str, text: pulumi.Output) -> pulumi.Resource:
        # Its key is its content's sha256: a changed node config is a new object. The old one stays (retained on
        # delete), so a node that boots from older user data (a running node's, kept by ignoreChanges, or a pool
        # node launched before its template moved) still finds the payload it names.
        return self.put_text(self.spec, name, text,
                             pulumi.ResourceOptions.merge(self.after_bucket, pulumi.ResourceOptions(retain_on_delete=True)))

    # -- what a cloud fills in
    def checkpoint_bucket(self, spec: Any, name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        """The checkpoint bucket `spec.checkpoint.bucket`, encrypted and versioned, with these options."""
        raise NotImplementedError(f"{type(self).__module__}: this cloud does not create the checkpoint bucket")

    def put_object(self, spec: Any, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        """One file in `spec.checkpoint.bucket` at `artifact.key`, with an input that changes with its content."""
        raise NotImplementedError(f"{type(self).__module__}: put_object is not written yet")

    def put_text(self, spec: Any, name: str, text: pulumi.Output, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        """One object in `spec.checkpoint.bucket` from `text` (an Output of TextObject: key, content and its
        digests, e.g. `text.key`, `text.md5_base64`), with an input that changes with its content."""
        raise NotImplementedError(f"{type(self).__module__}: put_text is not written yet")

    def shared_fs(self, spec: Any, ctx: PartContext, network: Optional[NetworkParts]) -> Optional[pulumi.Output]:
        """The shared file system `spec.shared_storage` asks for and its mount address; None without one."""
        return None
