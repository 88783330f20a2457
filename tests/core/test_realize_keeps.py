"""A realize hands its intermediate results to the live graphs that read them: a KV-cache write computes x @ w, and the
queries read that buffer afterwards instead of running the matmul again. Never where autograd still needs the lazy graph
or where one buffer would alias two tensors."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.helpers import GlobalCounters
from tinygrad.uop import Ops

D, T = 8, 3

@pytest.fixture
def data():
  rng = np.random.default_rng(0)
  return rng.standard_normal((1, T, D)).astype(np.float32), rng.standard_normal((D, 3 * D)).astype(np.float32), \
    rng.standard_normal(3 * D).astype(np.float32)

def _reduces(t: Tensor) -> int:
  # the kernels realizing t that run a reduce (a matmul computed again)
  return sum(1 for ei in t.schedule() if ei.ast.op is Ops.SINK and any(u.op is Ops.REDUCE for u in ei.ast.toposort()))

def _cache_write(x: Tensor, w: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  # examples/gpt2.py's attention: qkv = x @ w + b, the keys and values written into the cache on their own realize
  cache = Tensor.zeros(2, 1, 4, D).contiguous().realize()
  xqkv = x @ w + b
  xq, xk, xv = [xqkv.shrink((None, None, (i * D, (i + 1) * D))) for i in range(3)]
  cache.shrink((None, None, (0, T), None)).assign(Tensor.stack(xk, xv)).realize()
  return cache, xqkv, xq

@pytest.mark.parametrize("no_grad", [False, True])
def test_the_queries_read_the_matmul_the_cache_write_computed(data, no_grad):
  xn, wn, bn = data
  prev = Tensor.no_grad
  Tensor.no_grad = no_grad
  try:
    rg = None if no_grad else False   # inputs that no gradient can reach, either way
    x, w, b = (Tensor(a, requires_grad=rg).realize() for a in data)
    cache, xqkv, xq = _cache_write(x, w, b)
    q = xq * 2
    assert _reduces(q) == 0
    GlobalCounters.reset()
    got = q.numpy()
    assert GlobalCounters.kernel_count == 1
  finally: Tensor.no_grad = prev
  ref = xn @ wn + bn
  np.testing.assert_allclose(got, 2 * ref[..., :D], rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(cache.numpy()[:, 0, :T], np.stack([ref[0, :, D:2*D], ref[0, :, 2*D:]]), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(xqkv.numpy(), ref, rtol=1e-5, atol=1e-5)

def test_a_graph_autograd_needs_is_computed_again_and_its_gradient_is_right(data):
  xn, wn, bn = data
  x, b = Tensor(xn, requires_grad=False).realize(), Tensor(bn, requires_grad=False).realize()
  w = Tensor(wn, requires_grad=True).realize()
  _, _, xq = _cache_write(x, w, b)
  assert _reduces(xq * 2) == 1   # the lazy graph stays: the gradient reaches w through it
  (xq * xq).sum().backward()
  q = (xn @ wn + bn)[..., :D]
  np.testing.assert_allclose(xq.numpy(), q, rtol=1e-5, atol=1e-5)
  want = np.zeros_like(wn)
  want[:, :D] = xn[0].T @ (2 * q[0])
  np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-4, atol=1e-4)

def test_a_result_two_tensors_hold_is_not_one_buffer_for_both(data):
  xn, wn, _ = data
  x, w = Tensor(xn, requires_grad=False).realize(), Tensor(wn, requires_grad=False).realize()
  a, b = x @ w, x @ w   # one (hash-consed) graph, two tensors
  assert a.uop is b.uop
  cache = Tensor.zeros(2, 1, T, D).contiguous().realize()
  s = (x @ w).shrink((None, None, (0, D)))
  cache.assign(Tensor.stack(s, s.exp())).realize()
  a += 1   # had both become one buffer, b would see this
  np.testing.assert_allclose(a.numpy(), xn @ wn + 1, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(b.numpy(), xn @ wn, rtol=1e-5, atol=1e-5)
  q = (xn @ wn)[..., :D]
  np.testing.assert_allclose(cache.numpy(), np.stack([q, np.exp(q)]), rtol=1e-5, atol=1e-5)

def test_a_kept_result_is_the_tensors_buffer_and_its_views_write_into_it(data):
  xn, wn, _ = data
  x, w = Tensor(xn, requires_grad=False).realize(), Tensor(wn, requires_grad=False).realize()
  y = x @ w
  v = y[:, :, :D]
  cache = Tensor.zeros(2, 1, T, D).contiguous().realize()
  cache.assign(Tensor.stack(v, v.exp())).realize()   # (the stack's padding makes the matmul a kernel of its own)
  assert _reduces(y + 0) == 0 and y._is_realized()
  v += 1   # a view writes into the tensor it views, as in torch
  want = xn @ wn
  want[..., :D] += 1
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
  q = (xn @ wn)[..., :D]
  np.testing.assert_allclose(cache.numpy(), np.stack([q, np.exp(q)]), rtol=1e-5, atol=1e-5)

def test_a_value_read_before_an_update_keeps_the_value_the_update_saw():
  # computed again after the assign, the sum would read the updated buffer: a second value (torch gives the first)
  w = Tensor([1.0, 2.0]).realize()
  s = (w * 3).sum()
  w.assign(w + s).realize()
  assert s.item() == 9.0
  np.testing.assert_allclose(w.numpy(), [10.0, 11.0])

def test_a_kept_result_keeps_its_value_when_an_input_is_updated_later(data):
  # (docs/guide.md, differences from public tinygrad: 0.14 computes the matmul again, reading the updated w)
  xn, wn, bn = data
  x, w, b = (Tensor(a, requires_grad=False).realize() for a in data)
  _, _, xq = _cache_write(x, w, b)
  w.assign(w + 1).realize()
  np.testing.assert_allclose(xq.numpy(), (xn @ wn + bn)[..., :D], rtol=1e-5, atol=1e-5)

def test_intermediates_are_looked_for_only_where_a_live_graph_may_read_them(monkeypatch):
  # (x - x.max()): the max is a kernel of its own, an intermediate. With a lazy tensor that reads it alive, the realize
  # hands its buffer on (that tensor runs no reduce again); with every other live tensor a buffer, nothing is looked for
  from tinygrad import tensor as tensor_mod
  from tinygrad.engine import realize as engine
  # the look is at every live tensor: one an earlier test left alive (a module global, a reference cycle, a traceback pytest
  # keeps) is not this test's, so it sees only the tensors made from here on (the earlier ones held: their ids stay theirs)
  earlier = {id(t): t for t in tensor_mod.live_tensors()}
  real_live = tensor_mod.live_tensors
  monkeypatch.setattr(tensor_mod, "live_tensors", lambda: [t for t in real_live() if id(t) not in earlier])
  calls: list[int] = []
  real = engine._completed
  monkeypatch.setattr(engine, "_completed", lambda *a: calls.append(1) or real(*a))
  xn = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
  x = Tensor(xn, requires_grad=False).realize()   # (no gradient can reach it: its graph need not stay lazy)
  y = (x - x.max()).realize()
  assert calls == [] and np.allclose(y.numpy(), xn - xn.max())
  z = x.max() * 2
  y2 = (x - x.max()).exp().realize()
  assert calls == [1] and _reduces(z) == 0
  np.testing.assert_allclose(z.numpy(), xn.max() * 2)
  np.testing.assert_allclose(y2.numpy(), np.exp(xn - xn.max()), rtol=1e-6)
