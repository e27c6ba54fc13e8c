# Two commands do all set-up on a machine with only Python 3.11+:
#   make render STACK=dev    offline render of a stack into build/STACK/
#   make test                lint, type check and the whole test suite
PYTHON ?= python3
STACK ?= dev
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
# checkov pins packaging<24 and pulumi needs >=26: it gets its own environment.
CHECKOV_VERSION := 3.3.30
CHECKOV := $(TOOLS)/checkov/bin/checkov
VENV := .venv
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: setup checkov render test lint typecheck bench clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

setup: $(VENV)/.synced

$(CHECKOV): Makefile
	$(PYTHON) -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/python -m pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)
	touch $@

checkov: $(CHECKOV)

render: setup
	$(VENV)/bin/render $(STACK)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: setup
	$(VENV)/bin/mypy

test: lint typecheck checkov
	$(VENV)/bin/pytest

bench: setup
	$(VENV)/bin/python benchmarks/render_bench.py

clean:
	rm -rf build $(VENV) $(TOOLS)
