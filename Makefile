# Entry points for people and CI: aliases of the `gpu-training` command (docs/cli.md). Each target installs
# what it needs into .venv on first use.
PYTHON_BOOT ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
STACK       ?= medium-a100
ARGS        ?=
# pyproject.toml's requires-python (tests/test_makefile.py checks they agree).
PYTHON_MIN  := 3.11

# The Python version first, in one line (exit 2), before any target that installs or runs something: on an
# older one pip backtracks through every release of the pins for many minutes without a word (newcomer trial
# 3: 24 minutes on 3.10). The interpreter checked is the one the targets run: the virtualenv's once it
# exists, else PYTHON_BOOT, which makes it.
ifneq ($(filter-out help clean,$(or $(MAKECMDGOALS),help)),)
PY_RUN     := $(if $(wildcard $(PY)),$(PY),$(PYTHON_BOOT))
PY_VERSION := $(shell $(PY_RUN) -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
PY_OLD     := $(shell $(PY_RUN) -c 'import sys; print(int(sys.version_info[:2] < tuple(map(int, "$(PYTHON_MIN)".split(".")))))' 2>/dev/null)
ifeq ($(PY_VERSION),)
$(error gpu-training needs Python $(PYTHON_MIN) or newer; '$(PY_RUN)' does not run: install one and name it, e.g. make PYTHON_BOOT=python$(PYTHON_MIN) $(MAKECMDGOALS))
else ifneq ($(PY_OLD),0)
ifeq ($(PY_RUN),$(PY))
$(error gpu-training needs Python $(PYTHON_MIN) or newer; $(VENV) holds Python $(PY_VERSION): remove it (make clean) and run make PYTHON_BOOT=python$(PYTHON_MIN) $(MAKECMDGOALS))
else
$(error gpu-training needs Python $(PYTHON_MIN) or newer; $(PY_RUN) is Python $(PY_VERSION): run make PYTHON_BOOT=python$(PYTHON_MIN) $(MAKECMDGOALS) (or the path of any Python $(PYTHON_MIN)+))
endif
endif
endif

.PHONY: help preview test test-all rehearse pack report recommend bench bench-full lint dist clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12
	@echo
	@echo "STACK=NAME picks the stack (default: $(STACK)); the stacks, from stacks/Pulumi.*.yaml:"
	@ls stacks | sed -n 's/^Pulumi\.\(.*\)\.yaml$$/\1/p' | tr '\n' ' ' | fold -s -w 100 | sed 's/^/  /'; echo

# The clone's own distribution, editable (pyproject.toml), with its runtime (requirements.txt).
$(VENV)/.runtime: requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	@echo "installing the runtime into $(VENV) (first run only)..."
	@$(PY) -m pip install -q --disable-pip-version-check -e .
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

# A rehearsal's own extra (pyproject.toml [rehearse]), not the test set (requirements-dev.txt: PaddlePaddle, pytest...).
$(VENV)/.rehearse: $(VENV)/.runtime pyproject.toml
	@echo "installing what a rehearsal needs into $(VENV) (first run only)..."
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[rehearse]'
	@touch $@

rehearse: $(VENV)/.rehearse ## run STACK's training lifecycle locally on the CPU, preemption drill included (ARGS="--example-data": with a packed, staged image set)
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

# `make bench` runs every bench/*.py with the short settings below (a script not named runs with its
# defaults), so the whole set stays under 10 minutes on a 2-core machine; `make bench-full` runs each
# with its own defaults, the settings behind the figures in the docs. bench/data_read.py's throttled-disk
# part needs root (a loop device and a blkio cgroup); without it the script says so and skips that part.
BENCHES := $(sort $(wildcard bench/*.py))
BENCH_QUICK_agent_latency      := --runs 2 --mb-per-file 16
BENCH_QUICK_bad_configs        := --quick
BENCH_QUICK_bootstrap_overhead := --runs 2 --stack entry-t4 --stack medium-a100
BENCH_QUICK_cli_startup        := --runs 5
BENCH_QUICK_crash_to_log       := --runs 2
BENCH_QUICK_data_read          := --quick
BENCH_QUICK_decode_rate        := --rounds 3
BENCH_QUICK_fault_drills       := --quick
BENCH_QUICK_staging_rate       := --rounds 3
BENCH_QUICK_upload_rate        := --rounds 3
bench_args = $(BENCH_QUICK_$(basename $(notdir $(1))))

bench: $(VENV)/.dev ## every bench/ script with short settings (under 10 minutes), each one's time and the total
	@start=$$(date +%s); $(foreach b,$(BENCHES),echo "== $(b) $(call bench_args,$(b))"; s=$$(date +%s); \
	  $(PY) $(b) $(call bench_args,$(b)) || exit 1; echo "   ($$(( $$(date +%s) - s )) s)";) \
	  echo "== make bench: $$(( $$(date +%s) - start )) s in all"

bench-full: $(VENV)/.dev ## every bench/ script with its own defaults (the docs' figures; much longer)
	@for b in $(BENCHES); do echo "== $$b"; $(PY) $$b || exit 1; done

dist: $(VENV)/.dev ## build the wheel and the source archive into dist/ (then: pipx install dist/gpu_training-*.whl)
	@$(PY) -m build --outdir dist . >/dev/null
	@ls dist/*

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache
