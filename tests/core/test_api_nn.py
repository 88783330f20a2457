"""The API's nn functions and losses against torch, forward and backward (inputs and weights): losses, attention,
transposed convolution, interpolate, max pooling with indices and unpooling, batchnorm, gelu, logsigmoid, softmin,
normalize. On the CPU and (small cases) the PYTHON device."""
import math
import numpy as np
import pytest
from hypothesis import given, example, settings, strategies as st, HealthCheck
from tinygrad import Tensor, nn, dtypes
torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")
F = torch.nn.functional

HS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEVS = ["CPU", "PYTHON"]

def rnd(*shape, seed=0, scale=1.0): return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
def close(a, b, atol=1e-5, rtol=1e-4, what=""): np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=rtol, err_msg=what)

def compare(dev, ours, theirs, *args, atol=1e-5, rtol=1e-4, gatol=None):
  """Run ours(*tinygrad tensors) and theirs(*torch tensors) on the same values (float numpy arrays get gradients, other
  values pass as they are), then backward with the same random upstream gradient; outputs and gradients must match."""
  ts = [Tensor(a, device=dev, requires_grad=True) if isinstance(a, np.ndarray) and a.dtype == np.float32 else
        Tensor(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]
  ps = [torch.tensor(a, requires_grad=a.dtype == np.float32) if isinstance(a, np.ndarray) else a for a in args]
  y, ty = ours(*ts), theirs(*ps)
  up = rnd(*ty.shape, seed=7)
  if ty.requires_grad:
    ty.backward(torch.tensor(up))
    (y * Tensor(up, device=dev)).sum().backward()   # before reading y: the graph is built once
  close(y.numpy(), ty.detach().numpy(), atol=atol, rtol=rtol, what="forward")
  assert y.shape == tuple(ty.shape)
  for i, (t, p) in enumerate(zip(ts, ps)):
    if isinstance(p, torch.Tensor) and p.grad is not None:   # (detached in theirs: a target, a mask)
      close(t.grad.numpy() if t.grad is not None else np.zeros(p.shape), p.grad.numpy(), atol=gatol or atol * 10, rtol=rtol * 10, what=f"grad of argument {i}")

# ---- losses ----
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(3, 5), (1, 1), (4, 3, 2), (5,)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_indices_like_torch(dev, shape, reduction):
  x = rnd(*shape)
  cdim = 0 if len(shape) == 1 else 1
  y = np.random.default_rng(1).integers(0, shape[cdim], size=shape[:cdim] + shape[cdim + 1:]).astype(np.int64)
  for ls in (0.0, 0.3):
    compare(dev, lambda a, b: a.cross_entropy(b, reduction=reduction, label_smoothing=ls),
            lambda a, b: F.cross_entropy(a, b, reduction=reduction, label_smoothing=ls), x, y)

@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_ignores_torchs_padding_label(shape, reduction):
  # torch's ignore_index=-100 (the padding label of token targets) added a loss of 0 (with smoothing, the smoothing term) and
  # was counted in the mean: a loss silently off torch's; now those labels are left out as torch's, another ignore_index too
  x = rnd(*shape)
  y = np.random.default_rng(1).integers(0, 5, size=shape[:1] + shape[2:]).astype(np.int64)
  y.flat[1] = y.flat[-1] = -100
  for ls in (0.0, 0.3):
    compare("CPU", lambda a, b: a.cross_entropy(b, reduction=reduction, label_smoothing=ls),
            lambda a, b: F.cross_entropy(a, b, reduction=reduction, label_smoothing=ls), x, y)
  y2 = np.where(y == -100, 0, y)
  compare("CPU", lambda a, b: a.cross_entropy(b, reduction=reduction, ignore_index=0),
          lambda a, b: F.cross_entropy(a, b, reduction=reduction, ignore_index=0), x, y2)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3), (4,)])
def test_cross_entropy_probabilities_like_torch(dev, shape):
  x, y = rnd(*shape), np.abs(rnd(*shape, seed=2))
  cdim = 0 if len(shape) == 1 else 1
  y = (y / y.sum(cdim, keepdims=True)).astype(np.float32)
  for reduction in ("mean", "sum", "none"):
    compare(dev, lambda a, b: a.cross_entropy(b.detach(), reduction=reduction, label_smoothing=0.2),
            lambda a, b: F.cross_entropy(a, b.detach(), reduction=reduction, label_smoothing=0.2), x, y)

@pytest.mark.parametrize("dev", DEVS)
def test_cross_entropy_with_masked_logits_like_torch(dev):
  # a -inf logit of a class that is not the target: torch's loss and gradient are finite (a one-hot product gave 0 * -inf
  # = NaN); with label smoothing torch's loss is inf
  x, y = rnd(4, 5), np.array([0, 3, 1, 4], dtype=np.int64)
  x[0, 2] = x[1, 0] = x[1, 4] = -np.inf
  for reduction in ("mean", "none"):
    compare(dev, lambda a, b: a.cross_entropy(b, reduction=reduction), lambda a, b: F.cross_entropy(a, b, reduction=reduction), x, y)
  close(Tensor(x, device=dev).cross_entropy(Tensor(y, device=dev), label_smoothing=0.1).numpy(), F.cross_entropy(torch.tensor(x), torch.tensor(y), label_smoothing=0.1).numpy())
  compare(dev, lambda a, b: a.sparse_categorical_crossentropy(b), lambda a, b: F.cross_entropy(a, b), x, y)

@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_cross_entropy_of_half_logits_is_half_like_torch(dt):
  x, y = rnd(4, 9), np.array([1, 2, 0, 8])
  tdt, gdt = getattr(torch, dt), getattr(dtypes, dt)
  for ls in (0.0, 0.1):
    want = F.cross_entropy(torch.tensor(x).to(tdt), torch.tensor(y), label_smoothing=ls)
    got = Tensor(x).cast(gdt).cross_entropy(Tensor(y), label_smoothing=ls)
    assert got.dtype == gdt, got.dtype
    close(got.float().numpy(), want.float().numpy(), atol=2e-2, rtol=2e-2)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(6, 4), (1, 1), (2, 3, 5)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_sparse_categorical_crossentropy_like_torch(dev, shape, reduction):
  # classes on the last axis (tinygrad's), torch's on axis 1; labels -1 are ignored (the default ignore_index)
  x = rnd(*shape)
  y = np.random.default_rng(3).integers(-1, shape[-1], size=shape[:-1]).astype(np.int64)
  y.flat[0] = 0   # at least one kept label, so the mean is defined
  for ls in (0.0, 0.25):
    compare(dev, lambda a, b: a.sparse_categorical_crossentropy(b, label_smoothing=ls, reduction=reduction),
            lambda a, b: F.cross_entropy(a.movedim(-1, 1) if a.ndim > 1 else a, b, ignore_index=-1, label_smoothing=ls, reduction=reduction), x, y)

@pytest.mark.parametrize("dev", DEVS)
def test_nll_loss_ignored_label_at_a_minus_inf_log_probability_like_torch(dev):
  # the ignored label's log-probability is -inf (a masked class): its term is 0 as torch's, not 0 * -inf = NaN
  x, y = np.log(np.array([[0.5, 0.5, 1.0], [0.1, 0.3, 0.6], [0.2, 0.2, 0.6]], dtype=np.float32)), np.array([2, 0, 1], dtype=np.int64)
  x[0, 2] = -np.inf
  for reduction in ("none", "mean", "sum"):
    compare(dev, lambda a, b: a.nll_loss(b, ignore_index=2, reduction=reduction), lambda a, b: F.nll_loss(a, b, ignore_index=2, reduction=reduction), x, y)

def test_sparse_categorical_crossentropy_other_ignore_index():
  x, y = rnd(5, 3), np.array([0, 2, 2, 1, 2], dtype=np.int64)
  compare("CPU", lambda a, b: a.sparse_categorical_crossentropy(b, ignore_index=2), lambda a, b: F.cross_entropy(a, b, ignore_index=2), x, y)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(5, 4), (1, 1), (3, 4, 2), (6,)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_like_torch(dev, shape, reduction):
  cdim = 0 if len(shape) == 1 else 1
  x, w = rnd(*shape), np.abs(rnd(shape[cdim], seed=4)) + 0.1
  y = np.random.default_rng(5).integers(0, shape[cdim], size=shape[:cdim] + shape[cdim + 1:]).astype(np.int64)
  compare(dev, lambda a, b: a.nll_loss(b, reduction=reduction), lambda a, b: F.nll_loss(a, b, reduction=reduction), x, y)
  compare(dev, lambda a, b, c: a.nll_loss(b, weight=c, reduction=reduction), lambda a, b, c: F.nll_loss(a, b, weight=c.detach(), reduction=reduction), x, y, w)
  if y.size > 1:
    y2 = y.copy()
    y2.flat[1] = 100   # an ignored label need not be a class
    compare(dev, lambda a, b, c: a.nll_loss(b, weight=c, ignore_index=100, reduction=reduction),
            lambda a, b, c: F.nll_loss(a, b, weight=c.detach(), ignore_index=100, reduction=reduction), x, y2, w)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(7,), (1,), (3, 4)])
def test_binary_crossentropy_like_torch(dev, shape):
  p, y = 1 / (1 + np.exp(-rnd(*shape))), (rnd(*shape, seed=1) > 0).astype(np.float32)
  for reduction in ("mean", "sum", "none"):
    compare(dev, lambda a, b: a.binary_crossentropy(b.detach(), reduction), lambda a, b: F.binary_cross_entropy(a, b.detach(), reduction=reduction),
            p.astype(np.float32), y)

def test_binary_crossentropy_clamps_the_log_as_torch():
  p, y = np.array([0.0, 1.0, 0.5], dtype=np.float32), np.array([1.0, 0.0, 1.0], dtype=np.float32)
  close(Tensor(p).binary_crossentropy(Tensor(y), "none").numpy(), F.binary_cross_entropy(torch.tensor(p), torch.tensor(y), reduction="none").numpy())

@pytest.mark.parametrize("dev", DEVS)
def test_binary_crossentropy_gradient_at_0_and_1_as_torch(dev):
  # torch's (p - y)/max(p(1-p), 1e-12): finite where p is 0 or 1 (the clamped logs' own chain gave 0 * inf = NaN)
  p = np.array([0, 1, 0, 1, 1e-30, 1 - 1e-7, 0.5, 1e-4], dtype=np.float32)
  y = np.array([0, 1, 1, 0, 0.5, 0.3, 0.5, 1], dtype=np.float32)
  compare(dev, lambda a, b: a.binary_crossentropy(b.detach(), "none"), lambda a, b: F.binary_cross_entropy(a, b.detach(), reduction="none"), p, y)
  x = Tensor(p, device=dev, requires_grad=True)
  x.half().binary_crossentropy(Tensor(y, device=dev).half(), "sum").backward()
  assert not np.isnan(x.grad.numpy()).any(), x.grad.numpy()   # (torch's half: NaN at 0 and 1)

@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_binary_crossentropy_rounds_once_like_torch(dt):
  # computed and reduced in float32, rounded once as torch's (rounded at each log and product: 2-4x torch's error)
  tdt, gdt = getattr(torch, dt), getattr(dtypes, dt)
  p, y = torch.tensor(rnd(64, 10) * 3).to(tdt).sigmoid(), torch.tensor((rnd(64, 10, seed=1) > 0).astype(np.float32)).to(tdt)
  for reduction in ("none", "mean"):
    got = Tensor(p.float().numpy()).cast(gdt).binary_crossentropy(Tensor(y.float().numpy()).cast(gdt), reduction)
    assert got.dtype == gdt
    np.testing.assert_array_equal(got.float().numpy(), F.binary_cross_entropy(p, y, reduction=reduction).float().numpy())

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(7,), (1,), (3, 4)])
def test_binary_crossentropy_logits_like_torch(dev, shape):
  x, y = rnd(*shape, scale=3.0), (rnd(*shape, seed=1) > 0).astype(np.float32)
  x.flat[0] = 40.0   # large logits stay finite
  pw = np.abs(rnd(shape[-1], seed=2)) + 0.5
  for reduction in ("mean", "sum", "none"):
    compare(dev, lambda a, b: a.binary_crossentropy_logits(b.detach(), reduction),
            lambda a, b: F.binary_cross_entropy_with_logits(a, b.detach(), reduction=reduction), x, y)
    compare(dev, lambda a, b, c: a.binary_crossentropy_logits(b.detach(), reduction, pos_weight=c),
            lambda a, b, c: F.binary_cross_entropy_with_logits(a, b.detach(), reduction=reduction, pos_weight=c.detach()), x, y, pw)

def test_binary_crossentropy_target_that_grows_the_input_raises():
  # (N, 1) logits against (N,) targets broadcast to an (N, N) loss whose mean was returned without a word; torch raises
  x, y = Tensor(rnd(4, 1)), Tensor([1.0, 0.0, 1.0, 0.0])
  for f in (lambda: x.binary_crossentropy_logits(y), lambda: x.sigmoid().binary_crossentropy(y), lambda: x.binary_crossentropy_logits(y, "none")):
    with pytest.raises(ValueError, match=r"target shape \(4,\) must be the input's \(4, 1\)"): f()
  # a target that broadcasts into the input's shape is public tinygrad's, and its value is the elementwise one
  got = Tensor(rnd(3, 4)).binary_crossentropy_logits(Tensor([1.0, 0.0, 1.0, 0.0]), "none")
  close(got.numpy(), F.binary_cross_entropy_with_logits(torch.tensor(rnd(3, 4)), torch.tensor([1.0, 0.0, 1.0, 0.0]).expand(3, 4), reduction="none").numpy())

def test_loss_arguments_are_checked_like_torch():
  x, y = Tensor(rnd(3, 4)), Tensor([0, 1, 2])
  for f in (lambda: x.cross_entropy(y, reduction="avg"), lambda: x.nll_loss(y, reduction="avg"), lambda: x.sparse_categorical_crossentropy(Tensor([0, 1, 2]), reduction="x"),
            lambda: x.sigmoid().binary_crossentropy(x, reduction="x"), lambda: x.binary_crossentropy_logits(x, reduction="x")):
    with pytest.raises(ValueError, match="reduction 'avg'|reduction 'x'"): f()
  with pytest.raises(RuntimeError, match="label_smoothing"): x.cross_entropy(y, label_smoothing=1.5)
  with pytest.raises(RuntimeError, match="label_smoothing"): x.sparse_categorical_crossentropy(Tensor([0, 1, 2]), label_smoothing=-0.1)
  with pytest.raises(ValueError, match="target shape"): x.cross_entropy(Tensor([0, 1]))
  with pytest.raises(TypeError, match="int dtype"): x.nll_loss(Tensor([0.0, 1.0, 2.0]))

def test_sparse_categorical_crossentropy_broadcasts_labels_against_the_logits_rows():
  # public tinygrad's rule: labels (2,) against one row of logits (C,) score each label against that row (torch: a loop)
  logits, labels = rnd(16), np.array([3, 11])
  for ls in (0.0, 0.1):
    got = Tensor(logits).sparse_categorical_crossentropy(Tensor(labels), label_smoothing=ls).item()
    want = np.mean([F.cross_entropy(torch.tensor(logits)[None], torch.tensor([t]), label_smoothing=ls).item() for t in labels])
    np.testing.assert_allclose(got, want, rtol=1e-5)
  with pytest.raises(ValueError, match="do not broadcast"): Tensor(rnd(3, 16)).sparse_categorical_crossentropy(Tensor([1, 2]))

def test_sparse_categorical_crossentropy_column_labels_raise():
  # (N, 1) labels of (N, C) logits broadcast both ways, to an (N, N) loss (every label against every row): its mean was
  # returned without a word (4.6 here where torch's loss of the flattened labels is 0.9); an error now
  logits, labels = rnd(4, 3), np.array([[1], [0], [2], [0]])
  with pytest.raises(ValueError, match=r"broadcast to \(4, 4\), larger than both"):
    Tensor(logits).sparse_categorical_crossentropy(Tensor(labels))
  close(Tensor(logits).sparse_categorical_crossentropy(Tensor(labels.ravel())).item(), F.cross_entropy(torch.tensor(logits), torch.tensor(labels.ravel())).item())

@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_sparse_categorical_crossentropy_mean_counts_every_row_the_labels_broadcast_to(ls):
  # labels that broadcast into the logits' rows (one label for all, or one per leading row) score every row; the mean
  # divided the sum of those terms by the labels' own count (a scalar label: by 1, so 4x torch's loss here)
  logits = rnd(2, 4, 3)
  for labels, full in ((2, [[2] * 4] * 2), ([0, 1, 2, -1], [[0, 1, 2, -100]] * 2), ([[1], [2]], [[1] * 4, [2] * 4])):
    got = Tensor(logits).sparse_categorical_crossentropy(Tensor(labels), label_smoothing=ls).item()
    close(got, F.cross_entropy(torch.tensor(logits).permute(0, 2, 1), torch.tensor(full), label_smoothing=ls).item())

# ---- activations, normalisations ----
@pytest.mark.parametrize("dev", DEVS)
def test_gelu_both_forms_like_torch(dev):
  x = np.concatenate([rnd(20, scale=3.0), np.array([0.0, -8.0, 8.0], dtype=np.float32)])
  compare(dev, lambda a: a.gelu(), lambda a: F.gelu(a, approximate="tanh"), x)   # public tinygrad's default is the tanh form
  compare(dev, lambda a: a.gelu(approximate="tanh"), lambda a: F.gelu(a, approximate="tanh"), x)
  compare(dev, lambda a: a.gelu(approximate="none"), lambda a: F.gelu(a), x, atol=2e-6)
  with pytest.raises(RuntimeError, match="approximate"): Tensor(x).gelu(approximate="erf")

@pytest.mark.parametrize("dev", DEVS)
def test_logsigmoid_like_torch(dev):
  x = np.array([-100.0, -30.0, -2.5, -1e-3, 0.0, 1e-3, 2.5, 30.0, 100.0], dtype=np.float32)   # 0: the gradient is 1/2
  compare(dev, lambda a: a.logsigmoid(), F.logsigmoid, x)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape,axis", [((3, 5), -1), ((3, 5), 0), ((1,), 0), ((2, 3, 4), 1)])
def test_softmin_like_torch(dev, shape, axis):
  compare(dev, lambda a: a.softmin(axis), lambda a: F.softmin(a, dim=axis), rnd(*shape))

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, 0.25, 1.5, math.inf, 0.0, -1.0, -2.5, -math.inf])
def test_normalize_like_torch(dev, p):
  x = rnd(4, 3, 2)
  x[1, :, 0] = 0.0   # a zero vector: divided by eps, with finite gradients
  x[2, 1, 1] = 0.0   # a zero element of a nonzero vector: 0 < p < 1 has |x|**p an infinite slope there, torch passes nothing through it
  compare(dev, lambda a: a.normalize(p=p), lambda a: F.normalize(a, p=p), x, atol=1e-5, gatol=1e-3)
  compare(dev, lambda a: a.normalize(p=p, dim=-1, eps=0.5), lambda a: F.normalize(a, p=p, dim=-1, eps=0.5), x)

@pytest.mark.parametrize("p", [math.inf, -math.inf, 2.0, 1.0, 0.0, 0.5])
@pytest.mark.parametrize("shape,dim", [((0, 3), 0), ((3, 0), 1), ((0, 3), 1), ((3, 0), 0), ((2, 0, 3), -2)])
def test_normalize_of_empty_tensors_like_torch(shape, dim, p):
  # the +-inf norm over an empty dim (a max over nothing) gave an empty result where torch raises; an empty result where
  # the dim normalized over is not empty, and every other p, is torch's too
  x = np.ones(shape, np.float32)
  try: want = F.normalize(torch.tensor(x), p=p, dim=dim).numpy()
  except RuntimeError:
    with pytest.raises(IndexError, match=rf"normalize\(p={p}\) over axis {dim % len(shape)} of shape"): Tensor(x).normalize(p=p, dim=dim)
    assert math.isinf(p)
    return
  assert Tensor(x).normalize(p=p, dim=dim).numpy().shape == want.shape

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("p", [2.0, 3.0, 1.0])
def test_half_normalize_computes_in_float32_like_torch(dt, p):
  # the sum of |x|**p in float16 overflowed past 65504: every value of rows of |x| ~ 300 (p = 2) was 0, torch's are the
  # float32 norm's; bfloat16 p = 3 was 2% off (the cubes and their sum rounded to 8 bits)
  tdt = torch.float16 if dt == dtypes.float16 else torch.bfloat16
  x = torch.tensor(rnd(4, 16, 3, scale=300.0)).to(tdt)
  got = Tensor(x.float().numpy()).cast(dt).normalize(p=p).float().numpy()
  close(got, F.normalize(x.float(), p=p).to(tdt).float().numpy(), atol=1e-3, rtol=1e-2 if dt == dtypes.bfloat16 else 2e-3)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (1, 2, 3, 3)])
def test_batchnorm_functional_like_torch(dev, shape):
  c = shape[1]
  x, w, b, m, v = rnd(*shape), rnd(c, seed=1), rnd(c, seed=2), rnd(c, seed=3), np.abs(rnd(c, seed=4)) + 0.5
  compare(dev, lambda x_, w_, b_, m_, v_: x_.batchnorm(w_, b_, m_, (v_ + 1e-5).rsqrt()),
          lambda x_, w_, b_, m_, v_: F.batch_norm(x_, m_.detach(), v_.detach(), w_, b_, training=False, eps=1e-5), x, w, b, m, v)
  compare(dev, lambda x_, m_, v_: x_.batchnorm(None, None, m_, (v_ + 1e-5).rsqrt()),
          lambda x_, m_, v_: F.batch_norm(x_, m_.detach(), v_.detach(), training=False, eps=1e-5), x, m, v)

# ---- attention ----
@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5, 6, 3), (1, 1, 1, 1, 1, 1), (2, 1, 5, 3, 4, 4)])   # (B, H, L, S, E, Ev)
def test_scaled_dot_product_attention_like_torch(dev, shape):
  B, H, L, S, E, Ev = shape
  q, k, v = rnd(B, H, L, E), rnd(B, H, S, E, seed=1), rnd(B, H, S, Ev, seed=2)
  compare(dev, lambda a, b, c: a.scaled_dot_product_attention(b, c), F.scaled_dot_product_attention, q, k, v)
  compare(dev, lambda a, b, c: a.scaled_dot_product_attention(b, c, is_causal=True), lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, v)
  compare(dev, lambda a, b, c: a.scaled_dot_product_attention(b, c, scale=0.3), lambda a, b, c: F.scaled_dot_product_attention(a, b, c, scale=0.3), q, k, v)
  fmask = rnd(L, S, seed=3)
  compare(dev, lambda a, b, c, m: a.scaled_dot_product_attention(b, c, attn_mask=m.detach()),
          lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m.detach()), q, k, v, fmask)

@pytest.mark.parametrize("dev", DEVS)
def test_attention_bool_mask_and_fully_masked_rows_like_torch(dev):
  q, k, v = rnd(2, 2, 4, 3), rnd(2, 2, 5, 3, seed=1), rnd(2, 2, 5, 3, seed=2)
  mask = rnd(2, 1, 4, 5, seed=3) > 0
  mask[0, 0, 1] = False   # nothing to attend to: zeros out and no NaN in the gradients, as torch
  compare(dev, lambda a, b, c, m: a.scaled_dot_product_attention(b, c, attn_mask=m), lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m),
          q, k, v, mask)
  fmask = np.where(mask, 0.0, -np.inf).astype(np.float32)
  compare(dev, lambda a, b, c, m: a.scaled_dot_product_attention(b, c, attn_mask=m.detach()),
          lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m.detach()), q, k, v, fmask)

def test_attention_int_mask_raises():
  # a 0/1 int mask (a tokenizer's attention_mask) was added to the scores as numbers, so every key was attended to; torch raises
  q, k, v = Tensor(rnd(3, 4)), Tensor(rnd(5, 4, seed=1)), Tensor(rnd(5, 2, seed=2))
  mask = np.array([[1, 1, 0, 0, 1]] * 3)
  for dt in (dtypes.int64, dtypes.int32, dtypes.uint8):
    with pytest.raises(TypeError, match="attn_mask must be bool"): q.scaled_dot_product_attention(k, v, attn_mask=Tensor(mask).cast(dt))
  close(q.scaled_dot_product_attention(k, v, attn_mask=Tensor(mask).bool()).numpy(),
        F.scaled_dot_product_attention(torch.tensor(q.numpy()), torch.tensor(k.numpy()), torch.tensor(v.numpy()), attn_mask=torch.tensor(mask).bool()).numpy())

@pytest.mark.parametrize("dev", DEVS)
def test_attention_grouped_query_like_torch(dev):
  q, k, v = rnd(2, 6, 3, 4), rnd(2, 2, 5, 4, seed=1), rnd(2, 2, 5, 3, seed=2)
  compare(dev, lambda a, b, c: a.scaled_dot_product_attention(b, c, enable_gqa=True), lambda a, b, c: F.scaled_dot_product_attention(a, b, c, enable_gqa=True),
          q, k, v)
  with pytest.raises(RuntimeError, match="divide"): Tensor(q).scaled_dot_product_attention(Tensor(rnd(2, 4, 5, 4)), Tensor(rnd(2, 4, 5, 3)), enable_gqa=True)
  with pytest.raises(RuntimeError, match="is_causal"): Tensor(q).scaled_dot_product_attention(Tensor(q), Tensor(q), attn_mask=Tensor(q), is_causal=True)

@pytest.mark.parametrize("dev", DEVS)
def test_half_attention_scores_past_the_half_range_like_torch(dev):
  # a score q.k * scale past 65504 (each product q_i k_i well inside float16) stays finite through the float32 softmax: cast
  # to float16 first it was inf, a NaN row where torch's is finite
  q, k, v = (rnd(1, 1, 2, 1024, seed=1) * 55).astype(np.float16), (rnd(1, 1, 3, 1024, seed=2) * 55).astype(np.float16), rnd(1, 1, 3, 4, seed=3).astype(np.float16)
  k[0, 0, 1] = q[0, 0, 0]
  assert np.abs(q.astype(np.float32) * k[:, :, 1:2].astype(np.float32)).max() < 65504 < (q[0, 0, 0].astype(np.float32) ** 2).sum() / 32
  want = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v))).float().numpy()
  close(Tensor(q, device=dev).scaled_dot_product_attention(Tensor(k, device=dev), Tensor(v, device=dev)).float().numpy(), want, atol=2e-2, rtol=1e-2)

def test_attention_dropout_goes_through_tensor_dropout():
  q, k, v = (Tensor(rnd(1, 2, 4, 3, seed=s)) for s in range(3))
  plain = q.scaled_dot_product_attention(k, v).numpy()
  close(q.scaled_dot_product_attention(k, v, dropout_p=0.5).numpy(), plain)   # not training: no dropout, as Tensor.dropout
  with Tensor.train():
    Tensor.manual_seed(3)
    got = q.scaled_dot_product_attention(k, v, dropout_p=0.5).numpy()
    Tensor.manual_seed(3)
    want = ((q @ k.transpose(-2, -1)) / math.sqrt(3)).softmax(-1).dropout(0.5) @ v
    close(got, want.numpy())
    assert not np.allclose(got, plain)
    close(q.scaled_dot_product_attention(k, v, dropout_p=1.0).numpy(), np.zeros_like(plain))

# ---- transposed convolution ----
def _ct_case(nd, bs, cin_g, cout_g, groups, k, s, d, p, op, i, seed=0):
  x = rnd(bs, cin_g * groups, *[i] * nd, seed=seed)
  w, b = rnd(cin_g * groups, cout_g, *[k] * nd, seed=seed + 1), rnd(cout_g * groups, seed=seed + 2)
  fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
  return x, w, b, fn

@HS
@given(nd=st.sampled_from([1, 2]), bs=st.integers(1, 2), cin_g=st.integers(1, 3), cout_g=st.integers(1, 3), groups=st.integers(1, 2),
       k=st.integers(1, 3), s=st.integers(1, 3), d=st.integers(1, 2), p=st.integers(0, 2), i=st.integers(1, 4), data=st.data())
def test_conv_transpose_like_torch(nd, bs, cin_g, cout_g, groups, k, s, d, p, i, data):
  op = data.draw(st.integers(0, max(s, d) - 1))
  if (i - 1) * s - 2 * p + d * (k - 1) + op + 1 <= 0: return   # no output: torch raises too
  x, w, b, fn = _ct_case(nd, bs, cin_g, cout_g, groups, k, s, d, p, op, i)
  compare("CPU", lambda x_, w_, b_: x_.conv_transpose2d(w_, b_, groups=groups, stride=s, dilation=d, padding=p, output_padding=op),
          lambda x_, w_, b_: fn(x_, w_, b_, stride=s, padding=p, output_padding=op, groups=groups, dilation=d), x, w, b, atol=1e-4)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("case", [dict(nd=2, groups=2, k=3, s=2, d=1, p=1, op=1, i=3), dict(nd=1, groups=1, k=1, s=1, d=1, p=0, op=0, i=1),
                                  dict(nd=3, groups=1, k=2, s=2, d=1, p=0, op=1, i=2), dict(nd=2, groups=1, k=2, s=1, d=2, p=1, op=1, i=3)])
def test_conv_transpose_fixed_cases_like_torch(dev, case):
  x, w, b, fn = _ct_case(case["nd"], 1, 2, 3, case["groups"], case["k"], case["s"], case["d"], case["p"], case["op"], case["i"])
  kw = dict(stride=case["s"], padding=case["p"], output_padding=case["op"], groups=case["groups"], dilation=case["d"])
  compare(dev, lambda x_, w_, b_: x_.conv_transpose2d(w_, b_, **kw), lambda x_, w_, b_: fn(x_, w_, b_, **kw), x, w, b, atol=1e-4)

def test_conv_transpose_asymmetric_arguments_like_torch():
  x, w = rnd(2, 3, 4, 5), rnd(3, 2, 2, 3, seed=1)
  kw = dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0), dilation=(1, 2))
  compare("CPU", lambda x_, w_: x_.conv_transpose2d(w_, **kw), lambda x_, w_: F.conv_transpose2d(x_, w_, **kw), x, w, atol=1e-4)

def test_conv_transpose_checks_arguments():
  x, w = Tensor(rnd(1, 2, 3, 3)), Tensor(rnd(2, 3, 2, 2))
  with pytest.raises(RuntimeError, match="output_padding"): x.conv_transpose2d(w, output_padding=1)
  with pytest.raises(ValueError, match="input channels"): x.conv_transpose2d(Tensor(rnd(3, 3, 2, 2)))
  with pytest.raises(ValueError, match="groups"): x.conv_transpose2d(w, groups=3)

def test_conv_bias_of_another_size_raises():
  # a (1,) bias of a 3-channel conv broadcast: one value added to every channel, silently; torch raises
  x = Tensor(rnd(1, 2, 4, 4))
  with pytest.raises(ValueError, match=r"bias of shape \(1,\) needs one value per output channel \(3,\)"): x.conv2d(Tensor(rnd(3, 2, 1, 1)), Tensor([1.0]))
  with pytest.raises(ValueError, match="one value per output channel"): x.conv_transpose2d(Tensor(rnd(2, 3, 1, 1)), Tensor([1.0]))
  assert x.conv2d(Tensor(rnd(3, 2, 1, 1)), Tensor(rnd(3))).shape == (1, 3, 4, 4)

@pytest.mark.parametrize("dev", DEVS)
def test_conv_transpose_layers_like_torch(dev):
  for ours, theirs, x in [(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), torch.nn.ConvTranspose2d(4, 6, 3, 2, 1, 1, groups=2),
                           rnd(2, 4, 3, 2)),
                          (nn.ConvTranspose1d(2, 3, 2, stride=3, dilation=2, bias=False), torch.nn.ConvTranspose1d(2, 3, 2, 3, dilation=2, bias=False), rnd(1, 2, 4))]:
    assert ours.weight.shape == tuple(theirs.weight.shape)
    bound = 1 / math.sqrt(theirs.weight.shape[1] * math.prod(theirs.weight.shape[2:]))   # torch's fan-in
    assert np.abs(ours.weight.numpy()).max() <= bound
    with torch.no_grad():
      theirs.weight[:] = torch.tensor(ours.weight.numpy())
      if ours.bias is not None: theirs.bias[:] = torch.tensor(ours.bias.numpy())
    ours.weight, ours.bias = ours.weight.to(dev), ours.bias.to(dev) if ours.bias is not None else None
    close(ours(Tensor(x, device=dev)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-5)
  with pytest.raises(ValueError, match="padding"): nn.ConvTranspose2d(1, 1, 3, padding="same")

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_int_conv_and_matmul_products_are_the_asked_dtypes(dev, dt):
  # an int8 conv summed its int8-wrapped products into int64 (neither the exact sum nor its int8 wrap); dtype= int32 or
  # float32 (conv and matmul) wrapped the products too: [[100, 100]] @ [[100], [100]] with dtype=int32 was 32, not 20000
  rng = np.random.default_rng(0)
  x, w = rng.integers(0 if dt == "uint8" else -100, 100, (2, 3, 5, 5)), rng.integers(0 if dt == "uint8" else -100, 100, (4, 3, 3, 3))
  exact = F.conv2d(torch.tensor(x).double(), torch.tensor(w).double(), padding=1).long().numpy()
  X, W = Tensor(x.astype(dt), device=dev), Tensor(w.astype(dt), device=dev)
  y = X.conv2d(W, padding=1)
  assert y.dtype == getattr(dtypes, dt)   # the operands' dtype, wrapping as their matmul's (and torch's int matmul)
  np.testing.assert_array_equal(y.numpy(), exact.astype(dt))
  for out in (dtypes.int32, dtypes.float32):
    got = X.conv2d(W, padding=1, dtype=out)
    assert got.dtype == out
    np.testing.assert_array_equal(got.numpy(), exact)
    a, b = X.reshape(10, 15)[:, :9], W.reshape(12, 9).T
    np.testing.assert_array_equal(a.dot(b, dtype=out).numpy(), x.reshape(10, 15)[:, :9].astype(np.int64) @ w.reshape(12, 9).T.astype(np.int64))
  # float16 operands with dtype=float32: a float32 result, as matmul's (it was rounded back to float16)
  assert Tensor.ones(1, 1, 3, 3, dtype=dtypes.half, device=dev).conv2d(Tensor.ones(1, 1, 2, 2, dtype=dtypes.half, device=dev), dtype=dtypes.float32).dtype == dtypes.float32

# ---- interpolate ----
_TORCH_MODE = {("linear", 1): "linear", ("linear", 2): "bilinear", ("linear", 3): "trilinear"}
@HS
@given(nd=st.integers(1, 3), mode=st.sampled_from(["nearest", "nearest-exact", "linear"]), align=st.booleans(), data=st.data())
def test_interpolate_like_torch(nd, mode, align, data):
  if mode != "linear": align = False
  shape = data.draw(st.lists(st.integers(1, 6), min_size=nd, max_size=nd))
  size = tuple(data.draw(st.lists(st.integers(1, 9), min_size=nd, max_size=nd)))
  x = rnd(2, 3, *shape)
  tm = _TORCH_MODE.get((mode, nd), mode)
  compare("CPU", lambda a: a.interpolate(size, mode=mode, align_corners=align),
          lambda a: F.interpolate(a, size=size, mode=tm, **({"align_corners": align} if mode == "linear" else {})), x, atol=1e-5)

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("mode,align", [("nearest", False), ("nearest-exact", False), ("linear", False), ("linear", True)])
def test_interpolate_2d_up_and_down_like_torch(dev, mode, align):
  x = rnd(1, 2, 3, 5)
  for size in [(7, 2), (1, 1), (3, 10)]:
    compare(dev, lambda a: a.interpolate(size, mode=mode, align_corners=align),
            lambda a: F.interpolate(a, size=size, mode="bilinear" if mode == "linear" else mode, **({"align_corners": align} if mode == "linear" else {})), x)

@pytest.mark.parametrize("shape,size,align,hi", [((64, 64), (10, 10), False, 16), ((5, 7), (12, 3), True, 256), ((9, 4), (4, 9), False, 256),
                                                 ((1, 6), (3, 1), True, 256)])
def test_interpolate_uint8_bilinear_is_torchs_bytes(shape, size, align, hi):
  # torch computes uint8 bilinear in fixed point (int16 weights, rounded per axis, the last axis first): every byte equal,
  # not within 1 (it lerped in uint8 before: (b - a) wrapped and the weight cast to 0)
  x = np.random.default_rng(shape[0] * 31 + size[1]).integers(0, hi, (2, 3, *shape)).astype(np.uint8)
  want = F.interpolate(torch.tensor(x), size=size, mode="bilinear", align_corners=align).numpy()
  got = Tensor(x, device="CPU").interpolate(size, mode="linear", align_corners=align)
  assert got.dtype == dtypes.uint8 and got.shape == want.shape
  np.testing.assert_array_equal(got.numpy(), want)

def test_interpolate_linear_next_to_an_infinite_value_is_torchs_weighted_sum():
  # (1 - w) * a + w * b as torch: between 1 and inf that is inf; a + (b - a) * w gave inf - inf = NaN (also public
  # tinygrad 0.14). Size 6 from 4: [nan inf nan nan 2.5 3] before, torch's [nan inf inf inf 2.5 3] now. Found by
  # test_grad_fuzz.py. (A position right on a tap next to an inf, w = 0, is NaN in both: 0 * inf; the identity size copies.)
  x = np.array([[[1.0, np.inf, 2.0, 3.0]]], np.float32)
  for n in (3, 6, 8):
    want = F.interpolate(torch.tensor(x), size=(n,), mode="linear").numpy()
    np.testing.assert_array_equal(Tensor(x).interpolate((n,), mode="linear").numpy(), want)

def test_interpolate_int_linear_computes_in_float():
  # other int dtypes (torch has no int bilinear): lerped in float and truncated back, as public tinygrad's lerp
  x = np.array([[0, 100, -7, 3]], dtype=np.int32)
  want = F.interpolate(torch.tensor(x, dtype=torch.float32)[None], size=(7,), mode="linear")[0].numpy().astype(np.int32)
  np.testing.assert_array_equal(Tensor(x).interpolate((7,), mode="linear").numpy(), want)

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(dt="int8", n=4, out=7, align=False, seed=0)
@example(dt="int8", n=2, out=15, align=True, seed=79)   # (-48 -> 50 at 4/14 is -20: the float lerp gave -19)
@given(dt=st.sampled_from(["int8", "int16", "int32"]), n=st.integers(2, 7), out=st.integers(2, 15), align=st.booleans(), seed=st.integers(0, 99))
def test_interpolate_int_linear_truncates_the_exact_blend(dt, n, out, align, seed):
  # public tinygrad's int linear: each position an exact fraction, the blend truncated. float32 positions and torch's
  # a*(1-w) + b*w put exact values an ulp low, truncated one off: [35, 7] at 1/14 (size 4 -> 7) is 33 and gave 32, and
  # 14 of 69 random int resizes had such values (public tinygrad 0.14: 8, its int8 b - a also wraps)
  from fractions import Fraction
  x = np.random.default_rng(seed).integers(-60, 60, (n,))
  if seed == 0: x, n, out, align = np.array([10, -20, 35, 7]), 4, 7, False
  want = []
  for p in range(out):
    num, den = (p * (n - 1), out - 1) if align else ((2 * p + 1) * n - out, 2 * out)
    num = min(max(num, 0), (n - 1) * den)
    lo, fr = num // den, Fraction(num % den, den)
    want.append(int(x[lo] + (x[min(lo + 1, n - 1)] - x[lo]) * fr))   # int() truncates toward 0, as the cast
  got = Tensor(x.astype(dt)).interpolate((out,), mode="linear", align_corners=align)
  assert got.dtype == getattr(dtypes, dt) and got.tolist() == want

@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("align", [False, True])
def test_interpolate_half_bilinear_rounds_once_like_torch(dt, align):
  # computed in float32 and rounded once, as torch's: rounded to float16 at each step (b - a, its product with the weight,
  # the sum, per axis) about half the values were an ulp or more off torch's
  x = torch.tensor(rnd(2, 3, 17, 19) * 50).to(getattr(torch, dt))
  want = F.interpolate(x, size=(40, 7), mode="bilinear", align_corners=align).float().numpy()
  got = Tensor(x.float().numpy()).cast(getattr(dtypes, dt)).interpolate((40, 7), mode="linear", align_corners=align)
  assert got.dtype == getattr(dtypes, dt)
  assert (got.float().numpy() == want).mean() > 0.99

@pytest.mark.parametrize("align", [False, True])
def test_interpolate_float64_linear_keeps_float64_positions_like_torch(align):
  # torch computes a float64 tensor's positions and weights in float64; in float32 they were ~1e-8 relative off (a 4 -> 3
  # resize 8.5e-8 off, public tinygrad 0.14 2.1e-8), float32's digits in a float64 result
  x = np.random.default_rng(0).standard_normal((2, 3, 7, 5))
  for size in [(3, 3), (11, 4), (5, 9)]:
    want = F.interpolate(torch.tensor(x), size=size, mode="bilinear", align_corners=align).numpy()
    got = Tensor(x, device="CPU").interpolate(size, mode="linear", align_corners=align)
    assert got.dtype == dtypes.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-13)

def test_interpolate_any_leading_dims_and_checks():
  x = rnd(5, 4)
  close(Tensor(x).interpolate((3,), mode="linear").numpy(), F.interpolate(torch.tensor(x)[None], size=(3,), mode="linear")[0].numpy())
  with pytest.raises(ValueError, match="mode 'bicubic'"): Tensor(x).interpolate((3, 3), mode="bicubic")
  with pytest.raises(ValueError, match="align_corners"): Tensor(x).interpolate((3,), mode="nearest", align_corners=True)
  with pytest.raises(ValueError, match="size"): Tensor(x).interpolate((1, 2, 3))
  with pytest.raises(ValueError, match="size"): Tensor(x).interpolate((0,))   # torch: sizes > 0

# ---- average pooling ----
@HS
@given(nd=st.integers(1, 3), k=st.integers(1, 4), s=st.integers(1, 3), ceil=st.booleans(), incl=st.booleans(), data=st.data())
def test_avg_pool_like_torch(nd, k, s, ceil, incl, data):
  # ceil_mode's last window may hang over the padding: torch divides by the padded window without the overhang
  p = data.draw(st.integers(0, k // 2))
  shape = data.draw(st.lists(st.integers(k, 7), min_size=nd, max_size=nd))
  fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[nd]
  compare("CPU", lambda a: a.avg_pool2d((k,) * nd, s, padding=p, ceil_mode=ceil, count_include_pad=incl),
          lambda a: fn(a, k, s, p, ceil_mode=ceil, count_include_pad=incl), rnd(2, 1, *shape))

@pytest.mark.parametrize("dev", DEVS)
def test_avg_pool_ceil_mode_counts_the_padding_like_torch(dev):
  # (5, 5), k=3, s=3, p=1, ceil: 2 windows per dim, each of 9 positions with the padding (it divided by 4 where 9 was due)
  for incl in (True, False):
    compare(dev, lambda a: a.avg_pool2d(3, 3, padding=1, ceil_mode=True, count_include_pad=incl),
            lambda a: F.avg_pool2d(a, 3, 3, 1, ceil_mode=True, count_include_pad=incl), rnd(1, 2, 5, 5))
    compare(dev, lambda a: a.avg_pool2d((3, 2), 3, padding=1, ceil_mode=True, count_include_pad=incl),
            lambda a: F.avg_pool2d(a, (3, 2), 3, 1, ceil_mode=True, count_include_pad=incl), rnd(1, 1, 6, 6))

def _ceil_pool_ref(x, k, s, d, pb, pa, op, incl):
  # ceil_mode by its definition, one window at a time (1-d): windows start at 0, s, 2s ... of the padded row while they
  # start before the right padding and within ceil's span; a window counts its padding (value 0, or -inf for max) but not
  # its overhang past the padding
  i, fk, out = len(x), d * (k - 1) + 1, []
  padded = np.concatenate([np.full(pb, -np.inf if op == "max" else 0.0), x, np.full(pa, -np.inf if op == "max" else 0.0)])
  for st_ in range(0, i + pb, s):
    if st_ > i + pb + pa - fk + s - 1: break
    taps = [q for q in range(st_, st_ + fk, d) if q < i + pb + pa]
    if op == "max": out.append(padded[taps].max())
    else: out.append(padded[taps].sum() / (len(taps) if incl else sum(pb <= q < pb + i for q in taps)))
  return np.array(out, np.float32)

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(1, 3), s=st.integers(1, 3), d=st.integers(1, 2), pb=st.integers(0, 3), pa=st.integers(0, 3), n=st.integers(1, 7),
       op=st.sampled_from(["max", "avg", "avg_incl"]))
@example(k=1, s=3, d=1, pb=2, pa=0, n=1, op="max")   # (the row ends inside the left padding: a shrink error)
@example(k=1, s=3, d=1, pb=2, pa=0, n=1, op="avg")
def test_ceil_mode_with_padding_past_half_the_kernel_drops_windows_of_the_right_padding(k, s, d, pb, pa, n, op):
  # padding past half the kernel (torch refuses it, public tinygrad takes it): ceil_mode kept floor mode's windows that
  # start in the right padding, padding alone. (4,) k=1 s=3 pads (1, 2): 3 windows [-inf, x1, -inf] where public
  # tinygrad's are [-inf, x1]; avg without the padding's count: 0/0 = NaN
  if n + pb + pa < d * (k - 1) + 1 or (n + pb - 1) < 0: return
  x = rnd(n, seed=n + 7 * k)
  want = _ceil_pool_ref(x, k, s, d, pb, pa, op[:3], op == "avg_incl")
  t = Tensor(x.reshape(1, 1, n))
  got = t.max_pool2d((k,), s, d, (pb, pa), ceil_mode=True) if op == "max" else \
        t.avg_pool2d((k,), s, d, (pb, pa), ceil_mode=True, count_include_pad=op == "avg_incl")
  np.testing.assert_allclose(got.numpy().reshape(-1), want, rtol=1e-6)

@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_avg_pool_without_the_padding_rounds_once_like_torch(dt):
  # the window's sum divided by its count in float32, rounded once as torch's: the sum rounded to float16 first left a
  # fifth of the means an ulp off
  x = torch.tensor(rnd(8, 4, 9, 9) * 3 + 5).to(getattr(torch, dt))
  for kw in ({"padding": 1, "count_include_pad": False}, {"padding": 1, "ceil_mode": True}):
    got = Tensor(x.float().numpy()).cast(getattr(dtypes, dt)).avg_pool2d(3, 2, **kw)
    assert got.dtype == getattr(dtypes, dt)
    np.testing.assert_array_equal(got.float().numpy(), F.avg_pool2d(x, 3, 2, **kw).float().numpy())

# ---- max pooling with indices, unpooling ----
@HS
@given(nd=st.integers(1, 3), k=st.integers(1, 3), s=st.integers(1, 3), d=st.integers(1, 2), ceil=st.booleans(), data=st.data())
def test_max_pool_indices_like_torch(nd, k, s, d, ceil, data):
  p = data.draw(st.integers(0, k // 2))
  shape = data.draw(st.lists(st.integers(d * (k - 1) + 1, 6), min_size=nd, max_size=nd))
  x = rnd(2, 2, *shape)
  fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
  tv, ti = fn(torch.tensor(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
  v, i = Tensor(x).max_pool2d((k,) * nd, s, d, p, ceil_mode=ceil, return_indices=True)
  assert i.dtype == dtypes.int32 and i.shape == tuple(ti.shape)   # public tinygrad's index dtype (torch's is int64)
  np.testing.assert_array_equal(i.numpy(), ti.numpy())
  close(v.numpy(), tv.numpy())

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("nd,k,s,d,p,ceil,shape", [(1, 2, 3, 2, 1, True, (1,)), (2, 2, 1, 2, 1, False, (1, 3)), (2, (3, 2), (3, 2), (1, 2), 1, True, (5, 1)),
                                                   (3, (1, 2, 2), (3, 3, 1), 2, (0, 1, 0), False, (5, 1, 3))])
def test_max_pool_indices_of_windows_of_padding_only_like_torch(dev, nd, k, s, d, p, ceil, shape):
  # a dilation stepping over a small plane leaves windows with no input element: torch's index is where its scan starts
  # (each dim's first position >= 0), ours was P minus the padding's key, -2147483643
  x = rnd(2, 2, *shape)
  tv, ti = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd](torch.tensor(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
  v, i = Tensor(x, device=dev).max_pool2d(k if isinstance(k, tuple) else (k,) * nd, s, d, p, ceil_mode=ceil, return_indices=True)
  np.testing.assert_array_equal(i.numpy(), ti.numpy())
  np.testing.assert_array_equal(v.numpy(), tv.numpy())

@pytest.mark.parametrize("dev", DEVS)
def test_max_pool_indices_ties_take_the_first_like_torch(dev):
  x = np.array([[[[1, 1, 0], [1, 1, 0], [2, 2, 2]]]], dtype=np.float32)
  tv, ti = F.max_pool2d(torch.tensor(x), 2, 1, return_indices=True)
  v, i = Tensor(x, device=dev).max_pool2d(2, 1, return_indices=True)
  np.testing.assert_array_equal(i.numpy(), ti.numpy())
  close(v.numpy(), tv.numpy())
  compare(dev, lambda a: a.max_pool2d(2, 1, padding=1, return_indices=True)[0], lambda a: F.max_pool2d(a, 2, 1, padding=1), rnd(1, 2, 3, 4))

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_max_pool_indices_of_nans_take_the_last_like_torch(dev, dt):
  # torch's scan takes every NaN it meets: a window with several NaNs gives the last one's index (it was the first here)
  x = np.array([[[[1, np.nan, np.nan, 2], [np.nan, 1, 1, 2], [0, 0, -np.inf, 0], [np.nan, -np.inf, 5, np.nan]]]], dtype=np.float32)
  for kw in ({"kernel_size": 2, "stride": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}, {"kernel_size": 2, "stride": 1}):
    tv, ti = F.max_pool2d(torch.tensor(x).to(getattr(torch, dt)), **kw, return_indices=True)
    v, i = Tensor(x, device=dev).cast(getattr(dtypes, dt)).max_pool2d(**kw, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy(), err_msg=str(kw))
    np.testing.assert_array_equal(v.float().numpy(), tv.float().numpy())

@pytest.mark.parametrize("dev", DEVS)
@pytest.mark.parametrize("k,s,p,shape", [(2, 2, 0, (4, 6)), (2, 2, 0, (5, 5)), (3, 2, 1, (5, 5)), (3, 1, 1, (3, 4)), (1, 1, 0, (1, 1))])
def test_max_unpool2d_like_torch(dev, k, s, p, shape):
  # (3, 1, 1): overlapping windows pick the same input more than once; each copy gets the whole gradient, as torch
  x = rnd(2, 3, *shape)
  tv, ti = F.max_pool2d(torch.tensor(x), k, s, p, return_indices=True)
  if shape != (5, 5) or p:   # (5, 5) pooled by 2 unpools to (4, 4) by default: index 24 would be outside (torch raises)
    compare(dev, lambda a, i: a.max_unpool2d(i, k, s, padding=p), lambda a, i: F.max_unpool2d(a, i, k, s, p), tv.numpy(), ti.numpy())
  # output_size: the pooled input's own size (torch's use), which can be larger than the default by up to stride-1
  compare(dev, lambda a, i: a.max_unpool2d(i, k, s, padding=p, output_size=shape), lambda a, i: F.max_unpool2d(a, i, k, s, p, output_size=shape),
          tv.numpy(), ti.numpy())

@pytest.mark.parametrize("dev", DEVS)
def test_max_unpool2d_keeps_inf_and_nan_like_torch(dev):
  # a value met once is put as it is: inf stayed inf only if nothing multiplied it by 0 (it gave nan)
  x = np.array([[[[np.inf, -np.inf, np.nan, 1.0], [1.0, 2.0, 3.0, -np.inf], [0.5, 7.0, -1.0, 2.0], [np.inf, 0.0, 1.0, 1.0]]]], dtype=np.float32)
  tv, ti = F.max_pool2d(torch.tensor(x), 2, return_indices=True)
  v, i = Tensor(x, device=dev).max_pool2d(2, return_indices=True)
  want = F.max_unpool2d(tv, ti, 2, output_size=(4, 4)).numpy()
  np.testing.assert_array_equal(v.max_unpool2d(i, 2, output_size=(4, 4)).numpy(), want)
  assert np.isinf(want).sum() == 2

def test_max_unpool2d_checks_arguments():
  x = Tensor(rnd(1, 1, 2, 2))
  with pytest.raises(ValueError, match="indices"): x.max_unpool2d(Tensor([[0, 1]]))
  with pytest.raises(TypeError, match="int dtype"): x.max_unpool2d(x)

# ---- empty inputs ----
@pytest.mark.parametrize("dev", DEVS)
def test_empty_inputs_like_torch(dev):
  x, y = np.zeros((0, 4), np.float32), np.zeros((0,), np.int64)
  for r in ("sum", "none", "mean"):   # an empty mean is NaN in both
    compare(dev, lambda a, b: a.cross_entropy(b, reduction=r), lambda a, b: F.cross_entropy(a, b, reduction=r), x, y)
    compare(dev, lambda a, b: a.nll_loss(b, reduction=r), lambda a, b: F.nll_loss(a, b, reduction=r), x, y)
  compare(dev, lambda a, b: a.sparse_categorical_crossentropy(b, reduction="sum"), lambda a, b: F.cross_entropy(a, b, reduction="sum"), x, y)
  q, k = np.zeros((1, 2, 0, 3), np.float32), rnd(1, 2, 4, 3)
  compare(dev, lambda a, b: a.scaled_dot_product_attention(b, b), lambda a, b: F.scaled_dot_product_attention(a, b, b), q, k)
  compare(dev, lambda a, b: a.scaled_dot_product_attention(b, b), lambda a, b: F.scaled_dot_product_attention(a, b, b), k, q)   # S = 0: zeros
  compare(dev, lambda a, w: a.conv_transpose2d(w, stride=2), lambda a, w: F.conv_transpose2d(a, w, stride=2), np.zeros((0, 2, 3, 3), np.float32), rnd(2, 3, 2, 2))
  compare(dev, lambda a: a.interpolate((5,), mode="linear"), lambda a: F.interpolate(a, size=(5,), mode="linear"), np.zeros((0, 1, 3), np.float32))
  tv, ti = F.max_pool2d(torch.zeros(0, 1, 4, 4), 2, return_indices=True)
  v, i = Tensor(np.zeros((0, 1, 4, 4), np.float32), device=dev).max_pool2d(2, return_indices=True)
  assert v.shape == i.shape == tuple(tv.shape)
  compare(dev, lambda a, i_: a.max_unpool2d(i_, 2), lambda a, i_: F.max_unpool2d(a, i_, 2), tv.numpy(), ti.numpy())
  compare(dev, lambda a: a.normalize(), F.normalize, np.zeros((0, 3), np.float32))
  compare(dev, lambda a: a.logsigmoid(), F.logsigmoid, np.zeros((0,), np.float32))
