"""Load a compiled kernel with ctypes and run it on one or more threads: the arguments are the buffers' host addresses,
the variables (C ints), then core_id and core_count (the renderer's has_threads parameters, docs/plugins.md "Threads")."""
from __future__ import annotations
import ctypes, functools, os, tempfile, time, threading
from concurrent.futures import ThreadPoolExecutor
from tinygrad.plugin_api import ProgramSpec

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
WORK_PER_THREAD = 1 << 16   # estimated uops (ProgramSpec.thread_work) under which another thread costs more than it saves

# dlopen returns an already loaded library when a new file has the same inode as a loaded one, and ctypes never unloads:
# so kernel files stay, under one directory removed at exit, and no inode is reused while this process runs
_dir: tempfile.TemporaryDirectory | None = None
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()

def _threads() -> ThreadPoolExecutor:
  global _pool
  with _lock:
    if _pool is None: _pool = ThreadPoolExecutor(max(CORES - 1, 1), thread_name_prefix="tinygrad_template")
  return _pool

def _forget_pool() -> None:   # a fork child has the pool object but none of its threads: it starts a new one
  global _pool, _lock
  _pool, _lock = None, threading.Lock()
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_pool)

class TemplateProgram:
  def __init__(self, name: str, lib: bytes, spec: ProgramSpec | None = None):
    global _dir
    if _dir is None: _dir = tempfile.TemporaryDirectory(prefix="tinygrad_template_")
    fd, path = tempfile.mkstemp(suffix=".so", dir=_dir.name)
    with os.fdopen(fd, "wb") as f: f.write(lib)
    self.fxn = getattr(ctypes.CDLL(path), name)
    self.fxn.restype = None
    # the thread count, chosen once per kernel from its work estimate (0: its loop does not split, so one thread)
    self.threads = max(1, min(CORES, (spec.thread_work if spec is not None else 0) // WORK_PER_THREAD))
    self.last_span: tuple[float, float] | None = None
  def __call__(self, *bufs, global_size=None, local_size=None, vals=(), wait=False) -> float | None:
    args = [ctypes.c_void_p(ctypes.addressof(b)) for b in bufs] + [ctypes.c_int(v) for v in vals]
    n, st = self.threads, time.perf_counter()
    # thread 0 is this one, the others run on the pool; ctypes releases the GIL during a call, so they run in parallel
    others = [_threads().submit(functools.partial(self.fxn, *args, ctypes.c_int(i), ctypes.c_int(n))) for i in range(1, n)]
    self.fxn(*args, ctypes.c_int(0), ctypes.c_int(n))
    for f in others: f.result()
    if not wait: return None
    self.last_span = (st, time.perf_counter())   # optional: PROFILE=1 draws the kernel with this span
    return self.last_span[1] - st                # seconds: DEBUG=2 and BEAM read it
