"""Late decompositions: exp2/log2/sin/sqrt built from plain arithmetic checked in ulp against numpy, and every lowering rule
checked by evaluating the graph before and after the rewrite (tests/core/uop_eval.py evaluates at each node's width)."""
import math, os, sys
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
sys.path.insert(0, os.path.dirname(__file__))
from uop_eval import uop_eval
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import graph_rewrite
from tinygrad.dtype import DType, dtypes, to_numpy
from tinygrad.codegen.decompositions import xexp2, xexp2_ldexp, xlog2, xsin, xsqrt, get_late_rewrite_patterns, pm_float16_via_float32

F = {dtypes.float16: (np.float16, np.uint16, 10, -14), dtypes.float32: (np.float32, np.uint32, 23, -126),
     dtypes.float64: (np.float64, np.uint64, 52, -1022)}
REF = {xexp2: np.exp2, xexp2_ldexp: np.exp2, xlog2: np.log2, xsin: np.sin, xsqrt: np.sqrt}
# ops the transcendental constructions may use (SUB/NEG/FDIV are lowered themselves when a renderer lacks them)
ALLOWED = {Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.FDIV, Ops.CMPLT, Ops.CMPNE, Ops.WHERE, Ops.CAST, Ops.BITCAST,
           Ops.SHL, Ops.SHR, Ops.AND, Ops.OR, Ops.CONST, Ops.DEFINE_VAR}
# max error in ulp against the float64 (float32/float16) or glibc (float64) reference rounded to the dtype
BOUND = {dtypes.float16: 1, dtypes.float32: 1, dtypes.float64: 2}

def var(dt: DType, name: str = "x") -> UOp: return UOp(Ops.DEFINE_VAR, dt, arg=(name, 0, 0))

def ulp_dist(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
  """How many representable values lie between a and b (0: identical; NaN vs NaN counts as equal)."""
  npf, npu, _, _ = F[dt]
  a, b = a.astype(npf), b.astype(npf)
  sign_bit = npu(1) << npu(8*np.dtype(npf).itemsize - 1)
  def ordered(v: np.ndarray) -> np.ndarray:  # the bit patterns as a monotonic integer line (-0 and +0 both at 0)
    mag = (v.view(npu) & ~sign_bit).astype(np.int64)
    return np.where((v.view(npu) & sign_bit) != 0, -mag, mag)
  oa, ob = ordered(a), ordered(b)
  d = np.where((oa >= 0) == (ob >= 0), np.abs(oa - ob).astype(np.float64), np.abs(oa.astype(np.float64)) + np.abs(ob.astype(np.float64)))
  return np.where(np.isnan(a) & np.isnan(b), 0, np.where(np.isnan(a) ^ np.isnan(b), np.inf, d))

def check(fn, xs: np.ndarray, dt: DType, bound: int | None = None) -> float:
  npf = F[dt][0]
  x = var(dt)
  xs = np.asarray(xs, dtype=npf)
  got = uop_eval(fn(x), {x: xs})
  with np.errstate(all="ignore"): ref = REF[fn](xs.astype(np.float64) if dt != dtypes.float64 else xs).astype(npf)
  d = ulp_dist(got, ref, dt)
  worst = float(d.max()) if d.size else 0.0
  lim = BOUND[dt] if bound is None else bound
  if worst > lim:
    i = int(np.argmax(d))
    raise AssertionError(f"{fn.__name__} {dt}: {worst} ulp at x={xs[i]!r}: got {got[i]!r}, want {ref[i]!r}")
  return worst

def f32_sweep(stride: int) -> np.ndarray: return np.arange(0, 2**32, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)

SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.0, 0.5, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38,
            -3.4028235e38, 1e30, -1e30, 127.99999, 128.0, 128.5, -126.0, -149.0, -149.5, -150.0, -150.5, -151.0, -200.0, 1e-30,
            math.pi, math.pi/2, math.pi/4, 3*math.pi/4, 1e6, 3.0e38, 1.5707964, 105414350.0, 2.0**-126, 2.0**-149, 16777216.0]

# (xexp2_ldexp: exp2 for a renderer with LDEXP, 2**k applied by it)
@pytest.mark.parametrize("fn", [xexp2, xexp2_ldexp, xlog2, xsin, xsqrt], ids=lambda f: f.__name__)
class TestTranscendental:
  def test_specials_exact(self, fn):
    assert check(fn, np.array(SPECIALS), dtypes.float32, 1) <= 1
    x = var(dtypes.float32)
    xs = np.array([0.0, -0.0, math.inf, -math.inf, math.nan, -1.0], dtype=np.float32)
    got, ref = uop_eval(fn(x), {x: xs}), REF[fn](xs.astype(np.float64)).astype(np.float32)
    ok = ~np.isnan(ref)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(ref[ok]))
    assert np.array_equal(got, ref, equal_nan=True), (got, ref)

  def test_dense_sweep_f32(self, fn): check(fn, f32_sweep(4099), dtypes.float32)
  def test_unit_range_f32(self, fn): check(fn, np.random.default_rng(0).uniform(-8, 8, 1 << 18), dtypes.float32)
  def test_denormals_f32(self, fn):
    d = np.arange(0, 1 << 23, 37, dtype=np.uint32).view(np.float32)
    check(fn, np.concatenate([d, -d]), dtypes.float32)
  def test_exhaustive_f16(self, fn): check(fn, np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16), dtypes.float16)
  def test_f64(self, fn):
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.integers(0, 2**63, 1 << 16, dtype=np.uint64).view(np.float64), rng.uniform(-1100, 1100, 1 << 15),
                         rng.uniform(-4, 4, 1 << 15), [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1e300, 1024.0, -1075.0]])
    check(fn, np.concatenate([xs, -xs]), dtypes.float64)

  @given(st.lists(st.floats(width=32), min_size=1, max_size=64))
  @settings(max_examples=60, deadline=None)
  def test_hypothesis_f32(self, fn, vals): check(fn, np.array(vals, dtype=np.float32), dtypes.float32)

  @pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64], ids=str)
  def test_only_basic_ops(self, fn, dt):
    used = {u.op for u in fn(var(dt)).toposort()}
    allowed = ALLOWED | {Ops.CAST} | ({Ops.LDEXP} if fn is xexp2_ldexp else set())
    assert used <= allowed, used - allowed
    if fn is xexp2_ldexp: assert Ops.LDEXP in used

def test_sin_huge_args():
  # 1e30 and friends: the reduction must be exact (a naive x - n*pi/2 in float32 is pure noise here)
  xs = np.array([1e30, -1e30, 3.4e38, 1e22, 2.0**100, 6.0e33, 1e10, 1e20], dtype=np.float32)
  assert check(xsin, xs, dtypes.float32) <= 1
  assert check(xsin, np.array([1e300, 2.0**1000, 1e22, 6381956970095103 * 2.0**797]), dtypes.float64) <= 2

# ---- lowering rules ----
ALL = frozenset(GroupOp.ALU)

def lower(g: UOp, missing: set[Ops], force: bool = False) -> UOp:
  ret = graph_rewrite(g, get_late_rewrite_patterns(ALL - missing, force))
  left = {u.op for u in ret.toposort()} & missing
  assert not left, f"{left} still in the graph"
  return ret

def ints(dt: DType, n: int = 4096) -> np.ndarray:
  info = np.iinfo(to_numpy(dt))
  rng = np.random.default_rng(2)
  edge = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dtype=np.int64)
  small = rng.integers(-300, 300, n)
  full = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64)
  return np.concatenate([edge, small, full]).astype(info.dtype)

def floats32(n: int = 4096) -> np.ndarray:
  rng = np.random.default_rng(3)
  return np.concatenate([rng.standard_normal(n) * 10.0 ** rng.integers(-3, 8, n), [0.0, -0.0, math.inf, -math.inf, math.nan, 0.5, -0.5,
                         2.5, -2.5, 8388607.5, 8388609.0, -16777217.0, 1e30, -1e-30]]).astype(np.float32)

def same(a: np.ndarray, b: np.ndarray) -> bool:
  """Identical values, the sign of zero included (a NaN's sign bit is not a value)."""
  if a.dtype != b.dtype: return False
  if a.dtype.kind != "f": return np.array_equal(a, b)
  num = ~np.isnan(b)
  return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a[num]), np.signbit(b[num]))

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.int32, dtypes.int64, dtypes.uint32], ids=str)
@pytest.mark.parametrize("op", [Ops.IDIV, Ops.MOD])
@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_idiv_mod_pow2(op, dt, k):
  x = var(dt)
  g = x.alu(op, x.const_like(1 << k))
  xs = ints(dt)
  assert same(uop_eval(lower(g, {op}), {x: xs}), uop_eval(g, {x: xs}))

@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int64], ids=str)
def test_mod_general(dt):
  x, y = var(dt, "x"), var(dt, "y")
  g = x % y
  xs, ys = ints(dt), np.where(ints(dt)[::-1] == 0, 7, ints(dt)[::-1])
  assert same(uop_eval(lower(g, {Ops.MOD}), {x: xs, y: ys}), uop_eval(g, {x: xs, y: ys}))

def _binary(op: Ops, dt: DType, xs: np.ndarray, ys: np.ndarray, missing: set[Ops]):
  x, y = var(dt, "x"), var(dt, "y")
  g = x.alu(op, y)
  return uop_eval(lower(g, missing), {x: xs, y: ys}), uop_eval(g, {x: xs, y: ys})

@pytest.mark.parametrize("op", [Ops.SUB, Ops.MAX, Ops.CMPEQ, Ops.FDIV])
def test_float_binary(op):
  xs, ys = floats32(), np.roll(floats32(), 7)
  got, want = _binary(op, dtypes.float32, xs, ys, {op})
  if op is Ops.FDIV: assert np.all(ulp_dist(got, want, dtypes.float32) <= 1)  # x * (1/y): two roundings
  else: assert same(got, want)

@pytest.mark.parametrize("op", [Ops.SUB, Ops.MAX, Ops.CMPEQ, Ops.CMPNE, Ops.SHL, Ops.SHR, Ops.NEG, Ops.MULACC])
@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.uint32, dtypes.int8], ids=str)
def test_int_ops(op, dt):
  xs, ys = ints(dt), np.roll(ints(dt), 5)
  x, y, z = var(dt, "x"), var(dt, "y"), var(dt, "z")
  if op in (Ops.SHL, Ops.SHR):
    if op is Ops.SHR and not dtypes.is_unsigned(dt): pytest.skip("signed SHR has no lowering")
    g = x.alu(op, x.const_like(3))
  elif op is Ops.NEG: g = -x
  elif op is Ops.MULACC: g = UOp(Ops.MULACC, dt, (x, y, z))
  else: g = x.alu(op, y)
  vals = {x: xs, y: ys, z: np.roll(xs, 11)}
  assert same(uop_eval(lower(g, {op}), vals), uop_eval(g, vals))

@pytest.mark.parametrize("op", [Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE, Ops.CMPEQ, Ops.CMPLT, Ops.NEG])
def test_bool_ops(op):
  x, y = var(dtypes.bool, "x"), var(dtypes.bool, "y")
  xs, ys = np.array([0, 0, 1, 1], dtype=bool), np.array([0, 1, 0, 1], dtype=bool)
  g = -x if op is Ops.NEG else x.alu(op, y)
  assert same(uop_eval(lower(g, {op} | ({Ops.XOR} if op is Ops.CMPNE else set())), {x: xs, y: ys}), uop_eval(g, {x: xs, y: ys}))

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64], ids=str)
def test_neg_trunc_reciprocal_mulacc_float(dt):
  npf = F[dt][0]
  xs = floats32().astype(npf)
  x, y = var(dt, "x"), var(dt, "y")
  for g, op in [(-x, Ops.NEG), (x.trunc(), Ops.TRUNC), (x.reciprocal(), Ops.RECIPROCAL), (UOp(Ops.MULACC, dt, (x, y, x)), Ops.MULACC)]:
    vals = {x: xs, y: np.roll(xs, 3)}
    got, want = uop_eval(lower(g, {op}), vals), uop_eval(g, vals)
    assert same(got, want), (op, dt)

@given(st.lists(st.floats(width=32), min_size=1, max_size=32))
@settings(max_examples=50, deadline=None)
def test_trunc_hypothesis(vals):
  x = var(dtypes.float32)
  xs = np.array(vals, dtype=np.float32)
  assert same(uop_eval(lower(x.trunc(), {Ops.TRUNC}), {x: xs}), np.trunc(xs))

@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=32), st.integers(0, 30))
@settings(max_examples=80, deadline=None)
def test_idiv_mod_pow2_hypothesis(vals, k):
  x = var(dtypes.int32)
  xs = np.array(vals, dtype=np.int32)
  for op in (Ops.IDIV, Ops.MOD):
    g = x.alu(op, x.const_like(1 << k))
    assert same(uop_eval(lower(g, {op}), {x: xs}), uop_eval(g, {x: xs}))

@pytest.mark.parametrize("op", [Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT])
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32], ids=str)
def test_transcendental_rules(op, dt):
  x = var(dt)
  g = UOp(op, dt, (x,))
  xs = floats32().astype(F[dt][0])
  assert np.all(ulp_dist(uop_eval(lower(g, {op}), {x: xs}), uop_eval(g, {x: xs}), dt) <= 1)

def test_force_transcendental():
  x = var(dtypes.float32)
  g = x.exp2() + x.log2() + x.sin()
  assert Ops.EXP2 in {u.op for u in graph_rewrite(g, get_late_rewrite_patterns(ALL)).toposort()}
  out = graph_rewrite(g, get_late_rewrite_patterns(ALL, force_transcendental=True))
  assert not {u.op for u in out.toposort()} & {Ops.EXP2, Ops.LOG2, Ops.SIN}

def test_lowered_ops_chain():
  # a renderer with neither SUB, NEG nor EXP2: exp2's own SUBs must come out as ADD/MUL
  x = var(dtypes.float32)
  g = x.exp2() - x
  out = lower(g, {Ops.SUB, Ops.NEG, Ops.EXP2, Ops.CMPEQ})
  xs = floats32()
  assert same(uop_eval(out, {x: xs}), uop_eval(lower(g, {Ops.EXP2}), {x: xs}))  # x-y -> x+(-1*y) is exact

def test_pow():
  x, y = var(dtypes.float32, "x"), var(dtypes.float32, "y")
  # C's pow at the edges too: (-inf)**0.3 = inf, (-inf)**-0.7 = 0 (it gave nan), 1**nan = 1, nan**0 = 1
  xs = np.array([2.0, 2.0, -2.0, -2.0, -2.0, 0.0, 0.0, 3.0, 10.0, 1.5, -1.0, 7.0, -np.inf, -np.inf, -np.inf, 1.0, np.nan, np.inf, -np.inf],
                dtype=np.float32)
  ys = np.array([3.0, -1.0, 3.0, 2.0, 0.5, 2.0, -1.0, 0.0, -3.0, 2.5, 1e9, 0.0, 0.3, -0.7, 3.0, np.nan, 0.0, -2.5, 3.3], dtype=np.float32)
  got, want = uop_eval(lower(x.alu(Ops.POW, y), {Ops.POW, Ops.EXP2, Ops.LOG2}), {x: xs, y: ys}), np.power(xs, ys)
  assert np.allclose(got, want, rtol=1e-5, equal_nan=True), (got, want)
  assert np.array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))

@pytest.mark.parametrize("op", [Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MAX, Ops.SQRT, Ops.CMPLT, Ops.NEG])
def test_float16_via_float32(op):
  x, y = var(dtypes.float16, "x"), var(dtypes.float16, "y")
  g = {Ops.SQRT: x.sqrt(), Ops.NEG: -x}.get(op, x.alu(op, y) if op not in (Ops.SQRT, Ops.NEG) else None)
  out = graph_rewrite(g, pm_float16_via_float32)
  assert all(u.dtype != dtypes.float16 for u in out.toposort() if u.op in GroupOp.ALU)
  assert all(s.dtype != dtypes.float16 for u in out.toposort() if u.op in GroupOp.ALU for s in u.src)
  xs = np.arange(0, 1 << 16, 3, dtype=np.uint32).astype(np.uint16).view(np.float16)
  vals = {x: xs, y: np.roll(xs, 1001)}
  assert same(uop_eval(out, vals), uop_eval(g, vals))

def test_exp2_on_vectors_is_the_scalar_construction_lane_for_lane():
  # the CPU's LLVM renderer lacks exp2 but packs it into vectors: it is decomposed after the vectorize pass, once per
  # vector (codegen _deferred), with the same ops per lane as the scalar construction: the same program, the same bits
  from tinygrad import Tensor, Device
  import tinygrad.codegen as cg
  from tinygrad.engine.realize import method_cache
  if Device.DEFAULT != "CPU" or Ops.EXP2 not in getattr(Device["CPU"].renderer, "vector_ops", ()): pytest.skip("needs the CPU's LLVM renderer")
  vals = np.concatenate([np.linspace(-160, 140, 4093, dtype=np.float32), [np.inf, -np.inf, np.nan, 0, -0.0, 1e-45, 127.99, -149.5, -126.2, 128]])
  vals = np.concatenate([vals, vals[::-1] * 0.37]).astype(np.float32)[:8192]
  def run() -> tuple[np.ndarray, str]:
    method_cache.clear()
    out = (Tensor(vals).reshape(64, 128) * 1.0).exp2()
    k = out.schedule()[-1]
    src = cg.get_program(k.ast, Device["CPU"].renderer, compile=False).src
    return out.numpy().reshape(-1), src
  vec, vsrc = run()
  orig = cg._deferred
  cg._deferred = lambda ren: frozenset()
  try: sca, ssrc = run()
  finally: cg._deferred = orig
  assert cg._deferred(Device["CPU"].renderer) == {Ops.EXP2} and vsrc == ssrc   # (the lanes' ops packed are the vector's)
  np.testing.assert_array_equal(vec.view(np.uint32), sca.view(np.uint32))
  ref = np.exp2(vals.astype(np.float64))
  fin = np.isfinite(ref) & (ref < 3e38) & (ref > 1e-37)
  np.testing.assert_allclose(vec[fin], ref[fin], rtol=2.5e-7)

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float32, dtypes.float64])
def test_ldexp_lowering_rounds_once(dt):
  # a renderer without LDEXP gets two exact power-of-two multiplies: the value np.ldexp (one rounding) gives, over the
  # domain docs/ir.md states (|n| <= 2*(bias-1), x * 2**(n>>1) normal), subnormal and overflowing results included
  npf = F[dt][0]
  bias = {dtypes.float16: 15, dtypes.float32: 127, dtypes.float64: 1023}[dt]
  rng = np.random.default_rng(7)
  xs = np.concatenate([rng.uniform(0.5, 2.0, 3000), -rng.uniform(0.5, 2.0, 1000), [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0]]).astype(npf)
  ns = rng.integers(-2 * (bias - 1), 2 * (bias - 1) + 1, len(xs)).astype(np.int32)
  ns[:40] = np.arange(-bias - F[dt][2] - 4, -bias - F[dt][2] + 36)   # around the smallest subnormal
  ns[40:60] = np.arange(bias - 10, bias + 10)                          # around overflow
  x, n = var(dt, "x"), var(dtypes.int32, "n")
  got = uop_eval(lower(x.alu(Ops.LDEXP, n), {Ops.LDEXP}), {x: xs, n: ns})
  want = np.ldexp(xs.astype(np.float64), ns).astype(npf) if dt == dtypes.float16 else np.ldexp(xs, ns)
  assert same(got, want), (xs[got != want][:5], ns[got != want][:5], got[got != want][:5], want[got != want][:5])
  # the constant folder (exec_alu) and the PYTHON device's ALU agree with it
  from tinygrad.uop.ops import exec_alu
  assert exec_alu(Ops.LDEXP, dt, [1.5, -3]) == 0.1875 and math.isinf(exec_alu(Ops.LDEXP, dt, [1.5, 5000]))
  assert exec_alu(Ops.LDEXP, dt, [1.5, -5000]) == 0.0
