"""The backend author's kit beyond the template (docs/plugins.md): which heuristics run for which abilities."""
import numpy as np
from tinygrad import Tensor
from tinygrad.codegen.kit import kernels, render
from tinygrad.codegen.opt import heuristic_opts, OptOps
from tinygrad.renderer.cstyle import CStyleLanguage
from tinygrad.uop.upat import graph_rewrite
from tinygrad.uop.symbolic import sym

class Loops(CStyleLanguage):
  """A plain C renderer: no launch grid, no threads, no vectors (what a new CPU-like backend starts as)."""
  has_local, global_max, local_max = False, None, None

def _matmul(n: int = 64):
  return graph_rewrite(kernels(Tensor.empty(n, n, device="PYTHON") @ Tensor.empty(n, n, device="PYTHON"))[0], sym)

def test_cpu_heuristics_run_without_threads_or_a_launch_grid():
  # they ran only for has_threads or has_local: a plain loop backend got a naive triple loop while the guide said
  # "the heuristics run by default"
  opts = heuristic_opts(_matmul(), Loops())
  assert {OptOps.UPCAST, OptOps.UNROLL} <= {o.op for o in opts}, opts
  assert sum(o.op is OptOps.UPCAST for o in opts) >= 2, f"no register blocking (two upcast axes): {opts}"
  assert heuristic_opts(_matmul(), Loops(cpu_heuristics=False)) == []
