# Entry points for people and CI: aliases of the `gpu-training` command (docs/cli.md). Each target installs
# what it needs into .venv on first use.
PYTHON_BOOT ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
STACK       ?= medium-a100
ARGS        ?=

.PHONY: help preview test test-all rehearse pack report recommend bench lint clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

# requirements.txt ends with `-e .`: the project's packages (pyproject.toml) install in editable mode.
$(VENV)/.runtime: requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	@echo "installing the runtime into $(VENV) (first run only)..."
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	@echo "installing test dependencies into $(VENV) (first run only)..."
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	@touch $@

preview: $(VENV)/.runtime ## offline plan, cost and bootstrap of STACK (ARGS="--json", "--set billing=spot", "--user-data")
	@$(PY) -m tools.cli preview $(STACK) $(ARGS)

test: $(VENV)/.dev ## the fast suite, on every core: everything but the tests marked slow (full drills, exactness runs)
	@$(PY) -m pytest -q -n auto -m "not slow" $(ARGS)

test-all: $(VENV)/.dev ## every test, the slow drills included (what CI runs)
	@$(PY) -m pytest -q $(ARGS)

lint: $(VENV)/.dev ## ruff: pyflakes and bugbear findings (pyproject.toml [tool.ruff])
	@$(PY) -m ruff check .

rehearse: $(VENV)/.dev ## run STACK's training lifecycle locally on the CPU, preemption drill included (ARGS="--example-data": with a packed, staged image set)
	@$(PY) -m tools.cli rehearse $(STACK) $(ARGS)

IMAGES      ?=
PACKED      ?= build/packed
$(VENV)/.pack: $(VENV)/.runtime pyproject.toml
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[pack]'
	@touch $@

$(VENV)/.report: $(VENV)/.runtime pyproject.toml
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[report]'
	@touch $@

pack: $(VENV)/.pack ## pack IMAGES (a folder, one subfolder per class) into PACKED (default build/packed); without IMAGES a small generated folder; ARGS="--upload STACK"
	@if [ -z "$(IMAGES)" ]; then $(PY) scripts/pack.py --example-images build/example-images && \
	  $(PY) scripts/pack.py build/example-images $(PACKED) $(ARGS); \
	else $(PY) scripts/pack.py $(IMAGES) $(PACKED) $(ARGS); fi

report: $(VENV)/.report ## every node's utilisation report of STACK from its bucket: one table, the diagnosis, one plot
	@$(PY) -m tools.cli report $(STACK) $(ARGS)

recommend: $(VENV)/.runtime ## sizing and cost advisor (ARGS="--model resnet50 --images 1281167 --epochs 90 --deadline 24")
	@$(PY) -m tools.cli recommend $(ARGS)

bench: $(VENV)/.dev ## print the measured figures of every bench/ script
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache
