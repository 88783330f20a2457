# Two entry points that work on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_CPU ?= 2.13.0+cpu

$(VPY):
	$(PY) -m venv $(VENV)

$(STAMP): $(VPY) pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e ".[test]"
	for p in $(dir $(wildcard plugins/*/pyproject.toml)); do $(VPY) -m pip install -q -e $$p || exit 1; done
	# torch, the tests' reference, as the CPU wheel (PyPI's default one pulls the CUDA stack, gigabytes this never uses):
	# without it the torch-reference tests skip naming torch, and fail under CI_STRICT=1
	$(VPY) -m pip install -q "torch==$(TORCH_CPU)" || $(VPY) -m pip install -q "torch==$(TORCH_CPU)" --index-url https://download.pytorch.org/whl/cpu \
	  || echo "torch $(TORCH_CPU) could not be installed: the torch-reference tests will skip (pip install torch --index-url https://download.pytorch.org/whl/cpu)"
	touch $(STAMP)

.PHONY: setup system demo test test-cl test-onnx test-cache-stress test-examples lines typecheck dist dist-test bench-check
setup: $(STAMP)

# the system toolchains the backends use (clang, lld, a Vulkan driver, comgr): installed when root with apt-get, else the
# backends that will be skipped are listed with the command that installs them; nothing runs when all are present.
# TINYGRAD_NO_SYSTEM_SETUP=1 skips it.
system:
	@scripts/setup_system.sh

demo: system $(STAMP)
	$(VPY) examples/demo.py

# a wheel and an sdist of the core and of every plugin, in dist/ (setuptools from the venv: no build isolation, no network)
dist: $(STAMP)
	rm -rf dist
	$(VPY) -m build -q --no-isolation --outdir dist .
	for p in $(dir $(wildcard plugins/*/pyproject.toml)); do $(VPY) -m build -q --no-isolation --outdir dist $$p || exit 1; done

# the core and tinygrad-cpu installed from wheels into a fresh venv, run from a temp folder (also part of make test)
dist-test: $(STAMP)
	$(VPY) -m pytest -q tests/test_dist.py

lines:
	$(PY) scripts/linecount.py

# onnx's whole backend test suite through tinygrad.nn.onnx on the CPU (make test runs its quick subset); the excluded tests
# and why are in tests/onnx/exclusions.txt
test-onnx: $(STAMP)
	TINYGRAD_ONNX_FULL=1 $(VPY) -m pytest -n 2 -p no:warnings tests/onnx

# the disk cache's stress test (processes, forks, CACHEDB switches, resets and evictions on one file) for a minute
# instead of make test's 1.5 s
test-cache-stress: $(STAMP)
	TINYGRAD_CACHE_STRESS_S=60 $(VPY) -m pytest -q tests/core/test_diskcache_concurrency.py -k stress

typecheck: $(STAMP)
	$(VPY) -m mypy core/tinygrad $(dir $(wildcard plugins/*/tinygrad_*/__init__.py)) $(dir $(wildcard examples/*/tinygrad_*/__init__.py))

# the CPU's other compilers, and NV and AMD on their mock drivers, run the same conformance suite, with fewer examples each
EXTRA_DEVICES := CPU:CLANG,CPU:GCC,NV,AMD:LLVM

# the suite's main run, every example on each (WEBGPU on llvmpipe: its conformance run measured 1m22s with -n 2 on this
# 2-core machine, plus ~20 s of its plugin tests)
SUITE_DEVICES := PYTHON,CPU,WEBGPU

test: system $(STAMP) lines typecheck
	SPEC=1 TEST_DEVICES=$(SUITE_DEVICES) $(VPY) -m pytest -n 2 --durations=15 tests $(wildcard plugins/*/tests)
	SPEC=1 NV_MOCK=1 AMD_MOCK=1 TEST_DEVICES=$(EXTRA_DEVICES) TINYGRAD_CONFORMANCE_QUICK=1 TINYGRAD_CONFORMANCE_SLOW=NV,AMD $(if $(CI_STRICT),REQUIRE_DEVICES=$(EXTRA_DEVICES)) \
	  $(VPY) -m pytest -n 2 tests/conformance
	# the suite under forced actions (every kernel they fit; the rest keep the heuristics): odd sizes padded and upcast on
	# the CPU, threads of a block and a grouped reduce on the PYTHON device (~35 s each on 2 cores)
	SPEC=1 OPTS=PADTO:0:3,UPCAST:0:3 TEST_DEVICES=CPU TINYGRAD_CONFORMANCE_QUICK=1 $(VPY) -m pytest -n 2 -q tests/conformance
	SPEC=1 OPTS=LOCAL:0:2,GROUPTOP:0:2 TEST_DEVICES=PYTHON TINYGRAD_CONFORMANCE_QUICK=1 $(VPY) -m pytest -n 2 -q tests/conformance

# examples/tinygrad_omp (a threaded OpenMP backend written from docs/plugins.md) through the conformance suite, installed
# as a user would (~7 min with --quick on the shared 2-core machine); make test runs its own tests and contract checks
test-examples: $(STAMP)
	rm -rf build/omp-site && $(VPY) -m pip install -q --no-deps --no-build-isolation --target build/omp-site ./examples/tinygrad_omp
	cd build && PYTHONPATH=omp-site CACHEDB=omp-cache.db PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 ../$(VPY) -m tinygrad.conformance OMP --quick -q -p no:cacheprovider

# bench/run.py's targets (bench/TARGETS.md) as a regression check, ratios to numpy within one run (~1 min on 2 cores): exits
# 1 when a target is missed in the run and two reruns of the missed rows; on a busy machine (load average above the core
# count, or noisy calibration runs) it prints "bench-check SKIPPED: <why>" and exits 0. .ci/run runs it after the tests
bench-check: $(STAMP)
	$(VPY) bench/run.py --check

# CL (OpenCL on POCL) runs the conformance suite here, outside make test's budget: POCL's compiles dominate (quick run:
# 19 min wall with -n 2 on the shared 2-core machine at load ~20, 4 min of CPU); its plugin tests are part of make test.
# .ci/run runs both.
test-cl: system $(STAMP)
	SPEC=1 TEST_DEVICES=CL TINYGRAD_CONFORMANCE_QUICK=1 $(if $(CI_STRICT),REQUIRE_DEVICES=CL) $(VPY) -m pytest -n 2 tests/conformance
