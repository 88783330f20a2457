#!/usr/bin/env python3
"""Compiler and dispatch speed against public tinygrad (TINYGRAD_REF_PYTHON names its interpreter), with the targets of
the overhead issue: import, cold and warm first result, schedule+codegen of a new kernel (on NULL: nothing compiles or
runs), and the per-call cost of a tiny realize with and without TinyJit. Every figure is measured in fresh processes."""
from __future__ import annotations
import os, sys, tempfile, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_json, reference_python, user_env

IMPORT = "import time; st = time.perf_counter(); import tinygrad; import json; print(json.dumps(time.perf_counter() - st))"
FIRST = ("import time; st = time.perf_counter(); from tinygrad import Tensor; r = (Tensor([1,2,3])*2).tolist(); "
         "assert r == [2, 4, 6]; import json; print(json.dumps(time.perf_counter() - st))")
CODEGEN = """
import json, time
from tinygrad import Tensor
def t(make, n=5):
  ts = []
  for i in range(n + 1):
    x = make(i + 1.0)
    st = time.perf_counter(); x.realize(); ts.append(time.perf_counter() - st)
  return sorted(ts[1:])[n // 2]
a, b = Tensor.empty(1024, 1024, device="NULL"), Tensor.empty(1024, 1024, device="NULL")
print(json.dumps({"ew": t(lambda c: a * b + c), "mm": t(lambda c: (a + c) @ b)}))
"""
DISPATCH = """
import json, time
from tinygrad import Tensor, TinyJit
a = Tensor.rand(16).realize()
def per_call(f, n=2000):
  for _ in range(20): f()
  st = time.perf_counter()
  for _ in range(n): f()
  return (time.perf_counter() - st) / n
plain = per_call(lambda: (a + 1).realize())
jf = TinyJit(lambda x: (x + 1).realize())
jitted = per_call(lambda: jf(a))
print(json.dumps({"plain": plain, "jit": jitted}))
"""
TARGETS = {"import": 0.5, "cold": 0.4, "warm": 0.4, "ew": 0.3, "mm": 0.3, "plain": 0.15, "jit": 0.2}
LABELS = {"import": "import tinygrad (ms)", "cold": "first result, empty cache (ms)", "warm": "first result, warm cache (ms)",
          "ew": "schedule+codegen elementwise (ms)", "mm": "schedule+codegen matmul 1024 (ms)", "plain": "tiny realize per call (us)",
          "jit": "tiny jitted call (us)"}

def measure(python: str, env: dict[str, str], runs: int = 5) -> dict[str, float]:
  out: dict[str, float] = {}
  vals = [run_json(python, IMPORT, env) for _ in range(runs)]
  out["import"] = statistics.median(v for v in vals if v is not None) * 1e3
  with tempfile.TemporaryDirectory() as d:
    cenv = dict(env, CACHEDB=os.path.join(d, "cache.db"), XDG_CACHE_HOME=d)
    cold = []
    for i in range(3):
      for f in os.listdir(d): os.remove(os.path.join(d, f)) if os.path.isfile(os.path.join(d, f)) else None
      cold.append(run_json(python, FIRST, cenv))
    out["cold"] = min(v for v in cold if v is not None) * 1e3
    run_json(python, FIRST, cenv)
    out["warm"] = statistics.median(v for v in (run_json(python, FIRST, cenv) for _ in range(runs)) if v is not None) * 1e3
  cg = run_json(python, CODEGEN, env) or {}
  out.update({k: v * 1e3 for k, v in cg.items()})
  dp = run_json(python, DISPATCH, env) or {}
  out.update({k: v * 1e6 for k, v in dp.items()})
  return out

def main() -> None:
  env = user_env(DEV=os.environ.get("DEV", "CPU"))
  run_json(sys.executable, IMPORT, env)   # writes our .pyc files once, as pip install does for a user
  ours = measure(sys.executable, env)
  ref_py = reference_python()
  ref = measure(ref_py, env) if ref_py else {}
  print(f"{'figure':36s} {'ours':>10s} {'tinygrad':>10s} {'ratio':>8s} {'target':>8s}")
  for k, label in LABELS.items():
    o, r = ours.get(k), ref.get(k)
    rat = o / r if o and r else None
    verdict = "" if rat is None else ("  met" if rat <= TARGETS[k] else "  missed")
    print(f"{label:36s} {o if o is not None else float('nan'):10.2f} {r if r is not None else float('nan'):10.2f} "
          f"{(f'{rat:.2f}x' if rat else '-'):>8s} {'<=' + str(TARGETS[k]) + 'x':>8s}{verdict}")
  if not ref_py: print("public tinygrad not measured: set TINYGRAD_REF_PYTHON to its venv's python")

if __name__ == "__main__": main()
