"""Scheduler: an elementwise value several kernels read is computed once when inlining it would load many buffers in
each reader (a transformer's residual stream), and recomputed where it is cheap."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops

def _kernels(*ts: Tensor) -> list:
  return [ei.ast for ei in Tensor.schedule(*ts) if ei.ast.op is Ops.SINK]

def _layer_norm(x: Tensor) -> Tensor:
  m = x.mean(-1, keepdim=True)
  return (x - m) * ((x - m).square().mean(-1, keepdim=True) + 1e-5).rsqrt()

@pytest.mark.parametrize("layers", [1, 3, 12])
def test_a_residual_stream_is_computed_once_per_layer(layers):
  rng = np.random.default_rng(0)
  x0 = rng.standard_normal((5, 7)).astype(np.float32)
  ws = [rng.standard_normal((7, 7)).astype(np.float32) * 0.3 for _ in range(layers)]
  x = Tensor(x0)
  for w in ws: x = x + _layer_norm(x) @ Tensor(w)   # x + f(norm(x)): x is read by the norm's kernels and by the next add
  asts = _kernels(x)
  # every kernel reads a bounded number of buffers (inlined, layer l's kernels re-added all l earlier layers' outputs)
  worst = max(sum(u.op is Ops.DEFINE_GLOBAL for u in a.toposort()) for a in asts)
  assert worst <= 6, f"a kernel with {worst} buffers"
  ref = x0
  for w in ws:
    m = ref.mean(-1, keepdims=True)
    ref = ref + ((ref - m) / np.sqrt(((ref - m) ** 2).mean(-1, keepdims=True) + 1e-5)) @ w
  np.testing.assert_allclose(x.numpy(), ref, rtol=1e-4, atol=1e-4)

def test_a_cheap_shared_value_is_still_recomputed():
  # a*b read by two kernels loads two buffers: recomputing it costs less than a kernel and a round trip through memory
  a, b = Tensor.empty(64, 64), Tensor.empty(64, 64)
  y = a * b
  assert len(_kernels(y.sum(0), y.max(1))) == 2

def test_a_detach_between_a_shared_value_and_its_readers_changes_nothing():
  # a DETACH computes nothing, but the scheduler counted it as the value's one reader: v.detach() read by two reducing
  # kernels was inlined into both (2 kernels, 1.96x the ops) where v itself is computed once (3 kernels)
  from tinygrad import GlobalCounters
  rng = np.random.default_rng(1)
  xs = [Tensor(rng.standard_normal((64, 64)).astype(np.float32)).realize() for _ in range(5)]
  counts, vals = [], []
  for detach in (False, True):
    v = (xs[0].exp() * xs[1].sin() + xs[2].cos() * xs[3] + xs[4]).abs().sqrt()
    if detach: v = v.detach()
    a, b = v.sum(0), v.max(1)
    GlobalCounters.reset()
    Tensor.realize(a, b)
    counts.append((GlobalCounters.kernel_count, GlobalCounters.global_ops))
    vals.append((a.numpy(), b.numpy()))
  assert counts[0] == counts[1]
  for x, y in zip(*vals): np.testing.assert_array_equal(x, y)
