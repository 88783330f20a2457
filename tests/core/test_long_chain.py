"""A long chain of elementwise ops fuses into one kernel: building and compiling it must stay linear in the chain's length
(the simplifier's WHERE-gate check used to toposort each WHERE's whole branch: quadratic)."""
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp
from tinygrad.uop import symbolic

def _chain_np(a: np.ndarray, n: int) -> np.ndarray:
  for i in range(n): a = (a*np.float32(1.0001)+np.float32(0.5)) if i % 2 else np.maximum(a, np.float32(0))
  return a

def _chain(x: Tensor, n: int) -> Tensor:
  for i in range(n): x = (x*1.0001+0.5) if i % 2 else x.relu()
  return x

def test_long_mixed_chain_matches_numpy():
  a = np.random.default_rng(0).standard_normal(16).astype(np.float32)
  np.testing.assert_allclose(_chain(Tensor(a), 3000).numpy(), _chain_np(a, 3000), rtol=1e-5)

def _visited_by_gate_checks(n: int) -> int:
  # nodes walked by toposort while the simplifier checks WHERE gates on a chain of n relus (float gates: nothing to narrow)
  x = UOp.variable("x", -10, 10, dtypes.int32).cast(dtypes.float32)
  for _ in range(n): x = (x > 0).where(x, x.const_like(0.0)) * 1.5 + 0.25
  seen, orig = [0], UOp.toposort
  def counting(self, gate=None):
    ret = orig(self, gate)
    seen[0] += len(ret)
    return ret
  UOp.toposort = counting  # type: ignore[method-assign]
  try:
    for w in orig(x):
      if w.op is symbolic.Ops.WHERE: symbolic._where_gate(w, *w.src)
  finally: UOp.toposort = orig  # type: ignore[method-assign]
  return seen[0]

def test_where_gate_check_is_linear():
  a, b = _visited_by_gate_checks(300), _visited_by_gate_checks(600)
  assert b <= 3 * max(a, 1), f"gate checks walked {a} nodes for 300 WHEREs and {b} for 600: quadratic"
