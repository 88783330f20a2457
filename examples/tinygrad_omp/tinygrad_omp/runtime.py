"""Load a compiled kernel with ctypes and call it once: OpenMP runs its parallel loop on OMP_NUM_THREADS threads."""
import ctypes, os, tempfile, time

# dlopen returns an already loaded library when a new file has the same inode as a loaded one, and ctypes never unloads:
# so kernel files stay, under one directory removed at exit, and no inode is reused while this process runs
_dir: tempfile.TemporaryDirectory | None = None

class OMPProgram:
  def __init__(self, name: str, lib: bytes):
    global _dir
    if _dir is None: _dir = tempfile.TemporaryDirectory(prefix="tinygrad_omp_")
    fd, path = tempfile.mkstemp(suffix=".so", dir=_dir.name)
    with os.fdopen(fd, "wb") as f: f.write(lib)
    self.fxn = getattr(ctypes.CDLL(path), name)
    self.fxn.restype = None
    self.last_span: tuple[float, float] | None = None
  def __call__(self, *bufs, global_size=None, local_size=None, vals=(), wait=False) -> float | None:
    st = time.perf_counter()
    self.fxn(*[ctypes.c_void_p(ctypes.addressof(b)) for b in bufs], *[ctypes.c_int(v) for v in vals])
    if not wait: return None
    self.last_span = (st, time.perf_counter())
    return self.last_span[1] - st
