"""Stack config -> one frozen, validated Spec. Every problem is collected before any resource exists.

`build_spec(config, stack=...)` takes the flat Pulumi config map (`{"gpu-training:tier": "entry",
"alicloud:region": "cn-hangzhou", ...}`; values as the engine passes them: strings, JSON for lists
and objects, or native values) and returns a Spec, or raises SpecError listing every error, each
naming the dotted key, the bad value and what is allowed, with a "did you mean" for typos.
Warnings and notes ride along in `Spec.findings`.

The sections' rules (sections/) read raw values; the whole-spec checks here render the node config and
the user-data the way `pulumi up` does, so this is the one module of validation that imports
nodeconfig, egress and the bootstrap's renderer.
"""
from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace
from typing import Any, Mapping, Optional

import components.validation.kubernetes as kubernetes_settings
import components.validation.namespaces as namespaces
from components import cidrs as cidr_lists
from components import egress, providers, schema
from components.catalog import Catalog, load_catalog
from components.nodeconfig import EXPIRY_STANDIN, build_node_config
from components.platforms import offer as platform_settings
from components.providers.profile_records import ProviderProfile
from components.spec import MAX_NODES, CheckpointSpec, Spec, SpecError
from components.tiers import gpus, tiers
from components.validation.read import choice, Problems, read_namespace
from components.validation.sections.access import check_login_and_image, check_ssh
from components.validation.sections.cloud import (check_capabilities, check_placement, check_tags,
                                                  platform_offer, resolve_region)
from components.validation.sections.compute import (check_gpu_fits_tier, check_instance, check_nodes,
                                                    check_spot_price, check_spot_zones, pool_types,
                                                    resolve_instance)
from components.validation.sections.failover import check_failover
from components.validation.sections.storage import (check_checkpoint, check_data, check_data_disk,
                                                    check_data_fits_disk, check_dataset, check_shared_storage,
                                                    size_disk_for_data)
from components.validation.sections.workload import check_bootstrap, check_lifetime, check_train


def build_spec(config: Mapping[str, Any], *, stack: str, project: str = "gpu-training",
               catalog: Optional[Catalog] = None) -> Spec:
    """Validate `config`; `catalog` replaces the provider's catalog file (what-ifs with other prices).

    Each section has its own checker (above): it records its problems and returns the value to use.
    """
    problems = Problems()
    values = read_namespace(config, problems)
    data = check_data(values, problems)

    provider = choice(values, "provider", providers.names(), problems, schema.BY_NAME["provider"].default)
    tier_table = tiers()
    tier_name = choice(values, "tier", list(tier_table), problems, schema.BY_NAME["tier"].default)
    billing = choice(values, "billing", ("on-demand", "spot"), problems, "on-demand")
    namespaces.check(config, provider, project, problems)
    if provider is None or tier_name is None:
        raise SpecError(problems.items)
    profile = providers.profile(provider)
    tier = tier_table[tier_name]
    # A platform stack is judged by the platform's declared limits and its flavors instead of the VM ones.
    offer = platform_offer(values, profile)
    if offer:
        check_capabilities(values, offer.display_name, offer.unsupported, problems)
    else:
        check_capabilities(values, profile.display_name, profile.rules.unsupported, problems)
    region = resolve_region(config, profile, problems)

    # The price of a type is the one of the stack's region: never another region's (catalog.regional_price).
    catalog = catalog or (offer.catalog() if offer else load_catalog(provider, region or None))
    gpu, count, instance = resolve_instance(values, tier, gpus(), catalog, profile, problems)
    check_gpu_fits_tier(gpu, instance, tier, problems)
    nodes = check_nodes(values, tier, problems)
    if instance is not None and count is not None:
        check_instance(values, tier, instance, nodes, profile, problems)
    spot_cap = check_spot_price(values, instance, billing, problems)
    sized_for_data = size_disk_for_data(values, data, tier, problems)
    data_disk = check_data_disk(values, tier, profile, problems, sized_for_data)
    check_data_fits_disk(data, values.get("dataDiskGb", tier.data_disk_default_gb), problems)
    shared, shared_gb = check_shared_storage(values, tier, profile, problems)
    if offer is not None:  # the job mounts the stack's bucket prefix; no shared FS is created (docs/platforms.md)
        shared, shared_gb = "none", 0
    max_hours, idle = check_lifetime(values, problems)
    dataset = check_dataset(values, problems)
    check_login_and_image(values, None if offer else profile.node.image_ids, profile.display_name, problems)
    ssh = check_ssh(values, problems)
    checkpoint = check_checkpoint(values, profile, region, billing or "on-demand", problems)
    train = check_train(values, nodes, count or 1, problems)
    # A platform job runs the platform's image (CANN/CUDA inside): the node bootstrap's accelerator rules do not apply.
    bootstrap = check_bootstrap(values, None if offer else gpu, problems)
    tags = check_tags(values, profile, stack, project, tier_name, problems)
    spot_zones = check_spot_zones(values, billing, problems)
    check_placement(region, values.get("zone"), spot_zones, profile, problems)
    failover = check_failover(values, region, values.get("zone"), instance, catalog, profile, problems)
    kubernetes = _check_kubernetes(values, profile, region, max_hours, checkpoint, shared, ssh, problems)
    platform = (platform_settings.check(values["platform"], profile.platforms(), profile.display_name, max_hours,
                                        problems) if values.get("platform") is not None else None)

    if problems.has_errors or instance is None or gpu is None or count is None:
        if not problems.has_errors:  # defensive: never build a half-resolved spec
            problems.error("gpu", "could not resolve an instance type")
        raise SpecError(problems.items)

    pool = pool_types(instance, gpu, tier, catalog, values.get("datasetGb"), problems) if billing == "spot" \
        else (instance,)
    if billing == "spot" and len(pool) == 1 and not spot_zones and offer is None:
        problems.info("spotZones", f"the spot pool has one instance type ({instance.name}) in one zone;"
                      " list spotZones to give it more capacity to draw from")

    spec = Spec(
        project=project, stack=stack, provider=provider, profile=profile, region=region, tier=tier, gpu=gpu,
        gpus_per_node=count, nodes=nodes, instance=instance, pool_types=pool, billing=billing,
        spot_max_price=spot_cap, spot_fallback=bool(values.get("spotFallback", False)),
        zone=values.get("zone"), spot_zones=spot_zones, data_disk=data_disk,
        dataset_gb=dataset, shared_storage=shared, shared_storage_gb=shared_gb,
        ssh_allow_cidrs=ssh, allow_world_ssh=bool(values.get("allowWorldSsh", False)),
        ssh_public_key=values.get("sshPublicKey"), image=values.get("image"), max_hours=max_hours,
        idle_minutes=idle, keep=bool(values.get("keep", False)), checkpoint=checkpoint, train=train,
        bootstrap=bootstrap, tags=tags, findings=tuple(problems.items),
        public_egress=bool(values.get("publicEgress", schema.BY_NAME["publicEgress"].default)), data=data,
        kubernetes=kubernetes, platform=platform, failover=failover,
    )
    _check_resolved(spec, problems)
    if problems.has_errors:
        raise SpecError(problems.items)
    return replace(spec, findings=tuple(problems.items))


def _check_kubernetes(values: dict, profile: ProviderProfile, region: str, max_hours: float, checkpoint: CheckpointSpec,
                      shared: str, ssh: tuple[str, ...], problems: Problems) -> Optional[kubernetes_settings.KubernetesSpec]:
    """The `kubernetes:` section (components/validation/kubernetes.py) and the VM settings it cannot honour."""
    if values.get("kubernetes") is None:
        return None
    found = kubernetes_settings.check(values["kubernetes"], profile.kubernetes, problems, region=region,
                                      max_hours=max_hours)
    if found is None:
        return None
    if not checkpoint.bucket:
        problems.error("checkpoint.bucket", "not set; a Kubernetes stack's pods keep nothing between evictions:"
                       " checkpoints, markers and the agent itself live in this bucket")
    if shared != "none":
        problems.error("sharedStorage", f"{shared!r} is not mounted by the Kubernetes path yet; allowed: none (the"
                       " pods use the node's data disk and object storage; docs/kubernetes.md)")
    if ssh:
        problems.error("sshAllowCidrs", "the Kubernetes path opens no SSH to the nodes; use kubectl exec through"
                       " the API server (kubernetes.apiAllowCidrs); allowed: []")
    return found


def _check_resolved(spec: Spec, problems: Problems) -> None:
    """Rules on the whole resolved spec: the provider's own, egress, then the user-data budget; for a
    platform job, the platform's own rules instead (no VPC, no user-data: the platform runs the job)."""
    if spec.platform is not None:
        for key, message in spec.platform.offer.checks(spec):
            problems.error(key, message)
        problems.info("nodes", f"the plan needs this {spec.platform.offer.display_name} quota in {spec.region}:"
                      f" {spec.nodes} worker(s) of {spec.instance.name} ({spec.nodes * spec.gpus_per_node}"
                      f" {spec.gpu.name}); check the platform's quota before `pulumi up`")
        return
    for key, message in spec.profile.rules.checks(spec):
        problems.error(key, message)
    for key, message in spec.profile.rules.warnings(spec):
        problems.warning(key, message)
    _check_egress(spec, problems)
    _check_names(spec, problems)
    _check_scale(spec, problems)
    _check_shared_storage_use(spec, problems)
    if not problems.has_errors:
        _check_user_data_budget(spec, problems)


def _check_egress(spec: Spec, problems: Problems) -> None:
    """Every endpoint a node uses needs a route out of (or inside) the VPC (components/egress.py)."""

    for level, key, message in egress.findings(spec):
        getattr(problems, level)(key, message)


def _check_names(spec: Spec, problems: Problems) -> None:
    """Every name the program gives fits the cloud's limit (provider profile `naming.limits`); the stack
    name is in each, so a long stack name is the usual cause and the message says how long it may be."""
    for limit in spec.profile.naming.limits:
        name = limit.render(spec.stack, index=max(spec.nodes - 1, 0))
        if limit.min <= len(name) <= limit.max:
            continue
        room = limit.max - (len(name) - len(spec.stack))
        problems.error("stack", f"the stack name {spec.stack!r} makes the {limit.type.split(':')[-1]} {limit.input}"
                       f" {name!r} {len(name)} characters; {spec.profile.display_name} allows {limit.min}-{limit.max}"
                       f" ({limit.source}): use a stack name of at most {max(room, 0)} characters")


def _check_shared_storage_use(spec: Spec, problems: Problems) -> None:
    """A shared file system on a single-node tier shares nothing, and it bills until `pulumi destroy`
    (maxHours releases nodes only): a warning with what it bills, from the provider's keeps_billing data."""
    if spec.shared_storage == "none" or spec.tier.multi_node:
        return
    from components import billing

    without = {item.what for item in billing.keeps_billing(replace(spec, shared_storage="none", shared_storage_gb=0))}
    extra = [item for item in billing.keeps_billing(spec) if item.what not in without]
    bills = "; ".join(f"{item.what}: {item.size}, {item.basis}, rate {item.rate or 'unknown here'}" for item in extra)
    problems.warning("sharedStorage", f"{spec.shared_storage!r} on the {spec.tier.name} tier: a single node gains"
                     " nothing from a shared file system (the guide pairs one with the large tier's nodes), and it"
                     f" bills from `pulumi up` to `pulumi destroy`, after the node is gone ({bills or 'its capacity'});"
                     " allowed without this warning: sharedStorage: none")


def _check_scale(spec: Spec, problems: Problems) -> None:
    """Before anything is created: the subnets (sized from `nodes`, components/cidrs.py) fit the VPC, and
    the preview says what quota the plan needs, so a quota error does not stop `pulumi up` partway."""
    subnets = 1 + (len(spec.spot_zones) if spec.spot else 0)
    if not cidr_lists.subnets_fit(cidr_lists.STACK_VPC, subnets, spec.nodes):
        most = max((n for n in range(1, MAX_NODES + 1) if cidr_lists.subnets_fit(cidr_lists.STACK_VPC, subnets, n)),
                   default=0)
        problems.error("nodes", f"{spec.nodes} nodes need {subnets} subnet(s) of a"
                       f" /{cidr_lists.subnet_prefix(spec.nodes)} each, more than the stack's VPC"
                       f" ({cidr_lists.STACK_VPC}) holds; allowed: at most {most} nodes with {subnets} zone(s)")
        return
    _check_placement_groups(spec, problems)
    problems.info("nodes", _quota_note(spec))


def _placement_groups(spec: Spec) -> int:
    """How many placement groups the compute part makes (the profile's `interconnect.placement`,
    base.Placement): a pool (spot pool, Kubernetes node pool) takes one in its template or none."""
    if spec.profile.interconnect.placement is None:
        return 0
    pooled = spec.kubernetes is not None or spec.profile.spot.has_pool(spec)
    return spec.profile.interconnect.placement.groups(spec.nodes, pooled)


def _check_placement_groups(spec: Spec, problems: Problems) -> None:
    """More nodes than the cloud's placement group holds plan all the same (several groups, or none for a
    pool), never a `pulumi up` that fails at the first node past the limit: the warning says what is lost."""
    placement = spec.profile.interconnect.placement
    if placement is None or placement.members is None or spec.nodes <= placement.members:
        return
    count = _placement_groups(spec)
    limit = f"one {placement.construct} holds at most {placement.members} nodes ({placement.source})"
    if count:
        problems.warning("nodes", f"{spec.nodes} nodes: {limit}, so the nodes go in {count} of them, filled in"
                         f" node order (nodes 0-{placement.members - 1} in the first): each keeps {placement.keeps},"
                         f" nothing holds between them; for all nodes in one: nodes: {placement.members} or fewer")
        return
    pool = "the Kubernetes GPU node pool" if spec.kubernetes is not None else "the spot pool"
    problems.warning("nodes", f"{spec.nodes} nodes: {limit}; {pool} takes one in its template, so it gets none and"
                     f" loses what one gives ({placement.keeps}); for it: nodes: {placement.members} or fewer"
                     + ("" if spec.kubernetes is not None else ", or billing: on-demand (several groups)"))


def _quota_note(spec: Spec) -> str:
    """The quota the plan draws on in the region: instances, GPUs, vCPUs, public addresses, and the
    placement groups with their member limit (or where the account's own is read when it is unknown)."""
    from components.providers.profile_records import has_public_address

    vcpus = spec.nodes * max(row.vcpus for row in spec.pool_types)
    if spec.kubernetes is not None:
        addresses = "the NAT gateway's EIP (the GPU nodes have no public address)"
    elif has_public_address(spec):
        addresses = f"{spec.nodes} public IP(s) (EIPs), one per node (publicEgress or sshAllowCidrs)"
    else:
        addresses = "no public IP"
    offered, groups = spec.profile.interconnect.placement, _placement_groups(spec)
    if not groups:
        placement = ""
    elif offered.members is None:
        placement = (f"; all {spec.nodes} nodes go in one {offered.construct}, whose member limit is not known"
                     f" here ({offered.source}): check that it holds {spec.nodes}")
    else:
        placement = (f"; placement: {groups} x {offered.construct}, at most {offered.members} nodes each"
                     f" ({offered.source})")
    return (f"the plan needs this {spec.profile.display_name} quota in {spec.region}: {spec.nodes} GPU instance(s)"
            f" of {spec.instance.name} ({spec.nodes * spec.gpus_per_node:,} {spec.gpu.name} GPUs),"
            f" {vcpus:,} vCPUs{' (the largest type of the spot pool)' if len(spec.pool_types) > 1 else ''},"
            f" {addresses}{placement}. Check the account's quotas for them before `pulumi up`: a quota"
            " error stops it partway, with some resources created")


# The shared FS mount address is known only at deploy time: validation renders user-data with a
# stand-in longer than the mount targets the clouds hand out (~50 characters) and as incompressible.
_FS_ADDRESS_STANDIN = hashlib.sha256(b"deploy-time mount target").hexdigest() * 2 + ":/share"


def _user_text(spec: Spec) -> list[tuple[str, str]]:
    """(dotted key, value) of the free text the user wrote that rides in user-data: the loader's config (the bucket,
    and the prefix in the boot payload's key). The command, train.env and train.setup ride in the boot payload, outside it."""
    return [("checkpoint.bucket", spec.checkpoint.bucket or ""), ("checkpoint.prefix", spec.checkpoint.prefix),
            ("checkpoint.endpoint", spec.checkpoint.endpoint)]


def _check_user_data_budget(spec: Spec, problems: Problems) -> None:
    """Each node's encoded user-data (the loader: docs/bootstrap.md, "The loader") must stay under the cloud's
    limit (the profile's `node.user_data`): rendered here the way `pulumi up` renders it, and when it does not fit,
    the error names the value the user wrote that weighs most, instead of the program failing later."""
    from components.bootstrap import BootstrapConfigError, render_user_data, user_data_limit

    address = _FS_ADDRESS_STANDIN if spec.shared_storage != "none" else None
    try:
        rendered = render_user_data(build_node_config(spec, shared_fs_address=address, expires_at=EXPIRY_STANDIN),
                                    max_encoded=None)
    except BootstrapConfigError as error:  # the rules above should have said it; say it by key all the same
        for line in error.problems:
            key, _, message = line.partition(": ")
            problems.error(key, message)
        return
    limit = user_data_limit(spec.provider)
    if rendered.encoded_size <= limit:
        return
    weights = sorted(((len(gzip.compress(value.encode(), 9)), key, value) for key, value in _user_text(spec)
                      if value), reverse=True)
    weight, key, value = weights[0]
    others = [f"{k} (~{w:,} bytes)" for w, k, _ in weights[1:4] if w > 200]
    problems.error(key, f"{len(value):,} characters make the node's user-data {rendered.encoded_size:,} bytes"
                   f" encoded; the cloud's limit is {limit:,} ({spec.profile.node.user_data.describe()}; it also carries the"
                   f" loader and the cloud runtime). This value weighs ~{weight:,} bytes compressed"
                   + (f"; next: {', '.join(others)}" if others else "") + ". Shorten it")
