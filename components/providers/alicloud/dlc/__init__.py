"""Alibaba PAI-DLC jobs: the platform path's GPU target on Alibaba (docs/platforms.md).

platform.yaml (facts, sources, what is unverified), flavors.yaml (the specs the tier rules judge),
api.yaml (the 2020-12-03 job API as data), job.py (the request, the rules, state and logs). The API's local
stand-in for the rehearsal and the tests is localcloud/standins/alicloud_dlc.py, not part of the program.
"""
