"""A job on a managed training platform (components/platforms/: ModelArts, PAI-DLC): the code uploaded to the
stack's bucket prefix and one job submitted through the platform's job API. The platform owns the machines:
no nodes, no node endpoints, no user-data, no VM image; the job ends at its own time limit (maxHours), and the
tools ask the job API, not markers, whether it has ended."""
from __future__ import annotations

from typing import Mapping

from components.targets.base import DeclaredTarget, Placeholder, expiry_text


class PlatformTarget(DeclaredTarget):
    def selects(self, spec) -> bool:
        return spec.platform is not None

    def keeps_billing(self, spec) -> list:
        """The code the program uploads and the data the job writes; a dedicated pool is yours and bills on. The
        job itself bills while it runs and is ended by its time limit, or stopped by `gpu-training down`."""
        from components import billing
        from components.providers.profile_records import Lingering, UPLOADED_WHAT

        code = next((item for item in spec.profile.billing.keeps_billing(spec) if item.what == UPLOADED_WHAT), None)
        items = [] if code is None else [Lingering("training code the program uploads", code.type, code.size,
                                                   code.basis, code.rate, code.until, prices=code.prices)]
        items.append(billing.checkpoint_data(spec, "checkpoints and logs the job wrote"))
        if spec.platform.pool == "dedicated":
            items.append(Lingering(f"dedicated pool {spec.platform.pool_id}", None, "your pool",
                                   "the platform's pool price: yours, job or no job", None,
                                   "you delete it (the stack creates none and deletes none)"))
        return billing.priced(spec, items)

    def classified_types(self, spec) -> dict[str, str]:
        """Resource types of its plan the provider's billing table does not list, with why (billing.unclassified)."""
        return {JOB_TYPE: "the training job: bills while it runs; its time limit (maxHours) or `gpu-training down`"
                          " ends it"}

    def placeholders(self, spec) -> list[Placeholder]:
        """Stack values that are still the shipped examples: the bucket, and the platform's ids (platform.yaml
        examples), each of which the job API would refuse or, worse, accept for someone else's account."""
        found = []
        example_bucket = spec.profile.object_storage.example_bucket
        if example_bucket and spec.checkpoint.bucket == example_bucket:
            found.append(Placeholder("checkpoint.bucket", spec.checkpoint.bucket,
                                     "the example the stack files ship with: name a bucket you own in the region"))
        values = {"workspaceId": spec.platform.workspace_id, "poolId": spec.platform.pool_id,
                  "resourceQuotaId": spec.platform.quota_id}
        for name, example in (spec.platform.offer.data.get("examples") or {}).items():
            if values.get(name) is not None and values[name] == str(example):
                found.append(Placeholder(f"platform.{name}", values[name],
                                         f"the example id the stack files ship with: {spec.platform.offer.data['requiresWhy'].get(name, 'name yours')}"))
        return found

    def preview_lines(self, spec, outputs: Mapping) -> list[str]:
        platform = spec.platform
        offer = platform.offer
        pool = "the public pool" if platform.pool == "public" else f"your dedicated pool {platform.pool_id}"
        lines = [f"runs as: {offer.display_name} on {pool}: {spec.nodes} x {spec.instance.name}"
                 f" ({spec.gpus_per_node}x {spec.gpu.name}), {spec.billing}; the platform owns the machines (no nodes,"
                 " node endpoints, user-data or VM image in this plan)",
                 f"image: {platform.image}" + (f" (the default: {offer.data['image']['source']})"
                                               if platform.image == offer.default_image else ""),
                 f"time limit: the platform stops the job {spec.max_hours:g} h after it starts"
                 f" ({offer.data['maxRunning']['field']}); expires at {expiry_text(outputs)}, the submit time + maxHours"
                 " (a job that waits in a queue first ends that much later)"]
        lines.extend((offer.data.get("notes") or {}).get(platform.pool, ()))
        for need in offer.data.get("prerequisites") or ():
            lines.append(f"before the first job: {need['what']} ({need['source']})")
        lines.extend(p.line() for p in self.placeholders(spec))
        return lines


JOB_TYPE = "pulumi-python:dynamic:Resource"  # components/platforms/training.py TrainingJob (a dynamic resource)
TARGET = PlatformTarget(kind="platform", description="a platform job", run="job",
                        ending="the platform stops the job after maxHours", node_endpoints=False, data_disks=False,
                        teardown_runs_program=False, component_class="components.platforms.training:PlatformTraining")
