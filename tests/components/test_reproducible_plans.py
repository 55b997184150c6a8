"""Reproducible plans (issue 10, item 8): two runs of a stack's program give the same resources in the
same order, and no input carries the absolute path of the checkout that ran it.

An absolute upload source would make a `pulumi up` from another checkout (a teammate's, CI's) show
every uploaded object as changed; a varying order makes `preview --json` useless to diff.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackcases import node_stack_names, strings_in
from tools.mockrun import run_program
from tools.stackfiles import load_stack_config

REPO_ROOT = Path(__file__).resolve().parents[2]
STACKS = node_stack_names()


def fresh_plan(stack: str):
    return run_program(load_stack_config(stack), stack)


@pytest.mark.parametrize("stack", STACKS)
def test_two_runs_register_the_same_resources_in_the_same_order(stack, plan_for):
    first, second = plan_for(stack), fresh_plan(stack)
    assert first.resources, stack
    assert [(r.type, r.name) for r in first.resources] == [(r.type, r.name) for r in second.resources]
    assert json.dumps([r.inputs for r in first.resources], sort_keys=True, default=str) == \
        json.dumps([r.inputs for r in second.resources], sort_keys=True, default=str)


@pytest.mark.parametrize("stack", STACKS)
def test_no_input_names_the_checkout(stack, plan_for):
    plan = plan_for(stack)
    checkout = str(REPO_ROOT)
    found = [(r.name, s) for r in plan.resources for s in strings_in(r.inputs) if checkout in s]
    assert not found, found[:5]
    uploads = [r for r in plan.resources if "source" in r.inputs]
    assert uploads and all(not r.inputs["source"].startswith("/") for r in uploads), [
        r.inputs["source"] for r in uploads][:5]
