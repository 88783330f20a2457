"""Large reductions keep numpy's accuracy: sums are split into chunks (one accumulator never sums more than _CHUNK
elements, a float sum's chunk at most _ACC_RUN, in case its lanes are scalar), and a reduce over an expanded axis is x*n
(no loop, no count that wraps past 2**32)."""
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor

def _rel(got: float, want: float) -> float: return abs(got - want) / max(abs(want), 1e-30)

def _check(t: Tensor, ref: np.ndarray, ops=("sum", "mean", "max", "min")):
  for op in ops:
    got, want = getattr(t, op)().item(), float(getattr(ref.astype(np.float64), op)())
    assert _rel(got, want) <= 1e-5, f"{op} over {ref.size} elements: {got} vs numpy float64 {want}"

@settings(max_examples=6)
@given(n=st.integers(1, 50_000_000), kind=st.sampled_from(["uniform", "ones", "normal"]), seed=st.integers(0, 2**16))
def test_float32_reductions_match_numpy_float64(n: int, kind: str, seed: int):
  rng = np.random.default_rng(seed)
  a = {"uniform": lambda: rng.random(n, dtype=np.float32), "ones": lambda: np.ones(n, np.float32),
       "normal": lambda: (rng.standard_normal(n, dtype=np.float32) + 3)}[kind]()
  _check(Tensor(a), a)

@pytest.mark.parametrize("n", [2**24 + 1, 30_000_001, 2**25 + 3])
def test_sum_past_float32_integer_range(n: int):
  # one float32 accumulator stalls at 2**24: ones(30000001).sum() was 16777216 and the mean 0.559
  assert _rel(Tensor.ones(n).sum().item(), n) <= 1e-7
  assert _rel(Tensor.ones(n).mean().item(), 1.0) <= 1e-7

@pytest.mark.parametrize("x", [1.0, -2.5, 0.1])
def test_reduce_expanded_past_2_32(x: float):
  t = Tensor([x]).expand(2**33)
  assert _rel(t.sum().item(), x * 2**33) <= 1e-6 and _rel(t.mean().item(), x) <= 1e-6
  assert t.max().item() == t.min().item() == np.float32(x)

def test_reduce_2d_expanded_past_2_32():
  a = np.random.default_rng(1).random(2**17, dtype=np.float32)
  t = Tensor(a).reshape(2**17, 1).expand(2**17, 2**16)
  assert _rel(t.sum().item(), a.astype(np.float64).sum() * 2**16) <= 1e-5
  assert _rel(t.mean().item(), a.astype(np.float64).mean()) <= 1e-5
  assert t.max().item() == a.max() and t.min().item() == a.min()
  np.testing.assert_allclose(t.sum(axis=1).numpy(), a.astype(np.float64) * 2**16, rtol=1e-6)

def test_var_std_large():
  a = np.random.default_rng(2).random(20_000_001, dtype=np.float32) + 100
  t = Tensor(a)
  assert _rel(t.var().item(), a.astype(np.float64).var(ddof=1)) <= 1e-4
  assert _rel(t.std().item(), a.astype(np.float64).std(ddof=1)) <= 1e-4

def test_reduce_axis_of_many_rows_large():
  # many outputs, each a long reduce: also chunked
  a = np.random.default_rng(3).random((4, 5_000_001), dtype=np.float32)
  np.testing.assert_allclose(Tensor(a).sum(axis=1).numpy(), a.astype(np.float64).sum(axis=1), rtol=1e-5)
  np.testing.assert_allclose(Tensor(a.T.copy()).sum(axis=0).numpy(), a.astype(np.float64).sum(axis=1), rtol=1e-5)

@settings(max_examples=3)
@given(n=st.integers(1, 70_000), seed=st.integers(0, 2**16))
def test_reductions_on_python_device(n: int, seed: int):
  a = np.random.default_rng(seed).random(n, dtype=np.float32)
  _check(Tensor(a, device="PYTHON"), a, ("sum", "max"))

# ---- arange: one elementwise kernel from the index, numpy's values ----
@pytest.mark.parametrize("args", [(10,), (2, 20, 3), (10, 0, -1), (5, -7, -3), (5, 5), (5, 0), (0, 10, -1), (20000,), (100000, 0, -3),
                                  (-70001, 3, 7)])
def test_arange_ints_match_numpy(args):
  got = Tensor.arange(*args)
  np.testing.assert_array_equal(got.numpy(), np.arange(*args, dtype=np.int32))
  assert got.numpy().dtype == np.int32

@pytest.mark.parametrize("args", [(0.5, 10.3, 0.7), (-3.0, 4.5, 0.1), (1, -2, -0.3), (0.1, 3000.0, 0.1), (2.0, 1.0, 0.5),
                                  (-1e4, 1e4, 0.37), (0, 40000.0, 1.5)])
def test_arange_floats_match_numpy(args):
  # numpy's float32 fill: start + i*delta in float32 with delta = f32(start+step) - f32(start)
  np.testing.assert_allclose(Tensor.arange(*args).numpy(), np.arange(*args, dtype=np.float32), rtol=1e-6, atol=1e-6)

def test_arange_values_past_int32_are_int64():
  got = Tensor.arange(2**31 - 2, 2**31 + 3)
  assert got.numpy().dtype == np.int64 and got.tolist() == list(range(2**31 - 2, 2**31 + 3))

def test_arange_large():
  n = 2**27
  t = Tensor.arange(n).realize()
  assert [t[i].item() for i in (0, 1, 12345, 2**24 + 1, n - 1)] == [0, 1, 12345, 2**24 + 1, n - 1]
  assert t.sum(dtype="int64").item() == n * (n - 1) // 2
  f = Tensor.arange(0.0, n / 4, 0.25).realize()
  ref = np.arange(0.0, n / 4, 0.25, dtype=np.float32)
  assert [f[i].item() for i in (3, 2**20 + 1, n - 1)] == [ref[i] for i in (3, 2**20 + 1, n - 1)]

@pytest.mark.parametrize("shape", [(128, 32, 20, 20), (128, 64, 6, 6), (64, 16, 12, 12)])
def test_batchnorm_statistics_of_relu_activations_match_float64(shape):
  # a CNN's BatchNorm after a relu: per channel, thousands of equal (zero) or same-signed values. One accumulator lane
  # summing thousands of them drifts one way rounding after rounding: the variance was 3.9e-5 off (torch: 5e-7), which
  # flipped relu signs downstream and put the CNN's gradients 1e-3..4e-2 off float64 (bench/models.py cnn_train's check)
  rng = np.random.default_rng(0)
  a = np.maximum(rng.standard_normal(shape).astype(np.float32) * 0.2 + 0.05, 0)
  t = Tensor(a)
  mean = t.mean((0, 2, 3), keepdim=True)
  var = ((t - mean) * (t - mean)).mean((0, 2, 3))
  a64 = a.astype(np.float64)
  m64 = a64.mean((0, 2, 3), keepdims=True)
  v64 = ((a64 - m64) ** 2).mean((0, 2, 3))
  np.testing.assert_allclose(mean.numpy().reshape(-1), m64.reshape(-1), rtol=2e-6)
  np.testing.assert_allclose(var.numpy(), v64, rtol=2e-6)

def test_sum_of_many_equal_values_with_many_outputs():
  # 64 outputs of 40960 equal values each: no split before (many outputs, under _CHUNK); each lane added ~5000 times 0.1
  a = np.full((64, 40960), 0.1, np.float32)
  np.testing.assert_allclose(Tensor(a).sum(1).numpy(), a.astype(np.float64).sum(1), rtol=2e-6)

@pytest.mark.parametrize("shape,cut", [((128, 8, 20, 24), 20), ((16, 3, 17, 21), 19)])
def test_split_batch_statistic_of_a_strided_view(shape, cut):
  # a statistic over (n, h, w) of a view whose rows are wider than it reads (a flattened conv's valid columns) is split
  # into one chunk per image: its loops stay (h, w), affine loads. Cut from the merged (n, h, w) axis, every load of a
  # chunk indexed the view's rows with a div/mod (scalar, 2 ms per BatchNorm statistic in the MNIST CNN)
  from tinygrad.uop import Ops
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  a = np.random.default_rng(3).standard_normal(shape).astype(np.float32) + 0.5
  t, ref = Tensor(a)[:, :, :, :cut], a[:, :, :, :cut].astype(np.float64)
  for op in ("sum", "max", "mean"):
    r = getattr(t, op)((0, 2, 3))
    loads = [u.src[0].src[1] for ei in r.schedule() if ei.ast.op is Ops.SINK for u in graph_rewrite(ei.ast, sym).toposort()
             if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX]
    assert not [d for idx in loads for d in idx.toposort() if d.op in (Ops.IDIV, Ops.MOD)], [i.render() for i in loads]
    np.testing.assert_allclose(r.numpy(), getattr(ref, op)((0, 2, 3)), rtol=2e-6, err_msg=op)
  np.testing.assert_allclose(t.sum().numpy(), ref.sum(), rtol=2e-6)

@pytest.mark.parametrize("value,n", [(65535.0, 300), (10923.0, 70000), (0.1, 100_000), (10000.3, 1_000_000)])
def test_variance_of_a_constant_is_zero(value: float, n: int):
  # the float32 mean is some ulps off (300 copies of 65535.0: by 0.15) and each deviation by as much: var was 0.022 and
  # std 0.149 where torch and numpy give 0; the corrected two-pass form takes the mean's error back out
  t = Tensor.full((n,), value).contiguous()
  assert t.var().item() <= 1e-6 * value * value * 1e-6 and t.std().item() <= 1e-6 * abs(value)
  rows = Tensor(np.stack([np.full(300, value, np.float32), np.arange(300, dtype=np.float32) + value]))
  np.testing.assert_allclose(rows.var(1).numpy(), np.stack([np.full(300, value), np.arange(300) + value]).var(1, ddof=1), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("vals", [[3e19, 1e19, -2e19, 0.0], [1e20, -1e20, 3e20], [1e30, 2e30], [3e38, 3e38, 3e38], [1e-30, 2e-30, 3e-30],
                                  [1e-40, 2e-40], [5.0, 6.0, 7.0]])
def test_var_std_of_values_whose_squares_leave_float32(vals, device):
  # float32 squares of deviations past 1.8e19 overflowed (var([3e19, 1e19, -2e19, 0], correction=0) was inf where torch's
  # is 3.25e38, std of [1e20, -1e20, 3e20] inf for torch's 2e20, [1e30, 2e30] NaN: inf - inf), under 1e-19 underflowed
  # (std of [1e-30, 2e-30, 3e-30] was 0): the float32 value of numpy's float64 result, inf where that overflows
  a = np.array(vals, np.float32)
  t = Tensor(a, device=device)
  with np.errstate(over="ignore"):
    for c in (0, 1):
      want_v, want_s = a.astype(np.float64).var(ddof=c), a.astype(np.float64).std(ddof=c)
      np.testing.assert_allclose(t.var(correction=c).item(), np.float32(want_v), rtol=1e-6, atol=0)
      np.testing.assert_allclose(t.std(correction=c).item(), np.float32(want_s), rtol=1e-6, atol=0)
  # the gradient of the (finite) std: (x - mean) / ((n - 1) std)
  x = Tensor(a, device=device, requires_grad=True)
  x.std().backward()
  a64 = a.astype(np.float64)
  if np.isfinite(np.float32(a64.std(ddof=1))) and a64.std(ddof=1) > 0:
    np.testing.assert_allclose(x.grad.numpy(), (a64 - a64.mean()) / ((len(a) - 1) * a64.std(ddof=1)), rtol=1e-5)

@pytest.mark.parametrize("dt", [np.uint8, np.int8, np.int16, np.float16])
def test_float_sum_of_a_narrow_source_keeps_numpy_accuracy(dt):
  # a float sum whose loads are 1 or 2 bytes (x.float() of uint8 pixels, of float16) runs in one scalar accumulator, not
  # float32 loads' 16 lanes: a chunk of 39062 terms was one lane's run. 10M ones * 0.1 summed 6e-4 off, and the variance of
  # uint8 pixels 0..255 1.2e-4 off (numpy float64; float32 sources: 4e-5 and 3e-8)
  n = 10_000_000
  assert _rel(Tensor(np.ones(n, dt)).float().mul(0.1).sum().item(), n * float(np.float32(0.1))) <= 1e-5
  a = (np.arange(n) % 256).astype(dt)
  if dt is np.uint8: assert _rel(Tensor(a).var().item(), a.astype(np.float64).var(ddof=1)) <= 1e-5
  assert _rel(Tensor(a).float().square().mean().item(), (a.astype(np.float64) ** 2).mean()) <= 1e-5
