#!/usr/bin/env python3
"""Time per training step of the demo model (examples/demo.py: MLP 2-16-2, Adam, batch 64) on the default device:
plain, under TinyJit, and the same model with a hand-written numpy forward/backward/Adam. Prints figures and ratios.

  PYTHONPATH=core python3 bench/train.py [--steps N]
"""
from __future__ import annotations
import argparse, os, sys, time, importlib.util
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
try: import tinygrad  # noqa: F401
except ImportError: sys.path.insert(0, os.path.join(HERE, "..", "core"))
from tinygrad.tensor import Tensor
from tinygrad.device import Device
from tinygrad.nn.optim import Adam
from tinygrad.nn.state import get_parameters, get_state_dict

def load_demo():
  spec = importlib.util.spec_from_file_location("tinygrad_demo", os.path.join(HERE, "..", "examples", "demo.py"))
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)  # type: ignore[union-attr]
  return mod

def batches(demo, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
  x, y = demo.make_rings(512, demo.SEED)
  rng, eye = np.random.default_rng(0), np.eye(2, dtype=np.float32)
  out = []
  for _ in range(n):
    idx = rng.integers(0, len(x), demo.BATCH)
    out.append((x[idx], eye[y[idx]]))
  return out

def time_steps(fn, data, warmup: int) -> tuple[float, list[float]]:
  """Median seconds per step after `warmup` steps, and the losses."""
  times, losses = [], []
  for i, (x, oh) in enumerate(data):
    st = time.perf_counter()
    losses.append(fn(x, oh))
    if i >= warmup: times.append(time.perf_counter() - st)
  return float(np.median(times)), losses

def tinygrad_step(demo, jit: bool):
  Tensor.manual_seed(demo.SEED)
  model = demo.MLP()
  opt = Adam(get_parameters(model), lr=demo.LR)
  def step(x: Tensor, oh: Tensor) -> Tensor: return demo.train_step(model, opt, x, oh)
  if jit:
    from tinygrad.engine.jit import TinyJit
    step = TinyJit(step)
  def run(x: np.ndarray, oh: np.ndarray) -> float: return step(Tensor(x), Tensor(oh)).item()
  return run, model

def numpy_step(params: dict[str, np.ndarray], lr: float):
  """The demo model and Adam written by hand in numpy (float32), same formulas as nn.optim.Adam."""
  m = {k: np.zeros_like(v) for k, v in params.items()}
  v = {k: np.zeros_like(p) for k, p in params.items()}
  t = [0]
  b1, b2, eps = 0.9, 0.999, 1e-8
  def run(x: np.ndarray, oh: np.ndarray) -> float:
    p = params
    h = x @ p["l1.weight"].T + p["l1.bias"]
    a = np.maximum(h, 0)
    z = a @ p["l2.weight"].T + p["l2.bias"]
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -(logp * oh).sum(1).mean()
    dz = (np.exp(logp) - oh) / x.shape[0]
    da = dz @ p["l2.weight"]
    dh = da * (h > 0)
    g = {"l2.weight": dz.T @ a, "l2.bias": dz.sum(0), "l1.weight": dh.T @ x, "l1.bias": dh.sum(0)}
    t[0] += 1
    for k in p:
      m[k] = b1 * m[k] + (1 - b1) * g[k]
      v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k]
      p[k] = p[k] - lr * (m[k] / (1 - b1 ** t[0])) / (np.sqrt(v[k] / (1 - b2 ** t[0])) + eps)
    return float(loss)
  return run

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--steps", type=int, default=int(os.getenv("BENCH_STEPS", "12")))
  ap.add_argument("--warmup", type=int, default=3)
  args = ap.parse_args()
  demo = load_demo()
  data = batches(demo, args.steps + args.warmup)
  dev = Device[Device.DEFAULT]
  print(f"device {Device.DEFAULT}, compiler {dev.compiler_name}; model MLP 2-{demo.HIDDEN}-2, Adam, batch {demo.BATCH}; "
        f"{args.steps} timed steps after {args.warmup} warm-up")

  run, _ = tinygrad_step(demo, jit=False)
  Tensor.manual_seed(demo.SEED)
  init = {k: t.numpy().copy() for k, t in get_state_dict(demo.MLP()).items()}   # the same seed gives the same initial weights
  plain_s, plain_losses = time_steps(run, data, args.warmup)

  jit_s, jit_losses = None, None
  try:
    import tinygrad.engine.jit  # noqa: F401
    run_j, _ = tinygrad_step(demo, jit=True)
    jit_s, jit_losses = time_steps(run_j, data, args.warmup)
  except ImportError:
    print("TinyJit: core/tinygrad/engine/jit.py is missing, no jitted figure")

  np_s, np_losses = time_steps(numpy_step(init, demo.LR), data, args.warmup)

  print(f"\n{'variant':<22}{'ms/step':>10}{'steps/s':>10}{'vs numpy':>10}   final loss")
  rows = [("tinygrad", plain_s, plain_losses)] + ([("tinygrad + TinyJit", jit_s, jit_losses)] if jit_s is not None else []) + \
         [("numpy (by hand)", np_s, np_losses)]
  for name, s, losses in rows:
    print(f"{name:<22}{s*1e3:>10.2f}{1/s:>10.1f}{s/np_s:>9.1f}x   {losses[-1]:.5f}")
  if jit_s is not None: print(f"\nTinyJit speedup over plain: {plain_s/jit_s:.2f}x")
  print(f"max |loss(tinygrad) - loss(numpy)| over the run: {max(abs(a-b) for a, b in zip(plain_losses, np_losses)):.2e}")
  if jit_losses is not None: print(f"max |loss(jit) - loss(plain)| over the run: {max(abs(a-b) for a, b in zip(plain_losses, jit_losses)):.2e}")

if __name__ == "__main__": main()
