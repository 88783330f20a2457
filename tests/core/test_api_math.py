"""The API's math functions against torch (forward and backward): inverse trig/hyperbolic, log10, fmod, copysign, logaddexp,
isclose/allclose, logcumsumexp, cummax/cummin, diag/diagonal, einsum, qr/svd (by reconstruction and orthogonality), and the
misc Tensor methods (to_, is_param, size, from_blob, contiguous_backward)."""
import ctypes, math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes
torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")

DEVS = ["CPU", "PYTHON"]
def rnd(*shape, seed=0, lo=-2.0, hi=2.0): return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)
def close(a, b, atol=1e-5, rtol=1e-5): np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), atol=atol, rtol=rtol)

def check_fwd_bwd(fn_tg, fn_torch, *arrays, dev="CPU", atol=1e-5, rtol=1e-5, grad=True):
  """fn over tensors made from `arrays`: values, and the gradients of sum(out * w) for a fixed random w, equal torch's."""
  ts = [Tensor(a, device=dev, requires_grad=grad) for a in arrays]
  ps = [torch.tensor(a, requires_grad=grad) for a in arrays]
  out, ref = fn_tg(*ts), fn_torch(*ps)
  close(out.numpy(), ref.detach().numpy(), atol, rtol)
  if not grad or out.numel() == 0: return
  w = rnd(*ref.shape, seed=7) if ref.shape else np.float32(1.3)
  (out * Tensor(w, device=dev)).sum().backward()
  (ref * torch.tensor(w)).sum().backward()
  for t, p in zip(ts, ps):   # (an empty input gets its empty gradient, as in torch)
    close(t.grad.numpy(), p.grad.numpy(), atol * 10, rtol * 10)

# ---- inverse trigonometric and hyperbolic ----
DOMAINS = {"asin": (-0.99, 0.99), "acos": (-0.99, 0.99), "atan": (-5, 5), "asinh": (-5, 5), "acosh": (1.01, 6), "atanh": (-0.99, 0.99)}
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("fn", list(DOMAINS))
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5)])
def test_inverse_trig_forward_and_backward_match_torch(fn, shape, dev):
  lo, hi = DOMAINS[fn]
  check_fwd_bwd(lambda t: getattr(t, fn)(), lambda p: getattr(torch, fn)(p), rnd(*shape, lo=lo, hi=hi), dev=dev, atol=1e-6, rtol=3e-6)

EDGES = np.array([-1.0, -0.9999999, -0.5000001, -0.5, -1e-30, 0.0, 1e-7, 0.49999997, 0.5, 0.9999999, 1.0], dtype=np.float32)
@pytest.mark.parametrize("fn", ["asin", "acos", "atanh"])
def test_inverse_trig_is_accurate_near_the_ends_of_the_domain(fn):
  # the naive formulas lose every digit here: pi/2 - asin(x) for acos near 1, log((1+x)/(1-x)) for atanh near 0
  with np.errstate(divide="ignore"): ref = getattr(np, {"asin": "arcsin", "acos": "arccos", "atanh": "arctanh"}[fn])(EDGES.astype(np.float64))
  close(getattr(Tensor(EDGES), fn)().numpy(), ref, atol=0, rtol=3e-7)

@pytest.mark.parametrize("fn", ["atan", "asinh", "acosh"])
def test_inverse_trig_is_accurate_for_large_and_tiny_arguments(fn):
  x = np.concatenate([np.geomspace(1e-30, 3e38, 300), -np.geomspace(1e-30, 3e38, 300)]).astype(np.float32)
  if fn == "acosh": x = np.concatenate([1 + np.geomspace(1.2e-7, 1, 50), np.geomspace(1, 3e38, 300)]).astype(np.float32)
  ref = getattr(np, "arc" + fn[1:])(x.astype(np.float64))
  close(getattr(Tensor(x), fn)().numpy(), ref, atol=0, rtol=3e-7)

def test_inverse_trig_float64_keeps_double_precision():
  x = np.linspace(-0.999999, 0.999999, 501)
  for fn in ("asin", "acos", "atan", "asinh", "atanh"): close(getattr(Tensor(x), fn)().numpy(), getattr(torch, fn)(torch.tensor(x)).numpy(), atol=0, rtol=1e-15)
  close(Tensor(x + 2).acosh().numpy(), torch.acosh(torch.tensor(x + 2)).numpy(), atol=0, rtol=1e-15)

@settings(max_examples=60)
@given(st.sampled_from(list(DOMAINS)), st.lists(st.floats(-1e6, 1e6, width=32, allow_subnormal=False), min_size=1, max_size=8))
def test_inverse_trig_matches_torch_on_and_off_the_domain(fn, vals):
  # outside the domain both give NaN; inside they agree to a few ulp
  x = np.array(vals + [-1.0, 1.0, math.inf, -math.inf, math.nan], dtype=np.float32)
  ref = getattr(torch, fn)(torch.tensor(x)).numpy()
  got = getattr(Tensor(x), fn)().numpy()
  np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
  close(got[~np.isnan(ref)], ref[~np.isnan(ref)], atol=1e-6, rtol=3e-6)

def test_inverse_trig_of_ints_is_float():
  assert Tensor([0, 1], dtype=dtypes.int32).asin().dtype == dtypes.float32 and Tensor([1.0], dtype=dtypes.float16).acos().dtype == dtypes.float16
  close(Tensor([0.5], dtype=dtypes.float16).atanh().numpy(), [math.atanh(0.5)], atol=1e-3, rtol=1e-3)

# ---- log10, fmod, copysign, logaddexp ----
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(0,), (1,), (2, 3)])
def test_log10_matches_torch(shape, dev):
  check_fwd_bwd(Tensor.log10, torch.log10, rnd(*shape, lo=0.01, hi=100), dev=dev)

@pytest.mark.parametrize("dev", DEVS)
def test_fmod_has_the_dividends_sign(dev):
  a, b = rnd(4, 5, lo=-9, hi=9), rnd(5, seed=1, lo=0.5, hi=3) * np.array([1, -1, 1, -1, 1], dtype=np.float32)
  check_fwd_bwd(Tensor.fmod, torch.fmod, a, b, dev=dev)
  ai, bi = np.array([5, -5, 7, -7, 0], dtype=np.int32), np.array([3, 3, -2, -2, 4], dtype=np.int32)
  assert Tensor(ai, device=dev).fmod(Tensor(bi, device=dev)).tolist() == torch.fmod(torch.tensor(ai), torch.tensor(bi)).tolist()
  assert Tensor(ai, device=dev).fmod(3).tolist() == torch.fmod(torch.tensor(ai), 3).tolist()
  assert Tensor(ai, device=dev).fmod(3).dtype == dtypes.int32

def test_fmod_special_values_match_torch():
  a = np.array([5.0, -5.0, math.inf, 1.0, -0.0, 1e30, 7.5], dtype=np.float32)
  b = np.array([0.0, math.inf, 2.0, -math.inf, 3.0, 3.0, -2.5], dtype=np.float32)
  got, ref = Tensor(a).fmod(Tensor(b)).numpy(), torch.fmod(torch.tensor(a), torch.tensor(b)).numpy()
  np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
  close(got[~np.isnan(ref)], ref[~np.isnan(ref)], atol=1e-6)

def test_true_division_of_ints_by_an_int_outside_their_dtype():
  # a true quotient is a float, so the Python int is a float operand, as torch and numpy take it (it raised OverflowError:
  # -3 does not fit uint8); the rounding modes keep the int dtype, where the int must fit
  u, i = np.array([6, 7, 0], dtype=np.uint8), np.array([7, -7], dtype=np.int32)
  for got, ref in [(Tensor(u) / -3, torch.tensor(u) / -3), (-3 / Tensor(u[:2]), -3 / torch.tensor(u[:2])),
                   (Tensor(u).div(-300), torch.tensor(u).div(-300)), (Tensor(i) / 2**40, torch.tensor(i) / 2**40),
                   (Tensor(u).logaddexp(-3), torch.logaddexp(torch.tensor(u).float(), torch.tensor(-3.0)))]:
    assert got.dtype == dtypes.float32
    close(got.numpy(), ref.numpy(), atol=0, rtol=1e-6)
  with pytest.raises(OverflowError): Tensor(u).div(-3, rounding_mode="trunc")

@pytest.mark.parametrize("dev", DEVS)
def test_copysign_matches_torch(dev):
  a, b = rnd(3, 4, lo=0.1, hi=3) * np.sign(rnd(3, 4, seed=2)), rnd(4, seed=3)
  check_fwd_bwd(Tensor.copysign, torch.copysign, a, b, dev=dev)
  z = np.array([1.0, 2.0, -3.0], dtype=np.float32)
  assert Tensor(z).copysign(Tensor([-0.0, 0.0, math.inf])).tolist() == torch.copysign(torch.tensor(z), torch.tensor([-0.0, 0.0, math.inf])).tolist()
  assert Tensor([1, -2], dtype=dtypes.int32).copysign(Tensor([-1, 1])).tolist() == [-1, 2]

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_logaddexp_is_stable_and_matches_torch(scale, dev):
  check_fwd_bwd(Tensor.logaddexp, torch.logaddexp, rnd(2, 5) * scale, rnd(5, seed=1) * scale, dev=dev, rtol=1e-6)

def test_logaddexp_ties_infinities_and_tiny_terms():
  a = np.array([3.0, -math.inf, math.inf, -math.inf, 0.0, 2.0, math.nan], dtype=np.float32)
  b = np.array([3.0, -math.inf, 1.0, 5.0, -40.0, math.inf, 1.0], dtype=np.float32)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  got, ref = ta.logaddexp(tb), torch.logaddexp(torch.tensor(a), torch.tensor(b))
  np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(ref.numpy()))
  m = ~np.isnan(ref.numpy())
  close(got.numpy()[m], ref.numpy()[m], atol=0, rtol=1e-6)   # log1p keeps log(1 + e**-40) = 4.2e-18
  got[0:1].sum().backward()
  assert ta.grad.tolist()[0] == 0.5 and tb.grad.tolist()[0] == 0.5   # a tie splits the gradient, as torch

# ---- isclose / allclose ----
def test_isclose_matches_torch():
  a = np.array([1.0, 1.0, 1e-9, math.inf, math.inf, -math.inf, math.nan, 1.0, 100.0], dtype=np.float32)
  b = np.array([1.0 + 1e-6, 1.1, 0.0, math.inf, -math.inf, -math.inf, math.nan, math.nan, 100.001], dtype=np.float32)
  for kw in ({}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 0.5, "rtol": 0.0}):
    assert Tensor(a).isclose(Tensor(b), **kw).tolist() == torch.isclose(torch.tensor(a), torch.tensor(b), **kw).tolist(), kw
  assert Tensor([1, 2, 3]).isclose(Tensor([1, 2, 4])).tolist() == [True, True, False]
  assert Tensor([[1.0], [2.0]]).isclose(Tensor([1.0, 2.0])).shape == (2, 2) and Tensor([1.0]).isclose(1.0).tolist() == [True]

@pytest.mark.parametrize("dev", DEVS)
def test_isclose_of_ints_is_exact(dev):
  # ints were compared as float32, where 2**40 and 2**40 + 1 (or 16777217 and 16777216) are one value: close at rtol = atol
  # = 0, torch's False; the difference is taken exactly in the ints' width (no wrap at the extremes)
  cases = [([2**40, 5, -2**63, 2**63 - 1], [2**40 + 1, 5, 2**63 - 1, -2**63], "int64"), ([-2**31, 2**31 - 1, 16777217], [2**31 - 1, -2**31, 16777216], "int32"),
           ([-128, 127, 3, 100], [127, -128, 4, 101], "int8"), ([0, 255, 3], [255, 0, 4], "uint8")]
  for a, b, dt in cases:
    for kw in ({"rtol": 0, "atol": 0}, {}, {"rtol": 0.1, "atol": 1}, {"rtol": 0, "atol": 1}):
      if dt == "int64" and kw.get("rtol", 1) != 0: continue   # (torch's int64 subtraction wraps there)
      got = Tensor(a, dtype=getattr(dtypes, dt), device=dev).isclose(Tensor(b, dtype=getattr(dtypes, dt), device=dev), **kw).tolist()
      assert got == torch.isclose(torch.tensor(a, dtype=getattr(torch, dt)), torch.tensor(b, dtype=getattr(torch, dt)), **kw).tolist(), (dt, kw)

def test_allclose_returns_a_bool_tensor_like_public_tinygrad():
  r = Tensor([1.0, 2.0]).allclose(Tensor([1.0, 2.0 + 1e-7]))   # a scalar bool Tensor, as public tinygrad's
  assert isinstance(r, Tensor) and r.shape == () and r.dtype == dtypes.bool
  assert r.item() is True and Tensor([1.0, 2.0]).allclose(Tensor([1.0, 2.1])).item() is False
  assert Tensor([math.nan]).allclose(Tensor([math.nan])).item() is False and Tensor([math.nan]).allclose(Tensor([math.nan]), equal_nan=True).item() is True
  assert Tensor.zeros(0).allclose(Tensor.zeros(0)).item() is True

# ---- cumulative: logcumsumexp, cummax, cummin ----
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape,axis", [((0,), 0), ((1,), 0), ((5,), 0), ((3, 7), 1), ((4, 3, 2), -3), ((2, 0), 0)])
def test_logcumsumexp_matches_torch(shape, axis, dev):
  check_fwd_bwd(lambda t: t.logcumsumexp(axis), lambda p: torch.logcumsumexp(p, axis), rnd(*shape) * 3, dev=dev)

def test_logcumsumexp_is_stable_for_large_values_and_long_axes():
  # a later large value must not flush the earlier small prefixes (one global max would give -inf there)
  x = np.array([0.0, 1000.0, -1000.0, 1000.0, -math.inf], dtype=np.float32)
  close(Tensor(x).logcumsumexp().numpy(), torch.logcumsumexp(torch.tensor(x), 0).numpy(), atol=0, rtol=1e-6)
  assert Tensor([-math.inf, -math.inf, 2.0]).logcumsumexp().tolist()[:2] == [-math.inf, -math.inf]
  y = rnd(2, 1000, seed=4) * 50   # more than one block of 256
  check_fwd_bwd(lambda t: t.logcumsumexp(1), lambda p: torch.logcumsumexp(p, 1), y, atol=1e-4, rtol=1e-5)
  assert Tensor(3.0).logcumsumexp().item() == 3.0 and Tensor([1, 2], dtype=dtypes.int32).logcumsumexp().dtype == dtypes.float32

@pytest.mark.parametrize("n", [10, 300])
def test_logcumsumexp_gradient_beside_plus_inf(n):
  # a prefix with +inf went through e**(inf - 0): the infinity's gradient inf/inf = NaN and, past 256 elements, that
  # block's total of +inf passed the NaN to every element of the block (torch: NaN at the infinity only). The finite
  # elements' gradients are torch's; the infinity's is the limit, the running max's (1 per output it tops)
  x = rnd(n, seed=7).astype(np.float32)
  x[n // 2] = math.inf
  t, tt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  w = rnd(n, seed=8).astype(np.float32)
  (t.logcumsumexp(0) * Tensor(w)).sum().backward()
  (tt.logcumsumexp(0) * torch.tensor(w)).sum().backward()
  fin = np.isfinite(x)
  close(t.grad.numpy()[fin], tt.grad.numpy()[fin], atol=1e-5, rtol=1e-4)
  np.testing.assert_allclose(t.grad.numpy()[n // 2], w[n // 2:].sum(), rtol=1e-5)

@pytest.mark.parametrize("dt,tdt", [(dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16)])
def test_logcumsumexp_half_rounds_once(dt, tdt):
  # torch's opmath: computed in float32 and rounded once to the half type; computed in half, a third of the prefixes of
  # values near 1 were off by ulps
  x = torch.tensor(1 + rnd(50, 9, seed=2) * 0.1).to(tdt)
  out = Tensor(x.float().numpy()).cast(dt).logcumsumexp(1)
  assert out.dtype == dt
  np.testing.assert_array_equal(out.cast(dtypes.float32).numpy(), x.float().logcumsumexp(1).to(tdt).float().numpy())

@pytest.mark.parametrize("dt,tdt", [(dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16)])
def test_std_half_rounds_once(dt, tdt):
  # torch's: the float32 variance's square root rounded once; the variance rounded to the half type first was 1 ulp off
  # in about one of eight rows
  x = torch.tensor(1 + rnd(64, 13, seed=3) * 0.1).to(tdt)
  for correction in (0, 1):
    out = Tensor(x.float().numpy()).cast(dt).std(1, correction=correction)
    assert out.dtype == dt
    np.testing.assert_array_equal(out.cast(dtypes.float32).numpy(), x.float().std(1, correction=correction).to(tdt).float().numpy())

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("shape,axis", [((0,), 0), ((1,), 0), ((7,), 0), ((3, 5), 1), ((4, 3), 0)])
def test_cummax_cummin_return_values_and_indices_like_torch(op, shape, axis, dev):
  x = np.round(rnd(*shape, seed=5) * 2)   # rounded: ties, where torch picks the last position
  v, i = getattr(Tensor(x, device=dev), op)(axis)
  rv, ri = getattr(torch, op)(torch.tensor(x), axis)
  close(v.numpy(), rv.numpy(), 0, 0)
  assert i.dtype == dtypes.int32 and i.tolist() == ri.tolist()
  check_fwd_bwd(lambda t: getattr(t, op)(axis)[0], lambda p: getattr(torch, op)(p, axis)[0], rnd(*shape, seed=6), dev=dev)

def test_cummax_cummin_of_ints_and_scalars():
  x = np.array([3, -1, 4, 4, -5, 9, 2], dtype=np.int32)
  for op in ("cummax", "cummin"):
    v, i = getattr(Tensor(x), op)()
    rv, ri = getattr(torch, op)(torch.tensor(x), 0)
    assert v.tolist() == rv.tolist() and i.tolist() == ri.tolist() and v.dtype == dtypes.int32
  v, i = Tensor(2.5).cummin()
  assert v.item() == 2.5 and i.item() == 0 and i.shape == ()

@pytest.mark.parametrize("n", [15, 16, 17, 31, 32, 33, 63, 65, 300, 1025])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax"])
@pytest.mark.parametrize("blocked", [True, False])
def test_running_ops_across_block_edges_match_torch(op, n, blocked, monkeypatch):
  # cumsum/cumprod/cummax scan blocks (32 / 16 elements) and add the scan of the block totals: lengths around and past
  # the edges, forward and backward, and ints (exact) for the sum; inf and NaN stay where torch has them. (A small scan
  # is one window over the whole axis unless blocked is forced)
  import tinygrad.mixin.reduce as red
  monkeypatch.setattr(red, "CUM_WORK", 0 if blocked else red.CUM_WORK)
  x = rnd(3, n, seed=n, lo=0.5, hi=1.5) if op == "cumprod" else rnd(3, n, seed=n)
  fn = (lambda t: t.cummax(1)[0]) if op == "cummax" else (lambda t: getattr(t, op)(1))
  tfn = (lambda p: p.cummax(1)[0]) if op == "cummax" else (lambda p: getattr(torch, op)(p, 1))
  check_fwd_bwd(fn, tfn, x, atol=1e-4, rtol=1e-4)
  xi = np.random.default_rng(n).integers(-1000, 1000, (3, n)).astype(np.int32)
  if op != "cumprod": assert fn(Tensor(xi)).tolist() == tfn(torch.tensor(xi)).tolist()
  y = x.copy()
  y[0, n // 2], y[1, n - 1], y[2, 0] = np.inf, np.nan, -np.inf
  np.testing.assert_allclose(fn(Tensor(y)).numpy(), tfn(torch.tensor(y)).numpy(), rtol=1e-5, atol=1e-5)

@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(["cumsum", "cumprod", "cummax"]), st.sampled_from([np.float32, np.int32, np.float16, np.bool_]), st.booleans())
def test_running_ops_random_shapes_match_torch(data, op, dt, blocked):
  # random shapes (sizes 0 and 1 included), one window or blocks: the pads take the op's identity (0, 1, the dtype's
  # minimum), which shows in the result where it is wrong (a max of negative ints, a product)
  import tinygrad.mixin.reduce as red
  ndim = data.draw(st.integers(1, 3))
  shape = list(data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
  axis = data.draw(st.integers(-ndim, ndim - 1))
  shape[axis] = data.draw(st.sampled_from([0, 1, 2, 5, 16, 17, 40]))
  x = np.random.default_rng(data.draw(st.integers(0, 2**16))).integers(-2, 3, shape).astype(dt)
  old = red.CUM_WORK
  red.CUM_WORK = 0 if blocked else old
  try:
    if op == "cummax":
      (v, i), (tv, ti) = Tensor(x).cummax(axis), torch.tensor(x).cummax(axis)
      assert v.dtype == Tensor(x).dtype and i.tolist() == ti.tolist()
    else: v, tv = getattr(Tensor(x), op)(axis), getattr(torch, op)(torch.tensor(x), axis)
    assert v.shape == tuple(tv.shape)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
  finally: red.CUM_WORK = old

def test_running_ops_cost_a_block_per_element():
  # each block's scan reduces every prefix of it whole: blocks of 256 cost 790 (int: 3412) operations per element of a
  # 64x1000 cumsum, 100-200 ms for 1000x1000; blocks of 32 / 16 cost under 100 (~1 ms)
  from tinygrad import GlobalCounters
  x = Tensor(rnd(64, 1000)).realize()
  for f in (lambda t: t.cumsum(1), lambda t: t.cast(dtypes.int32).cumsum(1), lambda t: t.cumprod(1), lambda t: t.cummax(1)[0]):
    GlobalCounters.reset()
    f(x).realize()
    assert GlobalCounters.global_ops / x.numel() < 100, GlobalCounters.global_ops / x.numel()
  # (logcumsumexp's blocks shift each prefix by its own running max: ~B exps per element; 256 cost 9484 operations)
  GlobalCounters.reset()
  x.logcumsumexp(1).realize()
  assert GlobalCounters.global_ops / x.numel() < 1500, GlobalCounters.global_ops / x.numel()

def test_running_ops_of_an_arange_cost_a_block_per_element():
  # an arange (a count of ones) inlined into a scan's window stayed a loop over its whole length per read: cummax's indices
  # (a running max of arange where x is at its max) of a (2, 100003) tensor took 71 s, arange(n).cumsum() n**2 operations
  from tinygrad import GlobalCounters
  n = 5003
  x = Tensor(rnd(2, n)).realize()
  for f in (lambda: x.cummax(1)[1], lambda: x.cummin(1)[1], lambda: Tensor.arange(n).cumsum(0), lambda: Tensor.arange(n).cummax(0)[0]):
    GlobalCounters.reset()
    f().realize()
    assert GlobalCounters.global_ops / n < 1000, GlobalCounters.global_ops / n
  ref = torch.tensor(x.numpy()).cummax(1)
  assert x.cummax(1)[1].tolist() == ref.indices.tolist() and Tensor.arange(n).cumsum(0).tolist() == np.arange(n).cumsum().tolist()

def test_windows_and_pads_of_an_arange_cost_a_few_operations_per_element():
  # an arange (a count of ones the simplifier folds into its index) inlined under a PAD stayed a loop of its length per read:
  # conv2d / max_pool2d of a 512x512 arange ran 43 s / 35 s, a padded arange's cumsum 7 s (n**2 operations); the scheduler
  # realizes such a reduce first now, where sort, cummax, logcumsumexp and argmax each realized their input
  from tinygrad import GlobalCounters
  n = 64
  img = lambda: Tensor.arange(n * n).float().reshape(1, 1, n, n)
  ref = torch.arange(n * n).float().reshape(1, 1, n, n)
  w = np.random.default_rng(0).standard_normal((2, 1, 3, 3)).astype(np.float32)
  for f, tf in ((lambda: img().conv2d(Tensor(w), padding=1), lambda: torch.nn.functional.conv2d(ref, torch.tensor(w), padding=1)),
                (lambda: img().max_pool2d(3, padding=1, stride=1), lambda: torch.nn.functional.max_pool2d(ref, 3, padding=1, stride=1)),
                (lambda: Tensor.arange(n * n).float().pad((5, 5)).cumsum(0), lambda: torch.nn.functional.pad(torch.arange(n * n).float(), (5, 5)).cumsum(0)),
                (lambda: Tensor.arange(n * n).pad((0, 6), value=-1).reshape(-1, 7).max(1), lambda: torch.nn.functional.pad(torch.arange(n * n), (0, 6), value=-1).reshape(-1, 7).max(1).values)):
    GlobalCounters.reset()
    out = f().realize()
    assert GlobalCounters.global_ops / (n * n) < 200, GlobalCounters.global_ops / (n * n)
    np.testing.assert_allclose(out.numpy(), tf().numpy(), rtol=1e-5)

def test_argmax_of_a_long_axis_costs_a_few_operations_per_element():
  # a reduce over a length no chunk size divides (100003) is padded to whole chunks; argmax's arange under the pad's gate kept
  # its count of ones, 65536 operations per element (2x100003 argmax/argmin: 5-7 s in every dtype)
  from tinygrad import GlobalCounters
  n = 100003
  a = np.random.default_rng(0).integers(-50, 50, (2, n)).astype(np.float32)
  a[1, 7] = np.nan
  for f, tf in ((lambda t: t.argmax(1), lambda p: p.argmax(1)), (lambda t: t.half().argmin(1), lambda p: p.half().argmin(1)),
                (lambda t: Tensor.arange(n).max(), lambda p: torch.arange(n).max())):
    GlobalCounters.reset()
    out = f(Tensor(a)).realize()
    assert GlobalCounters.global_ops / n < 100, GlobalCounters.global_ops / n
    assert out.tolist() == tf(torch.tensor(a)).tolist()

def test_sort_and_logcumsumexp_of_an_arange_cost_a_few_operations_per_element():
  # an arange under the bitonic network's or logcumsumexp's blocks' pad kept its count of ones per read:
  # (-arange(100003)).sort() took 90 s (3e6 operations per element), logcumsumexp 488744 per element
  from tinygrad import GlobalCounters
  n, m = 5003, 1027   # (m: the bitonic network's first length, past its rank sort's 1024)
  for f, want, most, k in ((lambda: (-Tensor.arange(m)).sort()[0], np.sort(-np.arange(m)), 20000, m),
                           (lambda: (Tensor.arange(n).float() / n).logcumsumexp(0), torch.logcumsumexp(torch.arange(n).float() / n, 0).numpy(), 2000, n)):
    GlobalCounters.reset()
    out = f().realize()
    assert GlobalCounters.global_ops / k < most, GlobalCounters.global_ops / k
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)

# ---- diag, diagonal ----
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("n,k", [(0, 0), (1, 0), (3, 0), (3, 1), (4, -2)])
def test_diag_of_a_vector_matches_torch(n, k, dev):
  check_fwd_bwd(lambda t: t.diag(k), lambda p: torch.diag(p, k), rnd(n), dev=dev)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape,k", [((3, 4), 0), ((3, 4), 2), ((4, 3), -1), ((3, 3), 5), ((1, 1), 0), ((0, 3), 0)])
def test_diag_of_a_matrix_matches_torch(shape, k, dev):
  check_fwd_bwd(lambda t: t.diag(k), lambda p: torch.diag(p, k), rnd(*shape), dev=dev)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape,args", [((3, 4), (0, 0, 1)), ((2, 3, 4), (1, 1, 2)), ((2, 3, 4), (-1, 2, 0)), ((4, 2, 3), (0, -1, 0)),
                                        ((2, 5, 3), (-4, 1, 2)), ((2, 0, 3), (0, 0, 2)), ((1, 1, 1), (0, 2, 1))])
def test_diagonal_matches_torch(shape, args, dev):
  check_fwd_bwd(lambda t: t.diagonal(*args), lambda p: torch.diagonal(p, *args), rnd(*shape), dev=dev)

def test_diag_and_diagonal_reject_bad_input():
  with pytest.raises(ValueError, match="1-D or 2-D"): Tensor.ones(2, 2, 2).diag()
  with pytest.raises(RuntimeError, match="same dimension"): Tensor.ones(2, 2).diagonal(0, 1, -1)
  with pytest.raises(IndexError): Tensor.ones(2, 2).diagonal(0, 0, 2)

# ---- einsum ----
EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 2)]), ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(4, 4)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 1)]), ("i,j->ij", [(3,), (2,)]), ("i,i->", [(5,), (5,)]), ("ij->", [(2, 3)]),
           ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("...ii->...i", [(2, 3, 3)]), ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),
           ("ijk,kj->i", [(2, 3, 4), (4, 3)]), ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]), ("iij->j", [(3, 3, 2)]), ("...->", [(2, 3)]),
           ("i j , j k -> k i", [(2, 3), (3, 4)]), ("Ab,bA->A", [(3, 2), (2, 3)]), ("ij,kl->", [(0, 2), (3, 1)]), ("i,i->i", [(1,), (4,)])]
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("formula,shapes", EINSUMS, ids=[f for f, _ in EINSUMS])
def test_einsum_matches_torch(formula, shapes, dev):
  arrays = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
  check_fwd_bwd(lambda *ts: Tensor.einsum(formula, *ts), lambda *ps: torch.einsum(formula, *ps), *arrays, dev=dev)

def test_einsum_takes_a_list_and_a_dtype():
  a, b = Tensor([[1, 2], [3, 4]], dtype=dtypes.int8), Tensor([[100, 100], [100, 100]], dtype=dtypes.int8)
  assert Tensor.einsum("ij,jk->ik", [a, b], dtype=dtypes.int32).tolist() == [[300, 300], [700, 700]]
  assert Tensor.einsum("ij,ij->", Tensor([[1, 2], [3, 4]]), Tensor([[5, 6], [7, 8]])).item() == 70

@pytest.mark.parametrize("formula,shapes,torch_dt", [("ij,jk->ik", [(2, 3), (3, 2)], None), ("ij,ij->", [(2, 3), (2, 3)], None),
                                                   ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)], None), ("ij->", [(2, 3)], torch.int64),
                                                   ("i,j->", [(3,), (2,)], torch.int64), ("ii->i", [(3, 3)], None)])
@pytest.mark.parametrize("dt", [torch.int32, torch.int8, torch.uint8])
def test_einsum_of_ints_keeps_a_contractions_dtype_as_torch(formula, shapes, torch_dt, dt):
  # a contraction is torch's bmm, in the operands' dtype (as our a @ b): "ij,jk->ik" of int32 returned int64 (its sum's);
  # a subscript summed within one operand is a sum, int64 in torch and here; int8 products wrap as torch's
  ops = [torch.randint(0, 100, s, generator=torch.Generator().manual_seed(i)).to(dt) for i, s in enumerate(shapes)]
  got, want = Tensor.einsum(formula, *[Tensor(o.numpy()) for o in ops]).numpy(), torch.einsum(formula, *ops)
  assert str(got.dtype) == str((torch_dt or dt)).removeprefix("torch.") and (got == want.numpy()).all()

@pytest.mark.parametrize("formula,shapes,match", [
  ("ij,jk->ik", [(2, 3)], "names 2 operands but 1"), ("ij->ik", [(2, 3)], "not in any input"), ("ij->ii", [(2, 2)], "repeats"),
  ("ij", [(2, 3, 4)], "has 3 dims"), ("ijk", [(2, 3)], "has 2 dims"), ("i1", [(2, 3)], "only letters"), ("i..j", [(2, 3)], "only letters"),
  ("ij,jk->ik", [(2, 3), (4, 5)], "sizes 3 and 4"), ("ii", [(2, 3)], "sizes 2 and 3"), ("ij->i->j", [(2, 3)], "more than one"),
  ("...i,...i", [(2, 3), (4, 3)], "sizes 2 and 4")])
def test_einsum_rejects_malformed_formulas(formula, shapes, match):
  with pytest.raises(ValueError, match=match): Tensor.einsum(formula, *[Tensor.ones(*s) for s in shapes])
  with pytest.raises(ValueError, match="at least one operand"): Tensor.einsum("")

@settings(max_examples=25)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2), st.booleans())
def test_einsum_agrees_with_numpy_on_random_contractions(i, j, k, drop, implicit):
  # a random contraction of two operands over shared and private letters
  a, b = rnd(i, j, seed=i), rnd(j, k, seed=k)
  out = ["ik", "i", ""][drop]
  f = "ij,jk" + ("" if implicit else "->" + out)
  close(Tensor.einsum(f, Tensor(a), Tensor(b)).numpy(), np.einsum(f, a, b), atol=1e-5)

# ---- qr, svd: by reconstruction and orthogonality (signs are free) ----
def orthonormal(m, atol): close(np.swapaxes(m, -1, -2) @ m, np.broadcast_to(np.eye(m.shape[-1]), m.shape[:-2] + (m.shape[-1],) * 2), atol=atol)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (2, 3), (4, 4), (2, 3, 2), (3, 0)])
def test_qr_reconstructs_with_orthogonal_q_and_triangular_r(shape, dev):
  if dev == "PYTHON" and np.prod(shape) > 8: pytest.skip("the interpreter is slow: small shapes only")
  a = rnd(*shape, seed=1)
  q, r = Tensor(a, device=dev).qr()
  q, r = q.numpy(), r.numpy()
  m, n = shape[-2:]
  assert q.shape == shape[:-2] + (m, m) and r.shape == shape
  orthonormal(q, 1e-5)
  close(q @ r, a, atol=1e-5)
  assert np.all(np.tril(r, -1) == 0)
  close(np.abs(np.diagonal(r, 0, -2, -1)), np.abs(np.diagonal(np.linalg.qr(a, mode="complete")[1], 0, -2, -1)), atol=1e-5)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape,full", [((1, 1), True), ((3, 2), True), ((3, 2), False), ((2, 3), True), ((2, 3), False), ((5, 5), True),
                                        ((2, 4, 3), False), ((1, 6), True), ((3, 0), True), ((3, 0), False)])
def test_svd_reconstructs_with_orthogonal_factors_and_sorted_values(shape, full, dev):
  if dev == "PYTHON" and np.prod(shape) > 6: pytest.skip("the interpreter is slow: small shapes only")
  a = rnd(*shape, seed=2)
  u, s, vh = (x.numpy() for x in Tensor(a, device=dev).svd(full_matrices=full))
  m, n = shape[-2:]
  k = min(m, n)
  assert u.shape == shape[:-2] + ((m, m) if full else (m, k)) and s.shape == shape[:-2] + (k,) and vh.shape == shape[:-2] + ((n, n) if full else (k, n))
  close(s, np.linalg.svd(a, compute_uv=False), atol=1e-5)
  assert np.all(np.diff(s, axis=-1) <= 0)
  orthonormal(u, 1e-5)
  orthonormal(np.swapaxes(vh, -1, -2), 1e-5)
  close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-5)

def test_svd_of_a_rank_deficient_matrix_keeps_orthogonal_factors():
  a = rnd(6, 4, seed=3)
  a[:, 3], a[:, 2] = a[:, 0], 0   # rank 2: two singular values are 0
  u, s, vh = (x.numpy() for x in Tensor(a).svd())
  close(s, np.linalg.svd(a, compute_uv=False), atol=1e-5)
  orthonormal(u, 1e-5)
  orthonormal(vh.T, 1e-5)
  close(u[:, :4] * s @ vh, a, atol=1e-5)

def test_svd_passes_no_gradient_to_its_input():
  # svd realizes its Jacobi sweeps one at a time, which backward cannot go through (docs/guide.md): its input gets no
  # gradient from it, where the scaling to max |a| = 1 alone gave S a wrong one (and backward walked the sweeps' graphs:
  # U's and Vh's ran out of memory)
  a = rnd(4, 3, seed=5)
  for i in range(3):
    t = Tensor(a, requires_grad=True)
    (t.svd()[i].sum() + t.sum()).backward()
    close(t.grad.numpy(), np.ones(a.shape), atol=0)

@pytest.mark.parametrize("scale", [1e30, 1e20, 1e-20, 1e-30])
def test_qr_and_svd_of_very_large_and_small_matrices(scale):
  # the squared column norms overflowed float32 at 1e20 and underflowed at 1e-20: Q, R, U, S, Vh came back NaN or wrong
  a = (rnd(4, 3, seed=5) * scale).astype(np.float32)
  q, r = (x.numpy() for x in Tensor(a).qr())
  orthonormal(q, 1e-5)
  close(q @ r / scale, a / scale, atol=1e-5)
  u, s, vh = (x.numpy() for x in Tensor(a).svd())
  close(s / scale, np.linalg.svd(a.astype(np.float64), compute_uv=False) / scale, atol=1e-5)
  orthonormal(u, 1e-5)
  orthonormal(vh.T, 1e-5)
  close(u[:, :3] * s @ vh / scale, a / scale, atol=1e-5)

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16])
def test_svd_keeps_the_half_dtype(dt):
  # U, S, Vh of a float16/bfloat16 matrix came back float32 (qr's Q, R kept the dtype; public tinygrad keeps it for both)
  a = Tensor(rnd(4, 3, seed=6)).cast(dt)
  u, s, vh = a.svd()
  assert (u.dtype, s.dtype, vh.dtype) == (dt, dt, dt)
  close(s.float().numpy(), np.linalg.svd(a.float().numpy(), compute_uv=False), atol=3e-2, rtol=3e-2)

def test_qr_and_svd_reject_vectors():
  with pytest.raises(ValueError, match="matrix"): Tensor.ones(3).qr()
  with pytest.raises(ValueError, match="matrix"): Tensor.ones(3).svd()

# ---- misc Tensor methods ----
@pytest.mark.parametrize("dev", DEVS)
def test_to_moves_in_place_with_grad_and_graph(dev):
  other = "PYTHON" if dev == "CPU" else "CPU"
  x = Tensor([1.0, 2.0], device=dev, requires_grad=True)
  y = (x * 2).realize()
  assert y.to_(other) is y and y.device == other and y.tolist() == [2.0, 4.0]
  y.sum().backward()
  assert x.grad.tolist() == [2.0, 2.0]   # backward after the move still reaches y's inputs
  w = Tensor([1.0, 2.0], device=dev, requires_grad=True).realize()
  w.grad = Tensor([1.0, 1.0], device=dev)
  w.to_(other)
  assert w.grad.device == other and w.to_(other) is w
  (w * 3).sum().backward()
  assert w.grad.tolist() == [4.0, 4.0] and w.grad.device == other

def test_to_of_a_view_stops_writing_into_its_base():
  base = Tensor([1.0, 2.0, 3.0], device="CPU").realize()
  v = base[1:]
  v.to_("PYTHON")
  v.assign(Tensor([7.0, 8.0], device="PYTHON"))
  assert base.tolist() == [1.0, 2.0, 3.0] and v.tolist() == [7.0, 8.0]

@pytest.mark.parametrize("src", ["slice", "empty", "lazy"])
@pytest.mark.parametrize("use", ["pad", "cat", "setitem"])
def test_an_empty_copy_to_another_device_joins_a_kernel(src, use):
  # the empty copy's source has nothing to compute (no kernel): the COPY waited for it and the schedule raised "cannot order"
  x = Tensor([[1.0], [2.0]]).realize()
  e = {"slice": x[0:0], "empty": Tensor.empty(0, 1), "lazy": (x + 1)[1:1]}[src].to("PYTHON")
  if use == "pad": assert e.pad(((1, 1), (0, 0))).tolist() == [[0.0], [0.0]]
  elif use == "cat": assert e.cat(Tensor([[3.0]], device="PYTHON")).tolist() == [[3.0]]
  else:
    p = e.pad(((2, 0), (0, 0)))
    p[0:1] = p[1:2] + 5
    x.assign(x * 2)   # (p's pending write reads the copy of x)
    assert p.tolist() == [[5.0], [0.0]] and x.tolist() == [[2.0], [4.0]]

def test_is_param_marks_what_an_optimizer_trains():
  from tinygrad.nn.optim import SGD
  w, buf = Tensor([1.0, 2.0]), Tensor([5.0, 5.0]).is_param_(False)
  assert w.is_param and not buf.is_param and buf.requires_grad is False
  opt = SGD([w, buf], lr=0.5)
  assert opt.params == [w] and opt.buffers == [buf]
  (w * buf).sum().backward()
  opt.step()
  assert w.tolist() == [-1.5, -0.5] and buf.tolist() == [5.0, 5.0]
  t = Tensor([3.0])
  t.is_param = False
  assert t.requires_grad is False and t.is_param_() is t and t.requires_grad is True

def test_size_is_torchs():
  t = Tensor.ones(2, 3, 0)
  assert t.size() == (2, 3, 0) == tuple(torch.ones(2, 3, 0).size()) and t.size(1) == 3 and t.size(-3) == 2 and Tensor(1.0).size() == ()
  with pytest.raises(IndexError): t.size(3)

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_a_numpy_array_is_copied_at_the_call(dev):
  # as torch.tensor (docs/guide.md): public tinygrad's lazy tensor reads the array when realized, so [99, 1, 2] there
  for a in (np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int64), np.arange(6, dtype=np.int16)[::2], np.array([False, True, True])):
    t, want = Tensor(a, device=dev), a.tolist()
    a[0] = 99
    assert t.tolist() == want

def test_from_blob_copies_host_memory():
  a = np.arange(6, dtype=np.int32)
  t = Tensor.from_blob(a.ctypes.data, (2, 3), dtype=dtypes.int32)
  a[0] = 99   # copied at the call: a later write is not seen
  assert t.tolist() == [[0, 1, 2], [3, 4, 5]] and t.dtype == dtypes.int32
  buf = (ctypes.c_float * 4)(1.5, 2.5, 3.5, 4.5)
  assert Tensor.from_blob(ctypes.addressof(buf), 4, device="PYTHON").tolist() == [1.5, 2.5, 3.5, 4.5]
  assert Tensor.from_blob(ctypes.addressof(buf), (0, 2)).shape == (0, 2)
  with pytest.raises(ValueError, match="host address"): Tensor.from_blob(0, (2,))
  with pytest.raises(ValueError, match="invalid shape"): Tensor.from_blob(ctypes.addressof(buf), (-1,))

def test_contiguous_backward_is_identity_forward_and_contiguous_in_the_gradient():
  from tinygrad.uop import Ops
  a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  y = (a * 2).contiguous_backward()
  assert y.tolist() == [2.0, 4.0, 6.0] and len((y + 1).schedule()) == len((a * 2 + 1).schedule()) == 1   # no kernel of its own
  (g,) = (y * y).sum().gradient(a)
  (g0,) = ((a * 2) * (a * 2)).sum().gradient(a)
  assert any(n.op is Ops.CONTIGUOUS for n in g.uop.toposort()) and not any(n.op is Ops.CONTIGUOUS for n in g0.uop.toposort())
  close(g.numpy(), g0.numpy(), 0, 0)
  (y * y).sum().backward()
  assert a.grad.tolist() == [8.0, 16.0, 24.0]
  c = Tensor([1.0, 2.0], requires_grad=True)
  ((c * 3).detach() * c).sum().backward()
  assert c.grad.tolist() == [3.0, 6.0]   # a plain detach still stops the gradient

# ---- reductions over an empty axis ----
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape,axis", [((3, 0, 4), 1), ((0,), None), ((0, 5), 0), ((2, 0), (0, 1))])
def test_empty_axis_reductions_give_the_identity(dev, shape, axis):
  # the reduce stays in the graph (folded by the engine), also over an expanded constant: an inf const summed over no
  # elements is 0, not inf*0 = nan, and its max is -inf, not the constant; prod is 1 on every device (PYTHON gave 0)
  for v in (5.0, math.inf):
    x = Tensor.full(shape, v, device=dev)
    np.testing.assert_array_equal(x.sum(axis).numpy(), np.sum(np.full(shape, v, np.float32), axis=axis))
    np.testing.assert_array_equal(x.prod(axis).numpy(), np.prod(np.full(shape, v, np.float32), axis=axis))
    # max/min over nothing raise, as torch (tests/core/test_numerics.py); the library's internal _max folds to the identity
    assert (x._max(axis).numpy() == -np.inf).all() and ((-x)._max(axis).numpy() == -np.inf).all()
    with pytest.raises(IndexError, match="the axis is empty"): x.min(axis)
  y = Tensor.empty(*shape, dtype=dtypes.int32, device=dev)
  assert (y._max(axis).numpy() == -2**31).all() and (y.sum(axis).numpy() == 0).all()

@pytest.mark.parametrize("shape,axis", [((3, 0, 4), 1), ((0,), None), ((2, 0), 1)])
def test_empty_axis_reduction_gradient_reaches_the_input(shape, axis):
  # torch: the gradient of a reduce over nothing is zeros of the input's shape; it was "does not depend on the target"
  check_fwd_bwd(lambda a: a.sum(axis) * 2, lambda a: a.sum(axis) * 2, np.zeros(shape, np.float32))
  x = Tensor.empty(*shape, requires_grad=True)
  assert x.sum(axis).sum().gradient(x)[0].shape == shape
  big = Tensor.ones(1, 1, 5, 5, requires_grad=True)
  g = big.pad((0, 0, 0, -5), mode="reflect").sum().gradient(big)[0]
  np.testing.assert_array_equal(g.numpy(), torch.zeros(1, 1, 5, 5).numpy())

def test_empty_leaf_gets_an_empty_gradient():
  # torch: an empty leaf in the loss's graph gets an empty .grad (an optimizer step over it then runs); it was None here (an
  # empty tensor has no buffer: a constant, which backward left out), and one not in the graph still gets none
  from tinygrad.nn.optim import SGD
  x, w, unused = Tensor.empty(0, 3, requires_grad=True), Tensor.ones(3, 4, requires_grad=True), Tensor.empty(0, 2, requires_grad=True)
  tx, tw = torch.empty(0, 3, requires_grad=True), torch.ones(3, 4, requires_grad=True)
  (x @ w).sum().backward()
  (tx @ tw).sum().backward()
  close(x.grad.numpy(), tx.grad.numpy(), 0, 0)
  close(w.grad.numpy(), tw.grad.numpy(), 0, 0)
  assert x.grad.shape == (0, 3) and unused.grad is None
  SGD([x, w], lr=0.1).step()
  assert x.shape == (0, 3) and (w.numpy() == 1).all()

# ---- linspace ----
@settings(max_examples=40, deadline=None)
@given(start=st.one_of(st.integers(-50, 50), st.floats(-50, 50, width=32)), stop=st.one_of(st.integers(-50, 50), st.floats(-50, 50, width=32)),
       steps=st.integers(0, 40), dt=st.sampled_from([("float32", 1e-5), ("int32", 1), ("int64", 1), ("float16", 2e-2)]))
def test_linspace_matches_torch(start, stop, steps, dt):
  # ints: truncated from float values that torch computes from both ends (ours from the start), so an exact half-step may
  # truncate one apart; torch also makes int endpoints of an int dtype's (public tinygrad does not)
  name, atol = dt
  if name.startswith("int"): start, stop = int(start), int(stop)
  want = torch.linspace(start, stop, steps, dtype=getattr(torch, name)).numpy()
  # (torch's float16 linspace steps in float16: linspace(36, -38, 36)[17] is 0.03125 where the value is 0.0571; ours rounds
  # the float32 value once, so float16 is compared with the exact values)
  if name == "float16": want = np.linspace(float(start), float(stop), steps).astype(np.float16)
  got = Tensor.linspace(start, stop, steps, dtype=name, device="CPU")
  assert got.dtype == getattr(dtypes, name) and got.shape == want.shape
  close(got.numpy(), want, atol=atol, rtol=0 if name.startswith("int") else atol)

@pytest.mark.parametrize("args,kw", [((5, 10, 3), {"dtype": "bool"}), ((1, 2, -1), {})])
def test_linspace_errors_are_torchs(args, kw):
  with pytest.raises(RuntimeError): torch.linspace(*args, **{k: getattr(torch, v) for k, v in kw.items()})
  with pytest.raises(RuntimeError): Tensor.linspace(*args, **kw)

# ---- pow at the edges, forward and backward ----
POW_EDGES = [-math.inf, -2.0, -0.0, 0.0, 0.5, 1.0, 2.5, math.inf, math.nan]
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("c", [-2.5, -1, -0.7, 0, 0.3, 0.5, 1, 2, 3.3])
def test_pow_const_exponent_edges_like_torch(dev, c):
  # torch's gradient c * x**(c-1) (0 for c == 0): finite where the exp2/log2 graph gave nan (x = 0, -inf) and present
  # for x**0 (it was "does not depend on the target")
  x = np.array(POW_EDGES, np.float32)
  t, p = Tensor(x, device=dev, requires_grad=True), torch.tensor(x, requires_grad=True)
  out, ref = t ** c, p ** c
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, equal_nan=True)
  out.sum().backward()
  ref.sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), p.grad.numpy(), rtol=1e-5, equal_nan=True)

@pytest.mark.parametrize("dev", DEVS)
def test_pow_tensor_exponent_edges_like_torch(dev):
  b = np.array([0, 0, 0, 1, 2, -2, -2, 0.5, 3, np.inf, -np.inf, 0, 1], np.float32)
  e = np.array([0, 2, -1, np.nan, 0.5, 2, 0.5, -3, 0, 1.5, 2, 0.5, -np.inf], np.float32)
  tb, te = Tensor(b, device=dev, requires_grad=True), Tensor(e, device=dev, requires_grad=True)
  pb, pe = torch.tensor(b, requires_grad=True), torch.tensor(e, requires_grad=True)
  out, ref = tb ** te, pb ** pe
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, equal_nan=True)
  out.sum().backward()
  ref.sum().backward()
  np.testing.assert_allclose(tb.grad.numpy(), pb.grad.numpy(), rtol=1e-5, equal_nan=True)
  np.testing.assert_allclose(te.grad.numpy(), pe.grad.numpy(), rtol=1e-5, equal_nan=True)

# ---- argmax/argmin of a 0-d tensor along its axis 0/-1: torch's 0 (it read shape[0] of shape () and raised IndexError) ----
@pytest.mark.parametrize("v", [3.0, float("nan"), -float("inf")])
def test_argmax_argmin_of_a_0d_tensor_along_an_axis(v):
  for fn in ("argmax", "argmin"):
    for ax, kd in [(0, False), (-1, False), (0, True)]:
      got, want = getattr(Tensor(v), fn)(ax, keepdim=kd), getattr(torch.tensor(v), fn)(ax, keepdim=kd)
      assert got.shape == tuple(want.shape) == () and got.item() == want.item() == 0
  with pytest.raises(IndexError, match="out of range"): Tensor(3.0).argmax(1)
