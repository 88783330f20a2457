"""A padded region's reads: a load under a PAD is gated by the pad's validity only where its index can leave its buffer
(schedule.py, KernelBuilder.load); a read in bounds for every index is ungated, and the PAD's WHERE gives the padded
region its zeros. The values must be numpy's for expressions whose value at 0 is not 0 (a bias, exp, a division), with
reduces inside and outside the pad, and broadcast operands of every size."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor
from tinygrad.uop import Ops

DEVICES = ["CPU", "PYTHON"]

def _np_pad(a: np.ndarray, pads: list[tuple[int, int]]) -> np.ndarray: return np.pad(a, pads)

def _gates(t: Tensor) -> dict[int, bool]:
  """Per buffer number of the last kernel: whether its load is gated."""
  ast = [si.ast for si in t.schedule() if si.ast.op is Ops.SINK][-1]
  out = {}
  for u in ast.toposort():
    if u.op is Ops.INDEX and u.src[0].op is Ops.DEFINE_GLOBAL and u.src[0].arg != 0: out[u.src[0].arg] = len(u.src) > 2
  return out

def test_per_channel_reads_under_a_pad_are_ungated():
  # a batchnorm's statistics under its output's pad (a conv's input): read in bounds everywhere, so without a gate (their
  # rsqrt and division leave the pixel loops); the padded input keeps its gate (its index leaves the buffer)
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
  mean, var = rng.standard_normal(3).astype(np.float32), rng.random(3).astype(np.float32) + 0.5
  tx, tm, tv = Tensor(x, device="CPU").realize(), Tensor(mean, device="CPU").realize(), Tensor(var, device="CPU").realize()
  y = ((tx - tm.reshape(1, 3, 1, 1)) / (tv.reshape(1, 3, 1, 1) + 1e-5).sqrt() + 0.5).relu().pad(((0, 0), (0, 0), (1, 1), (2, 1)))
  assert _gates(y) == {1: True, 2: False, 3: False}
  want = _np_pad(np.maximum((x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5) + 0.5, 0), [(0, 0), (0, 0), (1, 1), (2, 1)])
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
def test_padded_values(device):
  rng = np.random.default_rng(1)
  a, c = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((1, 6)).astype(np.float32)
  ta, tc = Tensor(a, device=device).realize(), Tensor(c, device=device).realize()
  cases = [
    (lambda: (ta + tc).exp().pad(((1, 2), (0, 3))), lambda: _np_pad(np.exp(a + c), [(1, 2), (0, 3)])),
    (lambda: (ta / (tc.abs() + 1)).pad(((2, 0), (1, 1))) + 1, lambda: _np_pad(a / (np.abs(c) + 1), [(2, 0), (1, 1)]) + 1),
    (lambda: (ta.sum(0, keepdim=True) + tc).pad(((1, 1), (0, 0))), lambda: _np_pad(a.sum(0, keepdims=True) + c, [(1, 1), (0, 0)])),
    (lambda: (ta.pad(((1, 1), (1, 1))) * 2 + 3).sum(1), lambda: (_np_pad(a, [(1, 1), (1, 1)]) * 2 + 3).sum(1)),
    (lambda: (ta + tc).pad(((0, 0), (2, 2)))[:, 1:-1].exp(), lambda: np.exp(_np_pad(a + c, [(0, 0), (2, 2)])[:, 1:-1])),
    (lambda: ta.cumsum(1) + tc, lambda: a.cumsum(1) + c),
    (lambda: (tc.expand(4, 6) - 1).pad(((1, 0), (0, 1))).reshape(5 * 7).pad(((3, 2),)),
     lambda: _np_pad(_np_pad(np.broadcast_to(c, (4, 6)) - 1, [(1, 0), (0, 1)]).reshape(35), [(3, 2)])),
  ]
  for i, (ours, ref) in enumerate(cases):
    np.testing.assert_allclose(ours().numpy(), ref(), rtol=1e-5, atol=1e-5, err_msg=f"case {i}")

@settings(max_examples=30, deadline=None)
@given(st.data())
def test_random_padded_expressions(data):
  shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape"))
  bshape = tuple(s if data.draw(st.booleans(), label="bcast") else 1 for s in shape)
  pads = [tuple(data.draw(st.integers(0, 2), label="pad") for _ in range(2)) for _ in shape]
  op = data.draw(st.sampled_from(["exp", "add", "div", "sqrt", "max"]), label="op")
  rng = np.random.default_rng(data.draw(st.integers(0, 1000), label="seed"))
  a, b = rng.standard_normal(shape).astype(np.float32), (rng.random(bshape) + 0.5).astype(np.float32)
  ta, tb = Tensor(a, device="CPU").realize(), Tensor(b, device="CPU").realize()
  f = {"exp": lambda x, y: (x * y).exp() if isinstance(x, Tensor) else np.exp(x * y), "add": lambda x, y: x + y + 1,
       "div": lambda x, y: x / y - 2, "sqrt": lambda x, y: (y + x * x).sqrt() if isinstance(x, Tensor) else np.sqrt(y + x * x),
       "max": lambda x, y: x.maximum(y) if isinstance(x, Tensor) else np.maximum(x, y)}[op]
  got = f(ta, tb).pad(tuple(pads)) + 0.25
  np.testing.assert_allclose(got.numpy(), _np_pad(f(a, b), pads) + 0.25, rtol=1e-5, atol=1e-5)
