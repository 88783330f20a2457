"""Eager plans (engine/realize.py): a realize of a pure graph built again runs its kernels from a plan made once, with no
scheduling or lowering. A plan must give what the full path gives: new inputs and new values in them each call, a fresh
result buffer each call, constants kept apart by value and sign, and it must not outlive the schedule cache, the method
cache or the flags it was made from. Each test fails if a plan returned a stale result."""
import math
import numpy as np, pytest
from tinygrad import Tensor, Context, dtypes
from tinygrad.helpers import GlobalCounters
from tinygrad.engine import realize as R, schedule as S

@pytest.fixture
def spy(monkeypatch):
  hits: list = []
  orig = R.run_eager_plan
  def run(*a, **k):
    hits.append(1)
    return orig(*a, **k)
  monkeypatch.setattr(R, "run_eager_plan", run)
  return hits

def test_plan_runs_and_reads_new_inputs_each_call(spy):
  xs = [Tensor(np.arange(8, dtype=np.float32) * i).realize() for i in range(5)]
  outs = [(x * 2 + 1).realize() for x in xs]   # same structure, another input buffer each call
  assert spy, "no realize ran from a plan"
  for i, o in enumerate(outs): np.testing.assert_equal(o.numpy(), np.arange(8, dtype=np.float32) * i * 2 + 1)

def test_plan_reads_the_inputs_current_values(spy):
  w = Tensor.zeros(4).contiguous().realize()
  for i in range(5):
    y = (w + 1).realize()
    assert y.tolist() == [float(i + 1)] * 4
    w.assign(y).realize()   # the input's buffer is rewritten in place between calls
  assert spy

def test_plan_gives_a_fresh_result_buffer_each_call(spy):
  x = Tensor([1.0, 2.0, 3.0]).realize()
  ys = [(x + 1).realize() for _ in range(4)]
  assert len({id(y.uop.buffer) for y in ys}) == 4
  ys[-1].assign(ys[-1] * 0).realize()
  assert ys[-2].tolist() == [2.0, 3.0, 4.0] and ys[-1].tolist() == [0.0, 0.0, 0.0]
  assert spy

def test_input_order_and_repeated_inputs(spy):
  a, b = Tensor([1.0, 2.0]).realize(), Tensor([10.0, 20.0]).realize()
  for _ in range(3):
    assert (a - b).tolist() == [-9.0, -18.0]
    assert (b - a).tolist() == [9.0, 18.0]
    assert (a - a).tolist() == [0.0, 0.0]   # one input twice: another structure than two inputs
    assert (b - b).tolist() == [0.0, 0.0]
    assert ((a + b) * a).tolist() == [11.0, 44.0]   # the same nodes in the same order, another edge
    assert ((a + b) * b).tolist() == [110.0, 440.0]
  assert spy

def test_the_input_device_is_the_key(spy):
  # (a graph of two inputs and no constant has no DEVICE node of its own: only the inputs say where it runs)
  for _ in range(3):
    for dev in ("CPU", "PYTHON"):
      a, b = Tensor([1.0, 2.0], device=dev).realize(), Tensor([3.0, 4.0], device=dev).realize()
      y = (a * b).realize()
      assert y.device == dev and y.tolist() == [3.0, 8.0]
  assert spy

def test_constants_kept_apart_by_sign_and_nan(spy):
  x = Tensor([-1.0, 2.0]).realize()
  def bits(t): return t.numpy().view(np.uint32).tolist()
  for _ in range(3):
    assert bits((x * 0.0).realize()) == bits(Tensor([-0.0, 0.0]))
    assert bits((x * -0.0).realize()) == bits(Tensor([0.0, -0.0]))
    assert all(math.isnan(v) for v in (x + float("nan")).tolist())
    assert (x + 1).tolist() == [0.0, 3.0] and (x + 2).tolist() == [1.0, 4.0]
  assert spy

def test_dtype_and_shape_are_the_key(spy):
  for _ in range(3):
    assert (Tensor([1, 2, 3], dtype=dtypes.int32).realize() * 3).tolist() == [3, 6, 9]
    assert (Tensor([1.5, 2.5, 3.5]).realize() * 3).tolist() == [4.5, 7.5, 10.5]
    assert (Tensor([1.5, 2.5]).realize() * 3).tolist() == [4.5, 7.5]
  assert spy

def test_matmul_reduce_and_a_view_of_a_lazy_tensor(spy):
  rng = np.random.default_rng(0)
  an, bn = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((16, 8)).astype(np.float32)
  a, b = Tensor(an).realize(), Tensor(bn).realize()
  for _ in range(3):
    np.testing.assert_allclose((a @ b).realize().numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    s = ((a * 2 + 1).relu()).sum().realize()   # a reshape view of its reduce: realized into a buffer of its own
    assert s._view_of is None, "a realized view of a lazy tensor leaves its base"
    np.testing.assert_allclose(s.numpy(), np.maximum(an * 2 + 1, 0).sum(), rtol=1e-5)
    m = (a - a.max(axis=1, keepdim=True)).exp().realize()   # two kernels: the max is an intermediate
    np.testing.assert_allclose(m.numpy(), np.exp(an - an.max(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6)
  assert spy

def test_an_intermediate_a_live_graph_reads_is_handed_on():
  # a plan that writes an intermediate runs only when no live lazy graph may read it: else the full path hands it on (the
  # live graph reads its buffer instead of computing it again)
  from tinygrad.uop import Ops
  a = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4), requires_grad=False).realize()
  for _ in range(3): (a - a.max(axis=1, keepdim=True)).exp().realize()
  mx = a.max(axis=1, keepdim=True)
  other = mx + 1   # a live lazy graph reading the same max
  y = (a - mx).exp().realize()
  np.testing.assert_allclose(y.numpy(), np.exp(a.numpy() - a.numpy().max(1, keepdims=True)), rtol=1e-6)
  assert not any(n.op is Ops.REDUCE_AXIS for n in other.uop.toposort()), "the max was not handed on to the live graph"
  assert other.tolist() == [[4.0], [8.0], [12.0]]

def test_backward_after_a_planned_realize():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  w = Tensor([4.0, 5.0, 6.0]).realize()
  for _ in range(3): (x.detach() * w).sum().realize()
  x.realize()
  for _ in range(3):
    x.grad = None
    loss = (x * w).sum().realize()   # realized from the plan: the graph is kept for backward
    loss.backward()
    assert x.grad is not None and x.grad.tolist() == [4.0, 5.0, 6.0]

def test_counters_as_the_full_path():
  x = Tensor.rand(64).realize()
  for _ in range(3): (x + 1).realize()
  GlobalCounters.reset()
  (x + 1).realize()
  assert GlobalCounters.kernel_count == 1 and GlobalCounters.global_mem > 0

def test_method_cache_clear_drops_plans():
  x = Tensor([1.0, 2.0]).realize()
  for _ in range(3): (x * 7).realize()
  assert R.eager_plans
  R.method_cache.clear()
  assert not R.eager_plans
  assert (x * 7).tolist() == [7.0, 14.0]
  assert R.method_cache, "a realize after method_cache.clear() must compile again, not run a plan's old runner"

def test_schedule_cache_clear_drops_plans():
  x = Tensor([1.0, 2.0]).realize()
  for _ in range(3): (x * 9).realize()
  S._schedule_cache.clear()
  assert not R.eager_plans
  (x * 9).realize()
  assert S._schedule_cache, "a realize after the schedule cache was cleared must schedule again"

def test_a_flag_change_makes_a_new_plan(spy):
  x = Tensor.rand(256).realize()
  for _ in range(3): (x * 3 + 1).realize()
  spy.clear()
  with Context(NOOPT=1):
    y = (x * 3 + 1).realize()
    assert not spy, "a plan made before Context(NOOPT=1) ran its optimized kernel inside it"
    assert any(k[-1][0] == 1 for k in R.method_cache), "the NOOPT kernel was not looked up"
  np.testing.assert_allclose(y.numpy(), x.numpy() * 3 + 1, rtol=1e-6)

def _two_kernel_plan():
  # a realized input and a two-kernel graph of it (a max, then the exp that reads it), realized until it has its plan
  a = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
  make = lambda: (a - a.max(axis=1, keepdim=True)).exp()
  for _ in range(3): make().realize()
  return a, make

def _finishes_with_the_second_kernel(t: Tensor, a: Tensor):
  # the max that ran is kept (the graph reads its buffer): realizing t again runs the second kernel only, to the right value
  from tinygrad.uop import Ops
  assert not any(n.op is Ops.REDUCE_AXIS for n in t.uop.toposort())
  GlobalCounters.reset()
  np.testing.assert_allclose(t.numpy(), np.exp(a.numpy() - a.numpy().max(1, keepdims=True)), rtol=1e-6)
  assert GlobalCounters.kernel_count == 1

def _realize_interrupted(monkeypatch, before_call, raises, match: str | None = None) -> tuple[Tensor, Tensor, list[int]]:
  # the two-kernel plan's graph realized with `before_call(n)` run before its n-th kernel launch (1 first), which makes the
  # realize raise `raises`; the launches are counted, and the runner is put back afterwards
  a, make = _two_kernel_plan()
  calls: list[int] = []
  orig = R.CompiledRunner.__call__
  def hooked(self, *args, **kw):
    calls.append(1)
    before_call(len(calls))
    return orig(self, *args, **kw)
  monkeypatch.setattr(R.CompiledRunner, "__call__", hooked)
  t = make()
  with pytest.raises(raises, match=match): t.realize()
  monkeypatch.setattr(R.CompiledRunner, "__call__", orig)
  return t, a, calls

def test_a_kernel_failing_part_way_keeps_what_ran(monkeypatch):
  # a two-kernel plan whose second kernel raises: the tensor stays lazy and realizes again to the right value
  def fail_second(n: int) -> None:
    if n == 2: raise RuntimeError("injected")
  t, a, _ = _realize_interrupted(monkeypatch, fail_second, RuntimeError, "injected")
  _finishes_with_the_second_kernel(t, a)

def test_ctrl_c_during_a_planned_kernel_stops_after_it(monkeypatch):
  # a SIGINT while the first of two kernels runs is held until it ends: the run stops there, the max it computed is kept
  # (the graph reads its buffer), and the tensor realizes later with the second kernel only
  import signal
  def interrupt_first(n: int) -> None:
    if n == 1: signal.raise_signal(signal.SIGINT)
  t, a, calls = _realize_interrupted(monkeypatch, interrupt_first, KeyboardInterrupt)
  assert len(calls) == 1, "the second kernel ran after a Ctrl-C"
  _finishes_with_the_second_kernel(t, a)

def test_random_pure_graphs_against_numpy(spy):
  # many small graphs of one structure family (same shapes, inputs and op count; other ops, axes, orders, constants), run
  # interleaved three times each with new input values: a key that confused two of them returns the other's kernel.
  # (the structure ids start afresh: the table is cleared when full, and a clear part-way through, in a worker that ran
  # many tests before, makes the graphs after it record their plans again: fewer plan runs than the bound below)
  R._EK_IDS.clear()
  rng = np.random.default_rng(1)
  unary = [(lambda t: t * 2, lambda n: n * 2), (lambda t: t + 1, lambda n: n + 1), (lambda t: t - 1, lambda n: n - 1),
           (lambda t: t.relu(), lambda n: np.maximum(n, 0)), (lambda t: -t, lambda n: -n), (lambda t: t * -0.5, lambda n: n * -0.5)]
  binary = [(lambda p, q: p + q, lambda p, q: p + q), (lambda p, q: p - q, lambda p, q: p - q), (lambda p, q: p * q, lambda p, q: p * q),
            (lambda p, q: p.maximum(q), np.maximum)]
  move = [(lambda t: t, lambda n: n), (lambda t: t.T, lambda n: n.T), (lambda t: t.flip(0), lambda n: n[::-1]), (lambda t: t.flip(1), lambda n: n[:, ::-1])]
  reduce = [(lambda t: t, lambda n: n), (lambda t: t.sum(0, keepdim=True).expand(4, 4), lambda n: np.broadcast_to(n.sum(0, keepdims=True), (4, 4))),
            (lambda t: t.max(1, keepdim=True).expand(4, 4), lambda n: np.broadcast_to(n.max(1, keepdims=True), (4, 4)))]
  graphs = []
  for _ in range(40):
    u1, u2, b, m1, m2, r = unary[rng.integers(6)], unary[rng.integers(6)], binary[rng.integers(4)], move[rng.integers(4)], move[rng.integers(4)], reduce[rng.integers(3)]
    order = rng.integers(3)   # which inputs: (p, q), (q, p) or (p, p)
    def run(p, q, u1=u1, u2=u2, b=b, m1=m1, m2=m2, r=r, order=order):
      x, y = (p, q) if order == 0 else (q, p) if order == 1 else (p, p)
      return r[0](b[0](u1[0](m1[0](x)), u2[0](m2[0](y))))
    def want(p, q, u1=u1, u2=u2, b=b, m1=m1, m2=m2, r=r, order=order):
      x, y = (p, q) if order == 0 else (q, p) if order == 1 else (p, p)
      return r[1](b[1](u1[1](m1[1](x)), u2[1](m2[1](y))))
    graphs.append((run, want))
  for _ in range(3):
    for run, want in graphs:
      pn, qn = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)
      got = run(Tensor(pn).realize(), Tensor(qn).realize()).realize().numpy()
      np.testing.assert_allclose(got, want(pn, qn), rtol=1e-6, atol=1e-6)
  assert len(spy) >= 20   # (not all: one whose intermediate a live lazy tensor reads runs the full path)
