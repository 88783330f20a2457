"""The smoke test of the GPU check scripts (gpu_check_nv.sh, gpu_check_amd.sh): each compiler pair of a device computes
against numpy (elementwise, half, a long reduce, an axis max, a matmul, plus the device's own checks), the WMMA uops of
the kernels it ran are counted, and an impossible allocation must be a clear MemoryError after which the device still
computes. Prints one line per check and ends with `SMOKE OK` or `SMOKE <n> FAILED`; returns the failure count."""
from __future__ import annotations
import time
from typing import Any, Callable
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.device import Device
from tinygrad.engine.realize import method_cache

rng = np.random.default_rng(0)
a, b = rng.standard_normal((1000, 37), dtype=np.float32), rng.standard_normal((1000, 37), dtype=np.float32)
x, y = rng.standard_normal((96, 80), dtype=np.float32), rng.standard_normal((80, 48), dtype=np.float32)
big = rng.standard_normal(1 << 22, dtype=np.float32)

# name -> (run on device d, numpy's answer, tolerance); a None answer: the run returns (ours, numpy's on the same inputs)
Checks = dict[str, tuple[Callable[[], Any], Any, float]]

def base_checks(d: str) -> Checks:
  return {
    "add": (lambda: (Tensor(a, device=d) * 2 + Tensor(b, device=d)).numpy(), a * 2 + b, 1e-6),
    "half": (lambda: (Tensor(a, device=d).cast(dtypes.half) * 3).float().numpy(), (a.astype(np.float16) * 3).astype(np.float32), 1e-2),
    "sum4M": (lambda: Tensor(big, device=d).sum().numpy(), big.sum(dtype=np.float64), 1e-2),
    "max_axis": (lambda: Tensor(a, device=d).max(axis=0).numpy(), a.max(axis=0), 0),
    "matmul": (lambda: (Tensor(x, device=d) @ Tensor(y, device=d)).numpy(), x @ y, 1e-3),
  }

def wmma_uops(d: str) -> int:
  """WMMA uops in the kernels compiled so far for device `d` (its compiler pair)."""
  dv = Device[d]
  return sum(sum(u.op.name == "WMMA" for u in r.p.uops) for k, r in method_cache.items() if (k[0], k[1]) == (dv.device, dv.compiler_name))

def smoke(device: str, pairs: list[str], extra: Callable[[str], Checks], about: Callable[[str], str] = lambda d: "",
          expect_wmma: Callable[[str], bool] | None = None) -> int:
  """Run every check on each pair `device:pair`; `expect_wmma(d)`: whether d must have run WMMA uops (None: just count)."""
  bad = 0
  for cc in pairs:
    d = f"{device}:{cc}"
    st = time.perf_counter()
    try:
      if (text := about(d)): print(f"{d:9s} {text}")
      for name, (fn, want, tol) in {**base_checks(d), **extra(d)}.items():
        got = fn()
        if want is None: got, want = got
        ok = np.allclose(got, want, rtol=tol, atol=tol)
        bad += not ok
        print(f"{d:9s} {name:11s} {'ok' if ok else 'WRONG max err ' + str(np.max(np.abs(got - want)))}")
      n = wmma_uops(d)
      if expect_wmma is None: print(f"{d:9s} WMMA uops   {n} in the kernels run")
      else:
        want_some = expect_wmma(d)
        print(f"{d:9s} WMMA uops   {n} in the kernels run ({'expected some' if want_some else 'none expected'})")
        bad += want_some != (n > 0)
    except Exception as e:
      bad += 1
      print(f"{d:9s} ERROR {type(e).__name__}: {str(e)[:2000]}")
    print(f"{d:9s} {time.perf_counter() - st:.2f}s")
  try:
    Tensor.empty(1 << 40, device=device).realize()
    print("4 TiB alloc: no error?!")
    bad += 1
  except MemoryError as e: print("4 TiB alloc: MemoryError:", str(e)[:200])
  except Exception as e:
    print("4 TiB alloc: unexpected", type(e).__name__, str(e)[:300])
    bad += 1
  print("after OOM still computes:", (Tensor([1, 2, 3], device=device) * 2).tolist())
  print("SMOKE", "OK" if bad == 0 else f"{bad} FAILED")
  return bad
