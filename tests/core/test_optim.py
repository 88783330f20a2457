"""Optimizers against numpy reference implementations over several steps.

The loss couples the parameters (each one's gradient reads the other), so an update that lets a gradient see another
parameter's new value fails here.
"""
import numpy as np
import pytest
from tinygrad.tensor import Tensor
from tinygrad.nn.optim import SGD, Adam, AdamW, LAMB
from tinygrad import gradient as G

STEPS = 4
A0 = np.array([1.0, -2.0, 0.5], np.float32)
B0 = np.array([0.3, 0.7, -1.2], np.float32)
C = np.array([0.1, -0.4, 0.2], np.float32)

def np_grads(a, b):
  # loss = sum((a*b)^2) + sum(a*c)
  return [2 * a * b * b + C, 2 * a * a * b]

def tiny_run(make_opt):
  a, b = Tensor(A0.copy(), requires_grad=True), Tensor(B0.copy(), requires_grad=True)
  opt = make_opt([a, b])
  for _ in range(STEPS):
    opt.zero_grad()
    loss = ((a * b) ** 2).sum() + (a * Tensor(C)).sum()
    G.backward(loss)
    opt.step()
  return a.numpy(), b.numpy()

def np_sgd(lr, momentum=0.0, wd=0.0, nesterov=False):
  ps, bufs = [A0.astype(np.float64), B0.astype(np.float64)], [np.zeros(3), np.zeros(3)]
  for _ in range(STEPS):
    gs = np_grads(*ps)
    for i in range(2):
      g = gs[i] + wd * ps[i]
      if momentum:
        bufs[i] = momentum * bufs[i] + g
        g = g + momentum * bufs[i] if nesterov else bufs[i]
      ps[i] = ps[i] - lr * g
  return ps

def np_adam(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, lamb=False, l2=0.0):
  ps, m, v = [A0.astype(np.float64), B0.astype(np.float64)], [np.zeros(3)] * 2, [np.zeros(3)] * 2
  for t in range(1, STEPS + 1):
    gs = np_grads(*ps)
    for i in range(2):
      gs[i] = gs[i] + l2 * ps[i]   # torch.optim.Adam's weight_decay
      m[i] = b1 * m[i] + (1 - b1) * gs[i]
      v[i] = b2 * v[i] + (1 - b2) * gs[i] ** 2
      up = (m[i] / (1 - b1 ** t)) / (np.sqrt(v[i] / (1 - b2 ** t)) + eps) + wd * ps[i]
      r = 1.0
      if lamb:
        r1, r2 = np.linalg.norm(ps[i]), np.linalg.norm(up)
        r = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
      ps[i] = ps[i] - lr * r * up
  return ps

CASES = [
  ("sgd", lambda p: SGD(p, lr=0.05), lambda: np_sgd(0.05)),
  ("sgd_momentum", lambda p: SGD(p, lr=0.05, momentum=0.9), lambda: np_sgd(0.05, 0.9)),
  ("sgd_nesterov", lambda p: SGD(p, lr=0.05, momentum=0.9, nesterov=True), lambda: np_sgd(0.05, 0.9, nesterov=True)),
  ("sgd_wd", lambda p: SGD(p, lr=0.05, momentum=0.5, weight_decay=0.1), lambda: np_sgd(0.05, 0.5, wd=0.1)),
  ("adam", lambda p: Adam(p, lr=0.01), lambda: np_adam(0.01)),
  ("adam_betas", lambda p: Adam(p, lr=0.03, b1=0.8, b2=0.99, eps=1e-6), lambda: np_adam(0.03, 0.8, 0.99, 1e-6)),
  # Adam's weight_decay was AdamW's decoupled decay (torch.optim.Adam's is an L2 term in the gradient): 0.086 off torch in 6 steps
  ("adam_wd", lambda p: Adam(p, lr=0.01, weight_decay=0.3), lambda: np_adam(0.01, l2=0.3)),
  ("adamw", lambda p: AdamW(p, lr=0.01), lambda: np_adam(0.01, wd=0.01)),
  ("adamw_wd", lambda p: AdamW(p, lr=0.01, weight_decay=0.3), lambda: np_adam(0.01, wd=0.3)),
  ("lamb", lambda p: LAMB(p, lr=0.01, weight_decay=0.1), lambda: np_adam(0.01, eps=1e-6, wd=0.1, lamb=True)),
]
@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_optimizer_matches_numpy(name, make, ref):
  got = tiny_run(make)
  want = ref()
  for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)

def test_defaults_like_tinygrad():
  p = [Tensor([1.0], requires_grad=True)]
  sgd = SGD(p)
  assert sgd.lr.item() == pytest.approx(0.001) and sgd.momentum == 0 and sgd.wd == 0 and not sgd.nesterov
  adam = Adam(p)
  assert (adam.b1, adam.b2, adam.eps, adam.wd) == (0.9, 0.999, 1e-8, 0.0)
  assert AdamW(p).wd == 0.01
  assert LAMB(p).eps == 1e-6

def test_zero_grad_and_missing_grad():
  a = Tensor([1.0, 2.0], requires_grad=True)
  opt = SGD([a], lr=0.1)
  G.backward((a * a).sum())
  assert a.grad is not None
  opt.zero_grad()
  assert a.grad is None
  with pytest.raises(RuntimeError, match="backward"): opt.step()

def test_a_tensor_lr_is_refused_with_the_fix():
  # it failed as "the truth value of a Tensor is ambiguous" (lr < 0); a parameter the loss does not read: name the cause
  a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  with pytest.raises(TypeError, match=r"lr\.item\(\)"): SGD([a], lr=Tensor(0.1))
  opt = SGD([a, b], lr=0.1)
  G.backward((a * a).sum())
  with pytest.raises(RuntimeError, match=r"\[1\] of 2 .*does not use"): opt.step()

def test_requires_grad_none_becomes_true_and_buffers_realized():
  a = Tensor([1.0])
  buf = Tensor([5.0], requires_grad=False)
  opt = SGD([a, buf])
  assert a.requires_grad is True and opt.params == [a] and opt.buffers == [buf]
  with pytest.raises(ValueError): SGD([buf])

def test_a_buffer_unfrozen_after_construction_raises_instead_of_staying_put():
  # torch trains a tensor given with requires_grad False once it is set True; here it is a buffer the step never updates,
  # so its gradient would be dropped silently: an error instead
  a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=False)
  opt = SGD([a, b], lr=0.1)
  b.requires_grad = True
  G.backward((a * b).sum())
  with pytest.raises(RuntimeError, match="requires_grad False"): opt.step()
  b.grad = None   # unfrozen but unused: nothing is lost
  opt.step()
  np.testing.assert_allclose(a.numpy(), [0.7, 1.6], rtol=1e-6)

def test_step_updates_in_place():
  # after the first step the parameter keeps its buffer: later steps assign into it
  a = Tensor([1.0, 2.0], requires_grad=True)
  opt = SGD([a], lr=0.5)
  base = a.uop.src[0] if a.uop.op.name == "RESHAPE" else a.uop
  for _ in range(2):
    opt.zero_grad()
    G.backward((a * a).sum())
    opt.step()
  now = a.uop.src[0] if a.uop.op.name == "RESHAPE" else a.uop
  assert now is base
  np.testing.assert_allclose(a.numpy(), [0.0, 0.0])

def test_lr_change_takes_effect():
  a = Tensor([1.0], requires_grad=True)
  opt = SGD([a], lr=0.1)
  assert opt.lr.shape == (1,)   # public tinygrad's shape: its schedulers assign a (1,) value
  opt.lr.assign(Tensor([0.5]))
  G.backward((a * 1.0).sum())
  opt.step()
  np.testing.assert_allclose(a.numpy(), [0.5])

@pytest.mark.parametrize("make", [lambda p: SGD(p, lr=0.1, momentum=0.5), lambda p: Adam(p, lr=0.1), lambda p: LAMB(p, lr=0.1)])
def test_lr_replaced_by_a_float_takes_effect(make):
  # `opt.lr = 0.5` (public tinygrad's steps multiply by whatever lr is) raised AttributeError: 'float' has no attribute 'shape'
  a, b = Tensor([1.0, -2.0], requires_grad=True), Tensor([1.0, -2.0], requires_grad=True)
  o1, o2 = make([a]), make([b])
  o1.lr, o2.lr = 0.5, Tensor([0.5])
  for _ in range(2):
    for p, o in ((a, o1), (b, o2)):
      o.zero_grad()
      G.backward((p * p * p).sum())
      o.step()
  np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
  assert not np.allclose(a.numpy(), [1.0, -2.0])

@pytest.mark.parametrize("how", ["float", "tensor", "in_place"])
def test_lr_changed_between_jitted_steps_is_used_or_raises(how):
  # a capture bakes a float lr in and reads the lr tensor's buffer it saw: `opt.lr = 0.05` or `opt.lr = Tensor([0.05])`
  # after it replayed the old lr without a word (w kept stepping by 0.1); changing the tensor in place is replayed
  from tinygrad import TinyJit
  from tinygrad.engine.jit import JitError
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = SGD([w], lr=0.1)
  if how == "float": opt.lr = 0.1
  @TinyJit
  def step():
    opt.zero_grad()
    G.backward(w.sum())
    opt.step()
  for _ in range(3): step()
  if how == "in_place":
    opt.lr *= 0.5
    step()
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.35, 2.0 - 0.35], rtol=1e-6)
    return
  opt.lr = 0.05 if how == "float" else Tensor([0.05])
  with pytest.raises(JitError, match="SGD.lr"): step()
  np.testing.assert_allclose(w.numpy(), [0.7, 1.7], rtol=1e-6)   # (no step ran with the old lr)
  step.reset()
  for _ in range(3): step()
  np.testing.assert_allclose(w.numpy(), [0.55, 1.55], rtol=1e-6)

@pytest.mark.parametrize("make, attr, new", [(lambda w: SGD([w], lr=0.1, momentum=0.9), "momentum", 0.0),
                                             (lambda w: SGD([w], lr=0.1, weight_decay=0.1), "wd", 0.5),
                                             (lambda w: Adam([w], lr=0.1), "b1", 0.5), (lambda w: AdamW([w], lr=0.1), "wd", 0.0)])
def test_hyperparameter_changed_between_jitted_steps_raises(make, attr, new):
  # the capture bakes the Python hyperparameters in: `opt.momentum = 0.0` after it replayed the old momentum without a word
  from tinygrad import TinyJit
  from tinygrad.engine.jit import JitError
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = make(w)
  @TinyJit
  def step():
    opt.zero_grad()
    G.backward((w * w).sum())
    opt.step()
  for _ in range(3): step()
  before = w.numpy()
  setattr(opt, attr, new)
  with pytest.raises(JitError, match=rf"{type(opt).__name__}\.{attr} = .*now it is {new}.*\.reset\(\)"): step()
  np.testing.assert_array_equal(w.numpy(), before)
  step.reset()
  step()   # captured again, with the new value

def test_batchnorm_running_stats_use_the_old_weights():
  # the running mean is computed from the forward pass, i.e. from the weights before the step
  from tinygrad import nn
  from tinygrad.nn.state import get_parameters
  lin, bn = nn.Linear(2, 3), nn.BatchNorm(3)
  opt = SGD(get_parameters([lin, bn]), lr=0.5)
  x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
  w0, b0 = lin.weight.numpy().copy(), lin.bias.numpy().copy()
  with G.train():
    out = bn(lin(Tensor(x)))
    G.backward(out.square().sum())
    opt.step()
  np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * (x @ w0.T + b0).mean(0), rtol=1e-5, atol=1e-6)
  assert bn.num_batches_tracked.numpy().tolist() == 1
  assert not np.allclose(lin.weight.numpy(), w0)

# ---- LARS and Muon (tinygrad's formulation) against numpy ----
def np_lars(lr, momentum=0.9, wd=1e-4, nesterov=False, classic=True, pre_wd=True, tcoef=0.001, ns=None, params=None, grads=None, steps=STEPS):
  ps = [p.astype(np.float64) for p in (params or [A0, B0])]
  bufs = [np.zeros_like(p) for p in ps]
  for _ in range(steps):
    gs = (grads or np_grads)(*ps)
    for i in range(len(ps)):
      g, t = gs[i], ps[i]
      r = 1.0
      if tcoef:
        r1, r2 = np.linalg.norm(t), np.linalg.norm(g)
        r = tcoef * r1 / (r2 + wd * r1) if r1 > 0 and r2 > 0 else 1.0
      if pre_wd and wd: g = g + wd * t
      if classic: g = g * r * lr
      if momentum:
        bufs[i] = momentum * bufs[i] + g
        g = g + momentum * bufs[i] if nesterov else bufs[i]
      if ns:
        m = g.reshape(g.shape[0], -1)
        x = m / (np.linalg.norm(m) + 1e-7)
        tall = x.shape[0] > x.shape[1]
        if tall: x = x.T
        for _ in range(ns[0]):
          A = x @ x.T
          x = ns[1][0] * x + (ns[1][1] * A + ns[1][2] * A @ A) @ x
        g = (x.T if tall else x).reshape(g.shape)
      if not pre_wd and wd: t = t * (1 - wd * lr)
      if not classic: g = g * r * lr
      ps[i] = t - g
  return ps

from tinygrad.nn.optim import LARS, Muon  # noqa: E402
LARS_CASES = [
  ("lars", lambda p: LARS(p, lr=0.1), lambda: np_lars(0.1)),
  ("lars_nesterov_wd", lambda p: LARS(p, lr=0.1, momentum=0.5, weight_decay=0.01, nesterov=True), lambda: np_lars(0.1, 0.5, 0.01, True)),
  ("lars_not_classic", lambda p: LARS(p, lr=0.1, classic=False, tcoef=0.01), lambda: np_lars(0.1, classic=False, tcoef=0.01)),
  ("lars_no_momentum", lambda p: LARS(p, lr=0.1, momentum=0.0, pre_wd=False, weight_decay=0.1),
   lambda: np_lars(0.1, 0.0, 0.1, pre_wd=False)),
]
@pytest.mark.parametrize("name,make,ref", LARS_CASES, ids=[c[0] for c in LARS_CASES])
def test_lars_matches_numpy(name, make, ref):
  for g, w in zip(tiny_run(make), ref()): np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)

@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 2)])
def test_muon_orthogonalises_like_numpy(shape):
  rng = np.random.default_rng(0)
  w0, tgt = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
  def grads(w): return [2 * (w - tgt)]   # loss = sum((w - tgt)^2)
  w = Tensor(w0.copy(), requires_grad=True)
  opt = Muon([w], lr=0.05, weight_decay=0.1)
  for _ in range(3):
    opt.zero_grad()
    ((w - Tensor(tgt)) ** 2).sum().backward()
    opt.step()
  want = np_lars(0.05, 0.95, 0.1, True, False, False, 0.0, (5, (3.4445, -4.775, 2.0315)), params=[w0], grads=grads, steps=3)[0]
  np.testing.assert_allclose(w.numpy(), want, rtol=1e-3, atol=1e-4)

def test_muon_of_empty_and_scalar_parameters():
  # a (0, 3) weight failed in reshape(0, -1) ("cannot infer -1"), a scalar with an IndexError deep in the step
  ws = [Tensor(np.zeros(s, np.float32), requires_grad=True) for s in [(0, 3), (3, 0), (2, 0, 4)]]
  w = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
  opt = Muon(ws + [w], lr=0.1)
  opt.zero_grad()
  (sum(x.sum() for x in ws) + (w * w).sum()).backward()
  opt.step()
  assert [x.shape for x in ws] == [(0, 3), (3, 0), (2, 0, 4)] and np.isfinite(w.numpy()).all()
  with pytest.raises(ValueError, match=r"\[1\] are scalars"): Muon([w, Tensor(2.0, requires_grad=True)])

def test_lars_ns_needs_coefficients():
  with pytest.raises(ValueError, match="ns_coefficients"): LARS([Tensor([1.0], requires_grad=True)], ns_steps=5)

def test_optimizer_group_steps_each_like_alone():
  from tinygrad.nn.optim import OptimizerGroup
  a, b = Tensor(A0.copy(), requires_grad=True), Tensor(B0.copy(), requires_grad=True)
  opt = OptimizerGroup(SGD([a], lr=0.05), Muon([b], lr=0.02, weight_decay=0.0))
  assert isinstance(opt[0], SGD) and isinstance(opt[1], LARS) and len(opt) == 2
  for _ in range(STEPS):
    opt.zero_grad()
    (((a * b) ** 2).sum() + (a * Tensor(C)).sum()).backward()
    opt.step()
  # the reference: each parameter updated by its own optimizer from the coupled gradients
  pa, pb = A0.astype(np.float64), B0.astype(np.float64)
  bufb = np.zeros(3)
  for _ in range(STEPS):
    ga, gb = np_grads(pa, pb)
    pa = pa - 0.05 * ga
    bufb = 0.95 * bufb + gb
    g = (gb + 0.95 * bufb).reshape(3, 1)
    x = g / (np.linalg.norm(g) + 1e-7)
    x = x.T
    for _ in range(5):
      A = x @ x.T
      x = 3.4445 * x + (-4.775 * A + 2.0315 * A @ A) @ x
    pb = pb - 0.02 * x.T.reshape(3)
  np.testing.assert_allclose(a.numpy(), pa, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(b.numpy(), pb, rtol=1e-3, atol=1e-4)

def test_optimizer_group_refuses_a_parameter_in_two_optimizers():
  # it was stepped by both, one update on top of the other: SGD lr 0.1 twice on (a*a).sum() gave 0.6*a, not 0.8*a (torch raises)
  from tinygrad.nn.optim import OptimizerGroup
  a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  with pytest.raises(ValueError, match=r"optimizers 0 and 1"): OptimizerGroup(SGD([a, b], lr=0.1), Adam([a], lr=0.1))
  OptimizerGroup(SGD([a], lr=0.1), Adam([b], lr=0.1))

def test_step_realizes_the_loss_with_the_grads():
  # the loss whose backward made the grads is realized in the optimizer's first realize, with them: realized after it
  # (loss.realize(*opt.schedule_step()), beautiful_mnist's step), the forward they share ran a second time (every conv
  # of the MNIST CNN twice); its value is the one of the weights before the step
  from tinygrad import nn
  from tinygrad.nn.state import get_parameters
  from tinygrad.helpers import GlobalCounters
  lin = nn.Linear(3, 4)
  opt = SGD(get_parameters(lin), lr=0.5)
  x = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]], np.float32)
  w0, b0 = lin.weight.numpy().copy(), lin.bias.numpy().copy()
  loss = lin(Tensor(x)).relu().sum()
  loss.backward()
  todo = opt.schedule_step()
  assert loss._is_realized(), "the loss is computed with the grads"
  GlobalCounters.reset()
  loss.realize(*todo)
  assert GlobalCounters.kernel_count == 2, "the weight's and the bias's update, no forward again"
  np.testing.assert_allclose(loss.numpy(), np.maximum(x @ w0.T + b0, 0).sum(), rtol=1e-5)
  assert not np.allclose(lin.weight.numpy(), w0)

def test_lr_has_public_tinygrads_shape_for_its_schedulers():
  # public tinygrad's extra/lr_scheduler.py: an epoch counter Tensor([0]) and lr.assign(<a (1,) expression of it>) each step
  torch = pytest.importorskip("torch")
  w0 = np.array([1.0, -2.0, 3.0], np.float32)
  a, s = Tensor(w0.copy(), requires_grad=True), Tensor(2.0, requires_grad=True)   # a scalar parameter too
  opt = SGD([a, s], lr=0.1, momentum=0.9)
  epoch = Tensor([0], device=opt.device)
  ta, ts = torch.tensor(w0.copy(), requires_grad=True), torch.tensor(2.0, requires_grad=True)
  topt = torch.optim.SGD([ta, ts], lr=0.1, momentum=0.9)
  tsched = torch.optim.lr_scheduler.MultiStepLR(topt, milestones=[2, 3], gamma=0.5)
  for _ in range(4):
    opt.zero_grad()
    G.backward((a * a).sum() + s * s)
    opt.step()
    Tensor.realize(epoch.assign(epoch + 1), opt.lr.assign(((epoch == 2) | (epoch == 3)).where(opt.lr * 0.5, opt.lr)))
    topt.zero_grad()
    ((ta * ta).sum() + ts * ts).backward()
    topt.step()
    tsched.step()
    assert opt.lr.shape == (1,)
    np.testing.assert_allclose(opt.lr.numpy(), [topt.param_groups[0]["lr"]], rtol=1e-6)
    np.testing.assert_allclose(a.numpy(), ta.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(s.numpy(), ts.item(), rtol=1e-5)

def test_muon_defaults_match_torch():
  torch = pytest.importorskip("torch")
  if not hasattr(torch.optim, "Muon"): pytest.skip("this torch has no torch.optim.Muon (torch >= 2.9)")
  # a wide weight: torch scales the lr of a tall one by sqrt(rows/cols), which public tinygrad does not
  w0 = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
  x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
  w, tw = Tensor(w0.copy(), requires_grad=True), torch.tensor(w0.copy(), requires_grad=True)
  opt, topt = Muon([w]), torch.optim.Muon([tw])   # every hyperparameter at its default
  for _ in range(3):
    opt.zero_grad()
    G.backward((Tensor(x) @ w).relu().sum())
    opt.step()
    topt.zero_grad()
    (torch.tensor(x) @ tw).relu().sum().backward()
    topt.step()
  np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=0, atol=1e-4)   # (upstream test_optim's tolerance for Muon)

@pytest.mark.parametrize("shape", [(8, 3), (3, 8), (5, 5)])
@pytest.mark.parametrize("adjust", ["original", "match_rms_adamw"])
@pytest.mark.parametrize("nesterov", [True, False])
def test_muon_matches_torch_with_its_lr_adjustment_given_as_lr(shape, adjust, nesterov):
  # public tinygrad's Muon (ours) steps every shape with lr; torch.optim.Muon multiplies it by sqrt(max(1, rows/cols))
  # ("original", its default: a tall weight steps sqrt(rows/cols) times as far) or 0.2*sqrt(max(rows, cols)). Given that
  # factor in lr the steps agree (weight_decay 0: torch decays with the unadjusted lr); torch's Newton-Schulz runs in bfloat16
  torch = pytest.importorskip("torch")
  if not hasattr(torch.optim, "Muon"): pytest.skip("this torch has no torch.optim.Muon (torch >= 2.9)")
  rows, cols = shape
  factor = max(1, rows / cols) ** 0.5 if adjust == "original" else 0.2 * max(rows, cols) ** 0.5
  rng = np.random.default_rng(0)
  w0, x = rng.standard_normal(shape).astype(np.float32), rng.standard_normal((16, rows)).astype(np.float32)   # (a full-rank gradient)
  w, tw = Tensor(w0.copy(), requires_grad=True), torch.tensor(w0.copy(), requires_grad=True)
  opt = Muon([w], lr=0.01 * factor, weight_decay=0.0, nesterov=nesterov)
  topt = torch.optim.Muon([tw], lr=0.01, weight_decay=0.0, nesterov=nesterov, adjust_lr_fn=adjust)
  for _ in range(3):
    opt.zero_grad()
    G.backward(((Tensor(x) @ w).relu() ** 2).sum())
    opt.step()
    topt.zero_grad()
    ((torch.tensor(x) @ tw).relu() ** 2).sum().backward()
    topt.step()
  step, tstep = w.numpy() - w0, tw.detach().numpy() - w0
  np.testing.assert_allclose(step, tstep, rtol=0, atol=0.02 * np.abs(tstep).max())   # (bfloat16's 8 bits, over 3 steps)

def test_fuse_optim_is_accepted_and_changes_no_value():
  # beautiful_cifar enters Context(FUSE_OPTIM=1) first thing (public tinygrad's one-flat-buffer update: same values)
  from tinygrad.helpers import Context
  with Context(FUSE_OPTIM=1):
    got = tiny_run(lambda p: AdamW(p, lr=0.01))
  for g, w in zip(got, np_adam(0.01, wd=0.01)): np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)

def test_half_params_keep_float32_state():
  # public tinygrad keeps optimizer state in OPTIM_DTYPE (float32): in half, Adam's v = (1-b2)*g*g underflowed to 0 for a
  # gradient of 1e-4 and the step was m/eps, moving the weights by ~300 instead of ~0.03
  from tinygrad import dtypes
  from tinygrad.helpers import Context
  w = Tensor([1.0, 2.0, 3.0], dtype=dtypes.half, requires_grad=True)
  opt = Adam([w], lr=0.01)
  for _ in range(3):
    opt.zero_grad()
    G.backward((w * 1e-4).sum())
    opt.step()
  assert {m.dtype for m in opt.m + opt.v} == {dtypes.float32}
  np.testing.assert_allclose(w.numpy(), [0.97, 1.97, 2.97], atol=2e-3)
  assert SGD([Tensor([1.0], dtype=dtypes.float64, requires_grad=True)], momentum=0.9).b[0].dtype == dtypes.float64
  with Context(OPTIM_DTYPE="half"): assert SGD([Tensor([1.0], requires_grad=True)], momentum=0.9).b[0].dtype == dtypes.half

@pytest.mark.parametrize("make", [lambda p: LAMB(p, lr=0.01), lambda p: LARS(p, lr=0.01)], ids=["LAMB", "LARS"])
def test_half_params_trust_ratio_norms_do_not_overflow(make):
  # LAMB's and LARS's trust ratio divides the weights' norm by the update's (or the gradient's): for float16 weights the
  # sums of squares were float16, inf past 65504 (here 300k weights of 0.5 make 75000), so one step left every weight inf
  # (LAMB) or NaN (LARS). The float32 weights' step is the reference, rounded to float16
  from tinygrad import dtypes
  rng = np.random.default_rng(0)
  w0, g0 = (rng.standard_normal(300_000) * 0.5).astype(np.float32), (rng.standard_normal(300_000) * 0.5).astype(np.float32)
  got = []
  for dt in (dtypes.float16, dtypes.float32):
    w = Tensor(w0, dtype=dt, requires_grad=True)
    opt = make([w])
    opt.zero_grad()
    G.backward((w * Tensor(g0, dtype=dt)).sum())
    opt.step()
    got.append(w.float().numpy())
  assert np.isfinite(got[0]).all()
  np.testing.assert_allclose(got[0], got[1], atol=2e-3, rtol=2e-3)

def test_public_tinygrad_keyword_arguments():
  # public tinygrad's optimizers take device= and fused= (and SGD classic=); each raised TypeError here
  import inspect
  from tinygrad.nn.optim import LARS, Muon, Optimizer
  for f in (SGD, LARS, Muon, Adam, AdamW, LAMB, Optimizer):
    assert {"device", "fused"} <= set(inspect.signature(f).parameters), f
  assert "classic" in inspect.signature(SGD).parameters
  for bad in (dict(lr=-0.1), dict(momentum=-0.5)):
    with pytest.raises(ValueError): SGD([Tensor([1.0], requires_grad=True)], **bad)
  with pytest.raises(ValueError): LAMB([Tensor([1.0], requires_grad=True)], weight_decay=-1.0)
  # as torch's: Adam(b1=1.0) divided by 1 - b1^t = 0 (every weight NaN after a step), the others were taken silently
  for make, bad in ((SGD, dict(weight_decay=-0.1)), (LARS, dict(weight_decay=-0.1)), (Adam, dict(b1=1.0)), (AdamW, dict(b2=-0.1)),
                    (LAMB, dict(b1=1.5)), (Adam, dict(eps=-1e-8))):
    with pytest.raises(ValueError, match=f"{next(iter(bad))} must be"): make([Tensor([1.0], requires_grad=True)], **bad)

def test_positional_arguments_in_public_tinygrads_order():
  # a program passing them by position gets what it means: Adam's sixth was weight_decay here, so public tinygrad's
  # Adam(params, lr, b1, b2, eps, "CPU") set weight_decay="CPU" (it is keyword only now: public tinygrad's Adam has none)
  import inspect
  from tinygrad.nn.optim import LARS, Muon
  want = {SGD: "params lr momentum weight_decay nesterov classic device fused", Adam: "params lr b1 b2 eps device fused",
          AdamW: "params lr b1 b2 eps weight_decay device fused", LAMB: "params lr b1 b2 eps weight_decay adam device fused",
          LARS: "params lr momentum weight_decay ns_steps ns_coefficients nesterov classic pre_wd tcoef device fused",
          Muon: "params lr momentum weight_decay ns_steps ns_coefficients nesterov device fused"}
  for f, names in want.items():
    assert [n for n, p in inspect.signature(f).parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD] == names.split(), f
  w = Tensor([1.0, 2.0], requires_grad=True)
  assert Adam([w], 0.01, 0.9, 0.999, 1e-8, "CPU").device == "CPU"

def test_sgd_classic_scales_before_the_momentum():
  # classic momentum accumulates lr*g: after the lr changes, the old steps keep their old lr (torch's form rescales them)
  def ref(lr, mom):
    ps, bufs = [A0.astype(np.float64), B0.astype(np.float64)], [np.zeros(3), np.zeros(3)]
    for i in range(STEPS):
      gs = np_grads(*ps)
      for j in range(2):
        bufs[j] = mom * bufs[j] + (lr * (3 if i >= 2 else 1)) * gs[j]
        ps[j] = ps[j] - bufs[j]
    return ps
  a, b = Tensor(A0.copy(), requires_grad=True), Tensor(B0.copy(), requires_grad=True)
  opt = SGD([a, b], lr=0.05, momentum=0.9, classic=True)
  for i in range(STEPS):
    if i == 2: opt.lr.assign(opt.lr * 3).realize()
    opt.zero_grad()
    G.backward(((a * b) ** 2).sum() + (a * Tensor(C)).sum())
    opt.step()
  for g, w in zip((a.numpy(), b.numpy()), ref(0.05, 0.9)): np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("make", [lambda p, **k: SGD(p, lr=0.05, momentum=0.9, weight_decay=0.1, **k), lambda p, **k: Adam(p, lr=0.05, **k),
                                  lambda p, **k: LAMB(p, lr=0.05, weight_decay=0.1, **k)], ids=["sgd", "adam", "lamb"])
def test_optimizer_device_holds_the_state_and_gives_the_same_values(make):
  # device=: the state lives there, the update is computed there and each parameter keeps its own device
  from tinygrad import Device
  default = tiny_run(make)
  got = tiny_run(lambda p: make(p, device="PYTHON"))
  for g, w in zip(got, default): np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
  a = Tensor(A0.copy(), requires_grad=True)
  opt = make([a], device="python")
  assert opt.device == "PYTHON" and all(s.device == "PYTHON" for s in getattr(opt, "b", []) + getattr(opt, "m", []))
  opt.zero_grad()
  G.backward((a * a).sum())
  opt.step()
  assert a.device == Device.DEFAULT

@pytest.mark.parametrize("sharded", [False, True])
def test_lamb_state_offloaded_after_construction(sharded):
  # public tinygrad's CPU offload: the moments moved with to_() after construction are updated where they are, and the
  # update comes back to the parameter's devices (a sharded one raised "tensors on different devices"); same values
  from tinygrad.nn.optim import LAMB
  x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
  t = Tensor(x.copy()).shard(("CPU:0", "CPU:1"), axis=1) if sharded else Tensor(x.copy(), device="CPU:1")
  ref = Tensor(x.copy())
  opt, ropt = LAMB([t]), LAMB([ref])
  for s in opt.m + opt.v + [opt.b1_t, opt.b2_t]: s.to_("CPU")
  for _ in range(3):
    for q, o in ((t, opt), (ref, ropt)):
      o.zero_grad()
      G.backward((q * q).sum())
      o.step()
  assert opt.m[0].device == "CPU" and t.device == (("CPU", "CPU:1") if sharded else "CPU:1")
  np.testing.assert_array_equal(t.numpy(), ref.numpy())

def test_an_implicit_gradient_an_update_overwrote_is_gone_not_wrong():
  # x did not ask for a gradient (requires_grad None), so backward's x.grad stays lazy (a step does not compute it); its
  # graph reads w, which the step overwrites: computed afterwards it would use the new w (public tinygrad gives -1 here).
  # Read before the step it is right; after, reading it (or anything built from it) raises, naming the fix
  w, x = Tensor([2.0], requires_grad=True), Tensor([3.0])
  (w * x).sum().backward()
  assert x.grad.tolist() == [2.0]   # read before the update: computed then, and kept
  w2, x2 = Tensor([2.0], requires_grad=True), Tensor([3.0])
  (w2 * x2).sum().backward()
  held = x2.grad
  SGD([w2], lr=1.0).step()
  assert w2.tolist() == [-1.0] and x2.grad.shape == (1,) and x2.grad.dtype == x2.dtype
  for read in (lambda: x2.grad.numpy(), lambda: (held * 2).tolist(), lambda: x2.grad.realize()):
    with pytest.raises(RuntimeError, match="requires_grad=True"): read()
  (w2 * x2).sum().backward()   # a sum with a gone gradient stays gone
  with pytest.raises(RuntimeError, match="gone"): x2.grad.numpy()
  x2.grad = None               # a fresh start, as in torch
  (w2 * x2).sum().backward()
  assert x2.grad.tolist() == [-1.0]
  # asked for, it is computed with the update, from the old w
  w3, x3 = Tensor([2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  (w3 * x3).sum().backward()
  SGD([w3], lr=1.0).step()
  assert x3.grad.tolist() == [2.0]

def test_an_implicit_gradient_of_a_sharded_tensor_is_gone_too():
  from tinygrad import Device
  devs = (Device.DEFAULT, f"{Device.DEFAULT}:1")
  w, x = Tensor([2.0, 2.0], requires_grad=True).shard(devs, axis=0).realize(), Tensor([3.0, 3.0]).shard(devs, axis=0)
  w.requires_grad = True
  (w * x).sum().backward()
  SGD([w], lr=1.0).step()
  assert w.tolist() == [-1.0, -1.0] and x.grad.shape == (2,) and x.grad.device == devs
  with pytest.raises(RuntimeError, match=r"shape \(2,\)"): x.grad.numpy()   # (public tinygrad: -1, computed from the new w)
  (w * x).sum().backward()
  with pytest.raises(RuntimeError, match="gone"): x.grad.numpy()

def test_a_reused_inputs_implicit_gradient_does_not_grow_step_after_step():
  # a plain training loop over one input tensor: its implicit gradient grew by a whole backward graph per step, and every
  # realize walked it (a 3-layer MLP step went from 13 to 18 ms in 60 steps)
  from tinygrad import nn
  l1, l2 = nn.Linear(8, 16), nn.Linear(16, 4)
  opt = Adam([l1.weight, l1.bias, l2.weight, l2.bias], lr=1e-2)
  X, Y = Tensor.randn(5, 8).realize(), Tensor([0, 1, 2, 3, 0])
  sizes = []
  for _ in range(6):
    opt.zero_grad()
    l2(l1(X).relu()).sparse_categorical_crossentropy(Y).backward()
    opt.step()
    sizes.append(len(X.grad.uop.toposort()))
  assert sizes[-1] == sizes[1], sizes

# ---- against torch.optim: several steps, a parameter whose gradient is 0 in some steps, lr changed in place, jitted ----
TORCH_CASES = [
  ("sgd_nesterov_wd", lambda p: SGD(p, lr=0.01, momentum=0.8, nesterov=True, weight_decay=0.1), "SGD", dict(lr=0.01, momentum=0.8, nesterov=True, weight_decay=0.1)),
  ("sgd_wd", lambda p: SGD(p, lr=0.01, weight_decay=0.3), "SGD", dict(lr=0.01, weight_decay=0.3)),
  ("adam_l2", lambda p: Adam(p, lr=0.01, b1=0.8, b2=0.99, eps=1e-6, weight_decay=0.2), "Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.2)),
  ("adamw", lambda p: AdamW(p, lr=0.01, weight_decay=0.1), "AdamW", dict(lr=0.01, weight_decay=0.1, eps=1e-8)),
]
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name,make,tname,tkw", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_optimizer_matches_torch_with_zero_gradients_and_lr_changed_in_place(name, make, tname, tkw, jit):
  torch = pytest.importorskip("torch", reason="torch (CPU) is the reference: pip install torch")
  from tinygrad import TinyJit
  rng = np.random.default_rng(0)
  shapes = [(3, 4), (5,), (), (2, 3, 2)]
  p0, xs = [rng.standard_normal(s).astype(np.float32) for s in shapes], [rng.standard_normal(s).astype(np.float32) for s in shapes]
  lrs = [0.01, 0.02, 0.005, 0.0, 0.03, 0.01]
  # parameter 1's gradient is 0 on odd steps (its moments still decay, as torch's with a zero gradient), parameter 2's
  # 1000x at step 2
  scales = [[0.0 if i == 1 and s % 2 else 1e3 if i == 2 and s == 2 else 1.0 for i in range(len(shapes))] for s in range(len(lrs))]
  loss = lambda ps, xs_, sc: sum((((p * x - 0.3) ** 2).sum() + (p ** 4).sum() * 0.01) * sc[i] for i, (p, x) in enumerate(zip(ps, xs_)))
  ps = [Tensor(p.copy(), requires_grad=True) for p in p0]
  opt, txs = make(ps), [Tensor(x) for x in xs]
  def step(sc: Tensor) -> Tensor:
    opt.zero_grad()
    l = loss(ps, txs, sc)
    l.backward()
    opt.step()
    return l.realize()
  fn = TinyJit(step) if jit else step
  tps = [torch.tensor(p.copy(), requires_grad=True) for p in p0]
  topt = getattr(torch.optim, tname)(tps, **tkw)
  for s, lr in enumerate(lrs):
    opt.lr.assign(Tensor([lr], dtype=opt.lr.dtype)).realize()   # (in place: a jitted step reads the new value)
    fn(Tensor(scales[s]).realize())
    for g in topt.param_groups: g["lr"] = lr
    topt.zero_grad()
    loss(tps, [torch.tensor(x) for x in xs], scales[s]).backward()
    topt.step()
  for i, (p, tp) in enumerate(zip(ps, tps)):
    np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=f"parameter {i} {shapes[i]}")

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_bias_correction_is_exact_like_torchs(name, dtype):
  # b2^t was float32: 1 - float32(0.999) = 0.00099998713, so v_hat = v/(1 - b2^t) was 1.3e-5 too big and every step 6e-6
  # (relative) shorter than torch's, whose bias corrections are python floats; in float64 that is 1e10 ulps
  torch = pytest.importorskip("torch", reason="torch (CPU) is the reference: pip install torch")
  from tinygrad import dtypes
  rng = np.random.default_rng(0)
  x = rng.standard_normal(16)
  lr = 2 ** -7   # exact in the float32 lr, so only the bias corrections can differ
  p = Tensor.zeros(16, dtype=getattr(dtypes, dtype), requires_grad=True).contiguous().realize()
  opt = getattr(__import__("tinygrad.nn.optim", fromlist=[name]), name)([p], lr=lr)
  tp = torch.zeros(16, dtype=getattr(torch, dtype), requires_grad=True)
  topt = getattr(torch.optim, name)([tp], lr=lr, eps=1e-8, weight_decay=0.0 if name == "Adam" else 0.01)
  for _ in range(5):
    opt.zero_grad()
    ((p * Tensor(x, dtype=p.dtype) - 0.3) ** 2).sum().backward()
    opt.step()
    topt.zero_grad()
    ((tp * torch.tensor(x, dtype=tp.dtype) - 0.3) ** 2).sum().backward()
    topt.step()
  np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6 if dtype == "float32" else 1e-12)

@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_float64_params_get_a_float64_lr_like_torchs(name):
  # opt.lr was float32 whatever the parameters: lr=0.1 stepped float64 weights by 0.10000000149*g, 1e-7 off torch in 3 steps
  torch = pytest.importorskip("torch", reason="torch (CPU) is the reference: pip install torch")
  from tinygrad import dtypes
  from tinygrad.nn import optim
  x = np.random.default_rng(0).standard_normal((3, 4))
  kw = dict(SGD=dict(momentum=0.9, weight_decay=0.01), Adam={}, AdamW=dict(eps=1e-8))[name]
  p, tp = Tensor(x.copy(), dtype=dtypes.float64, requires_grad=True), torch.tensor(x.copy(), requires_grad=True)
  opt, topt = getattr(optim, name)([p], lr=0.1, **{k: v for k, v in kw.items() if k != "eps"}), getattr(torch.optim, name)([tp], lr=0.1, **kw)
  for _ in range(3):
    opt.zero_grad()
    (p * p * p).sum().backward()
    opt.step()
    topt.zero_grad()
    (tp * tp * tp).sum().backward()
    topt.step()
  assert opt.lr.dtype == dtypes.float64
  np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-13, atol=1e-14)
  # the widest parameter's float, at least float32 (a half parameter's lr stays float32, as public tinygrad's)
  h = Tensor([1.0], dtype=dtypes.half, requires_grad=True)
  assert optim.SGD([h]).lr.dtype == dtypes.float32 and optim.SGD([h, Tensor([1.0], dtype=dtypes.float64, requires_grad=True)]).lr.dtype == dtypes.float64

def test_muon_of_huge_gradients_orthogonalises_them():
  # Newton-Schulz divided by the update's norm, whose square overflowed float32 for entries ~1e20: the update was 0 (the
  # weights only decayed); the iteration is scale-invariant, so a loss 1e25 times bigger makes the same step
  rng = np.random.default_rng(0)
  w0, x = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
  got = []
  for scale in (1.0, 1e25):
    w = Tensor(w0.copy(), requires_grad=True)
    opt = Muon([w], lr=0.1, weight_decay=0.0)
    for _ in range(2):
      opt.zero_grad()
      G.backward(((Tensor(x) @ w).relu() * scale).sum())
      opt.step()
    got.append(w.numpy())
  assert not np.allclose(got[0], w0, atol=1e-2)
  np.testing.assert_allclose(got[1], got[0], rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("make", [lambda p: SGD(p, lr=0.05, momentum=0.9), lambda p: SGD(p, lr=0.05, momentum=0.9, classic=True),
                                  lambda p: LARS(p, lr=0.05, tcoef=0.0, weight_decay=0.0)], ids=["sgd", "sgd_classic", "lars"])
def test_momentum_state_narrower_than_the_update(make):
  # the momentum b (OPTIM_DTYPE, or float32 beside a float64 parameter's float64 lr) was assigned a wider value and the
  # step raised "assign dtype mismatch"; the steps match float64 numpy (b rounded to the state's dtype)
  from tinygrad import dtypes
  from tinygrad.helpers import Context
  def ref(p0, steps=3):
    p, b = p0.astype(np.float64), np.zeros_like(p0, np.float64)
    for _ in range(steps):
      b = 0.9 * b + 2 * p
      p = p - 0.05 * b
    return p
  for odt, pdts in (("float32", (dtypes.float32, dtypes.float64)), ("half", (dtypes.float32,))):
    with Context(OPTIM_DTYPE=odt):
      ps = [Tensor(A0.copy(), dtype=dt, requires_grad=True) for dt in pdts]
      opt = make(ps)
      for _ in range(3):
        opt.zero_grad()
        sum((p * p).sum() for p in ps).backward()
        opt.step()
    for p in ps: np.testing.assert_allclose(p.numpy(), ref(A0), rtol=2e-3 if odt == "half" else 1e-6, err_msg=f"{odt} state, {p.dtype}")

@pytest.mark.parametrize("name", ["adam", "sgd_momentum"])
def test_bfloat16_optim_dtype_state(name):
  # OPTIM_DTYPE=bfloat16 (public tinygrad takes any dtype there) raised TypeError "numpy has no bfloat16" building the state
  from tinygrad import dtypes
  from tinygrad.helpers import Context
  make, ref = {c[0]: c[1:] for c in CASES}[name]
  with Context(OPTIM_DTYPE="bfloat16"):
    got = tiny_run(make)
    opt = make([Tensor([1.0], requires_grad=True)])
  assert {s.dtype for s in getattr(opt, "m", []) + getattr(opt, "b", [])} == {dtypes.bfloat16}
  for g, w in zip(got, ref()): np.testing.assert_allclose(g, w, rtol=2e-2, atol=2e-2)
