"""Differential conformance: every Tensor op against numpy, on every installed device, with hypothesis-drawn shapes/values."""
from __future__ import annotations
import math
import numpy as np
import pytest
from hypothesis import given, assume, strategies as st
from hypothesis.extra import numpy as hnp
from tinygrad import Tensor, dtypes
from tinygrad.device import Device
from tinygrad.conformance.plugin import examples

FEW = examples(20)
SOME = examples(25)

# ---- strategies ----
def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4): return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)
F32 = st.floats(-10, 10, width=32)
I32 = st.integers(-100, 100)

def f32(lo: float, hi: float): return st.floats(float(np.float32(lo)), float(np.float32(hi)), width=32)  # bounds rounded to float32
def farr(shape, lo=-10.0, hi=10.0): return hnp.arrays(np.float32, shape, elements=f32(lo, hi))
def iarr(shape, lo=-100, hi=100): return hnp.arrays(np.int32, shape, elements=st.integers(lo, hi))
def barr(shape): return hnp.arrays(np.bool_, shape)

@st.composite
def shape_and_axis(draw, min_dims=1, max_dims=3, max_side=4, allow_tuple=True):
  shape = draw(shapes(min_dims, max_dims, max_side=max_side))
  n = len(shape)
  kind = draw(st.sampled_from(["none", "int", "tuple"] if allow_tuple else ["none", "int"]))
  if kind == "none" or n == 0: return shape, None
  if kind == "int": return shape, draw(st.integers(-n, n-1))
  axes = draw(st.lists(st.integers(0, n-1), unique=True, max_size=n))
  return shape, tuple(a - n if draw(st.booleans()) else a for a in axes)

def m(name: str):
  """The Tensor method `name`, looked up when called (a missing method fails its own tests, not the whole module)."""
  return lambda t, *args, **kwargs: getattr(t, name)(*args, **kwargs)

# ---- comparison ----
def T(x: np.ndarray, device: str) -> Tensor: return Tensor(x, device=device)

def check(got: Tensor, want, rtol=1e-5, atol=1e-6, what: str = ""):
  w = np.asarray(want)
  assert isinstance(got, Tensor), f"{what}: expected a Tensor, got {type(got).__name__}"
  g = got.numpy()
  assert g.shape == w.shape, f"{what}: shape {g.shape} != numpy's {w.shape}"
  kinds = {"b": "bool", "i": "int", "u": "int", "f": "float"}
  assert kinds[g.dtype.kind] == kinds[w.dtype.kind], f"{what}: dtype {g.dtype} is not the kind of numpy's {w.dtype}"
  if w.dtype.kind in "biu": np.testing.assert_equal(g, w, err_msg=what)
  else: np.testing.assert_allclose(g, w.astype(g.dtype), rtol=rtol, atol=atol, equal_nan=True, err_msg=what)

# ================= creation =================
class TestCreation:
  capability = "tensor creation"
  @given(shapes(), st.data())
  @FEW
  def test_from_numpy_and_list_round_trip(self, device, shape, data):
    for arr in (data.draw(farr(shape)), data.draw(iarr(shape)), data.draw(barr(shape))):
      check(T(arr, device), arr, what=f"Tensor(np {arr.dtype})")
      if arr.size: check(Tensor(arr.tolist(), device=device), arr, what=f"Tensor(list of {arr.dtype})")
      assert T(arr, device).tolist() == arr.tolist()
  def test_list_dtypes(self, device):
    assert Tensor([1, 2], device=device).dtype == dtypes.int32
    assert Tensor([1.0, 2], device=device).dtype == dtypes.float32
    assert Tensor([True, False], device=device).dtype == dtypes.bool
    assert Tensor([[1, 2], [3, 4]], device=device).shape == (2, 2)
    assert Tensor([], device=device).shape == (0,)
    assert Tensor(3.5, device=device).shape == () and Tensor(3.5, device=device).item() == 3.5
    assert (Tensor([1, 2, 3], device=device) * 2).tolist() == [2, 4, 6]
  def test_device_is_kept(self, device):
    assert Tensor([1, 2], device=device).device.split(":")[0] == device.split(":")[0]
  @given(shapes())
  @FEW
  def test_zeros_ones_full(self, device, shape):
    check(Tensor.zeros(*shape, device=device), np.zeros(shape, np.float32), what="zeros")
    check(Tensor.ones(*shape, device=device), np.ones(shape, np.float32), what="ones")
    check(Tensor.full(shape, 3.5, device=device), np.full(shape, 3.5, np.float32), what="full float")
    check(Tensor.full(shape, 7, device=device), np.full(shape, 7, np.int32), what="full int")
    check(Tensor.zeros(*shape, dtype=dtypes.int32, device=device), np.zeros(shape, np.int32), what="zeros int32")
  @given(shapes(), st.data())
  @FEW
  def test_like(self, device, shape, data):
    for arr in (data.draw(farr(shape)), data.draw(iarr(shape))):
      t = T(arr, device)
      check(Tensor.zeros_like(t), np.zeros_like(arr), what="zeros_like")
      check(Tensor.ones_like(t), np.ones_like(arr), what="ones_like")
      check(Tensor.full_like(t, 2), np.full_like(arr, 2), what="full_like")
  @given(st.integers(-6, 6), st.integers(-6, 6), st.integers(-3, 3).filter(lambda s: s != 0))
  @SOME
  def test_arange(self, device, start, stop, step):
    check(Tensor.arange(start, stop, step, device=device), np.arange(start, stop, step, dtype=np.int32), what=f"arange({start},{stop},{step})")
  def test_arange_forms(self, device):
    check(Tensor.arange(5, device=device), np.arange(5, dtype=np.int32), what="arange(5)")
    check(Tensor.arange(0.5, 3, 0.5, device=device), np.arange(0.5, 3, 0.5, dtype=np.float32), what="arange float")
    check(Tensor.arange(0, device=device), np.arange(0, dtype=np.int32), what="arange(0)")
  @given(F32, F32, st.integers(0, 9))
  @FEW
  def test_linspace(self, device, start, stop, n):
    check(Tensor.linspace(start, stop, n, device=device), np.linspace(start, stop, n, dtype=np.float32), rtol=1e-5, atol=1e-5,
          what=f"linspace({start},{stop},{n})")
  @given(st.integers(0, 5), st.integers(0, 5))
  @FEW
  def test_eye(self, device, n, m):
    check(Tensor.eye(n, device=device), np.eye(n, dtype=np.float32), what=f"eye({n})")
    check(Tensor.eye(n, m, device=device), np.eye(n, m, dtype=np.float32), what=f"eye({n},{m})")

class TestRandom:
  capability = "random numbers"
  def test_shape_dtype(self, device):
    Tensor.manual_seed(0)
    r, n = Tensor.rand(3, 4, device=device), Tensor.randn(2, 5, device=device)
    assert r.shape == (3, 4) and r.dtype == dtypes.float32 and n.shape == (2, 5) and n.dtype == dtypes.float32
    assert Tensor.rand(0, 3, device=device).numpy().shape == (0, 3)
  def test_rand_statistics(self, device):
    Tensor.manual_seed(1)
    x = Tensor.rand(4000, device=device).numpy()
    assert ((x >= 0) & (x < 1)).all()
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1/12/4000), x.mean()
    assert abs(x.var() - 1/12) < 0.01, x.var()
    hist = np.histogram(x, bins=10, range=(0, 1))[0]
    assert hist.min() > 4000/10 * 0.7, hist   # roughly uniform
  def test_randn_statistics(self, device):
    Tensor.manual_seed(2)
    x = Tensor.randn(4000, device=device).numpy()
    assert np.isfinite(x).all()
    assert abs(x.mean()) < 5 / math.sqrt(4000), x.mean()
    assert abs(x.std() - 1) < 0.05, x.std()
    assert 0.6 < (np.abs(x) < 1).mean() < 0.76   # 68% within one sigma
  def test_manual_seed_determinism(self, device):
    Tensor.manual_seed(42)
    a = Tensor.rand(64, device=device).numpy()
    Tensor.manual_seed(42)
    b = Tensor.rand(64, device=device).numpy()
    c = Tensor.rand(64, device=device).numpy()
    np.testing.assert_equal(a, b)
    assert not np.array_equal(b, c)
    Tensor.manual_seed(43)
    assert not np.array_equal(a, Tensor.rand(64, device=device).numpy())

# ================= elementwise =================
bshapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4)

FLOAT_BINARY = {"add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract), "mul": (lambda a, b: a * b, np.multiply),
                "div": (lambda a, b: a / b, np.divide), "maximum": (m("maximum"), np.maximum), "minimum": (m("minimum"), np.minimum)}
CMP = {"lt": (lambda a, b: a < b, np.less), "le": (lambda a, b: a <= b, np.less_equal), "gt": (lambda a, b: a > b, np.greater),
       "ge": (lambda a, b: a >= b, np.greater_equal), "eq": (lambda a, b: a == b, np.equal), "ne": (lambda a, b: a != b, np.not_equal)}
INT_BINARY = {"add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract), "mul": (lambda a, b: a * b, np.multiply),
              "floordiv": (lambda a, b: a // b, np.floor_divide), "mod": (lambda a, b: a % b, np.mod), "and": (lambda a, b: a & b, np.bitwise_and),
              "or": (lambda a, b: a | b, np.bitwise_or), "xor": (lambda a, b: a ^ b, np.bitwise_xor), "maximum": (m("maximum"), np.maximum),
              "minimum": (m("minimum"), np.minimum)}
BOOL_BINARY = {"and": (lambda a, b: a & b, np.logical_and), "or": (lambda a, b: a | b, np.logical_or), "xor": (lambda a, b: a ^ b, np.logical_xor),
               "eq": (lambda a, b: a == b, np.equal), "ne": (lambda a, b: a != b, np.not_equal)}

class TestBinary:
  capability = "elementwise binary ops"
  @pytest.mark.parametrize("name", list(FLOAT_BINARY) + list(CMP))
  @given(bshapes, st.data())
  @FEW
  def test_float32(self, device, name, shp, data):
    tf, nf = {**FLOAT_BINARY, **CMP}[name]
    a, b = data.draw(farr(shp.input_shapes[0])), data.draw(farr(shp.input_shapes[1]))
    if name == "div": b = np.where(np.abs(b) < 1e-3, np.float32(1), b)
    check(tf(T(a, device), T(b, device)), nf(a, b), what=f"float32 {name} {a.shape} {b.shape}")
  @pytest.mark.parametrize("name", list(INT_BINARY) + list(CMP))
  @given(bshapes, st.data())
  @FEW
  def test_int32(self, device, name, shp, data):
    tf, nf = {**INT_BINARY, **CMP}[name]
    a, b = data.draw(iarr(shp.input_shapes[0])), data.draw(iarr(shp.input_shapes[1]))
    if name in ("floordiv", "mod"): b = np.where(b == 0, np.int32(7), b)   # python/numpy semantics: floor division, sign of divisor
    check(tf(T(a, device), T(b, device)), nf(a, b), what=f"int32 {name} {a.tolist()} {b.tolist()}")
  @pytest.mark.parametrize("name", list(BOOL_BINARY))
  @given(bshapes, st.data())
  @FEW
  def test_bool(self, device, name, shp, data):
    tf, nf = BOOL_BINARY[name]
    a, b = data.draw(barr(shp.input_shapes[0])), data.draw(barr(shp.input_shapes[1]))
    check(tf(T(a, device), T(b, device)), nf(a, b), what=f"bool {name}")
  @given(shapes(), st.data(), F32)
  @FEW
  def test_python_scalars_both_sides(self, device, shape, data, s):
    a = data.draw(farr(shape))
    t = T(a, device)
    with np.errstate(all="ignore"):
      for got, want, what in [(t + s, a + np.float32(s), "t+s"), (s + t, np.float32(s) + a, "s+t"), (t - s, a - np.float32(s), "t-s"),
                              (s - t, np.float32(s) - a, "s-t"), (t * s, a * np.float32(s), "t*s"), (s * t, np.float32(s) * a, "s*t"),
                              (t < s, a < np.float32(s), "t<s"), (s < t, np.float32(s) < a, "s<t")]:
        check(got, want, what=what)
  def test_int_tensor_with_float_scalar_is_float(self, device):
    t = Tensor([1, 2, 3], device=device)
    check(t * 1.5, np.array([1.5, 3.0, 4.5], np.float32), what="int*float")
    check(t / 2, np.array([0.5, 1.0, 1.5], np.float32), what="int/int is true division")
    assert (t + 1).dtype == dtypes.int32
  def test_int_floordiv_mod_signs(self, device):
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    check(T(a, device) // T(b, device), a // b, what=f"{a} // {b}")
    check(T(a, device) % T(b, device), a % b, what=f"{a} % {b}")
  @pytest.mark.parametrize("dt", [np.int32, np.uint32, np.uint8, np.int64])
  def test_int_division_by_a_zero_element(self, device, dt):
    # a zero in a divisor tensor gives numpy's 0 for //, % and trunc division on every device (C leaves it undefined: x86
    # traps, the PYTHON device gave x for unsigned %); a constant 0 divisor raises on the host (torch's error)
    sup = Device[device].renderer.supported_dtypes
    if callable(sup): sup = sup()
    if sup is not None and getattr(dtypes, np.dtype(dt).name) not in sup: pytest.skip(f"{device} does not declare {np.dtype(dt).name}")
    a, b = np.array([7, 0, 5, 200], dt), np.array([0, 0, 2, 0], dt)
    with np.errstate(all="ignore"):
      check(T(a, device) // T(b, device), a // b, what=f"{a} // {b}")
      check(T(a, device) % T(b, device), a % b, what=f"{a} % {b}")
      check(T(a, device).div(T(b, device), rounding_mode="trunc"), a // b, what=f"{a} div trunc {b}")
    with pytest.raises(ZeroDivisionError): T(a, device) // 0
    with pytest.raises(RuntimeError): T(a, device) % Tensor.zeros(4, dtype=T(a, device).dtype, device=device)
  @given(shapes(), st.data())
  @FEW
  def test_pow_float(self, device, shape, data):
    a, b = data.draw(farr(shape, 0.1, 5)), data.draw(farr(shape, -3, 3))
    check(T(a, device) ** T(b, device), a.astype(np.float64) ** b, rtol=1e-5, what="pow")
    check(T(a, device) ** 2, a ** 2, rtol=1e-5, what="t**2")
    check(2 ** T(b, device), np.float32(2) ** b, rtol=1e-5, what="2**t")
  def test_pow_edges_are_c_pow(self, device):
    # C's pow (numpy's): (-inf)**y for a non-integer y is inf or 0, 1**nan and nan**0 are 1, 0**-y is inf
    a = np.array([-np.inf, -np.inf, -np.inf, 1.0, np.nan, 0.0, 0.0, np.inf, -2.0, -np.inf], np.float32)
    b = np.array([0.3, -0.7, 3.3, np.nan, 0.0, -0.5, 2.5, -2.5, 0.5, 3.0], np.float32)
    with np.errstate(all="ignore"): want, want03 = np.power(a, b), np.power(a, np.float32(0.3))   # (-2)**0.3 is nan, on purpose
    check(T(a, device) ** T(b, device), want, what=f"{a.tolist()} ** {b.tolist()}")
    check(T(a, device) ** 0.3, want03, what="x ** 0.3")
  def test_pow_negative_base_integer_exponent(self, device):
    a = np.array([-2, -1.5, 0, 3], np.float32)
    check(T(a, device) ** 3, a ** 3, what="(-x)**3")
    check(T(a, device) ** 2.0, a ** 2, what="(-x)**2.0")
    check(T(a, device) ** 0, np.ones_like(a), what="x**0")
  @given(shapes(), st.data())
  @FEW
  def test_pow_int(self, device, shape, data):
    a, b = data.draw(iarr(shape, -5, 5)), data.draw(iarr(shape, 0, 4))
    check(T(a, device) ** T(b, device), a ** b, what=f"int pow {a.tolist()} {b.tolist()}")

def _gelu(x): return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
def _sigmoid(x): return 1 / (1 + np.exp(-x))
UNARY = {  # name: (tinygrad, numpy in float64, lo, hi)
  "neg": (lambda t: -t, np.negative, -10, 10), "abs": (m("abs"), np.abs, -10, 10), "sign": (m("sign"), np.sign, -10, 10),
  "exp": (m("exp"), np.exp, -10, 10), "exp2": (m("exp2"), np.exp2, -10, 10), "log": (m("log"), np.log, 1e-3, 100),
  "log2": (m("log2"), np.log2, 1e-3, 100), "sqrt": (m("sqrt"), np.sqrt, 0, 100), "rsqrt": (m("rsqrt"), lambda x: 1 / np.sqrt(x), 1e-3, 100),
  "sin": (m("sin"), np.sin, -10, 10), "cos": (m("cos"), np.cos, -10, 10), "tan": (m("tan"), np.tan, -1.4, 1.4),
  "reciprocal": (m("reciprocal"), lambda x: 1 / x, 0.01, 10), "relu": (m("relu"), lambda x: np.maximum(x, 0), -10, 10),
  "sigmoid": (m("sigmoid"), _sigmoid, -10, 10), "tanh": (m("tanh"), np.tanh, -10, 10), "gelu": (m("gelu"), _gelu, -10, 10),
  "silu": (m("silu"), lambda x: x * _sigmoid(x), -10, 10), "softplus": (m("softplus"), lambda x: np.logaddexp(0, x), -10, 10),
  "trunc": (m("trunc"), np.trunc, -10, 10), "floor": (m("floor"), np.floor, -10, 10), "ceil": (m("ceil"), np.ceil, -10, 10),
  "round": (m("round"), np.round, -10, 10), "square": (m("square"), np.square, -10, 10)}

class TestUnary:
  capability = "elementwise unary ops"
  @pytest.mark.parametrize("name", list(UNARY))
  @given(shapes(), st.data())
  @FEW
  def test_float32(self, device, name, shape, data):
    tf, nf, lo, hi = UNARY[name]
    a = data.draw(farr(shape, lo, hi))
    if name == "reciprocal": a = a * data.draw(st.sampled_from([1, -1]))
    want = nf(a.astype(np.float64)).astype(np.float32)
    check(tf(T(a, device)), want, rtol=2e-5, atol=2e-6, what=f"{name}({a.tolist()})")
  def test_round_half_to_even(self, device):
    a = np.arange(-5, 5.5, 0.5, dtype=np.float32)
    check(T(a, device).round(), np.round(a), what=f"round({a.tolist()})")
  @pytest.mark.parametrize("name", ["neg", "abs", "sign", "relu"])
  @given(shapes(), st.data())
  @FEW
  def test_int32(self, device, name, shape, data):
    tf, nf, _, _ = UNARY[name]
    a = data.draw(iarr(shape))
    check(tf(T(a, device)), nf(a).astype(np.int32), what=f"int {name}")
  @given(shapes(), st.data())
  @FEW
  def test_invert(self, device, shape, data):
    a, b = data.draw(iarr(shape)), data.draw(barr(shape))
    check(~T(a, device), ~a, what="~int")
    check(~T(b, device), ~b, what="~bool")
    check(T(b, device).logical_not(), np.logical_not(b), what="logical_not")
  @given(shapes(), st.data())
  @FEW
  def test_isnan_isinf(self, device, shape, data):
    a = data.draw(hnp.arrays(np.float32, shape, elements=st.sampled_from([0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3e38, -1e-40])))
    check(T(a, device).isnan(), np.isnan(a), what=f"isnan({a.tolist()})")
    check(T(a, device).isinf(), np.isinf(a), what=f"isinf({a.tolist()})")
    check(T(a, device).isinf(detect_positive=False), np.isneginf(a), what="isinf(neg only)")
  def test_compares_with_nan_are_ieee(self, device):
    # NaN compares unequal to everything, itself included, and fails every ordered compare (naga's != was ordered)
    a, b = np.array([np.nan, np.nan, 1.0, np.nan, 2.0], np.float32), np.array([1.0, np.nan, np.nan, 0.0, 2.0], np.float32)
    with np.errstate(invalid="ignore"):
      for name, f in [("!=", lambda x, y: x != y), ("==", lambda x, y: x == y), ("<", lambda x, y: x < y), (">", lambda x, y: x > y)]:
        check(f(T(a, device), T(b, device)), f(a, b), what=f"{a.tolist()} {name} {b.tolist()}")
        check(f(T(a, device), 1.0), f(a, np.float32(1.0)), what=f"{a.tolist()} {name} 1.0")
  def test_inf_and_nan_times_zero_and_minus_themselves_are_nan(self, device):
    # IEEE: inf * 0, NaN * 0, inf - inf are NaN (WEBGPU's compiler folded x * 0 and x - x to 0, as if x were finite)
    a = np.array([np.inf, -np.inf, np.nan, 1.0, -2.0, 0.0], np.float32)
    x = T(a, device)
    with np.errstate(invalid="ignore"):
      check(x * 0, a * np.float32(0), what=f"{a.tolist()} * 0")
      check(x - x, a - a, what=f"x - x of {a.tolist()}")
      check(x.lerp(T(a[::-1].copy(), device), 1.0), a[::-1] - (a[::-1] - a) * np.float32(0), what="lerp(x, y, 1): y - (y - x) * 0")
  def test_signed_zeros_of_products_and_fmod(self, device):
    # -0.0 * +0.0 is -0.0 and fmod(-0.0, y) is -0.0 (C, torch); WEBGPU's x * 0 chose the zero by x < 0, false for -0.0
    a, b = np.array([-0.0, 0.0, -0.0, -0.0, -3.0, 3.0], np.float32), np.array([2.0, 2.0, -2.0, np.inf, 1.5, -1.5], np.float32)
    for what, got, want in [("x * 0.0", T(a, device) * 0.0, a * np.float32(0.0)), ("x * -0.0", T(a, device) * -0.0, a * np.float32(-0.0)),
                            ("fmod", T(a, device).fmod(T(b, device)), np.fmod(a, b))]:
      assert np.signbit(got.numpy()).tolist() == np.signbit(want).tolist(), f"{what} of {a.tolist()}: {got.tolist()}, want {want.tolist()}"
  def test_sign_keeps_nan(self, device):
    # docs/guide.md: sign(nan) is NaN, as numpy (WEBGPU's compiler folded the 0*NaN that carried it to 0: sign(nan) was 1)
    a = np.array([np.nan, -0.0, 0.0, 2.0, -np.inf, np.inf, -3.0], np.float32)
    check(T(a, device).sign(), np.sign(a), what=f"sign({a.tolist()})")
  def test_division_by_a_zero_constant_is_ieee(self, device):
    # x / +-0.0 is +-inf by x's sign, NaN for 0 and NaN (WEBGPU's shader compiler took the literal 0.0 divisor as undefined
    # and stored 0 or nothing; var(correction >= N) divides so, and folded (x - x) * inf, a variance over one element, to 0)
    a = np.array([1.0, -1.0, 0.0, 5.0, -0.5, np.nan, np.inf], np.float32)
    with np.errstate(all="ignore"):
      check(T(a, device) / 0.0, a / np.float32(0.0), what=f"{a.tolist()} / 0.0")
      check(T(a, device) / Tensor.full((7,), -0.0, device=device), a / np.float32(-0.0), what=f"{a.tolist()} / -0.0")
      check((T(a, device) + 1).exp() / 0, np.exp(a + 1) / np.float32(0.0), what=f"exp({a.tolist()} + 1) / 0")
      x = T(np.array([1.0, 2.0], np.float32), device)
      check((x - x) * math.inf, np.full(2, np.nan, np.float32), what="(x - x) * inf")
    assert T(np.array([3.0, 4.0], np.float32), device).var(correction=2).item() == math.inf
    assert np.isnan(T(np.array([[3.0], [4.0]], np.float32), device).var(1).numpy()).all(), "var over one element (torch: NaN)"
  @given(shapes(), st.data(), F32, F32)
  @FEW
  def test_clip(self, device, shape, data, lo, hi):
    lo, hi = min(lo, hi), max(lo, hi)
    a = data.draw(farr(shape))
    check(T(a, device).clip(lo, hi), np.clip(a, lo, hi), what=f"clip({lo},{hi})")
    ai = data.draw(iarr(shape))
    check(T(ai, device).clip(-5, 5), np.clip(ai, -5, 5), what="clip int")
  @given(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=4), st.data())
  @FEW
  def test_where(self, device, shp, data):
    c, x, y = data.draw(barr(shp.input_shapes[0])), data.draw(farr(shp.input_shapes[1])), data.draw(farr(shp.input_shapes[2]))
    check(T(c, device).where(T(x, device), T(y, device)), np.where(c, x, y), what="where")
    check(T(c, device).where(T(x, device), 0.5), np.where(c, x, np.float32(0.5)), what="where(t, scalar)")
    check(T(c, device).where(1, 2), np.where(c, 1, 2).astype(np.int32), what="where(int scalars)")
    xi = data.draw(iarr(shp.input_shapes[1]))
    check(T(c, device).where(T(xi, device), -1), np.where(c, xi, -1).astype(np.int32), what="where int")

# ---- transcendentals: ulp-level accuracy over all of float32, with special values exact ----
ALL_F32 = st.floats(width=32)   # includes nan, +-inf, subnormals, huge and tiny values
def _ulp_check(got: np.ndarray, want: np.ndarray, x: np.ndarray, max_ulp: float, atol: float = 0.0, what: str = ""):
  assert got.shape == want.shape and got.dtype == np.float32, (what, got.shape, got.dtype)
  bad = []
  for g, w, xi in zip(got.tolist(), want.tolist(), x.tolist()):
    if math.isnan(w) or math.isnan(g) or math.isinf(w) or math.isinf(g):
      if not (math.isnan(g) and math.isnan(w)) and g != w: bad.append((xi, g, w))
    elif abs(g - w) > max_ulp * float(np.spacing(np.abs(np.float32(w)))) + atol: bad.append((xi, g, w))
  assert not bad, f"{what}: (x, got, want) beyond {max_ulp} ulp: {bad[:5]}"

def _in_domain(device: str, name: str, x: np.ndarray) -> np.ndarray:
  """The inputs inside the accuracy domain the device's renderer declares for this function (Renderer.approx_domain);
  infinities and NaN stay: their results must still be exact."""
  from tinygrad.device import Device
  from tinygrad.uop import Ops
  bound = Device[device].renderer.approx_domain.get(Ops.SIN) if name in ("sin", "cos", "tan") else None
  return x if bound is None else x[~np.isfinite(x) | (np.abs(x) <= bound)]

TRANSCENDENTAL = {  # name: (tinygrad, numpy float64, max ulp, atol for results near 0)
  "exp": (m("exp"), np.exp, 2, 0), "exp2": (m("exp2"), np.exp2, 2, 0), "log": (m("log"), np.log, 2, 0),
  "log2": (m("log2"), np.log2, 2, 0), "sqrt": (m("sqrt"), np.sqrt, 1, 0), "sin": (m("sin"), np.sin, 4, 2e-7),
  "cos": (m("cos"), np.cos, 4, 2e-7), "reciprocal": (m("reciprocal"), lambda x: 1 / x, 1, 0)}

class TestTranscendental:
  capability = "transcendental accuracy"
  @pytest.mark.parametrize("name", list(TRANSCENDENTAL))
  @given(st.lists(ALL_F32, min_size=1, max_size=24))
  @SOME
  def test_accuracy_all_float32(self, device, name, xs):
    tf, nf, ulp, atol = TRANSCENDENTAL[name]
    x = _in_domain(device, name, np.array(xs, np.float32))
    assume(x.size > 0)
    with np.errstate(all="ignore"): want = nf(x.astype(np.float64)).astype(np.float32)
    _ulp_check(tf(T(x, device)).numpy(), want, x, ulp, atol, what=name)
  @pytest.mark.parametrize("name", list(TRANSCENDENTAL))
  def test_special_values_exact(self, device, name):
    tf, nf, _, _ = TRANSCENDENTAL[name]
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 3.4e38, -3.4e38, 100.0, -100.0, 89.0, -104.0], np.float32)
    x = _in_domain(device, name, x)
    with np.errstate(all="ignore"): want = nf(x.astype(np.float64)).astype(np.float32)
    got = tf(T(x, device)).numpy()
    _ulp_check(got, want, x, 4, 2e-7, what=name)
    assert (np.isnan(got) == np.isnan(want)).all(), (name, x[np.isnan(got) != np.isnan(want)])
  @pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin"])
  def test_tiny_and_subnormal(self, device, name):
    tf, nf, ulp, atol = TRANSCENDENTAL[name]
    x = np.array([1e-38, 1.17549435e-38, 1e-40, 1e-45, 2e-30, 1e-10], np.float32)
    with np.errstate(all="ignore"): want = nf(x.astype(np.float64)).astype(np.float32)
    _ulp_check(tf(T(x, device)).numpy(), want, x, ulp, atol, what=f"{name} tiny")

# ================= activations at the edges =================
_EDGE_X = [-300.0, 300.0, -math.inf, math.inf, math.nan, 0.0]
_S2PI = 2 / math.sqrt(math.pi)
EDGES = {  # name: (forward at _EDGE_X, gradient at _EDGE_X; None: not checked), the limits torch gives
  "sigmoid": ([0, 1, 0, 1, math.nan, 0.5], [0, 0, 0, 0, None, 0.25]), "tanh": ([-1, 1, -1, 1, math.nan, 0], [0, 0, 0, 0, None, 1]),
  "relu": ([0, 300, 0, math.inf, math.nan, 0], [0, 1, 0, 1, None, 0]), "relu6": ([0, 6, 0, 6, math.nan, 0], [0, 0, 0, 0, None, 0]),
  "hardsigmoid": ([0, 1, 0, 1, math.nan, 0.5], [0, 0, 0, 0, None, 1/6]), "hardtanh": ([-1, 1, -1, 1, math.nan, 0], [0, 0, 0, 0, None, 1]),
  "elu": ([-1, 300, -1, math.inf, math.nan, 0], [0, 1, 0, 1, None, 1]), "erf": ([-1, 1, -1, 1, math.nan, 0], [0, 0, 0, 0, None, _S2PI]),
  "softplus": ([0, 300, 0, math.inf, math.nan, math.log(2)], [0, 1, 0, 1, None, 0.5]),
  "silu": ([0, 300, math.nan, math.inf, math.nan, 0], [0, 1, None, None, None, 0.5]),
  "gelu": ([0, 300, math.nan, math.inf, math.nan, 0], [0, 1, None, None, None, 0.5]),
  "hardswish": ([0, 300, 0, math.inf, math.nan, 0], [0, 1, 0, 1, None, 0.5]),
}

class TestActivations:
  capability = "activations at the edges"
  @pytest.mark.parametrize("name", list(EDGES))
  def test_edges_forward_and_gradient(self, device, name):
    # +-300 overflow e**x inside, +-inf and NaN: the limit (NaN stays NaN) and a gradient without inf*0 NaNs
    want, wgrad = EDGES[name]
    x = Tensor(_EDGE_X, device=device, requires_grad=True)
    y = getattr(x, name)()
    g = y.sum().gradient(x)[0]
    check(y, np.array(want, np.float32), rtol=1e-5, atol=1e-6, what=f"{name}({_EDGE_X})")
    keep = [i for i, w in enumerate(wgrad) if w is not None]
    check(g[keep] if len(keep) < len(wgrad) else g, np.array([wgrad[i] for i in keep], np.float32), rtol=1e-4, atol=1e-6, what=f"d{name}")

# ================= reductions =================
REDUCE = {"sum": (m("sum"), np.sum), "prod": (m("prod"), np.prod), "max": (m("max"), np.max), "min": (m("min"), np.min),
          "mean": (m("mean"), np.mean), "any": (m("any"), np.any), "all": (m("all"), np.all)}

def _reduced_count(shape, axis) -> int:
  if axis is None: return int(np.prod(shape))
  axes = (axis,) if isinstance(axis, int) else axis
  return int(np.prod([shape[a] for a in axes]))

class TestReduce:
  capability = "reductions"
  @pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
  @given(shape_and_axis(), st.booleans(), st.data())
  @FEW
  def test_float32(self, device, name, sa, keepdim, data):
    (shape, axis), (tf, nf) = sa, REDUCE[name]
    if name in ("max", "min", "mean"): assume(_reduced_count(shape, axis) > 0 and 0 not in shape)
    a = data.draw(farr(shape, -2, 2) if name == "prod" else farr(shape))
    check(tf(T(a, device), axis=axis, keepdim=keepdim), nf(a.astype(np.float64), axis=axis, keepdims=keepdim).astype(np.float32),
          rtol=1e-5, atol=1e-5, what=f"{name}(axis={axis}, keepdim={keepdim}) of {shape}")
  def test_sum_of_negative_zeros_is_positive_zero(self, device):
    # a float sum starts from +0.0, so it is never -0.0 (torch's 0.0; numpy's reduce starts from the first element: -0.0).
    # WEBGPU's shader compiler folded the 0.0 + x of the first step to x: the sum of [-0.0] * 3 was -0.0
    x = Tensor([[-0.0] * 3] * 2, device=device)
    sums = [("sum", x.sum()), ("sum(axis=1)", x.sum(1)), ("mean", x.mean()), ("cumsum", x.cumsum(1))]
    if dtypes.float16 in Device[device].renderer.supported_dtypes: sums.append(("half sum", x.half().sum()))
    for what, got in sums:
      assert not np.signbit(got.numpy()).any(), f"{what} of -0.0s: {got.tolist()}, torch 0.0"
  @pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
  @given(shape_and_axis(), st.booleans(), st.data())
  @FEW
  def test_int32(self, device, name, sa, keepdim, data):
    (shape, axis), (tf, nf) = sa, REDUCE[name]
    if name in ("max", "min"): assume(_reduced_count(shape, axis) > 0 and 0 not in shape)
    a = data.draw(iarr(shape, -3, 3) if name == "prod" else iarr(shape))
    # sums and products accumulate in int64 (torch's), in int32 on a device without int64 (wrapping, as numpy's with dtype=int32)
    sup = Device[device].renderer.supported_dtypes
    if callable(sup): sup = sup()
    kw = {"dtype": np.int64 if sup is None or dtypes.int64 in sup else np.int32} if name in ("sum", "prod") else {}
    check(tf(T(a, device), axis=axis, keepdim=keepdim), nf(a, axis=axis, keepdims=keepdim, **kw), what=f"int {name}(axis={axis}) of {a.tolist()}")
  @pytest.mark.parametrize("name", ["any", "all", "sum", "max"])
  @given(shape_and_axis(), st.booleans(), st.data())
  @FEW
  def test_bool(self, device, name, sa, keepdim, data):
    (shape, axis), (tf, nf) = sa, REDUCE[name]
    if name == "max": assume(_reduced_count(shape, axis) > 0 and 0 not in shape)
    a = data.draw(barr(shape))
    check(tf(T(a, device), axis=axis, keepdim=keepdim), nf(a, axis=axis, keepdims=keepdim), what=f"bool {name}(axis={axis}) of {a.tolist()}")
  def test_mean_of_int_is_float(self, device):
    check(Tensor([1, 2, 4], device=device).mean(), np.float32(7/3), what="int mean")
  def test_int_accumulation_is_wide(self, device):
    # ints and bools sum, cumsum and prod in int64, as torch (int32 [2**30]*4 summed to 0); a device without int64 (its
    # renderer's supported_dtypes) uses int32/uint32
    sup = Device[device].renderer.supported_dtypes
    if callable(sup): sup = sup()
    wide, v = sup is None or dtypes.int64 in sup, 2**30 if sup is None or dtypes.int64 in sup else 2**28
    a = np.array([v] * 4, np.int32)
    x, acc = T(a, device), np.int64 if wide else np.int32
    assert x.sum().dtype == (dtypes.int64 if wide else dtypes.int32) and Tensor([True], device=device).sum().dtype == x.sum().dtype
    check(x.sum(), acc(4 * v), what="int32 sum")
    check(x.cumsum(0), np.cumsum(a.astype(acc)), what="int32 cumsum")
    check(x[:2].prod(), acc(v) * acc(v) if wide else np.int32(0), what="int32 prod")
    check(x.mean(), np.float32(v), what="int32 mean")
    check(T(np.full(300, 255, np.uint8), device).sum(), acc(300 * 255), what="uint8 sum")
  def test_empty(self, device):
    check(Tensor.ones(0, 3, device=device).sum(), np.float32(0), what="sum of empty")
    check(Tensor.ones(0, 3, device=device).sum(axis=0), np.zeros(3, np.float32), what="sum over empty axis")
    check(Tensor.ones(0, 3, device=device).prod(axis=0), np.ones(3, np.float32), what="prod over empty axis")
    check(Tensor.ones(3, 0, device=device).sum(axis=0), np.zeros(0, np.float32), what="empty result")
  @pytest.mark.parametrize("name", ["var", "std"])
  @given(shape_and_axis(), st.booleans(), st.data())
  @FEW
  def test_var_std(self, device, name, sa, keepdim, data):
    shape, axis = sa
    assume(_reduced_count(shape, axis) > 1 and 0 not in shape)
    a = data.draw(farr(shape))
    want = getattr(np, name)(a.astype(np.float64), axis=axis, keepdims=keepdim, ddof=1).astype(np.float32)
    check(getattr(T(a, device), name)(axis=axis, keepdim=keepdim), want, rtol=1e-4, atol=1e-5, what=f"{name}(axis={axis}) of {shape}")
    want0 = getattr(np, name)(a.astype(np.float64), axis=axis, keepdims=keepdim, ddof=0).astype(np.float32)
    check(getattr(T(a, device), name)(axis=axis, keepdim=keepdim, correction=0), want0, rtol=1e-4, atol=1e-5, what=f"{name} correction=0")
  @pytest.mark.parametrize("name", ["argmax", "argmin"])
  @given(shape_and_axis(allow_tuple=False), st.booleans(), st.data())
  @SOME
  def test_argmax_argmin_first_of_ties(self, device, name, sa, keepdim, data):
    shape, axis = sa
    assume(_reduced_count(shape, axis) > 0 and 0 not in shape)
    a = data.draw(farr(shape, -3, 3)).round()   # few distinct values: ties
    want = getattr(np, name)(a, axis=axis, keepdims=keepdim if axis is not None else False)
    got = getattr(T(a, device), name)(axis=axis, keepdim=keepdim) if axis is not None else getattr(T(a, device), name)()
    check(got, want.astype(np.int32), what=f"{name}(axis={axis}, keepdim={keepdim}) of {a.tolist()}")
  def test_max_with_nan_and_inf(self, device):
    a = np.array([[1, np.inf, -np.inf], [np.nan, 0, 2]], np.float32)
    check(T(a, device).max(axis=1), np.max(a, axis=1), what="max with inf/nan")
    # the gradient: NaN over a row whose max is NaN (torch's), split among ties elsewhere (WEBGPU gave 0 for the NaN row)
    x = Tensor(np.array([[1, np.nan, 3], [2, 2, 1]], np.float32), device=device, requires_grad=True)
    check(x.max(axis=1).sum().gradient(x)[0], np.array([[np.nan] * 3, [0.5, 0.5, 0]], np.float32), what="d max with nan")

# ================= movement =================
class TestMovement:
  capability = "movement ops"
  @given(shapes(1, 4), st.data())
  @SOME
  def test_reshape_with_minus_one(self, device, shape, data):
    a = data.draw(iarr(shape))
    cut = data.draw(st.integers(0, len(shape)))
    new = (int(np.prod(shape[:cut])), int(np.prod(shape[cut:])))
    check(T(a, device).reshape(new), a.reshape(new), what=f"reshape {shape}->{new}")
    if a.size:
      i = data.draw(st.integers(0, 1))
      neg = tuple(-1 if j == i else s for j, s in enumerate(new))
      check(T(a, device).reshape(neg), a.reshape(neg), what=f"reshape {shape}->{neg}")
      check(T(a, device).reshape(-1), a.reshape(-1), what="reshape(-1)")
    check(T(a, device).reshape(*new), a.reshape(new), what="reshape(*shape)")
  @given(shapes(1, 4), st.data())
  @SOME
  def test_permute_transpose(self, device, shape, data):
    a = data.draw(iarr(shape))
    n = len(shape)
    order = data.draw(st.permutations(range(n)))
    check(T(a, device).permute(order), a.transpose(order), what=f"permute {order}")
    check(T(a, device).permute(*[o - n for o in order]), a.transpose(order), what="permute negative axes")
    d0, d1 = data.draw(st.integers(-n, n-1)), data.draw(st.integers(-n, n-1))
    check(T(a, device).transpose(d0, d1), np.swapaxes(a, d0, d1), what=f"transpose({d0},{d1})")
    if n == 2: check(T(a, device).T, a.T, what=".T")
  @given(shapes(0, 3, max_side=3), st.data())
  @SOME
  def test_expand(self, device, shape, data):
    a = data.draw(iarr(tuple(1 if data.draw(st.booleans()) else s for s in shape)))
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(s if a.shape[i] == 1 else a.shape[i] for i, s in enumerate(shape))
    check(T(a, device).expand(target), np.broadcast_to(a, target), what=f"expand {a.shape}->{target}")
    keep = tuple(lead) + tuple(-1 for _ in a.shape)
    check(T(a, device).expand(keep), np.broadcast_to(a, tuple(lead) + a.shape), what=f"expand {keep}")
  @given(shapes(1, 4), st.data())
  @SOME
  def test_flatten_unflatten(self, device, shape, data):
    a = data.draw(iarr(shape))
    n = len(shape)
    s = data.draw(st.integers(-n, n-1))
    e = data.draw(st.integers(s % n, n-1))
    want = a.reshape(a.shape[:s % n] + (-1 if a.size else int(np.prod(a.shape[s % n:e+1])),) + a.shape[e+1:])
    check(T(a, device).flatten(s, e), want, what=f"flatten({s},{e}) of {shape}")
    check(T(a, device).flatten(), a.reshape(-1), what="flatten()")
    d = data.draw(st.integers(-n, n-1))
    size = shape[d]
    f = data.draw(st.sampled_from([x for x in range(1, size+1) if size % x == 0] or [1]))
    if size: check(T(a, device).unflatten(d, (f, size // f)), a.reshape(a.shape[:d % n] + (f, size // f) + a.shape[d % n + 1:]),
                   what=f"unflatten({d}, {(f, size // f)})")
  @given(shapes(0, 4, max_side=3), st.data())
  @SOME
  def test_squeeze_unsqueeze(self, device, shape, data):
    a = data.draw(iarr(shape))
    n = len(shape)
    check(T(a, device).squeeze(), np.squeeze(a), what="squeeze()")
    if n:
      d = data.draw(st.integers(-n, n-1))
      check(T(a, device).squeeze(d), np.squeeze(a, d) if shape[d] == 1 else a, what=f"squeeze({d}) of {shape}")
    u = data.draw(st.integers(-n-1, n))
    check(T(a, device).unsqueeze(u), np.expand_dims(a, u), what=f"unsqueeze({u})")
  @given(shapes(1, 3), st.data(), F32)
  @SOME
  def test_pad_with_value(self, device, shape, data, value):
    a = data.draw(farr(shape))
    pads = tuple((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in shape)
    check(T(a, device).pad(pads), np.pad(a, pads), what=f"pad {pads}")
    check(T(a, device).pad(pads, value=value), np.pad(a, pads, constant_values=value), what=f"pad {pads} value={value}")
    ai = data.draw(iarr(shape))
    check(T(ai, device).pad(pads, value=-3), np.pad(ai, pads, constant_values=-3), what="pad int")
  @given(shapes(1, 3), st.data())
  @SOME
  def test_shrink(self, device, shape, data):
    a = data.draw(iarr(shape))
    arg = []
    for s in shape:
      b = data.draw(st.integers(0, s))
      arg.append((b, data.draw(st.integers(b, s))))
    check(T(a, device).shrink(tuple(arg)), a[tuple(slice(b, e) for b, e in arg)], what=f"shrink {arg}")
  @given(shapes(1, 3), st.data())
  @SOME
  def test_flip(self, device, shape, data):
    a = data.draw(iarr(shape))
    n = len(shape)
    axes = tuple(data.draw(st.lists(st.integers(-n, n-1), unique_by=lambda x: x % n, min_size=1, max_size=n)))
    check(T(a, device).flip(axes), np.flip(a, axes), what=f"flip {axes}")
    check(T(a, device).flip(axes[0]), np.flip(a, axes[0]), what=f"flip {axes[0]}")
  @given(shapes(1, 3, max_side=3), st.data())
  @SOME
  def test_repeat(self, device, shape, data):
    a = data.draw(iarr(shape))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape)+1)))
    check(T(a, device).repeat(reps), np.tile(a, reps), what=f"repeat {reps}")
  @given(shapes(1, 3), st.data())
  @SOME
  def test_cat_stack(self, device, shape, data):
    n = len(shape)
    d = data.draw(st.integers(-n, n-1))
    arrs = [data.draw(farr(shape[:d % n] + (data.draw(st.integers(0, 3)),) + shape[d % n + 1:])) for _ in range(data.draw(st.integers(1, 3)))]
    ts = [T(x, device) for x in arrs]
    check(ts[0].cat(*ts[1:], dim=d), np.concatenate(arrs, axis=d), what=f"cat dim={d}")
    same = [data.draw(farr(shape)) for _ in range(len(arrs))]
    s = data.draw(st.integers(-n-1, n))
    check(Tensor.stack(*[T(x, device) for x in same], dim=s), np.stack(same, axis=s), what=f"stack dim={s}")
  @given(shapes(1, 3), st.data())
  @SOME
  def test_split_chunk(self, device, shape, data):
    a = data.draw(iarr(shape))
    n = len(shape)
    d = data.draw(st.integers(-n, n-1))
    size = shape[d]
    assume(size > 0)
    k = data.draw(st.integers(1, size))
    got = T(a, device).split(k, d)
    want = np.split(a, list(range(k, size, k)), axis=d)
    assert len(got) == len(want), f"split({k}) gave {len(got)} parts, want {len(want)}"
    for g, w in zip(got, want): check(g, w, what=f"split({k}, dim={d}) of {shape}")
    sizes = []
    left = size
    while left:
      sizes.append(data.draw(st.integers(1, left)))
      left -= sizes[-1]
    got = T(a, device).split(sizes, d)
    for g, w in zip(got, np.split(a, np.cumsum(sizes)[:-1].tolist(), axis=d)): check(g, w, what=f"split({sizes})")
    c = data.draw(st.integers(1, size))
    step = -(-size // c)
    got = T(a, device).chunk(c, d)
    want = np.split(a, list(range(step, size, step)), axis=d)
    assert len(got) == len(want), f"chunk({c}) of {size} gave {len(got)} parts, want {len(want)}"
    for g, w in zip(got, want): check(g, w, what=f"chunk({c}, dim={d})")

@st.composite
def basic_index(draw, shape):
  idx: list = []
  dims = list(shape)
  use_ellipsis = draw(st.booleans()) and len(dims) > 1
  n_explicit = draw(st.integers(0, len(dims))) if not use_ellipsis else draw(st.integers(0, len(dims) - 1))
  for s in dims[:n_explicit]:
    if draw(st.booleans()) and draw(st.booleans()): idx.append(None)
    kind = draw(st.sampled_from(["int", "slice"] if s > 0 else ["slice"]))
    if kind == "int": idx.append(draw(st.integers(-s, s-1)))
    else:
      bound = st.none() | st.integers(-s-2, s+2)
      idx.append(slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))))
  if use_ellipsis:
    idx.insert(draw(st.integers(0, len(idx))), Ellipsis)
  if draw(st.booleans()): idx.append(None)
  return tuple(idx)

class TestGetitem:
  capability = "indexing"
  @given(shapes(1, 3), st.data())
  @examples(40)
  def test_basic_indexing(self, device, shape, data):
    a = data.draw(iarr(shape))
    idx = data.draw(basic_index(shape))
    try: want = a[idx]
    except IndexError:
      with pytest.raises(IndexError): T(a, device)[idx]   # numpy rejects it: so must we
      return
    check(T(a, device)[idx], want, what=f"{shape}[{idx}]")
  def test_examples(self, device):
    a = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    t = T(a, device)
    for idx in [(0,), (-1,), (slice(None, None, -1),), (1, slice(1, 3)), (Ellipsis, 2), (None, 0, Ellipsis, None), (slice(None, None, 2), -2, slice(4, 0, -2)),
                (Ellipsis,), (2, 3, 4), (-3, -4, -5)]:
      check(t[idx], a[idx], what=f"[{idx}]")
    assert t[2, 3, 4].item() == 59
  @given(shapes(1, 3), st.data())
  @SOME
  def test_tensor_and_list_index(self, device, shape, data):
    assume(shape[0] > 0)
    a = data.draw(iarr(shape))
    ind = data.draw(hnp.arrays(np.int32, data.draw(shapes(1, 2, min_side=1, max_side=3)), elements=st.integers(-shape[0], shape[0]-1)))
    check(T(a, device)[Tensor(ind, device=device)], a[ind], what=f"{shape}[Tensor {ind.tolist()}]")
    lst = ind.reshape(-1).tolist()
    check(T(a, device)[lst], a[lst], what=f"{shape}[{lst}]")
    if len(shape) > 1 and shape[1] > 0:
      check(T(a, device)[:, lst[0] % shape[1]], a[:, lst[0] % shape[1]], what="[:, int]")
      j = [x % shape[1] for x in lst]
      check(T(a, device)[:, j], a[:, j], what=f"[:, {j}]")
  def test_out_of_range_int_is_an_error(self, device):
    with pytest.raises(IndexError): Tensor([1, 2, 3], device=device)[3]
    with pytest.raises(IndexError): Tensor([1, 2, 3], device=device)[-4]

# ================= matmul / nn-ish ops =================
class TestMatmul:
  capability = "matmul"
  @given(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.lists(st.integers(1, 3), max_size=2), st.data())
  @FEW
  def test_matmul_batched_broadcast(self, device, n, k, m, batch, data):
    bshape = tuple(batch)
    a_b = tuple(1 if data.draw(st.booleans()) else s for s in bshape)
    a, b = data.draw(farr(a_b + (n, k), -3, 3)), data.draw(farr(bshape + (k, m), -3, 3))
    check(T(a, device) @ T(b, device), a @ b, rtol=1e-5, atol=1e-5, what=f"{a.shape} @ {b.shape}")
    check(T(a, device).matmul(T(b, device)), a @ b, rtol=1e-5, atol=1e-5, what="matmul")
    check(T(b, device).transpose(-1, -2) @ T(a, device).transpose(-1, -2), np.swapaxes(b, -1, -2) @ np.swapaxes(a, -1, -2), rtol=1e-5, atol=1e-5,
          what="transposed")
  @given(st.integers(1, 5), st.integers(1, 5), st.data())
  @FEW
  def test_vector_forms(self, device, k, m, data):
    v, M, w = data.draw(farr((k,), -3, 3)), data.draw(farr((k, m), -3, 3)), data.draw(farr((k,), -3, 3))
    check(T(v, device) @ T(M, device), v @ M, rtol=1e-5, atol=1e-5, what="1d @ 2d")
    check(T(M.T.copy(), device) @ T(v, device), M.T @ v, rtol=1e-5, atol=1e-5, what="2d @ 1d")
    check(T(v, device).dot(T(w, device)), np.dot(v, w), rtol=1e-5, atol=1e-5, what="dot 1d")
    check(T(v, device) @ T(w, device), v @ w, rtol=1e-5, atol=1e-5, what="1d @ 1d")
  def test_int_matmul(self, device):
    a, b = np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    check(T(a, device) @ T(b, device), a @ b, what="int matmul")

def _np_softmax(x, axis):
  e = np.exp(x - x.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)

class TestNN:
  capability = "nn ops (softmax, cumsum, one_hot)"
  @given(shapes(1, 3, min_side=1), st.data())
  @FEW
  def test_softmax_log_softmax_logsumexp(self, device, shape, data):
    a = data.draw(farr(shape, -20, 20)).astype(np.float64)
    ax = data.draw(st.integers(-len(shape), len(shape)-1))
    t = T(a.astype(np.float32), device)
    check(t.softmax(ax), _np_softmax(a, ax).astype(np.float32), rtol=1e-5, atol=1e-6, what=f"softmax({ax})")
    check(t.log_softmax(ax), (a - a.max(ax, keepdims=True) - np.log(np.exp(a - a.max(ax, keepdims=True)).sum(ax, keepdims=True))).astype(np.float32),
          rtol=1e-5, atol=1e-5, what=f"log_softmax({ax})")
    lse = np.log(np.exp(a - a.max(ax, keepdims=True)).sum(ax, keepdims=True)) + a.max(ax, keepdims=True)
    check(t.logsumexp(ax), lse.squeeze(ax).astype(np.float32), rtol=1e-5, atol=1e-5, what=f"logsumexp({ax})")
    check(t.logsumexp(ax, keepdim=True), lse.astype(np.float32), rtol=1e-5, atol=1e-5, what="logsumexp keepdim")
  def test_softmax_large_values_do_not_overflow(self, device):
    a = np.array([1000.0, 1000.0, -1000.0], np.float32)
    check(T(a, device).softmax(), np.array([0.5, 0.5, 0.0], np.float32), what="softmax large")
    check(T(a, device).logsumexp(0), np.float32(1000 + math.log(2)), what="logsumexp large")
  @given(shapes(1, 3), st.data())
  @FEW
  def test_cumsum(self, device, shape, data):
    ax = data.draw(st.integers(-len(shape), len(shape)-1))
    a = data.draw(farr(shape))
    check(T(a, device).cumsum(ax), np.cumsum(a.astype(np.float64), axis=ax).astype(np.float32), rtol=1e-5, atol=1e-5, what=f"cumsum({ax}) {shape}")
    ai = data.draw(iarr(shape))
    check(T(ai, device).cumsum(ax), np.cumsum(ai, axis=ax).astype(np.int32), what="cumsum int")
  @given(shapes(0, 2), st.integers(1, 6), st.data())
  @FEW
  def test_one_hot(self, device, shape, n, data):
    a = data.draw(iarr(shape, 0, n-1))
    check(T(a, device).one_hot(n), np.eye(n, dtype=np.int32)[a], what=f"one_hot({n})")

def np_conv2d(x, w, b, stride, padding, dilation, groups):
  (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
  N, C, H, W = x.shape
  O, Cg, KH, KW = w.shape
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
  OH, OW = (H + 2*ph - dh*(KH-1) - 1) // sh + 1, (W + 2*pw - dw*(KW-1) - 1) // sw + 1
  out = np.zeros((N, O, OH, OW))
  og = O // groups
  for oc in range(O):
    g = oc // og
    for i in range(OH):
      for j in range(OW):
        patch = xp[:, g*Cg:(g+1)*Cg, i*sh:i*sh + dh*(KH-1) + 1:dh, j*sw:j*sw + dw*(KW-1) + 1:dw]
        out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
  if b is not None: out += b.reshape(1, -1, 1, 1)
  return out.astype(np.float32)

class TestConvPool:
  capability = "conv and pooling"
  @given(st.integers(1, 2), st.integers(1, 2), st.integers(1, 3), st.integers(1, 2), st.integers(1, 3), st.integers(1, 2),
         st.tuples(st.integers(1, 2), st.integers(1, 2)), st.tuples(st.integers(0, 1), st.integers(0, 2)), st.tuples(st.integers(1, 2), st.integers(1, 2)),
         st.booleans(), st.data())
  @FEW
  def test_conv2d(self, device, n, groups, cg, og, kh, kw, stride, padding, dilation, bias, data):
    C, O = groups * cg, groups * og
    H = data.draw(st.integers(dilation[0]*(kh-1) + 1 - 2*padding[0] if dilation[0]*(kh-1) + 1 - 2*padding[0] > 0 else 1, 6))
    W = data.draw(st.integers(max(1, dilation[1]*(kw-1) + 1 - 2*padding[1]), 6))
    x, w = data.draw(farr((n, C, H, W), -2, 2)), data.draw(farr((O, cg, kh, kw), -2, 2))
    b = data.draw(farr((O,), -2, 2)) if bias else None
    want = np_conv2d(x, w, b, stride, padding, dilation, groups)
    got = T(x, device).conv2d(T(w, device), T(b, device) if b is not None else None, groups=groups, stride=stride, dilation=dilation, padding=padding)
    check(got, want, rtol=1e-5, atol=1e-5, what=f"conv2d x{x.shape} w{w.shape} stride={stride} pad={padding} dil={dilation} groups={groups}")
  def test_conv2d_int_args(self, device):
    x, w = np.arange(2*2*5*5, dtype=np.float32).reshape(2, 2, 5, 5) / 10, np.linspace(-1, 1, 3*2*3*3, dtype=np.float32).reshape(3, 2, 3, 3)
    check(T(x, device).conv2d(T(w, device), stride=2, padding=1), np_conv2d(x, w, None, (2, 2), (1, 1), (1, 1), 1), rtol=1e-5, atol=1e-5,
          what="conv2d stride=2 padding=1")
  @given(st.integers(1, 2), st.integers(1, 2), st.integers(1, 6), st.integers(1, 6), st.tuples(st.integers(1, 3), st.integers(1, 3)),
         st.none() | st.tuples(st.integers(1, 3), st.integers(1, 3)), st.data())
  @FEW
  def test_pools(self, device, n, c, h, w, k, stride, data):
    assume(k[0] <= h and k[1] <= w)
    s = stride if stride is not None else k
    x = data.draw(farr((n, c, h, w)))
    oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    win = np.stack([np.stack([x[:, :, i*s[0]:i*s[0]+k[0], j*s[1]:j*s[1]+k[1]] for j in range(ow)], axis=2) for i in range(oh)], axis=2)
    check(T(x, device).max_pool2d(kernel_size=k, stride=stride), win.max(axis=(-1, -2)), what=f"max_pool2d k={k} s={stride} on {x.shape}")
    check(T(x, device).avg_pool2d(kernel_size=k, stride=stride), win.astype(np.float64).mean(axis=(-1, -2)).astype(np.float32), rtol=1e-5, atol=1e-6,
          what=f"avg_pool2d k={k} s={stride}")
  def test_max_pool_with_padding(self, device):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) - 8
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    want = np.array([[xp[0, 0, i*2:i*2+2, j*2:j*2+2].max() for j in range(3)] for i in range(3)], np.float32).reshape(1, 1, 3, 3)
    check(T(x, device).max_pool2d(kernel_size=2, stride=2, padding=1), want, what="max_pool2d padding=1 pads with -inf")
