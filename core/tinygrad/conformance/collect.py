"""A pytest plugin that records every kernel AST handed to get_program: the corpus a backend's compile tests use.

Regenerate a backend's corpus with a conformance run on it (its mock driver works; a few minutes), e.g.:
  NV_MOCK=1 TEST_DEVICES=NV TINYGRAD_KERNELS_OUT=plugins/tinygrad_nv/tests/data/conformance_kernels.pkl \\
    python -m pytest tests/conformance -p tinygrad.conformance.collect
  AMD_MOCK=1 TEST_DEVICES=AMD:LLVM TINYGRAD_KERNELS_OUT=plugins/tinygrad_amd/tests/data/conformance_kernels.pkl \\
    python -m pytest tests/conformance -p tinygrad.conformance.collect
"""
import os, pickle, sys
import tinygrad.codegen as codegen

_seen: dict = {}
_orig = codegen.get_program

def _recording(ast, ren, opts=None):
  _seen.setdefault(ast, None)
  return _orig(ast, ren, opts)

def pytest_configure(config): codegen.get_program = _recording

def pytest_unconfigure(config):
  codegen.get_program = _orig
  if (out := os.environ.get("TINYGRAD_KERNELS_OUT")):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 200000))   # deep graphs (long elementwise chains)
    with open(out, "wb") as f: pickle.dump(list(_seen), f)
    print(f"\nrecorded {len(_seen)} kernels to {out}")
