"""AMD figures: elementwise bandwidth, a reduce and a matmul per compiler pair (GPU time from HIP events via synchronize),
and the LLVM pair's compile time per kernel, against numpy on the host.
On the mock driver (AMD_MOCK=1) the kernel numbers measure the PYTHON interpreter, not a GPU: they only show the script runs."""
import os, time
import numpy as np
from tinygrad import Tensor
from tinygrad.device import Device

def bench(dev: str, n: int = 1 << 24, m: int = 1024) -> None:
  a, b = Tensor.rand(n, device=dev).realize(), Tensor.rand(n, device=dev).realize()
  x, y = Tensor.rand(m, m, device=dev).realize(), Tensor.rand(m, m, device=dev).realize()
  for name, fn, work in [("add", lambda: (a + b).realize(), 12 * n), ("sum", lambda: a.sum().realize(), 4 * n),
                         ("matmul", lambda: (x @ y).realize(), 2 * m**3)]:
    fn()
    Device[dev].synchronize()
    st = time.perf_counter()
    for _ in range(5): fn()
    Device[dev].synchronize()
    dt = (time.perf_counter() - st) / 5
    print(f"{dev:10s} {name:7s} {dt*1e3:9.3f} ms  {work/dt/1e9:9.2f} {'GFLOP/s' if name == 'matmul' else 'GB/s'}")

def compile_time(arch: str, n: int = 20) -> None:
  from tinygrad.codegen import get_program
  from tinygrad_amd.renderer import AMDLLVMRenderer
  from tinygrad_amd.compiler import AMDLLVMCompiler
  cc = AMDLLVMCompiler(arch)
  srcs = [get_program((Tensor.empty(64 + i, device="NULL").exp() * i).schedule()[-1].ast, AMDLLVMRenderer(arch)).src for i in range(n)]
  st = time.perf_counter()
  for s in srcs: cc.compile(s)
  print(f"LLVM {arch:8s} compile {(time.perf_counter() - st) / n * 1e3:7.2f} ms/kernel (llvmlite + lld, {cc.version()})")

if __name__ == "__main__":
  small = os.environ.get("AMD_MOCK") == "1"
  for cc in ("HIP", "LLVM"):
    try: bench(f"AMD:{cc}", *((1 << 12, 32) if small else ()))
    except Exception as e: print(f"AMD:{cc}: {type(e).__name__}: {str(e).splitlines()[0]}")
  for arch in ("gfx90a", "gfx942", "gfx1100"):
    try: compile_time(arch)
    except Exception as e: print(f"LLVM {arch}: {type(e).__name__}: {str(e).splitlines()[0]}")
  a = np.random.rand(1024, 1024).astype(np.float32)
  st = time.perf_counter()
  a @ a
  print(f"numpy      matmul  {(time.perf_counter()-st)*1e3:9.3f} ms (host)")
