"""AMD figures per compiler pair (bench/common.py's gpu_figures: elementwise, reduce, float and half matmul, and numpy's
matmul on the host), and the LLVM pair's compile time per kernel. On the mock driver (AMD_MOCK=1) the kernel numbers
measure the PYTHON interpreter, not a GPU: they only show the script runs."""
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import gpu_figures
from tinygrad import Tensor

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
  gpu_figures("AMD", ("HIP", "LLVM"), os.environ.get("AMD_MOCK") == "1", m=1024)
  for arch in ("gfx90a", "gfx942", "gfx1100"):
    try: compile_time(arch)
    except Exception as e: print(f"LLVM {arch}: {type(e).__name__}: {str(e).splitlines()[0]}")
