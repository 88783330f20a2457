"""Functionals against torch (CPU), forward and backward (inputs and weights), eagerly and as a TinyJit replay with new
inputs: normalizations at values whose float32 mean is rounded (constant rows, a small spread about a large offset),
losses, attention, transposed convolution and pooling on hypothesis-drawn shapes (1, odd sizes, 0) and values (0, +-inf,
NaN, large). The other nn tests (test_api_nn.py, test_nn.py, test_nn_torch.py) hold the fixed cases per function."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, TinyJit, nn
torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")
F = torch.nn.functional

HS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

def _close(got, want, rtol, what):
  # NaN and inf where torch has them; the finite values within rtol of the largest finite magnitude
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  assert got.shape == want.shape, f"{what}: shape {got.shape}, torch {want.shape}"
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN where torch has none (or not where it has)")
  np.testing.assert_array_equal(np.where(np.isinf(got), got, 0), np.where(np.isinf(want), want, 0), err_msg=f"{what}: infinities")
  fin = np.isfinite(want)
  if fin.any():
    scale = max(np.abs(want[fin]).max(), 1e-30)
    np.testing.assert_allclose(got[fin], want[fin], rtol=0, atol=rtol * scale + 1e-6, err_msg=what)

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
