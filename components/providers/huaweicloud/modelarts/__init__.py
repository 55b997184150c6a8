"""Huawei ModelArts training jobs: the platform path's Ascend 910B target (docs/platforms.md).

platform.yaml (facts, sources, what is unverified), flavors.yaml (the flavors the tier rules judge),
api.yaml (the v2 job API as data), job.py (the request, the rules, state and logs). The API's local stand-in
for the rehearsal and the tests is localcloud/standins/huaweicloud_modelarts.py, not part of the program.
"""
