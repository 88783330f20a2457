#!/usr/bin/env python3
"""Compile time on the CPU device: per kernel (codegen+render, compile, load, each timed on its own) for a small
ResNet-ish net (conv+bn+relu blocks) and a transformer block, and the first call of each in a NEW process with an empty
disk cache (cold) and again with the cache the cold run filled (warm). Figures, not assertions.

  python bench/compile.py [--cc LLVM,CLANG] [--model resnet,transformer] [--parallel 0|1]
"""
from __future__ import annotations
import os, sys, json, argparse, statistics, subprocess, tempfile
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# runs in the child: patches the three stages with timers, builds the model with fixed weights, times its first call
CHILD = r"""
import sys, time, json
import numpy as np
t_import = time.perf_counter()
from tinygrad import Tensor, Device, nn, dtypes
from tinygrad.nn.state import get_parameters
import tinygrad.codegen as codegen
dev = Device[Device.DEFAULT]
stats = {"render": [], "compile": [], "load": []}
def timed(kind, fxn):
  def wrapper(*a, **kw):
    st = time.perf_counter()
    try: return fxn(*a, **kw)
    finally: stats[kind].append((time.perf_counter() - st) * 1e3)
  return wrapper
codegen.get_program = timed("render", codegen.get_program)
comp = dev.compiler
comp.compile = timed("compile", comp.compile)
dev.runtime = timed("load", dev.runtime)

class Block:
  def __init__(self, cin, cout, stride):
    self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm(cout)
    self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm(cout)
    self.sc = (nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm(cout)) if stride != 1 or cin != cout else None
  def __call__(self, x):
    y = self.b2(self.c2(self.b1(self.c1(x)).relu()))
    return (y + (self.sc[1](self.sc[0](x)) if self.sc else x)).relu()
class ResNet:
  def __init__(self):
    self.stem, self.bn = nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm(16)
    self.blocks = [Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2)]
    self.fc = nn.Linear(64, 10)
  def __call__(self, x):
    x = self.bn(self.stem(x)).relu()
    for b in self.blocks: x = b(x)
    return self.fc(x.mean((2, 3)))
  def input(self): return Tensor(np.random.default_rng(1).standard_normal((2, 3, 32, 32), dtype=np.float32))
class Transformer:
  def __init__(self, d=128, heads=4, layers=2):
    self.d, self.h = d, heads
    self.layers = [(nn.LayerNorm(d), nn.Linear(d, 3*d), nn.Linear(d, d), nn.LayerNorm(d), nn.Linear(d, 4*d), nn.Linear(4*d, d)) for _ in range(layers)]
  def __call__(self, x):
    B, T, D = x.shape
    for ln1, qkv, proj, ln2, fc1, fc2 in self.layers:
      q, k, v = [t.reshape(B, T, self.h, D // self.h).transpose(1, 2) for t in qkv(ln1(x)).chunk(3, -1)]
      att = (q @ k.transpose(-1, -2) / (D // self.h) ** 0.5).softmax(-1)
      x = x + proj((att @ v).transpose(1, 2).reshape(B, T, D))
      x = x + fc2(fc1(ln2(x)).gelu())
    return x
  def input(self): return Tensor(np.random.default_rng(1).standard_normal((2, 32, self.d), dtype=np.float32))

model = {"resnet": ResNet, "transformer": Transformer}[sys.argv[1]]()
rng = np.random.default_rng(0)
for p in get_parameters(model):
  if p.dtype == dtypes.float32: p.assign(Tensor(rng.standard_normal(p.shape, dtype=np.float32) * 0.1))
Tensor.realize(*get_parameters(model))
x = model.input().realize()
for v in stats.values(): v.clear()
st = time.perf_counter()
out = model(x).numpy()
first = time.perf_counter() - st
print(json.dumps({"first_s": first, "kernels": len(stats["render"]), "compiles": len(stats["compile"]), "sum": float(np.abs(out).sum()), **stats}))
"""

def child(model: str, cc: str, db: str, extra: dict[str, str]) -> dict:
  env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
  env.update({"DEV": "CPU", "CPU_CC": cc, "CACHEDB": db, "CACHELEVEL": "1", **extra})
  r = subprocess.run([sys.executable, "-c", CHILD, model], capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
  if r.returncode != 0: raise SystemExit(f"{model} on CPU:{cc} failed:\n{r.stderr[-3000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1])

def fmt(xs: list[float]) -> str:
  if not xs: return f"{'-':>8s} {'-':>8s} {'-':>8s}"
  return f"{sum(xs):8.0f} {statistics.median(xs):8.2f} {max(xs):8.1f}"

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--cc", default="LLVM,CLANG", help="CPU compilers, comma-separated (LLVM, CLANG, GCC)")
  ap.add_argument("--model", default="resnet,transformer")
  ap.add_argument("--parallel", default=None, help="PARALLEL_COMPILE for the children (default: the library's)")
  args = ap.parse_args()
  extra = {} if args.parallel is None else {"PARALLEL_COMPILE": args.parallel}
  print(f"{'model':12s} {'cc':6s} {'run':5s} {'kernels':>7s} {'compiles':>8s} | {'render ms: total':>16s} {'median':>8s} {'max':>8s} | "
        f"{'compile ms: total':>17s} {'median':>8s} {'max':>8s} | {'load ms: total':>14s} {'median':>8s} {'max':>8s} | {'first call s':>12s}")
  for model in args.model.split(","):
    for cc in args.cc.split(","):
      with tempfile.TemporaryDirectory(prefix="tinygrad_bench_compile_") as tmp:
        db = os.path.join(tmp, "cache.db")
        runs = [("cold", child(model, cc, db, extra)), ("warm", child(model, cc, db, extra))]
      for name, r in runs:
        print(f"{model:12s} {cc:6s} {name:5s} {r['kernels']:7d} {r['compiles']:8d} | {fmt(r['render']):>34s} | {fmt(r['compile']):>35s} | "
              f"{fmt(r['load']):>32s} | {r['first_s']:12.2f}")
      cold, warm = runs[0][1], runs[1][1]
      print(f"{model:12s} {cc:6s} warm/cold first call {warm['first_s']/cold['first_s']:.2f}x (outputs {'match' if cold['sum'] == warm['sum'] else 'DIFFER'})")

if __name__ == "__main__": main()
