"""nn layers: forward against numpy references on hypothesis-drawn shapes; parameter init ranges; train/eval behaviour."""
import math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.tensor import Tensor
from tinygrad import nn, dtypes
from tinygrad.nn.state import get_parameters

HS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
if not hasattr(Tensor, "train"):  # until tensor.py binds the autograd helpers
  from tinygrad import gradient as _g
  Tensor.train, Tensor.test = _g.train, _g.test  # type: ignore[attr-defined]
  Tensor.backward = lambda self, gradient=None: _g.backward(self, gradient)  # type: ignore[attr-defined]

def close(t: Tensor, ref: np.ndarray, atol=1e-5, rtol=1e-4): np.testing.assert_allclose(t.numpy(), ref, atol=atol, rtol=rtol)
def rnd(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

@HS
@given(bs=st.integers(1, 4), fin=st.integers(1, 5), fout=st.integers(1, 5), bias=st.booleans())
def test_linear(bs, fin, fout, bias):
  layer = nn.Linear(fin, fout, bias=bias)
  x = rnd(bs, fin)
  w = layer.weight.numpy()
  assert w.shape == (fout, fin) and np.all(np.abs(w) <= 1 / math.sqrt(fin))
  ref = x @ w.T + (layer.bias.numpy() if bias else 0)
  close(layer(Tensor(x)), ref)

def test_tensor_linear_takes_public_tinygrads_dtype():
  # Tensor.linear(weight, bias, dtype) casts all three first (public tinygrad's argument): it raised TypeError here
  from tinygrad import dtypes
  x, w, b = Tensor([[1.0, 2.0]]), Tensor([[0.5], [0.25]]), Tensor([0.125])
  out = x.linear(w, b, dtype="half")
  assert out.dtype == dtypes.half and out.tolist() == [[1.125]]
  assert x.linear(w, dtype=dtypes.float64).dtype == dtypes.float64 and Tensor([1, 2]).linear(Tensor([3, 4]), dtype=dtypes.int64).tolist() == [3, 8]

def test_linear_params_distinct():
  a, b = nn.Linear(3, 3), nn.Linear(3, 3)
  assert not np.allclose(a.weight.numpy(), b.weight.numpy())

def np_conv2d(x, w, b, stride, padding, dilation, groups):
  # direct loops: the reference the movement-op convolution is checked against
  n, cin, h, wd = x.shape
  cout, cpg, kh, kw = w.shape
  x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
  oh, ow = (x.shape[2] - dilation * (kh - 1) - 1) // stride + 1, (x.shape[3] - dilation * (kw - 1) - 1) // stride + 1
  out = np.zeros((n, cout, oh, ow), np.float64)
  opg = cout // groups
  for o in range(cout):
    g = o // opg
    for i in range(oh):
      for j in range(ow):
        patch = x[:, g*cpg:(g+1)*cpg, i*stride:i*stride + dilation*(kh-1)+1:dilation, j*stride:j*stride + dilation*(kw-1)+1:dilation]
        out[:, o, i, j] = (patch * w[o]).sum((1, 2, 3))
  return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)

@HS
@given(groups=st.sampled_from([1, 2]), k=st.integers(1, 3), stride=st.integers(1, 2), padding=st.integers(0, 1), dilation=st.integers(1, 2),
       bias=st.booleans())
def test_conv2d(groups, k, stride, padding, dilation, bias):
  cin, cout, hw = 2 * groups, 2 * groups, 5
  layer = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)
  assert layer.weight.shape == (cout, cin // groups, k, k)
  x = rnd(1, cin, hw, hw)
  ref = np_conv2d(x, layer.weight.numpy(), layer.bias.numpy() if bias else None, stride, padding, dilation, groups)
  close(layer(Tensor(x)), ref, atol=1e-4)

def test_conv2d_same_padding():
  layer = nn.Conv2d(1, 1, 3, padding="same")
  x = rnd(1, 1, 4, 4)
  assert layer(Tensor(x)).shape == (1, 1, 4, 4)
  close(layer(Tensor(x)), np_conv2d(x, layer.weight.numpy(), layer.bias.numpy(), 1, 1, 1, 1), atol=1e-4)

def test_conv1d():
  layer = nn.Conv1d(2, 3, 3, padding=1)
  x = rnd(2, 2, 6)
  ref = np_conv2d(x[:, :, None, :], layer.weight.numpy()[:, :, None, :], layer.bias.numpy(), 1, 0, 1, 1)
  # padding=1 on the length axis only
  ref = np_conv2d(np.pad(x, ((0, 0), (0, 0), (1, 1)))[:, :, None, :], layer.weight.numpy()[:, :, None, :], layer.bias.numpy(), 1, 0, 1, 1)[:, :, 0, :]
  close(layer(Tensor(x)), ref, atol=1e-4)

@HS
@given(n=st.integers(2, 4), c=st.integers(1, 3), hw=st.integers(1, 3))
def test_batchnorm_train_and_eval(n, c, hw):
  bn = nn.BatchNorm2d(c)
  x = rnd(n, c, hw, hw) * 2 + 1
  with Tensor.train():
    out = bn(x_t := Tensor(x))
    Tensor.realize(out, bn.running_mean, bn.running_var)
  mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
  ref = (x - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5)
  close(out, ref, atol=1e-4)
  m = n * hw * hw
  close(bn.running_mean, 0.1 * mean, atol=1e-5)
  close(bn.running_var, 0.9 + 0.1 * var * m / max(m - 1, 1), atol=1e-4)
  # eval: the running statistics
  out = bn(x_t)
  rm, rv = 0.1 * mean, 0.9 + 0.1 * var * m / max(m - 1, 1)
  close(out, (x - rm.reshape(1, -1, 1, 1)) / np.sqrt(rv.reshape(1, -1, 1, 1) + 1e-5), atol=1e-4)

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float64"])
def test_norm_parameters_follow_the_default_float(dt):
  # public tinygrad makes a norm's ones/zeros (and BatchNorm's running statistics) in the default float: with DEFAULT_FLOAT=HALF
  # a BatchNorm trains in half (its running-stat assign needs the statistics' dtype), a LayerNorm keeps a half model half
  from tinygrad import dtypes
  from tinygrad.helpers import Context
  with Context(DEFAULT_FLOAT=dt):
    want = dtypes.default_float
    bn, ln, gn = nn.BatchNorm(3), nn.LayerNorm(4), nn.GroupNorm(1, 3)
    assert {bn.weight.dtype, bn.bias.dtype, bn.running_mean.dtype, bn.running_var.dtype, ln.weight.dtype, gn.bias.dtype} == {want}
    assert bn.running_var.requires_grad is False and bn.num_batches_tracked.dtype == dtypes.int32
    x = Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)).cast(want)
    with Tensor.train():
      y = bn(x)
      y.realize()
    assert y.dtype == want and ln(Tensor.ones(2, 4, dtype=want)).dtype == want
    var = np.arange(24, dtype=np.float64).reshape(2, 3, 2, 2).var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(bn.running_var.float().numpy(), 0.9 + 0.1 * var, rtol=1e-2)

@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("params", ["float32", "half"])
def test_half_batchnorm_statistics_in_float32_like_torch(dt, params):
  # a float16 batch's variance was the float16 mean of its squares: inf past |x - mean| = 256, so every output was 0 and
  # the running variance inf (torch: the float32 statistics, the output rounded once). Parameters of either dtype, as torch
  torch = pytest.importorskip("torch", reason="torch (CPU) is the reference: pip install torch")
  from tinygrad import dtypes
  tdt = getattr(torch, dt)
  x = torch.tensor(rnd(4, 3, 5, 5) * 300 + 50).to(tdt)
  bn, tbn = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
  if params == "half":
    for k in ("weight", "bias", "running_mean", "running_var"): setattr(bn, k, getattr(bn, k).cast(getattr(dtypes, dt)).contiguous().realize())
    tbn = tbn.to(tdt)
  with Tensor.train():
    out = bn(Tensor(x.float().numpy()).cast(getattr(dtypes, dt)))
    Tensor.realize(out, bn.running_mean, bn.running_var)
  want = tbn.train()(x)
  assert out.dtype == (dtypes.float32 if params == "float32" else getattr(dtypes, dt))
  tol = 1e-2 if dt == "bfloat16" else 2e-3
  close(out.float(), want.detach().float().numpy(), atol=tol, rtol=tol)
  close(bn.running_mean.float(), tbn.running_mean.float().numpy(), atol=tol, rtol=tol)
  close(bn.running_var.float(), tbn.running_var.float().numpy(), atol=tol, rtol=tol)
  # eval: the running statistics
  out = bn(Tensor(x.float().numpy()).cast(getattr(dtypes, dt)))
  close(out.float(), tbn.eval()(x).detach().float().numpy(), atol=tol, rtol=tol)

def test_batchnorm_num_batches_tracked_is_a_scalar():
  # a 0-d counter as torch's (and public tinygrad's): a checkpoint's () entry keeps its shape, a training step counts in it
  import torch
  bn = nn.BatchNorm2d(2)
  assert bn.num_batches_tracked.shape == torch.nn.BatchNorm2d(2).num_batches_tracked.shape == ()
  with Tensor.train():
    for _ in range(2): bn(Tensor(np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2))).realize()
  assert bn.num_batches_tracked.numpy().shape == () and bn.num_batches_tracked.item() == 2

def test_batchnorm_empty_batch_keeps_the_running_statistics():
  # as torch: an empty training batch gives an empty output and counts, the running statistics stay (they became NaN: 0/0)
  bn = nn.BatchNorm(3)
  with Tensor.train():
    assert bn(Tensor.randn(0, 3, 4)).numpy().shape == (0, 3, 4)
    bn(Tensor(rnd(2, 3, 4))).realize()
  np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * rnd(2, 3, 4).mean((0, 2)), atol=1e-6)
  assert not np.isnan(bn.running_var.numpy()).any() and bn.num_batches_tracked.item() == 2

def test_batchnorm_params_not_aliased():
  # two BatchNorms' ones/zeros parameters are separate buffers (a shared constant node would share gradients)
  a, b = nn.BatchNorm2d(3), nn.BatchNorm2d(3)
  assert a.weight.uop is not b.weight.uop and a.running_mean.uop is not b.running_mean.uop

@HS
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=3).map(tuple))
def test_layernorm(shape):
  ln = nn.LayerNorm(shape[-1])
  x = rnd(*shape)
  ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
  close(ln(Tensor(x)), ref, atol=1e-4)
  with pytest.raises(ValueError): nn.LayerNorm(shape[-1] + 1)(Tensor(x))

def test_layernorm_2d_axes():
  ln = nn.LayerNorm((3, 4), elementwise_affine=False)
  x = rnd(2, 3, 4)
  ref = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
  close(ln(Tensor(x)), ref, atol=1e-4)

@HS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
def test_rmsnorm(shape):
  rn = nn.RMSNorm(shape[-1])
  x = rnd(*shape)
  close(rn(Tensor(x)), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), atol=1e-4)

def test_float64_rmsnorm_keeps_float64():
  # computed in float32 and cast back (x.float(), meant to lift float16/bfloat16) a float64 RMSNorm was 8e-8 relative off
  x = np.random.default_rng(1).standard_normal((3, 8)) + 1e3
  got = nn.RMSNorm(8, elementwise_affine=False)(Tensor(x))
  assert got.dtype == dtypes.float64
  np.testing.assert_allclose(got.numpy(), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), rtol=1e-13)

def test_groupnorm():
  gn = nn.GroupNorm(2, 4)
  x = rnd(2, 4, 3)
  xg = x.reshape(2, 2, -1)
  ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
  close(gn(Tensor(x)), ref, atol=1e-4)

def test_groupnorm_groups_need_not_be_whole_channels():
  # public tinygrad's groups are 1/num_groups of a sample's values in order (its unet ResBlock(16, 24, 16) and stable
  # diffusion with model_ch=8 use 32 groups); GroupNorm(32, 16) raised "num_channels 16 must divide by num_groups 32"
  gn, x = nn.GroupNorm(32, 16), rnd(2, 16, 2, 2)
  xg = x.reshape(2, 32, -1)
  close(gn(Tensor(x)), ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape), atol=1e-4)
  with pytest.raises(ValueError, match="do not split into 32 groups"): gn(Tensor(rnd(2, 16, 1, 1)))

def test_norms_of_another_channel_count_raise_instead_of_broadcasting():
  # each norm's per-channel weight (or running statistics) broadcast against an input of another channel count: BatchNorm(3)
  # of a 1-channel input returned 3 channels, BatchNorm(1) in eval applied channel 0's statistics to all 3, GroupNorm(1, 4)
  # and RMSNorm(4) widened their input; torch raises for each
  x1, x3 = Tensor(rnd(4, 1, 5)), Tensor(rnd(4, 3, 5))
  prev = Tensor.training
  try:
    for training in (True, False):
      Tensor.training = training
      for bad in (lambda: nn.BatchNorm(3)(x1), lambda: nn.BatchNorm(1)(x3), lambda: nn.BatchNorm(1, affine=False)(x3)):
        with pytest.raises(ValueError, match="needs C="): bad()
      assert nn.BatchNorm(3)(x3).shape == (4, 3, 5)
  finally: Tensor.training = prev
  # without per-channel tensors there is nothing to mismatch (torch's F.batch_norm without them takes any C)
  close(nn.BatchNorm(1, affine=False, track_running_stats=False)(x3), nn.BatchNorm(3, affine=False, track_running_stats=False)(x3).numpy())
  for bad in (lambda: nn.GroupNorm(1, 4)(x1), lambda: nn.GroupNorm(1, 1)(x3)):
    with pytest.raises(ValueError, match="needs C="): bad()
  with pytest.raises(ValueError, match="does not end with it"): nn.RMSNorm(4)(Tensor.ones(3, 1))
  with pytest.raises(ValueError, match="does not end with it"): nn.RMSNorm(1)(Tensor.ones(3, 4))

def test_group_and_instance_norm_of_an_empty_batch():
  # torch gives the empty output (the reshape to (0, groups, -1) raised: -1 is not inferable from 0 elements)
  for m in (nn.GroupNorm(2, 4), nn.InstanceNorm(4)): assert m(Tensor.randn(0, 4, 3)).numpy().shape == (0, 4, 3)

@HS
@given(vocab=st.integers(1, 6), dim=st.integers(1, 4), shape=st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple))
def test_embedding(vocab, dim, shape):
  emb = nn.Embedding(vocab, dim)
  idx = np.random.default_rng(0).integers(0, vocab, shape).astype(np.int32)
  close(emb(Tensor(idx)), emb.weight.numpy()[idx])

def test_embedding_grad():
  emb = nn.Embedding(4, 2)
  idx = np.array([1, 1, 3], np.int32)
  emb.weight.requires_grad = True
  emb(Tensor(idx)).sum().backward()
  np.testing.assert_allclose(emb.weight.grad.numpy(), [[0, 0], [2, 2], [0, 0], [1, 1]])

def test_embedding_rejects_non_int_indices():
  # a float index silently gathered the rows it equals (a zero row for 1.5); public tinygrad and torch raise
  emb = nn.Embedding(4, 2)
  for idx in (Tensor([1.0]), Tensor([1.5]), Tensor([True])):
    with pytest.raises(TypeError, match="integer dtype"): emb(idx)

def test_dropout():
  d = nn.Dropout(0.5)
  x = Tensor.ones(2000)
  assert d(x) is x   # not training: identity
  with Tensor.train():
    out = d(x).numpy()
  kept = out != 0
  assert 0.4 < kept.mean() < 0.6
  np.testing.assert_allclose(out[kept], 2.0)
  with Tensor.train(): np.testing.assert_allclose(nn.Dropout(0.0)(x).numpy(), 1.0)

def test_linear_gradient_vs_numpy():
  layer = nn.Linear(3, 2)
  for p in get_parameters(layer): p.requires_grad = True
  x = rnd(4, 3)
  layer(Tensor(x)).square().sum().backward()
  w, b = layer.weight.numpy(), layer.bias.numpy()
  y = x @ w.T + b
  close(layer.weight.grad, (2 * y).T @ x, atol=1e-4)
  close(layer.bias.grad, (2 * y).sum(0), atol=1e-4)

@pytest.mark.parametrize("read_each_step", [False, True])
def test_batchnorm_momentum_none_is_torchs_cumulative_average(read_each_step):
  # momentum=None (torch: the running statistics are the plain average over batches, each weighs 1/num_batches_tracked)
  # was accepted and then failed in training with a TypeError (1 - None); an empty batch counts, as torch's
  import torch
  bn, tbn = nn.BatchNorm2d(3, momentum=None), torch.nn.BatchNorm2d(3, momentum=None)
  with Tensor.train():
    for i, shape in enumerate([(2, 3, 2, 2), (0, 3, 2, 2), (4, 3, 1, 3), (3, 3, 2, 1)]):
      x = rnd(*shape, seed=i) * (i + 1) + i
      bn(Tensor(x)).realize()
      tbn(torch.tensor(x))
      if read_each_step: close(bn.running_mean, tbn.running_mean.numpy())
  close(bn.running_mean, tbn.running_mean.numpy())
  close(bn.running_var, tbn.running_var.numpy())
  assert bn.num_batches_tracked.item() == tbn.num_batches_tracked.item() == 4

@pytest.mark.parametrize("track", [True, False])
def test_batchnorm_one_value_per_channel_in_training_is_an_error_like_torch(track):
  # a (1, C) or (1, C, 1, 1) training batch has variance 0: the output was silently all zeros (the bias) and the running
  # variance shrank; torch raises ValueError (so does public tinygrad: 1/(n-1) is a ZeroDivisionError). Eval with running
  # statistics is fine
  import torch
  for shape in [(1, 3), (1, 3, 1, 1)]:
    bn, tbn = nn.BatchNorm(3, track_running_stats=track), torch.nn.BatchNorm2d(3, track_running_stats=track)
    with pytest.raises(ValueError): tbn(torch.ones(shape))
    with Tensor.train(), pytest.raises(ValueError, match="more than 1 value per channel"): bn(Tensor.ones(*shape))
    if track: assert bn(Tensor.ones(*shape)).shape == shape   # eval: the running statistics
    else:
      with pytest.raises(ValueError): bn(Tensor.ones(*shape))
  with Tensor.train(): assert bn(Tensor.ones(2, 3)).shape == (2, 3) and bn(Tensor.ones(0, 3)).shape == (0, 3)

@pytest.mark.parametrize("jit", [False, True])
def test_batchnorm_running_statistics_use_the_weights_of_their_own_forward(jit):
  # the running-statistic assigns a training forward makes read the conv weights the optimizer step then overwrites. Left
  # lazy until read after the last step, public tinygrad 0.14 computes every step's statistics from the final weights
  # (running_var 9.98 where torch has 7.01 below); here the step computes them with the weights they were made from, as
  # torch does, eagerly and under TinyJit
  torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")
  from tinygrad import TinyJit
  from tinygrad.helpers import Context
  rng = np.random.default_rng(0)
  w0 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  xs = [rng.standard_normal((2, 3, 6, 6)).astype(np.float32) for _ in range(4)]
  conv, bn = nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4)
  conv.weight = Tensor(w0)
  opt = nn.optim.SGD([conv.weight, bn.weight, bn.bias], lr=0.5)
  def step(x: Tensor) -> Tensor:
    opt.zero_grad()
    loss = bn(conv(x)).relu().sum()
    loss.backward()
    opt.step()
    return loss.realize()
  tconv, tbn = torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4)
  with torch.no_grad(): tconv.weight.copy_(torch.tensor(w0))
  topt = torch.optim.SGD([tconv.weight, tbn.weight, tbn.bias], lr=0.5)
  with Context(TRAINING=1):
    f = TinyJit(step) if jit else step
    for x in xs:
      f(Tensor(x))
      topt.zero_grad()
      tbn(tconv(torch.tensor(x))).relu().sum().backward()
      topt.step()
  close(bn.running_mean, tbn.running_mean.numpy())
  close(bn.running_var, tbn.running_var.numpy())
  close(conv.weight, tconv.weight.detach().numpy(), atol=1e-4)
