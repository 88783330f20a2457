# Two entry points that work on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

$(VPY):
	$(PY) -m venv $(VENV)

$(STAMP): $(VPY) pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e ".[test]"
	for p in plugins/*/; do [ -f $$p/pyproject.toml ] && $(VPY) -m pip install -q -e $$p || true; done
	touch $(STAMP)

.PHONY: setup demo test lines typecheck
setup: $(STAMP)

demo: $(STAMP)
	$(VPY) examples/demo.py

lines:
	$(PY) scripts/linecount.py

typecheck: $(STAMP)
	$(VPY) -m mypy core/tinygrad

test: $(STAMP) lines typecheck
	SPEC=1 $(VPY) -m pytest -n 2 tests $(wildcard plugins/*/tests)
