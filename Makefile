# `make demo`, `make test` and `make notebooks`. Each builds .venv from scratch if needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The demo installs minijax and its data set's package only (not the test extras).
$(DEMO_STAMP): pyproject.toml $(VENV)/bin/python
	$(PY) -m pip install -q -e ".[demo]"
	touch $(DEMO_STAMP)

# Published JAX libraries that tests/ecosystem runs on minijax (pinned: its fixtures were
# recorded with these versions). They declare a dependency on jax, which minijax replaces,
# so they are installed with --no-deps; the `ecosystem` extra has their other dependencies.
ECOSYSTEM_LIBS := optax==0.2.8 chex==0.1.92 equinox==0.13.8 numpyro==0.22.0 flax==0.12.8

# Tests need the notebook extras too: tests/test_notebooks.py executes every notebook. The MPI
# extra (mpi4py + MPICH wheels, for tests/test_mpi.py under mpiexec) is best effort: where no
# wheel fits the platform those tests skip and say why.
$(STAMP): pyproject.toml Makefile $(VENV)/bin/python
	$(PY) -m pip install -q -e ".[test,notebooks,ecosystem]"
	$(PY) -m pip install -q --no-deps $(ECOSYSTEM_LIBS)
	$(PY) -m pip install -q -e ".[mpi]" || echo "MPI extra not installed; tests/test_mpi.py will skip"
	touch $(STAMP) $(DEMO_STAMP)

.PHONY: demo test lint bench notebooks cross-tools
demo: $(DEMO_STAMP)
	$(PY) examples/demo.py

test: $(STAMP) cross-tools
	$(PY) -m ruff check minijax tests benchmarks examples
	$(PY) -m pytest -n auto tests; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

lint: $(STAMP)
	$(PY) -m ruff check minijax tests benchmarks examples

bench: $(STAMP)
	$(PY) benchmarks/run.py

# Re-execute every notebook in place at full size, saving its outputs.
notebooks: $(STAMP)
	$(PY) notebooks/execute.py

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
