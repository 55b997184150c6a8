"""The gpu-training policy pack: `pulumi preview --policy-pack policy` runs this file.

The policies are built from the project's one rule table (components/safety.py) by pack.py;
this file only starts the pack's server for the Pulumi CLI.
"""
from pack import PACK_NAME, policies
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies(),
           description="gpu-training safety rules (components/safety.py)")
