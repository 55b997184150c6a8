"""The developers' corner: tools that maintain the project's own data from upstream sources, run by the
project's developers in a clone and never by a user. Nothing here ships in the wheel (pyproject.toml lists
the packages that do) and nothing the program or the commands import lives here.

- provider_facts.py: regenerates a cloud's provider_facts.json from its Terraform provider's Go source.
- goschema.py: the Go schema parser it reads that source with.
"""
