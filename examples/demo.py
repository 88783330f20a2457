#!/usr/bin/env python3
"""The main demo (`make demo`): the device table of `python -m tinygrad`, then training a small MLP on the default device.

Data: two classes in the plane, a noisy disk inside a noisy ring, generated with a fixed seed (no downloads).
Model: Linear(2, 16) -> ReLU -> Linear(16, 2), Adam(lr=0.05), batch 64, cross-entropy, 25 steps under TinyJit (JIT=0: without).
Target: >= 95% test accuracy (exit status 1 if it is not reached). Reports device, compiler, kernels per training step and time
per step.
"""
from __future__ import annotations
import os, sys, time, importlib.util
import numpy as np
try: import tinygrad  # noqa: F401
except ImportError: sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))  # a plain checkout
from tinygrad.tensor import Tensor
from tinygrad.device import Device
from tinygrad import nn
from tinygrad.nn.optim import Adam
from tinygrad.nn.state import get_parameters
import tinygrad.engine.realize as engine_realize
if not hasattr(Tensor, "backward"):  # until tensor.py binds the autograd methods
  from tinygrad import gradient as _g
  Tensor.backward, Tensor.train = lambda self, gradient=None: _g.backward(self, gradient), _g.train  # type: ignore[attr-defined]

TARGET_ACC = 0.95
JIT = bool(int(os.getenv("JIT", "1"))) and importlib.util.find_spec("tinygrad.engine.jit") is not None   # JIT=0: every step scheduled
STEPS, BATCH, HIDDEN, LR, SEED = int(os.getenv("DEMO_STEPS", "25")), 64, 16, 0.05, 1337

def make_rings(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """n points: class 0 in a disk of radius 1, class 1 in a ring of radius 1.4..2.2, both with a little noise."""
  rng = np.random.default_rng(seed)
  y = rng.integers(0, 2, n)
  r = np.where(y == 0, rng.uniform(0.0, 1.0, n), rng.uniform(1.4, 2.2, n))
  a = rng.uniform(0, 2 * np.pi, n)
  x = np.stack([r * np.cos(a), r * np.sin(a)], 1) + rng.normal(0, 0.05, (n, 2))
  return x.astype(np.float32), y.astype(np.int32)

class MLP:
  def __init__(self, hidden: int = HIDDEN):
    self.l1, self.l2 = nn.Linear(2, hidden), nn.Linear(hidden, 2)
  def __call__(self, x: Tensor) -> Tensor: return self.l2(self.l1(x).relu())

def cross_entropy(logits: Tensor, onehot: Tensor) -> Tensor: return -(logits.log_softmax() * onehot).sum(1).mean()

class KernelCounter:
  """Counts kernels (and copies) by wrapping the engine's run_schedule: no DEBUG output needed."""
  def __init__(self) -> None: self.n = 0
  def __enter__(self) -> KernelCounter:
    self.orig = engine_realize.run_schedule
    def counting(schedule, *args, **kwargs):
      self.n += len(schedule)
      return self.orig(schedule, *args, **kwargs)
    engine_realize.run_schedule = counting
    return self
  def __exit__(self, *args) -> None: engine_realize.run_schedule = self.orig

def train_step(model: MLP, opt: Adam, x: Tensor, onehot: Tensor) -> Tensor:
  opt.zero_grad()
  loss = cross_entropy(model(x), onehot)
  loss.backward()
  # the loss shares its forward pass with the gradients: realize them together, then the update
  Tensor.realize(loss, *[p.grad for p in opt.params])  # type: ignore[misc]
  opt.step()
  return loss

def train(steps: int = STEPS, verbose: bool = True) -> dict:
  """Train the demo model; returns accuracy, timings and kernel counts."""
  Tensor.manual_seed(SEED)
  xtr, ytr = make_rings(512, SEED)
  xte, yte = make_rings(512, SEED + 1)
  eye = np.eye(2, dtype=np.float32)
  model = MLP()
  opt = Adam(get_parameters(model), lr=LR)
  rng = np.random.default_rng(SEED)
  times, kernels = [], []
  step_fn = lambda x, oh: train_step(model, opt, x, oh)  # noqa: E731
  if JIT:  # call 1 runs normally, call 2 records the kernels, later calls replay them without scheduling
    from tinygrad.engine.jit import TinyJit
    step_fn = TinyJit(step_fn)
  t_start = time.perf_counter()
  with Tensor.train():
    for step in range(steps):
      idx = rng.integers(0, len(xtr), BATCH)
      x, onehot = Tensor(xtr[idx]), Tensor(eye[ytr[idx]])
      st = time.perf_counter()
      with KernelCounter() as kc: loss = step_fn(x, onehot)
      times.append(time.perf_counter() - st)
      kernels.append(kc.n)
      if verbose:
        el = time.perf_counter() - t_start
        bar = "#" * (20 * (step + 1) // steps)
        sys.stderr.write(f"\r[{bar:<20}] step {step+1:3d}/{steps}  loss {loss.item():.4f}  {(step+1)/el:6.2f} steps/s")
        sys.stderr.flush()
  if verbose: sys.stderr.write("\n")
  acc = float((model(Tensor(xte)).numpy().argmax(1) == yte).mean())
  warm = times[2:] if len(times) > 3 else times
  # kernels of one step: counted on the first (unjitted) call; a replay runs the same captured kernels
  return {"acc": acc, "step_s": float(np.median(warm)), "kernels": kernels[0], "jit": JIT, "total_s": time.perf_counter() - t_start,
          "steps": steps, "final_loss": loss.item()}

def main() -> int:
  from tinygrad.__main__ import main as list_devices
  print("== python -m tinygrad ==")
  list_devices([])
  dev = Device[Device.DEFAULT]
  print(f"\n== training an MLP (2-{HIDDEN}-2) on rings, {STEPS} Adam steps of batch {BATCH}, target >= {TARGET_ACC:.0%} test accuracy ==")
  r = train()
  print(f"device:            {Device.DEFAULT}")
  print(f"compiler:          {dev.compiler_name}")
  print(f"kernels per step:  {r['kernels']}")
  print(f"time per step:     {r['step_s']*1e3:.2f} ms (median after warm-up{', TinyJit' if r['jit'] else ', JIT=0'}), {r['total_s']:.1f} s in total")
  print(f"final loss:        {r['final_loss']:.4f}")
  print(f"test accuracy:     {r['acc']:.1%} (target {TARGET_ACC:.0%})")
  if r["acc"] < TARGET_ACC:
    print(f"FAILED: accuracy {r['acc']:.1%} is below the target {TARGET_ACC:.0%}")
    return 1
  return 0

if __name__ == "__main__": sys.exit(main())
