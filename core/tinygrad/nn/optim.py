"""Optimizers with tinygrad's names, defaults and update formulas: SGD (momentum, nesterov, weight decay), LARS, Muon, Adam,
AdamW, LAMB.

A step builds every new parameter and state value lazily, writes each with `assign`, and realizes them all in one
`Tensor.realize(...)` so the whole update is scheduled (and fused) together.
"""
from __future__ import annotations
from typing import Any
from tinygrad.tensor import Tensor, note_host_read
from tinygrad import tensor as _tensor
from tinygrad.dtype import dtypes, DType
from tinygrad.helpers import dedup, prod, OPTIM_DTYPE, FUSE_OPTIM
from tinygrad.engine.buffers import base_buffer
from tinygrad.uop import Ops

def _state(t: Tensor, value: float = 0.0, shape: tuple[int, ...] | None = None, dtype: DType | None = None, device: str | None = None) -> Tensor:
  # optimizer state lives in its own realized buffer (so each step updates it in place), on t's device unless told
  import numpy as np
  from tinygrad.dtype import to_numpy, NO_NUMPY
  # OPTIM_DTYPE (float32), as public tinygrad, not the parameter's: a half Adam's v = g*g underflows to 0 for |g| < 2e-4 and
  # its step becomes m/eps (a jump of ~1e4*lr); a float64 parameter's state keeps float64 (more precision never hurts)
  from tinygrad.dtype import _flag_dtype
  dt = dtype or (dtypes.float64 if t.dtype == dtypes.float64 else _flag_dtype(OPTIM_DTYPE, dtypes.is_float, "a float"))
  shape = t.shape if shape is None else shape
  multi = device is None and isinstance(t.device, tuple)   # a sharded parameter's state is sharded like it (a scalar one is replicated)
  dev = device if device is not None else t.device[0] if multi else t.device
  ndt = dtypes.float32 if dt.scalar() in NO_NUMPY else dt
  ret = Tensor(np.full(shape, value, dtype=to_numpy(ndt)).reshape(-1), device=dev)
  # (OPTIM_DTYPE=bfloat16 or an fp8: numpy has none, made from float32 and realized, as the others are from the start)
  ret = (ret if ndt == dt else ret.cast(dt).contiguous().realize()).reshape(shape)
  if multi: ret = ret.shard_like(t) if shape == t.shape else ret.shard(t.device)
  ret.requires_grad = False
  return ret

def _plain(v: Any) -> bool: return type(v) in (bool, int, float) or type(v) is tuple and all(type(x) in (bool, int, float) for x in v)

def _realize_unaliased(ts: list[Tensor]) -> None:
  # two tensors with the same (hash-consed) graph would realize into one buffer: give the repeats their own
  seen: set = set()
  first: list[Tensor] = []
  again: list[Tensor] = []
  for t in ts:
    (again if t.uop in seen else first).append(t)
    seen.add(t.uop)
  if first: Tensor.realize(*first)
  for t in again: t.realize()

class Optimizer:
  """The base: holds the parameters (tensors with requires_grad; None becomes True) and the buffers (requires_grad False, e.g.
  BatchNorm running stats, realized with each step). Subclasses implement `_step` returning the new parameter values and the
  state tensors they assigned.

  device: where the state lives and the update is computed (public tinygrad's; default the first parameter's); the
  gradients go there and each new value comes back. fused: public tinygrad's one-flat-buffer update, accepted and the same
  values (the step here is one schedule already)."""
  def __init__(self, params: list[Tensor], lr: float, device: str | tuple | None = None, fused: bool | Any = FUSE_OPTIM):
    # (torch takes a tensor lr; here opt.lr is the tensor the steps read, to assign into: `lr < 0` of a Tensor failed as
    # "the truth value of a Tensor is ambiguous")
    if isinstance(lr, Tensor): raise TypeError(f"lr must be a number, got a Tensor of shape {lr.shape}: pass lr.item(); change it later with opt.lr.assign(...)")
    if lr < 0: raise ValueError(f"learning rate must be >= 0, got {lr}")
    for x in params:
      if x.requires_grad is None: x.requires_grad = True   # put into an optimizer: it trains
    self.params: list[Tensor] = dedup([x for x in params if x.requires_grad])
    if not self.params: raise ValueError("optimizer needs at least one parameter with requires_grad (got none)")
    self.buffers: list[Tensor] = dedup([x for x in params if not x.requires_grad])
    from tinygrad.device import Device
    # _on: the device asked for, None: each parameter's state on its own device
    self._on = None if device is None or isinstance(device, tuple) else Device.canonicalize(device)
    if device is not None and (isinstance(device, tuple) or isinstance(self.params[0].device, tuple)) and device != self.params[0].device:
      raise ValueError(f"optimizer device={device!r}: sharded state lives on its parameters' devices {self.params[0].device}; leave device unset")
    self.device = self.params[0].device if self._on is None else self._on
    self.fused = bool(getattr(fused, "value", fused))
    # a tensor: changing it needs no new kernel. Shape (1,) as public tinygrad's, so its schedulers (extra/lr_scheduler.py)
    # can assign into it; the steps read it as a scalar (_lr). In the widest float of the parameters, at least float32 (public
    # tinygrad's is float32: float64 parameters stepped with lr=0.1 moved by 0.10000000149*g, 1.5e-8 (relative) off torch's)
    from tinygrad.dtype import least_upper_dtype
    from tinygrad.mixin.common import _has_dtype
    lr_dt = least_upper_dtype(dtypes.float32, *(p.dtype for p in self.params if dtypes.is_float(p.dtype)))
    self.lr = _state(self.params[0], lr, (1,), lr_dt if _has_dtype(self.device, lr_dt) else dtypes.float32, self._on)
    _realize_unaliased(self.params + self.buffers)

  def zero_grad(self) -> None:
    """Forget the gradients (set every parameter's `.grad` to None)."""
    from tinygrad.tensor import capturing_grads
    if (cg := capturing_grads()) is not None: cg["cleared"].update(id(p) for p in self.params)   # (a TinyJit capture's: see there)
    for p in self.params: p.grad = None

  def schedule_step(self) -> list[Tensor]:
    """Assign the updated parameters and state; returns every tensor the step must realize (nothing runs yet)."""
    missing = [i for i, p in enumerate(self.params) if p.grad is None]
    if missing: raise RuntimeError(f"parameter(s) {missing} of {len(self.params)} have no .grad: call loss.backward() before step(); one the loss "
                                   "does not use gets none (torch skips it): leave it out of this optimizer, or give it requires_grad=False")
    # a tensor given with requires_grad False is a buffer, never updated: unfrozen later (torch then trains it) its step
    # would be skipped without a word, as public tinygrad's (which picks the parameters once too)
    thawed = [i for i, b in enumerate(self.buffers) if b.requires_grad and b.grad is not None]
    if thawed: raise RuntimeError(f"buffer(s) {thawed} of {len(self.buffers)} were given to the optimizer with requires_grad False (never "
                                  "updated) and now have requires_grad and a .grad: build the optimizer after setting requires_grad")
    # the hyperparameters a TinyJit capture bakes in (momentum, weight decay, betas ...): a replay after `opt.momentum = 0.5`
    # raises instead of stepping with the old value, as for a float lr (_lr)
    # (only while a capture records them: an un-jitted step does not walk its attributes)
    if _tensor.host_reads is not None:
      for k, v in vars(self).items():
        if k != "lr" and _plain(v): note_host_read(self, k)
    grads = [p.grad for p in self.params]
    # the scheduler does not yet order an ASSIGN after every kernel that reads the old value, so a gradient (or a BatchNorm
    # running statistic) that reads a parameter could see its new value: compute those first (remove once ASSIGN waits for its readers)
    # with the losses whose backward made the grads: realized later (loss.realize(*opt.schedule_step())), the forward they
    # share with the grads ran a second time (the MNIST CNN step: every conv twice)
    # and with the live lazy tensors that read the parameters (a model's output kept by the caller): the step's update
    # would compute them first anyway (they keep the values of these weights), here they share the forward
    from tinygrad.gradient import backward_roots
    targets = {b for p in self.params for u in (p.uop.src if p.uop.op is Ops.MULTI else (p.uop,)) if (b := base_buffer(u)) is not None}
    readers: list[Tensor] | None = None
    while readers is None: readers = Tensor._readers_of(targets, set(), {}, multi=None) if targets else []   # (None: some ran first)
    Tensor.realize(*grads, *self.buffers, *backward_roots(), *readers)  # type: ignore[arg-type]
    new_params, state = self._step([self._here(g) for g in grads])  # type: ignore[arg-type]
    for p, v in zip(self.params, new_params): p.assign(v.cast(p.dtype).to(p.device) if v.device != p.device else v.cast(p.dtype))
    return self.params + self.buffers + state

  def step(self) -> None:
    """One optimisation step: every parameter and state update realized together."""
    Tensor.realize(*self.schedule_step())

  def _step(self, grads: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]: raise NotImplementedError
  def _here(self, t: Tensor) -> Tensor: return t if self._on is None or t.device == self._on else t.to(self._on)   # onto the state's device
  def _p(self, t: Tensor) -> Tensor: return self._here(t.detach())   # a parameter's value, as the update reads it
  def _lr(self) -> Tensor | float:
    # (a scalar parameter keeps its shape); `opt.lr = 0.01`, a float, is public tinygrad's too: its steps multiply by it.
    # A TinyJit capture bakes a float in, and reads the buffer of the tensor it saw: a replay after `opt.lr = 0.005` (or
    # `opt.lr = Tensor([0.005])`) raises JitError instead of stepping with the old lr (public tinygrad replays it)
    note_host_read(self, "lr")
    if not isinstance(self.lr, Tensor): return float(self.lr)
    return self.lr.reshape(()) if self.lr.shape != () else self.lr

class OptimizerGroup(Optimizer):
  """Several optimizers stepped as one (one realize for all of them)."""
  def __init__(self, *optimizers: Optimizer):
    # a parameter in two of them would be stepped twice, each update on top of the other (torch raises too)
    seen: dict[int, int] = {}
    for i, o in enumerate(optimizers):
      for p in o.params:
        if seen.setdefault(id(p), i) != i:
          raise ValueError(f"OptimizerGroup: a parameter of shape {p.shape} is in optimizers {seen[id(p)]} and {i}: give each parameter to one optimizer")
    self.optimizers = optimizers
    self.params, self.buffers = dedup([p for o in optimizers for p in o.params]), dedup([b for o in optimizers for b in o.buffers])
  def __getitem__(self, i: int) -> Optimizer: return self.optimizers[i]
  def __len__(self) -> int: return len(self.optimizers)
  def zero_grad(self) -> None:
    for o in self.optimizers: o.zero_grad()
  def schedule_step(self) -> list[Tensor]: return [t for o in self.optimizers for t in o.schedule_step()]

class SGD(Optimizer):
  """Stochastic gradient descent (torch's formulation, tinygrad's defaults):
  g = grad + weight_decay*p; b = momentum*b + g; g = g + momentum*b if nesterov else b (when momentum); p -= lr*g.
  classic (public tinygrad's): the lr scales g before the momentum (b accumulates lr*g; differs once the lr changes)."""
  def __init__(self, params: list[Tensor], lr: float = 0.001, momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
               classic: bool = False, device: str | tuple | None = None, fused: bool | Any = FUSE_OPTIM):
    super().__init__(params, lr, device, fused)
    if momentum < 0: raise ValueError(f"momentum must be >= 0, got {momentum}")
    if nesterov and momentum == 0: raise ValueError("nesterov needs momentum > 0")
    if weight_decay < 0: raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    self.momentum, self.wd, self.nesterov, self.classic = momentum, weight_decay, nesterov, classic
    self.b = [_state(p, device=self._on) for p in self.params] if momentum else []
  def _step(self, grads: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    out = []
    for i, (t, g) in enumerate(zip(self.params, grads)):
      g = g + self.wd * self._p(t) if self.wd else g
      if self.classic: g = g * self._lr()
      if self.momentum:
        self.b[i].assign((self.momentum * self.b[i] + g).cast(self.b[i].dtype))   # (OPTIM_DTYPE state, a wider g or lr)
        g = g + self.momentum * self.b[i] if self.nesterov else self.b[i]
      out.append(self._p(t) - (g if self.classic else self._lr() * g))
    return out, self.b

def _l2(x: Tensor) -> Tensor:
  # ||x|| of a whole tensor, float16/bfloat16 in float32: their sum of squares passed 65504 (300k weights of 0.5), the norm
  # was inf and the trust ratio made the weights inf or NaN in one step
  return (x.float() if x.dtype.itemsize < 4 else x).square().sum().sqrt()

def _newton_schulz(g: Tensor, steps: int, coefs: tuple[float, float, float], eps: float = 1e-7) -> Tensor:
  # the quintic Newton-Schulz iteration that maps a matrix towards the nearest semi-orthogonal one (Muon's update),
  # run on the wide orientation so X @ X.T is the small product
  a, b, c = coefs
  # g / (||g|| + eps), the norm taken of g / max|g|: squared, gradients of 1e20 made it inf (float32) and the update 0
  m: Tensor | float = 1.0   # (max has no value over nothing)
  if g.numel() != 0:
    m = g.abs().max()
    m = (m > 0).where(m, 1.0)
  x = (g / m) / ((g / m).square().sum().sqrt() + eps / m)
  tall = x.shape[0] > x.shape[1]
  if tall: x = x.transpose()
  for _ in range(steps):
    A = x @ x.transpose()
    x = a * x + (b * A + c * (A @ A)) @ x
  return x.transpose() if tall else x

class LARS(Optimizer):
  """Layer-wise adaptive rate scaling over SGD with momentum (tinygrad's formulation and defaults); Muon is this class too.

  r = tcoef*||p|| / (||g|| + wd*||p||) (1 where either norm is 0; 1 when tcoef=0); g += wd*p if pre_wd;
  classic: g *= r*lr before the momentum, else after it; b = momentum*b + g; g = g + momentum*b if nesterov else b;
  ns_steps: g = NewtonSchulz(g as a (rows, -1) matrix), unscaled as tinygrad's; not pre_wd: p *= 1 - wd*lr; p -= g.
  """
  def __init__(self, params: list[Tensor], lr: float = 0.001, momentum: float = 0.9, weight_decay: float = 1e-4, ns_steps: int = 0,
               ns_coefficients: tuple[float, float, float] | None = None, nesterov: bool = False, classic: bool = True, pre_wd: bool = True,
               tcoef: float = 0.001, device: str | tuple | None = None, fused: bool | Any = FUSE_OPTIM):
    super().__init__(params, lr, device, fused)
    if momentum < 0: raise ValueError(f"momentum must be >= 0, got {momentum}")
    if nesterov and momentum == 0: raise ValueError("nesterov needs momentum > 0")
    if weight_decay < 0: raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    if ns_steps and ns_coefficients is None: raise ValueError(f"ns_steps={ns_steps} needs ns_coefficients (a, b, c), e.g. Muon's (3.4445, -4.775, 2.0315)")
    if ns_steps and (scalars := [i for i, p in enumerate(self.params) if p.ndim == 0]):
      raise ValueError(f"ns_steps={ns_steps} (Muon) orthogonalises matrices: parameter(s) {scalars} are scalars (shape ()); give them to another optimizer")
    self.momentum, self.wd, self.nesterov, self.classic, self.pre_wd, self.tcoef = momentum, weight_decay, nesterov, classic, pre_wd, tcoef
    self.ns_steps, self.ns_coefficients = ns_steps, ns_coefficients
    self.b = [_state(p, device=self._on) for p in self.params] if momentum else []
  def _step(self, grads: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    out = []
    for i, (t, g) in enumerate(zip(self.params, grads)):
      r: Tensor | float = 1.0
      if self.tcoef != 0:
        r1, r2 = _l2(self._p(t)), _l2(g)
        r = (r1 > 0).where((r2 > 0).where(self.tcoef * r1 / (r2 + self.wd * r1), 1.0), 1.0)
      if self.pre_wd and self.wd > 0: g = g + self.wd * self._p(t)
      if self.classic: g = g * r * self._lr()
      if self.momentum:
        self.b[i].assign((self.momentum * self.b[i] + g).cast(self.b[i].dtype))   # (OPTIM_DTYPE state, a wider g or lr)
        g = g + self.momentum * self.b[i] if self.nesterov else self.b[i]
      if self.ns_steps and self.ns_coefficients is not None:
        # (rows, the rest), spelled out: a -1 cannot be inferred for 0 rows
        g = _newton_schulz(g.reshape(g.shape[0], prod(g.shape[1:])), self.ns_steps, self.ns_coefficients).reshape(g.shape)
      p = self._p(t) * (1.0 - self.wd * self._lr()) if not self.pre_wd and self.wd > 0 else self._p(t)
      if not self.classic: g = g * r * self._lr()
      out.append(p - g)
    return out, self.b

def Muon(params: list[Tensor], lr: float = 0.001, momentum: float = 0.95, weight_decay: float = 0.1, ns_steps: int = 5,
         ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315), nesterov: bool = True, device: str | tuple | None = None,
         fused: bool | Any = FUSE_OPTIM) -> LARS:
  """Muon (public tinygrad's and torch.optim.Muon's defaults: lr 0.001, weight decay 0.1): nesterov momentum, then the
  update orthogonalised by `ns_steps` Newton-Schulz iterations, decoupled weight decay. For 2-D (or flattened to (rows, -1)) weights; keep embeddings and biases in another optimizer.
  As public tinygrad's, lr is not scaled by the shape (torch.optim.Muon's default multiplies it by sqrt(max(1, rows/cols)))."""
  return LARS(params, lr, momentum, weight_decay, ns_steps, ns_coefficients, nesterov, classic=False, pre_wd=False, tcoef=0.0, device=device,
              fused=fused)

class LAMB(Optimizer):
  """LAMB (layer-wise adaptive moments); with adam=True it is Adam with decoupled weight decay (tinygrad's Adam/AdamW).

  m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; up = (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + wd*p;
  p -= lr * r * up, r = ||p||/||up|| (LAMB) or 1 (Adam).
  """
  def __init__(self, params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6, weight_decay: float = 0.0,
               adam: bool = False, device: str | tuple | None = None, fused: bool | Any = FUSE_OPTIM):
    super().__init__(params, lr, device, fused)
    if weight_decay < 0: raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    # (b1 = 1 divided by 1 - b1^t = 0: every weight NaN after one step; torch raises for these too)
    for k, b in (("b1", b1), ("b2", b2)):
      if not 0 <= b < 1: raise ValueError(f"{k} must be in [0, 1), got {b}")
    if eps < 0: raise ValueError(f"eps must be >= 0, got {eps}")
    self.b1, self.b2, self.eps, self.wd, self.adam = b1, b2, eps, weight_decay, adam
    self.l2 = 0.0   # Adam's weight_decay (torch.optim.Adam's): l2*p joins the gradient before the moments
    # b^t in float64 where the device has it: in float32, 1 - b2^t lost 5 digits (1 - float32(0.999) = 0.00099998713), and
    # every step was 1.2e-5 (relative) longer than torch's, whose bias corrections are python floats
    from tinygrad.mixin.common import _has_dtype
    bdt = dtypes.float64 if _has_dtype(self.device, dtypes.float64) else dtypes.float32
    self.b1_t, self.b2_t = (_state(self.params[0], 1.0, (), bdt, self._on) for _ in range(2))
    self.m = [_state(p, device=self._on) for p in self.params]
    self.v = [_state(p, device=self._on) for p in self.params]
  def _step(self, grads: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    self.b1_t.assign(self.b1_t * self.b1)
    self.b2_t.assign(self.b2_t * self.b2)
    out = []
    for i, (t, g) in enumerate(zip(self.params, grads)):
      # state moved to another device after construction (`m.to_("CPU")`: offloaded, as public tinygrad allows): the
      # moments are updated there, and the update comes back to the parameter's devices
      dev, p = self.m[i].device, self._p(t)
      b1_t, b2_t = (b if b.device == dev else b.to(dev) for b in (self.b1_t, self.b2_t))
      if g.device != dev: g = g.contiguous().to(dev)
      g = g.cast(self.m[i].dtype)   # realized by schedule_step, so m and v do not each recompute it
      if self.l2: g = g + self.l2 * (p if p.device == dev else p.to(dev)).cast(g.dtype)
      self.m[i].assign(self.b1 * self.m[i] + (1.0 - self.b1) * g)
      self.v[i].assign(self.b2 * self.v[i] + (1.0 - self.b2) * (g * g))
      m_hat = self.m[i] / (1.0 - b1_t).cast(self.m[i].dtype)
      v_hat = self.v[i] / (1.0 - b2_t).cast(self.v[i].dtype)
      up = m_hat / (v_hat.sqrt() + self.eps)
      if up.device != p.device: up = up.shard_like(p) if isinstance(p.device, tuple) else up.to(p.device)
      up = up + self.wd * p
      if not self.adam:
        r1, r2 = _l2(p), _l2(up)
        up = up * (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0)
      out.append(p - self._lr() * up)
    return out, [self.b1_t, self.b2_t] + self.m + self.v

def Adam(params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         device: str | tuple | None = None, fused: bool | Any = FUSE_OPTIM, *, weight_decay: float = 0.0) -> LAMB:
  """Adam with bias correction (tinygrad's defaults). weight_decay (keyword only: public tinygrad's Adam has none, and its
  sixth argument is device) is torch.optim.Adam's L2 penalty: g += weight_decay*p before the moments (AdamW's decoupled
  decay is another update)."""
  if weight_decay < 0: raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
  ret = LAMB(params, lr, b1, b2, eps, 0.0, adam=True, device=device, fused=fused)
  ret.l2 = weight_decay
  return ret

def AdamW(params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01,
          device: str | tuple | None = None, fused: bool | Any = FUSE_OPTIM) -> LAMB:
  """Adam with decoupled weight decay (tinygrad's defaults: weight_decay=0.01)."""
  return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True, device=device, fused=fused)

__all__ = ["Optimizer", "OptimizerGroup", "SGD", "LARS", "Muon", "LAMB", "Adam", "AdamW"]
