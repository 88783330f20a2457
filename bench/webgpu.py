#!/usr/bin/env python3
"""WEBGPU figures, in one run, against numpy: a*b+c and sum on N floats (GB/s), float32 matmul 512 (GFLOPS), and the
dispatch and pipeline-build costs. Each side runs in its own process; WEBGPU times include completion (synchronize), not
the host copies. On CI's llvmpipe this measures a software rasterizer, so expect it behind numpy. `--quick`: 1M floats."""
from __future__ import annotations
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_json, user_env

N_ELEM = 1 << 20 if "--quick" in sys.argv else 1 << 22
MM = 512

WORKLOAD = f"""
import json, time
import numpy as np
N, MM = {N_ELEM}, {MM}
def best(f, n=5):
  f(); ts = []
  for _ in range(n):
    st = time.perf_counter(); f(); ts.append(time.perf_counter() - st)
  return min(ts)
out = {{}}
rng = np.random.default_rng(0)
na, nb, nc = (rng.random(N, dtype=np.float32) for _ in range(3))
ma, mb = rng.random((MM, MM), dtype=np.float32), rng.random((MM, MM), dtype=np.float32)
if BACKEND == "numpy":
  out["ew"] = 16*N / best(lambda: na*nb+nc) / 1e9
  out["sum"] = 4*N / best(lambda: na.sum()) / 1e9
  out["matmul"] = 2*MM**3 / best(lambda: ma @ mb) / 1e9
else:
  from tinygrad import Tensor
  from tinygrad.device import Device
  dev = Device["WEBGPU"]
  def run(f):
    def g():
      f().realize()
      dev.synchronize()
    return g
  a, b, c = (Tensor(x, device="WEBGPU").realize() for x in (na, nb, nc))
  out["ew"] = 16*N / best(run(lambda: a*b+c)) / 1e9
  out["sum"] = 4*N / best(run(lambda: a.sum())) / 1e9
  A, B = Tensor(ma, device="WEBGPU").realize(), Tensor(mb, device="WEBGPU").realize()
  assert np.allclose((A @ B).numpy(), ma @ mb, rtol=1e-3, atol=1e-3)
  out["matmul"] = 2*MM**3 / best(run(lambda: A @ B), n=3) / 1e9
  t = Tensor.ones(1, device="WEBGPU").realize()
  out["dispatch"] = best(run(lambda: t + 1), n=20) * 1e6
  import re
  from tinygrad_webgpu.runtime import _build
  src = next(iter(dev.pipelines))   # rebuilt past the per-source cache: shader + pipeline creation
  out["pipeline"] = best(lambda: _build(dev, re.search(r"fn (\\w+)\\(", src).group(1), src), n=3) * 1e3
  out["adapter"] = dev.description
print(json.dumps(out))
"""

def main() -> None:
  results: dict[str, dict] = {}
  for name, env in (("numpy", user_env(numpy_side=True)), ("WEBGPU", user_env(DEV="WEBGPU"))):
    results[name] = run_json(sys.executable, f"BACKEND = {name!r}\n" + WORKLOAD, env, timeout=1800) or {}
  np_, wg = results["numpy"], results["WEBGPU"]
  print(f"WEBGPU on {wg.get('adapter', '(did not run)')}")
  print(f"{'figure':24s}{'numpy':>12s}{'WEBGPU':>12s}{'WEBGPU/numpy':>14s}")
  for k, label in (("ew", f"a*b+c {N_ELEM>>20}M GB/s"), ("sum", f"sum {N_ELEM>>20}M GB/s"), ("matmul", f"matmul {MM} GFLOPS")):
    a, b = np_.get(k), wg.get(k)
    print(f"{label:24s}{(f'{a:.2f}' if a else '-'):>12s}{(f'{b:.2f}' if b else '-'):>12s}{(f'{b/a:.2f}x' if a and b else '-'):>14s}")
  for k, label in (("dispatch", "dispatch+sync us"), ("pipeline", "pipeline build ms")):
    v = wg.get(k)
    print(f"{label:24s}{'':>12s}{(f'{v:.1f}' if v else '-'):>12s}")
  print("higher is better for GB/s and GFLOPS")

if __name__ == "__main__": main()
