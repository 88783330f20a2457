"""The linearizer's loop nest: accumulators are reset inside every loop their reduce runs in."""
import numpy as np
import pytest
from tinygrad import Tensor

def _window_sums(n: int, pad: int, k: int) -> np.ndarray:
  x = np.pad(np.ones((n, n), np.float32), ((0, pad), (0, pad)))
  m = x.shape[0] - k + 1
  return np.array([[x[i:i+k, j:j+k].sum() for j in range(m)] for i in range(m)], np.float32)

# found through ONNX AveragePool(count_include_pad=0): an upcast window sum whose lanes share the row-window range, one
# lane also reducing the column window; the shared range nested inside the lane loop while the first accumulator was
# reset outside it, so it summed twice (8 where 4 is right) on the CPU's heuristics, right with NOOPT and on PYTHON
@pytest.mark.parametrize("n,pad,k", [(32, 1, 2), (33, 1, 2), (17, 2, 3), (32, 2, 3), (64, 1, 2), (5, 1, 2)])
def test_window_sum_of_padded_ones(n, pad, k):
  got = Tensor.ones(n, n).pad((0, pad, 0, pad))._pool((k, k), 1, 1).sum((-2, -1)).numpy()
  np.testing.assert_array_equal(got, _window_sums(n, pad, k))

def test_avg_pool_excluding_padding_matches_torch():
  torch = pytest.importorskip("torch", reason="torch is the reference: pip install torch")
  x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
  want = torch.nn.functional.avg_pool2d(torch.tensor(x), 2, 1, padding=1, count_include_pad=False).numpy()
  got = Tensor(x).avg_pool2d(2, 1, padding=1, count_include_pad=False).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

# an upcast's two lanes stored as one vector: one lane's reduce closes the row and column windows, the other's reads only
# the column window, nested inside the row window by the first: its value was read inside that loop, the vector after
# it ("linearize: cyclic dependency"), in avg_pool2d(count_include_pad=False)'s gradient on the CPU's heuristics
@pytest.mark.parametrize("shape,k,s,p,ceil", [((6, 1), (2, 3), (4, 4), (1, 0), True), ((5, 5), (2, 4), (4, 4), (1, 1), False),
                                              ((4, 1), (3, 2), (1, 4), (1, 0), True)])
def test_lanes_of_shared_and_nested_reduces_in_one_vector(shape, k, s, p, ceil):
  torch = pytest.importorskip("torch", reason="torch is the reference: pip install torch")
  x = np.random.default_rng(0).standard_normal((1, 1, *shape)).astype(np.float32)
  tx = torch.tensor(x, requires_grad=True)
  torch.nn.functional.avg_pool2d(tx, k, s, p, ceil, False).sum().backward()
  gx = Tensor(x, requires_grad=True)
  gx.avg_pool2d(k, s, 1, p, ceil, False).sum().backward()
  np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
