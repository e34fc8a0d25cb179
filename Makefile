# Two commands: `make demo` and `make test`. Each builds .venv from scratch if needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

.PHONY: demo test lint bench cross-tools
demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP) cross-tools
	$(PY) -m ruff check minijax tests benchmarks examples
	$(PY) -m pytest -n auto tests; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

lint: $(STAMP)
	$(PY) -m ruff check minijax tests benchmarks examples

bench: $(STAMP)
	$(PY) benchmarks/run.py

# Best effort, for the AArch64 AOT test: as root with apt-get, install Debian's cross gcc and
# qemu-user when missing (about 15 s); otherwise that test skips and says why.
cross-tools:
	@if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null; then \
	  :; elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing gcc-aarch64-linux-gnu and qemu-user for the AArch64 AOT test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq \
	    --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user) \
	    >/dev/null 2>&1 || echo "cross tools not installed; the AArch64 run test will skip"; \
	fi
