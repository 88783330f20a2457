"""Copies between devices: to and from the built-in PYTHON device (always installed), host round trips, views."""
from __future__ import annotations
import numpy as np
import pytest
from tinygrad import Tensor

PEER = "PYTHON"   # the core's own device: every install has it, so every plugin's copies are tested against one
DTYPES = [np.float32, np.int32, np.uint8, np.bool_]

def data(dtype, shape, seed: int = 0) -> np.ndarray:
  rng = np.random.default_rng(seed)
  return (rng.integers(-100, 100, shape) if dtype is not np.bool_ else rng.integers(0, 2, shape)).astype(dtype)

class TestCopy:
  capability = "copies between devices"
  @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
  @pytest.mark.parametrize("shape", [(0,), (1,), (7, 3), (1025,)], ids=str)
  def test_round_trip_through_peer(self, device, dtype, shape):
    a = data(dtype, shape)
    there = Tensor(a, device=device).to(PEER)
    back = (there.to(device) if PEER != device else there).realize()
    assert back.device.split(":")[0] == device.split(":")[0]
    np.testing.assert_array_equal(there.numpy(), a, err_msg=f"{device} -> {PEER}")
    np.testing.assert_array_equal(back.numpy(), a, err_msg=f"{device} -> {PEER} -> {device}")
  def test_compute_on_both_sides(self, device):
    a = data(np.float32, (4, 5))
    t = Tensor(a, device=device) * 2
    p = (t.to(PEER) + 1).to(device) * 3
    np.testing.assert_allclose(p.numpy(), (a * 2 + 1) * 3, err_msg="computed, copied, computed")
  def test_copy_of_views(self, device):
    a = data(np.int32, (6, 8))
    t = Tensor(a, device=device)
    for got, want, what in [(t.T, a.T, "transpose"), (t[1:5, ::3], a[1:5, ::3], "strided slice"), (t.flip(0), a[::-1], "flip"),
                            (t.pad(((1, 0), (0, 2))), np.pad(a, ((1, 0), (0, 2))), "pad")]:
      np.testing.assert_array_equal(got.to(PEER).numpy(), want, err_msg=f"copy of a {what}")
      np.testing.assert_array_equal(Tensor(want, device=PEER).to(device).numpy(), want, err_msg=f"copy into {device} of a {what}")
  def test_clone_is_a_separate_buffer(self, device):
    t = Tensor([1, 2, 3], device=device).realize()
    c = t.clone().realize()
    t.assign(Tensor([7, 8, 9], device=device)).realize()
    assert c.tolist() == [1, 2, 3] and t.tolist() == [7, 8, 9]
  def test_data_is_a_copy(self, device):
    t = Tensor([1, 2, 3], device=device).realize()
    d = t.data()   # (a host view of the buffer's memory would show the assign, or the next tensor to reuse the memory)
    t.assign(Tensor([7, 8, 9], device=device)).realize()
    assert d.tolist() == [1, 2, 3]
  def test_bools_from_raw_bytes_are_bools(self, device):
    # a numpy bool array viewed from uint8 holds bytes 2 and 255: copied in as they are, a kernel reading the byte computed
    # logical_not(2) as True and int() as 2
    t = Tensor(np.array([0, 1, 2, 255], dtype=np.uint8).view(np.bool_), device=device)
    assert t.logical_not().tolist() == [True, False, False, False] and t.int().tolist() == [0, 1, 1, 1] and t.sum().item() == 3
