"""Kernel launch edge cases: empty tensors, size-1 dims, 0-d tensors, odd sizes, and sizes past the launch limits."""
from __future__ import annotations
import os
import numpy as np
import pytest
from tinygrad import Tensor, Variable

# devices too slow for millions of elements (the core's uop interpreter); TINYGRAD_CONFORMANCE_SLOW adds to the list
SLOW = {"PYTHON"} | {d.strip().upper() for d in os.environ.get("TINYGRAD_CONFORMANCE_SLOW", "").split(",") if d.strip()}

def arange(shape: tuple[int, ...]) -> np.ndarray: return (np.arange(int(np.prod(shape)), dtype=np.float32) % 97 - 48).reshape(shape)

class TestLaunch:
  capability = "kernel launch edge cases"
  @pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 5), (2, 0, 3)])
  def test_empty(self, device, shape):
    a = arange(shape)
    t = Tensor(a, device=device)
    for got, want, what in [(t * 2 + 1, a * 2 + 1, "elementwise"), (t.sum(), np.float32(0), "sum"), (t.sum(axis=-1), a.sum(axis=-1), "sum(-1)"),
                            (t.max(axis=0) if shape[0] else t.sum(axis=0), a.max(axis=0) if shape[0] else a.sum(axis=0), "reduce axis 0"),
                            (t.reshape(-1), a.reshape(-1), "reshape"), (t.contiguous(), a, "contiguous")]:
      g = got.numpy()
      assert g.shape == np.shape(want), f"empty {shape} {what}: shape {g.shape} != {np.shape(want)}"
      np.testing.assert_allclose(g, want, err_msg=f"empty {shape} {what}")
  def test_empty_matmul_is_zeros(self, device):
    np.testing.assert_equal((Tensor.ones(3, 0, device=device) @ Tensor.ones(0, 4, device=device)).numpy(), np.zeros((3, 4), np.float32))
  @pytest.mark.parametrize("shape", [(1,), (1, 1, 1), (5, 1, 3), (1, 7), (7, 1)])
  def test_size_one_dims(self, device, shape):
    a = arange(shape)
    t = Tensor(a, device=device)
    np.testing.assert_allclose((t * 3 - 1).numpy(), a * 3 - 1, err_msg=f"{shape} elementwise")
    for ax in range(len(shape)): np.testing.assert_allclose(t.sum(axis=ax).numpy(), a.sum(axis=ax), err_msg=f"{shape} sum({ax})")
    big = tuple(4 if s == 1 else s for s in shape)
    np.testing.assert_allclose(t.expand(big).contiguous().numpy(), np.broadcast_to(a, big), err_msg=f"{shape} expand to {big}")
  def test_zero_dim(self, device):
    t = Tensor(2.5, device=device)
    assert t.shape == () and (t * 2).item() == 5.0 and (t + Tensor([1.0, 2.0], device=device)).tolist() == [3.5, 4.5]
  @pytest.mark.parametrize("n", [1, 3, 7, 17, 31, 127, 257, 1023, 4097])
  def test_odd_sizes(self, device, n):
    a = arange((n,))
    t = Tensor(a, device=device)
    np.testing.assert_allclose((t * 2 + 1).numpy(), a * 2 + 1, err_msg=f"n={n} elementwise")
    np.testing.assert_allclose(t.sum().numpy(), a.astype(np.float64).sum(), rtol=1e-6, err_msg=f"n={n} sum")
    np.testing.assert_allclose(t.max().numpy(), a.max(), err_msg=f"n={n} max")
  @pytest.mark.parametrize("shape", [(1 << 20) + 3, (70001, 3), (3, 70001)])
  def test_huge(self, device, shape):
    if device.split(":")[0] in SLOW: pytest.skip(f"{device} is too slow for a million elements (TINYGRAD_CONFORMANCE_SLOW)")
    shape = shape if isinstance(shape, tuple) else (shape,)
    a = arange(shape)
    t = Tensor(a, device=device)
    np.testing.assert_allclose((t * 2 + 1).numpy(), a * 2 + 1, err_msg=f"{shape} elementwise")
    np.testing.assert_allclose(t.sum(axis=0).numpy(), a.astype(np.float64).sum(axis=0), rtol=1e-5, err_msg=f"{shape} sum(0)")
    np.testing.assert_allclose(t.sum().numpy(), a.astype(np.float64).sum(), rtol=1e-5, err_msg=f"{shape} sum")
  # a Variable is a kernel argument: named like a name the renderer generates (idx0, data0, alu0, core_id ...) or like a
  # word of the kernel's language (int), it must still be its own argument (public tinygrad's TestSample binds idx0..idx15)
  @pytest.mark.parametrize("name", ["idx0", "data0", "data1", "alu0", "val0", "acc0", "ridx0", "gidx0", "lidx0", "cast0", "core_id", "int", "float", "n"])
  def test_variable_named_like_generated_names(self, device, name):
    a = arange((20, 6))
    t = Tensor(a, device=device)
    v = Variable(name, 0, 18).bind(7)
    np.testing.assert_allclose((t[v:v+2] * v).sum(1).numpy(), (a[7:9] * 7).sum(1), rtol=1e-6, err_msg=f"Variable {name!r}")
