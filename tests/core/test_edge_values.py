"""Every unary elementwise op and activation, the binary ops with awkward operands, and the common reductions, at the edge
values of float32 (+-0.0, a denormal, +-1e-20, +-1, +-88/89 where e**x overflows, +-1e10, +-1e30, +-3.4e38, +-inf, NaN),
forward and gradient, against torch on the CPU and the PYTHON device: NaN where torch has NaN, infinities of torch's sign,
zeros of torch's sign, finite values to float32's precision (torch's number, or the true one where torch's float32 formula
under- or overflows: sigmoid(-89) is 2.2e-39, not torch's 0). What docs/guide.md documents as a difference is left out
here, by name (EXCEPT)."""
import inspect, itertools, math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.dtype import to_numpy

torch = pytest.importorskip("torch", reason="the reference for edge values: pip install torch")
F = torch.nn.functional
DEVICES = ["CPU", "PYTHON"]
nan, inf = math.nan, math.inf
EDGES = [0.0, -0.0, 1e-45, -1e-45, 1e-20, -1e-20, 1.0, -1.0, 88.0, -88.0, 89.0, -89.0, 1e10, -1e10, 1e30, -1e30, 3.4e38, -3.4e38,
         inf, -inf, nan]

# every Tensor method that takes no argument and maps a float tensor elementwise onto one of its shape: its torch reference
UNARY = {
  "abs": torch.abs, "acos": torch.acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh, "atan": torch.atan,
  "atanh": torch.atanh, "ceil": torch.ceil, "celu": F.celu, "cos": torch.cos, "cosh": torch.cosh, "elu": F.elu, "erf": torch.erf,
  "exp": torch.exp, "exp2": torch.exp2, "floor": torch.floor, "gelu": lambda x: F.gelu(x, approximate="tanh"),
  "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "hardtanh": F.hardtanh, "leaky_relu": F.leaky_relu, "log": torch.log,
  "log10": torch.log10, "log2": torch.log2, "logsigmoid": F.logsigmoid, "mish": F.mish, "neg": torch.neg,
  "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x), "reciprocal": torch.reciprocal, "relu": torch.relu, "relu6": F.relu6,
  "round": torch.round, "rsqrt": torch.rsqrt, "selu": F.selu, "sigmoid": torch.sigmoid, "sign": torch.sign, "silu": F.silu,
  "sin": torch.sin, "sinh": torch.sinh, "softplus": F.softplus, "softsign": F.softsign, "sqrt": torch.sqrt, "square": torch.square,
  "swish": F.silu, "tan": torch.tan, "tanh": torch.tanh, "trunc": torch.trunc,
  "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "logical_not": torch.logical_not,
}
# no-argument methods that keep the shape but are not elementwise math (casts, copies, reductions along the last axis ...)
NOT_UNARY = {"argsort", "bfloat16", "bool", "cat", "clone", "contiguous", "contiguous_backward", "cumprod", "cumsum", "detach",
             "double", "dropout", "empty_like", "flatten", "float", "half", "int", "is_param_", "layernorm", "log_softmax",
             "logcumsumexp", "long", "ones_like", "rand_like", "randn_like", "realize", "short", "softmax", "softmin", "squeeze",
             "zeros_like"}
# documented differences (docs/guide.md, "Numerics" and "Differences from public tinygrad"): sign(NaN) is NaN as numpy
# (torch: 0); hardswish(-inf) is 0, the limit (torch's formula: NaN)
EXCEPT = {("sign", nan), ("hardswish", -inf)}

def test_the_sweep_covers_every_unary_method():
  # a new elementwise method must get a torch reference here (or be listed as not elementwise)
  found, x = set(), Tensor([1.0, 2.0])
  for name in dir(Tensor):
    fn = getattr(Tensor, name)
    # (instance methods only: a static one called with a tensor may set global state, as manual_seed(x) would)
    if name.startswith("_") or not inspect.isfunction(inspect.getattr_static(Tensor, name)): continue
    try: params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError): continue
    if any(p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params): continue
    try: out = fn(x)
    except Exception: continue
    if isinstance(out, Tensor) and out.shape == x.shape: found.add(name)
  assert found - NOT_UNARY - set(UNARY) == set(), "unary methods with no torch reference in the sweep"
  assert set(UNARY) - found == set(), "the sweep names methods Tensor no longer has"

def _close(got: float, want: float, true: float | None, rtol: float, atol: float = 3e-45) -> bool:
  # torch's value: NaN for NaN, the same infinity, a zero of the same sign; else within rtol of torch's or of the true value
  if math.isnan(want): return math.isnan(got)
  if math.isinf(want) and got == want: return True
  if want == 0 and got == 0: return math.copysign(1, got) == math.copysign(1, want)
  if math.isnan(got) or math.isinf(got) and not (true is not None and abs(true) > 3.4028234663852886e38): return False
  return any(r is not None and math.isfinite(r) and abs(got - r) <= rtol * abs(r) + atol for r in (want, true))

def _torch_ref(fn, xs: list[float], dt) -> tuple[list, list]:
  tx = torch.tensor(xs, dtype=dt, requires_grad=True)
  ty = fn(tx)
  if not ty.dtype.is_floating_point: return ty.tolist(), [0.0] * len(xs)
  ty.sum().backward()
  return ty.detach().tolist(), tx.grad.tolist()

def _f32(v: float) -> float: return float(np.float32(v)) if math.isfinite(v) and abs(v) <= 3.4028234663852886e38 else v

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_edges_match_torch(name, device):
  x = Tensor(EDGES, device=device, requires_grad=True)
  y = getattr(x, name)()
  g = y.sum().gradient(x, materialize_grads=True)[0] if dtypes.is_float(y.dtype) else None
  got, gg = y.tolist(), g.tolist() if g is not None else [0.0] * len(EDGES)
  want, wg = _torch_ref(UNARY[name], EDGES, torch.float32)
  xs64 = [float(np.float32(v)) for v in EDGES]   # the float32 inputs, exactly, for the float64 (true value) reference
  true, tg = _torch_ref(UNARY[name], xs64, torch.float64)
  bad = []
  for x0, a, w, t, da, dw, dt in zip(EDGES, got, want, true, gg, wg, tg):
    if (name, x0) in EXCEPT or (isinstance(x0, float) and math.isnan(x0) and (name, nan) in EXCEPT): continue
    if isinstance(w, bool):
      if a != w: bad.append(f"{name}({x0}) = {a}, torch {w}")
      continue
    if not _close(a, w, _f32(t), 2e-6 if name not in APPROX else APPROX[name]): bad.append(f"{name}({x0}) = {a!r}, torch {w!r} (true {t!r})")
    # the gradient: not at a NaN input (not specified), nor where torch's is NaN from inf*0 at an infinite input or value;
    # the sign of a zero gradient is not compared
    if math.isnan(x0) or (math.isnan(dw) and not (math.isfinite(x0) and math.isfinite(w))): continue
    if da == 0 and dw == 0: continue
    # (below float32's smallest normal absolutely: torch's float32 and float64 formulas both give sigmoid'(88) = 0, not e**-88)
    if not _close(da, dw, _f32(dt), 2e-5 if name not in APPROX else 10 * APPROX[name], 1.2e-38): bad.append(f"d{name}({x0}) = {da!r}, torch {dw!r} (true {dt!r})")
  assert not bad, "\n".join(bad)

# formulas with a known error bound above float32's rounding: erf (Abramowitz-Stegun, 1.5e-7 absolute; gelu by it)
APPROX = {"erf": 2e-7, "gelu": 2e-6}

# ---- binary ops: every pair of awkward operands ----
BV = [0.0, -0.0, 1e-45, -1e-45, 0.1, -0.1, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 1e30, -1e30, 3.4e38, -3.4e38, inf, -inf, nan]
BA, BB = (list(t) for t in zip(*itertools.product(BV, BV)))
BINARY = {
  "div": (Tensor.div, torch.div), "mul": (Tensor.mul, torch.mul), "add": (Tensor.add, torch.add), "sub": (Tensor.sub, torch.sub),
  "pow": (Tensor.pow, torch.pow), "maximum": (Tensor.maximum, torch.maximum), "minimum": (Tensor.minimum, torch.minimum),
  "fmod": (Tensor.fmod, torch.fmod), "mod": (Tensor.mod, torch.remainder), "floordiv": (lambda a, b: a // b, lambda a, b: a // b),
  "copysign": (Tensor.copysign, torch.copysign), "logaddexp": (Tensor.logaddexp, torch.logaddexp),
  # lerp from the nearer end, as torch: lerp(1e8, 1, 1) is 1 (was 0), lerp(-inf, 1, 0.5) is -inf (was NaN)
  "lerp_1": (lambda a, b: a.lerp(b, 1.0), lambda a, b: torch.lerp(a, b, 1.0)), "lerp_3/4": (lambda a, b: a.lerp(b, 0.75), lambda a, b: torch.lerp(a, b, 0.75)),
  "lerp_1/4_tensor": (lambda a, b: a.lerp(b, a.full_like(0.25)), lambda a, b: torch.lerp(a, b, torch.full_like(a, 0.25))),
  "lt": (lambda a, b: a < b, lambda a, b: a < b), "eq": (lambda a, b: a == b, lambda a, b: a == b), "ne": (lambda a, b: a != b, lambda a, b: a != b),
}
# the tie max(-0.0, 0.0) is numpy's (the second operand: MAX is commutative in the IR); torch returns the first
def _binary_skip(name, a, b):
  if name in ("maximum", "minimum") and a == 0 and b == 0: return True
  # fmod/% with a quotient past 2**48 (two exact reduction steps of float32) is NaN (3.4e38 fmod 2.5: C's 1.5), and so is
  # the remainder by the denormal 1e-45 (the quotient overflows; the true remainder of any float by 2**-149 is 0)
  if name in ("fmod", "mod") and math.isfinite(a) and math.isfinite(b) and b != 0 and abs(a / b) >= 2.0 ** 48: return True
  # torch's lerp is a fused multiply-add: the sign of a zero from a product that underflows is the fma's (-0.0), ours +0.0
  if name.startswith("lerp") and abs(a) <= 1e-45 and abs(b) <= 1e-45: return True
  return False
# x**y by 2**(y log2 x) where the renderer has no pow: about |y log2 x| ulps (1e30**1 is 1.1e-6 off)
BINARY_RTOL = {"pow": 2e-5}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_edges_match_torch(name, device):
  a, b = Tensor(BA, device=device, requires_grad=True), Tensor(BB, device=device, requires_grad=True)
  y = BINARY[name][0](a, b)
  ta, tb = torch.tensor(BA, requires_grad=True), torch.tensor(BB, requires_grad=True)
  ty = BINARY[name][1](ta, tb)
  got, want = y.tolist(), ty.tolist()
  grad = dtypes.is_float(y.dtype) and name != "floordiv"   # (torch: no derivative for floor_divide)
  if grad:
    ga, gb = (t.tolist() for t in y.sum().gradient(a, b, materialize_grads=True))
    ty.sum().backward()
    wga, wgb = ta.grad.tolist(), tb.grad.tolist()
  bad = []
  for i, (x0, x1) in enumerate(zip(BA, BB)):
    if _binary_skip(name, x0, x1): continue
    if not dtypes.is_float(y.dtype):
      if got[i] != want[i]: bad.append(f"{name}({x0}, {x1}) = {got[i]}, torch {want[i]}")
      continue
    if not _close(got[i], want[i], None, BINARY_RTOL.get(name, 2e-6)): bad.append(f"{name}({x0}, {x1}) = {got[i]!r}, torch {want[i]!r}")
    # gradients where both operands and torch's value are finite (elsewhere torch's are inf*0 arithmetic)
    if not grad or not (math.isfinite(x0) and math.isfinite(x1) and math.isfinite(want[i])): continue
    for nm, d, dw in (("da", ga[i], wga[i]), ("db", gb[i], wgb[i])):
      # d fmod/db is -trunc(a/b): torch's of the rounded a/b (1 fmod 0.1: -10), ours of the exact one its value has (-9)
      if nm == "db" and name in ("fmod", "mod") and abs(d - dw) == 1: continue
      if not (d == 0 and dw == 0) and not _close(d, dw, None, 10 * BINARY_RTOL.get(name, 2e-6)): bad.append(f"{nm} {name}({x0}, {x1}) = {d!r}, torch {dw!r}")
  assert not bad, "\n".join(bad[:40])

def test_binary_nan_gradients_of_maximum_minimum_match_torch():
  # torch passes the whole gradient to both sides of a max/min with a NaN (neither is smaller); ours gave 0
  for fn, tfn in ((Tensor.maximum, torch.maximum), (Tensor.minimum, torch.minimum)):
    a, b = Tensor([nan, 1.0, nan], requires_grad=True), Tensor([2.0, nan, nan], requires_grad=True)
    ga, gb = fn(a, b).sum().gradient(a, b)
    assert ga.tolist() == [1.0, 1.0, 1.0] and gb.tolist() == [1.0, 1.0, 1.0]

# ---- int division with negative operands: torch's floor semantics, INT_MIN // -1 wraps (docs/guide.md) ----
IV = [0, 1, -1, 2, -2, 7, -7, 3, -3, 2**62, -2**63, 2**63 - 1]
IA, IB = (list(t) for t in zip(*[(a, b) for a, b in itertools.product(IV, IV) if b != 0]))
INT_OPS = {
  "//": (lambda a, b: a // b, lambda a, b: torch.div(a, b, rounding_mode="floor")), "%": (lambda a, b: a % b, torch.remainder),
  "fmod": (Tensor.fmod, torch.fmod), "trunc": (lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: torch.div(a, b, rounding_mode="trunc")),
  "floor": (lambda a, b: a.div(b, rounding_mode="floor"), lambda a, b: torch.div(a, b, rounding_mode="floor")),
  "idiv": (Tensor.idiv, lambda a, b: torch.div(a, b, rounding_mode="trunc")),
}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.int64, dtypes.int32])
@pytest.mark.parametrize("name", list(INT_OPS))
def test_int_division_matches_torch(name, dt, device):
  lo, hi = dtypes.min(dt), dtypes.max(dt)
  pairs = [(a, b) for a, b in zip(IA, IB) if lo <= a <= hi and lo <= b <= hi]
  a, b = (list(t) for t in zip(*pairs))
  got = INT_OPS[name][0](Tensor(a, dtype=dt, device=device), Tensor(b, dtype=dt, device=device)).tolist()
  tdt = torch.int64 if dt == dtypes.int64 else torch.int32
  for i, (x0, x1) in enumerate(pairs):
    if x0 == lo and x1 == -1:   # torch's CPU kernel traps on it (SIGFPE); ours wraps, as numpy
      assert got[i] == (lo if name in ("//", "trunc", "floor", "idiv") else 0), (name, x0, x1, got[i])
      continue
    want = INT_OPS[name][1](torch.tensor([x0], dtype=tdt), torch.tensor([x1], dtype=tdt)).item()
    assert got[i] == want, f"{dt} {x0} {name} {x1} = {got[i]}, torch {want}"

# ---- reductions ----
ROWS = [[1.0, nan, 3.0], [nan, nan, nan], [-inf, -inf, -inf], [-inf, 1.0, -inf], [inf, 1.0, 2.0], [inf, inf, 1.0], [0.0, -0.0, -1.0],
        [2.0, 2.0, 1.0], [-inf, inf, 0.0], [1.0, 3.0, nan], [-0.0, -0.0, -0.0]]
REDUCE = {
  "max": (lambda x: x.max(1), lambda x: x.amax(1)), "min": (lambda x: x.min(1), lambda x: x.amin(1)),
  "argmax": (lambda x: x.argmax(1), lambda x: x.argmax(1)), "argmin": (lambda x: x.argmin(1), lambda x: x.argmin(1)),
  "logsumexp": (lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)), "softmax": (lambda x: x.softmax(1), lambda x: x.softmax(1)),
  "log_softmax": (lambda x: x.log_softmax(1), lambda x: x.log_softmax(1)), "softmin": (lambda x: x.softmin(1), lambda x: F.softmin(x, 1)),
  "logcumsumexp": (lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1)), "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
  "cumprod": (lambda x: x.cumprod(1), lambda x: x.cumprod(1)), "sum": (lambda x: x.sum(1), lambda x: x.sum(1)),
  "prod": (lambda x: x.prod(1), lambda x: x.prod(1)), "mean": (lambda x: x.mean(1), lambda x: x.mean(1)),
  "var": (lambda x: x.var(1), lambda x: x.var(1)), "std": (lambda x: x.std(1), lambda x: x.std(1)),
  "cummax": (lambda x: x.cummax(1)[0], lambda x: x.cummax(1)[0]), "cummax_idx": (lambda x: x.cummax(1)[1], lambda x: x.cummax(1)[1]),
  "cummin": (lambda x: x.cummin(1)[0], lambda x: x.cummin(1)[0]), "cummin_idx": (lambda x: x.cummin(1)[1], lambda x: x.cummin(1)[1]),
  "sort": (lambda x: x.sort(1)[0], lambda x: x.sort(1)[0]), "topk": (lambda x: x.topk(2, 1)[0], lambda x: x.topk(2, 1)[0]),
}
# gradients left out (rows with an infinity: torch's own are inf*0 or inf/inf, and not consistent between its kernels); the
# gradient of cummax/cummin on a tie splits it among the tied positions (torch: all to the last), as max does
TIES = {"max", "min", "cummax", "cummin", "sort", "topk"}
NO_GRAD = {"argmax", "argmin", "cummax_idx", "cummin_idx", "cummax", "cummin", "sort", "topk"}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(REDUCE))
def test_reduction_edges_match_torch(name, device):
  x = Tensor(ROWS, device=device, requires_grad=True)
  y = REDUCE[name][0](x)
  tx = torch.tensor(ROWS, requires_grad=True)
  ty = REDUCE[name][1](tx)
  got, want = y.numpy(), ty.detach().numpy()
  assert got.shape == want.shape
  for g, w, r in zip(got.reshape(len(ROWS), -1).tolist(), want.reshape(len(ROWS), -1).tolist(), ROWS):
    # (which of the tied 0.0 and -0.0 a max, min or sort returns is not specified: MAX is commutative in the IR)
    if name in TIES and 0.0 in r: g, w = [v + 0.0 for v in g], [v + 0.0 for v in w]
    assert all(_close(a, b, None, 2e-6) if isinstance(b, float) else a == b for a, b in zip(g, w)), f"{name}({r}) = {g}, torch {w}"
  if name in NO_GRAD: return
  wts = np.arange(1, y.numel() + 1, dtype=np.float32).reshape(y.shape)
  gg = (y * Tensor(wts, device=device)).sum().gradient(x)[0].numpy()
  (ty * torch.tensor(wts)).sum().backward()
  for g, w, r in zip(gg.tolist(), tx.grad.numpy().tolist(), ROWS):
    if not all(math.isfinite(v) for v in r) and name not in ("max", "min"): continue
    # (weights up to 33 summed: float32's rounding of that scale; log_softmax of a row of equal values is exact here)
    assert all(_close(a, b, None, 1e-5, 1e-4) or (a == 0 and b == 0) for a, b in zip(g, w)), f"d{name}({r}) = {g}, torch {w}"

@pytest.mark.parametrize("device", DEVICES)
def test_empty_reductions_match_torch(device):
  e = Tensor.empty(2, 0, device=device)
  te = torch.empty(2, 0)
  for name in ("mean", "sum", "prod", "logsumexp", "var", "std"):
    np.testing.assert_equal(getattr(e, name)(1).numpy(), getattr(te, name)(1).numpy(), err_msg=name)
  assert math.isnan(Tensor.empty(0, device=device).mean().item())

def test_cummax_index_with_nan_is_torchs():
  # the running max is NaN from the first NaN on: its index is the last NaN (ours stayed at the last number)
  assert Tensor([[1.0, nan, 3.0], [nan, nan, nan], [1.0, 3.0, nan]]).cummax(1)[1].tolist() == [[0, 1, 1], [0, 1, 2], [0, 1, 2]]
  assert Tensor([[1.0, 3.0, nan]]).cummin(1)[1].tolist() == [[0, 0, 2]]

def test_std_gradient_at_zero_is_zero():
  # torch's: std of equal values has gradient 0 (sqrt's 1/(2*0) times 0 was NaN)
  x = Tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], requires_grad=True)
  g = x.std(1, correction=0).sum().gradient(x)[0].numpy()
  tx = torch.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], requires_grad=True)
  tx.std(1, correction=0).sum().backward()
  np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-6)

def test_max_gradient_with_nan_is_nan_over_the_row():
  # torch's: a NaN max is none of the inputs, its gradient g/0 * 0 NaN over the row (ours was 0, silently)
  x = Tensor([[1.0, nan, 3.0], [1.0, 2.0, 3.0]], requires_grad=True)
  g = x.max(1).sum().gradient(x)[0].numpy()
  assert np.isnan(g[0]).all() and g[1].tolist() == [0.0, 0.0, 1.0]

# ---- pinned: the defects this sweep was built around ----
@pytest.mark.parametrize("device", DEVICES)
def test_odd_functions_keep_negative_zero(device):
  for name in ("relu", "asinh", "atanh", "atan", "asin", "sin", "tan", "tanh", "erf", "sinh", "gelu", "silu", "leaky_relu", "elu",
               "softsign", "relu6", "hardtanh", "selu", "celu", "mish", "hardswish", "sqrt", "trunc", "round", "floor", "ceil"):
    y = getattr(Tensor([-0.0, 0.0], device=device), name)().numpy()
    want = getattr(F, name, getattr(torch, name, None))(torch.tensor([-0.0, 0.0])) if name not in ("gelu",) else F.gelu(torch.tensor([-0.0, 0.0]), approximate="tanh")
    assert np.signbit(y).tolist() == np.signbit(want.numpy()).tolist(), name
  assert np.signbit(Tensor([-5.0, -1e30], device=device).hardswish().numpy()).all()   # x * 0 / 6: -0.0 below -3, as torch

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16], ids=str)
def test_elu_with_a_negative_alpha_keeps_the_sign_of_zero(dt, device):
  # alpha * expm1(+-0.0) with alpha < 0 flipped the zero's sign: elu(0.0, -0.5) was -0.0 and elu(-0.0, -0.5) 0.0 (torch: x);
  # the gradient at 0 stays the left side's alpha. celu's x/alpha flips it twice (right before)
  xs = [0.0, -0.0, -1.0, 2.0]
  tdt = torch.float32 if dt == dtypes.float32 else torch.float16
  for fn, tfn in ((lambda t: t.elu(-0.5), lambda t: F.elu(t, -0.5)), (lambda t: t.selu(-1.0, 1.5), lambda t: 1.5 * F.elu(t, -1.0)),
                  (lambda t: t.celu(-2.0), lambda t: F.celu(t, -2.0))):
    x, tx = Tensor(xs, dtype=dt, device=device, requires_grad=True), torch.tensor(xs, dtype=tdt, requires_grad=True)
    y, ty = fn(x), tfn(tx)
    ty.sum().backward()
    np.testing.assert_allclose(y.float().numpy(), ty.detach().float().numpy(), rtol=1e-3)
    assert np.signbit(y.float().numpy()).tolist() == torch.signbit(ty).tolist()
    np.testing.assert_allclose(y.sum().gradient(x)[0].float().numpy(), tx.grad.float().numpy(), rtol=1e-3)

@pytest.mark.parametrize("device", DEVICES)
def test_cat_and_pad_keep_negative_zero(device):
  # cat adds its parts padded along the axis: padded with 0.0, -0.0 + 0.0 gave 0.0 wherever the kernel computed the sum
  # (1 / cat(...) was +inf where torch gives -inf, max over a cat 0.0); pad(value=-0.0) padded with 0.0
  a, b = Tensor.full((5,), -0.0, device=device).contiguous(), Tensor([-0.0, 2.0, -0.0], device=device)
  ta, tb = torch.full((5,), -0.0), torch.tensor([-0.0, 2.0, -0.0])
  assert (1 / a.cat(b)).tolist() == (1 / torch.cat([ta, tb])).tolist()
  assert np.signbit(a.cat(b, a).numpy()).tolist() == torch.signbit(torch.cat([ta, tb, ta])).tolist()
  assert np.signbit(Tensor.stack(a, a, dim=1).T.contiguous().numpy()).all()
  assert np.signbit(Tensor([-1.0, -2.0], device=device).cat(Tensor([-0.0], device=device)).max().numpy())
  assert np.signbit(Tensor([1.0], device=device).pad((1, 1), value=-0.0).numpy()).tolist() == [True, False, True]

@pytest.mark.parametrize("device", DEVICES + ["WEBGPU"])
def test_sums_start_from_positive_zero(device):
  # a sum starts from +0.0 (torch, numpy): over axes of size 1 the reduce is a reshape, which kept -0.0 ([-0.0].sum() was -0.0),
  # and x + 0.0 was folded to x (-0.0 + 0.0 gave -0.0; WGSL's compiler folds the literal too). prod and max keep it
  # (1 * -0.0, max of one): torch's too
  from tinygrad import Device
  try: Device[device]
  except Exception as e: pytest.skip(f"{device} does not open here ({type(e).__name__})")
  cases = {"sum": lambda t: t.sum(), "mean": lambda t: t.mean(), "sum1": lambda t: t.reshape(-1, 1).sum(1), "cumsum": lambda t: t.cumsum(0),
           "sum1_keep": lambda t: t.reshape(-1, 1).sum(1, keepdim=True), "add0": lambda t: t + 0, "radd0": lambda t: 0.0 + t,
           "prod": lambda t: t.prod(), "max": lambda t: t.max(), "min": lambda t: t.reshape(-1, 1).min(), "half": lambda t: t.half().sum()}
  for vals in ([-0.0], [-0.0, 1.0], [-0.0, -0.0]):
    for name, fn in cases.items():
      if name in ("prod", "max") and len(vals) > 1 or name == "half" and dtypes.half not in Device[device].renderer.supported_dtypes: continue
      got, want = fn(Tensor(vals, device=device)).numpy(), fn(torch.tensor(vals)).numpy()
      assert np.signbit(got).tolist() == np.signbit(want).tolist(), (name, vals)
  assert not np.signbit(Tensor(-0.0, device=device).sum().numpy())

@pytest.mark.parametrize("device", DEVICES + ["WEBGPU", "CL"])
def test_exp_overflow_and_underflow_survive_a_following_multiply(device):
  # exp's inf and 0 come from its last multiply by a power of 2, which WGSL's compiler reassociated with a multiply after
  # it: exp(100) * 1e-30 was 4.5e8 (not inf) and exp(-200) * -3.4e38 was -2.3e-7 (not -0), so gelu's gradient at -3.4e38 was -1.7e-7
  from tinygrad import Device
  try: Device[device]
  except Exception as e: pytest.skip(f"{device} does not open here ({type(e).__name__})")
  xs = [100.0, 89.0, 88.72283935546875, 88.72283172607422, math.inf, -200.0, -104.0, -103.97208404541016, -math.inf, 1.0, 0.0, nan]
  e = Tensor(xs, device=device).exp().numpy()
  assert e[2] == e[4] == inf and e[3] < inf and e[7] == e[8] == 0 and np.isnan(e[-1])
  for c in (1e-30, 1e30, -3.4e38):
    with np.errstate(all="ignore"): want = e * np.float32(c)
    np.testing.assert_allclose((Tensor(xs, device=device).exp() * c).numpy(), want, rtol=1e-6, atol=0, err_msg=f"exp(x) * {c}")
  g = Tensor([-3.4e38, 3.4e38], device=device, requires_grad=True)
  g.gelu("none").sum().backward()
  assert g.grad.tolist() == [0.0, 1.0]

def test_kink_gradients_are_torchs():
  # relu: 0 at +-0 (and 1 at NaN, torch's threshold_backward); relu6/hardtanh 0 on the bounds; abs 0 at 0; clamp 1 on the bounds;
  # hardswish 0 at -3 and 1 at 3 (it was -0.5 and 1.5: the inner side of both kinks); hardsigmoid 0 at both
  x = Tensor([0.0, -0.0, 1.0, -1.0, 6.0, 3.0, -3.0, nan], requires_grad=True)
  for fn, tfn in ((Tensor.relu, torch.relu), (Tensor.relu6, F.relu6), (Tensor.hardtanh, F.hardtanh), (Tensor.abs, torch.abs),
                  (lambda t: t.clamp(0.0, 1.0), lambda t: t.clamp(0.0, 1.0)), (Tensor.leaky_relu, F.leaky_relu),
                  (Tensor.hardswish, F.hardswish), (Tensor.hardsigmoid, F.hardsigmoid)):
    tx = torch.tensor(x.tolist(), requires_grad=True)
    tfn(tx).sum().backward()
    np.testing.assert_allclose(fn(x).sum().gradient(x)[0].numpy()[:7], tx.grad.numpy()[:7], rtol=1e-6, err_msg=str(fn))
  assert Tensor([-3.0, 3.0]).hardswish().tolist() == [-0.0, 3.0] and np.signbit(Tensor([-3.0]).hardswish().numpy())[0]

@pytest.mark.parametrize("device", DEVICES)
def test_clamp_gradients_at_degenerate_and_nan_bounds_are_torchs(device):
  # torch's: x's where min <= x <= max, min's where x < min < max, max's where x > max or max < min. The selects gave x < min
  # == max to min (torch: to none) and a NaN result to its NaN bound (torch: to max only where max < min)
  xs, los, his = (list(t) for t in zip(*itertools.product([-1.0, 0.0, 1.0, nan], repeat=3)))
  ts = [Tensor(v, device=device, requires_grad=True) for v in (xs, los, his)]
  tt = [torch.tensor(v, requires_grad=True) for v in (xs, los, his)]
  torch.clamp(*tt).sum().backward()
  out = ts[0].clamp(ts[1], ts[2])
  np.testing.assert_equal(out.numpy(), torch.clamp(*tt).detach().numpy())
  for g, t in zip(out.sum().gradient(*ts), tt): np.testing.assert_equal(g.numpy(), t.grad.numpy())
  # one tensor bound: clamp_min's and clamp_max's (none at a NaN bound)
  for lo, hi in ((ts[1], None), (None, ts[2])):
    tlo, thi = (tt[1].detach().requires_grad_() if lo is not None else None), (tt[2].detach().requires_grad_() if hi is not None else None)
    tx = torch.tensor(xs, requires_grad=True)
    torch.clamp(tx, tlo, thi).sum().backward()
    b, tb = (lo, tlo) if lo is not None else (hi, thi)
    gx, gb = ts[0].clamp(lo, hi).sum().gradient(ts[0], b)
    np.testing.assert_equal(gx.numpy(), tx.grad.numpy())
    np.testing.assert_equal(gb.numpy(), tb.grad.numpy())

def test_sinh_cosh_gradients_do_not_overflow_early():
  x = Tensor([88.0, 89.0, -89.0, 89.2, 1e-20, -1e-20, 0.0], requires_grad=True)
  ts = torch.tensor(x.tolist(), dtype=torch.float64)
  np.testing.assert_allclose(x.sinh().sum().gradient(x)[0].numpy(), torch.cosh(ts).numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.cosh().sum().gradient(x)[0].numpy(), torch.sinh(ts).numpy(), rtol=1e-6)
  big = Tensor([90.0, -90.0], requires_grad=True)   # past float32's max: inf exactly where torch's is
  assert big.sinh().sum().gradient(big)[0].tolist() == [inf, inf] and big.cosh().sum().gradient(big)[0].tolist() == [inf, -inf]

def test_sin_cos_tan_gradients_at_large_arguments():
  xs = [1e10, -1e10, 1e30, 3.4e38, 12345.678]
  x = Tensor(xs, requires_grad=True)
  t = torch.tensor(xs, dtype=torch.float32).double()
  np.testing.assert_allclose(x.sin().sum().gradient(x)[0].numpy(), torch.cos(t).numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(x.cos().sum().gradient(x)[0].numpy(), -torch.sin(t).numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(x.tan().sum().gradient(x)[0].numpy(), (1 / torch.cos(t) ** 2).numpy(), rtol=1e-4)

def test_inverse_functions_gradient_at_zero_and_inf():
  # asin/asinh/atan differentiated through |x| had gradient 0 at 0 (abs's kink), atan's NaN at +-inf (inf/inf inside)
  x = Tensor([0.0, -0.0, inf, -inf], requires_grad=True)
  for fn in ("asin", "acos", "asinh", "atan", "atanh"):
    tx = torch.tensor([0.0, -0.0, inf, -inf], requires_grad=True)
    getattr(torch, fn)(tx).sum().backward()
    g = getattr(x, fn)().sum().gradient(x)[0].tolist()
    np.testing.assert_equal(g[:2], tx.grad.tolist()[:2], err_msg=fn)
    if fn == "atan": assert g[2:] == [0.0, 0.0]

def test_mish_gradient_at_huge_inputs():
  x = Tensor([3.4e38, 1e30, -89.0, 1.0], requires_grad=True)
  tx = torch.tensor(x.tolist(), dtype=torch.float64, requires_grad=True)
  F.mish(tx).sum().backward()
  np.testing.assert_allclose(x.mish().sum().gradient(x)[0].numpy(), tx.grad.numpy(), rtol=1e-5)

def test_int64_mean_does_not_wrap():
  # the int64 sum of [2**62, 2**62, 5] wrapped to a negative mean; numpy's is 3.07e18 (its float64 sum)
  for vals in ([2**62, 2**62, 5], [-2**63, -2**63, 7], [2**63 - 1] * 3, [1, 2, 3, 4]):
    t = Tensor(np.array(vals, dtype=np.int64))
    assert t.mean().dtype == dtypes.float32
    np.testing.assert_allclose(t.mean().item(), np.mean(np.array(vals, dtype=np.int64)), rtol=1e-6)
    np.testing.assert_allclose(t.var().item(), np.var(np.array(vals, dtype=np.float64), ddof=1), rtol=1e-5)
    np.testing.assert_allclose(t.std().item(), np.std(np.array(vals, dtype=np.float64), ddof=1), rtol=1e-5)
  u = np.array([2**64 - 1, 2**64 - 1, 3], dtype=np.uint64)
  np.testing.assert_allclose(Tensor(u).mean().item(), np.mean(u), rtol=1e-6)
  np.testing.assert_allclose(Tensor(np.array([[2**62, 2**62], [-3, 5]], dtype=np.int64)).mean(1).numpy(), [2.0**62, 1.0], rtol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.int16], ids=str)
def test_int_variance_at_a_large_offset_is_numpys(dt, device):
  # ints' deviations were taken in float32: [2**30 + 1, 2**30 + 3] became [2**30, 2**30], variance 0 (numpy's 2); one
  # int64 element had variance inf (its mean 1 ulp off its float32 value), not NaN
  rng = np.random.default_rng(0)
  base = {dtypes.int16: 30000, dtypes.int32: 2**30, dtypes.uint32: 2**31 + 2**30, dtypes.int64: -2**62, dtypes.uint64: 2**63 + 2**62}[dt]
  a = (np.array(base, dtype=to_numpy(dt)) + rng.integers(0, 9, (5, 4)).astype(to_numpy(dt))).astype(to_numpy(dt))
  t = Tensor(a, device=device)
  for axis, keep in [(None, False), (0, True), (1, False), ((0, 1), True)]:
    for corr in (0, 1):
      want = (a - a.min()).astype(np.float64)   # (exact: the deviations are small)
      np.testing.assert_allclose(t.var(axis, keep, corr).numpy(), want.var(axis, ddof=corr, keepdims=keep), rtol=1e-6, err_msg=f"{axis} {corr}")
      np.testing.assert_allclose(t.std(axis, keep, corr).numpy(), want.std(axis, ddof=corr, keepdims=keep), rtol=1e-6, err_msg=f"{axis} {corr}")
  assert math.isnan(Tensor(np.array([2**62 + 1]), device=device).var().item())
  huge = np.array([2**63 - 1, -2**63, 5, -7], dtype=np.int64)   # (deviations past 2**63: the float's)
  np.testing.assert_allclose(Tensor(huge, device=device).std().item(), huge.astype(np.float64).std(ddof=1), rtol=1e-6)
  # 64-bit deviations' float32 squares summed past float32's range: var was inf where numpy's is 4.3e37 (finite in float32)
  wide = np.tile(huge, 16)
  np.testing.assert_allclose(Tensor(wide, device=device).var().item(), wide.astype(np.float64).var(ddof=1), rtol=1e-5)
  np.testing.assert_allclose(Tensor(wide.view(np.uint64), device=device).std(0).numpy(), wide.view(np.uint64).astype(np.float64).std(ddof=1), rtol=1e-5)

def test_float_floor_division_and_remainder_are_torchs():
  # the quotient rounded before the floor: 1e-45 // -2.5 was -0.0 (torch -1: floor(-4e-46)), 1 // 0.1 was 10 (torch 9: 0.1
  # is 0.100000001); fmod/% of -0.0 lost the sign, and 1 % 0.1 was 0 (b * trunc(a/b) rounded; torch 0.09999999)
  a = Tensor([1e-45, -1e-45, 1.0, 0.0, -0.0, -3.0, 1.0, -2.5])
  b = Tensor([-2.5, 2.5, -inf, -1.0, 2.0, 3.0, 0.1, 0.1])
  ta, tb = torch.tensor(a.tolist()), torch.tensor(b.tolist())
  np.testing.assert_equal((a // b).numpy(), (ta // tb).numpy())
  for got, want in (((a % b).numpy(), torch.remainder(ta, tb).numpy()), (a.fmod(b).numpy(), torch.fmod(ta, tb).numpy())):
    np.testing.assert_equal(got, want)
    np.testing.assert_equal(np.signbit(got), np.signbit(want))

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["fmod", "mod"])
def test_fmod_and_mod_gradients_where_the_value_is_a_or_nan(name, device):
  # torch's 1 and -trunc(a/b) (% : -floor(a/b)) also where no rest is taken: b = 0, b = +-inf, a = +-inf, a NaN operand.
  # The exact rest's chain ran there on 0 and inf and gave NaN to both (1 fmod inf: torch 1 and 0; 1 fmod 0: 1 and -inf)
  A = [1.0, -1.0, 1.0, 1.0, 0.0, inf, -inf, nan, 2.5, 1.0, 5.0]
  B = [inf, inf, 0.0, -0.0, 0.0, 2.0, 3.0, 1.0, nan, 0.1, -3.0]
  a, b = Tensor(A, device=device, requires_grad=True), Tensor(B, device=device, requires_grad=True)
  ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
  fn, tfn = (Tensor.fmod, torch.fmod) if name == "fmod" else (Tensor.mod, torch.remainder)
  ga, gb = fn(a, b).sum().gradient(a, b)
  tfn(ta, tb).sum().backward()
  assert ga.tolist() == ta.grad.tolist()
  # (torch's NaN at +-inf % b is its floor division's inf/inf; 1 fmod 0.1: the exact quotient 9, torch's rounded 10)
  want = [w if not (name == "mod" and math.isinf(x0)) else -math.inf * math.copysign(1, x0) for x0, w in zip(A, tb.grad.tolist())]
  want[9] = -9.0
  np.testing.assert_equal(gb.numpy(), np.array(want, np.float32))

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.float64], ids=str)
def test_copysign_takes_the_sign_bit_and_torchs_gradient_at_nan(dt, device):
  # C's copysign reads b's sign bit: a NaN with it set (x86's 0/0, inf - inf) is negative, as torch and numpy (b < 0 is
  # False there: +|a|). The gradient w.r.t. a is torch's result/a: NaN at a NaN a (the abs select gave 0), 0 at a = 0
  A = [1.0, 2.0, -3.0, nan, nan, 0.0, -0.0, 4.0, -5.0]
  B = [-nan, nan, -nan, 1.0, -1.0, -nan, nan, -0.0, 2.0]
  tdt = {dtypes.float32: torch.float32, dtypes.float16: torch.float16, dtypes.float64: torch.float64}[dt]
  ta, tb = torch.tensor(A, dtype=tdt, requires_grad=True), torch.tensor(B, dtype=tdt)
  assert torch.signbit(tb).tolist() == [math.copysign(1, v) < 0 for v in B]   # (the NaNs keep their sign bits)
  a, b = Tensor(A, dtype=dt, device=device, requires_grad=True), Tensor(tb.numpy(), device=device)
  y = a.copysign(b)
  ty = torch.copysign(ta, tb)
  ty.sum().backward()
  np.testing.assert_equal(y.numpy().astype(np.float64), ty.detach().double().numpy())
  np.testing.assert_equal(np.signbit(y.numpy()), torch.signbit(ty).numpy())
  np.testing.assert_equal(y.sum().gradient(a)[0].numpy().astype(np.float64), ta.grad.double().numpy())

def test_div_gradient_of_the_divisor_does_not_under_or_overflow():
  # -x/y**2 with y*y computed first: 0 * 1/(1e-45)**2 was NaN, 1e30/(1e30)**2 was 0
  a, b = Tensor([0.0, 1e30, 3.4e38], requires_grad=True), Tensor([1e-45, 1e30, 3.4e38], requires_grad=True)
  ta, tb = torch.tensor(a.tolist(), requires_grad=True), torch.tensor(b.tolist(), requires_grad=True)
  (ta / tb).sum().backward()
  np.testing.assert_allclose((a / b).sum().gradient(b)[0].numpy(), tb.grad.numpy(), rtol=1e-6)

@pytest.mark.parametrize("device", DEVICES)
def test_pow_of_negative_zero_and_minus_one(device):
  a = Tensor([-0.0, -0.0, -0.0, -0.0, -1.0, -1.0], device=device)
  b = Tensor([1.0, 3.0, -1.0, 0.5, inf, -inf], device=device)
  want = torch.pow(torch.tensor(a.tolist()), torch.tensor(b.tolist())).numpy()
  got = a.pow(b).numpy()
  np.testing.assert_equal(got, want)
  np.testing.assert_equal(np.signbit(got), np.signbit(want))

@pytest.mark.parametrize("device", DEVICES)
def test_pow_by_one_half_as_a_tensor_is_cs_pow(device):
  # POW by a constant 0.5 (a full tensor; x ** 1.5's gradient 1.5 x ** 0.5): C's pow, inf at -inf and 0.0 at -0.0, on every
  # device. The PYTHON device's numpy took an exponent of one value 0.5 as sqrt: NaN and -0.0
  vals = [-inf, -0.0, 0.0, 4.0, -4.0, inf, nan]
  x = Tensor(vals, device=device, requires_grad=True)
  want = np.array([math.pow(v, 0.5) if not (v < 0 and math.isfinite(v)) else nan for v in vals], np.float32)
  got = x.pow(x.full_like(0.5)).numpy()
  np.testing.assert_equal(got, want)
  np.testing.assert_equal(np.signbit(got[:4]), np.signbit(want[:4]))
  np.testing.assert_equal((x ** 1.5).sum().gradient(x)[0].numpy(), 1.5 * want)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [16777217, -16777217, 2**31 + 1, 16777217.0])
def test_pow_by_an_odd_int_constant_past_the_dtypes_integers_keeps_the_sign(n, device):
  # the exponent was a float32 constant: 16777217 rounds to the even 16777216, and -1.0 ** 16777217 was 1.0 (torch -1.0)
  vals = [-1.0, 1.0, -0.0, 0.0, -inf, inf, -0.5, -2.0, nan]
  got, want = (Tensor(vals, device=device) ** n).numpy(), (torch.tensor(vals) ** n).numpy()
  np.testing.assert_equal(got, want)
  np.testing.assert_equal(np.signbit(got), np.signbit(want))
  for dt in (dtypes.float16, dtypes.bfloat16):   # the half types' integers end at 2048 and 256 (torch rounds there: 1.0)
    np.testing.assert_equal((Tensor([-1.0, -0.0], device=device, dtype=dt) ** 2049).float().numpy(), [-1.0, -0.0])

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [-2, -3, -16])
def test_pow_by_a_negative_int_constant_gradient_at_zero_and_inf(n, device):
  # x ** -n is 1/x**n; its chain (-1/(x**n)**2 times n x**(n-1)) was 0 * inf = NaN at +-0 and +-inf, where torch's n x**(n-1)
  # is +-inf and +-0
  vals = [0.0, -0.0, inf, -inf, 2.0, -0.5]
  x, tx = Tensor(vals, device=device, requires_grad=True), torch.tensor(vals, requires_grad=True)
  (x ** n).sum().backward()
  (tx ** n).sum().backward()
  got, want = x.grad.numpy(), tx.grad.numpy()
  np.testing.assert_allclose(got, want, rtol=1e-6)
  np.testing.assert_equal(np.signbit(got), np.signbit(want))

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
def test_half_pow_by_an_int_constant_rounds_once(dt, device):
  # x ** n with a constant int n is a chain of products (1/x**|n| for n < 0); in the half type each product rounded and one
  # past 65504 overflowed: float16 53.5 ** -3 was 0 (torch 6.6e-6), 300 ** -2 0, bfloat16 x ** 16 15 ulp off. Computed in
  # float32 and rounded once: within 1 ulp of the exact power, and that in under 1% (torch's own bfloat16 x**-2 and x**3
  # round twice: 25% of them are 1 ulp off the exact power, so the reference is float64, not torch)
  tdt, mb, emin = (torch.float16, 10, -14) if dt == dtypes.float16 else (torch.bfloat16, 7, -126)
  rng = np.random.default_rng(0)
  xs = torch.tensor(np.concatenate([[53.5, 300.0, -41.0], rng.uniform(1e-3, 1e-2, 500), rng.uniform(0.5, 3, 500), rng.uniform(10, 300, 500)
                                    * rng.choice([-1, 1], 500)]).astype(np.float32)).to(tdt)
  x = Tensor(xs.float().numpy(), device=device).cast(dt)
  bad = []
  for n in [-16, -4, -3, -2, -1, 2, 3, 4, 5, 16]:
    got = (x ** n).float().numpy().astype(np.float64)
    want = torch.tensor(xs.double().numpy() ** n).to(tdt).double().numpy()
    same = got == want
    with np.errstate(all="ignore"):
      ulp = 2.0 ** (np.maximum(np.floor(np.log2(np.abs(want))), emin) - mb)
      off = np.where(same, 0, np.abs(got - want) / ulp)
    if np.nan_to_num(off, nan=99, posinf=99).max() > 1 or (~same).mean() > 0.01: bad.append(f"x ** {n}: {(~same).mean():.1%} differ, up to {off.max()} ulp")
  assert not bad, "\n".join(bad)
  assert (Tensor([53.5], dtype=dt, device=device) ** -3).item() == pytest.approx(6.53e-6, rel=1e-2)

# ---- float16 and bfloat16: the formulas run in float32 and round once (torch's opmath) ----

HALF_OPS = {**{n: (lambda n: (lambda x: getattr(x, n)()))(n) for n in UNARY if n not in ("isnan", "isinf", "isfinite", "logical_not", "gelu", "quick_gelu")},
            "pow": lambda x: x.abs() ** x.flip(0), "pow_2.5": lambda x: x.abs() ** 2.5, "rpow": lambda x: 10 ** (x / 4), "lerp": lambda x: x.lerp(x.flip(0), 0.3)}
HALF_TORCH = {**{n: UNARY[n] for n in HALF_OPS if n in UNARY}, "pow": lambda x: x.abs() ** x.flip(0), "pow_2.5": lambda x: x.abs() ** 2.5,
              "rpow": lambda x: 10 ** (x / 4), "lerp": lambda x: torch.lerp(x, x.flip(0), 0.3)}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
def test_half_precision_ops_round_once_on_random_values(dt, device):
  # each a formula of several ops (log2 * ln2, 1/sqrt, sin(2x)/(2 sin x), alpha*x + beta, pow's 2**(y log2 x)): in 8 or 11 bits
  # every op rounded, log 2 ulp off torch in 28% of the values, rsqrt 1 ulp in 17%, bfloat16 pow 46 ulp (9%). Now computed
  # in float32 and rounded once as torch's: at most 1 ulp off (torch's own float32 formulas round too), in under 1%.
  # (gelu: torch's float32 tanh formula cancels to 0 below -5, ours keeps a digit; quick_gelu's reference rounds per op;
  # erf: within its documented 5 ulp of float32, a few of float16's near 0)
  tdt, mb, emin = (torch.float16, 10, -14) if dt == dtypes.float16 else (torch.bfloat16, 7, -126)
  rng = np.random.default_rng(0)
  x = torch.tensor(np.concatenate([rng.standard_normal(1500) * 4, rng.uniform(-1, 1, 500), rng.uniform(1, 30, 500)]).astype(np.float32)).to(tdt)
  tx = Tensor(x.float().numpy(), device=device).cast(dt)
  bad = []
  for name, fn in HALF_OPS.items():
    got, want = fn(tx).float().numpy().astype(np.float64), HALF_TORCH[name](x).float().numpy().astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
      ulp = 2.0 ** (np.maximum(np.floor(np.log2(np.abs(want))), emin) - mb)
      off = np.where(same, 0, np.abs(got - want) / ulp)
    if np.nan_to_num(off, nan=99).max() > (5 if name == "erf" else 1) or (~same).mean() > 0.01:
      bad.append(f"{name}: {(~same).mean():.1%} differ, up to {np.nan_to_num(off, nan=99).max():.0f} ulp")
  assert not bad, "\n".join(bad)

HALF_EDGES = [0.0, -0.0, 6e-8, -6e-8, 1e-3, -1e-3, 1.0, -1.0, 11.0, -11.0, 12.0, -12.0, 100.0, -100.0, 6e4, -6e4, inf, -inf, nan]

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("name", [n for n in UNARY if n not in ("isnan", "isinf", "isfinite", "logical_not")])
def test_half_precision_unary_edges_match_torch(name, dt):
  # computed in 8 or 11 bits, bfloat16 sigmoid(-12) was 4% off (x/ln2 rounded), silu(-11) in float16 5 ulp, logsigmoid(100) +0.0
  tdt = torch.float16 if dt == dtypes.float16 else torch.bfloat16
  got = getattr(Tensor(HALF_EDGES, dtype=dt), name)().tolist()
  want = UNARY[name](torch.tensor(HALF_EDGES, dtype=tdt)).tolist()
  true = UNARY[name](torch.tensor(HALF_EDGES, dtype=tdt).double()).to(tdt).tolist()
  rtol = 1e-2 if dt == dtypes.bfloat16 else 2e-3   # a few of their ulp
  bad = [f"{name}({x0}) = {a}, torch {w}" for x0, a, w, t in zip(HALF_EDGES, got, want, true)
         if (name, x0) not in EXCEPT and not (math.isnan(x0) and (name, nan) in EXCEPT) and not _close(a, w, t, rtol, 1e-7)]
  assert not bad, "\n".join(bad)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [2, 7, 40])
def test_sorted_values_are_the_elements_at_the_indices(device, n):
  # bit for bit, -0.0 and NaN included: the values were summed out of a one-hot, whose sum starts at +0.0 (a -0.0 came out
  # as 0.0; torch's sort and topk keep it)
  rng = np.random.default_rng(n)
  x = rng.choice(np.array([-0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], np.float32), size=(3, n))
  x[:, ::3] = -0.0
  t = Tensor(x, device=device)
  for desc in (False, True):
    v, i = t.sort(descending=desc)
    assert np.array_equal(v.numpy().view(np.uint32), np.take_along_axis(x, i.numpy().astype(np.int64), -1).view(np.uint32))
  v, i = t.topk(min(n, 3), largest=False)
  assert np.array_equal(v.numpy().view(np.uint32), np.take_along_axis(x, i.numpy().astype(np.int64), -1).view(np.uint32))
  assert np.signbit(Tensor(np.array([0.0, -0.0, 1.0], np.float32), device=device).sort()[0].numpy()).tolist() == [False, True, False]

# ---- float results of int tensors: computed in float from the start, as torch's on x.float() ----
INT_TO_FLOAT = {"softmax": (lambda x: x.softmax(-1), lambda x: x.softmax(-1)), "log_softmax": (lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1)),
                "logsumexp": (lambda x: x.logsumexp(-1), lambda x: x.logsumexp(-1)), "softmin": (lambda x: x.softmin(-1), lambda x: F.softmin(x, -1)),
                "softsign": (Tensor.softsign, F.softsign), "lerp": (lambda x: x.lerp(x.flip(0), 0.25), lambda x: torch.lerp(x, x.flip(0), 0.25))}

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(INT_TO_FLOAT))
def test_float_ops_of_int_tensors_do_not_wrap(name, device):
  # x - max(x), -x and 1 + |x| were taken in the int dtype and wrapped: int8 softmax([-100, 100, 5]) was [1, 5e-25, 0],
  # logsumexp 156 (torch on the floats: [0, 1, 6e-42] and 100), softsign(127) -1, lerp(-128, 127, 0.25) -128.25
  for dt, vals in ((dtypes.int8, [-100, 100, 5, -128, 127]), (dtypes.uint8, [0, 255, 1, 128, 7]), (dtypes.int32, [-2**31, 2**31 - 1, 0, -1, 5])):
    got = INT_TO_FLOAT[name][0](Tensor(vals, dtype=dt, device=device)).numpy()
    want = INT_TO_FLOAT[name][1](torch.tensor(vals, dtype=torch.float64).float()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30, err_msg=f"{name} of {dt} {vals}")

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [2, 3, 8, 16, 32])
def test_sum_of_negative_zeros_unrolled_whole(device, n):
  # a row short enough for the heuristics to unroll whole (CPU: 8 and up) lost the sum's +0.0 start: -0.0, torch 0.0
  x = Tensor([[-0.0] * n] * 2, device=device)
  for got in (x.sum(1), x.mean(1), x.half().sum(1), x.sum(0)):
    assert not np.signbit(got.numpy()).any(), got.tolist()

@pytest.mark.parametrize("device", DEVICES)
def test_pow_gradients_at_a_zero_base_are_torchs_also_for_a_nan_exponent(device):
  # the exponent's gradient at x == 0 is 0 for y >= 0 (not 0 * log 0) and the chain's otherwise: a NaN y is not >= 0, so
  # its gradient stays NaN, as torch (it was 0: the test was y < 0)
  xs, ys = [0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -0.0], [math.nan, 1.0, -1.0, 0.0, 2.5, math.nan, 3.0]
  x, y = Tensor(xs, requires_grad=True, device=device), Tensor(ys, requires_grad=True, device=device)
  tx, ty = torch.tensor(xs, requires_grad=True), torch.tensor(ys, requires_grad=True)
  (x ** y).sum().backward()
  (tx ** ty).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
  np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())
