# Two commands do all set-up on a machine with only Python 3.11+:
#   make render STACK=dev    offline render of a stack into build/STACK/ (or: make render dev staging prod)
#   make test                lint (ruff, import layering), type check and the whole test suite
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
# checkov pins packaging<24 and pulumi needs >=26: it gets its own environment.
CHECKOV_VERSION := 3.3.30
CHECKOV := $(TOOLS)/checkov/bin/checkov
VENV := .venv
RUNTIME := $(VENV)/.synced-runtime
DEV := $(VENV)/.synced-dev
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Bytecode: uv compiles the installed packages (pip does, uv does not by default), and Python may
# cache the project's own (this machine sets PYTHONDONTWRITEBYTECODE). Without it every process
# recompiles pulumi_gcp from source: about 5 s of each render and test process.
export UV_COMPILE_BYTECODE := 1
unexport PYTHONDONTWRITEBYTECODE

# `make render prod staging`: the words after `render` are the stacks (and not targets of their own).
ifeq (render,$(firstword $(MAKECMDGOALS)))
RENDER_GOALS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
$(eval $(RENDER_GOALS):;@:)
endif
STACKS := $(or $(RENDER_GOALS),$(STACK),dev)

.PHONY: setup checkov render test lint typecheck bench snapshot crds docs vllm-args reasoning-parsers clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# What a render needs, and nothing else (the linters and test tools come with `make test`).
$(RUNTIME): $(UV) pyproject.toml uv.lock Makefile
	$(UV) sync --frozen --no-dev --inexact --python $(PYTHON)
	touch $@

$(DEV): $(UV) pyproject.toml uv.lock Makefile
	$(UV) sync --frozen --python $(PYTHON)
	touch $@ $(RUNTIME)

setup: $(DEV)

$(CHECKOV): Makefile
	$(PYTHON) -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/python -m pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)
	touch $@

checkov: $(CHECKOV)

render: $(RUNTIME)
	$(VENV)/bin/render $(STACKS)

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache --no-logo --config pyproject.toml

typecheck: $(DEV)
	$(VENV)/bin/mypy

test: lint typecheck checkov
	$(VENV)/bin/pytest --numprocesses auto --dist worksteal

bench: $(DEV)
	$(VENV)/bin/python benchmarks/render_bench.py

# make snapshot OUT=DIR: every stack file and test variant rendered into DIR (tests/snapshot.py); the
# snapshots of two commits, compared with `diff -r`, show what a change changed in the renders.
snapshot: $(DEV)
	$(VENV)/bin/python -m tests.snapshot $(OUT)

# make crds UPSTREAM=gateway-api REF=v1.4.0 [FROM_DIR=path/to/checkout]: refresh vendored CRD schemas
crds: $(RUNTIME)
	$(VENV)/bin/python -m schemas.crds refresh $(UPSTREAM) $(REF) $(if $(FROM_DIR),--from-dir $(FROM_DIR))

# Regenerate the generated reference pages and the preview's table of the setting tracer's answers
# (a test fails when one is stale).
docs: $(RUNTIME)
	$(VENV)/bin/python -m commands.settings_reference > docs/settings.md.tmp && mv docs/settings.md.tmp docs/settings.md
	$(VENV)/bin/python -m commands.policies_reference
	$(VENV)/bin/python -m commands.preview.trace_refresh

# make vllm-args VERSION=0.33.0 VLLM_PYTHON=/path/to/venv/bin/python: regenerate schemas/vllm/vllm-VERSION.json
# from that release's own `vllm serve` parser (VLLM_PYTHON: a throwaway environment with vllm==VERSION)
vllm-args: $(RUNTIME)
	$(if $(and $(VERSION),$(VLLM_PYTHON)),,$(error usage: make vllm-args VERSION=0.33.0 VLLM_PYTHON=/path/to/venv/bin/python))
	$(VENV)/bin/python -m schemas.vllm_args_refresh refresh $(VERSION) --python $(VLLM_PYTHON)

# make reasoning-parsers VERSION=0.19.0 WHEEL=/tmp/vllm-0.19.0-...whl: record the --reasoning-parser names that
# release registers in schemas/vllm/reasoning-parsers.json (WHEEL: pip download vllm==VERSION --no-deps --only-binary :all:)
reasoning-parsers: $(RUNTIME)
	$(if $(and $(VERSION),$(WHEEL)),,$(error usage: make reasoning-parsers VERSION=0.19.0 WHEEL=/path/to/vllm-0.19.0-...whl))
	$(VENV)/bin/python -m schemas.vllm_reasoning_parsers $(VERSION) $(WHEEL)

clean:
	rm -rf build $(VENV) $(TOOLS)
