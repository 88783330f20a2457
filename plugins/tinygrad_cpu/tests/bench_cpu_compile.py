"""Prints compile and load times of a small kernel for each CPU compiler (a benchmark, not a test): python bench_cpu_compile.py"""
import time, shutil
from _cpu_kernels import add_kernel, reduce_kernel
from tinygrad_cpu.renderer import ClangRenderer, LLVMRenderer
from tinygrad_cpu.compiler import ClangCompiler, GCCCompiler, LLVMCompiler
from tinygrad_cpu.runtime import CPUProgram

def best(f, n=5):
  ts = []
  for _ in range(n):
    st = time.perf_counter()
    f()
    ts.append(time.perf_counter() - st)
  return min(ts) * 1e3

if __name__ == "__main__":
  for name, R, C, tool in [("CLANG", ClangRenderer, ClangCompiler, "clang"), ("GCC", ClangRenderer, GCCCompiler, "gcc"), ("LLVM", LLVMRenderer, LLVMCompiler, None)]:
    if tool and shutil.which(tool) is None:
      print(f"{name:6s} skipped: {tool} not found")
      continue
    r, c = R(), C()
    for kname, k in [("add", add_kernel(1024)), ("reduce", reduce_kernel(64, 64))]:
      src = r.render(k, "k")
      lib = c.compile(src)
      print(f"{name:6s} {kname:7s} render {best(lambda: r.render(k, 'k')):6.2f} ms  compile {best(lambda: c.compile(src)):7.2f} ms  "
            f"load {best(lambda: CPUProgram('k', lib)):6.2f} ms  binary {len(lib)} bytes")
