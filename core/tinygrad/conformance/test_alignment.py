"""Vector loads and stores that start at any element: the heuristics upcast axes whose accesses begin at odd offsets (a
conv's taps, a view with an offset, a pad or shrink, an assign into a slice), so a renderer's vector access may assume only
the element's alignment (docs/plugins.md, "Vector alignment"). A renderer that assumed the vector's own alignment crashed
(GCC's aligned moves) or read the wrong elements here."""
from __future__ import annotations
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.conformance.test_ops import np_conv2d, check

def ramp(*shape: int) -> np.ndarray: return ((np.arange(int(np.prod(shape)), dtype=np.float32) % 23 - 11) / 4).reshape(shape)

class TestUnalignedVectors:
  capability = "vector accesses at unaligned offsets"
  # (x, w): the repro (3 input channels of 9x9, 3x3 taps: every tap's row starts at an odd element), a wider
  # image whose rows are 16 floats with odd taps, and 5x5 taps with padding
  @pytest.mark.parametrize("xs,ws,pad", [((2, 3, 9, 9), (4, 3, 3, 3), 0), ((1, 2, 6, 16), (8, 2, 3, 3), 0), ((1, 3, 11, 11), (4, 3, 5, 5), 2)])
  def test_conv2d(self, device, xs, ws, pad):
    x, w = ramp(*xs), ramp(*ws)[..., ::-1].copy()
    check(Tensor(x, device=device).conv2d(Tensor(w, device=device), padding=pad), np_conv2d(x, w, None, (1, 1), (pad, pad), (1, 1), 1),
          rtol=1e-5, atol=1e-4, what=f"conv2d x{xs} w{ws} padding={pad}")
  @pytest.mark.parametrize("off", [1, 3, 5, 7])
  def test_offset_view(self, device, off):
    a = ramp(72)
    t = Tensor(a, device=device)
    check(t[off:off+64] * 2 + t[:64], a[off:off+64] * 2 + a[:64], what=f"x[{off}:{off}+64]*2 + x[:64]")
    check(t[off:] + 1, a[off:] + 1, what=f"x[{off}:] + 1")
  def test_offset_rows(self, device):
    a = ramp(6, 19)
    t = Tensor(a, device=device)
    check(t[..., 3:] * t[..., :16], a[..., 3:] * a[..., :16], what="x[..., 3:] * x[..., :16] on rows of 19")
    b = ramp(96)
    check(Tensor(b, device=device).reshape(4, 24)[..., 3:19] - 1, b.reshape(4, 24)[..., 3:19] - 1, what="x.reshape(4, 24)[..., 3:19] - 1")
  def test_shrink_and_pad(self, device):
    a = ramp(9, 33)
    t = Tensor(a, device=device)
    check(t.shrink(((1, 8), (1, 33))).pad(((0, 0), (3, 5))) * 3, np.pad(a[1:8, 1:], ((0, 0), (3, 5))) * 3, what="shrink then pad")
    check(t.pad(((0, 0), (1, 6))).contiguous() + 2, np.pad(a, ((0, 0), (1, 6))) + 2, what="pad by 1 (stores start at element 1 of a row)")
  def test_sum_of_offset_rows(self, device):
    a = ramp(8, 41)
    check(Tensor(a, device=device)[:, 1:].sum(axis=1), a[:, 1:].astype(np.float64).sum(axis=1).astype(np.float32), rtol=1e-5, atol=1e-5,
          what="x[:, 1:].sum(1): a reduce over rows starting at odd elements")
  @pytest.mark.parametrize("off", [1, 3])
  def test_assign_into_offset_slice(self, device, off):
    buf = Tensor.zeros(40, device=device).contiguous().realize()
    v = ramp(32)
    buf[off:off+32].assign(Tensor(v, device=device) * 2).realize()
    want = np.zeros(40, np.float32)
    want[off:off+32] = v * 2
    check(buf, want, what=f"assign into x[{off}:{off}+32]")
  def test_int32_offsets(self, device):
    a = np.arange(75, dtype=np.int32) - 30
    check(Tensor(a, device=device)[3:67] * 3 + Tensor(a, device=device)[1:65], a[3:67] * 3 + a[1:65], what="int32 x[3:67]*3 + x[1:65]")
