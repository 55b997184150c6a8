"""What the offline preview's mock engine answers for __Cloud__'s data sources (tools/mockrun.py).

CALL_ANSWERS: data-source token -> function(args) -> result; COMPUTED_OUTPUTS: {resource type:
{output: template}}. Placeholders say where the real value comes from.
"""
CALL_ANSWERS: dict = {}  # TODO(__cloud__): one entry per data source the parts call

# Outputs the cloud computes after creation (the parts' placeholders read them); TODO(__cloud__): the SDK's
# type tokens and output names once the parts use them.
COMPUTED_OUTPUTS: dict = {
    "__cloud__:compute:Instance": {"privateIp": "10.42.0.{index}", "publicIp": "<public ip of {name}>"},
    # Shaped as the bootstrap validates it (a host and a path); it says that the cloud assigns the value.
    "__cloud__:storage:SharedFileSystem": {"mountAddress": "{name}.mount-address.assigned-by-__cloud__:/"},
    "__cloud__:kubernetes:Cluster": {"kubeconfig": "<kubeconfig of {name}, read from the cloud at deploy time>",
                                     "oidcIssuer": "<OIDC issuer URL of {name}>"},
}
