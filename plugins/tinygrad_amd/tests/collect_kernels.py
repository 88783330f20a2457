"""A pytest plugin that records every kernel AST handed to get_program, to build the compile corpus of test_amd_compile.py.

Regenerate the corpus (a mock-driver conformance run; a few minutes):
  AMD_MOCK=1 TEST_DEVICES=AMD:LLVM AMD_KERNELS_OUT=plugins/tinygrad_amd/tests/data/conformance_kernels.pkl \\
    python -m pytest tests/conformance -p collect_kernels   (with plugins/tinygrad_amd/tests on PYTHONPATH)
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
  if (out := os.environ.get("AMD_KERNELS_OUT")):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 200000))   # deep graphs (long elementwise chains)
    with open(out, "wb") as f: pickle.dump(list(_seen), f)
    print(f"\nrecorded {len(_seen)} kernels to {out}")
