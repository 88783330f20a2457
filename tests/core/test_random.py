"""Random numbers: threefry2x32 run as kernels on the tensor's device, a per-device counter that TinyJit replays advance,
manual_seed reproducibility across devices, and the distributions (chi-squared / moments against fixed critical values)."""
import math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, TinyJit, dtypes, nn
from tinygrad.uop import Ops

DEVICES = ("CPU", "PYTHON")

def chi2_crit(df: int, z: float = 3.719) -> float:
  """Upper critical value of chi-squared with df degrees of freedom at p=1e-4 (z = 3.719), by Wilson-Hilferty (slightly above
  the exact value, e.g. 34.1 vs 33.7 for df=9): no scipy in the venv."""
  return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3

def chi2(counts: np.ndarray, probs: np.ndarray) -> float:
  exp = probs * counts.sum()
  return float(((counts - exp) ** 2 / exp).sum())

def uniform_chi2(x: np.ndarray, bins: int) -> float:
  return chi2(np.histogram(x, bins=bins, range=(0, 1))[0].astype(np.float64), np.full(bins, 1 / bins))

# ---- the block function: Random123's known answers ----
# threefry2x32 with 20 rounds, (ctr0 ctr1 key0 key1 -> out0 out1), from Random123's kat_vectors
# (D. E. Shaw Research, Random123 1.x, examples/kat_vectors; mirrored at github.com/girving/random123/blob/master/examples/kat_vectors)
THREEFRY2X32_20_KAT = [
  ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
  ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
  ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xc4923a9c, 0x483df7a0)),
]

@pytest.mark.parametrize("device", DEVICES)
def test_threefry2x32_20_known_answers(device):
  words = [[v[i] for v, _ in THREEFRY2X32_20_KAT] for i in range(4)]
  x0, x1 = Tensor._threefry2x32(*(Tensor(w, dtype=dtypes.uint32, device=device) for w in words))
  assert list(zip(x0.tolist(), x1.tolist())) == [e for _, e in THREEFRY2X32_20_KAT]

# ---- on the device, as kernels ----
def test_large_rand_is_kernels_only(monkeypatch):
  def no_host(*a, **k): raise AssertionError("random numbers generated on the host with numpy")
  monkeypatch.setattr(np.random, "default_rng", no_host)
  x = Tensor.rand(2**24)
  assert not x._is_realized()   # lazy: nothing generated or uploaded yet
  sched = x.schedule()
  assert len(sched) == 1 and sched[0].ast.op is Ops.SINK   # one kernel, no copy from the host
  assert all(b.arg <= 256 for b in sched[0].bufs[1:])      # its inputs: the digit table and the 3-word state snapshot
  v = x.numpy()
  assert v.min() >= 0 and v.max() < 1 and abs(v.mean() - 0.5) < 1e-3

def test_a_draw_past_one_calls_counter_is_consecutive_calls(monkeypatch):
  # one call's counter is a uint32 per element, so rand of more than 2**32 - 1 elements raised ValueError (public
  # tinygrad draws it: its test schedules rand(2**17, 2**17)); now it is consecutive calls' draws, checked here with the
  # per-call limit made 5: rand(12) is the numbers of rand(5), rand(5), rand(2) from the same seed, 3 counter steps
  import tinygrad.mixin.random as R
  Tensor.manual_seed(3)
  want = np.concatenate([Tensor.rand(n).numpy() for n in (5, 5, 2)])
  monkeypatch.setattr(R, "_DRAW_MAX", 5)
  Tensor.manual_seed(3)
  x = Tensor.rand(3, 4)
  assert Tensor._rng_state(x.device).tolist()[2] == 3
  np.testing.assert_equal(x.numpy().ravel(), want)
  monkeypatch.undo()
  assert len(Tensor.rand(2**17, 2**17, device="NULL").schedule_linear().src) >= 1   # scheduled, never run (NULL)

def test_counter_read_ordered_before_its_write():
  # the snapshot of a realized buffer and an assign to it in one schedule: the read runs first, whatever the argument order
  for flip in (False, True):
    s = Tensor([1, 2, 3], dtype=dtypes.uint32).realize()
    snap = s.contiguous()
    s.assign(s + 10)
    Tensor.realize(*((s, snap) if flip else (snap, s)))
    assert snap.tolist() == [1, 2, 3] and s.tolist() == [11, 12, 13]

def test_counter_advances_once_per_call():
  Tensor.manual_seed(0)
  a, b, c = Tensor.rand(5), Tensor.rand(5), Tensor.randn(3)
  dev = a.device
  assert Tensor._rng_state(dev).tolist() == [0, 0, 3]
  # realizing out of order gives the values of the call order
  cv, bv, av = c.numpy(), b.numpy(), a.numpy()
  Tensor.manual_seed(0)
  np.testing.assert_equal(Tensor.rand(5).numpy(), av)
  np.testing.assert_equal(Tensor.rand(5).numpy(), bv)
  np.testing.assert_equal(Tensor.randn(3).numpy(), cv)

# ---- TinyJit replays draw fresh numbers ----
JITTED = {
  "rand": lambda: Tensor.rand(16).realize(),
  "randn": lambda: Tensor.randn(16).realize(),
  "randint": lambda: Tensor.randint(16, high=1000).realize(),
  "dropout": lambda: Tensor.ones(64).dropout(0.5).realize(),
  "randperm": lambda: Tensor.randperm(12).realize(),
  "multinomial": lambda: Tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).multinomial(6).realize(),
}

@pytest.mark.parametrize("name", list(JITTED))
def test_jit_replays_draw_fresh_numbers(name):
  fn = TinyJit(JITTED[name])
  with Tensor.train():
    outs = [fn().numpy().tobytes() for _ in range(7)]   # call 1 runs, 2 captures, 3..7 replay
  assert fn.cnt == 7 and len(set(outs)) == 7, f"{name}: repeated values across jit calls"

def test_manual_seed_reaches_a_captured_jit():
  fn = TinyJit(lambda: Tensor.rand(8).realize())
  for _ in range(3): fn()
  Tensor.manual_seed(11)
  replayed = [fn().numpy() for _ in range(2)]
  Tensor.manual_seed(11)
  np.testing.assert_equal(replayed[0], Tensor.rand(8).numpy())
  np.testing.assert_equal(replayed[1], Tensor.rand(8).numpy())

# ---- manual_seed reproduces runs, on every device ----
def _draws(device: str) -> list[np.ndarray]:
  return [Tensor.rand(3, 5, device=device).numpy(), Tensor.randn(7, device=device).numpy(),
          Tensor.randint(9, low=-4, high=40, device=device).numpy(), Tensor.rand(4, dtype=dtypes.float64, device=device).numpy(),
          Tensor.randperm(6, device=device).numpy()]

@pytest.mark.parametrize("device", DEVICES)
def test_same_seed_same_tensors(device):
  Tensor.manual_seed(1234)
  a = _draws(device)
  Tensor.manual_seed(1234)
  b = _draws(device)
  for x, y in zip(a, b): np.testing.assert_equal(x, y)
  Tensor.manual_seed(1235)
  c = _draws(device)
  assert not any(np.array_equal(x, y) for x, y in zip(a[:4], c[:4]))
  assert not np.array_equal(a[0], a[0].ravel()[::-1].reshape(a[0].shape))  # draws within a call differ too

def test_same_seed_same_numbers_on_every_device():
  Tensor.manual_seed(7)
  cpu = _draws("CPU")
  Tensor.manual_seed(7)
  py = _draws("PYTHON")
  for i, (x, y) in enumerate(zip(cpu, py)):
    if i == 1: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)   # randn: log/sqrt/cos may differ in the last ulp
    else: np.testing.assert_equal(x, y)

def test_seeds_above_32_bits_use_both_key_words():
  Tensor.manual_seed(5)
  a = Tensor.rand(8).numpy()
  Tensor.manual_seed(5 + 2**32)
  assert not np.array_equal(a, Tensor.rand(8).numpy())

# ---- distributions ----
def test_rand_chi_squared():
  Tensor.manual_seed(100)
  x = Tensor.rand(200_000).numpy()
  assert uniform_chi2(x, 100) < chi2_crit(99)
  # the same test rejects a slightly wrong generator (u**1.02), so the threshold has power
  assert uniform_chi2(x ** 1.02, 100) > chi2_crit(99)
  # pairs of neighbours are independent: a 10x10 grid of (x[2i], x[2i+1])
  g = np.histogram2d(x[0::2], x[1::2], bins=10, range=((0, 1), (0, 1)))[0].ravel()
  assert chi2(g, np.full(100, 0.01)) < chi2_crit(99)

@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64])
def test_rand_stays_in_unit_interval(dtype):
  # a float32 uniform cast to half rounds its top 2**-12 up to 1.0 (bfloat16: 2**-9): 200k draws would hit it ~50 times
  Tensor.manual_seed(3)
  x = Tensor.rand(200_000, dtype=dtype).numpy().astype(np.float64)
  assert x.min() >= 0 and x.max() < 1
  assert uniform_chi2(x, 16) < chi2_crit(15)

@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64])
@pytest.mark.parametrize("low,high", [(0, 1), (-3, 5), (0.1, 0.7), (100, 101)])
def test_uniform_stays_below_high(dtype, low, high):
  # u*(high-low)+low was rounded to dtype, and to high itself for u near 1: uniform(0, 1, dtype=half) gave 1.0 once in 4096
  # draws, float32 (100, 101) gave 101.0 once in 2**18
  Tensor.manual_seed(5)
  x = Tensor.uniform(200_000, low=low, high=high, dtype=dtype)
  x = (x.float() if dtype == dtypes.bfloat16 else x).numpy().astype(np.float64)
  from tinygrad.dtype import truncate_float
  assert x.min() >= truncate_float(low, dtype) and x.max() < high   # (low itself rounded to dtype: 0.1 in half is 0.09998)
  if dtype in (dtypes.float32, dtypes.float64) and high - low < 10: assert abs(x.mean() - (low + high) / 2) < 0.01 * (high - low)
  from tinygrad.mixin.random import _below
  assert _below(1.0, dtypes.float16) == 1 - 2**-11 and _below(1.0, dtypes.bfloat16) == 1 - 2**-8 and _below(0.0, dtypes.float32) == -2.0**-149
  assert _below(0.7, dtypes.float32) == float(np.float32(0.7)) and _below(-1.0, dtypes.float16) == -(1 + 2**-10)

def test_uniform_bounds_out_of_range_raise():
  # (as torch) uniform(0, 1e5, dtype=half) drew inf a third of the time, and float32 (-3e38, 3e38) only 3e38 (its span
  # overflowed float32 to inf and the clamp below high caught every draw)
  from tinygrad.mixin.common import ArgumentError
  for low, high, dt in ((0, 1e5, dtypes.float16), (-3e38, 3e38, dtypes.float32), (0, math.inf, dtypes.float32), (-1e39, 0, dtypes.float32)):
    with pytest.raises(ArgumentError, match="out of range"): Tensor.uniform(4, low=low, high=high, dtype=dt)
  x = Tensor.uniform(10_000, low=-1.7e38, high=1.7e38).numpy()
  assert np.isfinite(x).all() and x.min() < -1e38 and x.max() > 1e38
  assert np.isfinite(Tensor.uniform(1000, low=-65504, high=65504, dtype=dtypes.float16).numpy()).all()
  x = Tensor.uniform(1000, low=-1e300, high=1e300, dtype=dtypes.float64).numpy()
  assert np.isfinite(x).all() and x.min() < -1e299

def test_uniform_int_dtype_is_uniform_on_low_to_high():
  # an int dtype truncated u*(high-low)+low toward 0: uniform(-5, 5, dtype=int32) drew 0 twice as often and -5 never
  # (public tinygrad: uniform on -5..4)
  Tensor.manual_seed(7)
  x = Tensor.uniform(20_000, low=-5, high=5, dtype=dtypes.int32).numpy()
  assert x.min() == -5 and x.max() == 4
  assert chi2(np.bincount(x + 5, minlength=10).astype(np.float64), np.full(10, 0.1)) < chi2_crit(9)
  assert set(Tensor.uniform(1000, low=-1, high=1, dtype=dtypes.int8).tolist()) == {-1, 0}

def test_uniform_float64_uses_the_float64_generator():
  # drawn as float32 and cast, a float64 uniform had float32's grid: (100, 101) took only ~2**17 distinct values
  Tensor.manual_seed(6)
  x = Tensor.uniform(100_000, low=100, high=101, dtype=dtypes.float64).numpy()
  assert len(np.unique(x)) == len(x) and len(np.unique(x.astype(np.float32))) < len(x)

def test_rand_float64_uses_52_bits():
  Tensor.manual_seed(4)
  x = Tensor.rand(4096, dtype=dtypes.float64).numpy()
  frac = x * 2**26 - np.floor(x * 2**26)   # bits below float32's reach are filled
  assert (frac != 0).mean() > 0.99 and len(np.unique(x)) == len(x)

def test_randn_moments():
  Tensor.manual_seed(5)
  n = 200_000
  x = Tensor.randn(n).numpy().astype(np.float64)
  m, v = x.mean(), x.var()
  skew, kurt = ((x - m) ** 3).mean() / v ** 1.5, ((x - m) ** 4).mean() / v ** 2 - 3
  # 5 standard errors each: sqrt(1/n), sqrt(2/n), sqrt(6/n), sqrt(24/n)
  assert abs(m) < 5 * math.sqrt(1 / n) and abs(v - 1) < 5 * math.sqrt(2 / n)
  assert abs(skew) < 5 * math.sqrt(6 / n) and abs(kurt) < 5 * math.sqrt(24 / n), (skew, kurt)
  # the shape, not only the moments: counts in 10 equiprobable bins of the normal law
  edges = np.array([-1.2816, -0.8416, -0.5244, -0.2533, 0.0, 0.2533, 0.5244, 0.8416, 1.2816])
  counts = np.bincount(np.searchsorted(edges, x), minlength=10).astype(np.float64)
  assert chi2(counts, np.full(10, 0.1)) < chi2_crit(9)

@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.bfloat16, dtypes.float64])
def test_randn_other_dtypes(dtype):
  x = Tensor.randn(20_000, dtype=dtype)
  v = x.numpy().astype(np.float64)
  assert x.dtype == dtype and np.isfinite(v).all() and abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05

@pytest.mark.parametrize("low,high", [(0, 10), (-3, 4), (5, 105), (0, 1)])
def test_randint_chi_squared(low, high):
  Tensor.manual_seed(6)
  x = Tensor.randint(100_000, low=low, high=high).numpy()
  assert x.dtype == np.int32 and x.min() >= low and x.max() < high
  if high - low > 1:
    counts = np.bincount(x - low, minlength=high - low).astype(np.float64)
    assert chi2(counts, np.full(high - low, 1 / (high - low))) < chi2_crit(high - low - 1)

@pytest.mark.parametrize("low,high,dtype", [(-2**31, 2**31 - 1, dtypes.int32), (0, 2**32, dtypes.uint32),
                                            (-2**40, 2**40, dtypes.int64), (0, 2**64 - 1, dtypes.uint64), (-100, 100, dtypes.int8)])
def test_randint_wide_ranges(low, high, dtype):
  x = Tensor.randint(50_000, low=low, high=high, dtype=dtype).numpy()
  assert x.dtype == np.dtype(dtype.fmt) and int(x.min()) >= low and int(x.max()) < high
  # the top bits are uniform: 16 equal slices of the range
  slot = ((x.astype(object) - low) * 16 // (high - low)).astype(np.int64)
  r = high - low   # a small range splits into unequal slices: their exact sizes
  probs = np.bincount(np.arange(r) * 16 // r, minlength=16) / r if r < 2**20 else np.full(16, 1 / 16)
  assert chi2(np.bincount(slot, minlength=16).astype(np.float64), probs) < chi2_crit(15)

@given(st.integers(-1000, 1000), st.integers(1, 2000))
@settings(max_examples=8)
def test_randint_in_range(low, span):
  x = Tensor.randint(257, low=low, high=low + span).numpy()
  assert x.min() >= low and x.max() < low + span

def test_randint_errors():
  with pytest.raises(ValueError, match="greater than low"): Tensor.randint(3, low=5, high=5)
  with pytest.raises(ValueError, match="does not fit int8"): Tensor.randint(3, low=0, high=300, dtype=dtypes.int8)
  with pytest.raises(ValueError, match="needs an int dtype"): Tensor.randint(3, dtype=dtypes.float32)
  with pytest.raises(TypeError, match="needs an int dtype"): Tensor.randint(3, dtype="float")   # (public tinygrad's TypeError)
  with pytest.raises(ValueError, match="needs a float dtype"): Tensor.rand(3, dtype=dtypes.int32)
  assert Tensor.randint(5, low=-2, high=5, dtype="int32").dtype == dtypes.int32

@pytest.mark.parametrize("low,high", [(5.0, 3.0), (1.0, 1.0), (0.0, float("nan"))])
def test_uniform_needs_low_below_high(low, high):
  # (it drew values in [high, low) or the constant low; torch and public tinygrad raise)
  with pytest.raises(ValueError, match="less than high"): Tensor.uniform(3, 4, low=low, high=high)
  with pytest.raises(RuntimeError, match="less than high"): Tensor.uniform(3, 4, low=low, high=high)

def test_a_negative_size_is_a_shape_error_before_the_bounds_are_checked():
  # glorot/kaiming compute their bound or std from the shape: of a negative size it is complex, which the low < high and
  # std >= 0 checks must not meet first (TypeError: '<' not supported between complex)
  for fn in (Tensor.uniform, Tensor.normal, Tensor.scaled_uniform, Tensor.glorot_uniform, Tensor.kaiming_uniform, Tensor.kaiming_normal):
    with pytest.raises(ValueError): fn(2, -3)

def test_initialisers_of_an_empty_shape():
  # a 0 in the shape made the fan 0: ZeroDivisionError; torch initialises an empty tensor as a no-op
  for fn, sh in ((Tensor.kaiming_uniform, (3, 0)), (Tensor.kaiming_normal, (4, 0, 2)), (Tensor.glorot_uniform, (0, 0)),
                 (Tensor.scaled_uniform, (0,)), (Tensor.scaled_uniform, (2, 0)), (Tensor.kaiming_uniform, (0, 3))):
    assert fn(*sh).numpy().shape == sh

def test_a_symbolic_shape_is_a_value_error():
  # public tinygrad raises ValueError for a random tensor of a Variable's size (test_symbolic_ops' attention with dropout);
  # the draw counted its calls with the UOp and raised TypeError ("'UOp' object cannot be interpreted as an integer")
  from tinygrad import Variable
  v = Variable("i", 1, 10).bind(3)
  x = Tensor.ones(2, 10)[:, :v]
  draws = [lambda: Tensor.rand(2, v), lambda: Tensor.randn(2, v), lambda: Tensor.randint(2, v, high=5), lambda: Tensor.uniform(2, v),
           lambda: Tensor.normal(2, v), x.rand_like, x.randn_like, lambda: x.dropout(0.5)]
  old, Tensor.training = Tensor.training, True
  try:
    for fn in draws:
      with pytest.raises(ValueError, match="concrete shape"): fn()
  finally: Tensor.training = old

def test_normal_needs_a_std_of_at_least_0():
  # (a negative std flipped the values' sign; torch raises RuntimeError, public tinygrad ValueError)
  for exc in (ValueError, RuntimeError):
    with pytest.raises(exc, match="std must be >= 0"): Tensor.normal(3, 4, mean=0, std=-1)
  assert (Tensor.normal(3, mean=2.0, std=0.0).numpy() == 2.0).all()

def test_unknown_keywords_raise():
  # a typo or torch's generator= was dropped silently; requires_grad (and public tinygrad's contiguous=) are taken
  for fn in (Tensor.rand, Tensor.randn, Tensor.uniform, Tensor.normal, Tensor.randint, Tensor.kaiming_uniform):
    with pytest.raises(TypeError, match="generator"): fn(5, generator="foo")
  with pytest.raises(TypeError, match="dtpye"): Tensor.randperm(5, dtpye=dtypes.int64)
  assert Tensor.rand(2, requires_grad=True).requires_grad and Tensor.randn(2, contiguous=False).shape == (2,)

# ---- shapes ----
@pytest.mark.parametrize("device", DEVICES)
def test_random_shapes(device):
  for shape in [(0,), (0, 3), (3, 0, 2), (), (1,), (7, 3), (5, 1, 3)]:
    for t in (Tensor.rand(*shape, device=device), Tensor.randn(shape, device=device), Tensor.randint(*shape, high=5, device=device)):
      assert t.shape == shape and t.numpy().shape == shape
  assert isinstance(Tensor.rand(device=device).item(), float)
  for t in (Tensor.rand(2, 3, requires_grad=True), Tensor.randn(2, requires_grad=True), Tensor.uniform(2, requires_grad=True),
            Tensor.normal(2, requires_grad=True), Tensor.kaiming_uniform(2, 3, requires_grad=True)):
    assert t.requires_grad is True

def test_initialisers_use_the_device_generator():
  Tensor.manual_seed(8)
  u = Tensor.uniform(1000, low=-2, high=3).numpy()
  assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.2
  Tensor.manual_seed(8)
  np.testing.assert_allclose(Tensor.uniform(1000, low=-2, high=3).numpy(), u)   # same seed, same draw
  w = Tensor.kaiming_uniform(64, 128).numpy()
  bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + 0.01 ** 2)) / math.sqrt(128)
  assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
  assert abs(Tensor.kaiming_normal(256, 256).numpy().std() - math.sqrt(2.0 / (1 + 0.01 ** 2)) / 16) < 0.01
  g = Tensor.glorot_uniform(30, 20).numpy()
  assert np.abs(g).max() <= (6 / 50) ** 0.5
  x = Tensor.ones(3, 4, dtype=dtypes.float16)
  assert x.rand_like().dtype == dtypes.float16 and x.randn_like().shape == (3, 4)
  assert Tensor.ones(2, 3, dtype=dtypes.int16).rand_like().dtype == dtypes.float32   # an int tensor's: the default float
  assert x.randn_like(dtypes.float32).dtype == dtypes.float32   # dtype positional, as public tinygrad's randn_like
  # an int dtype given is an error, as rand's (rand_like(dtype=dtypes.int32) silently gave float32)
  with pytest.raises(ValueError, match="rand needs a float dtype"): x.rand_like(dtype=dtypes.int32)
  with pytest.raises(ValueError, match="randn needs a float dtype"): x.randn_like("int8")
  assert Tensor.randn(4, dtype=dtypes.bfloat16).dtype == dtypes.bfloat16 and Tensor.normal(2, mean=1, std=2).shape == (2,)
  Tensor.manual_seed(9)
  a = nn.Linear(4, 3).weight.numpy()
  Tensor.manual_seed(9)
  np.testing.assert_equal(nn.Linear(4, 3).weight.numpy(), a)

# ---- dropout ----
def test_dropout_rate_and_scale():
  x = Tensor.ones(100_000)
  assert x.dropout(0.3) is x   # not training: identity
  with Tensor.train():
    assert x.dropout(0.0) is x
    out = x.dropout(0.3).numpy()
  kept = out != 0
  n = out.size
  assert abs((~kept).mean() - 0.3) < 5 * math.sqrt(0.3 * 0.7 / n)
  np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
  with Tensor.train():
    assert abs(Tensor.full((20_000,), 2.0).dropout(0.5).numpy().mean() - 2.0) < 0.1   # the expectation is kept
  for p in (-0.1, 1.5):
    with pytest.raises(ValueError, match=r"\[0, 1\]"): x.dropout(p)

def test_dropout_of_everything_is_x_times_zero_like_torch():
  # p=1 drops every element: torch computes x * 0 (NaN stays NaN) with a zero gradient; it used to raise here
  x = Tensor([float("nan"), 1.0, -2.0], requires_grad=True)
  with Tensor.train():
    y = x.dropout(1.0)
    y.sum().backward()
  np.testing.assert_array_equal(y.numpy(), [np.nan, 0, 0])
  np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0])

def test_dropout_gradient_follows_the_mask():
  x = Tensor(np.ones(1000, np.float32), requires_grad=True)
  with Tensor.train():
    y = x.dropout(0.5)
    y.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), y.numpy())

# ---- multinomial ----
def test_multinomial_with_replacement_frequencies():
  Tensor.manual_seed(10)
  w = np.array([1.0, 0.0, 2.0, 3.0, 4.0, 0.0], np.float32)
  s = Tensor(w).multinomial(50_000, replacement=True).numpy()
  assert s.shape == (50_000,) and s.dtype == np.int32
  counts = np.bincount(s, minlength=6).astype(np.float64)
  assert counts[1] == 0 and counts[5] == 0   # zero weights are never drawn
  nz = w > 0
  assert chi2(counts[nz], w[nz] / w.sum()) < chi2_crit(3)

def test_multinomial_2d_rows_use_their_own_weights():
  w = Tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
  s = w.multinomial(8, replacement=True).numpy()
  assert s.shape == (3, 8) and (s[0] == 2).all() and (s[1] == 0).all() and set(s[2]) <= {0, 1, 2}
  nr = w.multinomial(3).numpy()
  assert nr.shape == (3, 3) and all(sorted(r) == [0, 1, 2] for r in nr) and nr[0][0] == 2 and nr[1][0] == 0

def test_multinomial_without_replacement_matches_sequential_draws():
  # the law of drawing one at a time without replacement: P(first=i) = w_i/W, P(second=j) = sum_i w_i/W * w_j/(W - w_i)
  Tensor.manual_seed(12)
  w = np.array([1.0, 2.0, 3.0, 4.0])
  rows = 20_000
  s = Tensor(np.tile(w.astype(np.float32), (rows, 1))).multinomial(2).numpy()
  assert (s[:, 0] != s[:, 1]).all()
  p1 = w / w.sum()
  p2 = np.array([sum(w[i] / w.sum() * w[j] / (w.sum() - w[i]) for i in range(4) if i != j) for j in range(4)])
  assert chi2(np.bincount(s[:, 0], minlength=4).astype(np.float64), p1) < chi2_crit(3)
  assert chi2(np.bincount(s[:, 1], minlength=4).astype(np.float64), p2) < chi2_crit(3)
  full = Tensor([5.0, 0.0, 1.0]).multinomial(3).numpy()
  assert sorted(full) == [0, 1, 2] and full[2] == 1   # the zero-weight category comes last

@pytest.mark.parametrize("scale,dtype", [(1e38, dtypes.float32), (2e4, dtypes.float16), (1e-40, dtypes.float32)])
def test_multinomial_keeps_the_law_at_extreme_weights(scale, dtype):
  # weights w*scale are the law of w: the cumsum of [1e38, 3e38] overflowed to inf and drew only the first finite-cdf index
  # (half [2e4, 6e4] too), and without replacement log(u)/w of weights near 1e-40 was -inf for all, a tie the first index won
  Tensor.manual_seed(14)
  w = np.array([[1.0, 3.0]] * 2000) * scale
  with_r = Tensor(w[0], dtype=dtype).multinomial(4000, replacement=True).numpy()
  no_r = Tensor(w, dtype=dtype).multinomial(1).numpy()[:, 0]
  for s in (with_r, no_r): assert chi2(np.bincount(s, minlength=2).astype(np.float64), np.array([0.25, 0.75])) < chi2_crit(1)

def test_manual_seed_out_of_64_bits_raises():
  # the key took the seed's low 64 bits: manual_seed(2**64) drew manual_seed(0)'s numbers (torch raises)
  for bad in (2**64, -2**63 - 1, 1.5):
    with pytest.raises(ValueError, match="seed must be an int"): Tensor.manual_seed(bad)
  Tensor.manual_seed(-1)
  a = Tensor.rand(4).numpy()
  Tensor.manual_seed(2**64 - 1)   # torch's wrap of -1, the same 64 bits
  np.testing.assert_equal(Tensor.rand(4).numpy(), a)
  Tensor.manual_seed(0)

def test_multinomial_errors():
  # ValueError, torch's RuntimeError and the AssertionError of public tinygrad's asserts
  for exc in (ValueError, RuntimeError, AssertionError):
    with pytest.raises(exc, match="num_samples"): Tensor([1.0, 2.0]).multinomial(3)
    with pytest.raises(exc, match="1-d or 2-d"): Tensor.ones(2, 2, 2).multinomial(1)
    with pytest.raises(exc, match="1-d or 2-d"): Tensor(2.0).multinomial(1)
    with pytest.raises(exc, match="num_samples must be >= 1"): Tensor([1.0]).multinomial(0)

# ---- randperm ----
@pytest.mark.parametrize("device,n", [("CPU", 1), ("CPU", 7), ("CPU", 300), ("PYTHON", 33)])
def test_randperm_is_a_permutation(device, n):
  p = Tensor.randperm(n, device=device)
  assert p.dtype == dtypes.int32 and p.device == device
  assert sorted(p.tolist()) == list(range(n))
  if n > 5: assert p.tolist() != Tensor.randperm(n, device=device).tolist()

def test_randperm_positions_are_uniform():
  Tensor.manual_seed(13)
  firsts = np.stack([Tensor.randperm(5).numpy() for _ in range(400)])
  for pos in (0, 4):
    assert chi2(np.bincount(firsts[:, pos], minlength=5).astype(np.float64), np.full(5, 0.2)) < chi2_crit(4)
  assert Tensor.randperm(0).shape == (0,) and Tensor.randperm(4, dtype=dtypes.int64).dtype == dtypes.int64
  with pytest.raises(ValueError, match="int dtype"): Tensor.randperm(4, dtype=dtypes.float32)

def test_randperm_indices_that_do_not_fit_the_dtype_raise():
  # were cast with wraparound: randperm(300, dtype=int8) held repeats and negatives, not a permutation (torch raises)
  with pytest.raises(ValueError, match="do not fit int8"): Tensor.randperm(300, dtype=dtypes.int8)
  with pytest.raises(ValueError, match="do not fit uint8"): Tensor.randperm(257, dtype=dtypes.uint8)
  assert sorted(Tensor.randperm(256, dtype=dtypes.uint8).tolist()) == list(range(256))

@pytest.mark.parametrize("dev", ["CPU", "WEBGPU"])
def test_seed_and_draw_after_the_device_registry_was_reset(dev):
  # Device.reset() forgets opened devices; a state buffer of the old device must be dropped, not assigned (the suite
  # failed this way on WEBGPU: the reopened wgpu device rejects the old device's buffers)
  from tinygrad.device import Device, DeviceError
  try: Device[dev]
  except DeviceError as e: pytest.skip(f"{dev} does not open here: {e}")
  Tensor.manual_seed(5)
  first = Tensor.rand(4, device=dev).numpy()
  Device.reset()
  try:
    Tensor.manual_seed(5)
    np.testing.assert_equal(Tensor.rand(4, device=dev).numpy(), first)
  finally: Device.reset()
