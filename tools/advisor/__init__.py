"""The sizing and cost advisor: what to rent for a training job, and why (scripts/recommend.py).

perf.py reads the performance model (components/data/perf.yaml); request.py validates what the user
asks for; optimiser.py evaluates every catalog offer against it and ranks what fits; stackfile.py
turns a pick into a stack file that build_spec accepts. Prices come from components/cost.py, the
same cost model the preview uses.
"""
