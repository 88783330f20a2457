"""The fusion contract: how many kernels common graphs schedule into (inputs realized first; copies are not kernels)."""
import numpy as np
from tinygrad import Tensor
from tinygrad.uop import Ops

def schedule(*ts: Tensor) -> list:
  if hasattr(Tensor, "schedule"): return ts[0].schedule(*ts[1:])
  from tinygrad.engine.schedule import create_schedule
  out = create_schedule([t.uop for t in ts])
  return out[0] if isinstance(out, tuple) else out

def kernels(*ts: Tensor) -> int: return len([ei for ei in schedule(*ts) if ei.ast.op is Ops.SINK])

def inputs(device: str, *shapes: tuple[int, ...]) -> list[Tensor]:
  rng = np.random.default_rng(0)
  return [Tensor(rng.standard_normal(s).astype(np.float32), device=device).realize() for s in shapes]

class TestKernelCount:
  capability = "kernel fusion (kernel count)"
  def test_mul_add_sum_is_one_kernel(self, device):
    a, b, c = inputs(device, (16, 16), (16, 16), (16, 16))
    assert kernels((a * b + c).sum()) == 1
  def test_elementwise_chain_of_10_is_one_kernel(self, device):
    (a,) = inputs(device, (32,))
    x = a
    for i in range(10): x = (x * 1.5 + i).relu() if i % 3 == 0 else x * 0.5 - 1
    assert kernels(x) == 1
  def test_elementwise_with_broadcast_is_one_kernel(self, device):
    a, b = inputs(device, (8, 1), (1, 8))
    assert kernels((a + b).exp() * 2) == 1
  def test_matmul_is_one_kernel(self, device):
    a, b = inputs(device, (8, 12), (12, 4))
    assert kernels(a @ b) == 1
  def test_softmax_is_at_most_three_kernels(self, device):
    (a,) = inputs(device, (4, 10))
    n = kernels(a.softmax(-1))
    assert 1 <= n <= 3, n
  def test_realized_input_is_not_recomputed(self, device):
    (a,) = inputs(device, (8,))
    b = (a + 1).realize()
    assert kernels(b * 2) == 1
  def test_10000_elementwise_ops_schedule_without_recursion_error(self, device):
    (a,) = inputs(device, (4,))
    x = a
    for _ in range(10_000): x = x + 1
    n = kernels(x)
    assert n >= 1
    np.testing.assert_allclose(x.numpy(), a.numpy() + 10_000, rtol=1e-6)
