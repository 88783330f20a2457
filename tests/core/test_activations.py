"""Activations at the edges, forward and gradient, against torch: +-300 (where e**x overflows), +-inf, NaN, 0 (the kinks)
and a few ordinary values, on the CPU and the PYTHON device. sigmoid's gradient at -300 was NaN (inf*0 inside), relu(NaN)
was 0, relu6/hardsigmoid/hardswish(inf) were NaN, erf(+-inf) NaN, and several kinks had another one-sided gradient."""
import math, os
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, dtypes
from tinygrad.dtype import to_numpy

torch = pytest.importorskip("torch", reason="the reference for activations: pip install torch")
F = torch.nn.functional

# (not exactly +-3, hardswish's kinks: test_edge_values.py's test_kink_gradients_are_torchs has them)
EDGES = [-300.0, 300.0, -math.inf, math.inf, math.nan, 0.0, -1e30, 1e30, -88.5, 88.5, -20.0, 20.0, -3.5, 2.9, -1.5, 0.25, 6.0, -1e-30]
ACTS = {  # name: (tinygrad, torch)
  "sigmoid": (Tensor.sigmoid, torch.sigmoid), "tanh": (Tensor.tanh, torch.tanh), "relu": (Tensor.relu, torch.relu),
  "leaky_relu": (Tensor.leaky_relu, F.leaky_relu), "elu": (Tensor.elu, F.elu), "elu_a2": (lambda x: x.elu(2.0), lambda x: F.elu(x, 2.0)),
  "celu": (Tensor.celu, F.celu), "celu_a3": (lambda x: x.celu(3.0), lambda x: F.celu(x, 3.0)), "selu": (Tensor.selu, F.selu),
  "gelu": (Tensor.gelu, lambda x: F.gelu(x, approximate="tanh")), "gelu_erf": (lambda x: x.gelu("none"), F.gelu),
  "quick_gelu": (Tensor.quick_gelu, lambda x: x * torch.sigmoid(1.702 * x)), "silu": (Tensor.silu, F.silu), "swish": (Tensor.swish, F.silu),
  "mish": (Tensor.mish, F.mish), "softplus": (Tensor.softplus, F.softplus), "softplus_b2": (lambda x: x.softplus(2.0), lambda x: F.softplus(x, 2.0)),
  "softsign": (Tensor.softsign, F.softsign), "hardsigmoid": (Tensor.hardsigmoid, F.hardsigmoid), "hardswish": (Tensor.hardswish, F.hardswish),
  "hardtanh": (Tensor.hardtanh, F.hardtanh), "relu6": (Tensor.relu6, F.relu6), "logsigmoid": (Tensor.logsigmoid, F.logsigmoid),
  "erf": (Tensor.erf, torch.erf), "abs": (Tensor.abs, torch.abs),
}
# torch's own value is inf*0 or inf-inf arithmetic where the limit exists: ours is the limit (docs/guide.md, Numerics)
FORWARD_LIMIT = {("hardswish", -math.inf): 0.0, ("gelu_erf", math.inf): math.inf}

def _compare(name, xs, got, want, gg, wg, wy):
  for x, g, w, dg, dw, y in zip(xs, got, want, gg, wg, wy):
    w = FORWARD_LIMIT.get((name, x), w)
    assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, rel=1e-4, abs=1e-6), f"{name}({x}) = {g}, torch {w}"
    # not compared: the gradient at a NaN input (torch's scalar and vectorized kernels disagree), and torch's NaN gradient
    # where the input or output is infinite (its inf*0); every other gradient is torch's number
    if math.isnan(x) or (math.isnan(dw) and not (math.isfinite(x) and math.isfinite(y))): continue
    assert (math.isnan(dg) and math.isnan(dw)) or dg == pytest.approx(dw, rel=1e-3, abs=1e-5), f"d{name}({x}) = {dg}, torch {dw}"

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_activation_edges_match_torch(device):
  # every activation in one graph (one row of the input each): a few kernels to compile instead of two per activation
  names = list(ACTS)
  x = Tensor([EDGES] * len(names), device=device, requires_grad=True)
  y = Tensor.stack(*(ACTS[n][0](x[i]) for i, n in enumerate(names)))
  g = y.sum().gradient(x)[0]
  got, gg = y.numpy(), g.numpy()
  for i, n in enumerate(names):
    tx = torch.tensor(EDGES, requires_grad=True)
    ty = ACTS[n][1](tx)
    ty.sum().backward()
    want = ty.detach().numpy().tolist()
    _compare(n, EDGES, got[i].tolist(), want, gg[i].tolist(), tx.grad.numpy().tolist(), want)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_edges_match_torch(device, name):
  rows = [[v, 1.0, -2.0] for v in (-300.0, 300.0, -math.inf, math.inf, math.nan, 0.0)]
  x = Tensor(rows, device=device, requires_grad=True)
  y = getattr(x, name)(1)
  g = (y * Tensor([[1.0, 2.0, 3.0]], device=device)).sum().gradient(x)[0]
  tx = torch.tensor(rows, requires_grad=True)
  ty = getattr(tx, name)(1)
  (ty * torch.tensor([[1.0, 2.0, 3.0]])).sum().backward()
  want, wg = ty.detach().numpy(), tx.grad.numpy()
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6, equal_nan=True)
  fin = np.isfinite(np.array(rows)).all(1)   # a row holding +-inf or NaN: torch's gradient is NaN there (see _compare)
  np.testing.assert_allclose(g.numpy()[fin], wg[fin], rtol=1e-4, atol=1e-6)

def test_sigmoid_extreme_gradient():
  # public tinygrad's test_ops test_sigmoid_extreme: the gradient at +-300 is 0, not NaN
  for v in (300.0, -300.0):
    x = Tensor([v])
    assert x.sigmoid()[0].gradient(x)[0].item() == 0.0

# small and middling magnitudes, compared by relative error: where a formula cancels (2*sigmoid(2x) - 1, e**x - 1,
# log(1 + e)) the value was 0 or digits off, which an absolute tolerance does not see (tanh(1e-20) was 0, elu(-1e-6)
# 1.3% off, logsigmoid(15) 17%, mish(-15) 17%, erf(1e-20) 0, softplus(3e38, beta=2) inf)
SMALL = [s * v for v in (1e-38, 1e-30, 1e-20, 1e-12, 1e-7, 1e-4, 1e-2, 0.3, 0.49, 0.51, 2.0, 9.0, 15.0, 30.0, 60.0, 85.0) for s in (1, -1)]
ACCURATE = {
  "tanh": (Tensor.tanh, torch.tanh), "elu": (Tensor.elu, F.elu), "celu_a3": (lambda x: x.celu(3.0), lambda x: F.celu(x, 3.0)),
  "selu": (Tensor.selu, F.selu), "logsigmoid": (Tensor.logsigmoid, F.logsigmoid), "mish": (Tensor.mish, F.mish),
  "erf": (Tensor.erf, torch.erf), "gelu": (Tensor.gelu, lambda x: F.gelu(x, approximate="tanh")), "sinh": (Tensor.sinh, torch.sinh),
  "softplus_b2": (lambda x: x.softplus(2.0), lambda x: F.softplus(x, 2.0)),
  "softplus_t1": (lambda x: x.softplus(threshold=1.0), lambda x: F.softplus(x, threshold=1.0)),
}

@pytest.mark.parametrize("name", list(ACCURATE))
def test_activations_keep_their_digits(name):
  fn, ref = ACCURATE[name]
  x = np.array(SMALL + [3e38, -3e38], np.float32)
  got = fn(Tensor(x)).numpy().astype(np.float64)
  want = ref(torch.tensor(x, dtype=torch.float64)).numpy()   # float64 torch: the true value to float32's precision
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-44, err_msg=name)
  np.testing.assert_array_equal(np.signbit(fn(Tensor([-0.0])).numpy()), np.signbit(ref(torch.tensor([-0.0])).numpy()))

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=str)
@pytest.mark.parametrize("ab", [(1/6, 0.5), (0.2, 0.5), (-0.25, 0.5)], ids=str)
def test_hardsigmoid_keeps_its_digits_near_the_kinks(ab, dt):
  # alpha*x + beta cancelled near its zero (x = -3 for torch's alpha 1/6, beta 1/2): hardsigmoid(-3 + 2**-20) was 1.49e-7,
  # 6% under torch's and the true 1.589e-7
  alpha, beta = ab
  x0 = -beta / alpha
  xs = np.array([x0 + s * 2.0**-e for e in (20, 16, 10, 4) for s in (1, -1)] + [x0 + 1 / alpha - 2.0**-20, 0.0], np.float64)
  xs = xs.astype(to_numpy(dt))
  got = Tensor(xs, dtype=dt).hardsigmoid(alpha, beta).numpy().astype(np.float64)
  want = np.clip(alpha * (xs.astype(np.float64) - x0), 0, 1)   # (exact for these: x - x0 is exact, one rounding)
  np.testing.assert_allclose(got, want, rtol=4 * np.finfo(to_numpy(dt)).eps, atol=0)

def test_cosh_and_sinh_do_not_overflow_before_their_value():
  np.testing.assert_allclose(Tensor([89.0, -89.0]).cosh().numpy(), np.cosh(np.float64([89, -89])), rtol=1e-6)
  np.testing.assert_allclose(Tensor([89.0, -89.0]).sinh().numpy(), np.sinh(np.float64([89, -89])), rtol=1e-6)

# float64 to its last digits (the stdlib's math functions are the reference: a few ulp): the series and the float32
# approximations these used were 1e-11 (tanh), 4e-14 (sinh), 6e-10 (elu's expm1) and 1.5e-7 (erf) off
F64 = {"tanh": (Tensor.tanh, math.tanh), "sinh": (Tensor.sinh, math.sinh), "elu": (Tensor.elu, lambda v: v if v > 0 else math.expm1(v)),
       "erf": (Tensor.erf, math.erf), "sigmoid": (Tensor.sigmoid, lambda v: 1 / (1 + math.exp(-v)) if v > -700 else math.exp(v))}
@pytest.mark.parametrize("name", list(F64))
def test_float64_activations_to_the_last_digits(name):
  rng = np.random.default_rng(5)
  xs = np.concatenate([rng.uniform(-0.6, 0.6, 400), rng.uniform(-7, 7, 400), [0.4999, 0.5, 0.5001, -1.9999, 2.0, 2.0001, 1e-300, -0.0, 6.5, 30.0]])
  got = F64[name][0](Tensor(xs)).numpy()
  want = np.array([F64[name][1](float(v)) for v in xs])
  rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
  assert rel.max() < 4e-15, (name, xs[rel.argmax()], got[rel.argmax()], want[rel.argmax()])
  # the gradient of erf is its formula's, not the approximation's slope
  if name == "erf":
    x = Tensor(xs, requires_grad=True)
    g = x.erf().sum().gradient(x)[0].numpy()
    np.testing.assert_allclose(g, 2 / math.sqrt(math.pi) * np.exp(-xs * xs), rtol=1e-14, atol=1e-300)

def test_softplus_gradient_at_nan_is_nan():
  # torch's (vectorized) and public tinygrad's answer; the max/abs form's chain gave 1 (max's gradient picked a side)
  for beta in (1.0, 2.0):
    x = Tensor([math.nan, -30.0, 0.0, 25.0], requires_grad=True)
    g = x.softplus(beta).sum().gradient(x)[0].numpy()
    tx = torch.tensor([math.nan, -30.0, 0.0, 25.0], requires_grad=True)
    F.softplus(tx, beta).sum().backward()
    assert math.isnan(g[0])
    np.testing.assert_allclose(g[1:], tx.grad.numpy()[1:], rtol=1e-6)

def test_float16_selu_rounds_once():
  # scale * alpha * expm1(x) in float32 and one rounding to float16, as torch: selu(-1.19e-7) was a subnormal step off
  xs = np.array([-1.1920929e-07, -5.96e-8, -1e-4, -0.3, -2.0, 0.7, 3.0], dtype=np.float16)
  got = Tensor(xs).selu().numpy()
  want = F.selu(torch.tensor(xs)).numpy()
  assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), (got, want)

# float16/bfloat16: every activation computes in float32 and rounds once (docs/guide.md), so its value is torch's float32
# one rounded to the dtype, at the edges and at random points near each kink and threshold; the gradient is torch's in the
# dtype, its float32 one rounded, or its float64 one rounded (within a few ulp: torch's half kernels round some steps, and
# its 1 - y*y gives sigmoid's 0 at 20, ours the true 2.1e-9; tanh's past 15 is left out: 0 even in float64, ours the
# true 1.7e-17 at 20). On the CPU (PYTHON: minutes for these graphs).
# ACT_HALF_EXAMPLES=n runs n examples
_KINKS = [0.0, 3.0, -3.0, 6.0, 1.0, -1.0, 20.0, 10.0, -2.0, 0.5, 11.0, 5.0, 88.0, -88.0]
@settings(max_examples=int(os.getenv("ACT_HALF_EXAMPLES", "3")), deadline=None, suppress_health_check=list(HealthCheck))
@given(dt=st.sampled_from(["float16", "bfloat16"]), device=st.just("CPU"),
       near=st.lists(st.tuples(st.sampled_from(_KINKS), st.sampled_from([0.0, 1e-3, 2**-10, 2**-7, 0.1, 0.37]), st.sampled_from([1, -1])), min_size=8, max_size=8))
def test_half_activations_round_torchs_float32_once(dt, device, near):
  tdt = getattr(torch, dt)
  fi = torch.finfo(tdt)
  xs = torch.tensor([k + s * d for k, d, s in near] + [0.0, -0.0, math.inf, -math.inf, math.nan, fi.max, -fi.max, fi.tiny, -fi.tiny / 4, 300.0, -300.0], dtype=tdt)
  names = [n for n in ACTS if n != "abs"]
  x = Tensor(np.tile(xs.float().numpy(), (len(names), 1)), device=device, dtype=getattr(dtypes, dt), requires_grad=True)
  y = Tensor.stack(*(ACTS[n][0](x[i]) for i, n in enumerate(names)))
  g = y.sum().gradient(x)[0]
  got, gg = y.float().numpy(), g.float().numpy()
  eps = fi.eps
  for i, n in enumerate(names):
    xf = xs.float().requires_grad_(True)
    yf = ACTS[n][1](xf)
    yf.sum().backward()
    xh, xd = xs.clone().requires_grad_(True), xs.double().requires_grad_(True)
    ACTS[n][1](xh).sum().backward()
    (yd := ACTS[n][1](xd)).sum().backward()
    wantd = yd.detach().to(tdt).float().numpy()
    want, wg, wgh, wgd = yf.detach().to(tdt).float().numpy(), xf.grad.to(tdt).float().numpy(), xh.grad.float().numpy(), xd.grad.to(tdt).float().numpy()
    for j, v in enumerate(xs.float().tolist()):
      if (n, v) in FORWARD_LIMIT: continue
      # (or torch's float64 value rounded, where its float32 formula overflows: gelu of bfloat16's largest is that, torch's inf)
      assert any((np.isnan(got[i, j]) and np.isnan(w)) or got[i, j] == pytest.approx(w, rel=eps, abs=float(fi.tiny)) for w in (want[j], wantd[j])), \
        f"{dt} {n}({v}) = {got[i, j]}, torch {want[j]}"
      if math.isnan(v) or not all(math.isfinite(w) for w in (v, want[j])) and np.isnan(wg[j]) or n == "tanh" and abs(v) > 15: continue
      assert any((np.isnan(gg[i, j]) and np.isnan(w)) or gg[i, j] == pytest.approx(w, rel=8 * eps, abs=float(fi.tiny)) for w in (wg[j], wgh[j], wgd[j])), \
        f"d{n}/dx {dt} at {v} = {gg[i, j]}, torch {wg[j]} ({dt}: {wgh[j]})"
