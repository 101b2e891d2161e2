# Two commands for a new user: `make demo` and `make test`. Each builds .venv the first time.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BACKENDS ?= tensorflow jax torch

.PHONY: demo test data docs lint setup clean-venv

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[all,dev,docs]"
	touch $@

setup: $(VENV)/.installed

demo: $(VENV)/.installed
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m keras_rnnattn.demo

test: $(VENV)/.installed
	BACKENDS="$(BACKENDS)" PY=$(PY) bash scripts/test.sh $(PYTEST_ARGS)

# Every corpus and the browser the tests read: Debian packages (needs root for
# apt-get) and Python sources into the cache (scripts/install_data.sh).
data: $(VENV)/.installed
	PY=$(PY) bash scripts/install_data.sh

# The documentation site (mkdocs.yml), built from docs/ and the docstrings into site/.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean-venv:
	rm -rf $(VENV)
