"""DType: the promotion lattice (against numpy where tinygrad agrees), vector/pointer dtypes, numpy conversion, as_const."""
import itertools, math, pickle
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.dtype import dtypes, DType, PtrDType, AddrSpace, least_upper_dtype, least_upper_float, sum_acc_dtype, from_numpy, to_numpy, \
  to_dtype, truncate_float, float_to_bf16_bits, bf16_to_float

NP_DTYPES = [d for d in dtypes.all if d != dtypes.bfloat16 and d not in dtypes.fp8s]   # (numpy has neither)

def np_promote(a: DType, b: DType) -> DType: return from_numpy(np.promote_types(to_numpy(a), to_numpy(b)))

class TestPromotionLattice:
  @pytest.mark.parametrize("a,b,want", [
    (dtypes.bool, dtypes.bool, dtypes.bool), (dtypes.int8, dtypes.uint8, dtypes.int16), (dtypes.int16, dtypes.uint16, dtypes.int32),
    (dtypes.int32, dtypes.uint32, dtypes.int64), (dtypes.int32, dtypes.int64, dtypes.int64), (dtypes.bool, dtypes.int32, dtypes.int32),
    (dtypes.uint8, dtypes.float32, dtypes.float32), (dtypes.float16, dtypes.float32, dtypes.float32), (dtypes.float32, dtypes.float64, dtypes.float64),
    (dtypes.int32, dtypes.float32, dtypes.float32), (dtypes.bool, dtypes.float16, dtypes.float16)])
  def test_common_pairs(self, a, b, want):
    assert least_upper_dtype(a, b) == want
    assert least_upper_dtype(b, a) == want

  # tinygrad's lattice, where it differs from numpy on purpose
  def test_uint64_with_a_signed_int_is_the_default_float(self):
    # public tinygrad (0.14 and since): uint64 with a signed int joins at its weak float, the default float (numpy: float64;
    # torch refuses). uint64 made int64(-5) + uint64(3) 2**64-2; float16 made 10**12 inf
    for i in dtypes.sints: assert least_upper_dtype(i, dtypes.uint64) == dtypes.float32, i
    assert least_upper_dtype(dtypes.int64, dtypes.uint64, dtypes.float16) == dtypes.float16   # the weak float is below float16
    assert least_upper_dtype(dtypes.uint32, dtypes.uint64) == dtypes.uint64 and np_promote(dtypes.int64, dtypes.uint64) == dtypes.float64
    from tinygrad import Tensor
    for dev in ("PYTHON", "CPU"):
      t = Tensor([-5, 10**6], dtype=dtypes.int64, device=dev) + Tensor([3, 1], dtype=dtypes.uint64, device=dev)
      assert t.dtype == dtypes.float32 and t.tolist() == [-2.0, 1000001.0]
      # comparisons stay exact (no float): a negative value is below every uint64
      u, i = Tensor([2**64 - 1, 5, 0], dtype=dtypes.uint64, device=dev), Tensor([-1, 5, 2**63 - 1], dtype=dtypes.int64, device=dev)
      assert (u > i).tolist() == [True, False, False] and (u == i).tolist() == [False, True, False] and (i <= u).tolist() == [True, True, False]
      assert (Tensor([2**63 - 1], dtype=dtypes.int64, device=dev) < 2**63).tolist() == [True]   # a Python int past int64: exact

  # every pair, as public tinygrad's least_upper_dtype gives it (0.14's promo_lattice; uint64 with a signed int is its weak
  # float, the default float32; its weakint node changes none of these joins), row dtype with column dtype; fp8 (e4 e5 e4z e5z)
  # joins another fp8 at float16
  PUBLIC_TABLE = """
         b   i8   u8  i16  u16  i32  u32  i64  u64   e4   e5  e4z  e5z  f16 bf16  f32  f64
    b    b   i8   u8  i16  u16  i32  u32  i64  u64   e4   e5  e4z  e5z  f16 bf16  f32  f64
   i8   i8   i8  i16  i16  i32  i32  i64  i64  f32   e4   e5  e4z  e5z  f16 bf16  f32  f64
   u8   u8  i16   u8  i16  u16  i32  u32  i64  u64   e4   e5  e4z  e5z  f16 bf16  f32  f64
  i16  i16  i16  i16  i16  i32  i32  i64  i64  f32   e4   e5  e4z  e5z  f16 bf16  f32  f64
  u16  u16  i32  u16  i32  u16  i32  u32  i64  u64   e4   e5  e4z  e5z  f16 bf16  f32  f64
  i32  i32  i32  i32  i32  i32  i32  i64  i64  f32   e4   e5  e4z  e5z  f16 bf16  f32  f64
  u32  u32  i64  u32  i64  u32  i64  u32  i64  u64   e4   e5  e4z  e5z  f16 bf16  f32  f64
  i64  i64  i64  i64  i64  i64  i64  i64  i64  f32   e4   e5  e4z  e5z  f16 bf16  f32  f64
  u64  u64  f32  u64  f32  u64  f32  u64  f32  u64   e4   e5  e4z  e5z  f16 bf16  f32  f64
   e4   e4   e4   e4   e4   e4   e4   e4   e4   e4   e4  f16  f16  f16  f16 bf16  f32  f64
   e5   e5   e5   e5   e5   e5   e5   e5   e5   e5  f16   e5  f16  f16  f16 bf16  f32  f64
  e4z  e4z  e4z  e4z  e4z  e4z  e4z  e4z  e4z  e4z  f16  f16  e4z  f16  f16 bf16  f32  f64
  e5z  e5z  e5z  e5z  e5z  e5z  e5z  e5z  e5z  e5z  f16  f16  f16  e5z  f16 bf16  f32  f64
  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16  f32 bf16  f32  f64
  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
"""
  SHORT = {"b": dtypes.bool, "i8": dtypes.int8, "u8": dtypes.uint8, "i16": dtypes.int16, "u16": dtypes.uint16, "i32": dtypes.int32,
           "u32": dtypes.uint32, "i64": dtypes.int64, "u64": dtypes.uint64, "f16": dtypes.float16, "bf16": dtypes.bfloat16,
           "f32": dtypes.float32, "f64": dtypes.float64, "e4": dtypes.fp8e4m3, "e5": dtypes.fp8e5m2, "e4z": dtypes.fp8e4m3fnuz,
           "e5z": dtypes.fp8e5m2fnuz}
  def test_every_pair_matches_public_tinygrad(self):
    head, *rows = [line.split() for line in self.PUBLIC_TABLE.strip().splitlines()]
    wrong = [(r[0], c, least_upper_dtype(self.SHORT[r[0]], self.SHORT[c]), self.SHORT[w]) for r in rows for c, w in zip(head, r[1:])
             if least_upper_dtype(self.SHORT[r[0]], self.SHORT[c]) != self.SHORT[w]]
    assert len(rows) == len(head) == len(dtypes.all) and not wrong
  def test_float_with_int_keeps_the_float(self):
    # numpy widens float16+int32 to float64; tinygrad keeps the float operand's type
    for i in dtypes.ints:
      for f in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64): assert least_upper_dtype(i, f) == f, (i, f)
  def test_bfloat16_with_float16_is_float32(self): assert least_upper_dtype(dtypes.bfloat16, dtypes.float16) == dtypes.float32

  def test_agrees_with_numpy_except_the_documented_rules(self):
    disagree = []
    for a in NP_DTYPES:
      for b in NP_DTYPES:
        t, n = least_upper_dtype(a, b), np_promote(a, b)
        float_int = (dtypes.is_float(a) and not dtypes.is_float(b)) or (dtypes.is_float(b) and not dtypes.is_float(a))
        signed_u64 = {a, b} & {dtypes.uint64} and ({a, b} & set(dtypes.sints))   # numpy: float64, tinygrad: uint64
        if t != n and not float_int and not signed_u64: disagree.append((a, b, t, n))
    assert not disagree

  @given(st.lists(st.sampled_from(list(dtypes.all)), min_size=1, max_size=4))
  @settings(max_examples=50, deadline=None)
  def test_is_an_upper_bound_commutative_idempotent(self, ds):
    u = least_upper_dtype(*ds)
    assert least_upper_dtype(*reversed(ds)) == u
    assert least_upper_dtype(u, *ds) == u
    for d in ds: assert least_upper_dtype(d, u) == u

  def test_least_upper_float_and_sum_acc(self):
    assert least_upper_float(dtypes.int32) == dtypes.float32
    assert least_upper_float(dtypes.float16) == dtypes.float16
    # ints and bools accumulate in int64 as torch (uint64 stays uint64); a device without int64 gets the 32-bit kind
    for d in (dtypes.uint8, dtypes.int8, dtypes.bool, dtypes.int32, dtypes.uint32, dtypes.int64): assert sum_acc_dtype(d) == dtypes.int64
    assert sum_acc_dtype(dtypes.uint64) == dtypes.uint64
    assert sum_acc_dtype(dtypes.uint8, int64=False) == dtypes.uint32 and sum_acc_dtype(dtypes.bool, int64=False) == dtypes.int32
    assert sum_acc_dtype(dtypes.float16) == dtypes.float32
    assert sum_acc_dtype(dtypes.float64) == dtypes.float64

class TestVecPtr:
  def test_vec(self):
    v = dtypes.float32.vec(4)
    assert v.count == 4 and v.itemsize == 16 and v.scalar() == dtypes.float32
    assert v == dtypes.float32.vec(4) and hash(v) == hash(dtypes.float32.vec(4)) and v != dtypes.float32 and v != dtypes.float32.vec(2)
    assert dtypes.float32.vec(1) is dtypes.float32
    assert dtypes.is_float(v) and not dtypes.is_int(v)
    assert repr(v) == "dtypes.float.vec(4)"
    with pytest.raises(ValueError): v.vec(2)
  def test_vec_names_are_short(self):
    assert dtypes.float32.vec(4).name == "float4"
    assert dtypes.int32.vec(2).name == "int2"
    assert dtypes.uint8.vec(4).name == "uchar4"
  def test_ptr(self):
    p = dtypes.float32.ptr(16)
    assert isinstance(p, PtrDType) and p.base == dtypes.float32 and p.size == 16 and p.addrspace == AddrSpace.GLOBAL
    assert p == dtypes.float32.ptr(16) and p != dtypes.float32.ptr(8) and p != dtypes.float32 and p != dtypes.float32.ptr(16, AddrSpace.LOCAL)
    assert dtypes.is_float(p)
    with pytest.raises(TypeError): p.ptr()
  def test_ptr_vec(self):
    p = dtypes.float32.ptr(16).vec(4)
    assert p.vcount == 4 and p.scalar() == dtypes.float32.ptr(16) and p.base == dtypes.float32
    vp = dtypes.float32.vec(4).ptr(4, AddrSpace.REG)
    assert vp.base == dtypes.float32.vec(4) and vp.addrspace == AddrSpace.REG and vp.vcount == 1
  def test_pickle(self):
    for d in (dtypes.float32, dtypes.int8.vec(4), dtypes.float16.ptr(3, AddrSpace.LOCAL)): assert pickle.loads(pickle.dumps(d)) == d

class TestNumpyConversion:
  @pytest.mark.parametrize("dt", NP_DTYPES)
  def test_round_trip(self, dt):
    assert from_numpy(to_numpy(dt)) == dt
    assert np.dtype(to_numpy(dt)).itemsize == dt.itemsize
  def test_from_numpy_types_and_dtypes(self):
    assert from_numpy(np.float32) == dtypes.float32
    assert from_numpy(np.dtype("int64")) == dtypes.int64
    assert from_numpy(np.bool_) == dtypes.bool
  def test_ml_dtypes_arrays_are_bfloat16_and_fp8(self):
    # ml_dtypes' numpy types (what onnx, jax and torch's numpy() hold) were a TypeError in from_numpy and Tensor(arr); known by
    # name, with no import of ml_dtypes in the core, their bits are taken as they are
    from tinygrad import Tensor
    ml_dtypes = pytest.importorskip("ml_dtypes")
    types = {ml_dtypes.bfloat16: dtypes.bfloat16, ml_dtypes.float8_e4m3fn: dtypes.fp8e4m3, ml_dtypes.float8_e5m2: dtypes.fp8e5m2,
             ml_dtypes.float8_e4m3fnuz: dtypes.fp8e4m3fnuz, ml_dtypes.float8_e5m2fnuz: dtypes.fp8e5m2fnuz}
    for t, dt in types.items():
      a = np.array([[1.5, -2.0, 3.25, np.nan, -0.0, 0.1]], dtype=t)
      assert from_numpy(a.dtype) == from_numpy(t) == dt
      x = Tensor(a)
      assert x.dtype == dt and x.shape == (1, 6)
      assert x.bitcast(dtypes.uint16 if dt == dtypes.bfloat16 else dtypes.uint8).numpy().tobytes() == a.tobytes()
      assert x.numpy().dtype == np.float32 and np.array_equal(x.numpy(), a.astype(np.float32), equal_nan=True)   # numpy(): float32, as before
  def test_no_storage_for_weakint_or_void(self):
    # Tensor([1], dtype=weakint) and Tensor.empty(3, dtype=weakint/void) made buffers (public tinygrad 0.14: "cannot create
    # storage for weak dtype"), Tensor([1], dtype=void) raised struct.error "bad char in struct format": a TypeError naming it
    from tinygrad import Tensor
    for dt, make in itertools.product((dtypes.weakint, dtypes.void), (lambda dt: Tensor([1], dtype=dt), lambda dt: Tensor.empty(3, dtype=dt),
                                                                    lambda dt: Tensor(b"abcd", dtype=dt), lambda dt: Tensor(np.array([1, 2]), dtype=dt))):
      with pytest.raises(TypeError, match=f"storage for .*{dt}"): make(dt).realize()
    # a weak int computed is an int32, as before: a literal, a cast, a zeros
    assert Tensor(1, dtype=dtypes.weakint).tolist() == 1 and Tensor([1]).cast(dtypes.weakint).tolist() == [1]
    assert Tensor.zeros(3, dtype=dtypes.weakint).realize().dtype == dtypes.int32
  def test_unsupported(self):
    with pytest.raises(TypeError, match="complex128"): from_numpy(np.complex128)
    with pytest.raises(TypeError, match="bfloat16"): to_numpy(dtypes.bfloat16)
  def test_from_py(self):
    assert dtypes.from_py(1.0) == dtypes.float32 and dtypes.from_py(1) == dtypes.int32 and dtypes.from_py(True) == dtypes.bool
    assert dtypes.from_py([1, 2.0]) == dtypes.float32 and dtypes.from_py([[True], [1]]) == dtypes.int32 and dtypes.from_py([]) == dtypes.float32
    assert dtypes.from_py(np.int16(3)) == dtypes.int16
    with pytest.raises(TypeError): dtypes.from_py("x")
  def test_to_dtype(self):
    assert to_dtype("float32") == dtypes.float32 and to_dtype("half") == dtypes.float16 and to_dtype(dtypes.int8) is dtypes.int8
    with pytest.raises(ValueError, match="float33"): to_dtype("float33")
    for bad in ((dtypes.int,), 3, None):   # not a dtype or a name: a TypeError, and public tinygrad's AttributeError
      with pytest.raises(TypeError, match="DType or its name"): to_dtype(bad)
      with pytest.raises(AttributeError): to_dtype(bad)

INT_DTYPES = list(dtypes.ints)

class TestAsConst:
  @given(st.integers(-2**70, 2**70), st.sampled_from(INT_DTYPES))
  @settings(max_examples=100, deadline=None)
  def test_int_wraparound_matches_numpy(self, v, dt):
    want = np.array(v & (2**64-1), dtype=np.uint64).astype(to_numpy(dt)).item()
    assert dtypes.as_const(v, dt) == want
  def test_int_examples(self):
    assert dtypes.as_const(2**31, dtypes.int32) == -2**31
    assert dtypes.as_const(-1, dtypes.uint8) == 255
    assert dtypes.as_const(3.7, dtypes.int32) == 3 and dtypes.as_const(-3.7, dtypes.int32) == -3
    assert dtypes.as_const(True, dtypes.int32) == 1 and type(dtypes.as_const(True, dtypes.int32)) is int
    assert dtypes.as_const(5, dtypes.bool) is True and dtypes.as_const(0.0, dtypes.bool) is False
  @given(st.floats(allow_nan=False, width=64))
  @settings(max_examples=100, deadline=None)
  def test_float_rounding_matches_numpy(self, v):
    with np.errstate(over="ignore"):
      assert dtypes.as_const(v, dtypes.float32) == float(np.float32(v))
      assert dtypes.as_const(v, dtypes.float16) == float(np.float16(v))
  def test_float_overflow_and_specials(self):
    assert dtypes.as_const(1e40, dtypes.float32) == math.inf and dtypes.as_const(-1e40, dtypes.float32) == -math.inf
    assert dtypes.as_const(65520.0, dtypes.float16) == math.inf
    assert math.isnan(dtypes.as_const(math.nan, dtypes.float32))
    assert math.copysign(1.0, dtypes.as_const(-0.0, dtypes.float32)) == -1.0
    assert type(dtypes.as_const(1, dtypes.float32)) is float
  def test_tuple(self): assert dtypes.as_const((1, 2**32+1), dtypes.int32) == (1, 1)
  def test_bfloat16(self):
    assert dtypes.as_const(1.0, dtypes.bfloat16) == 1.0
    assert dtypes.as_const(1.0 + 2**-9, dtypes.bfloat16) == 1.0  # round to nearest even: 7 mantissa bits
    assert bf16_to_float(float_to_bf16_bits(3.0)) == 3.0 and math.isnan(bf16_to_float(float_to_bf16_bits(math.nan)))
    assert truncate_float(1e39, dtypes.bfloat16) == math.inf  # beyond bfloat16's range
  def test_min_max(self):
    assert dtypes.min(dtypes.int8) == -128 and dtypes.max(dtypes.int8) == 127
    assert dtypes.min(dtypes.uint16) == 0 and dtypes.max(dtypes.uint16) == 65535
    assert dtypes.max(dtypes.int64) == 2**63-1 and dtypes.max(dtypes.uint64) == 2**64-1
    assert dtypes.min(dtypes.float32) == -math.inf and dtypes.max(dtypes.bool) is True

# ---- a list of numpy scalars ----
# (data, torch.tensor(data)'s dtype but for a Python int, the default int here and int64 in torch)
NP_SCALAR_LISTS = [([np.float16(1.5)], dtypes.float16), ([np.float16(1.0), 1.5], dtypes.float32), ([np.int8(1), 300], dtypes.int32),
                   ([np.int8(1), 2.5], dtypes.float32), ([np.uint8(1), True], dtypes.uint8), ([np.float32(1), np.float64(2)], dtypes.float64),
                   ([np.int64(1), 2], dtypes.int64), ([np.uint8(3), np.int8(-4)], dtypes.int16), ([np.bool_(True), False], dtypes.bool),
                   ([[np.int32(1), np.int32(2)], [np.int32(3), 4]], dtypes.int32), ([np.float64(0.1), np.float32(0.25)], dtypes.float64)]
@pytest.mark.parametrize("data,want", NP_SCALAR_LISTS, ids=str)
def test_a_list_of_numpy_scalars_keeps_their_dtypes_as_torch(data, want):
  # numpy scalars (np.float16(x), arr[i], arr.sum()) in a list are numbers of their dtype, promoted with the rest as
  # torch.tensor does; it raised TypeError
  from tinygrad import Tensor
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  ref = torch.tensor(data)
  if want != dtypes.int32: assert from_numpy(ref.numpy().dtype) == want
  t = Tensor(data, device="CPU")
  assert t.dtype == want and t.shape == tuple(ref.shape)
  np.testing.assert_array_equal(t.numpy(), ref.numpy().astype(to_numpy(want)))

def test_numpy_scalars_with_a_dtype_are_cast_to_it_and_0d_arrays_are_scalars():
  from tinygrad import Tensor
  t = Tensor([np.float16(0.1), np.float64(2.5), np.int32(3)], dtype=dtypes.float16, device="CPU")
  assert t.dtype == dtypes.float16 and t.tolist() == [float(np.float16(0.1)), 2.5, 3.0]
  a = np.arange(3, dtype=np.float32)
  t = Tensor([a.sum(), a[1], np.array(7, dtype=np.float32)], device="CPU")   # as np.array([...]) reads them
  assert t.dtype == dtypes.float32 and t.tolist() == [3.0, 1.0, 7.0]

@pytest.mark.parametrize("data", [[np.array([1., 2.]), np.array([3., 4.])], [np.array([1, 2], np.float32), np.array([3, 4], np.float32)],
                                  [[np.array([1, 2])], [np.array([3, 4])]], [np.array([True, False])]], ids=str)
def test_a_list_of_numpy_arrays_is_one_array_as_torch(data):
  # beautiful_cartpole keeps its observations in a list and calls Tensor(list): it raised TypeError ("must be numbers")
  from tinygrad import Tensor
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  ref = torch.tensor(np.asarray(data)).numpy()
  t = Tensor(data, device="CPU")
  assert t.dtype == from_numpy(ref.dtype) and t.shape == ref.shape
  np.testing.assert_array_equal(t.numpy(), ref)
  assert Tensor(data, dtype=dtypes.float16, device="CPU").dtype == dtypes.float16
  with pytest.raises(ValueError): Tensor([np.array([1., 2.]), np.array([3.])])   # ragged: numpy's error

def test_none_is_a_0d_zero():
  # (public tinygrad 0.14's Tensor(None): a 0-d 0 of the dtype; here it was an empty (0,) tensor)
  from tinygrad import Tensor
  assert Tensor(None).shape == () and Tensor(None).dtype == dtypes.default_float and Tensor(None).item() == 0.0
  assert Tensor(None, dtype=dtypes.int32).tolist() == 0 and Tensor(None, dtype=dtypes.bool).tolist() is False

# (numpy operand on the left, tinygrad op with it on the right, the result's dtype (the numpy value's own, as on the right))
NP_LEFT = [("float64 *", lambda t: np.float64(2.0) * t, lambda t: t * np.float64(2.0)), ("float32 -", lambda t: np.float32(1.5) - t, lambda t: -t + np.float32(1.5)),
           ("int64 +", lambda t: np.int64(3) + t, lambda t: t + np.int64(3)), ("array +", lambda t: np.array([1.0, 2.0, 3.0]) + t, lambda t: t + np.array([1.0, 2.0, 3.0])),
           ("float64 /", lambda t: np.float64(1.0) / t, lambda t: t.reciprocal().cast(dtypes.float32) * np.float64(1.0)),
           ("float64 <", lambda t: np.float64(1.5) < t, lambda t: t > np.float64(1.5)), ("int64 ==", lambda t: np.int64(2) == t, lambda t: t == np.int64(2))]
@pytest.mark.parametrize("name,left,right", NP_LEFT, ids=[n for n, _, _ in NP_LEFT])
def test_a_numpy_value_on_the_left_of_an_operator_gives_a_tensor(name, left, right):
  # numpy's operator ran first and read the tensor as a sequence: np.float32(2) * t was a numpy object array of lazy 0-d
  # tensors (torch defers to its tensor, as here). Now the tensor's own reflected operator runs
  from tinygrad import Tensor
  t = Tensor([1.0, 2.0, 3.0], device="CPU")
  got, want = left(t), right(t)
  assert isinstance(got, Tensor) and got.dtype == want.dtype and got.shape == (3,)
  np.testing.assert_allclose(got.numpy(), want.numpy())
  with pytest.raises(TypeError): np.sin(t)   # a numpy ufunc on a tensor is an error, not an object array

def test_numpy_reads_a_tensor_as_its_data():
  # np.asarray(t) was an object array of lazy 0-d tensors (numpy read the tensor as a sequence), as in public tinygrad; torch's
  # __array__ gives the data, as here
  from tinygrad import Tensor
  t = Tensor([[1, 2], [3, 4]], dtype=dtypes.int8, device="CPU")
  a = np.asarray(t)
  assert a.dtype == np.int8 and a.shape == (2, 2) and a.tolist() == [[1, 2], [3, 4]]
  assert np.asarray(t, dtype=np.float64).dtype == np.float64 and np.array(Tensor(2.5, device="CPU")).item() == 2.5
  np.testing.assert_allclose(Tensor([0.5, 1.5], device="CPU"), [0.5, 1.5])
  with pytest.raises(ValueError): np.asarray(t, copy=False)

# ---- fp8: public tinygrad 0.14's names, torch's conversions (docs/guide.md, "fp8") ----
from tinygrad.dtype import float_to_fp8, fp8_to_float, _to_torch_dtype, _from_torch_dtype  # noqa: E402

class TestFP8:
  def test_names_as_public_tinygrad(self):
    # 0.14: priority 10 (e4m3) / 11 (e5m2), one byte, no struct format, floats first in dtypes.floats
    assert dtypes.fp8s == dtypes.fp8_ocp + dtypes.fp8_fnuz == (dtypes.fp8e4m3, dtypes.fp8e5m2, dtypes.fp8e4m3fnuz, dtypes.fp8e5m2fnuz)
    assert dtypes.floats[:4] == dtypes.fp8s and set(dtypes.fp8s) <= set(dtypes.all)
    for d, prio, name, fi in [(dtypes.fp8e4m3, 10, "float8_e4m3", (4, 3)), (dtypes.fp8e5m2, 11, "float8_e5m2", (5, 2)),
                              (dtypes.fp8e4m3fnuz, 10, "float8_e4m3fnuz", (4, 3)), (dtypes.fp8e5m2fnuz, 11, "float8_e5m2fnuz", (5, 2))]:
      assert (d.priority, d.itemsize, d.name, d.fmt, dtypes.finfo(d)) == (prio, 1, name, None, fi) and dtypes.is_float(d)
      assert not dtypes.is_int(d) and repr(d) == f"dtypes.{INV[d]}" and to_dtype(INV[d]) is d and dtypes.fields()[INV[d]] is d
      assert pickle.loads(pickle.dumps(d.vec(4))) == d.vec(4) and d.vec(4).itemsize == 4

  def test_promotion(self):
    assert least_upper_dtype(dtypes.fp8e4m3, dtypes.float16) == dtypes.float16 and least_upper_dtype(dtypes.fp8e5m2, dtypes.bfloat16) == dtypes.bfloat16
    assert least_upper_dtype(dtypes.fp8e4m3, dtypes.fp8e5m2) == dtypes.float16 and least_upper_dtype(dtypes.fp8e4m3, dtypes.int64) == dtypes.fp8e4m3
    assert least_upper_dtype(dtypes.fp8e4m3fnuz, dtypes.float32) == dtypes.float32 and least_upper_float(dtypes.fp8e5m2) == dtypes.fp8e5m2
    assert sum_acc_dtype(dtypes.fp8e4m3) == dtypes.float32

  def test_conversions_known_bits(self):
    # e4m3: bias 7, 3 mantissa bits, max 448, no inf (too large saturates, as torch); e5m2: bias 15, max 57344, inf;
    # fnuz: bias one more, no -0, NaN is 0x80, too large is NaN
    e4, e5, e4z, e5z = dtypes.fp8s
    assert [fp8_to_float(b, e4) for b in (0x38, 0x7e, 0x01, 0xb8, 0x80)] == [1.0, 448.0, 2**-9, -1.0, -0.0] and math.isnan(fp8_to_float(0x7f, e4))
    assert [fp8_to_float(b, e5) for b in (0x3c, 0x7b, 0x7c, 0xfc, 0x01)] == [1.0, 57344.0, math.inf, -math.inf, 2**-16]
    assert all(math.isnan(fp8_to_float(b, e5)) for b in (0x7d, 0x7e, 0x7f, 0xff))
    assert [fp8_to_float(b, e4z) for b in (0x40, 0x7f, 0x01, 0x00)] == [1.0, 240.0, 2**-10, 0.0] and math.isnan(fp8_to_float(0x80, e4z))
    assert fp8_to_float(0x7f, e5z) == 57344.0 and fp8_to_float(0x01, e5z) == 2**-17 and math.isnan(fp8_to_float(0x80, e5z))
    assert [float_to_fp8(v, e4) for v in (448, 464, 1e6, math.inf, -math.inf, math.nan, -0.0, 1.0625, 1.1875)] == [0x7e] * 4 + [0xfe, 0x7f, 0x80, 0x38, 0x3a]
    assert [float_to_fp8(v, e5) for v in (57344, 61439, 61440, math.inf, -1e9, 2**-17, 2**-17 * 1.01)] == [0x7b, 0x7b, 0x7c, 0x7c, 0xfc, 0x00, 0x01]
    assert [float_to_fp8(v, e4z) for v in (240, 247, 248, -1e9, math.inf, -0.0, -2**-12, math.nan)] == [0x7f, 0x7f, 0x80, 0x80, 0x80, 0x00, 0x00, 0x80]
    assert dtypes.max(e4) == 448.0 and dtypes.min(e4) == -448.0 and dtypes.max(e5) == math.inf and dtypes.max(e4z) == 240.0 and dtypes.min(e5z) == -57344.0
    assert truncate_float(300.0, e4) == 288.0 and dtypes.as_const(1e9, e4) == 448.0 and math.isnan(truncate_float(1e9, e4z))

  def test_conversions_match_torch(self):
    torch = pytest.importorskip("torch", reason="the fp8 reference is torch's float8 dtypes: pip install torch")
    rng = np.random.default_rng(0)
    bits = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32), np.arange(0x30000000, 0x48000000, 0x4000, dtype=np.uint32)])
    x = bits.view(np.float32)
    for d in dtypes.fp8s:
      td = getattr(torch, d.name + ("fn" if d == dtypes.fp8e4m3 else ""))   # torch's float8_e4m3fn ...
      assert _from_torch_dtype(td) is d and _to_torch_dtype(d) is torch.uint8   # (public tinygrad's: the storage's bytes)
      want = torch.from_numpy(x).to(td).view(torch.uint8).numpy()
      assert [float_to_fp8(float(v), d) for v in x] == want.tolist(), d
      wantf = torch.arange(256, dtype=torch.uint8).view(td).float().tolist()
      assert all(fp8_to_float(b, d) == w or math.isnan(w) and math.isnan(fp8_to_float(b, d)) for b, w in enumerate(wantf)), d

  @pytest.mark.parametrize("dev", ["PYTHON", "CPU"])
  def test_tensor_front_end(self, dev):
    from tinygrad import Tensor
    t = Tensor([1.0, 500.0, -0.3, 3 * 2**-10], dtype=dtypes.fp8e4m3, device=dev)   # (3 * 2**-10: a tie, to the even 2**-8)
    assert t.dtype == dtypes.fp8e4m3 and t.numpy().dtype == np.float32 and t.nbytes() == 4
    assert t.tolist() == [1.0, 448.0, -0.3125, 2**-8] and t[1].item() == 448.0 and isinstance(t[0].item(), float)
    assert t.bitcast(dtypes.uint8).tolist() == [0x38, 0x7e, 0xaa, 0x02] and t.bitcast(dtypes.int8).bitcast(dtypes.fp8e4m3).tolist() == t.tolist()
    assert Tensor(np.array([1.5, 3e4], np.float32), dtype=dtypes.fp8e5m2, device=dev).tolist() == [1.5, 28672.0]
    assert Tensor(np.array([1.5, 70000.0], np.float32), device=dev).cast(dtypes.fp8e5m2).tolist() == [1.5, math.inf]
    # arithmetic: float32, rounded to fp8 once per op; with a wider float it promotes
    assert (t + t).dtype == dtypes.fp8e4m3 and (t + t).tolist() == [2.0, 448.0, -0.625, 2**-7]
    assert (t * Tensor([1.0], dtype=dtypes.float16, device=dev)).dtype == dtypes.float16 and (t * 2.0).dtype == dtypes.fp8e4m3
    assert Tensor([3.0], dtype=dtypes.fp8e4m3, device=dev).exp().tolist() == [20.0]   # e**3 = 20.09 computed in float32, rounded once
    assert Tensor([-0.0, 5.0], device=dev).cast(dtypes.fp8e4m3fnuz).bitcast(dtypes.uint8).tolist() == [0x00, 0x52]

  def test_no_fp8_reaches_a_renderer(self):
    # the core lowers fp8 to bytes + uint32/float32 ops (codegen/decompositions.py lower_fp8): the linearized kernel has none
    from tinygrad import Tensor
    from tinygrad.device import Device
    from tinygrad.codegen import full_rewrite
    ren = Device["CPU"].renderer
    assert ren.native_fp8 == frozenset() and set(dtypes.fp8s) <= ren.supported_dtypes
    out = (Tensor([1.0, 2.0], dtype=dtypes.fp8e5m2, device="CPU") * Tensor([3.0, 4.0], device="CPU").cast(dtypes.fp8e5m2))
    for si in out.schedule():
      uops = full_rewrite(si.ast, ren)
      assert not any((u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype).scalar() in dtypes.fp8s for u in uops)

INV = {dtypes.fp8e4m3: "fp8e4m3", dtypes.fp8e5m2: "fp8e5m2", dtypes.fp8e4m3fnuz: "fp8e4m3fnuz", dtypes.fp8e5m2fnuz: "fp8e5m2fnuz"}
