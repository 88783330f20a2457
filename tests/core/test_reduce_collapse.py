"""Reduces that need no loop (symbolic.py's _reduce_collapse) and what builds on them: an arange is index arithmetic, an
Embedding is a gather; and a tensor realized on the way to another result is not computed again."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes
from tinygrad.nn import Embedding
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.uop.symbolic import sym
from tinygrad.uop.upat import graph_rewrite

def _fold(u: UOp, vals: dict[UOp, int]) -> int:
  out = graph_rewrite(u.substitute({k: UOp.const(k.dtype, v) for k, v in vals.items()}), sym)
  assert out.op is Ops.CONST, out.render()
  return out.arg

def _reduces(asts: list[UOp]) -> int: return sum(u.op is Ops.REDUCE for a in asts for u in graph_rewrite(a, sym).toposort())

@settings(max_examples=40)
@given(n=st.integers(1, 40), c1=st.integers(-45, 45), c2=st.integers(-45, 45), a=st.integers(-3, 3), b=st.integers(-3, 3),
       neg=st.booleans(), xv=st.integers(0, 9))
def test_piecewise_sum_folds_to_a_count(n, c1, c2, a, b, neg, xv):
  # sum over r of nested WHEREs cut at r+x < c1 and c2 < x-r: no REDUCE left, and the loop's value for every x
  x = UOp.variable("x", 0, 9)
  r = UOp.range(n, 0, AxisType.REDUCE, dtypes.int32)
  inner = (UOp.const(dtypes.int32, c2) < (x - r) if neg else r < UOp.const(dtypes.int32, c2)).where(UOp.const(dtypes.int32, b), x)
  body = ((r + x) < UOp.const(dtypes.int32, c1)).where(UOp.const(dtypes.int32, a), inner)
  out = graph_rewrite(UOp(Ops.REDUCE, dtypes.int32, (body, r), Ops.ADD), sym)
  assert not any(u.op is Ops.REDUCE for u in out.toposort()), out.render()
  assert _fold(out, {x: xv}) == sum(_fold(body, {x: xv, r: i}) for i in range(n))

def test_one_hot_sum_is_a_gather():
  # sum_r (x == r ? v[r] : 0) reads v once, at x, gated by 0 <= x < n
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(10), (), 0)
  x = UOp.variable("x", -5, 20)
  r = UOp.range(10, 0, AxisType.REDUCE, dtypes.int32)
  body = x.eq(r).where(buf.index(r).load(), UOp.const(dtypes.float32, 0.0))
  out = graph_rewrite(UOp(Ops.REDUCE, dtypes.float32, (body, r), Ops.ADD), sym)
  assert [u.op for u in out.toposort()].count(Ops.LOAD) == 1 and not any(u.op is Ops.REDUCE for u in out.toposort())
  idx = next(u for u in out.toposort() if u.op is Ops.INDEX).src[1]
  for xv in (-5, -1, 0, 3, 9, 10, 20): assert 0 <= _fold(idx, {x: xv}) < 10   # the load stays in bounds

def test_one_hot_sum_over_a_xor_is_a_gather():
  # sum_r ((r ^ m) == x ? v[r] : 0) is v[x ^ m]: one load, no loop (a sort step's partner i ^ m, whose gradient sums over i)
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), (), 0)
  x, m = UOp.variable("x", 0, 15, dtypes.int32), UOp.variable("m", 0, 15, dtypes.int32)
  r = UOp.range(16, 0, AxisType.REDUCE, dtypes.int32)
  body = (r ^ m).eq(x).where(buf.index(r).load(), UOp.const(dtypes.float32, 0.0))
  out = graph_rewrite(UOp(Ops.REDUCE, dtypes.float32, (body, r), Ops.ADD), sym)
  assert [u.op for u in out.toposort()].count(Ops.LOAD) == 1 and not any(u.op is Ops.REDUCE for u in out.toposort()), out.render()
  idx = next(u for u in out.toposort() if u.op is Ops.INDEX).src[1]
  for xv, mv in ((3, 5), (0, 15), (9, 1), (15, 15)): assert _fold(idx, {x: xv, m: mv}) == xv ^ mv

@pytest.mark.parametrize("neg", [False, True])
def test_one_hot_sum_against_a_shifted_range_is_a_gather(neg):
  # sum_r (x == r + e ? v[r] : 0) (a shard's or a slice's arange starts at e; or x == e - r) reads v once, at x - e (e - x):
  # it was a loop adding 0.0s, which turned a picked -0.0 into 0.0 (a gather across shards) and read all of v
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(10), (), 0)
  x, e = UOp.variable("x", -5, 30), UOp.variable("e", 0, 12)
  r = UOp.range(10, 0, AxisType.REDUCE, dtypes.int32)
  body = x.eq(e - r if neg else r + e).where(buf.index(r).load(), UOp.const(dtypes.float32, 0.0))
  out = graph_rewrite(UOp(Ops.REDUCE, dtypes.float32, (body, r), Ops.ADD), sym)
  assert [u.op for u in out.toposort()].count(Ops.LOAD) == 1 and not any(u.op is Ops.REDUCE for u in out.toposort())
  idx = next(u for u in out.toposort() if u.op is Ops.INDEX).src[1]
  gate = next(u for u in out.toposort() if u.op is Ops.WHERE and u.dtype == dtypes.float32).src[0]
  for xv in range(-5, 31):
    for ev in (0, 3, 12):
      want = ev - xv if neg else xv - ev
      assert bool(_fold(gate, {x: xv, e: ev})) == (0 <= want < 10) and 0 <= _fold(idx, {x: xv, e: ev}) < 10
      if 0 <= want < 10: assert _fold(idx, {x: xv, e: ev}) == want

def test_narrowing_cast_sinks_to_the_leaves():
  x = UOp.variable("x", 0, 100, dtypes.int32)
  assert graph_rewrite((x.cast(dtypes.int64) * -1 + 50256).cast(dtypes.int32), sym).render() == "((x*-1)+50256)"
  big = UOp.variable("b", 0, 2**40, dtypes.int64)
  assert graph_rewrite((big * 2 + 1).cast(dtypes.int32), sym).op is Ops.CAST   # may wrap: stays a cast of the sum

@pytest.mark.parametrize("n", [1, 7, 257, 50257, 65537])
def test_arange_is_index_arithmetic(n):
  # one kernel that stores its index (before: a blocked cumsum, or index tables realized in kernels of their own)
  sched = Tensor.arange(n).schedule()
  assert len(sched) == 1 and _reduces([si.ast for si in sched]) == 0

def test_arange_values():
  np.testing.assert_equal(Tensor.arange(300).numpy(), np.arange(300))
  np.testing.assert_equal(Tensor.arange(5, 70000, 3).numpy(), np.arange(5, 70000, 3))
  np.testing.assert_equal(Tensor.arange(70000, 0, -7).numpy(), np.arange(70000, 0, -7))

def test_embedding_is_a_gather():
  torch = pytest.importorskip("torch", reason="the reference: pip install torch")
  emb = Embedding(50257, 8)
  idx = [[5, 50256, 0], [17, 17, 40000]]
  out = emb(Tensor(idx))
  # no reduce over the vocabulary: each output reads one row
  assert _reduces([si.ast for si in out.schedule()]) == 0
  ref = torch.nn.functional.embedding(torch.tensor(idx), torch.from_numpy(emb.weight.numpy()))
  np.testing.assert_equal(out.numpy(), ref.numpy())

@pytest.mark.parametrize("dt", [dtypes.uint8, dtypes.float32, dtypes.int64])
def test_tensor_index_is_a_gather(dt):
  # x[idx] over a table whose rows are broadcast (images: the one-hot mask is expanded over each row's pixels): the mask was
  # realized as an expanded producer, so the sum read every row of the table for every index (60000 rows: 3 s, not 1 ms)
  rng = np.random.default_rng(0)
  table = rng.integers(0, 200, (3000, 1, 4, 5)).astype(dt.fmt if dt != dtypes.float32 else np.float32)
  X = Tensor(table).realize()
  for idx in (rng.integers(-3000, 3000, 37), rng.integers(0, 3000, (4, 6))):
    I = Tensor(idx.astype(np.int32)).realize()
    for got, want in ((X[I], table[idx]), (X[I + 0, :, 1:3], table[idx, :, 1:3]), (X[:, 0][I], table[:, 0][idx])):
      assert _reduces([si.ast for si in got.schedule()]) == 0
      np.testing.assert_equal(got.numpy(), want)

def test_gather_by_a_xor_of_an_arange_and_its_gradient_are_loads():
  # the index arange ^ m, expanded over the gathered axis, was realized as a costly expanded producer: the forward read it
  # back, and the gradient's sum over the index positions compared a loaded index with r, a loop of n per element
  rng = np.random.default_rng(2)
  a, w = rng.standard_normal((3, 64)).astype(np.float32), rng.standard_normal((3, 64)).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  idx = (Tensor.arange(64) ^ Tensor([5], dtype=dtypes.int32)).reshape(1, 64).expand(3, 64)
  out = x.gather(1, idx)
  (out * Tensor(w)).sum().backward()
  assert _reduces([si.ast for si in out.schedule()]) == 0 and _reduces([si.ast for si in x.grad.schedule()]) == 0
  perm = np.arange(64) ^ 5
  np.testing.assert_equal(out.numpy(), a[:, perm])
  np.testing.assert_equal(x.grad.numpy(), w[:, perm])   # (perm is its own inverse)

def test_a_gather_read_by_two_kernels_is_a_load_in_each():
  # a one-hot sum over a buffer is one load wherever it is read: it was realized into a kernel of its own first
  X, I = Tensor(np.arange(100, dtype=np.float32)).realize(), Tensor(np.array([7, 3, 99, 0], dtype=np.int32)).realize()
  g = X.gather(0, I)
  a, b = g + 1, g * 2
  assert len(Tensor.schedule(a, b)) == 2
  np.testing.assert_equal(a.numpy(), [8, 4, 100, 1])
  np.testing.assert_equal(b.numpy(), [14, 6, 198, 0])

def test_one_hot_cross_entropy_reads_one_logit_per_row():
  torch = pytest.importorskip("torch", reason="the reference: pip install torch")
  logits, y = np.random.default_rng(1).standard_normal((16, 1000)).astype(np.float32), np.arange(16) * 61 % 1000
  loss = Tensor(logits).sparse_categorical_crossentropy(Tensor(y))
  ref = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(y))
  np.testing.assert_allclose(loss.numpy(), ref.numpy(), rtol=1e-5)

def test_the_collapse_decision_is_kept_on_disk(tmp_path, monkeypatch):
  # a warm process reads it instead of running the simplifier, which it would import and compile for this alone
  from tinygrad import diskcache
  from tinygrad.helpers import Context
  from tinygrad.uop import upat
  from tinygrad.engine.schedule import _collapses
  monkeypatch.setenv("CACHEDB", str(tmp_path / "c.db"))
  diskcache.reset()
  try:
    out = Embedding(50257, 8)(Tensor([[5, 50256, 0]]))
    rs = [u for u in out.uop.toposort() if u.op is Ops.REDUCE_AXIS]
    cold = [_collapses(r) for r in rs]
    assert any(cold)
    def refuse(*a, **k): raise AssertionError("the simplifier ran")
    monkeypatch.setattr(upat, "graph_rewrite", refuse)
    assert [_collapses(r) for r in rs] == cold
    with Context(CACHELEVEL=0), pytest.raises(AssertionError, match="simplifier ran"): [_collapses(r) for r in rs]
  finally: diskcache.reset()

@pytest.fixture
def no_grad():
  old, Tensor.no_grad = Tensor.no_grad, True
  yield
  Tensor.no_grad = old

def test_contiguous_realized_for_an_assign_is_not_computed_again(no_grad):
  # a KV-cache decode: the layer's input (a CONTIGUOUS) is realized by the cache write; what reads it later reads its buffer
  w = Tensor.rand(16).realize()
  cache = Tensor.zeros(16).contiguous().realize()
  h = (w * 2).contiguous()
  y = h + 5   # built before the realize: its graph holds h's CONTIGUOUS
  cache.assign(h + 1).realize()
  assert len((h * 3).schedule()) == 1 and len(y.schedule()) == 1   # before: h's kernel ran again in each
  np.testing.assert_allclose((h * 3).numpy(), w.numpy() * 6, rtol=1e-6)
  np.testing.assert_allclose(y.numpy(), w.numpy() * 2 + 5, rtol=1e-6)
  np.testing.assert_allclose(cache.numpy(), w.numpy() * 2 + 1, rtol=1e-6)

def test_contiguous_kept_lazy_where_autograd_needs_it():
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  cache = Tensor.zeros(3).contiguous().realize()
  h = (w * 2).contiguous()
  cache.assign(h.detach() + 1).realize()
  (h * 3).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), [6.0, 6.0, 6.0])

def _stored(ast: UOp) -> int:
  # elements a kernel stores: the product of its global ranges
  return int(np.prod([u.src[0].arg for u in ast.toposort() if u.op is Ops.RANGE and u.arg[1] is AxisType.GLOBAL]))

VIEWS = {"shrink": lambda t: t[1:3], "permuted": lambda t: t.permute(1, 0, 2)[2:4, :1], "flipped": lambda t: t.flip(0)[1:],
         "strided": lambda t: t[::2, 1], "reshaped": lambda t: t.reshape(6, 8)[1:4, 2:6]}

@pytest.mark.parametrize("view", VIEWS)
def test_view_assign_writes_only_the_view(view):
  # the assign kernel stores the view's elements, not the whole buffer with the rest rewritten from itself
  base_np = np.arange(48, dtype=np.float32).reshape(3, 4, 4)
  t = Tensor(base_np).contiguous().realize()
  v = VIEWS[view](t)
  val = np.random.default_rng(0).standard_normal(v.shape).astype(np.float32)
  v.assign(Tensor(val))
  sched = t.schedule()
  # (a strided view's inverse holds a SHRINK: not one-to-one, the whole buffer is stored, as before)
  assert [_stored(si.ast) for si in sched] == [int(np.prod(v.shape)) if view != "strided" else base_np.size], view
  ref = base_np.copy()
  rv = {"shrink": lambda a: a[1:3], "permuted": lambda a: a.transpose(1, 0, 2)[2:4, :1], "flipped": lambda a: a[::-1][1:],
        "strided": lambda a: a[::2, 1], "reshaped": lambda a: a.reshape(6, 8)[1:4, 2:6]}[view](ref)
  rv[...] = val
  np.testing.assert_equal(t.numpy(), ref)

def test_kv_cache_write_computes_only_its_position():
  # cache[:, :, v:v+1] = f(x) under a bound Variable: one kernel storing the new position's elements
  from tinygrad import Variable
  cache = Tensor.zeros(2, 1, 8, 2, 4).contiguous().realize()
  x, w = Tensor.rand(1, 1, 2, 4).realize(), Tensor.rand(4, 4).realize()
  xk = x @ w
  sp = Variable("sp", 1, 7).bind(3)
  cache.shrink((None, None, (sp, sp + 1), None, None)).assign(Tensor.stack(xk, xk * 2))
  stored = [_stored(si.ast) for si in cache.schedule()]
  # the write (last) stores the 16 new elements; the k/v matmuls may get kernels of their own, none covers the cache's 128
  assert stored[-1] == 16 and max(stored) < 128, stored
  ref = np.zeros((2, 1, 8, 2, 4), np.float32)
  ref[0, :, 3:4], ref[1, :, 3:4] = x.numpy() @ w.numpy(), x.numpy() @ w.numpy() * 2
  np.testing.assert_allclose(cache.numpy(), ref, rtol=1e-6)

def test_early_exit_walks_answer_as_the_full_toposorts():
  # find_realizes asks "only index ops below?" (_collapses) and "at least n ALU ops above the realized nodes?"
  # (_alu_at_least) with walks that stop at the answer; they must agree with counting every node below
  from tinygrad.engine.schedule import _alu_at_least, _collapses, _INDEX_ONLY
  from tinygrad.uop import GroupOp
  a, b = Tensor.empty(8, 8), Tensor.empty(8, 8)
  x = ((a @ b).relu() * 2 + a.exp()).sum(1, keepdim=True) + Tensor.arange(8).reshape(8, 1).float() + Tensor.ones(8, 8).cumsum(1)
  nodes = list(x.uop.toposort())
  realizes = {n: None for n in nodes[::7] if n.op in GroupOp.ALU}
  for u in nodes:
    if u.op in GroupOp.ALU and u not in realizes:
      count = sum(1 for v in u.toposort(gate=lambda v: v not in realizes and v.op is not Ops.BUFFER) if v.op in GroupOp.ALU and v not in realizes)
      assert all(_alu_at_least(u, realizes, k) == (count >= k) for k in range(1, 6)), (u.op, count)
  got = {}
  for r in (u for u in nodes if u.op is Ops.REDUCE_AXIS):
    other_below = any(v.op not in _INDEX_ONLY for v in r.toposort(gate=lambda v: v.op in _INDEX_ONLY))
    got[r] = _collapses(r)
    if other_below: assert not got[r]
  assert set(got.values()) == {True, False}   # the arange's cumsum collapses, the matmul's sum does not
