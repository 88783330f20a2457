"""NV figures: elementwise bandwidth and a matmul per compiler pair (GPU time from CUDA events), against numpy on the host.
On the mock driver (NV_MOCK=1) the numbers measure the PYTHON interpreter, not a GPU: they only show the script runs."""
import os, time
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.device import Device

def bench(dev: str, n: int = 1 << 24, m: int = 2048) -> None:
  a, b = Tensor.rand(n, device=dev).realize(), Tensor.rand(n, device=dev).realize()
  x, y = Tensor.rand(m, m, device=dev).realize(), Tensor.rand(m, m, device=dev).realize()
  hx, hy = x.cast(dtypes.half).realize(), y.cast(dtypes.half).realize()   # half inputs, float accumulate: tensor cores
  for name, fn, work in [("add", lambda: (a + b).realize(), 12 * n), ("sum", lambda: a.sum().realize(), 4 * n),
                         ("matmul", lambda: (x @ y).realize(), 2 * m**3), ("mm_half", lambda: (hx @ hy).realize(), 2 * m**3)]:
    fn()
    Device[dev].synchronize()
    st = time.perf_counter()
    for _ in range(5): fn()
    Device[dev].synchronize()
    dt = (time.perf_counter() - st) / 5
    print(f"{dev:10s} {name:7s} {dt*1e3:9.3f} ms  {work/dt/1e9:9.2f} {'GFLOP/s' if name.startswith('m') else 'GB/s'}")

if __name__ == "__main__":
  small = os.environ.get("NV_MOCK") == "1"
  for cc in ("NVRTC", "NVCC", "PTX"):
    try: bench(f"NV:{cc}", *((1 << 12, 32) if small else ()))
    except Exception as e: print(f"NV:{cc}: {type(e).__name__}: {str(e).splitlines()[0]}")
  a = np.random.rand(1024, 1024).astype(np.float32)
  st = time.perf_counter()
  a @ a
  print(f"numpy      matmul  {(time.perf_counter()-st)*1e3:9.3f} ms (host)")
