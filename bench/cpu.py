#!/usr/bin/env python3
"""CPU figures, in one run: each CPU compiler (CLANG, GCC, LLVM) against numpy (and public tinygrad when
TINYGRAD_REF_PYTHON names its interpreter): float32 matmul GFLOPS, a*b+c and sum on 16M floats (GB/s),
softmax 4096x4096 (ms), and cold start of (Tensor([1,2,3])*2).tolist() in a fresh process with an empty cache.
Each configuration runs in its own process. `--quick` uses smaller sizes."""
from __future__ import annotations
import os, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_json, user_env, reference_python, ROOT

QUICK = "--quick" in sys.argv
SIZES = [256, 512] if QUICK else [512, 1024, 2048]
N_ELEM = 1 << 20 if QUICK else 1 << 24
SM = 1024 if QUICK else 4096

WORKLOAD = f"""
import json, time
import numpy as np
SIZES, N, SM = {SIZES!r}, {N_ELEM}, {SM}
def best(f, n=3):
  f(); ts = []
  for _ in range(n):
    st = time.perf_counter(); f(); ts.append(time.perf_counter() - st)
  return min(ts)
out = {{}}
if BACKEND == "numpy":
  rng = np.random.default_rng(0)
  for s in SIZES:
    a, b = rng.random((s, s), dtype=np.float32), rng.random((s, s), dtype=np.float32)
    out[f"matmul{{s}}"] = 2*s**3 / best(lambda: a @ b) / 1e9
  a, b, c = (rng.random(N, dtype=np.float32) for _ in range(3))
  out["ew"] = 16*N / best(lambda: a*b+c) / 1e9
  out["sum"] = 4*N / best(lambda: a.sum()) / 1e9
  x = rng.random((SM, SM), dtype=np.float32)
  def sm():
    e = np.exp(x - x.max(1, keepdims=True)); return e / e.sum(1, keepdims=True)
  out["softmax"] = best(sm) * 1e3
else:
  from tinygrad import Tensor
  for s in SIZES:
    a, b = Tensor.rand(s, s).realize(), Tensor.rand(s, s).realize()
    out[f"matmul{{s}}"] = 2*s**3 / best(lambda: (a @ b).realize()) / 1e9
  a, b, c = (Tensor.rand(N).realize() for _ in range(3))
  out["ew"] = 16*N / best(lambda: (a*b+c).realize()) / 1e9
  out["sum"] = 4*N / best(lambda: a.sum().realize()) / 1e9
  x = Tensor.rand(SM, SM).realize()
  out["softmax"] = best(lambda: x.softmax().realize()) * 1e3
print(json.dumps(out))
"""
COLD = "import time; st = time.perf_counter(); from tinygrad import Tensor; r = (Tensor([1,2,3])*2).tolist(); import json; print(json.dumps(time.perf_counter()-st))"

def cold_start(python: str, env: dict[str, str]) -> float | None:
  with tempfile.TemporaryDirectory() as d:
    env = dict(env, CACHEDB=os.path.join(d, "cache.db"), XDG_CACHE_HOME=d)   # an empty cache for both libraries
    got = [run_json(python, COLD, env) for _ in range(3)]
  vals = [g for g in got if g is not None]
  return min(vals) * 1e3 if vals else None

def main() -> None:
  configs: list[tuple[str, str, dict[str, str]]] = [("numpy", sys.executable, user_env(numpy_side=True))]
  for cc in ("CLANG", "GCC", "LLVM"): configs.append((f"CPU {cc}", sys.executable, user_env(DEV="CPU", CPU_CC=cc)))
  ref = reference_python()
  if ref: configs.append(("tinygrad 0.14 CPU", ref, user_env(DEV="CPU")))
  results: dict[str, dict] = {}
  for name, py, env in configs:
    res = run_json(py, f"BACKEND = {name!r}\n" + WORKLOAD, env, timeout=1800)
    if res is not None and name != "numpy": res["cold"] = cold_start(py, env)
    results[name] = res or {}
    print(f"measured {name}", file=sys.stderr)
  keys = [f"matmul{s}" for s in SIZES] + ["ew", "sum", "softmax", "cold"]
  label = {**{f"matmul{s}": f"matmul {s} GFLOPS" for s in SIZES}, "ew": f"a*b+c {N_ELEM>>20}M GB/s", "sum": f"sum {N_ELEM>>20}M GB/s",
           "softmax": f"softmax {SM}x{SM} ms", "cold": "cold start ms"}
  names = list(results)
  print(f"{'figure':22s}" + "".join(f"{n:>20s}" for n in names))
  for k in keys:
    row = f"{label[k]:22s}"
    for n in names:
      v = results[n].get(k)
      base = results["numpy"].get(k)
      rel = f" ({v/base:.2f}x np)" if v and base and k != "cold" else ""
      row += f"{(f'{v:.2f}' if v is not None else '-') + rel:>20s}"
    print(row)
  print("ratios are ours/numpy: higher is better for GFLOPS and GB/s, lower for ms" + ("" if ref else "; set TINYGRAD_REF_PYTHON for public tinygrad"))

if __name__ == "__main__": main()
