"""Tests that need no OMP device: the corpus renders and compiles with OpenMP, and a matmul split by OpenMP is right."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.plugin_api import corpus, render
from tinygrad_omp.renderer import OMPRenderer
from tinygrad_omp.compiler import OMPCompiler, cc_path
from tinygrad_omp.runtime import OMPProgram
from tinygrad_omp.allocator import OMPAllocator

def compiler() -> OMPCompiler:
  if cc_path() is None: pytest.skip("no C compiler: install gcc")
  try: return OMPCompiler()
  except RuntimeError as e: pytest.skip(str(e).splitlines()[0])

def test_corpus_compiles_with_openmp():
  srcs = [render(ast, OMPRenderer).src.replace(f"void {ast.arg}(", f"void {name}(") for name, ast in corpus(OMPRenderer)]
  assert len(srcs) >= 10 and compiler().compile("\n".join(srcs))

def test_parallel_matmul_matches_numpy():
  spec = render(Tensor.empty(256, 96, device="PYTHON") @ Tensor.empty(96, 80, device="PYTHON"), OMPRenderer)
  assert "#pragma omp parallel for" in spec.src and "private(acc0" in spec.src
  prg, alloc = OMPProgram(spec.name, compiler().compile(spec.src)), OMPAllocator("OMP")
  rng = np.random.default_rng(0)
  a, b = rng.random((256, 96), dtype=np.float32), rng.random((96, 80), dtype=np.float32)
  bufs = [alloc.alloc(n) for n in (256 * 80 * 4, a.nbytes, b.nbytes)]
  alloc.copyin(bufs[1], memoryview(a.tobytes()))
  alloc.copyin(bufs[2], memoryview(b.tobytes()))
  for _ in range(5):
    assert prg(*bufs, wait=True) > 0
    out = np.empty((256, 80), np.float32)
    alloc.copyout(memoryview(out).cast("B"), bufs[0])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
