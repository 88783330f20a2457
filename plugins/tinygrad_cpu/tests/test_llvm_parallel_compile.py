"""LLVMCompiler on several threads: each compile's heavy LLVM calls (parse, verify, passes, object emission) skip llvmlite's
process-wide lock, so compiles overlap; the objects are those of compiling one after another."""
import threading, time
import pytest
from tinygrad.dtype import dtypes
from _cpu_kernels import elementwise

def _chain(k: int):
  def fn(a, b):
    x = a
    for i in range(k): x = x * b + (a * float(i) + 0.5) if i % 3 else (x + b) * float(i + 1)
    return x
  return fn

def test_parallel_llvm_compiles_are_unlocked_and_identical():
  pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install llvmlite)")
  from llvmlite.binding import ffi
  from tinygrad_cpu.renderer import LLVMRenderer
  from tinygrad_cpu.compiler import LLVMCompiler
  ren, comp = LLVMRenderer(), LLVMCompiler()
  srcs = [ren.render(elementwise(_chain(120 + j), [dtypes.float32]*2, dtypes.float32, 1000 + j), f"k{j}") for j in range(4)]
  want = [comp.compile(s) for s in srcs]
  # time each compiling thread holds llvmlite's lock (the callbacks run inside it, outermost acquire to release)
  held, depth, since, lk = {}, {}, {}, threading.Lock()
  def acq():
    i = threading.get_ident()
    depth[i] = depth.get(i, 0) + 1
    if depth[i] == 1: since[i] = time.perf_counter()
  def rel():
    i = threading.get_ident()
    depth[i] -= 1
    if depth[i] == 0:
      with lk: held[i] = held.get(i, 0.0) + time.perf_counter() - since[i]
  got, spent = [b""] * len(srcs), {}
  def work(j: int) -> None:
    st = time.perf_counter()
    got[j] = comp.compile(srcs[j])
    spent[threading.get_ident()] = time.perf_counter() - st
  ffi.register_lock_callback(acq, rel)
  try:
    ts = [threading.Thread(target=work, args=(j,)) for j in range(len(srcs))]
    for t in ts: t.start()
    for t in ts: t.join()
  finally: ffi.unregister_lock_callback(acq, rel)
  assert got == want
  assert len(spent) == len(srcs)
  # locked, a compile holds the lock for nearly all of its time (measured ~100%); unlocked, for ~1% (a few small calls)
  for i, s in spent.items(): assert held.get(i, 0.0) < 0.25 * s, (held.get(i), s)

def test_compile_error_on_a_thread_still_raises():
  pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install llvmlite)")
  from tinygrad.device import CompileError
  from tinygrad_cpu.compiler import LLVMCompiler, _compiling
  comp, err = LLVMCompiler(), []
  def work():
    try: comp.compile("define void @f() { not llvm }")
    except CompileError as e: err.append((str(e), getattr(_compiling, "on", False)))
  t = threading.Thread(target=work)
  t.start()
  t.join(60)
  assert err and "LLVM rejected the IR" in err[0][0] and err[0][1] is False   # the thread's flag is reset after a failure
