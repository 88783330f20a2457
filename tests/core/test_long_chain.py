"""A long chain of elementwise ops fuses into one kernel: building and compiling it must stay linear in the chain's length
(the simplifier's WHERE-gate check used to toposort each WHERE's whole branch, and the scheduler's shared-value rule walked
the whole graph below every relu's input: both quadratic). Work is counted, not timed."""
import collections, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.uop.ops import UOp, UOpMetaClass
from tinygrad.uop.upat import PatternMatcher
from tinygrad.uop import symbolic
from tinygrad.codegen import get_program

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

def _work(monkeypatch, fn) -> int:
  """fn()'s work: nodes visited by toposort + nodes tried by a rule table + UOps built."""
  n = collections.Counter()
  topo, rw, call = UOp.toposort, PatternMatcher.rewrite, UOpMetaClass.__call__
  def counting_topo(self, gate=None):
    ret = topo(self, gate)
    n["visited"] += len(ret)
    return ret
  def counting_rw(self, uop, ctx=None):
    n["tried"] += 1
    return rw(self, uop, ctx)
  def counting_call(cls, *a, **k):
    n["built"] += 1
    return call(cls, *a, **k)
  with monkeypatch.context() as m:
    m.setattr(UOp, "toposort", counting_topo)
    m.setattr(PatternMatcher, "rewrite", counting_rw)
    m.setattr(UOpMetaClass, "__call__", counting_call)
    fn()
  return sum(n.values())

def _calls(fn) -> int:
  """fn()'s work as the Python and C function calls it makes (every walk over nodes calls something per node)."""
  n = [0]
  def prof(frame, event, arg):
    if event in ("call", "c_call"): n[0] += 1
  sys.setprofile(prof)
  try: fn()
  finally: sys.setprofile(None)
  return n[0]

@pytest.mark.parametrize("inputs", [1, 3])
def test_scheduling_a_chain_is_linear(inputs):
  # the scheduler's shared-value rule walked everything below each relu's input (read twice: x > 0 and the where), and
  # from three inputs on also everything above it
  def sched(n: int) -> int: return _calls(lambda: _chain(sum((Tensor.empty(16) for _ in range(inputs)), Tensor.zeros(16)), n).schedule())
  a, b = sched(500), sched(1000)
  assert b <= 2.2 * a, f"scheduling a chain of 500 ops cost {a} calls, of 1000: {b}"

def test_codegen_of_a_chain_is_linear(monkeypatch):
  # the whole pipeline: schedule, then every codegen pass and the render (compiling is the compiler's)
  ren = Device[Device.DEFAULT].renderer
  def work(n: int) -> int: return _work(monkeypatch, lambda: get_program(_chain(Tensor.empty(16), n).schedule()[-1].ast, ren, compile=False))
  a, b = work(400), work(800)
  assert b <= 2.2 * a, f"a chain of 400 ops cost {a}, of 800: {b}"
