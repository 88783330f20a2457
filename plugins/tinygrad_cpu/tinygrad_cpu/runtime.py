"""CPU runtime: load a compiled kernel (a shared object via dlopen, or a relocatable object via MCJIT's loader) and call
it, split across threads.

Threading: the renderer gives every kernel two trailing int arguments (core_id, core_count) and, when its outermost loop
is a parallel (GLOBAL/LOOP) loop holding every global store, makes core `i` of `n` run iterations [end*i/n, end*(i+1)/n)
of it; it exports `<name>_work`, an estimate of the uops the kernel executes (0: not splittable). The runtime uses
min(CPU_COUNT, work // CPU_THREAD_WORK) threads (at least 1): a small kernel is one call on the calling thread; a split
one is cut into `parts` (a few per thread) that go through the native pool of tinygrad_cpu/graph.py (claimed by the
calling thread and by workers that spin briefly between kernels). ctypes releases the GIL during the call, so the threads
run in parallel.
"""
from __future__ import annotations
import ctypes, _ctypes, functools, heapq, os, struct, sys, threading, time, tempfile
from typing import Any
from tinygrad.plugin_api import getenv

# (NUM_CPU_THREADS is declared in the core, tinygrad.helpers; read here from the environment: a plugin imports the core
# only through tinygrad.plugin_api)
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
CPU_COUNT: int = getenv("CPU_COUNT", getenv("NUM_CPU_THREADS", _CORES))   # threads a CPU kernel is split across (default: NUM_CPU_THREADS)
# A kernel under twice CPU_THREAD_WORK runs on the calling thread, waking nothing. bench/cpu_threads.py measures the
# terms: a hand-off to spinning workers costs ~2-3 us, and LLVM's kernels run ~0.03 ns per estimated uop (clang's ~0.25),
# so 1 << 18 gives each thread >= ~8 us of work, a split that pays its hand-off several times over. Below that a split
# gains microseconds at best, and on a loaded machine a worker preempted mid-chunk stalls the caller for a scheduler
# slice (a dim-128 decoder: 4.5-5.3 ms/token at 1 << 16 against 0.95-1.2 at 1 << 18, load ~10)
CPU_THREAD_WORK: int = getenv("CPU_THREAD_WORK", 1 << 18)   # estimated uops per thread below which a kernel stays on fewer threads
# An eager realize spends ~90-150 us of Python between two kernels (a*b+c, a 512 matmul), and a sleeping worker takes ~40-50 us
# to wake from its futex on this VM: at 100 us the worker was often asleep when the next kernel came (a*b+c over 1M floats,
# back to back: 400-680 us a call against 355-365 us at 300); at 1000 its calls were as fast but with a heavier tail
CPU_SPIN_US: int = getenv("CPU_SPIN_US", 300)   # microseconds an idle pool worker spins for the next kernel before it sleeps
# A split kernel's loop is cut into parts claimed by the caller and the workers as each comes free: a worker that wakes late
# (~50 us from its futex on this VM) or is preempted by another process delays the kernel by one part, where with one part
# per thread the caller waited for that thread's whole half
CPU_PARTS: int = getenv("CPU_PARTS", 4)   # the most parts per thread a split kernel's loop is cut into (each of >= CPU_THREAD_WORK)

@functools.cache
def _so_dirs() -> tuple[str, ...]:
  return tuple(d for d in ("/dev/shm", tempfile.gettempdir()) if os.path.isdir(d) and os.access(d, os.W_OK))

@functools.cache
def _array(t: Any, n: int) -> Any: return t * max(n, 1)   # (ctypes keeps array types weakly: a new type per call otherwise)

def _addr(buf: Any) -> int:
  return buf if isinstance(buf, int) else buf.addr

class NativeCode:
  """A compiled ELF loaded into this process: a shared object (the C compilers') through dlopen, or a relocatable object
  (LLVMCompiler's) linked into memory by MCJIT's loader. `kind` is "c" or "llvm"; `addr(symbol)` a symbol's address.
  The code is unloaded with this object (`permanent`: never, for code that threads may run at any time, the pool's)."""
  def __init__(self, name: str, lib: bytes, permanent: bool = False):
    self.name, self.permanent = name, permanent
    elf_type = int.from_bytes(lib[16:18], "little" if lib[5:6] == b"\x01" else "big") if lib[:4] == b"\x7fELF" and len(lib) >= 64 else 0
    if elf_type == 3: self._load_so(lib)         # ET_DYN
    elif elf_type == 1: self._load_object(lib)   # ET_REL
    else: raise ValueError(f"CPU kernel {name}: binary is neither an ELF shared object nor an ELF relocatable object (starts {lib[:20]!r})")
    self.kind = "c" if elf_type == 3 else "llvm"

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

  def __del__(self, _finalizing: Any = sys.is_finalizing, _dlclose: Any = _ctypes.dlclose) -> None:   # (bound now: module globals are None at exit)
    # a shared object stays mapped until dlclose (ctypes never calls it): each kernel held ~10 mappings for the life of the
    # process, and BEAM with a C compiler (thousands of candidates compiled and dropped) ran into vm.max_map_count
    # (65530), where dlopen and every mmap fail. (At interpreter exit the process unmaps everything anyway.)
    lib = getattr(self, "_lib", None)
    if lib is not None and not self.permanent and not _finalizing():
      del self._lib
      _dlclose(lib._handle)

  def _load_object(self, lib: bytes) -> None:
    # MCJIT's RuntimeDyld relocates the object into memory (libm calls resolve against this process's symbols)
    self._engine = _SharedEngine.load(lib)

  def addr(self, symbol: str, data: bool = False) -> int:
    if hasattr(self, "_engine"):
      a = self._engine.get_global_value_address(symbol) if data else self._engine.get_function_address(symbol)
    else:
      try: a = ctypes.addressof(ctypes.c_char.in_dll(self._lib, symbol))
      except ValueError: a = 0
    if not a: raise RuntimeError(f"CPU code {self.name}: symbol {symbol} not found")
    return a

# The relocation types, by ELF machine, whose value RuntimeDyld computes from the target's address alone: objects with only
# these share an engine. x86-64's GOT-relative types (a position-independent object's) do not: RuntimeDyldELF resolves
# R_X86_64_GOTOFF64 against the first ".got" section of the whole engine, another object's, and a kernel read its
# constants from the wrong place (inf for exp(x+1).sum()). LLVMCompiler emits static large-code-model objects: R_X86_64_64.
_SHAREABLE_RELOCS: dict[int, set[int]] = {62: {1}}   # EM_X86_64: R_X86_64_64

def elf_object_facts(lib: bytes) -> tuple[set[str], bool]:
  """(the global and weak symbols an ELF64 relocatable object defines, whether all its relocations are of a type that
  lets it share an engine: _SHAREABLE_RELOCS)."""
  end = "<" if lib[5:6] == b"\x01" else ">"
  machine, shoff = struct.unpack_from(end + "H", lib, 0x12)[0], struct.unpack_from(end + "Q", lib, 0x28)[0]
  shentsize, shnum = struct.unpack_from(end + "HH", lib, 0x3a)
  secs = [struct.unpack_from(end + "IIQQQQIIQQ", lib, shoff + i * shentsize) for i in range(shnum)]
  names, ok, allowed = set(), machine in _SHAREABLE_RELOCS, _SHAREABLE_RELOCS.get(machine, set())
  for _, typ, _, _, off, size, link, _, _, entsize in secs:
    if typ == 2:   # SHT_SYMTAB
      stroff = secs[link][4]
      for o in range(off, off + size, entsize):
        st_name, st_info, _, st_shndx = struct.unpack_from(end + "IBBH", lib, o)
        if st_info >> 4 in (1, 2) and st_shndx != 0: names.add(lib[stroff + st_name:lib.index(b"\0", stroff + st_name)].decode())
    elif typ in (4, 9):   # SHT_RELA, SHT_REL: r_info's low 32 bits are the type
      ok = ok and all(struct.unpack_from(end + "Q", lib, o + 8)[0] & 0xffffffff in allowed for o in range(off, off + size, entsize))
  return names, ok

class _SharedEngine:
  """An MCJIT engine that several kernels' objects are loaded into, each program keeping it alive.

  An engine costs ~0.5 ms to finalize whatever it holds (it runs the backend's pipeline over its empty module) and ~0.2 ms
  for its TargetMachine, an object added to a finalized one ~20 us: a new process loading ~100 cached kernels spent most
  of 70 ms on the former. One engine takes up to ENGINE_OBJECTS objects whose global symbols (the kernel's function,
  `_work`, `_task`) are not in it yet, since a symbol is looked up by name, and whose relocations are all of the types
  that resolve correctly beside other objects' (elf_object_facts); then the next one starts, and any other object gets
  an engine of its own. An engine's code is freed with the last program that holds it."""
  ENGINE_OBJECTS = 64
  _lock = threading.Lock()
  _current: _SharedEngine | None = None
  def __init__(self) -> None:
    import llvmlite.binding as llvm
    from tinygrad_cpu.compiler import llvm_target_machine
    _load_compiler_runtime()
    self.engine, self.objects = llvm.create_mcjit_compiler(llvm.parse_assembly(""), llvm_target_machine()), 0
    self.symbols: set[str] = set()
  @classmethod
  def load(cls, lib: bytes) -> _SharedEngine:
    import llvmlite.binding as llvm
    syms, shareable = elf_object_facts(lib)
    with cls._lock:
      cur = cls._current
      eng = cur if shareable and cur is not None and cur.objects < cls.ENGINE_OBJECTS and cur.symbols.isdisjoint(syms) else _SharedEngine()
      if shareable: cls._current = None   # (an engine whose load fails may hold a half-added object: the next load starts anew)
      eng.engine.add_object_file(llvm.ObjectFileRef.from_data(lib))
      eng.engine.finalize_object()
      eng.symbols |= syms
      eng.objects += 1
      if shareable: cls._current = eng
    return eng
  def get_function_address(self, name: str) -> int: return self.engine.get_function_address(name)
  def get_global_value_address(self, name: str) -> int: return self.engine.get_global_value_address(name)
  @classmethod
  def _after_fork_in_child(cls) -> None:
    # (the lock may have been held by another thread of the parent; the child's loads start an engine of their own)
    cls._lock, cls._current = threading.Lock(), None
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_SharedEngine._after_fork_in_child)

@functools.cache
def _load_compiler_runtime() -> None:
  # LLVM lowers some casts to calls into the compiler's runtime library (float64 -> float16 is __truncdfhf2, in libgcc_s
  # since GCC 12): MCJIT resolves them against the libraries loaded into its symbol search, and this process may not
  # have libgcc_s loaded; an unresolved call jumps to address 0
  import ctypes.util
  import llvmlite.binding as llvm
  if (name := ctypes.util.find_library("gcc_s")) is not None: llvm.load_library_permanently(name)

@functools.cache
def _part_count(threads: int, most: int, trips: int) -> int:
  """How many parts a loop of `trips` iterations (0: unknown) is cut into for `threads` threads, at most `most` (at least
  `threads`, at most `trips`): part c is iterations [trips*c/n, trips*(c+1)/n), claimed in order by whichever thread
  comes free. The count whose threads finish first when every iteration costs the same (the most parts among equals: a
  late or preempted thread then holds up a smaller part). A fixed 4 parts per thread cut matmul 2048's 18 row chunks into parts of
  2,2,2,3,2,2,2,3: one thread ran 10 of the 18 and the call took ~10% longer than with 9 each."""
  most = max(threads, most)
  if trips <= 0: return most
  hi = min(most, trips)   # (no empty parts)
  return min(range(min(threads, hi), hi + 1), key=lambda n: (_finish(threads, n, trips), -n))

def _finish(threads: int, n: int, trips: int) -> int:
  """When the last of `threads` equally fast threads finishes `trips` unit iterations cut into `n` parts claimed in order."""
  free = [0] * threads
  for c in range(n):
    heapq.heapreplace(free, free[0] + trips * (c + 1) // n - trips * c // n)
  return max(free)

class CPUProgram:
  """A loaded CPU kernel: `CPUProgram(name, lib)(*bufs, vals=(...), wait=False)`; `lib` is an ELF shared object (the C
  compilers') or an ELF relocatable object (LLVMCompiler's)."""
  def __init__(self, name: str, lib: bytes):
    self.name = name
    self.last_span: tuple[float, float] | None = None
    self.code = NativeCode(name, lib)
    self.fxn_addr = self.code.addr(name)
    self.work = ctypes.c_longlong.from_address(self.code.addr(f"{name}_work", data=True)).value
    self.threads = 1 if self.work == 0 else max(1, min(CPU_COUNT, self.work // CPU_THREAD_WORK))
    self.fxn: Any = None   # typed on first call, when the argument counts are known
    self.task_addr = self.code.addr(f"{name}_task") if self.work else 0   # what the pool runs per part (renderer.py)
    self.trips = ctypes.c_longlong.from_address(self.code.addr(f"{name}_trips", data=True)).value if self.work else 0

  @property
  def parts(self) -> int:
    """How many parts the split loop is cut into (up to CPU_PARTS per thread, each of at least CPU_THREAD_WORK); 1: not split."""
    return 1 if self.threads == 1 else _part_count(self.threads, min(CPU_PARTS * self.threads, self.work // CPU_THREAD_WORK), self.trips)

  def __call__(self, *bufs: Any, global_size: Any = None, local_size: Any = None, vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    n = self.parts
    st = time.perf_counter()
    if n == 1:
      if self.fxn is None:
        self.fxn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(bufs) + [ctypes.c_int] * (len(vals) + 2)))(self.fxn_addr)
      self.fxn(*[_addr(b) for b in bufs], *vals, 0, 1)
    else:   # the pool's parallel-for runs parts here and on its workers, each through the kernel's task
      from tinygrad_cpu.graph import pool
      a, v = _array(ctypes.c_void_p, len(bufs))(*[_addr(b) for b in bufs]), _array(ctypes.c_int, len(vals))(*vals)
      pool(self.code.kind).run(self.task_addr, _array(ctypes.c_void_p, 2)(ctypes.addressof(a), ctypes.addressof(v)), n)
    if not wait: return None
    self.last_span = (st, time.perf_counter())   # PROFILE's span of this run (the optional runtime hook, docs/plugins.md)
    return self.last_span[1] - st
