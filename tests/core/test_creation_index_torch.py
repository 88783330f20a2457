"""Creation and indexing at their edge arguments, against numpy (and ml_dtypes) or torch: arange with float and negative
steps and non-integral counts in every float dtype, linspace (0 and 1 steps, dtypes), eye with m != n, full/ones_like with
dtypes, tril/triu with large diagonals, getitem with negative, bool, int8/uint8 tensor indices, None and Ellipsis,
setitem with repeated indices, gather/scatter/scatter_reduce with every reduce and include_self, roll, flip,
repeat_interleave and interpolate's modes."""
import numpy as np, pytest, torch, ml_dtypes
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes

TD = {dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
      dtypes.int8: torch.int8, dtypes.uint8: torch.uint8, dtypes.int16: torch.int16, dtypes.int32: torch.int32, dtypes.int64: torch.int64,
      dtypes.bool: torch.bool}
F = torch.nn.functional

def _np(t: torch.Tensor) -> np.ndarray: return t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
def check(ours: Tensor, ref, tol=0.0):
  got, want = ours.numpy(), (_np(ref) if isinstance(ref, torch.Tensor) else np.asarray(ref))
  assert got.shape == want.shape, f"shape {got.shape} vs {want.shape}"
  np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)

# ---- arange / linspace / eye / full ----
NP_FLOATS = {dtypes.float16: np.float16, dtypes.bfloat16: ml_dtypes.bfloat16, dtypes.float32: np.float32, dtypes.float64: np.float64,
             dtypes.fp8e5m2: ml_dtypes.float8_e5m2}

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16, dtypes.fp8e5m2])
def test_arange_of_a_narrow_float_is_numpys_fill(dt):
  # numpy (float16) and ml_dtypes (bfloat16, fp8) fill from the first two values rounded to the dtype, in float32, each
  # value rounded once; ours multiplied and added in the narrow dtype: float16 arange(-1, 1, 0.4)[3] was 0.1992 (numpy
  # 0.1997), arange(-5, 5, 0.7)[14] 4.785 (4.789), bfloat16 arange(0, 2000, 1.1) up to 8 (an ulp) off
  for args in [(-1, 1, 0.4), (-5, 5, 0.7), (0, 2000, 1.1), (3, -7, -0.37), (-100, 100, 3.3), (0.1, 0.9, 0.013)]:
    want = np.arange(*args, dtype=NP_FLOATS[dt]).astype(np.float64)
    np.testing.assert_array_equal(Tensor.arange(*args, dtype=dt).numpy().astype(np.float64), want, err_msg=str(args))

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64, dtypes.float16])
def test_arange_second_value_is_start_plus_step_rounded(dt):
  # numpy writes start and start+step, each rounded, and fills from the third value on; f0 + delta missed its second by an
  # ulp where start+step cancels: float32 arange(1.38, 0, -1.375)[1] was 0.004999995 (numpy 0.0049999999)
  for args in [(1.38, 0, -1.375), (0.3, 0.31, 0.0011), (-2.7, 5, 2.69)] + ([(1e8, 1e8 + 50, 7.3)] if dt != dtypes.float16 else []):
    want = np.arange(*args, dtype=NP_FLOATS[dt]).astype(np.float64)
    np.testing.assert_array_equal(Tensor.arange(*args, dtype=dt).numpy().astype(np.float64), want, err_msg=str(args))

@settings(max_examples=60, deadline=None)
@given(st.floats(-50, 50).map(lambda x: round(x, 2)), st.floats(-50, 50).map(lambda x: round(x, 2)),
       st.floats(0.05, 7).map(lambda x: round(x, 3)), st.booleans(), st.sampled_from(sorted(NP_FLOATS, key=str) + [dtypes.int32, dtypes.int64, None]))
def test_fuzz_arange_matches_numpy(start, stop, step, down, dt):
  step = -step if down else step
  nd = NP_FLOATS.get(dt, {dtypes.int32: np.int32, dtypes.int64: np.int64, None: np.float32}.get(dt))
  if not 0 <= np.ceil((stop - start) / step) < 5000: return
  want = np.arange(start, stop, step, dtype=nd)
  got = Tensor.arange(start, stop, step, dtype=dt)
  assert got.dtype == (dt if dt is not None else dtypes.float32)
  np.testing.assert_array_equal(got.numpy().astype(np.float64), want.astype(np.float64))

def test_arange_of_bool_holds_only_0_and_1():
  # arange(1, 4, dtype=bool) returned an int32 tensor [1, 2, 2], arange(0, 3, 0.5, dtype=bool) all False: values other than 0
  # and 1 raise public tinygrad's OverflowError; 0 and 1 are its bools (arange(2, dtype=bool) is [False, True])
  for args in ((3,), (1, 4), (0, 3, 0.5), (0, 1, 0.5), (-1, 1)):
    with pytest.raises(OverflowError, match="does not fit"): Tensor.arange(*args, dtype=dtypes.bool)
  for args, want in (((2,), [False, True]), ((1, -1, -1), [True, False]), ((0, 1.0), [False]), ((1, 1), []), ((1, 0, -1), [True])):
    got = Tensor.arange(*args, dtype="bool")
    assert got.dtype == dtypes.bool and got.tolist() == want, args

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint8])
@pytest.mark.parametrize("start,stop,n", [(0, 1, 0), (0, 1, 1), (0, 1, 2), (-3, 7, 11), (5, -5, 4), (1, 1, 3), (0, 255, 256), (2, 9, 5)])
def test_linspace_matches_torch(dt, start, stop, n):
  if dt == dtypes.uint8 and min(start, stop) < 0: return
  check(Tensor.linspace(start, stop, n, dtype=dt), torch.linspace(start, stop, n, dtype=TD[dt]), tol=1e-2 if dt == dtypes.bfloat16 else 1e-3)

@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (3, 5), (5, 3), (0, 3), (3, 0), (4, None)])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int32, dtypes.bool, dtypes.float16])
def test_eye_matches_torch(n, m, dt):
  check(Tensor.eye(n, m, dtype=dt) if m is not None else Tensor.eye(n, dtype=dt), torch.eye(n, m if m is not None else n, dtype=TD[dt]))

def test_eye_takes_whole_float_sizes():
  # (public tinygrad's eye(2.0) is eye(2); it raised "full: invalid shape (2.0, 1)"); torch and a fraction: TypeError
  assert Tensor.eye(2.0).tolist() == [[1.0, 0.0], [0.0, 1.0]] and Tensor.eye(1, 2.0).shape == (1, 2)
  with pytest.raises(TypeError, match="eye: m must be an int"): Tensor.eye(2, 2.5)

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.uint8, dtypes.float16, dtypes.bfloat16, dtypes.bool, dtypes.int64, dtypes.float64])
def test_full_and_likes_with_dtypes_match_torch(dt):
  for val in (0, 1, 2.7, True, -1, 300):
    try: want = torch.full((2, 3), val, dtype=TD[dt])
    except RuntimeError: continue
    if dt == dtypes.uint8 and val == -1: continue   # (ours raises OverflowError; torch wraps)
    got = Tensor.full((2, 3), val, dtype=dt)
    assert got.dtype == dt
    check(got, want)
  base = torch.tensor([[1, 2, 3]]).to(TD[dt])
  ours = Tensor(_np(base)).cast(dt)
  for f, g in [(lambda t: t.ones_like(), torch.ones_like), (lambda t: t.zeros_like(), torch.zeros_like), (lambda t: t.full_like(7), lambda t: torch.full_like(t, 7)),
               (lambda t: t.ones_like(dtype=dtypes.float16), lambda t: torch.ones_like(t, dtype=torch.float16)), (lambda t: t.full_like(2.5), lambda t: torch.full_like(t, 2.5))]:
    got, want = f(ours), g(base)
    assert TD[got.dtype] == want.dtype
    check(got, want)

@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 3, 5]), min_size=2, max_size=3).map(tuple), st.integers(-8, 8), st.booleans(), st.sampled_from([dtypes.float32, dtypes.bool, dtypes.int8]))
def test_fuzz_tril_triu_match_torch(shape, diag, upper, dt):
  t = (torch.arange(int(np.prod(shape))).reshape(shape) % 3).to(TD[dt])
  x = Tensor(t.numpy())
  check(x.triu(diag) if upper else x.tril(diag), t.triu(diag) if upper else t.tril(diag))

# ---- getitem / setitem ----
_X = torch.arange(60).reshape(3, 4, 5).float()
INDICES = [
  lambda: (torch.tensor([-1, 0, -3]),), lambda: (slice(None), torch.tensor([-1, -4, 2])), lambda: (None, ..., 1), lambda: (..., None),
  lambda: (None, 1, None, ..., None), lambda: (1, ..., None, 2), lambda: (torch.tensor([[0, -1], [1, 2]]), slice(None), torch.tensor([0, -5])),
  lambda: (slice(None), None, torch.tensor([1, 3]), torch.tensor([0, 4])), lambda: (torch.tensor([0, 2]), 1, torch.tensor([1, -1])),
  lambda: (torch.tensor([True, False, True]),), lambda: (slice(None), torch.tensor([True, False, True, True])), lambda: (torch.tensor([[True, False, True, True]] * 3),),
  lambda: (..., torch.tensor([-1])), lambda: (slice(None, None, 2), torch.tensor([1, 1, 1])), lambda: (torch.tensor([0, 1]), None, torch.tensor([2, 3])),
  lambda: (None, torch.tensor([2, 0]), ..., torch.tensor([4])), lambda: (-1, -1, -1), lambda: (slice(-2, -10, 1), ...), lambda: (torch.tensor([], dtype=torch.long),),
  lambda: (slice(None, None, -1) if False else slice(3, 0, -1) if False else slice(None), torch.tensor(2), slice(1, None, 3)),
]

@settings(max_examples=50, deadline=None)
@given(st.integers(0, len(INDICES) - 1), st.sampled_from([torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]))
def test_fuzz_getitem_matches_torch(i, idt):
  ix = INDICES[i]()
  if idt == torch.uint8 and any(isinstance(j, torch.Tensor) and j.dtype != torch.bool and (j < 0).any() for j in ix): return
  ix = tuple(j.to(idt) if isinstance(j, torch.Tensor) and j.dtype != torch.bool else j for j in ix)
  want = _X[tuple(j.long() if isinstance(j, torch.Tensor) and j.dtype != torch.bool else j for j in ix)]   # (torch reads uint8 as a mask)
  check(Tensor(_X.numpy())[tuple(Tensor(j.numpy()) if isinstance(j, torch.Tensor) else j for j in ix)], want)

@pytest.mark.parametrize("ix", [(Tensor([1, 1, 2]),), (Tensor([-1, 2, 2]),), (slice(None), Tensor([0, 0, 0])), (Tensor([0, 0]), Tensor([1, 1]))])
def test_setitem_with_repeated_indices_writes_the_last_value(ix):
  # torch leaves which duplicate wins unspecified (its CPU index_put writes in order: the last); docs/guide.md: ours the last
  y = Tensor.zeros(3, 3).contiguous()
  n = max(j.shape[0] for j in ix if isinstance(j, Tensor))
  y[ix] = Tensor([10.0, 20.0, 30.0][:n])
  want = np.zeros((3, 3), np.float32)
  want[tuple(j.numpy() if isinstance(j, Tensor) else j for j in ix)] = [10.0, 20.0, 30.0][:n]   # numpy: the last
  np.testing.assert_array_equal(y.numpy(), want)

# ---- gather / scatter / scatter_reduce ----
@settings(max_examples=60, deadline=None)
@given(st.sampled_from([((4, 5), 0), ((4, 5), 1), ((3, 1, 4), 2), ((5,), 0), ((2, 3, 4), -1), ((1, 1), 0)]), st.integers(1, 4),
       st.sampled_from(["sum", "prod", "mean", "amax", "amin"]), st.booleans(), st.sampled_from([torch.float32, torch.int32]), st.integers(0, 2**16))
def test_fuzz_gather_scatter_reduce_match_torch(shape_dim, k, reduce, include_self, tdt, seed):
  shape, dim = shape_dim
  rng = np.random.default_rng(seed)
  isz = list(shape)
  isz[dim] = k
  idx = torch.tensor(rng.integers(0, shape[dim], isz))
  src = torch.tensor(rng.standard_normal(shape) * 4).to(tdt)
  upd = torch.tensor(rng.standard_normal(isz) * 4).to(tdt)
  x, ix, u = Tensor(src.numpy()), Tensor(idx.numpy()), Tensor(upd.numpy())
  check(x.gather(dim, ix), src.gather(dim, idx))
  check(x.scatter_reduce(dim, ix, u, reduce, include_self=include_self), src.scatter_reduce(dim, idx, upd, reduce, include_self=include_self), tol=1e-5)
  check(x.scatter(dim, ix, 2.5 if tdt == torch.float32 else 2), src.scatter(dim, idx, 2.5 if tdt == torch.float32 else 2))
  for red, tred in [("add", "add"), ("multiply", "multiply")]:
    check(x.scatter(dim, ix, 3, reduce=red), src.scatter(dim, idx, 3, reduce=tred), tol=1e-5)

# ---- roll, flip, repeat_interleave ----
_R = torch.arange(24).reshape(2, 3, 4).float()
@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(1, 0), (-1, 1), (5, 2), (-7, 2), ((1, 2), (0, 2)), (3, None), (-25, None), (0, 1), ((1, 1), (1, 1)), (24, None)]),
       st.sampled_from([(0,), (0, 2), (-1,), (1, -1), ()]), st.sampled_from([(2, 0), (3, None), (1, -1), (0, 1), ((1, 0, 2), 1), ((2,), 0)]))
def test_fuzz_roll_flip_repeat_interleave_match_torch(roll, flip, ri):
  x = Tensor(_R.numpy())
  check(x.roll(*roll), _R.roll(*roll))
  check(x.flip(flip), _R.flip(flip))
  r, d = ri
  check(x.repeat_interleave(Tensor(list(r)) if isinstance(r, tuple) else r, d), _R.repeat_interleave(torch.tensor(r) if isinstance(r, tuple) else r, d))

# ---- interpolate ----
@settings(max_examples=40, deadline=None)
@given(st.sampled_from([((1, 2, 5), (9,)), ((1, 2, 5), (3,)), ((1, 1, 1), (4,)), ((1, 1, 7), (1,)), ((2, 1, 4, 5), (7, 3)), ((1, 2, 3, 3), (3, 3)),
                        ((1, 1, 4, 4), (1, 9)), ((1, 1, 2, 3, 4), (3, 5, 2)), ((1, 1, 6, 6), (4, 4))]),
       st.sampled_from(["nearest", "nearest-exact", "linear", "linear-ac"]), st.sampled_from([dtypes.float32, dtypes.float16, dtypes.uint8]), st.integers(0, 2**16))
def test_fuzz_interpolate_matches_torch(shape_size, mode, dt, seed):
  shape, size = shape_size
  t = torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
  t = (t * 50 + 100).clamp(0, 255).to(torch.uint8) if dt == dtypes.uint8 else t.to(TD[dt])
  tmode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(size)] if mode.startswith("linear") else mode
  kw = {"align_corners": mode == "linear-ac"} if mode.startswith("linear") else {}
  if dt == dtypes.uint8 and mode.startswith("linear") and len(size) != 2: return   # (torch: uint8 bilinear only)
  got = Tensor(t.numpy()).interpolate(size, mode=mode.split("-ac")[0], **kw)
  # uint8 linear: torch's fixed point may round the other way at a .5
  check(got, F.interpolate(t, size, mode=tmode, **kw), tol=1.0 if dt == dtypes.uint8 else 1e-2 if dt == dtypes.float16 else 1e-5)
