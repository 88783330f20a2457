"""Functionals against torch (CPU), forward and backward (inputs and weights), eagerly and as a TinyJit replay with new
inputs: normalizations at values whose float32 mean is rounded (constant rows, a small spread about a large offset),
losses, attention, transposed convolution and pooling on hypothesis-drawn shapes (1, odd sizes, 0) and values (0, +-inf,
NaN, large). The other nn tests (test_api_nn.py, test_nn.py, test_nn_torch.py) hold the fixed cases per function.
FUNCTIONAL_EXAMPLES=n runs n examples of each drawn test."""
import os
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, TinyJit, nn
torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")
F = torch.nn.functional

HS = settings(max_examples=int(os.environ.get("FUNCTIONAL_EXAMPLES", "25")), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

def _close(got, want, rtol, what):
  # NaN and inf where torch has them; the finite values within rtol of the largest finite magnitude
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  assert got.shape == want.shape, f"{what}: shape {got.shape}, torch {want.shape}"
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN where torch has none (or not where it has)")
  np.testing.assert_array_equal(np.where(np.isinf(got), got, 0), np.where(np.isinf(want), want, 0), err_msg=f"{what}: infinities")
  fin = np.isfinite(want)
  if fin.any():
    scale = max(np.abs(want[fin]).max(), 1e-30)
    np.testing.assert_allclose(got[fin], want[fin], rtol=0, atol=rtol * scale + 1e-5, err_msg=what)   # (1e-5: torch's rounding noise where the value is 0)

def compare(ours, theirs, *args, grads=None, rtol=1e-5, jit=True, f64=False):
  """ours(*Tensors) and theirs(*torch tensors) on the same values, then backward with the same random upstream gradient:
  outputs and the gradients of the arguments in `grads` (default: every float32 array) must match; then the same function
  with its backward under TinyJit, called with other values and last with these, must give the eager results exactly.
  f64: torch computes in float64 (where its float32 result is itself off)."""
  grads = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype == np.float32] if grads is None else grads
  ps = [torch.tensor(a.astype(np.float64) if f64 and a.dtype == np.float32 else a, requires_grad=i in grads) if isinstance(a, np.ndarray) else a
        for i, a in enumerate(args)]
  ty = theirs(*ps)
  up = np.random.default_rng(7).standard_normal(tuple(ty.shape)).astype(np.float32)
  ty.backward(torch.tensor(up, dtype=ty.dtype))
  def tensors(vals):
    ts = [Tensor(a).contiguous().realize() if isinstance(a, np.ndarray) else a for a in vals]
    for i in grads: ts[i].requires_grad = True
    return ts
  def run(*ts):
    y = ours(*ts)
    (y * Tensor(up)).sum().backward()
    return [y.realize()] + [(ts[i].grad if ts[i].grad is not None else Tensor.zeros(*ts[i].shape)).realize() for i in grads]
  eager = [t.numpy() for t in run(*tensors(args))]
  _close(eager[0], ty.detach().numpy(), rtol, "forward")
  for j, i in enumerate(grads): _close(eager[1 + j], ps[i].grad.numpy(), rtol * 10, f"gradient of argument {i}")
  if not jit or any(0 in a.shape for a in args if isinstance(a, np.ndarray)): return
  jf, rng = TinyJit(run), np.random.default_rng(3)
  for call in range(3):
    vals = [a + rng.standard_normal(a.shape).astype(np.float32) if call < 2 and i in grads else a for i, a in enumerate(args)]
    replay = [t.numpy() for t in jf(*tensors(vals))]
  for j, (r, e) in enumerate(zip(replay, eager)): np.testing.assert_array_equal(r, e, err_msg=f"TinyJit replay, value {j}")

# ---- normalizations: the float32 mean's rounding ----
# a row of one value c sums to n*c rounded (1000 copies of 1000.1 give a mean 0.0011 off, 18 ulps), and the deviations
# from that mean, normalised by sqrt(var + eps), came out O(1) where torch's are 0; a small spread about a large offset
# lost digits the same way
def _offset_rows(shape, offset, spread, seed):
  x = np.random.default_rng(seed).standard_normal(shape) * spread + offset
  return x.astype(np.float32)

@HS
@given(n=st.sampled_from([3, 7, 100, 1000]), c=st.sampled_from([1000.1, 123.456, 77.7, 1e6 + 0.3, 3.3]), spread=st.sampled_from([0.0, 0.0, 0.01, 1.0]),
       seed=st.integers(0, 2**16))
def test_layernorm_of_rows_about_a_large_offset_like_torch(n, c, spread, seed):
  x = _offset_rows((3, n), c, spread, seed)
  w, b = _offset_rows((n,), 0, 1, seed + 1), _offset_rows((n,), 0, 1, seed + 2)
  # (against float64: torch's float32 weight gradient at a constant row is rounding noise, 0.014 where the truth is 0)
  compare(lambda a, w_, b_: a.layernorm(-1) * w_ + b_, lambda a, w_, b_: F.layer_norm(a, (n,), w_, b_), x, w, b, rtol=1e-4, jit=n < 1000, f64=True)

@pytest.mark.parametrize("c", [1000.1, 1e6 + 0.3, -77.7])
def test_norm_layers_of_a_constant_are_zero_like_torch(c):
  x = np.full((4, 6, 1000), c, np.float32)
  np.testing.assert_array_equal(Tensor(x).layernorm().numpy(), 0)
  np.testing.assert_array_equal(nn.LayerNorm(1000, elementwise_affine=False)(Tensor(x)).numpy(), F.layer_norm(torch.tensor(x), (1000,)).numpy())
  np.testing.assert_array_equal(nn.GroupNorm(2, 6, affine=False)(Tensor(x)).numpy(), F.group_norm(torch.tensor(x), 2).numpy())
  np.testing.assert_array_equal(nn.InstanceNorm(6, affine=False)(Tensor(x)).numpy(), 0)   # (torch's instance_norm: 0.007 off)
  with Tensor.train():   # (torch's batch_norm: 0.8 off)
    np.testing.assert_array_equal(nn.BatchNorm(6, affine=False)(Tensor(x)).numpy(), 0)

@pytest.mark.parametrize("shape", [(1000, 3), (8, 3, 20, 20)])
def test_batchnorm_of_channels_about_a_large_offset(shape):
  # batch statistics against float64 (torch's float32 batch_norm is itself off here): channel 0 constant, 1 a small spread
  # about 1000, 2 plain; the output, the running statistics and the input's gradient
  x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  x[:, 0], x[:, 1] = 1000.1, 1000 + x[:, 1] * 0.01
  bn = nn.BatchNorm(3, momentum=0.5)
  t = Tensor(x, requires_grad=True)
  with Tensor.train():
    y = bn(t)
    (y * Tensor(np.arange(y.numel(), dtype=np.float32).reshape(y.shape) % 7)).sum().backward()
  x64, axes = x.astype(np.float64), tuple(i for i in range(len(shape)) if i != 1)
  mean, var = x64.mean(axes, keepdims=True), x64.var(axes, keepdims=True)
  np.testing.assert_allclose(y.numpy(), (x64 - mean) / np.sqrt(var + 1e-5), atol=2e-4)
  np.testing.assert_allclose(bn.running_mean.numpy(), 0.5 * mean.reshape(-1), rtol=1e-6)
  n = x.size // 3
  np.testing.assert_allclose(bn.running_var.numpy(), 0.5 + 0.5 * var.reshape(-1) * n / (n - 1), rtol=1e-4, atol=1e-6)
  tx = torch.tensor(x64, requires_grad=True)
  ty = F.batch_norm(tx, None, None, training=True, eps=1e-5)
  (ty * torch.tensor(np.arange(y.numel()).reshape(y.shape) % 7, dtype=torch.float64)).sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), tx.grad.numpy(), atol=2e-3 * np.abs(tx.grad.numpy()).max())

# ---- losses, attention, transposed convolution, pooling: drawn shapes and edge values, eager and jitted ----
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 100.0, -100.0]

def _values(data, shape, edges=True, scales=(1.0, 3.0, 30.0)):
  x = np.random.default_rng(data.draw(st.integers(0, 2**16))).standard_normal(shape) * data.draw(st.sampled_from(scales))
  if edges and x.size and data.draw(st.booleans()):
    for _ in range(data.draw(st.integers(1, 3))): x.reshape(-1)[data.draw(st.integers(0, x.size - 1))] = data.draw(st.sampled_from(EDGES))
  return x.astype(np.float32)

_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
_reductions = st.sampled_from(["mean", "sum", "none"])

@HS
@given(shape=_shapes, red=_reductions, ls=st.sampled_from([0.0, 0.1, 1.0]), probs=st.booleans(), data=st.data())
def test_cross_entropy_drawn_like_torch(shape, red, ls, probs, data):
  cd = 0 if len(shape) == 1 else 1
  x = _values(data, shape)
  if probs:
    y = np.abs(_values(data, shape, False))
    y = (y / y.sum(cd, keepdims=True)).astype(np.float32)
  else: y = np.random.default_rng(1).integers(0, shape[cd], shape[:cd] + shape[cd + 1:])
  compare(lambda a, b: a.cross_entropy(b, red, ls), lambda a, b: F.cross_entropy(a, b, reduction=red, label_smoothing=ls), x, y)

@HS
@given(shape=_shapes, red=_reductions, ls=st.sampled_from([0.0, 0.3]), data=st.data())
def test_sparse_categorical_crossentropy_drawn_like_torch(shape, red, ls, data):
  x = _values(data, shape)
  y = np.random.default_rng(2).integers(-1, shape[-1], shape[:-1])   # (-1: ignored)
  compare(lambda a, b: a.sparse_categorical_crossentropy(b, -1, ls, red),
          lambda a, b: F.cross_entropy(a.movedim(-1, 1) if a.ndim > 1 else a, b, ignore_index=-1, label_smoothing=ls, reduction=red), x, y)

@HS
@given(shape=_shapes, red=_reductions, weighted=st.booleans(), ignore=st.sampled_from([None, 0, -100]), data=st.data())
def test_nll_loss_drawn_like_torch(shape, red, weighted, ignore, data):
  cd = 0 if len(shape) == 1 else 1
  x, y = _values(data, shape), np.random.default_rng(3).integers(0, shape[cd], shape[:cd] + shape[cd + 1:])
  w = np.abs(_values(data, (shape[cd],), False)) if weighted else None
  kw = {} if ignore is None else {"ignore_index": ignore}
  # (mean with weights divides by the kept labels' summed weights, as torch)
  compare(lambda a, b, c: a.nll_loss(b, c, ignore, red), lambda a, b, c: F.nll_loss(a, b, c, reduction=red, **kw), x, y, w, grads=[0])

@HS
@given(shape=_shapes, red=_reductions, pw=st.booleans(), data=st.data())
def test_binary_crossentropy_drawn_like_torch(shape, red, pw, data):
  # (no infinite logits: torch's loss there is NaN where ours is the limit, inf, at (-inf, target 1) and (-inf, 0.3))
  x = np.nan_to_num(_values(data, shape), posinf=1e30, neginf=-1e30)
  t = np.random.default_rng(4).choice(np.array([0.0, 1.0, 0.3], np.float32), shape)
  if pw:
    w = np.abs(_values(data, shape[-1:], False))
    compare(lambda a, b, c: a.binary_crossentropy_logits(b, red, c), lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, reduction=red, pos_weight=c),
            x, t, w, grads=[0, 1])
  else: compare(lambda a, b: a.binary_crossentropy_logits(b, red), lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=red), x, t)
  p = np.random.default_rng(5).random(shape).astype(np.float32)
  p.reshape(-1)[0] = data.draw(st.sampled_from([0.0, 1.0, 0.5]))   # (the clamped logs at 0 and 1)
  compare(lambda a, b: a.binary_crossentropy(b, red), lambda a, b: F.binary_cross_entropy(a, b, reduction=red), p, t, grads=[0])

@HS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_softmax_family_drawn_like_torch(shape, data):
  x, ax = _values(data, shape), data.draw(st.integers(-len(shape), len(shape) - 1))
  compare(lambda a: a.softmax(ax), lambda a: F.softmax(a, ax), x)
  compare(lambda a: a.log_softmax(ax), lambda a: F.log_softmax(a, ax), x)
  # (logsumexp: no +inf, beside which an element past 88 (exp overflows) has gradient NaN here, torch's 0, the row's is NaN
  # anyway; and no ties of values past 1e7, whose lse rounds to the value itself: torch's gradient exp(x - lse) is then 1
  # for each, where ours is the softmax, 1/2 for two)
  x = np.where(x == np.inf, np.float32(1e4), np.where(np.abs(x) < np.inf, np.clip(x, -1e4, 1e4), x)).astype(np.float32)
  compare(lambda a: a.logsumexp(ax, keepdim=True), lambda a: torch.logsumexp(a, ax, keepdim=True), x)

@HS
@given(b=st.integers(1, 2), hk=st.integers(1, 2), rep=st.integers(1, 2), L=st.integers(1, 4), S=st.integers(1, 4), E=st.integers(1, 4), Ev=st.integers(1, 3),
       mask=st.sampled_from(["none", "causal", "bool", "float", "-inf"]), mshape=st.integers(0, 3), data=st.data())
def test_attention_drawn_like_torch(b, hk, rep, L, S, E, Ev, mask, mshape, data):
  # is_causal with L != S is torch's top-left aligned mask; a row that attends to nothing is zeros, as torch's
  # (scores of a few units: saturated softmaxes of scores near 1000 leave gradients that are float32 noise, in torch's too)
  q, k, v = (_values(data, sh, False, (1.0, 2.0)) for sh in ((b, hk * rep, L, E), (b, hk, S, E), (b, hk, S, Ev)))
  kw = dict(enable_gqa=rep > 1, is_causal=mask == "causal")
  ms = [(L, S), (b, 1, L, S), (L, 1), (1, S)][mshape]
  rng = np.random.default_rng(6)
  m = {"bool": rng.random(ms) > 0.4, "float": _values(data, ms, False), "-inf": np.where(rng.random(ms) > 0.4, 0.0, -np.inf).astype(np.float32)}.get(mask)
  if m is None: compare(lambda a, b_, c: a.scaled_dot_product_attention(b_, c, **kw), lambda a, b_, c: F.scaled_dot_product_attention(a, b_, c, **kw), q, k, v, rtol=1e-4)
  else: compare(lambda a, b_, c, d: a.scaled_dot_product_attention(b_, c, attn_mask=d, **kw), lambda a, b_, c, d: F.scaled_dot_product_attention(a, b_, c, attn_mask=d, **kw),
                q, k, v, m, rtol=1e-4, grads=[0, 1, 2, 3] if mask == "float" else [0, 1, 2])

@HS
@given(nd=st.integers(1, 2), groups=st.integers(1, 2), cin=st.integers(1, 2), cout=st.integers(1, 2), bias=st.booleans(), data=st.data())
def test_conv_transpose_drawn_like_torch(nd, groups, cin, cout, bias, data):
  dims = lambda lo, hi: tuple(data.draw(st.integers(lo, hi)) for _ in range(nd))
  k, s, d, p, sp = dims(1, 3), dims(1, 3), dims(1, 2), dims(0, 3), dims(1, 4)
  op = tuple(data.draw(st.integers(0, max(a, c) - 1)) for a, c in zip(s, d))
  if any((i - 1) * s_ - 2 * p_ + d_ * (k_ - 1) + o + 1 <= 0 for i, s_, p_, d_, k_, o in zip(sp, s, p, d, k, op)): return   # (no output)
  x, w = _values(data, (2, cin * groups, *sp), False), _values(data, (cin * groups, cout, *k), False)
  kw = dict(groups=groups, stride=s, dilation=d, padding=p, output_padding=op)
  fn = [F.conv_transpose1d, F.conv_transpose2d][nd - 1]
  compare(lambda a, b_, c: a.conv_transpose2d(b_, c if bias else None, **kw), lambda a, b_, c: fn(a, b_, c if bias else None, **kw),
          x, w, _values(data, (cout * groups,), False), rtol=1e-4, grads=[0, 1, 2] if bias else [0, 1])

@HS
@given(nd=st.integers(1, 3), data=st.data())
def test_pools_drawn_like_torch(nd, data):
  dims = lambda lo, hi: tuple(data.draw(st.integers(lo, hi)) for _ in range(nd))
  k, s, d = dims(1, 3), dims(1, 3), dims(1, 2)
  p, sp = tuple(data.draw(st.integers(0, k_ // 2)) for k_ in k), tuple(data.draw(st.integers(d_ * (k_ - 1) + 1, 5)) for k_, d_ in zip(k, d))
  ceil, incl = data.draw(st.booleans()), data.draw(st.booleans())
  # distinct values (max_pool2d's gradient splits ties, torch's goes to the first: docs/guide.md), with +-inf among them
  x = np.random.default_rng(8).permutation(4 * int(np.prod(sp))).reshape(2, 2, *sp).astype(np.float32) * 0.1 - 3
  if data.draw(st.booleans()): x.reshape(-1)[0], x.reshape(-1)[-1] = np.inf, -np.inf
  mp, ap = [F.max_pool1d, F.max_pool2d, F.max_pool3d][nd - 1], [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][nd - 1]
  compare(lambda a: a.max_pool2d(k, s, d, p, ceil), lambda a: mp(a, k, s, p, d, ceil_mode=ceil), x)
  compare(lambda a: a.avg_pool2d(k, s, 1, p, ceil, incl), lambda a: ap(a, k, s, p, ceil_mode=ceil, count_include_pad=incl), x)
