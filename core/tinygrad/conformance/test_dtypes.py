"""Op correctness per dtype: each numpy-representable dtype the device declares (Renderer.supported_dtypes; None: all)."""
from __future__ import annotations
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.device import Device

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
TOL = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}

def declared(device: str, name: str):
  """The DType called `name`, or a skip when the device does not declare it."""
  dt = getattr(dtypes, name)
  sup = Device[device].renderer.supported_dtypes
  if sup is not None and dt not in sup: pytest.skip(f"{device} does not declare {name} (Renderer.supported_dtypes)")
  return dt

def arrays(name: str, n: int = 13, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  # small values: sums and products of two stay in range for every width, so wrap-around never decides a result
  rng = np.random.default_rng(seed)
  if name == "bool": return rng.random(n) < 0.5, rng.random(n) < 0.5
  if name in FLOATS: return (rng.uniform(-10, 10, n).astype(name), rng.uniform(-10, 10, n).astype(name))
  lo = 0 if name.startswith("u") else -10
  return rng.integers(lo, 11, n).astype(name), rng.integers(lo, 11, n).astype(name)

def same(got: Tensor, want: np.ndarray, name: str, what: str) -> None:
  g = got.numpy()
  assert g.shape == want.shape, f"{what} on {name}: shape {g.shape} != numpy's {want.shape}"
  if name in FLOATS: np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), rtol=TOL[name], atol=TOL[name], err_msg=f"{what} on {name}")
  else: np.testing.assert_array_equal(g.astype(np.float64), want.astype(np.float64), err_msg=f"{what} on {name}")

class TestDtypes:
  capability = "ops per declared dtype"
  @pytest.mark.parametrize("dtype", INTS + FLOATS)
  @pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "lt", "eq", "where", "neg"])
  def test_elementwise(self, device, dtype, op):
    dt = declared(device, dtype)
    a, b = arrays(dtype)
    if op == "neg" and dtype.startswith("u"): pytest.skip("negation of an unsigned int is not a numpy-comparable op")
    ta, tb = Tensor(a, device=device), Tensor(b, device=device)
    assert ta.dtype == dt, f"Tensor(np.{dtype}) has dtype {ta.dtype}"
    got, want = {"add": (lambda: ta + tb, lambda: a + b), "sub": (lambda: ta - tb, lambda: a - b), "mul": (lambda: ta * tb, lambda: a * b),
                 "maximum": (lambda: ta.maximum(tb), lambda: np.maximum(a, b)), "lt": (lambda: ta < tb, lambda: a < b),
                 "eq": (lambda: ta == tb, lambda: a == b), "where": (lambda: (ta < tb).where(ta, tb), lambda: np.where(a < b, a, b)),
                 "neg": (lambda: -ta, lambda: -a)}[op]
    with np.errstate(all="ignore"): same(got(), want(), dtype, op)
  @pytest.mark.parametrize("dtype", ["bool"] + INTS + FLOATS)
  def test_cast_to_and_from_float32(self, device, dtype):
    declared(device, dtype)
    a, _ = arrays(dtype)
    same(Tensor(a, device=device).cast(dtypes.float32), a.astype(np.float32), "float32", f"cast {dtype}->float32")
    f = np.round(np.random.default_rng(1).uniform(0 if dtype.startswith("u") else -10, 10, 13)).astype(np.float32)
    if dtype == "bool": f = f - 3
    same(Tensor(f, device=device).cast(getattr(dtypes, dtype)), f.astype(dtype), dtype, f"cast float32->{dtype}")
  @pytest.mark.parametrize("src", FLOATS)
  @pytest.mark.parametrize("dtype", INTS)
  def test_float_to_int_saturates(self, device, src, dtype):
    # the one rule of every device (docs/guide.md, Numerics): truncate toward zero, clamp to the int range (infinities
    # too), NaN -> 0; C leaves these undefined (x86 gave INT_MIN, WGSL clamps, ARM and GPUs saturate), so the core guards it
    declared(device, src), declared(device, dtype)
    f = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3.7, -3.7, 300.0, -1.0, 255.9, -128.5, 65504.0, -0.5, 2.0**31, 4e9], src)
    info = np.iinfo(dtype)
    w = np.nan_to_num(np.trunc(f.astype(np.float64)), nan=0.0)
    want = [0 if np.isnan(v) else int(info.max) if v >= info.max else int(info.min) if v <= info.min else int(t) for v, t in zip(f.astype(np.float64), w)]
    got = Tensor(f, device=device).cast(getattr(dtypes, dtype))
    assert got.tolist() == want, f"cast {src}->{dtype} of {f.tolist()}: {got.tolist()} (want {want})"
    assert [Tensor(v, dtype=getattr(dtypes, src), device=device).cast(getattr(dtypes, dtype)).item() for v in f[:5].tolist()] == want[:5]   # folded
  @pytest.mark.parametrize("src", FLOATS)
  def test_float_to_bool_is_nonzero(self, device, src):
    # NaN is nonzero, so True (numpy and torch); +-0.0 are False (WEBGPU's x != 0.0 was naga's ordered compare: NaN -> False)
    declared(device, src)
    f = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 6e-8, -2.5], src)
    assert Tensor(f, device=device).cast(dtypes.bool).tolist() == f.astype(bool).tolist(), f"cast {src}->bool of {f.tolist()}"
  @pytest.mark.parametrize("src", INTS)
  def test_int_to_int_casts(self, device, src):
    # numpy's answer for every pair: narrowing wraps, widening sign-extends a signed source and zero-extends an unsigned
    # one, whatever the target's signedness (WEBGPU's naga widened by the target's: int32(-19) -> uint64 was 4294967277)
    declared(device, src)
    info = np.iinfo(src)
    vals = [-2**31, -32769, -129, -19, -1, 0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32 + 3]
    a = np.array(sorted({v for v in vals + [int(info.min), int(info.max)] if info.min <= v <= info.max}), dtype=src)
    for dst in INTS:
      dt = getattr(dtypes, dst)
      if dt not in Device[device].renderer.supported_dtypes: continue
      np.testing.assert_array_equal(Tensor(a, device=device).cast(dt).numpy(), a.astype(dst), err_msg=f"cast {src}->{dst} of {a.tolist()}")
  @pytest.mark.parametrize("dtype", INTS + FLOATS)
  def test_sum_and_max(self, device, dtype):
    declared(device, dtype)
    a, _ = arrays(dtype, n=7)
    a = np.abs(a) if not dtype.startswith("u") else a   # 7 values of at most 10: a sum fits every width
    t = Tensor(a.reshape(7, 1), device=device)
    same(t.sum(), np.array(a.sum()), dtype, "sum")
    same(t.max(), np.array(a.max()), dtype, "max")
    same(t.sum(axis=1), a.astype(a.dtype), dtype, "sum over a size-1 axis")
  @pytest.mark.parametrize("dtype", ["bool"] + INTS + FLOATS)
  def test_round_trip(self, device, dtype):
    declared(device, dtype)
    a, _ = arrays(dtype, n=33)
    got = Tensor(a, device=device).numpy()
    assert got.dtype == a.dtype, f"{dtype}: round trip gave numpy dtype {got.dtype}"
    np.testing.assert_array_equal(got, a, err_msg=f"round trip of {dtype}")
  # a NaN cast to bfloat16 is the quiet NaN of its sign, as ml_dtypes' (numpy's bfloat16) and as a cast to float16 keeps it:
  # every renderer made -nan the positive 0x7fc0 (torch's CPU cast makes either NaN 0xffff)
  @pytest.mark.parametrize("src", FLOATS)
  def test_bfloat16_cast_of_nan_keeps_its_sign(self, device, src):
    for name in ("bfloat16", "uint16", src): declared(device, name)
    a = np.array([np.nan, -np.nan, 1.5, -2.0, -np.inf], src)
    got = Tensor(a, device=device).realize().cast(dtypes.bfloat16).bitcast(dtypes.uint16).tolist()
    assert got == [0x7fc0, 0xffc0, 0x3fc0, 0xc000, 0xff80], f"{src} [nan, -nan, 1.5, -2, -inf] -> bfloat16 bits {[hex(v) for v in got]}"
  # same-size bitcasts between every pair of declared dtypes of a width, bfloat16 included: the bits go through unchanged
  # (the PYTHON device took a float16's value, not its bits, as a bfloat16's: 1.5 became 9.2e-41)
  @pytest.mark.parametrize("src,dst", [(a, b) for w in (("int8", "uint8"), ("int16", "uint16", "float16", "bfloat16"), ("int32", "uint32", "float32"),
                                                           ("int64", "uint64", "float64")) for a in w for b in w if a != b])
  def test_bitcast_keeps_the_bits(self, device, src, dst):
    sdt, ddt = declared(device, src), declared(device, dst)
    width = sdt.itemsize * 8
    ubits = np.dtype(f"uint{width}")
    # bit patterns that are finite numbers in every float format of the width (the exponent's top bit clear), signs both ways
    bits = (np.random.default_rng(width).integers(0, 2**(width - 1), 17, dtype=np.uint64) & ~np.uint64(1 << (width - 2))).astype(ubits)
    bits[::2] |= ubits.type(1 << (width - 1))
    def from_bits(b: np.ndarray, name: str) -> Tensor:
      return Tensor(b, device=device).bitcast(dtypes.bfloat16) if name == "bfloat16" else Tensor(b.view(name), device=device)
    def to_bits(t: Tensor, name: str) -> np.ndarray:
      v = t.numpy()
      return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16) if name == "bfloat16" else v.view(ubits)
    for what, x in (("realized", from_bits(bits, src).realize()), ("lazy", from_bits(bits, src) * 1)):
      got = to_bits(x.bitcast(ddt), dst)
      np.testing.assert_array_equal(got, bits, err_msg=f"bitcast {src} -> {dst} ({what} source) changed the bits")
