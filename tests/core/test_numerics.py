"""Integer/bool numerics that must match numpy on every renderer, and bad input that must raise a clear error."""
import math, os, shutil
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, dtypes, Device
from tinygrad.dtype import to_numpy

def _dev(name: str) -> str:
  if name == "CPU:CLANG" and shutil.which("clang") is None: pytest.skip("clang not installed (the `clang` package); CPU:CLANG not checked")
  from tinygrad.device import Device
  try: Device[name]
  except Exception as e: pytest.skip(f"{name} does not open here ({type(e).__name__}); without the GPU run with NV_MOCK=1 AMD_MOCK=1")
  return name

# every C-like and LLVM renderer the CPU plugin has, the exact interpreter, and the GPU pipelines (on their mock drivers in CI)
DEVICES = ["CPU:LLVM", "CPU:GCC", "CPU:CLANG", "PYTHON", "NV", "AMD", "AMD:LLVM"]

@pytest.fixture(params=DEVICES)
def dev(request): return _dev(request.param)

# ---- shifts by the bit width or more, and by negative amounts: numpy's answer (0 for <<, the sign fill for >>) ----
SHIFT_DTYPES = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64]

@pytest.mark.parametrize("dt", SHIFT_DTYPES, ids=str)
def test_shift_past_width_constant(dev, dt):
  bits = dt.itemsize * 8
  vals = [3, 5, 1, 0] if dtypes.is_unsigned(dt) else [3, -5, 1, 0]
  x = np.array(vals, dtype=to_numpy(dt))
  for c in (bits - 1, bits, bits + 8, 40, 100) + (() if dtypes.is_unsigned(dt) else (-1, -bits)):
    t = Tensor(x, device=dev)
    np.testing.assert_equal((t << c).numpy(), np.left_shift(x, np.array(c).astype(x.dtype)), err_msg=f"{dt} << {c}")
    np.testing.assert_equal((t >> c).numpy(), np.right_shift(x, np.array(c).astype(x.dtype)), err_msg=f"{dt} >> {c}")

@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint8], ids=str)
def test_shift_past_width_tensor_amount(dev, dt):
  npdt = to_numpy(dt)
  bits = dt.itemsize * 8
  amts = [0, 1, bits - 1, bits, bits + 1, 2 * bits + 3] + ([] if dtypes.is_unsigned(dt) else [-1, -bits - 2])
  x = np.array([7 if dtypes.is_unsigned(dt) else -7] * len(amts) + [3] * len(amts), dtype=npdt)
  a = np.array(amts * 2, dtype=npdt)
  np.testing.assert_equal((Tensor(x, device=dev) << Tensor(a, device=dev)).numpy(), np.left_shift(x, a))
  np.testing.assert_equal((Tensor(x, device=dev) >> Tensor(a, device=dev)).numpy(), np.right_shift(x, a))

def test_shift_int32_by_40_repro(dev):
  # the report: LLVM returned a freed tensor's data (the shl was poison and the store dropped)
  assert (Tensor([3] * 4, dtype=dtypes.int32, device=dev) << 40).tolist() == [0] * 4
  assert (Tensor([-3] * 4, dtype=dtypes.int32, device=dev) >> 40).tolist() == [-1] * 4
  # scalar (not SIMD) code: x86's scalar shift masks the amount to 5 bits (3 << 40 was 768), the vector one saturates
  i32, i64 = dtypes.int32, dtypes.int64
  assert (Tensor([3], dtype=i32, device=dev) << Tensor([40], dtype=i32, device=dev)).tolist() == [0]
  assert (Tensor([3, 3, 3], dtype=i32, device=dev) << Tensor([40, 33, -1], dtype=i32, device=dev)).tolist() == [0, 0, 0]
  assert (Tensor([-3, 5, 7], dtype=i64, device=dev) >> Tensor([70, 64, -1], dtype=i64, device=dev)).tolist() == [-1, 0, 0]

def test_shift_constant_fold():
  # both operands constant: folded in Python (exec_alu), same answer
  assert (Tensor(3, dtype=dtypes.int32) << 40).item() == 0
  assert (Tensor(-3, dtype=dtypes.int32) >> -1).item() == -1
  assert (Tensor(3, dtype=dtypes.int32) << -1).item() == 0

# ---- bool arithmetic: + is or, * is and, as numpy and torch ----
B1, B2 = np.array([True, True, False, False]), np.array([True, False, True, False])

# every device with float64 (CL: pocl's cl_khr_fp64); NV/AMD's half is native and their mock drivers compute nothing
@pytest.fixture(params=["CPU:LLVM", "CPU:GCC", "CPU:CLANG", "PYTHON", "CL"])
def f64_dev(request):
  name = _dev(request.param)
  if dtypes.float64 not in Device[name].renderer.supported_dtypes: pytest.skip(f"{name}: no float64 here")
  return name

def _f64_sweep(big: float) -> np.ndarray:
  rng = np.random.default_rng(0)
  return rng.standard_normal(4000) * np.exp(rng.uniform(-30, math.log(big), 4000))

def test_float64_to_float16_rounds_once(f64_dev):
  # C has no portable half: clang's went double -> float -> half, rounding twice (65519.99999999 gave inf, 1 + 2**-11 +
  # 2**-40 gave 1.0, 2**-25 + 2**-60 gave 0), and so did OpenCL's emulated half (pocl has no cl_khr_fp16); LLVM's
  # fptrunc and numpy round once
  x = np.concatenate([[1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40), 65519.99999999, 65520.0, 2**-25 + 2**-60, 2**-25, np.nan, -np.nan,
                       np.inf, 1e300, -1e-300], _f64_sweep(2e5)])
  with np.errstate(over="ignore"): want = x.astype(np.float16)
  got = Tensor(x, device=f64_dev).cast(dtypes.float16).numpy()
  # bit for bit, NaNs too (pocl's vstore_half_rte made every NaN 0x7fff, numpy 0x7e00; docs/guide.md: payloads are the device's)
  np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))

@pytest.mark.parametrize("name", ["CPU:LLVM", "CPU:GCC", "CPU:CLANG", "PYTHON", "CL", "WEBGPU"])
def test_a_nan_cast_to_float16_is_numpys(name):
  # the quiet NaNs of float32 (and float64 where the device has it) become numpy's 0x7e00 / 0xfe00 (pocl's: 0x7fff / 0xffff)
  dev = _dev(name)
  for dt in (np.float32, np.float64):
    if dt == np.float64 and dtypes.float64 not in Device[dev].renderer.supported_dtypes: continue
    x = np.array([np.nan, -np.nan, 1.0, np.inf], dt)
    for got in (Tensor(x, device=dev).cast(dtypes.float16), (Tensor(x, device=dev) * 1).cast(dtypes.float16)):
      np.testing.assert_array_equal(got.numpy().view(np.uint16), x.astype(np.float16).view(np.uint16), err_msg=f"{dev} {dt.__name__}")

@pytest.mark.parametrize("dt", [dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2], ids=str)
def test_float64_to_bfloat16_fp8_rounds_once(f64_dev, dt):
  # bfloat16 and fp8 are made from a float32 on every device: float64 -> float32 -> bfloat16 rounded twice (1+2**-8+2**-40
  # gave 1.0, ml_dtypes 1.0078125; fp8e4m3 of 1+2**-4+2**-40 gave 1.0, not 1.125). Kernels, constants folded in Python and
  # Tensor(list) all round once. (fp8e4m3 past 464 saturates to 448 here, torch's rule; ml_dtypes gives NaN: left out)
  ml_dtypes = pytest.importorskip("ml_dtypes")
  ref = {dtypes.bfloat16: ml_dtypes.bfloat16, dtypes.fp8e4m3: ml_dtypes.float8_e4m3fn, dtypes.fp8e5m2: ml_dtypes.float8_e5m2}[dt]
  edge = [1 + 2**-8 + 2**-40, -(1 + 2**-8 + 2**-40), 1 + 2**-4 + 2**-40, 1 + 2**-3 + 2**-30, 1 + 2**-3, 2**-134 + 2**-160, 3e38 * (1 + 2**-9)]
  x = np.concatenate([edge, [np.nan, np.inf, -1e300, 1e-300], _f64_sweep(400 if dt == dtypes.fp8e4m3 else 3e4)])
  if dt != dtypes.bfloat16: x = x[np.isnan(x) | (np.abs(x) < 448)]
  with np.errstate(over="ignore"): want = x.astype(ref).astype(np.float64)
  np.testing.assert_array_equal(Tensor(x, device=f64_dev).cast(dt).cast(dtypes.float64).numpy(), want)
  np.testing.assert_array_equal(Tensor(x[:20].tolist(), dtype=dt, device=f64_dev).cast(dtypes.float64).numpy(), want[:20])   # Python's rounding
  np.testing.assert_array_equal([Tensor(float(v), dtype=dtypes.float64, device=f64_dev).cast(dt).item() for v in edge[:4]], want[:4])   # folded

@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64], ids=str)
def test_wide_int_to_bfloat16_rounds_once(dev, dt):
  # a kernel's int -> bfloat16 went through a float32 rounded to nearest: 2**25 + 2**17 + 1 became 2**25 (rounded twice, as
  # torch's), where constant folding and ml_dtypes give 2**25 + 2**18; now through a float32 rounded to odd, as float64's
  ml_dtypes = pytest.importorskip("ml_dtypes")
  npdt, rng = to_numpy(dt), np.random.default_rng(3)
  info = np.iinfo(npdt)
  edge = [2**25 + 2**17 + 1, 2**25 + 2**17, 2**24 + 1, 2**31 - 1, 2**30 + 2**22 + 1, info.max, info.max - 1, info.max - 200, info.min, info.min + 1, 0, 5]
  sweep = (2 ** rng.integers(24, 31, 500) + rng.integers(0, 2**23, 500)) * (rng.integers(0, 2, 500) * 2 - 1 if info.min < 0 else 1)
  x = np.concatenate([np.array([v for v in edge if info.min <= v <= info.max], dtype=object).astype(npdt), sweep.astype(npdt)])
  want = x.astype(ml_dtypes.bfloat16).astype(np.float64)
  np.testing.assert_array_equal(Tensor(x, device=dev).cast(dtypes.bfloat16).cast(dtypes.float64).numpy(), want)
  assert [Tensor.full((1,), int(v), dtype=dt, device=dev).cast(dtypes.bfloat16).item() for v in x[:6]] == want[:6].tolist()   # folded

def test_python_int_past_2_53_to_a_narrow_float_rounds_once():
  # a Python int went through float() (nearest float64) and then to float32/bfloat16/float16: rounded twice, so
  # Tensor([2**62 + 2**38 + 1], dtype=float32) was 2**62 where the int64 kernel cast (and torch's) gives 2**62 + 2**39
  from tinygrad.dtype import as_float
  vals = [2**62 + 2**38 + 1, -(2**62 + 2**38 + 1), 2**60 + 2**52 + 2**40 + 1, 2**55 + 2**47 + 1, 2**63 + 2**39 + 1, 2**62 + 2**38, 2**53 + 1]
  ml_dtypes = pytest.importorskip("ml_dtypes")
  for dt in (dtypes.float32, dtypes.bfloat16, dtypes.float16, dtypes.fp8e5m2, dtypes.float64):
    # the kernel's int64 cast; bfloat16's goes through a float32 rounded to nearest (twice, as torch's): ml_dtypes' value there
    if dt == dtypes.bfloat16: want = [float(np.array([v], np.uint64 if v >= 2**63 else np.int64).astype(ml_dtypes.bfloat16)[0]) for v in vals]
    else: want = [Tensor([v], dtype=dtypes.uint64 if v >= 2**63 else dtypes.int64).cast(dt).item() for v in vals]
    assert [Tensor([v], dtype=dt).item() for v in vals] == want, dt
    assert [Tensor(v, dtype=dt).item() for v in vals] == want and [Tensor.full((1,), v, dtype=dt).item() for v in vals] == want, dt
  assert Tensor([2**62 + 2**38 + 1], dtype=dtypes.float32).item() == 2**62 + 2**39 and as_float(2**53 + 1, dtypes.float64) == 2.0**53

def test_bool_add_mul_max_min(dev):
  a, b = Tensor(B1, device=dev), Tensor(B2, device=dev)
  np.testing.assert_equal((a + b).numpy(), B1 + B2)
  np.testing.assert_equal((a * b).numpy(), B1 * B2)
  np.testing.assert_equal(a.maximum(b).numpy(), np.maximum(B1, B2))
  np.testing.assert_equal(a.minimum(b).numpy(), np.minimum(B1, B2))
  np.testing.assert_equal((a + b + a).numpy(), B1 + B2 + B1)

def test_bool_reductions(dev):
  t = Tensor(B1, device=dev)
  assert t.sum().dtype == dtypes.int64 and t.sum().item() == 2
  assert Tensor(np.ones(300, bool), device=dev).sum().item() == 300
  assert t.max().item() is True and t.min().item() is False and t.any().item() is True and t.all().item() is False

def test_bool_sum_in_bool_is_any(dev):
  # sum(dtype=bool) accumulated with +, which LLVM's add i1 makes xor: [True, True] summed to False (numpy, torch: True)
  x = np.array([[1, 0, 3], [2, 0, 0], [-5, 0, 0], [7, 0, 0]], np.int32)
  t = Tensor(x, device=dev)
  np.testing.assert_equal(t.sum(0, dtype=dtypes.bool).numpy(), np.sum(x, 0, dtype=bool))
  np.testing.assert_equal(t.sum(1, dtype=dtypes.bool).numpy(), np.sum(x, 1, dtype=bool))
  assert Tensor(B1, device=dev).sum(dtype=dtypes.bool).item() is True
  assert Tensor(np.ones(1001, bool), device=dev).sum(dtype=dtypes.bool).item() is True
  assert Tensor([[True, True]], device=dev).dot(Tensor([[True], [True]], device=dev), dtype=dtypes.bool).tolist() == [[True]]

def test_bool_bitcast_to_and_from_bytes(dev):
  # LLVM has no bitcast between i1 and i8 (the kernel failed to compile), and C's bool of a byte 2 was undefined (clang
  # read False): a bool's byte is 0 or 1, a nonzero byte read as bool is True (numpy's and torch's view)
  np.testing.assert_equal(Tensor(B1, device=dev).bitcast(dtypes.uint8).numpy(), B1.view(np.uint8))
  np.testing.assert_equal((Tensor(B1, device=dev) ^ True).bitcast(dtypes.int8).numpy(), (B1 ^ True).view(np.int8))
  x = np.array([0, 1, 2, 255, 0, 128], np.uint8)
  np.testing.assert_equal(Tensor(x, device=dev).bitcast(dtypes.bool).numpy(), x.view(bool))
  np.testing.assert_equal((Tensor(x, device=dev) + 0).bitcast(dtypes.bool).numpy(), x.view(bool))
  np.testing.assert_equal(Tensor(B1.reshape(1, 4), device=dev).bitcast(dtypes.int32).numpy(), B1.reshape(1, 4).view(np.int32))

def test_bool_sub_raises():
  # numpy and torch refuse bool - bool (there is no bool result that means subtraction)
  with pytest.raises(TypeError, match="bool"): Tensor(B1) - Tensor(B2)

# the guard is a core pass, so every plugin's renderer gets it: check the rendered source of each (no hardware needed)
RENDERERS = [("tinygrad_nv.renderer", "CUDARenderer"), ("tinygrad_nv.renderer", "PTXRenderer"), ("tinygrad_amd.renderer", "HIPRenderer"),
             ("tinygrad_amd.renderer", "AMDLLVMRenderer"), ("tinygrad_metal.renderer", "MetalRenderer"),
             ("tinygrad_webgpu.renderer", "WGSLRenderer"), ("tinygrad_cpu.renderer", "ClangRenderer"), ("tinygrad_cpu.renderer", "LLVMRenderer"),
             ("tinygrad_cl.renderer", "OpenCLRenderer")]

@pytest.mark.parametrize("mod,cls", RENDERERS, ids=[c for _, c in RENDERERS])
def test_shift_guard_rendered(mod, cls):
  from tinygrad.codegen import get_program
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  ren = getattr(pytest.importorskip(mod), cls)()
  x, a = Tensor.empty(16, dtype=dtypes.int32, device="PYTHON"), Tensor.empty(16, dtype=dtypes.int32, device="PYTHON")
  for out in (x << a, x >> a):
    ast = next(ei.ast for ei in create_schedule([out.uop])[0] if ei.ast.op is Ops.SINK)
    prg = get_program(ast, ren)
    shift = next(u for u in prg.uops if u.op in (Ops.SHL, Ops.SHR))
    # the amount is masked to [0, 31] (defined everywhere, WGSL included) and the result chosen by the unsigned range test
    mask = shift.src[1].src[1]
    assert shift.src[1].op is Ops.AND and {m.arg for m in (mask.src if mask.op is Ops.VECTORIZE else (mask,))} == {31}, prg.src
    assert any(u.op is Ops.WHERE and shift in u.src for u in prg.uops), prg.src
    assert "31" in prg.src and "32" in prg.src, prg.src

# ---- numpy input in a non-native byte order is converted on the way in ----
@pytest.mark.parametrize("npdt", [">i4", ">u2", ">f4", ">f8", ">i8", "<i4"])
def test_numpy_byte_order(npdt):
  a = np.array([1, 256, 3, 65535 if "u" in npdt else -2], npdt)
  np.testing.assert_equal(Tensor(a, device="PYTHON").numpy(), a)
  np.testing.assert_equal(Tensor(a, device="PYTHON", dtype=dtypes.float32).numpy(), a.astype(np.float32))
  np.testing.assert_equal(Tensor(a[::-1], device="PYTHON").numpy(), a[::-1])
  np.testing.assert_equal(Tensor(a[1], device="PYTHON").numpy(), a[1])  # a numpy scalar in that byte order

# ---- Python ints past int32: int64 (uint64 past int64), OverflowError past that or past an explicit dtype (numpy 2) ----
@pytest.mark.parametrize("data,want", [([2**40], dtypes.int64), ([2**31], dtypes.int64), ([-2**31 - 1, 1], dtypes.int64), ([1, 2**31 - 1], dtypes.int32),
                                       (2**40, dtypes.int64), ([2**63], dtypes.uint64), ([[1], [2**40]], dtypes.int64), (-2**63, dtypes.int64)])
def test_python_int_picks_a_dtype_that_holds_it(data, want):
  t = Tensor(data, device="PYTHON")
  assert t.dtype == want
  np.testing.assert_equal(t.numpy(), np.array(data, dtype=to_numpy(want)))

@pytest.mark.parametrize("data,dt", [([2**64], None), ([-1, 2**63], None), (2**70, None), ([300], dtypes.uint8), ([-1], dtypes.uint32),
                                     ([2**31], dtypes.int32), (128, dtypes.int8)])
def test_python_int_overflow_raises(data, dt):
  with pytest.raises(OverflowError, match="does not fit"): Tensor(data, dtype=dt, device="PYTHON")
  if dt is not None:  # numpy 2 refuses the same
    with pytest.raises(OverflowError): np.array(data, dtype=to_numpy(dt))

def test_full_int_overflow_raises():
  with pytest.raises(OverflowError, match="does not fit"): Tensor.full((2,), 300, dtype=dtypes.uint8, device="PYTHON")
  assert Tensor.full((2,), 2**40, device="PYTHON").dtype == dtypes.int64

def test_scalar_operand_overflow_raises():
  # numpy 2 (NEP 50) and torch refuse a Python int that does not fit the tensor's int dtype instead of wrapping it
  t = Tensor([1, 2], dtype=dtypes.int32, device="PYTHON")
  for op in (lambda: t + 2**40, lambda: 2**40 * t, lambda: t - 2**31):
    with pytest.raises(OverflowError, match="does not fit"): op()
  with pytest.raises(OverflowError): np.array([1, 2], np.int32) + 2**40
  assert (t.cast(dtypes.int64) + 2**40).tolist() == [2**40 + 1, 2**40 + 2]
  assert (t + (2**31 - 1)).dtype == dtypes.int32

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.uint32, dtypes.int64], ids=str)
def test_bitwise_mask_is_a_bit_pattern_of_the_width(dt):
  # a Python int mask of the tensor's width is its bit pattern, as torch and public tinygrad wrap it: int32 | 0xFFFFFFFF is
  # -1 (it raised OverflowError), uint8 ^ -2 is 254 ^ x; past the width (signed or unsigned) it is still an OverflowError
  bits, npdt = dt.itemsize * 8, to_numpy(dt)
  vals = [0, 5, dtypes.max(dt), dtypes.min(dt)]
  t, a = Tensor(vals, dtype=dt, device="PYTHON"), np.array(vals, dtype=npdt)
  for m in ([(1 << bits) - 1, -(1 << (bits - 1)), -2, (1 << (bits - 1)) + 3] if bits < 64 else [-2, 2**62 + 7]):
    mm = np.array(m % (1 << bits), dtype=np.uint64).astype(npdt)   # numpy's wrap of the pattern (numpy 2 refuses m itself)
    for op in ("__or__", "__and__", "__xor__", "__ror__"):
      assert getattr(t, op)(m).tolist() == getattr(a, op)(mm).tolist(), (op, m)
  for m in (1 << bits, -(1 << (bits - 1)) - 1):
    with pytest.raises(OverflowError, match="does not fit"): t | m

def test_int_or_full_mask_matches_torch():
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  assert (Tensor([0, 7], dtype=dtypes.int32, device="PYTHON") | 0xFFFFFFFF).tolist() == (torch.tensor([0, 7], dtype=torch.int32) | 0xFFFFFFFF).tolist() == [-1, -1]

# ---- int ** negative int: numpy raises ----
@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.uint8, dtypes.int64], ids=str)
def test_int_pow_negative_int_raises(dt):
  t = Tensor([2, 3], dtype=dt, device="PYTHON")
  with pytest.raises(ValueError, match="negative integer powers"): t ** -1
  with pytest.raises((ValueError, OverflowError)): np.array([2, 3], to_numpy(dt)) ** -1   # uint8: numpy 2 refuses -1 first
  np.testing.assert_allclose((t ** -1.0).numpy(), np.array([2, 3], to_numpy(dt)) ** -1.0, rtol=1e-6)  # a float exponent: float
  assert (t ** 2).tolist() == [4, 9] and (Tensor([2.0, 4.0], device="PYTHON") ** -1).tolist() == [0.5, 0.25]

def test_bool_pow_negative_int_raises_as_int():
  # a bool tensor is an int here as in numpy (bool ** -1 raises there too): False ** -1 gave 0 (1/0 as the int rule's 0)
  t = Tensor([True, False], device="PYTHON")
  with pytest.raises(ValueError, match="negative integer powers"): t ** -1
  with pytest.raises(ValueError): np.array([True, False]) ** -1
  assert (t ** -1.0).tolist() == [1.0, math.inf] and (t ** 2).tolist() == [1, 0]

def test_int_pow_negative_numpy_int_raises():
  # a numpy int exponent (np.int64(-1), from a numpy computation) became an int tensor exponent: [2, 3] ** np.int64(-1) was
  # [0, 0] where numpy and torch raise, as for the Python int -1
  t = Tensor([2, 3], device="PYTHON")
  for e in (np.int64(-1), np.int8(-2)):
    with pytest.raises(ValueError, match="negative integer powers"): t ** e
    with pytest.raises(ValueError): np.array([2, 3]) ** e
  assert (t ** np.int64(2)).tolist() == [4, 9] and (t.float() ** np.int64(-1)).tolist() == [0.5, 1 / np.float32(3)]

# ---- int ** int tensor: exact and wrapping, as torch (through float it lost digits past 2**24 and saturated) ----
@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_int_pow_int_tensor_is_exact_and_wraps_like_torch(device):
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  for npdt in ("int8", "uint8", "int16", "int32", "int64"):
    signed = npdt[0] == "i"
    b = np.array([3, 3, 2, 7, 5, 0, 0, 1] + ([-3, -1, -1, 2, 0] if signed else [3, 1, 255, 2, 0]), npdt)
    e = np.array([19, 5, 7, 100, 40, 0, 3, 9] + ([33, -3, -4, -1, -2] if signed else [41, 200, 2, 9, 1]), npdt)
    want = (torch.tensor(b) ** torch.tensor(e)).numpy()
    np.testing.assert_array_equal((Tensor(b, device=device) ** Tensor(e, device=device)).numpy(), want, err_msg=npdt)
    np.testing.assert_array_equal((3 ** Tensor(np.abs(e), device=device)).numpy(), (3 ** torch.tensor(np.abs(e))).numpy(), err_msg=npdt)
  assert (2 ** Tensor([31], dtype=dtypes.int32, device=device)).tolist() == [-2**31]

# ---- bad sizes, strides, kernels: one ValueError naming the argument and the valid range ----
_X, _W = (1, 1, 4, 4), (1, 1, 2, 2)
BAD_INPUT = [
  ("empty", lambda: Tensor.empty(-1, device="PYTHON"), "empty: invalid shape"),
  ("empty2", lambda: Tensor.empty(2, -3, device="PYTHON"), r"int >= 0"),
  ("zeros", lambda: Tensor.zeros(-1, device="PYTHON"), "invalid shape"),
  ("ones", lambda: Tensor.ones(3, -2, device="PYTHON"), "invalid shape"),
  ("full", lambda: Tensor.full((2, -1), 1.0, device="PYTHON"), "invalid shape"),
  ("conv_stride", lambda: Tensor.ones(*_X, device="PYTHON").conv2d(Tensor.ones(*_W, device="PYTHON"), stride=0), "conv2d: stride must be ints >= 1"),
  ("conv_stride_neg", lambda: Tensor.ones(*_X, device="PYTHON").conv2d(Tensor.ones(*_W, device="PYTHON"), stride=(1, -1)), "stride"),
  ("conv_dilation", lambda: Tensor.ones(*_X, device="PYTHON").conv2d(Tensor.ones(*_W, device="PYTHON"), dilation=0), "conv2d: dilation"),
  ("conv_groups", lambda: Tensor.ones(*_X, device="PYTHON").conv2d(Tensor.ones(*_W, device="PYTHON"), groups=0), "conv2d: groups"),
  ("max_pool_kernel", lambda: Tensor.ones(*_X, device="PYTHON").max_pool2d(kernel_size=0), "max_pool2d: kernel_size must be ints >= 1"),
  ("max_pool_stride", lambda: Tensor.ones(*_X, device="PYTHON").max_pool2d(stride=0, ceil_mode=True), "max_pool2d: stride"),
  ("avg_pool_dilation", lambda: Tensor.ones(*_X, device="PYTHON").avg_pool2d(dilation=0), "avg_pool2d: dilation must be ints >= 1"),
  ("avg_pool_kernel", lambda: Tensor.ones(*_X, device="PYTHON").avg_pool2d(kernel_size=(2, 0)), "avg_pool2d: kernel_size"),
  ("repeat", lambda: Tensor.ones(2, device="PYTHON").repeat(-1), "repeat: repeats must be ints >= 0"),
  ("expand", lambda: Tensor.ones(1, device="PYTHON").expand(-2), "expand: invalid shape"),
  ("reshape", lambda: Tensor.ones(4, device="PYTHON").reshape(-1, -1), "only one dimension can be -1"),
]

@pytest.mark.parametrize("name,fn,msg", BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_is_a_clear_value_error(name, fn, msg):
  with pytest.raises(ValueError, match=msg): fn()

def test_zero_repeats_and_sizes_are_fine():
  assert Tensor.ones(2, device="PYTHON").repeat(0).shape == (0,) and Tensor.empty(0, 3, device="PYTHON").shape == (0, 3)
  np.testing.assert_equal(Tensor.ones(2, device="PYTHON").expand(3, -1).numpy(), np.ones((3, 2)))

# ---- CHECK_OOB=1: an out-of-range index tensor raises IndexError naming the value and the size (off: reads give 0) ----
def test_out_of_range_index_default_reads_zero():
  t = Tensor([[1, 2], [3, 4]], device="PYTHON")
  assert t[Tensor([5], device="PYTHON")].tolist() == [[0, 0]]   # public tinygrad's default: no check, a masked read

@pytest.mark.parametrize("name,fn,msg", [
  ("getitem", lambda t: t[Tensor([5], device="PYTHON")], "index 5 is out of bounds for axis 0 with size 2"),
  ("getitem_neg", lambda t: t[Tensor([-3], device="PYTHON")], "index -3 is out of bounds for axis 0 with size 2"),
  ("getitem_axis1", lambda t: t[:, [0, 2]], "index 2 is out of bounds for axis 1 with size 2"),
  ("gather", lambda t: t.gather(1, Tensor([[0], [2]], device="PYTHON")), "gather: index 2 is out of bounds for axis 1 with size 2"),
  ("gather_neg", lambda t: t.gather(0, Tensor([[-1, 0]], device="PYTHON")), "gather: index -1"),
  ("one_hot", lambda t: Tensor([0, 3], device="PYTHON").one_hot(3), "one_hot: index 3 is out of bounds"),
])
def test_check_oob_raises(name, fn, msg):
  from tinygrad import Context
  t = Tensor([[1, 2], [3, 4]], device="PYTHON")
  with Context(CHECK_OOB=1):
    with pytest.raises(IndexError, match=msg): fn(t)
    # in range: the same answers as numpy
    np.testing.assert_equal(t[Tensor([1, -2, 0], device="PYTHON")].numpy(), np.array([[1, 2], [3, 4]])[[1, -2, 0]])
    np.testing.assert_equal(t.gather(1, Tensor([[1], [0]], device="PYTHON")).numpy(), [[2], [3]])

def test_check_oob_embedding():
  from tinygrad import Context
  from tinygrad.nn import Embedding
  emb = Embedding(4, 2)
  with Context(CHECK_OOB=1):
    with pytest.raises(IndexError, match="Embedding: index 4"): emb(Tensor([[1, 4]]))
    assert emb(Tensor([[1, 3]])).shape == (1, 2, 2)

def test_check_oob_loss_labels():
  # a class label outside 0..C-1 raises as torch's (off: its row matches no class, a loss of 0); ignore_index is not checked
  from tinygrad import Context
  x = Tensor(np.zeros((3, 4), np.float32), device="PYTHON")
  with Context(CHECK_OOB=1):
    with pytest.raises(IndexError, match="cross_entropy: index 4"): x.cross_entropy(Tensor([0, 4, 1], device="PYTHON"))
    with pytest.raises(IndexError, match="nll_loss: index -2"): x.nll_loss(Tensor([0, -2, 1], device="PYTHON"), ignore_index=-1)
    with pytest.raises(IndexError, match="sparse_categorical_crossentropy: index 7"): x.sparse_categorical_crossentropy(Tensor([7, -1, 1], device="PYTHON"))
    assert x.nll_loss(Tensor([0, -100, 1], device="PYTHON"), ignore_index=-100).shape == ()
    assert x.sparse_categorical_crossentropy(Tensor([3, -1, 1], device="PYTHON")).shape == ()
    assert x.cross_entropy(Tensor([3, 0, 1], device="PYTHON")).shape == ()

def test_compare_with_int_past_the_dtype_is_exact():
  # numpy 2 compares a Python int that does not fit the array's dtype exactly (no wrap, no error); so do we
  a = np.array([1, -5, 200], np.int32)
  t = Tensor(a, device="PYTHON")
  for v in (2**40, -2**40, 2**31):
    for op in (lambda x, y: x < y, lambda x, y: x > y, lambda x, y: x <= y, lambda x, y: x >= y, lambda x, y: x == y, lambda x, y: x != y):
      np.testing.assert_equal(op(t, v).numpy(), op(a, v))
  u = np.array([0, 7, 255], np.uint8)
  np.testing.assert_equal((Tensor(u, device="PYTHON") == -1).numpy(), u == -1)
  np.testing.assert_equal((Tensor(u, device="PYTHON") > -1).numpy(), u > -1)

def test_float_mod_by_infinity_matches_torch():
  torch = pytest.importorskip("torch", reason="the reference for remainder: pip install torch")
  a = np.array([-4., 4., 0., 3., 3., -1., -1., 5., -5., np.inf, np.nan, 2.5], np.float32)
  b = np.array([np.inf, np.inf, -np.inf, np.inf, -np.inf, np.inf, -np.inf, -np.inf, -np.inf, 2., np.inf, 1.5], np.float32)
  want = torch.remainder(torch.tensor(a), torch.tensor(b)).numpy()
  for dev in ("PYTHON", None):
    np.testing.assert_array_equal(Tensor(a, device=dev).mod(Tensor(b, device=dev)).numpy(), want)
    np.testing.assert_array_equal((Tensor(a, device=dev) % float("inf")).numpy(), torch.remainder(torch.tensor(a), float("inf")).numpy())

# ---- integer sums, cumsums, products and means accumulate in int64, as torch (int32 wrapped: [2**30]*4 summed to 0) ----
CPU_PY = ["CPU", "PYTHON"]

@pytest.mark.parametrize("device", CPU_PY)
@pytest.mark.parametrize("npdt", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32"])
def test_int_reductions_match_torch(device, npdt):
  torch = pytest.importorskip("torch", reason="the reference for integer reductions: pip install torch")
  vals = {"bool": [True, False, True, True], "int8": [100, 120, -3, 90], "uint8": [200, 250, 3, 255], "int16": [30000, 32000, -5, 31000],
          "int32": [2**30] * 4, "int64": [2**40, -3, 2**40, 7], "uint32": [2**31, 2**31 + 5, 3, 2**32 - 1]}[npdt]
  a = np.array(vals, dtype=npdt)
  ta, t = torch.tensor(a), Tensor(a, device=device)
  for name, got, want in [("sum", t.sum(), ta.sum()), ("cumsum", t.cumsum(0), ta.cumsum(0)), ("sum(0, keepdim)", t.sum(0, keepdim=True), ta.sum(0, keepdim=True)),
                          ("prod", t[:2].prod(), ta[:2].prod()), ("cumprod", t[:2].cumprod(0), ta[:2].cumprod(0))]:
    assert str(got.dtype).split(".")[1] in ("long", "int64") and str(want.dtype) == "torch.int64", f"{name} of {npdt}: {got.dtype} vs torch {want.dtype}"
    np.testing.assert_equal(got.numpy(), want.numpy(), err_msg=f"{name} of {npdt}")
  # mean: public tinygrad's float32 (torch refuses integer means), from the exact wide sum
  np.testing.assert_allclose(t.mean().numpy(), np.float32(a.astype(np.float64).mean()), rtol=1e-6)
  assert t.mean().dtype == dtypes.float32

@pytest.mark.parametrize("device", CPU_PY)
def test_uint8_image_batch_mean(device):
  # the report: 25M uint8 values of 200 averaged to 29.33 (their sum passed uint32 and wrapped); zero-copy and real data
  n = 25_165_824
  assert Tensor([200], dtype=dtypes.uint8, device=device).expand(n).mean().item() == 200.0
  x = Tensor(np.full(n, 200, np.uint8), device=device)
  assert x.mean().item() == 200.0 and x.sum().item() == 200 * n

def test_int_sum_on_a_device_without_int64(monkeypatch):
  # WEBGPU without shader-int64: the widest int it has (int32/uint32), documented in docs/guide.md, instead of a refused kernel
  from tinygrad.device import Device
  ren = Device["PYTHON"].renderer
  monkeypatch.setattr(ren, "supported_dtypes", frozenset(d for d in dtypes.all if d.itemsize != 8), raising=False)
  t = Tensor([1, 2, 3], dtype=dtypes.int8, device="PYTHON")
  assert t.sum().dtype == dtypes.int32 and t.sum().item() == 6 and t.cumsum().tolist() == [1, 3, 6]
  assert Tensor([200, 100], dtype=dtypes.uint8, device="PYTHON").sum().dtype == dtypes.uint32 and Tensor([True], device="PYTHON").sum().dtype == dtypes.int32

@pytest.mark.parametrize("device", CPU_PY)
def test_sum_prod_dtype_argument_matches_torch(device):
  torch = pytest.importorskip("torch", reason="the reference for sum(dtype=): pip install torch")
  a = np.array([[1.5, -2.25, 3.0], [0.5, 4.0, -1.0]], np.float32)
  i = np.array([[100, 120, -3], [90, 2, 7]], np.int8)
  for x, dt, tdt in [(a, dtypes.float64, torch.float64), (a, dtypes.float16, torch.float16), (i, dtypes.int32, torch.int32), (i, dtypes.float32, torch.float32)]:
    for ax in (None, 0, 1):
      kw = {} if ax is None else {"axis": ax}
      got_s, got_p = Tensor(x, device=device).sum(dtype=dt, **kw), Tensor(x, device=device).prod(dtype=dt, **kw)
      want_s = torch.tensor(x).sum(dtype=tdt) if ax is None else torch.tensor(x).sum(ax, dtype=tdt)
      want_p = torch.tensor(x).prod(dtype=tdt) if ax is None else torch.tensor(x).prod(ax, dtype=tdt)
      assert got_s.dtype == dt and got_p.dtype == dt
      np.testing.assert_allclose(got_s.numpy(), want_s.numpy(), rtol=1e-3)
      np.testing.assert_allclose(got_p.numpy(), want_p.numpy(), rtol=1e-3)
  # a dtype name that does not exist: public tinygrad's AttributeError (also a ValueError, naming the valid names)
  for f in (Tensor([1.0, 2.0]).sum, Tensor([1.0, 2.0]).prod):
    with pytest.raises(AttributeError, match="unknown dtype ''"): f(dtype="")
    with pytest.raises(ValueError, match="valid: bool, int8"): f(dtype="float33")

# ---- argmax/argmin/cummax past 2**31 elements: int64 indices (the int32 cast wrapped: 2**31+4 came back as -2147483644) ----
def test_argmax_index_dtype_fits_the_axis():
  big = Tensor.zeros(1, device="PYTHON").expand(2**31 + 5)   # zero-copy and never realized here
  assert big.argmax().dtype == big.argmin().dtype == big.cummax(0)[1].dtype == big.reshape(1, -1).argmax(1).dtype == dtypes.int64
  fits = Tensor.zeros(1, device="PYTHON").expand(2**31 - 1)
  assert fits.argmax().dtype == fits.argmin().dtype == dtypes.int32   # public tinygrad's int32 wherever it can index
  np.testing.assert_equal(Tensor([3, 9, 9, 1], device="PYTHON").argmax().numpy(), np.int32(1))

def test_argmax_past_int32_value():
  # one zero-copy input of 2**31+5 elements with its maximum last: ~2 s of CPU for the two reduces
  if "CPU" not in Device.get_available_devices(): pytest.skip("no CPU plugin installed (tinygrad-cpu)")
  n = 2**31 + 4
  x = Tensor.zeros(1, device="CPU").expand(n).pad(((0, 1),), value=1.0)
  assert x.argmax().item() == n

# ---- max/min of an empty axis raise, as torch and as argmax (they gave -inf/+inf) ----
def test_max_min_of_empty_axis_raise():
  torch = pytest.importorskip("torch", reason="the reference for empty reductions: pip install torch")
  for shape, axis in [((0,), None), ((0, 3), 0), ((0, 3), None), ((2, 0), 1), ((0, 0), 0)]:
    for name in ("max", "min", "argmax", "argmin"):
      kw = {} if axis is None else {"dim": axis}
      with pytest.raises((IndexError, RuntimeError)): getattr(torch.zeros(shape), name)(**kw)
      with pytest.raises(IndexError, match=f"{name} over axis .* the axis is empty"):   # tinygrad.tensor.EmptyReductionError
        getattr(Tensor.zeros(*shape, device="PYTHON"), name)(**({} if axis is None else {"axis": axis}))
  with pytest.raises(IndexError): Tensor([], device="PYTHON").max()
  with pytest.raises(ValueError): Tensor([], dtype=dtypes.int32, device="PYTHON").min()
  # reducing a non-empty axis of an empty tensor is fine (an empty result), and sum/any/all/logsumexp/softmax keep identities
  for shape, axis in [((0, 3), 1), ((3, 0), 0)]:
    x, tx = Tensor.zeros(*shape, device="PYTHON"), torch.zeros(shape)
    for name in ("max", "min"):
      assert getattr(x, name)(axis).shape == tuple(getattr(tx, name)(axis).values.shape)
    assert x.argmax(axis).shape == tuple(tx.argmax(axis).shape)
  e = Tensor.zeros(0, 3, device="PYTHON")
  assert e.sum(0).tolist() == [0.0] * 3 and e.any(0).tolist() == [False] * 3 and e.all(0).tolist() == [True] * 3
  np.testing.assert_equal(e.logsumexp(0).numpy(), torch.zeros(0, 3).logsumexp(0).numpy())
  assert e.softmax(0).shape == (0, 3) and Tensor.zeros(3, 0, device="PYTHON").log_softmax(1).shape == (3, 0)

# ---- float -> int casts: one rule on every renderer (truncate, saturate, NaN -> 0); CPU/CL gave INT_MIN, WEBGPU clamped ----
def _saturated(f: np.ndarray, npdt: str) -> np.ndarray:
  info = np.iinfo(npdt)
  f64 = f.astype(np.float64)
  return np.array([0 if np.isnan(v) else info.max if v >= info.max else info.min if v <= info.min else int(v) for v in f64], dtype=npdt)

CAST_VALUES = [np.nan, np.inf, -np.inf, 1e10, -1e10, 1e30, 3.7, -3.7, 300.0, -1.0, 255.9, -0.5, 2.0**31, 2.0**63, 4294967295.0, -2.0**31]

INT_NAMES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]

def test_float_to_int_cast_saturates(dev):
  for src in ("float32", "float64", "float16"):
    f = np.array(CAST_VALUES, src)
    outs = [Tensor(f, device=dev).cast(getattr(dtypes, n)) for n in INT_NAMES]
    Tensor.realize(*outs)
    for n, got in zip(INT_NAMES, outs): np.testing.assert_array_equal(got.numpy(), _saturated(f, n), err_msg=f"cast {src} -> {n} on {dev}")

def test_float_array_to_an_int_dtype_saturates():
  # Tensor(float array, dtype=int) converted in numpy (astype: C's undefined cast), not by the rule every cast follows:
  # Tensor(np.array([1e10, nan]), dtype=int32) was [-2**31, -2**31] and -2.5 as uint8 254, where .cast gives [2**31-1, 0], 0
  for src in ("float32", "float64", "float16"):
    f = np.array(CAST_VALUES, src)
    for n in INT_NAMES:
      np.testing.assert_array_equal(Tensor(f, dtype=getattr(dtypes, n)).numpy(), _saturated(f, n), err_msg=f"{src} -> {n}")
  assert Tensor(np.float64(1e10), dtype=dtypes.int32).item() == 2**31 - 1 and Tensor(np.array(-2.5), dtype=dtypes.uint8).item() == 0

def test_float_to_int_cast_constant_folds_the_same():
  # a constant is folded on the host (no kernel): the same rule as the kernels (the fold and the device agree)
  from tinygrad.uop import Ops
  from tinygrad.uop.ops import UOp
  from tinygrad.uop.symbolic import sym
  from tinygrad.uop.upat import graph_rewrite
  for src in ("float32", "float64", "float16"):
    f = np.array(CAST_VALUES, src)
    for n in INT_NAMES:
      folded = [graph_rewrite(UOp.const(getattr(dtypes, src), float(v)).cast(getattr(dtypes, n)), sym) for v in f]
      assert all(u.op is Ops.CONST for u in folded) and [u.arg for u in folded] == _saturated(f, n).tolist(), (src, n)
  assert [Tensor(v, device="PYTHON").cast(dtypes.int32).item() for v in (float("nan"), float("inf"), -1e10)] == [0, 2**31 - 1, -2**31]

@pytest.mark.parametrize("mod,cls", RENDERERS, ids=[c for _, c in RENDERERS])
def test_float_to_int_cast_guard_rendered(mod, cls):
  # the guard is a core pass: every renderer's cast of a float to an int reads only an in-range value, chosen by a WHERE
  from tinygrad.codegen import get_program
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  ren = getattr(pytest.importorskip(mod), cls)()
  out = Tensor.empty(16, dtype=dtypes.float32, device="PYTHON").cast(dtypes.int32)
  ast = next(ei.ast for ei in create_schedule([out.uop])[0] if ei.ast.op is Ops.SINK)
  prg = get_program(ast, ren)
  casts = [u for u in prg.uops if u.op is Ops.CAST and u.dtype.scalar() == dtypes.int32 and dtypes.is_float(u.src[0].dtype)]
  assert casts and all(c.src[0].op is Ops.WHERE for c in casts), prg.src
  assert all(any(u.op is Ops.WHERE and c in u.src for u in prg.uops) for c in casts), prg.src

# ---- integer // 0 and % 0: a constant zero divisor raises on the host (torch raises); a zero element gives numpy's 0 ----
INT_DIV_OPS = {"//": lambda a, b: a // b, "%": lambda a, b: a % b, "trunc": lambda a, b: a.div(b, rounding_mode="trunc"),
               "floor": lambda a, b: a.div(b, rounding_mode="floor"), "fmod": lambda a, b: a.fmod(b), "idiv": None}

@pytest.mark.parametrize("name", list(INT_DIV_OPS))
def test_int_division_by_constant_zero_raises_like_torch(name):
  torch = pytest.importorskip("torch", reason="the reference for integer division by zero: pip install torch")
  f = INT_DIV_OPS[name] or (lambda a, b: a.idiv(b) if isinstance(a, Tensor) else torch.div(a, b, rounding_mode="trunc"))
  for zero in (0, "tensor"):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"): f(torch.tensor([5, -3], dtype=torch.int32), 0 if zero == 0 else torch.zeros(2, dtype=torch.int32))
    for dt in (dtypes.int32, dtypes.uint8, dtypes.int64, dtypes.bool):
      t = Tensor([5, 3] if dt != dtypes.bool else [True, False], dtype=dt, device="PYTHON")
      z = 0 if zero == 0 else Tensor.zeros(2, dtype=dt, device="PYTHON")
      if dt == dtypes.bool and name in ("trunc", "floor", "idiv"): continue   # bool true-division paths: float, no int division
      with pytest.raises(ZeroDivisionError, match="by zero"): f(t, z)
      with pytest.raises(RuntimeError): f(t, z)   # tinygrad.tensor.IntDivisionByZeroError: also torch's RuntimeError
  e = Tensor(np.zeros((0, 3), np.int32), device="PYTHON")   # an empty tensor is a constant 0 that divides nothing: no error
  assert f(e, e).shape == tuple(f(torch.zeros(0, 3, dtype=torch.int32), torch.zeros(0, 3, dtype=torch.int32)).shape)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_int_division_by_a_zero_element_gives_numpy_zero(device):
  for npdt in ("int32", "uint32", "uint8", "int64", "int8"):
    a, b = np.array([7, 0, 5, 100, -3 if npdt[0] == "i" else 3], npdt), np.array([0, 0, 2, 0, 0], npdt)
    ta, tb = Tensor(a, device=device), Tensor(b, device=device)
    with np.errstate(all="ignore"):
      for got, want in [(ta // tb, a // b), (ta % tb, a % b), (ta.div(tb, rounding_mode="trunc"), np.trunc(a / np.where(b == 0, 1, b)) * (b != 0)),
                        (ta.fmod(tb), np.fmod(a, b)), (ta.idiv(tb), np.trunc(a / np.where(b == 0, 1, b)) * (b != 0))]:
        np.testing.assert_array_equal(got.numpy(), want.astype(npdt), err_msg=f"{npdt} on {device}")

# ---- a negative constant operand of a minus: C's `--2.0f` and `a--2` do not compile (CPU:CLANG/GCC failed on these) ----
def test_negative_constant_under_a_minus(dev):
  x = Tensor([1.0, 2.0, 3.0], device=dev)
  np.testing.assert_allclose(((-2) ** x).numpy(), [-2.0, 4.0, -8.0])   # pow's sign fix negates the base
  np.testing.assert_equal((-3 // Tensor([1, -1, 2, 0, -2], device=dev)).numpy(), [-3, 3, -2, 0, 1])   # a / -1 is -a
  np.testing.assert_equal((-(Tensor([-5], device=dev) * 0 - 7)).numpy(), [7])

# ---- public tinygrad's test_ops features: DType.min/.max, error classes torch's tests check, shifts and bit ops per dtype ----
def test_dtype_min_max_properties():
  assert dtypes.int32.max == 2**31 - 1 and dtypes.int32.min == -2**31 and dtypes.uint8.max == 255 and dtypes.uint8.min == 0
  assert dtypes.float32.max == float("inf") and dtypes.bool.max is True and dtypes.int64.min == dtypes.min(dtypes.int64)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_maximum_minimum_across_dtypes_match_torch(device):
  torch = pytest.importorskip("torch", reason="the reference for maximum/minimum: pip install torch")
  cases = [([-1234, 0, 1234, 2**31 - 1, -2**31], 2**31 - 1), ([-1234, 0, 1234, 2**31 - 1, -2**31], -2**31), ([1, 2, 3], 1.2),
           ([True, False, False], 1.2), ([True, False, False], 3), ([True, False, False], True), ([1.0, 0.0, 3.0, -4.0], 3.0)]
  for vals, other in cases:
    for name in ("maximum", "minimum"):
      tv = torch.tensor(vals, dtype=torch.int32) if isinstance(vals[0], int) and not isinstance(vals[0], bool) else torch.tensor(vals)
      want = getattr(torch, name)(tv, torch.tensor(other))
      got = getattr(Tensor(vals, device=device), name)(other)
      np.testing.assert_equal(got.numpy(), want.numpy(), err_msg=f"{name}({vals}, {other})")
      want_dt = "bool" if want.dtype == torch.bool else str(want.dtype).split(".")[1]
      if want_dt == "int64" and type(other) is int: want_dt = "int32"   # a Python int is tinygrad's default int (int32), torch's int64
      assert np.dtype(got.numpy().dtype) == np.dtype(want_dt), (vals, other, got.dtype, want.dtype)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_shifts_and_bit_ops_on_every_int_dtype_match_torch(device):
  torch = pytest.importorskip("torch", reason="the reference for shifts: pip install torch")
  for npdt in ("int8", "uint8", "int16", "int32", "int64"):
    bits = np.dtype(npdt).itemsize * 8
    a = np.array([0, 1, 3, -1 if npdt[0] == "i" else 7, 2**(bits - 2) + 5, 1 << (bits - 1) if npdt[0] == "u" else 5], npdt)
    amt = np.array([0, 1, bits - 1, 2, 1, 3], npdt)
    t, ta = Tensor(a, device=device), torch.tensor(a)
    for name, f in [("<<", lambda x, y: x << y), (">>", lambda x, y: x >> y), ("|", lambda x, y: x | y), ("&", lambda x, y: x & y), ("^", lambda x, y: x ^ y)]:
      np.testing.assert_array_equal(f(t, Tensor(amt, device=device)).numpy(), f(ta, torch.tensor(amt)).numpy(), err_msg=f"{npdt} {name}")
      np.testing.assert_array_equal(f(t, 2).numpy(), f(ta, 2).numpy(), err_msg=f"{npdt} {name} 2")
    np.testing.assert_array_equal(t.lshift(3).numpy(), ta.bitwise_left_shift(3).numpy())
    np.testing.assert_array_equal(t.rshift(1).numpy(), ta.bitwise_right_shift(1).numpy())
  # past int32: ints in int64 keep their high bits
  big = Tensor([2**40 + 3, 2**62], device=device)
  assert (big | 2**41).tolist() == [2**40 + 2**41 + 3, 2**62 + 2**41] and (big & (2**41 - 1)).tolist() == [2**40 + 3, 0] and (big ^ 1).tolist() == [2**40 + 2, 2**62 + 1]
  # a float operand is torch's RuntimeError (and a TypeError)
  for f in (lambda: Tensor([1.0]) << 2, lambda: Tensor([4.0]) >> 1, lambda: Tensor([1], dtype=dtypes.uint32) << 1.0, lambda: Tensor([1.0]) | 1):
    with pytest.raises(RuntimeError, match="needs int"): f()
  with pytest.raises(RuntimeError, match="negative integer powers"): Tensor([2, 3]) ** -2   # torch: RuntimeError
  with pytest.raises(RuntimeError, match="rounding_mode"): Tensor([5]).div(2, rounding_mode="typo")

# ---- a long Variable: passed as the launch contract's 32-bit int, widened in the kernel (LLVM IR and PTX declared it i32 and failed) ----
def test_long_variable_within_int32_works_and_beyond_raises(dev):
  from tinygrad import Variable
  v = Variable("b", -2**40, 2**40, dtype=dtypes.long)
  for val in (2**20, -7, 2**31 - 1):
    assert Tensor(v.bind(val)).clone(dev).item() == val
    np.testing.assert_equal((Tensor.arange(4, dtype=dtypes.long, device=dev) * v.bind(val)).numpy(), np.arange(4, dtype=np.int64) * val)
  with pytest.raises(ValueError, match="32-bit int"): Tensor(v.bind(2**35)).clone(dev).item()

# ---- exp builds 2**n in the exponent field from the float n's bits, without a float -> int cast ----
def test_exp_has_no_float_to_int_cast():
  # the cast is guarded on every device (NaN, overflow: ~10 vector ops) though exp's n is a small integer by construction;
  # n + 1.5 * 2**23 holds it in the mantissa's low bits, which a bitcast reads: softmax 4096^2's exps cost ~8% less CPU
  from tinygrad.plugin_api import render
  from tinygrad.uop import Ops
  for dt in (dtypes.float32, dtypes.float64):
    uops = render(Tensor.empty(64, dtype=dt, device="CPU").exp(), Device["CPU"].renderer, opts=[]).uops or []
    casts = [u for u in uops if u.op is Ops.CAST and dtypes.is_int(u.dtype.scalar()) and dtypes.is_float(u.src[0].dtype.scalar())]
    assert not casts, f"exp({dt}) casts a float to an int: {casts[:1]}"

def test_exp_is_few_alu_ops():
  # softmax and every activation built on exp are bound by its ops on the CPU: the polynomial as fused MULACCs, n rounded
  # in t = x/ln2 + 1.5 * 2**mb (no floor), 2**n from t's bits as two powers (no subnormal/overflow/NaN selects): 25 ALU
  # ops for float32 (was 43), 31 for float64 (was 55)
  from tinygrad.plugin_api import render
  from tinygrad.uop import Ops, GroupOp
  for dt, most in ((dtypes.float32, 26), (dtypes.float64, 32)):
    uops = render(Tensor.empty(64, dtype=dt, device="CPU").exp(), Device["CPU"].renderer, opts=[]).uops or []
    n = sum(1 for u in uops if u.op in GroupOp.ALU and u.op is not Ops.BITCAST)
    assert n <= most, f"exp({dt}) is {n} ALU ops, want <= {most}"

def test_softmax_exp_is_fewer_ops():
  # softmax/log_softmax's exp (x - max <= 0) drops the upper clamp and builds 2**n as one power 2**(n+64) and a constant
  # 2**-64 (n >= -150 there), and on the CPU n comes from t - magic (keeps_float_order): 17 ALU ops for float32, not 25
  from tinygrad.plugin_api import render
  from tinygrad.uop import Ops, GroupOp
  for dt, most in ((dtypes.float32, 17), (dtypes.float64, 23)):
    uops = render(Tensor.empty(64, dtype=dt, device="CPU")._exp(nonpos=True), Device["CPU"].renderer, opts=[]).uops or []
    n = sum(1 for u in uops if u.op in GroupOp.ALU and u.op is not Ops.BITCAST)
    assert n <= most, f"softmax's exp({dt}) is {n} ALU ops, want <= {most}"
    assert not any(u.op is Ops.CAST and dtypes.is_float(u.dtype.scalar()) for u in uops), "n should be t - magic on the CPU, not a convert"

@pytest.mark.parametrize("npdt", [np.float32, np.float64])
@pytest.mark.parametrize("name", DEVICES + ["WEBGPU", "CL"])
def test_softmax_exp_ulp_error_down_to_the_subnormals(name, npdt):
  # the x <= 0 exp of softmax, log_softmax (and sigmoid's) scales by 2**(n+64) (exact) then 2**-64, the one rounding: results
  # down into the subnormals stay < 1.5 ulp, below half the smallest subnormal +0; -inf -> 0, NaN -> NaN. WEBGPU and CL
  # read n through an int -> float convert (no keeps_float_order), the CPU renderers as t - magic: both are checked
  dev = _dev(name)
  if npdt == np.float64 and dev in ("NV", "AMD", "AMD:LLVM", "WEBGPU", "CL"): pytest.skip("float64 exp is checked on the CPU renderers and PYTHON")
  rng = np.random.default_rng(3)
  lo = -105.0 if npdt == np.float32 else -746.0
  x = np.concatenate([rng.uniform(lo, 0.0, 20_000 if dev == "PYTHON" else 200_000), -rng.exponential(1.0, 2000),
                      [0.0, -0.0, -np.inf, np.nan, -87.33, -103.27, -103.28, -103.97, -103.98, -104.0, -745.13, -745.14]]).astype(npdt)
  got = Tensor(x, device=dev)._exp(nonpos=True).numpy()
  with np.errstate(under="ignore"): want = np.exp(x.astype(np.longdouble))
  w = want.astype(npdt)
  assert np.isnan(got[np.isnan(x)]).all() and (got[x == -np.inf] == 0).all()
  fin = np.isfinite(x)
  ulps = np.abs(got[fin].astype(np.longdouble) - want[fin]) / np.spacing(w[fin]).astype(np.longdouble)
  assert ulps.max() < 1.5, f"{ulps.max()} ulp at x={x[fin][np.argmax(ulps)]!r}"
  assert not np.signbit(got[fin]).any()
  # and through softmax itself: a row whose max is 0, so each result is that exp over a sum within [1, 1 + 2**-20]
  row = np.concatenate([[0.0], np.linspace(lo + 1, -30.0, 999)]).astype(npdt)
  np.testing.assert_allclose(Tensor(row, device=dev).softmax(0).numpy(), np.exp(row.astype(np.float64)) / np.exp(row.astype(np.float64)).sum(),
                             rtol=4e-7 if npdt == np.float32 else 1e-15, atol=np.finfo(npdt).smallest_subnormal)

def test_exp_graph_is_the_one_tensor_ops_build():
  # Tensor.exp copies a graph built once per (dtype, shape, device) onto its input: the very nodes its Tensor ops build
  # (kernels, gradients and the schedule cache see no difference), for every input of that key, and not for another key
  a, b = Tensor.empty(3, 5, device="CPU"), Tensor.empty(3, 5, device="CPU") + 1
  for x in (a, b, a * 2, Tensor.empty(5, 3, device="CPU"), Tensor.empty(4, dtype=dtypes.float64, device="CPU"), Tensor.empty(0, device="CPU")):
    assert x.exp().uop is x._float()._exp().uop
  x = Tensor([[0.5, -1.0], [2.0, float("-inf")]], requires_grad=True)
  x.exp().sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.exp(x.numpy()), rtol=1e-6)

@pytest.mark.parametrize("npdt", [np.float32, np.float64])
def test_exp_edges_match_numpy(dev, npdt):
  if npdt == np.float64 and dev in ("NV", "AMD", "AMD:LLVM"): pytest.skip("float64 exp is checked on the CPU renderers and PYTHON")
  lim = (-110.0, 95.0) if npdt == np.float32 else (-750.0, 712.0)
  edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 88.72, 88.73, -87.3, -103.97, -103.98, -104.0, 709.78, 709.79, -745.13, -745.14]
  x = np.concatenate([np.linspace(*lim, 2001), edges]).astype(npdt)
  got = Tensor(x, device=dev).exp().numpy()
  with np.errstate(over="ignore"): want = np.exp(x.astype(np.float64)).astype(npdt)
  tiny = np.finfo(npdt).tiny   # subnormal results keep fewer bits: compared absolutely
  np.testing.assert_allclose(got, want, rtol=4e-7 if npdt == np.float32 else 1e-15, atol=tiny * 2**-20)

# ---- exp over the whole float range, in ulps of the exact exp (longdouble) rounded to the dtype ----
@pytest.mark.parametrize("npdt", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("name", DEVICES + ["WEBGPU", "CL"])
def test_exp_ulp_error_over_random_bit_patterns(name, npdt):
  # random bits cover every exponent (tiny, huge, NaNs, infs, subnormals); the uniform draw covers the finite-result range.
  # The range reduction (x/ln2 rounded through the mantissa of x/ln2 + 1.5 * 2**mb), the two-power scale (2**a * 2**b,
  # one rounding into the subnormals) and the fused polynomial must keep < 1.5 ulp (subnormal spacing below the normals),
  # +0 (never a negative or garbage subnormal) far below the smallest subnormal, and inf and NaN exactly where numpy has them
  # (WEBGPU's shader compiler reassociates: n from x/ln2 + magic - magic was x/ln2 itself there, exp(1) = 2)
  dev = _dev(name)
  if npdt == np.float64 and dev in ("NV", "AMD", "AMD:LLVM", "WEBGPU", "CL"): pytest.skip("float64 exp is checked on the CPU renderers and PYTHON")
  if npdt == np.float16 and dev in ("WEBGPU", "CL"): pytest.skip("float16 is not every WebGPU/OpenCL device's")
  rng = np.random.default_rng(7)
  n = 20_000 if dev == "PYTHON" else 400_000
  ui = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[npdt]
  lim = {np.float16: (-18.0, 11.1), np.float32: (-104.5, 89.0), np.float64: (-746.0, 710.0)}[npdt]
  x = np.concatenate([rng.integers(0, np.iinfo(ui).max, n, dtype=ui, endpoint=True).view(npdt), rng.uniform(*lim, n).astype(npdt),
                      np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(npdt).max, -np.finfo(npdt).max], npdt)])
  got = Tensor(x, device=dev).exp().numpy()
  with np.errstate(over="ignore", under="ignore", invalid="ignore"): want = np.exp(x.astype(np.longdouble))
  with np.errstate(over="ignore"): w = want.astype(npdt)
  assert got.dtype == npdt
  fin = np.isfinite(w)
  ulps = np.abs(got[fin].astype(np.longdouble) - want[fin]) / np.spacing(w[fin]).astype(np.longdouble)
  assert ulps.max() < 1.5, f"{ulps.max()} ulp at x={x[fin][np.argmax(ulps)]!r}"
  np.testing.assert_array_equal(np.isnan(got), np.isnan(w))
  np.testing.assert_array_equal(got[~fin], w[~fin])   # +inf where it overflows, NaN for NaN
  zero = want < np.finfo(npdt).smallest_subnormal / 4
  assert np.all(got[zero] == 0) and not np.signbit(got[~np.isnan(got)]).any()

# ---- exp's 2**n: LDEXP (one instruction) where the renderer lists it, two exact multiplies elsewhere: the same bits ----
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64, dtypes.float16], ids=str)
@pytest.mark.parametrize("name", ["CPU:LLVM", "PYTHON"])
def test_exp_ldexp_form_matches_two_multiplies(name, dt, monkeypatch):
  # CPU:LLVM lists LDEXP where the host has AVX-512 (vscalefps), PYTHON always (numpy's ldexp); the form without it is two
  # exact power-of-two multiplies. Both round once: the same bits, subnormal results, the clamp's 0 and inf and NaN included
  from tinygrad.uop import Ops
  d = _dev(name)
  lo, hi = {dtypes.float32: (-110, 95), dtypes.float64: (-760, 720), dtypes.float16: (-20, 13)}[dt]
  xs = np.concatenate([np.linspace(lo, hi, 20001 if d != "PYTHON" else 1001), [np.nan, np.inf, -np.inf, 0.0, -0.0]]).astype(to_numpy(dt))
  ren = Device[d].renderer
  if d == "CPU:LLVM" and "avx512f" in __import__("tinygrad_cpu.renderer", fromlist=["host_flags"]).host_flags():
    assert Ops.LDEXP in ren.code_for_op   # the form this test exists for is the one used here
  if Ops.LDEXP not in ren.code_for_op: pytest.skip(f"{d}'s renderer has no LDEXP on this host (AVX-512 only): exp uses the multiplies")
  def exp(shape):   # (a shape of its own: a graph template of the other form is not reused)
    t = Tensor(xs, device=d).reshape(shape).exp()
    has = any(u.op is Ops.LDEXP for u in t.uop.toposort())
    return t.numpy().reshape(-1), has
  with_ldexp, has = exp((1, len(xs)))
  assert has
  monkeypatch.setattr(ren, "code_for_op", {k: v for k, v in ren.code_for_op.items() if k is not Ops.LDEXP})
  without, has = exp((len(xs), 1))
  assert not has
  bits = to_numpy({dtypes.float32: dtypes.uint32, dtypes.float64: dtypes.uint64, dtypes.float16: dtypes.uint16}[dt])
  num = ~np.isnan(xs)
  assert np.array_equal(with_ldexp[num].view(bits), without[num].view(bits)) and np.isnan(with_ldexp[~num]).all() and np.isnan(without[~num]).all()
  # and exp to within an ulp of the float64 reference rounded to dt (results are >= 0: the bits are ordered), subnormals too
  with np.errstate(over="ignore"): ref = np.exp(xs[num].astype(np.float64)).astype(to_numpy(dt))
  assert np.abs(with_ldexp[num].view(bits).astype(np.int64) - ref.view(bits).astype(np.int64)).max() <= 1

@pytest.mark.parametrize("npdt", [np.float32, np.float64])
def test_float_floordiv_is_the_true_floor_while_integers_are_floats(npdt):
  # from 2**23 (2**52) to 2**24 (2**53) every integer is a float, so a // b can be the exact floor there; it returned a/b
  # rounded to nearest, an integer already but one above the floor for about half of those quotients (numpy's and torch's
  # (a - fmod(a, b)) / b rounds as well: numpy's is off by one for ~1 in 8 of these)
  import math
  from fractions import Fraction
  rng = np.random.default_rng(0)
  mant = 23 if npdt == np.float32 else 52
  b = (rng.uniform(0.5, 64, 500) * rng.choice([-1, 1], 500)).astype(npdt)
  q = rng.uniform(2.0 ** mant, 2.0 ** (mant + 1), 500) * rng.choice([-1, 1], 500)
  a = (q * b).astype(npdt)
  got = (Tensor(a) // Tensor(b)).numpy()
  want = [math.floor(Fraction(float(x)) / Fraction(float(y))) for x, y in zip(a, b)]
  assert [int(g) for g in got] == want

# ---- float16/bfloat16 with a Python number it holds only rounded: computed in float32, rounded once (docs/guide.md) ----
HALF_VALS = [6e-5, -0.0, 1e-7, 3.0, -2.5, 60000.0, 2048.0, -1.5]
SCALAR_OPS = {"add": lambda a, s: a + s, "sub": lambda a, s: a - s, "rsub": lambda a, s: s - a, "mul": lambda a, s: a * s,
              "rmul": lambda a, s: s * a, "div": lambda a, s: a / s, "rdiv": lambda a, s: s / a}

def test_half_times_a_number_past_its_range_is_finite():
  # half(6e-5) * 1e5 was inf (1e5 rounded to float16 first) and -0.0 * 1e5 NaN; torch gives 6.0 and -0.0
  got = (Tensor(HALF_VALS[:3], dtype=dtypes.float16) * 1e5).numpy()
  np.testing.assert_equal(got, (np.array(HALF_VALS[:3], dtype=np.float16).astype(np.float32) * np.float32(1e5)).astype(np.float16))
  assert np.isfinite(got).all() and got[0] == np.float16(6.004) and np.signbit(got[1])
  assert (Tensor([-2.5], dtype=dtypes.float16) + 65520.0).item() == 65504.0   # (65517.5, the sum, rounds to float16's max)
  # bfloat16(60000) is 59904: 59904 - 70000 rounds to -10112; 70000 rounded first (70144) gave -10240
  assert (Tensor([60000.0], dtype=dtypes.bfloat16) - 70000).item() == -10112.0

@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=st.one_of(st.floats(-1e6, 1e6, allow_subnormal=False, width=32), st.integers(-10**6, 10**6), st.sampled_from([0.1, 1e5, 65520.0, 1e-8])))
def test_half_with_a_python_number_rounds_once(s):
  a = np.array(HALF_VALS, dtype=np.float16)
  t = Tensor(a)
  got = Tensor.stack(*(f(t, s) for f in SCALAR_OPS.values())).numpy()
  with np.errstate(all="ignore"):
    want = np.stack([f(a.astype(np.float32), np.float32(s)).astype(np.float16) for f in SCALAR_OPS.values()])
  assert got.dtype == np.float16
  np.testing.assert_array_equal(got, want, err_msg=f"float16 op {s!r}")

# ---- half matmul: products in float32 (exact), one rounding at the end, as torch ----
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("mkn", [(33, 300, 17), (64, 256, 48)])
def test_half_matmul_rounds_once(dev, dt, mkn):
  # each product rounded to the half type before the float32 sum left ~40% of the outputs off the correctly rounded value;
  # in float32 (exact products) only the sum's order can tip one (torch: 0-0.7% here), and the error is torch's
  if dev in ("NV", "AMD", "AMD:LLVM") and dt == dtypes.bfloat16: pytest.skip("bfloat16 matmul is checked on the CPU renderers and PYTHON")
  m, k, n = mkn if dev != "PYTHON" else (9, 40, 5)
  rng = np.random.default_rng(5)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  A, B = Tensor(a, device=dev).cast(dt), Tensor(b, device=dev).cast(dt)
  ah, bh = A.float().numpy().astype(np.float64), B.float().numpy().astype(np.float64)
  exact = Tensor(ah @ bh, device="PYTHON").cast(dt).float().numpy()   # (products exact, the sum in float64: rounded once)
  # (dot(dtype=half) asks for a half accumulator: its sum rounds at each step, as in torch's and public tinygrad's)
  for got in ((A @ B).float().numpy(), A.linear(B).float().numpy(), A.reshape(1, m, k).matmul(B).float().numpy()[0]):
    assert (got != exact).mean() < 0.02, f"{(got != exact).mean():.1%} of {dt} matmul outputs are off the correctly rounded value"
  f32 = A.dot(B, dtype=dtypes.float32).numpy()   # dtype=float32: the float32 sum of the exact products, not rounded to half
  np.testing.assert_allclose(f32, ah @ bh, rtol=1e-5, atol=1e-4)

# ---- half conv: the same (products in float32, one rounding), forward and through conv_backward's convs ----
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("case", [((2, 16, 12, 12), (8, 16, 3, 3), {}), ((2, 16, 11, 11), (8, 16, 3, 3), {"padding": 1}),
                                  ((2, 8, 13, 13), (8, 2, 3, 3), {"groups": 4, "stride": 2}), ((1, 32, 5, 5), (16, 32, 1, 1), {})])
def test_half_conv_rounds_once(dev, dt, case):
  torch = pytest.importorskip("torch")
  xs, ws, kw = case
  if dev == "PYTHON": xs = (1, xs[1], 7, 7)   # (the interpreter: a small image)
  rng = np.random.default_rng(11)
  X, W = (Tensor(rng.standard_normal(s).astype(np.float32), device=dev).cast(dt).realize() for s in (xs, ws))
  xh, wh = (torch.tensor(T.float().numpy().astype(np.float64), requires_grad=True) for T in (X, W))
  ref = torch.nn.functional.conv2d(xh, wh, **kw)   # (products exact, sums in float64)
  exact = Tensor(ref.detach().numpy(), device="PYTHON").cast(dt).float().numpy()
  # each product rounded to the half type first left 30-45% of the outputs off the correctly rounded value (torch: 0-0.2%)
  got = X.conv2d(W, **kw)
  assert got.dtype == dt and (off := (got.float().numpy() != exact).mean()) < 0.02, f"{off:.1%} of {dt} conv outputs are off"
  # the gradients (conv_backward's convs, past the casts) keep the operands' dtype and the float64 values to their precision
  X.requires_grad = W.requires_grad = True
  X.conv2d(W, **kw).float().square().sum().backward()
  ref.square().sum().backward()
  tol = 2e-3 if dt == dtypes.float16 else 1.6e-2
  for T, R in ((X, xh), (W, wh)):
    assert T.grad is not None and T.grad.dtype == dt
    np.testing.assert_allclose(T.grad.float().numpy(), R.grad.numpy(), rtol=0, atol=tol * np.abs(R.grad.numpy()).max())

# ---- TRANSCENDENTAL=2 (public tinygrad's flag): exp2/log2/sin from the core's decompositions even where the renderer has them ----
@pytest.mark.parametrize("mod,cls", [("tinygrad_cpu.renderer", "ClangRenderer"), ("tinygrad_nv.renderer", "CUDARenderer"),
                                     ("tinygrad_metal.renderer", "MetalRenderer")], ids=["Clang", "CUDA", "Metal"])
def test_transcendental_2_decomposes_on_every_renderer(mod, cls):
  from tinygrad import Context
  from tinygrad.codegen import get_program
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  ren = getattr(pytest.importorskip(mod), cls)()
  x = Tensor.empty(16, dtype=dtypes.float32, device="PYTHON")
  ast = next(ei.ast for ei in create_schedule([(x.exp2() + x.log2() + x.sin()).uop])[0] if ei.ast.op is Ops.SINK)
  ops = {Ops.EXP2, Ops.LOG2, Ops.SIN}
  with Context(TRANSCENDENTAL=2): assert not any(u.op in ops for u in get_program(ast, ren, compile=False).uops)
  assert {u.op for u in get_program(ast, ren, compile=False).uops} >= ops & set(ren.code_for_op)   # (1: the renderer's own where it has them)

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64], ids=str)
def test_transcendental_2_matches_numpy(dev, dt):
  from tinygrad import Context
  npdt = to_numpy(dt)
  x = np.concatenate([np.linspace(-30, 30, 301), [0.0, -0.0, 1e-3, 100.0, 1e4]]).astype(npdt)
  with Context(TRANSCENDENTAL=2):
    for tf, nf in ((Tensor.exp2, np.exp2), (Tensor.sin, np.sin), (Tensor.log2, np.log2)):
      xs = np.abs(x) + np.finfo(npdt).tiny if nf is np.log2 else x
      with np.errstate(over="ignore"): want = nf(xs.astype(np.float64)).astype(npdt)
      np.testing.assert_allclose(tf(Tensor(xs, device=dev)).numpy(), want, rtol=2*np.finfo(npdt).eps, atol=2*np.finfo(npdt).eps, err_msg=f"{nf.__name__} {dt}")

@pytest.mark.parametrize("args", [(-5, 5, 0.7), (0, 1, 0.1), (1, 0, -0.3), (0.5, 1000.5, 1.1)])
def test_float_arange_is_numpys_fill(dev, args):
  # docs/guide.md (Numerics): start + i*((start + step) - start), each rounded to float32, bit for bit numpy's
  np.testing.assert_array_equal(Tensor.arange(*args, device=dev).numpy(), np.arange(*args, dtype=np.float32))

# ---- 16-bit floats moved, not computed, keep their bits (NaN sign and payload, -0.0, denormals), as torch's copies ----
# A renderer holding bfloat16/half as float in registers rounded each load+store through float->16-bit, which makes every
# NaN the canonical one (bfloat16 0xFFFF, 0x7F81 -> 0x7FC0). Every one of the 65536 bit patterns, through each bit move.
@pytest.fixture(params=DEVICES + ["CL", "WEBGPU"])
def mdev(request): return _dev(request.param)

_ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
_MOVES = {
  "bitcast": lambda t: t,
  "contiguous": lambda t: t.contiguous(),
  "permute": lambda t: t.reshape(256, 256).permute(1, 0).contiguous().permute(1, 0).reshape(-1),
  "cat": lambda t: t[:40000].cat(t[40000:]),
  "pad": lambda t: t.reshape(256, 256).pad(((0, 0), (1, 1)), value=float("nan"))[:, 1:-1].reshape(-1),
  "where": lambda t: (Tensor.arange(1 << 16, device=t.device) % 3 == 0).where(t, t.flip(0)),
  "to": lambda t: t.to("PYTHON" if t.device != "PYTHON" else "CPU").contiguous(),
}
def _expect(move: str) -> np.ndarray:
  if move != "where": return _ALL16
  return np.where(np.arange(1 << 16) % 3 == 0, _ALL16, _ALL16[::-1])

@pytest.mark.parametrize("dt", [dtypes.bfloat16, dtypes.float16], ids=str)
@pytest.mark.parametrize("move", list(_MOVES))
def test_f16_moves_keep_bits(mdev, dt, move):
  if dt not in Device[mdev].renderer.supported_dtypes: pytest.skip(f"{mdev} has no {dt}")
  t = _MOVES[move](Tensor(_ALL16, device=mdev).bitcast(dt)).bitcast(dtypes.uint16)
  got, want = t.numpy(), _expect(move)
  bad = np.nonzero(got != want)[0]
  assert bad.size == 0, f"{mdev} {dt} {move}: {bad.size} patterns changed, e.g. {[(hex(want[i]), hex(got[i])) for i in bad[:4]]}"

# ---- a bool is a byte that kernels read as it is: one made from raw bytes holds 0 or 1, as numpy reads any nonzero byte ----
def test_bools_from_raw_bytes_are_0_or_1(mdev, tmp_path):
  # a numpy bool array viewed from uint8, bytes, from_blob, a file's bytes: byte 2 or 255 kept as it was made CL's and
  # CPU:CLANG's logical_not True, int() 2 and 255, sum() 258
  if mdev in ("NV", "AMD", "AMD:LLVM"): pytest.skip(f"{mdev}: the mock drivers compute nothing")
  raw = np.array([0, 1, 2, 255, 0, 7], dtype=np.uint8)
  (tmp_path / "b.bin").write_bytes(raw.tobytes())
  want = raw != 0
  for how, t in [("numpy", Tensor(raw.view(np.bool_), device=mdev)), ("bytes", Tensor(raw.tobytes(), dtype=dtypes.bool, device=mdev)),
                 ("from_blob", Tensor.from_blob(raw.ctypes.data, (6,), dtypes.bool, device=mdev)),
                 ("file", Tensor(tmp_path / "b.bin", dtype=dtypes.bool).to(mdev))]:
    got = (t.tolist(), t.logical_not().tolist(), t.int().tolist(), t.sum().item(), (t ^ True).tolist())
    assert got == (want.tolist(), (~want).tolist(), want.astype(int).tolist(), 4, (~want).tolist()), f"{mdev} {how}: {got}"

# ---- float64 numpy data made bfloat16/fp8: rounded once (ml_dtypes'), on every device (one without float64 too) ----
@pytest.mark.parametrize("dt", [dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2], ids=str)
def test_float64_numpy_data_to_bf16_and_fp8_rounds_once(mdev, dt):
  # numpy has neither dtype, so the float64 array was copied as it was and cast on the device: WEBGPU (no float64) raised
  # "dtype double is not supported" for an fp8 it supports. Narrowed on the host to a float32 rounded to odd, it rounds
  # once, as a kernel's cast does (through a plain float32, torch's way, 1+2**-8+2**-30 gave bfloat16 1.0, not 1.0078125)
  if mdev in ("NV", "AMD", "AMD:LLVM"): pytest.skip(f"{mdev}: the mock drivers compute nothing")
  if dt not in Device[mdev].renderer.supported_dtypes: pytest.skip(f"{mdev} has no {dt}")
  ml_dtypes = pytest.importorskip("ml_dtypes", reason="the ml_dtypes reference is missing: pip install ml_dtypes")
  rng = np.random.default_rng(0)
  x = np.concatenate([[1 + 2**-8 + 2**-30, 1 + 2**-4 + 2**-30, 1 + 2**-3 + 2**-30, 1e39, -3.3961e38, 465.0, 61441.0, 5e-324, -0.0, np.nan, np.inf],
                      rng.standard_normal(500) * 10.0 ** rng.integers(-45, 40, 500)])
  ref = {dtypes.bfloat16: ml_dtypes.bfloat16, dtypes.fp8e4m3: ml_dtypes.float8_e4m3fn, dtypes.fp8e5m2: ml_dtypes.float8_e5m2}[dt]
  with np.errstate(over="ignore"): want = x.astype(ref).astype(np.float32)
  if dt == dtypes.fp8e4m3: want = np.where(np.isnan(x), np.nan, np.where(np.abs(x) >= 464, np.copysign(448.0, x), want)).astype(np.float32)   # (it saturates, as torch)
  np.testing.assert_array_equal(Tensor(x, dtype=dt, device=mdev).numpy(), want)
  np.testing.assert_array_equal(Tensor(x.astype(ref), device=mdev).numpy(), x.astype(ref).astype(np.float32))   # ml_dtypes' arrays: their bits

# ---- every integer reduction over random int/bool tensors (full-range values that overflow the accumulator, small ones
# with ties and negatives), any axis, keepdim, against numpy: int64 sums/products that wrap as numpy's, float32 means from
# the exact sum, float32 var/std. INT_REDUCE_EXAMPLES=n runs n examples
_IDT = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"]

@settings(max_examples=int(os.getenv("INT_REDUCE_EXAMPLES", "10")), deadline=None, suppress_health_check=list(HealthCheck))
@given(npdt=st.sampled_from(_IDT), shape=st.lists(st.sampled_from([0, 1, 2, 3, 5]), min_size=1, max_size=3), wide=st.booleans(),
       axis=st.integers(-1, 2), keep=st.booleans(), seed=st.integers(0, 2**16), device=st.sampled_from(CPU_PY))
def test_int_reductions_of_random_tensors_match_numpy(npdt, shape, wide, axis, keep, seed, device):
  rng = np.random.default_rng(seed)
  if npdt == "bool": a = rng.integers(0, 2, shape).astype(np.bool_)
  else:
    info = np.iinfo(npdt)
    a = rng.integers(info.min, info.max, shape, dtype=npdt, endpoint=True) if wide else rng.integers(max(info.min, -5), 6, shape).astype(npdt)
  ax = None if axis < 0 or axis >= a.ndim else axis
  t, a64, n = Tensor(a, device=device), a.astype(np.int64), a.size if ax is None else a.shape[ax]
  with np.errstate(all="ignore"):
    np.testing.assert_array_equal(t.sum(ax, keepdim=keep).numpy(), a64.sum(ax, keepdims=keep), err_msg="sum")
    np.testing.assert_array_equal(t.prod(ax, keepdim=keep).numpy(), a64.prod(ax, keepdims=keep), err_msg="prod")
    if ax is not None:
      np.testing.assert_array_equal(t.cumsum(ax).numpy(), a64.cumsum(ax), err_msg="cumsum")
      np.testing.assert_array_equal(t.cumprod(ax).numpy(), a64.cumprod(ax), err_msg="cumprod")
    if n == 0: return
    exact = np.asarray(a.astype(object).sum(ax, keepdims=keep) / n, dtype=np.float64)   # (Python ints: the exact sum)
    np.testing.assert_allclose(t.mean(ax, keepdim=keep).numpy(), exact, rtol=1e-6, err_msg="mean")
    for corr in (0, 1):
      if n <= corr: continue
      want = np.var(a.astype(np.longdouble), ax, keepdims=keep, ddof=corr).astype(np.float64)
      np.testing.assert_allclose(t.var(ax, keepdim=keep, correction=corr).numpy(), want, rtol=1e-4, err_msg="var")
      np.testing.assert_allclose(t.std(ax, keepdim=keep, correction=corr).numpy(), np.sqrt(want), rtol=1e-4, err_msg="std")
    np.testing.assert_array_equal(t.max(ax, keepdim=keep).numpy(), a.max(ax, keepdims=keep), err_msg="max")
    np.testing.assert_array_equal(t.min(ax, keepdim=keep).numpy(), a.min(ax, keepdims=keep), err_msg="min")
    if ax is not None: np.testing.assert_array_equal(t.argmax(ax, keepdim=keep).numpy(), a.argmax(ax, keepdims=keep), err_msg="argmax")

# ---- half prod: products in float32, one rounding at the end, as the half types' cumprod ----
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
def test_half_prod_rounds_once(dev, dt):
  # each partial product rounded to the half type drifted: 300 float16 1.01s multiplied to 17.70 (float32's 18.45), and
  # prod disagreed with cumprod(0)[-1] (computed in float32 already)
  n = 300 if dev != "PYTHON" else 60
  x = Tensor(np.random.default_rng(3).uniform(0.98, 1.03, (2, n)).astype(np.float32), device=dev).cast(dt)
  exact = np.prod(x.float().numpy().astype(np.float64), axis=1)
  want = Tensor(exact, device="PYTHON").cast(dt).float().numpy()   # (the float64 product, rounded once)
  got = x.prod(1)
  assert got.dtype == dt
  np.testing.assert_allclose(got.float().numpy(), want, rtol=0.01 if dt == dtypes.bfloat16 else 2e-3)
  np.testing.assert_array_equal(got.float().numpy(), x.cumprod(1)[:, -1].float().numpy())
