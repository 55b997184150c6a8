"""Every input of every stack, and of the what-ifs users make with --set, checked against what the
cloud's Terraform provider accepts (components/providers/<cloud>/provider_facts.json, generated from
the provider's Go source by devtools/provider_facts.py); the facts checked against the installed SDK;
the checker and the generator tested on their own."""
from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from components.billing import STATE_ONLY
from components.providers import facts
from tools.stackfiles import apply_overrides, load_stack_config
from stackcases import node_stack_names, case_id, plan_or_refusal, provider_of, variations, vm_stack_names

REPO_ROOT = Path(__file__).resolve().parents[2]
LONG_PREFIX = "research-team-resnet50-imagenet-"  # a long, ordinary stack name: 32 + the stack's own
# Rules that fail on main because of a defect another change is fixing: (test, provider) -> reason.
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}  # none now: issue 10 item 7 refuses long names at validation
CASES = [(stack, overrides) for stack in vm_stack_names() for overrides in variations(stack)]


def render(problems) -> str:
    return "\n".join(f"{type_}.{name}: {problem} [{problem.kind}]" for type_, name, problem in problems)


# ---------------------------------------------------------------- every stack against the facts

@pytest.mark.parametrize("stack,overrides", CASES, ids=[case_id(s, o) for s, o in CASES])
def test_every_input_passes_the_providers_schema(stack, overrides, plan_for):
    plan = plan_or_refusal(plan_for, stack, overrides)
    # State-only types (components/billing.py STATE_ONLY) have no cloud provider; clock.py holds their rules.
    custom = [r for r in plan.resources if r.custom and r.type not in STATE_ONLY]
    assert custom
    unknown_types = sorted({r.type for r in custom if facts.for_type(r.type) is None
                            or not facts.for_type(r.type).knows(r.type)})
    assert not unknown_types, f"types without provider facts (add them to bridge.yaml, regenerate): {unknown_types}"
    problems = facts.stack_problems(plan.resources)
    assert not problems, render(problems)


def long_name_cases():
    cases = []
    for cloud in facts.clouds():
        stack = next(s for s in node_stack_names() if provider_of(s) == cloud)
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[("long_name", cloud)])] \
            if ("long_name", cloud) in KNOWN_DEFECTS else []
        cases.append(pytest.param(cloud, stack, marks=marks, id=cloud))
    return cases


@pytest.mark.parametrize("cloud,stack", long_name_cases())
def test_a_long_stack_name_is_refused_or_fits_every_name_limit(cloud, stack):
    """A 40-odd character stack name (Pulumi allows far longer) on the spot path, which creates the
    most named resources: validation refuses it naming the key, or every name fits the provider."""
    from tools.mockrun import ProgramExit, run_program

    name = LONG_PREFIX + stack
    config = apply_overrides(load_stack_config(stack), ("billing=spot", "spotMaxPricePerHour=50"))
    try:
        plan = run_program(config, name)
    except ProgramExit as stop:
        assert stop.code == 2 and "Traceback" not in stop.stderr
        return
    problems = facts.stack_problems(plan.resources)
    assert not problems, render(problems)


# ---------------------------------------------------------------- the facts themselves

TERRAFORM_CLOUDS = [c for c in facts.clouds() if facts.bridged_by(c) == "terraform"]
DYNAMIC_CLOUDS = [c for c in facts.clouds() if facts.bridged_by(c) == "dynamic"]


@pytest.mark.parametrize("cloud", facts.clouds())
def test_facts_match_the_installed_sdk_and_the_bridge(cloud):
    """Regenerate the facts when the SDK is upgraded: the file says which version it was checked against."""
    bridge, document = facts.bridge(cloud), json.loads(facts.facts_path(cloud).read_text())
    assert document["sdk"]["version"] == bridge["sdk"]["version"] == version(bridge["sdk"]["package"])
    assert set(document["resources"]) == set(bridge["resources"])
    if facts.bridged_by(cloud) == "dynamic":
        return  # no Terraform source: test_dynamic_facts_are_the_providers_schemas
    assert len(document["provider"]["commit"]) == 40
    for token, entry in document["resources"].items():
        assert entry["tf_resource"] == bridge["resources"][token]
        assert entry["source"].split(":")[0].endswith(".go")


@pytest.mark.parametrize("cloud", DYNAMIC_CLOUDS)
def test_dynamic_facts_are_the_providers_schemas(cloud):
    """A cloud of dynamic resources: its facts are what its providers' check() and diff() use, regenerated
    (devtools/provider_facts.py), so the facts checker and day 2 judge the same rules the providers apply."""
    module = importlib.import_module(facts.bridge(cloud)["sdk"]["python_module"])
    document = json.loads(facts.facts_path(cloud).read_text())
    assert document == json.loads(json.dumps(module.facts_document())), \
        f"{cloud}: provider_facts.json is stale; run devtools/provider_facts.py {cloud}"
    assert {f"{t.rsplit(':', 1)[1]}" for t in document["resources"]} == set(module.PROVIDERS)


@pytest.mark.parametrize("cloud", TERRAFORM_CLOUDS)
def test_every_sdk_argument_is_in_the_facts_or_listed_as_sdk_only(cloud):
    """SDK/provider drift is visible: an SDK argument the source lacks must be listed, not missed."""
    from tools.sdknames import args_class, sdk_fields

    loaded = facts.load(cloud)
    module = facts.bridge(cloud)["sdk"]["python_module"]
    for token, entry in loaded.resources.items():
        sdk = sdk_fields(args_class(module, token))
        inputs = {name for name, field in entry["inputs"].items() if not field.get("output_only")}
        assert set(sdk) - inputs == set(entry.get("sdk_only", [])), token
        flagged = {name for name, field in entry["inputs"].items() if field.get("sdk") is False}
        assert inputs - set(sdk) == flagged | {n for n in inputs if entry["inputs"][n].get("removed")}, token


@pytest.mark.parametrize("cloud", facts.clouds())
def test_hand_written_entries_name_real_inputs_and_quote_their_source(cloud):
    loaded = facts.load(cloud)
    for name, quirk in loaded.hand_written.items():
        assert quirk["resource"] in loaded.resources, name
        assert all(i == "*" or i in loaded.inputs(quirk["resource"]) for i in quirk["inputs"]), name
        path, line = quirk["at"].rsplit(":", 1)
        # Go source, or the provider's own docs at the same commit (a rule only the docs state).
        assert path.endswith((".go", ".md")) and int(line) > 0 and quirk["quote"].strip() and quirk["effect"], name
        if quirk["kind"] in facts.RULE_KINDS:  # every path a rule reads starts at one of its inputs
            paths = [quirk[k] for k in ("if_set", "requires", "input") if k in quirk] + list(quirk.get("differs_when", {}))
            assert paths and all(p.split(".")[0] in quirk["inputs"] for p in paths), name
        if quirk["kind"] == "read_overwrites":  # Read can store a value there only if the schema computes it
            assert loaded.inputs(quirk["resource"])[quirk["input"]].get("computed"), name


def test_the_facts_record_what_the_audit_found_in_the_source():
    """Spot checks against the provider source read by hand (docs/providers.md lists them)."""
    ali, tc = facts.load("alicloud"), facts.load("tencentcloud")
    apg = ali.inputs("alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup")
    assert apg["validUntil"]["force_new"] and apg["launchTemplateConfigs"]["force_new"]
    assert apg["launchTemplateConfigs"]["tf"] == "launch_template_config"
    assert apg["launchTemplateConfigs"]["block"]["maxPrice"]["required"]
    assert [q["kind"] for q in ali.quirks("alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup")] == \
        ["read_collapses_list"]
    group = tc.inputs("tencentcloud:As/scalingGroup:ScalingGroup")
    assert group["scalingGroupName"]["validate"] == {**group["scalingGroupName"]["validate"], "kind": "length",
                                                     "min": 1, "max": 55}
    assert group["terminationPolicies"]["max_items_one"]
    timer = tc.inputs("tencentcloud:Cvm/actionTimer:ActionTimer")
    assert timer["actionTimer"]["force_new"] and timer["actionTimer"]["block"]["actionTime"]["force_new"]
    disk = tc.inputs("tencentcloud:As/scalingConfig:ScalingConfig")["dataDisks"]["block"]
    assert "encrypt" not in disk and "throughputPerformance" not in disk  # the audit's B9 and the seed disk
    cvm = tc.resources["tencentcloud:Instance/instance:Instance"]
    assert {"field": "user_data", "how": "ForceNewIf"} in [{k: c[k] for k in ("field", "how")}
                                                            for c in cvm["force_new_in_customize_diff"]]
    # Huawei, terraform-provider-huaweicloud v1.73.3 (the audit of issue 22: B2, W3, W4, G1).
    hw = facts.load("huaweicloud")
    ecs = hw.inputs("huaweicloud:Ecs/instance:Instance")
    assert ecs["chargingMode"]["validate"] == {"kind": "one_of", "values": ["prePaid", "postPaid", "spot"]}
    assert ecs["spotMaximumPrice"]["force_new"] and "spot_duration" in ecs["spotMaximumPrice"]["conflicts_with"]
    group = hw.inputs("huaweicloud:As/group:Group")["desireInstanceNumber"]
    assert group["computed"] and not group.get("force_new")  # updated in place: a later up resizes the pool
    config = hw.inputs("huaweicloud:As/configuration:Configuration")["instanceConfig"]
    assert config["force_new"] and "keyName" in config["block"] and "spotMaximumPrice" not in config["block"]
    etag = hw.inputs("huaweicloud:Obs/bucketObject:BucketObject")["etag"]
    assert etag["computed"] and etag["optional"]
    assert sorted(q["kind"] for q in hw.quirks("huaweicloud:Obs/bucketObject:BucketObject")) == ["read_overwrites"]
    assert [q["kind"] for q in hw.quirks("huaweicloud:As/configuration:Configuration")] == ["requires_with"]


# ---------------------------------------------------------------- the checker

def test_a_mutated_input_is_caught_with_what_is_allowed(plan_for):
    plan = plan_for("entry-t4")
    (node,) = [r for r in plan.resources if r.type == "alicloud:ecs/instance:Instance"]
    loaded = facts.for_type(node.type)
    assert loaded.check(node.type, node.inputs) == []
    bad = {**node.inputs, "instanceChargeType": "Hourly", "hostName": None, "madeUp": 1,
           "dataDisks": [{**node.inputs["dataDisks"][0], "performanceLevel": "PL9"}]}
    problems = {p.path: p for p in loaded.check(node.type, bad)}
    assert "PrePaid" in problems["instanceChargeType"].message and problems["instanceChargeType"].kind == "invalid"
    assert problems["dataDisks[0].performanceLevel"].kind == "invalid"
    assert problems["madeUp"].kind == "unknown_input"
    del bad["instanceType"], bad["imageId"]  # still valid: both may come from a launch template
    assert "instanceType" not in {p.path for p in loaded.check(node.type, bad)}


def test_required_nested_inputs_and_single_item_blocks():
    loaded = facts.load("tencentcloud")
    token = "tencentcloud:Cvm/actionTimer:ActionTimer"
    ok = {"instanceId": "ins-1", "actionTimer": {"timerAction": "TerminateInstances", "actionTime": "x"}}
    assert loaded.check(token, ok) == []
    assert [p.kind for p in loaded.check(token, {"actionTimer": ok["actionTimer"]})] == ["missing"]
    group = "tencentcloud:As/scalingGroup:ScalingGroup"
    problems = loaded.check(group, {"scalingGroupName": "x" * 56, "configurationId": "c", "maxSize": 2001,
                                    "minSize": 0, "vpcId": "v", "terminationPolicies": "OLDEST"})
    assert {p.path for p in problems} == {"scalingGroupName", "maxSize", "terminationPolicies"}


@pytest.mark.parametrize("validator,good,bad", [
    ({"kind": "one_of", "values": ["a", "B"], "ignore_case": True}, "b", "c"),
    ({"kind": "int_range", "min": 1, "max": 3}, 3, 4),
    ({"kind": "length", "min": 2, "max": 3, "unit": "bytes"}, "ab", "中文"),  # 6 bytes
    ({"kind": "length", "min": 2, "max": 3, "unit": "runes"}, "中文", "a"),
    ({"kind": "regex", "pattern": r"^[a-zA-Z\p{Han}][\p{Han}\w.-]{1,3}$"}, "训练a", "-ab"),
    ({"kind": "not_regex", "pattern": "^http"}, "ab", "https://x"),
    ({"kind": "all", "of": [{"kind": "prefix", "values": ["img-"]}, {"kind": "length", "max": 6}]}, "img-1", "img-123"),
    ({"kind": "any", "of": [{"kind": "ip"}, {"kind": "cidr_network"}]}, "10.0.0.0/8", "10.0.0.1/8"),
    ({"kind": "rfc3339"}, "2026-12-02T10:00:00+08:00", "2026-12-02 10:00"),
    ({"kind": "number_string"}, "0.5", "cheap"),
    ({"kind": "json"}, '{"a": 1}', "{a}"),
    ({"kind": "int_one_of", "values": [20, 40]}, 40, 30),
    ({"kind": "contains", "value": "."}, "S5.LARGE8", "S5"),
])
def test_each_validator_kind_accepts_and_refuses(validator, good, bad):
    assert facts.violation(validator, good) is None
    assert facts.violation(validator, bad)


def test_go_regex_syntax_without_a_python_equivalent_is_refused():
    with pytest.raises(facts.GoRegexError):
        facts.compile_go_regex(r"^\p{Greek}+$")
    assert facts.compile_go_regex(r"[]a]").search("]")


def test_replacements_follow_force_new_and_customize_diff():
    ali, tc = facts.load("alicloud"), facts.load("tencentcloud")
    pool = "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup"
    old = {"validUntil": "2026-12-03T10:00:00Z", "totalTargetCapacity": "1", "excessCapacityTerminationPolicy": "termination"}
    new = {**old, "validUntil": "2026-12-03T11:00:00Z", "totalTargetCapacity": "2"}
    assert [(r.path, r.certain) for r in ali.replacements(pool, old, new)] == [("validUntil", True)]
    cvm = "tencentcloud:Instance/instance:Instance"
    changes = tc.replacements(cvm, {"userData": "a", "dataDisks": [{"dataDiskSize": 100, "encrypt": True}]},
                              {"userData": "b", "dataDisks": [{"dataDiskSize": 200, "encrypt": False}]})
    assert [(r.path, r.certain) for r in changes] == [("dataDisks", True), ("userData", False)]


# ---------------------------------------------------------------- the generator

GO_MOD = "module example.com/tfp\n"
PROVIDER = '''package p

import "example.com/tfp/p/svc"

func Provider() {
	return &schema.Provider{
		ResourcesMap: map[string]*schema.Resource{
			"tfp_thing": svc.ResourceThing(),
		},
	}
}
'''
CONSTS = '''package svc

const (
	// the kinds a thing may be
	KindSmall = Kind("small")
	KindLarge Kind = "large"
)

type Kind string

var KINDS = []string{string(KindSmall), string(KindLarge)}
'''
RESOURCE = '''package svc

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/validation"
)

func ResourceThing() *schema.Resource {
	ports := map[string]*schema.Schema{
		"port": {Type: schema.TypeInt, Required: true, ValidateFunc: validation.IntBetween(1, 65535)},
	}
	return &schema.Resource{
		CustomizeDiff: func(d *schema.ResourceDiff, m interface{}) error {
			if d.HasChange("name") { return d.ForceNew("name") }
			return nil
		},
		Schema: map[string]*schema.Schema{
			"name": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validation.All(validation.StringLenBetween(2, 10), validation.StringMatch(regexp.MustCompile(`^[a-z]`), "lower")),
			},
			"kind": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				Default:      KindSmall,
				ValidateFunc: validation.StringInSlice(KINDS, false),
			},
			"rule": {
				Type:     schema.TypeList,
				Optional: true,
				Elem:     &schema.Resource{Schema: ports},
			},
		},
	}
}
'''


def write_provider(root: Path, resource: str = RESOURCE) -> None:
    (root / "p" / "svc").mkdir(parents=True)
    (root / "go.mod").write_text(GO_MOD)
    (root / "p" / "provider.go").write_text(PROVIDER)
    (root / "p" / "svc" / "consts.go").write_text(CONSTS)
    (root / "p" / "svc" / "thing.go").write_text(resource)


def test_the_go_schema_parser_reads_flags_validators_constants_and_locals(tmp_path):
    from devtools.goschema import SourceTree, resource_schema

    write_provider(tmp_path)
    schema = resource_schema(SourceTree(tmp_path, "example.com/tfp"), "p/svc", "ResourceThing")
    assert schema.fields["kind"] == {"line": 24, "type": "string", "optional": True, "force_new": True,
                                     "default": "small", "validate": {"kind": "one_of", "values": ["small", "large"]}}
    assert schema.fields["name"]["validate"] == {"kind": "all", "of": [
        {"kind": "length", "min": 2, "max": 10, "unit": "bytes"}, {"kind": "regex", "pattern": "^[a-z]"}]}
    assert schema.fields["rule"]["block"]["port"]["validate"] == {"kind": "int_range", "min": 1, "max": 65535}
    assert [f["field"] for f in schema.force_new_in_customize_diff] == ["name"]


@pytest.mark.parametrize("change,message", [
    (("ForceNew:     true,", "ForceNew: true, Sometimes: true,"), "unknown schema.Schema key Sometimes"),
    (("Default:      KindSmall,", "Default: KindMedium,"), "no package-level const or var KindMedium"),
    (("validation.StringInSlice(KINDS, false)", "validation.StringInSlice(kinds(), false)"), "cannot be evaluated"),
])
def test_the_parser_fails_loudly_naming_the_place(tmp_path, change, message):
    from devtools.goschema import GoSchemaError, SourceTree, resource_schema

    write_provider(tmp_path, RESOURCE.replace(*change))
    with pytest.raises(GoSchemaError) as caught:
        resource_schema(SourceTree(tmp_path, "example.com/tfp"), "p/svc", "ResourceThing")
    assert message in str(caught.value) and "p/svc/" in str(caught.value)


def test_a_stale_hand_written_quote_stops_regeneration(tmp_path):
    loader = importlib.util.spec_from_file_location("provider_facts", REPO_ROOT / "devtools" / "provider_facts.py")
    generator = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(generator)
    write_provider(tmp_path)
    entry = {"resource": "t", "inputs": [], "kind": "k", "effect": "e", "at": "p/svc/thing.go:3",
             "quote": 'if d.HasChange("name") { return d.ForceNew("name") }'}
    moved = generator.recheck_hand_written({"q": entry}, tmp_path)
    assert moved["q"]["at"] == "p/svc/thing.go:15"
    with pytest.raises(generator.FactsError, match="no longer in p/svc/thing.go"):
        generator.recheck_hand_written({"q": {**entry, "quote": "return d.ForceNew(\"kind\")"}}, tmp_path)


def test_the_generator_cli_explains_itself_and_refuses_bad_arguments(tmp_path):
    script = REPO_ROOT / "devtools" / "provider_facts.py"
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and "hand_written" in shown.stdout and "--module" in shown.stdout
    bad = subprocess.run([sys.executable, str(script), "alicloud", "--source", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no go.mod" in bad.stderr and "Traceback" not in bad.stderr
