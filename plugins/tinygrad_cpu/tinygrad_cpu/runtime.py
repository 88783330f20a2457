"""CPU runtime: load a compiled kernel (a shared object via dlopen, or a relocatable object via MCJIT's loader) and call
it, split across threads.

Threading: the renderer gives every kernel two trailing int arguments (core_id, core_count) and, when its outermost loop
is a parallel (GLOBAL/LOOP) loop holding every global store, makes core `i` of `n` run iterations [end*i/n, end*(i+1)/n)
of it; it exports `<name>_work`, an estimate of the uops the kernel executes (0: not splittable). The runtime uses
min(CPU_COUNT, work // CPU_THREAD_WORK) threads (at least 1); core 0 runs on the calling thread, the others on a
persistent pool (re-created in a fork child, which inherits none of its threads). ctypes releases the GIL during the call,
so the threads run in parallel.
"""
from __future__ import annotations
import ctypes, functools, os, time, threading, tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from tinygrad.plugin_api import getenv

CPU_COUNT: int = getenv("CPU_COUNT", len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
CPU_THREAD_WORK: int = getenv("CPU_THREAD_WORK", 1 << 16)   # estimated uops per thread below which a kernel stays on fewer threads

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
def _get_pool() -> ThreadPoolExecutor:
  global _pool
  with _pool_lock:
    if _pool is None: _pool = ThreadPoolExecutor(max(CPU_COUNT - 1, 1), thread_name_prefix="tinygrad_cpu")
  return _pool
def _forget_pool_in_child() -> None:
  # a fork child inherits the pool object but not its worker threads (and maybe a held lock): work submitted there would
  # wait forever, so the child starts a fresh pool on first use. The parent's threads are not ours to join in the child.
  global _pool, _pool_lock
  _pool, _pool_lock = None, threading.Lock()
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_pool_in_child)

@functools.cache
def _so_dirs() -> tuple[str, ...]:
  return tuple(d for d in ("/dev/shm", tempfile.gettempdir()) if os.path.isdir(d) and os.access(d, os.W_OK))

def _addr(buf: Any) -> int:
  return buf if isinstance(buf, int) else buf.addr

@functools.cache
def _load_compiler_runtime() -> None:
  # LLVM lowers some casts to calls into the compiler's runtime library (float64 -> float16 is __truncdfhf2, in libgcc_s
  # since GCC 12): MCJIT resolves them against the libraries loaded into its symbol search, and this process may not
  # have libgcc_s loaded; an unresolved call jumps to address 0
  import ctypes.util
  import llvmlite.binding as llvm
  if (name := ctypes.util.find_library("gcc_s")) is not None: llvm.load_library_permanently(name)

class CPUProgram:
  """A loaded CPU kernel: `CPUProgram(name, lib)(*bufs, vals=(...), wait=False)`; `lib` is an ELF shared object (the C
  compilers') or an ELF relocatable object (LLVMCompiler's)."""
  def __init__(self, name: str, lib: bytes):
    self.name = name
    self.last_span: tuple[float, float] | None = None
    elf_type = int.from_bytes(lib[16:18], "little" if lib[5:6] == b"\x01" else "big") if lib[:4] == b"\x7fELF" and len(lib) >= 64 else 0
    if elf_type == 3: self._load_so(lib)         # ET_DYN
    elif elf_type == 1: self._load_object(lib)   # ET_REL
    else: raise ValueError(f"CPU kernel {name}: binary is neither an ELF shared object nor an ELF relocatable object (starts {lib[:20]!r})")
    self.threads = 1 if self.work == 0 else max(1, min(CPU_COUNT, self.work // CPU_THREAD_WORK))

  def _load_so(self, lib: bytes) -> None:
    # dlopen returns an already loaded library when the path string or the file's (device, inode) matches one, so every
    # kernel gets a never-reused name on tmpfs (whose inode numbers are not reused either), unlinked right after loading.
    # A memfd's /proc/self/fd/N path is reused as soon as the fd is closed, so it would alias the previous kernel.
    err: OSError | None = None
    for d in _so_dirs():
      try: fd, path = tempfile.mkstemp(prefix=f"tinygrad_{self.name[:32]}_", suffix=".so", dir=d)
      except OSError as e:
        err = e
        continue
      try:
        with os.fdopen(fd, "wb") as f: f.write(lib)
        self._lib = ctypes.CDLL(path)
        break
      except OSError as e: err = e   # e.g. a noexec mount: try the next directory
      finally: os.unlink(path)
    else: raise RuntimeError(f"cannot load CPU kernel {self.name}: {err}")
    self.fxn = getattr(self._lib, self.name)
    self.fxn.restype = None
    self.work = ctypes.c_longlong.in_dll(self._lib, f"{self.name}_work").value

  def _load_object(self, lib: bytes) -> None:
    import llvmlite.binding as llvm
    from tinygrad_cpu.compiler import llvm_target_machine
    # an engine over an empty module, given the object: MCJIT's RuntimeDyld relocates it into memory (libm calls resolve
    # against this process's symbols); no codegen runs. One engine per kernel owns its code: kept alive with this program
    _load_compiler_runtime()
    self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), llvm_target_machine())
    self._engine.add_object_file(llvm.ObjectFileRef.from_data(lib))
    self._engine.finalize_object()
    self.fxn_addr = self._engine.get_function_address(self.name)
    work_addr = self._engine.get_global_value_address(f"{self.name}_work")
    if not self.fxn_addr or not work_addr: raise RuntimeError(f"LLVM kernel {self.name} (or {self.name}_work) not found in its code")
    self.work = ctypes.c_longlong.from_address(work_addr).value
    self.fxn = None   # typed on first call, when the argument counts are known

  def __call__(self, *bufs: Any, global_size: Any = None, local_size: Any = None, vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    if self.fxn is None:
      self.fxn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(bufs) + [ctypes.c_int] * (len(vals) + 2)))(self.fxn_addr)
    fxn: Any = self.fxn
    args = [ctypes.c_void_p(_addr(b)) for b in bufs] + [ctypes.c_int(v) for v in vals]
    n = self.threads
    st = time.perf_counter()
    if n == 1: fxn(*args, ctypes.c_int(0), ctypes.c_int(1))
    else:
      futs = [_get_pool().submit(fxn, *[*args, ctypes.c_int(i), ctypes.c_int(n)]) for i in range(1, n)]
      fxn(*args, ctypes.c_int(0), ctypes.c_int(n))
      for f in futs: f.result()
    if not wait: return None
    self.last_span = (st, time.perf_counter())   # PROFILE's span of this run (the optional runtime hook, docs/plugins.md)
    return self.last_span[1] - st
