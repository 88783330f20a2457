"""fp8 (dtypes.fp8s): the device's casts and arithmetic give torch's bits. No renderer computes fp8 natively: the core
stores the values as bytes and lowers casts to uint32/float32 ops, so this checks that lowering runs exactly on the device."""
from __future__ import annotations
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

FP8 = {"fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2", "fp8e4m3fnuz": "float8_e4m3fnuz", "fp8e5m2fnuz": "float8_e5m2fnuz"}

def _torch():
  return pytest.importorskip("torch", reason="the fp8 reference is torch's float8 dtypes: pip install torch")

def _sweep() -> np.ndarray:
  """float32 inputs: zeros, fp8 subnormals, halfway ties, the largest values and past them, inf, NaN, and random bits."""
  rng = np.random.default_rng(0)
  edges = [0.0, 2.0**-9, 2.0**-10, 2.0**-16, 2.0**-17, 3 * 2.0**-10, 2.0**-8 * 1.5, 448, 464, 480, 240, 248, 57344, 61439, 61440, 1e6, 1e38,
           1 + 2.0**-4, 1 + 3 * 2.0**-4, 1 + 2.0**-3, 1 + 2.0**-2 + 2.0**-3, np.inf]
  bits = np.concatenate([np.array(edges, np.float32).view(np.uint32), np.arange(0x30000000, 0x48000000, 0x8000, dtype=np.uint32),
                         rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32), np.array([1, 0x7fc00000, 0x7f800001], np.uint32)])
  return np.concatenate([bits, bits | 0x80000000]).view(np.float32)

def _same(got: np.ndarray, want: np.ndarray, nan_bits: bool) -> list:
  """Indices where the float32 values differ (NaN matches any NaN unless nan_bits)."""
  gb, wb = got.view(np.uint32), want.view(np.uint32)
  bad = gb != wb
  if not nan_bits: bad &= ~(np.isnan(got) & np.isnan(want))
  return np.nonzero(bad)[0].tolist()

class TestFP8:
  capability = "fp8 casts and arithmetic (torch's bits)"
  @pytest.mark.parametrize("name", list(FP8))
  def test_every_bit_pattern_to_float32(self, device, name):
    torch = _torch()
    dt = getattr(dtypes, name)
    want = torch.arange(256, dtype=torch.uint8).view(getattr(torch, FP8[name])).float().numpy()
    got = Tensor(np.arange(256, dtype=np.uint8), device=device).bitcast(dt).cast(dtypes.float32).numpy()
    bad = _same(got, want, nan_bits=False)   # (torch's NaN payloads differ by format; a NaN is a NaN)
    assert not bad, f"{name} -> float32 on {device}: bytes {[hex(b) for b in bad[:8]]} give {got[bad[:8]]}, torch {want[bad[:8]]}"
    assert np.array_equal(Tensor(np.arange(256, dtype=np.uint8), device=device).bitcast(dt).numpy().view(np.uint32)[~np.isnan(want)],
                          want.view(np.uint32)[~np.isnan(want)]), "numpy() of the fp8 tensor"

  @pytest.mark.parametrize("name", list(FP8))
  def test_float32_to_fp8_bits(self, device, name):
    torch = _torch()
    dt, x = getattr(dtypes, name), _sweep()
    want = torch.from_numpy(x).to(getattr(torch, FP8[name])).view(torch.uint8).numpy()
    got = Tensor(x, device=device).cast(dt).bitcast(dtypes.uint8).numpy()
    bad = np.nonzero(got != want)[0]
    assert not len(bad), f"float32 -> {name} on {device}: {[(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]} ({len(bad)} of {len(x)})"

  @pytest.mark.parametrize("name", list(FP8))
  @pytest.mark.parametrize("op", ["add", "mul"])
  def test_arithmetic(self, device, name, op):
    # torch has no float8 kernels for + and *: its reference is the float32 result rounded once, which is what fp8 ops mean
    torch = _torch()
    dt, tdt = getattr(dtypes, name), getattr(torch, FP8[name])
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 256, 4096, dtype=np.uint8), rng.integers(0, 256, 4096, dtype=np.uint8)
    ta, tb = torch.from_numpy(a).view(tdt).float(), torch.from_numpy(b).view(tdt).float()
    want = (ta + tb if op == "add" else ta * tb).to(tdt).view(torch.uint8).numpy()
    x, y = Tensor(a, device=device).bitcast(dt), Tensor(b, device=device).bitcast(dt)
    res = x + y if op == "add" else x * y
    assert res.dtype == dt
    got = res.bitcast(dtypes.uint8).numpy()
    nan = np.array([np.isnan(v) for v in torch.from_numpy(want).view(tdt).float().numpy()])
    bad = np.nonzero((got != want) & ~(nan & np.isnan(res.numpy())))[0]   # (a NaN's sign is the device's)
    assert not len(bad), f"{name} {op} on {device}: {[(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]}"
