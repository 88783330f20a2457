"""float16 and bfloat16 programs against torch (CPU): elementwise ops and casts between every dtype (bool, uint8, int64,
and out-of-range ints that wrap), reductions (sum, mean, cumsum, prod, max, argmax, softmax, logsumexp, var) whose
accumulation must be float32 rounded once (torch's), matmul, conv and einsum, mixed-dtype promotion, the mean of ints, and
gradients, on random shapes with 0, 1 and odd sizes. The other fuzzers draw float32 and the int dtypes."""
import numpy as np, pytest, torch
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes

TD = {dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
      dtypes.int8: torch.int8, dtypes.uint8: torch.uint8, dtypes.int16: torch.int16, dtypes.int32: torch.int32, dtypes.int64: torch.int64,
      dtypes.bool: torch.bool}
HALVES = [dtypes.float16, dtypes.bfloat16]
F = torch.nn.functional

def _np(t: torch.Tensor) -> np.ndarray: return t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
def T(t: torch.Tensor, **kw) -> Tensor:
  # the torch tensor's values as ours, same dtype, same bits (bfloat16 through float32, which holds it exactly)
  dt = next(k for k, v in TD.items() if v == t.dtype)
  return Tensor(_np(t), **kw).cast(dt) if t.dtype == torch.bfloat16 else Tensor(_np(t), dtype=dt, **kw)
def check(ours: Tensor, ref: torch.Tensor, tol=0.0, dtype=True):
  if dtype: assert TD[ours.dtype] == ref.dtype, f"dtype {ours.dtype} vs torch's {ref.dtype}"
  got, want = ours.numpy(), _np(ref)
  assert got.shape == want.shape, f"shape {got.shape} vs {want.shape}"
  np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)

def _rand(shape, dt, seed, scale=3.0) -> torch.Tensor:
  return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale).to(TD[dt])

shapes = st.lists(st.sampled_from([0, 1, 2, 3, 7, 33]), min_size=1, max_size=3).map(tuple)

# ---- reductions ----
REDUCES = {   # name: (ours, torch's, tolerance in units of the dtype's eps, needs a non-empty axis)
  "sum": (lambda t, ax: t.sum(ax), lambda t, ax: t.sum(ax), 2, False),
  "mean": (lambda t, ax: t.mean(ax), lambda t, ax: t.mean(ax), 2, False),
  "cumsum": (lambda t, ax: t.cumsum(ax), lambda t, ax: t.cumsum(ax), 2, False),
  # (torch's CPU prod of halves multiplies in the half dtype; ours, as its cumprod, in float32 rounded once)
  "prod": (lambda t, ax: (t * 0.01 + 1).prod(ax), lambda t, ax: (t * 0.01 + 1).float().prod(ax).to(t.dtype), 2, False),
  "max": (lambda t, ax: t.max(ax), lambda t, ax: t.max(ax)[0], 0, True),
  "argmax": (lambda t, ax: t.argmax(ax), lambda t, ax: t.argmax(ax), 0, True),
  "softmax": (lambda t, ax: t.softmax(ax), lambda t, ax: t.softmax(ax), 2, False),
  "log_softmax": (lambda t, ax: t.log_softmax(ax), lambda t, ax: t.log_softmax(ax), 2, False),
  "logsumexp": (lambda t, ax: t.logsumexp(ax), lambda t, ax: t.logsumexp(ax), 2, False),
  "var": (lambda t, ax: t.var(ax, correction=0), lambda t, ax: t.var(ax, correction=0), 2, False),
}

@settings(max_examples=60, deadline=None)
@given(st.sampled_from(HALVES), shapes, st.sampled_from(sorted(REDUCES)), st.integers(0, 2), st.integers(0, 2**16))
def test_fuzz_half_reductions_match_torch(dt, shape, name, ax, seed):
  ours, ref, ulps, nonempty = REDUCES[name]
  ax = ax % len(shape)
  if nonempty and shape[ax] == 0: return
  t = _rand(shape, dt, seed)
  # a few ulps of the result's magnitude: a float32 accumulator rounded once is within one of torch's
  tol = ulps * (2**-10 if dt == dtypes.float16 else 2**-7) * max(1.0, float(np.abs(_np(ref(t, ax))).max(initial=0)))
  check(ours(T(t), ax), ref(t, ax), tol, dtype=name != "argmax")

@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("n", [4096, 10001])
def test_half_sums_accumulate_in_float32_rounded_once(dt, n):
  # 4096 * 0.1 summed in float16 stalls near 256 (0.1 is below half an ulp there); torch's float32 accumulator gives 409.5
  t = torch.full((n,), 0.1, dtype=TD[dt])
  x = Tensor.full((n,), 0.1, dtype=dt)
  for ours, ref in [(x.sum(), t.sum()), (x.mean(), t.mean()), (x.reshape(-1, 1).sum(0), t.reshape(-1, 1).sum(0)),
                    (x.cumsum(0)[-1], t.cumsum(0)[-1]), (x.reshape(1, -1) @ x.reshape(-1, 1), t.reshape(1, -1) @ t.reshape(-1, 1))]:
    check(ours, ref, tol=1e-3 * abs(float(ref.float().reshape(-1)[0])))

@pytest.mark.parametrize("dt", HALVES)
def test_sum_and_prod_with_a_half_dtype_accumulate_in_float32(dt):
  # sum(dtype=float16) accumulated in float16: 4096 x 0.1 gave 256 (bfloat16: 32) where torch's sum(dtype=) and our own
  # half.sum() give 409.5; the elements are cast to the dtype, summed in float32 and rounded once
  v = np.full(4096, 0.1, np.float32)
  for x in (Tensor(v), Tensor(v).cast(dt)):
    check(x.sum(dtype=dt), torch.tensor(v).sum(dtype=TD[dt]))
    check(x.reshape(64, 64).sum(1, dtype=dt), torch.tensor(v).reshape(64, 64).sum(1, dtype=TD[dt]))
  w = np.random.default_rng(0).uniform(1, 1.1, 50).astype(np.float32)
  exact = float(torch.tensor(w).to(TD[dt]).double().prod())
  # (torch's CPU prod(dtype=) multiplies in the narrow dtype: ours is the float32 product rounded once, as prod() of halves)
  np.testing.assert_allclose(Tensor(w).prod(dtype=dt).item(), exact, rtol=2**-10 if dt == dtypes.float16 else 2**-7)
  assert Tensor(w).prod(dtype=dt).item() == Tensor(w).cast(dt).prod().item()

@pytest.mark.parametrize("dt", HALVES)
def test_half_partial_sums_past_the_range_cancel(dt):
  # partial sums and products past float16's 65504 that cancel: float32 accumulation keeps them (torch's answers)
  t = torch.tensor([60000., 60000, -60000, -60000, 1]).to(TD[dt])
  check(T(t).sum(), t.sum())
  check(T(t).mean(), t.mean())
  check(T(t).cumsum(0), t.cumsum(0))
  a, b = torch.tensor([[300., -300, 300, -300, 2]]).to(TD[dt]), torch.tensor([[300.], [300], [300], [300], [1]]).to(TD[dt])
  check(T(a) @ T(b), a @ b)
  check(Tensor.einsum("ij,jk->ik", T(a), T(b)), torch.einsum("ij,jk->ik", a, b))

@pytest.mark.parametrize("dt", HALVES)
def test_einsum_of_halves_multiplies_in_float32(dt):
  # einsum multiplied float16/bfloat16 operands in their own dtype, then summed: 300 * 300 was inf and the sum
  # 300*300 - 300*300 + ... NaN (torch: 2), and ~43% of a random (8, 64) @ (64, 16)'s outputs were an ulp off torch's
  a, b = torch.tensor([[300., -300, 300, -300, 2]]).to(TD[dt]), torch.tensor([[300.], [300], [300], [300], [1]]).to(TD[dt])
  check(Tensor.einsum("ij,jk->ik", T(a), T(b)), torch.einsum("ij,jk->ik", a, b))
  x, y = _rand((8, 64), dt, 0, 1.0), _rand((64, 16), dt, 1, 1.0)
  check(Tensor.einsum("ij,jk->ik", T(x), T(y)), torch.einsum("ij,jk->ik", x, y))   # bit for bit
  check(Tensor.einsum("bij,bjk->bik", T(x.reshape(2, 4, 64)), T(y.reshape(1, 64, 16).expand(2, 64, 16))),
        torch.einsum("bij,bjk->bik", x.reshape(2, 4, 64), y.reshape(1, 64, 16).expand(2, 64, 16)))
  check(Tensor.einsum("i,i->", T(x[0]), T(y[:, 0])), torch.einsum("i,i->", x[0], y[:, 0]))
  # with dtype= the products are in that dtype, as before
  assert Tensor.einsum("ij,jk->ik", T(x), T(y), dtype=dtypes.float32).dtype == dtypes.float32

# ---- matmul, conv, einsum in half ----
@settings(max_examples=25, deadline=None)
@given(st.sampled_from(HALVES), st.sampled_from([0, 1, 3, 5, 17]), st.sampled_from([0, 1, 2, 7, 65]), st.sampled_from([1, 3, 9]),
       st.sampled_from(["matmul", "einsum", "conv", "linear"]), st.integers(0, 2**16))
def test_fuzz_half_matmul_conv_match_torch(dt, m, k, n, op, seed):
  x, w = _rand((m, k), dt, seed, 1.0), _rand((k, n), dt, seed + 1, 1.0)
  if op == "matmul": ours, ref = T(x) @ T(w), x @ w
  elif op == "einsum": ours, ref = Tensor.einsum("ij,jk->ki", T(x), T(w)), torch.einsum("ij,jk->ki", x, w)
  elif op == "linear": ours, ref = T(x).linear(T(w), T(w[0] if k else torch.zeros(n, dtype=TD[dt]))), F.linear(x, w.T, w[0] if k else torch.zeros(n, dtype=TD[dt]))
  else:
    if m == 0 or k == 0: return
    xi, wi = _rand((1, k, m + 2, 3), dt, seed, 1.0), _rand((n, k, 3, 2), dt, seed + 1, 1.0)
    ours, ref = T(xi).conv2d(T(wi), padding=1, stride=(1, 2)), F.conv2d(xi.float(), wi.float(), padding=1, stride=(1, 2)).to(TD[dt])
  check(ours, ref, tol=(2**-10 if dt == dtypes.float16 else 2**-7) * max(1.0, float(np.abs(_np(ref)).max(initial=0))))

# ---- casts and promotion ----
_VALS = {   # values each dtype holds, with the ones casts round, truncate, wrap or saturate
  "f": [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 100.7, -100.3, 127.0, 1e-30, 7.0],
  "i": [0, 1, -1, 127, -128, 100, 5, -7, 300, -300, 70000, 2**40 + 3, -2**33 - 5],
  "u": [0, 1, 255, 128, 200, 7], "b": [True, False, True]}
ALL = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.bool]

@settings(max_examples=80, deadline=None)
@given(st.sampled_from(ALL), st.sampled_from(ALL), st.booleans())
def test_fuzz_casts_between_all_dtypes_match_torch(src, dst, in_kernel):
  kind = "b" if src == dtypes.bool else "u" if src == dtypes.uint8 else "f" if dtypes.is_float(src) else "i"
  vals = _VALS[kind]
  if dtypes.is_float(src) and dtypes.is_unsigned(dst): vals = [abs(v) for v in vals]   # (negative float -> uint8 is UB in torch)
  if dtypes.is_float(src) and dst in (dtypes.int8, dtypes.uint8): vals = [v for v in vals if abs(v) < 128]
  # ints: cast from int64 first (wrapping to the source dtype), as torch's .to
  t = torch.tensor(vals).to(TD[src]) if kind != "f" else torch.tensor(vals, dtype=torch.float64).to(TD[src])
  x = T(t)
  if in_kernel: x = (x + Tensor.zeros(x.shape, dtype=src)) if src != dtypes.bool else (x | Tensor.zeros(x.shape, dtype=dtypes.bool))
  check(x.cast(dst), t.to(TD[dst]))

BINOPS = {"+": lambda a, b: a + b, "*": lambda a, b: a * b, "-": lambda a, b: a - b, "/": lambda a, b: a / b, "<": lambda a, b: a < b,
          "==": lambda a, b: a == b, "max": lambda a, b: a.maximum(b) if isinstance(a, Tensor) else torch.maximum(a, b)}

@settings(max_examples=80, deadline=None)
@given(st.sampled_from(ALL), st.sampled_from(ALL), st.sampled_from(sorted(BINOPS)))
def test_fuzz_mixed_dtype_binary_ops_promote_as_torch(a, b, op):
  def vals(dt, base): return torch.tensor([1, 0, 1, 1, 0]).to(TD[dt]) if dt == dtypes.bool else torch.tensor(base).to(TD[dt])
  ta, tb = vals(a, [3, 2, 100, 5, 7]), vals(b, [2, 5, 4, 1, 3])
  try: want = BINOPS[op](ta, tb)
  except RuntimeError: return   # (bool - bool: torch refuses, and so do we)
  got = BINOPS[op](T(ta), T(tb))
  check(got, want, tol=2**-10 if want.dtype in (torch.float16, torch.float32) else 2**-7)

@pytest.mark.parametrize("bound", [dtypes.int32, dtypes.uint8, dtypes.bool, dtypes.float16, dtypes.float32])
@pytest.mark.parametrize("dt", HALVES + [dtypes.float32])
def test_clamp_by_two_tensors_promotes_as_torch(dt, bound):
  # both bounds as tensors: the dtype is the promotion of the three (a half with int bounds stays half), as with one bound
  x = torch.tensor([1.5, -2.5, 300.0, float("nan"), 0.25]).to(TD[dt])
  lo, hi = torch.tensor([0, 1, 2, 0, 1]).to(TD[bound]), torch.tensor([1, 3, 100, 1, 0]).to(TD[bound])
  check(T(x).clamp(T(lo), T(hi)), torch.clamp(x, lo, hi))

@pytest.mark.parametrize("dt,np_dt", [(dtypes.int8, np.int8), (dtypes.uint8, np.uint8), (dtypes.int16, np.int16), (dtypes.int32, np.int32),
                                      (dtypes.int64, np.int64), (dtypes.bool, np.bool_)])
def test_mean_of_ints_is_float32_of_the_exact_sum(dt, np_dt):
  v = np.random.default_rng(0).integers(0 if dt in (dtypes.uint8, dtypes.bool) else -100, 2 if dt == dtypes.bool else 100, (5, 7)).astype(np_dt)
  for ax in (None, 0, 1):
    got = Tensor(v).mean(ax)
    assert got.dtype == dtypes.float32
    np.testing.assert_allclose(got.numpy(), v.astype(np.float64).mean(ax), rtol=1e-6)

# ---- gradients ----
GRADS = {
  "sum": (lambda x: x.sum(1), lambda x: x.sum(1)), "mean": (lambda x: x.mean(), lambda x: x.mean()),
  "softmax": (lambda x: x.softmax(1), lambda x: x.softmax(1)), "logsumexp": (lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)),
  "var": (lambda x: x.var(1), lambda x: x.var(1)), "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
  "max": (lambda x: x.max(1), lambda x: x.amax(1)), "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid()),
  "matmul": (lambda x: x @ x.T, lambda x: x @ x.T), "einsum": (lambda x: Tensor.einsum("ij,kj->ik", x, x), lambda x: torch.einsum("ij,kj->ik", x, x)),
  "layernorm": (lambda x: x.layernorm(), lambda x: F.layer_norm(x, x.shape[-1:])), "scalar": (lambda x: x * 0.1 + 2.5, lambda x: x * 0.1 + 2.5),
}

@settings(max_examples=30, deadline=None)
@given(st.sampled_from(HALVES), st.sampled_from(sorted(GRADS)), st.sampled_from([(1, 1), (3, 5), (4, 7), (2, 33)]), st.integers(0, 2**16))
def test_fuzz_half_gradients_match_torch(dt, name, shape, seed):
  ours, ref = GRADS[name]
  t = _rand(shape, dt, seed, 1.0).requires_grad_()
  x = T(t.detach(), requires_grad=True)
  out_t = ref(t)
  g = _rand(tuple(out_t.shape), dt, seed + 1, 1.0)
  (out_t * g).sum().backward()
  (ours(x) * T(g)).sum().backward()
  assert x.grad is not None and x.grad.dtype == dt
  tol = 3 * (2**-10 if dt == dtypes.float16 else 2**-7) * max(1.0, float(np.abs(_np(t.grad)).max()))
  check(x.grad, t.grad, tol)
