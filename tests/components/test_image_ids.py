"""`image` names an image id of the stack's cloud, or the preview refuses it (issue 33; newcomer trial 3).

`image=ubuntu` passed the preview and reached the instance API as an id, which refuses it only after the
network and the bucket exist. Each cloud's profile declares the forms of id its instance API takes, with
their source (ImageIds in components/providers/<cloud>/profile.py); an image in none of them is an error
naming the key, the value and the forms.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from components import providers
from components.validation import SpecError
from tools.stackfiles import stack_spec

REPO = Path(__file__).resolve().parents[2]
# One VM stack per cloud, and an id of each form its cloud takes (from the forms' sources).
STACKS = {"alicloud": "entry-t4", "tencentcloud": "tc-entry-t4", "huaweicloud": "hw-entry-t4",
          "baiducloud": "bd-large-a100"}
GOOD = {"alicloud": ("m-bp1g7004ksh0oeuc1234", "ubuntu_22_04_x64_20G_alibase_20240710.vhd"),
        "tencentcloud": ("img-gvbnzy6f",), "huaweicloud": ("67f433d8-ed0e-4321-a8a2-a71838539e09",),
        "baiducloud": ("m-A4jJpFzi",)}
# Names, OS words and other clouds' ids: id-shaped strings that are no image id of the stack's cloud.
BAD = {"alicloud": ("ubuntu", "ubuntu_22_04", "img-gvbnzy6f", "67f433d8-ed0e-4321-a8a2-a71838539e09"),
       "tencentcloud": ("ubuntu", "m-bp1g7004ksh0oeuc1234", "Ubuntu-22.04"),
       "huaweicloud": ("ubuntu", "img-gvbnzy6f", "Ubuntu_22.04_64bit"),
       "baiducloud": ("ubuntu", "img-gvbnzy6f", "m-")}


def image_error(stack: str, image: str) -> str | None:
    try:
        stack_spec(stack, (f"image={image}",))
    except SpecError as refused:
        return next((f.message for f in refused.errors if f.key == "image"), None)
    return None


@pytest.mark.parametrize("cloud, image", [(c, i) for c, images in BAD.items() for i in images])
def test_an_image_that_is_no_id_of_the_stacks_cloud_is_refused_naming_value_and_forms(cloud, image):
    message = image_error(STACKS[cloud], image)
    assert message is not None, f"{cloud}: image={image} passed"
    assert repr(image) in message and providers.profile(cloud).display_name in message
    for _, form in providers.profile(cloud).node.image_ids.forms:
        assert form in message


@pytest.mark.parametrize("cloud, image", [(c, i) for c, images in GOOD.items() for i in images])
def test_each_form_of_id_the_cloud_takes_passes(cloud, image):
    assert image_error(STACKS[cloud], image) is None


@pytest.mark.parametrize("cloud", sorted(STACKS))
def test_each_cloud_declares_its_image_id_forms_with_a_source_and_examples_its_patterns_take(cloud):
    ids = providers.profile(cloud).node.image_ids
    assert ids is not None and ids.source.strip()
    for pattern, what in ids.forms:
        example = re.search(r"e\.g\.\s+(\S+?)\)?$", what)
        assert example and re.fullmatch(pattern, example.group(1)), (pattern, what)


def test_the_preview_exits_2_naming_key_value_and_forms_without_a_traceback():
    done = subprocess.run([sys.executable, "-m", "tools.cli", "preview", "tc-entry-t4", "--set", "image=ubuntu"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-2000:]
    assert "Traceback" not in output
    assert "image: 'ubuntu' is no Tencent Cloud image id" in output and "img-..." in output
