"""What the offline preview's mock engine answers for Baidu AI Cloud's data sources (tools/mockrun.py).

CALL_ANSWERS: data-source token -> function(args) -> result; COMPUTED_OUTPUTS: {resource type:
{output: template}}. Placeholders say where the real value comes from.
"""
CALL_ANSWERS: dict = {}  # TODO(baiducloud): one entry per data source the parts call
COMPUTED_OUTPUTS: dict = {}
