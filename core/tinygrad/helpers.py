"""Small shared utilities: environment flags (ContextVar/Context), DEBUG, and generic helpers."""
from __future__ import annotations
# only what `import tinygrad` needs: the rest (urllib for fetch, tempfile, gzip, hashlib, tqdm) is imported where used, so a
# first result does not load http.client or ssl (tests/core/test_import_cost.py keeps it so)
import os, sys, collections, functools, contextlib, time, math, itertools, re, threading
from typing import Any, Iterable, Iterator, TypeVar, Callable, Sequence, ClassVar, TYPE_CHECKING
if TYPE_CHECKING: import pathlib

T = TypeVar("T")

@functools.cache
def getenv(key: str, default: Any = 0) -> Any:
  """Read an environment variable, converted to the type of `default` (int or str)."""
  val = os.environ.get(key)
  if val is None: return default
  return type(default)(val)

def env_switch(var: str | None) -> int | None:
  """The one reading of an on/off switch read from the environment when used (CPU_LLVM, TINYGRAD_PLUGIN_AUTOLOAD):
  None when unset or empty, 0 for 0/false/no/off (any case), else 1."""
  v = os.environ.get(var, "").strip() if var else ""
  if not v: return None
  return 0 if v.lower() in ("0", "false", "no", "off") else 1

_K = TypeVar("_K")
_V = TypeVar("_V")
class WatchedDict(dict[_K, _V]):
  """A cache other caches are derived from: dropping any of its entries (del, pop, popitem, clear) empties each of
  `derived`, so nothing derived outlives what it was derived from. Adding and reading entries cost what a dict's do."""
  def __init__(self) -> None:
    super().__init__()
    self.derived: list[dict] = []
  def _drop(self) -> None:
    for d in self.derived: d.clear()
  def __delitem__(self, k: _K) -> None:
    self._drop()
    super().__delitem__(k)
  def pop(self, *args: Any) -> Any:
    self._drop()
    return super().pop(*args)
  def popitem(self) -> tuple[_K, _V]:
    self._drop()
    return super().popitem()
  def clear(self) -> None:
    self._drop()
    super().clear()

class ContextVar:
  """A flag read once from the environment (its default declared here, once) and overridable with Context(**flags)."""
  _cache: dict[str, ContextVar] = {}
  value: Any
  key: str
  def __init__(self, key: str, default: Any):
    if key in ContextVar._cache: raise RuntimeError(f"ContextVar {key} declared twice")
    self.key, self.default = key, default
    self.value = self.initial = getenv(key, default)
    ContextVar._cache[key] = self
  def __setattr__(self, name: str, v: Any) -> None:
    object.__setattr__(self, name, v)
    if name == "value": ContextVar.version += 1   # (reads stay a plain attribute; Context and `X.value = v` both count)
  version = 0   # bumped by every flag change: what is derived from all the flags (graphcache's key) is found again only then
  def __bool__(self) -> bool: return bool(self.value)
  def __ge__(self, x: int) -> bool: return self.value >= x
  def __gt__(self, x: int) -> bool: return self.value > x
  def __lt__(self, x: int) -> bool: return self.value < x
  def __le__(self, x: int) -> bool: return self.value <= x
  def __repr__(self) -> str: return f"ContextVar({self.key}={self.value!r})"
  def tolist(self, obj: Any = None) -> list:
    """A comma-separated string flag as a list of its names, or of `obj`'s attributes of those names (`EMULATED_DTYPES.tolist(dtypes)`)."""
    if not isinstance(self.value, str): raise TypeError(f"{self.key}={self.value!r} is not a comma-separated list of names")
    names = [x.strip() for x in self.value.split(",") if x.strip()]
    if obj is None: return names
    if unknown := [x for x in names if not hasattr(obj, x)]: raise ValueError(f"{self.key}: unknown name(s) {', '.join(unknown)} of {getattr(obj, '__name__', obj)}")
    return [getattr(obj, x) for x in names]

class Context(contextlib.ContextDecorator):
  """Temporarily set flags: `with Context(DEBUG=2, SPEC=1): ...`. Unknown names are an error."""
  def __init__(self, **kwargs: Any): self.kwargs = kwargs
  def __enter__(self) -> None:
    unknown = [k for k in self.kwargs if k not in ContextVar._cache]
    if unknown: raise KeyError(f"unknown context variable(s) {unknown}; known: {sorted(ContextVar._cache)}")
    self.old = {k: ContextVar._cache[k].value for k in self.kwargs}
    for k, v in self.kwargs.items(): ContextVar._cache[k].value = v
  def __exit__(self, *args: Any) -> None:
    for k, v in self.old.items(): ContextVar._cache[k].value = v

# every flag of the core, declared once with its default
DEBUG = ContextVar("DEBUG", 0)               # 1: devices opened, kernels scheduled, 2: a timed line per kernel, 3: failed BEAM candidates, 4: source, 5: linearized uops
SPEC = ContextVar("SPEC", 0)                 # type_verify every graph against its spec
EGRAPH = ContextVar("EGRAPH", 0)             # symbolic passes via equality saturation
EGRAPH_BUDGET = ContextVar("EGRAPH_BUDGET", 2000)  # max e-nodes before saturation stops
CACHELEVEL = ContextVar("CACHELEVEL", 2)     # on-disk caches: 0 none, 1 compiled binaries, 2 also rendered programs and schedules (codegen and scheduling skipped)
CACHEDB_MAX_BYTES = ContextVar("CACHEDB_MAX_BYTES", 1 << 30)  # the disk cache's values are kept under this size: least recently used rows go first
CACHEDB_MAX_DAYS = ContextVar("CACHEDB_MAX_DAYS", 30)  # disk cache rows unused for this many days are dropped (0: kept until the size cap)
NOOPT = ContextVar("NOOPT", 0)               # disable kernel optimizations
BEAM = ContextVar("BEAM", 0)                 # beam search width
JITBEAM = ContextVar("JITBEAM", -1)          # beam search width for the kernels a TinyJit captures (-1: BEAM's), as public tinygrad
BEAM_TIMEOUT = ContextVar("BEAM_TIMEOUT", 60)  # seconds one kernel's beam search may take (the best so far wins)
BEAM_MAX_CANDIDATES = ContextVar("BEAM_MAX_CANDIDATES", 64)  # candidates timed per beam step
BEAM_THREADS = ContextVar("BEAM_THREADS", 2)  # threads compiling beam candidates in parallel
CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1   # cores this process may use
# public tinygrad's CPU thread count (the CPU plugin's CPU_COUNT defaults to it; its examples/mlperf/dataloader.py imports it)
NUM_CPU_THREADS = ContextVar("NUM_CPU_THREADS", CPUS)
# threads compiling a schedule's new kernels while the next ones are rendered (compilers marked parallel_safe); 0: one
# after another on the calling thread
PARALLEL_COMPILE = ContextVar("PARALLEL_COMPILE", min(8, CPUS))
# a schedule with at least this many new kernels renders its back half in a forked child on another core (engine/forkgen.py); 0: off
PARALLEL_CODEGEN = ContextVar("PARALLEL_CODEGEN", 4)
IGNORE_BEAM_CACHE = ContextVar("IGNORE_BEAM_CACHE", 0)  # 1: search again even when the disk cache has this kernel's result
SPLIT_REDUCEOP = ContextVar("SPLIT_REDUCEOP", 1)   # a big reduce to few outputs runs as two kernels (the first one parallel)
MATMUL_PACK = ContextVar("MATMUL_PACK", 1)   # a matmul whose right operand is big is preceded by a copy into panels (renderer.matmul_pack)
MATMUL_PACK_BYTES = ContextVar("MATMUL_PACK_BYTES", 1 << 20)   # the right operand's size above which it is packed (half of it where the renderer's matmul tile is one cache line wide, as AVX2's; under 32 rows it is read in place, 0: every operand of 16 rows or more is packed)
CONV_FLAT = ContextVar("CONV_FLAT", 1)   # 2-d stride-1 convs run over the flattened padded image (one long vectorized pixel axis); 0: per-row form
CONV_PAD_COPY = ContextVar("CONV_PAD_COPY", 16)   # a padded conv whose out channels per group x kernel taps reach this reads a padded copy of its input (0: always)
CONV_S2D = ContextVar("CONV_S2D", 1)   # strided convs (dilation 1) run as stride-1 convs over the input's phases (space-to-depth); 0: strided loads
CONV_DW_VEC = ContextVar("CONV_DW_VEC", 4)   # a conv's weight gradient with a channel axis this wide runs with it vectorized (channels-last copy); 0: as a conv over the batch
USE_TC = ContextVar("USE_TC", 1)             # the heuristics map matmuls onto the renderer's tensor cores
OPTS = ContextVar("OPTS", "")                # forced actions, "LOCAL:0:16,GROUP:0:8": every kernel they fit gets them (tests)
RING = ContextVar("RING", 1)                 # all-reduce over devices: 0 naive, 1 a ring for big tensors over >2 devices, 2 always a ring
RING_BYTES = ContextVar("RING_BYTES", 256_000)  # the partial's size from which RING=1 uses the ring
ALL2ALL = ContextVar("ALL2ALL", 0)           # all-reduce as all-to-all (each device reduces one chunk, then sends it to all): 1 for big tensors over >2 devices, 2 always
ALLREDUCE_CAST = ContextVar("ALLREDUCE_CAST", 0)  # 1: a float sum of half/bfloat16 values all-reduces its partial sums in that narrow dtype (half the traffic, rounded partials; public tinygrad's default is 1)
SCACHE = ContextVar("SCACHE", 1)             # 0: schedule every graph afresh (no schedule cache) and lower every kernel
EMULATE = ContextVar("EMULATE", "")          # PYTHON device mimics NV/AMD/METAL abilities
TRANSCENDENTAL = ContextVar("TRANSCENDENTAL", 1)   # 2: exp2/log2/sin always from the core's decompositions (codegen/decompositions.py), not the device's math library; 1: only where the renderer lacks them
EMULATED_DTYPES = ContextVar("EMULATED_DTYPES", "")   # "fp8e4m3,half": dtypes computed in the core's software form even where the renderer has them (fp8: the byte/float32 lowering; others have one form here)
CAPTURING = ContextVar("CAPTURING", 1)       # TinyJit may capture; `with Context(CAPTURING=0):` inside a jitted function runs its kernels in that call only (they are left out of the capture and replays skip them), as in public tinygrad
JIT = ContextVar("JIT", 1)                   # 0: TinyJit runs the function every call (no capture, no replay); 2: replays kernel by kernel (no graph runners)
NO_MEMORY_PLANNER = ContextVar("NO_MEMORY_PLANNER", 0)   # 1: no buffer reuse, neither within one realize nor across a TinyJit capture's kernels (public tinygrad's switch)
DEFAULT_FLOAT = ContextVar("DEFAULT_FLOAT", "float32")   # dtypes.default_float: the dtype of Python floats and float results of int ops ("half", "float16" ...)
DEFAULT_INT = ContextVar("DEFAULT_INT", "int32")   # dtypes.default_int: the dtype of Python ints that fit it
TRAINING = ContextVar("TRAINING", 0)         # Tensor.training: Dropout and BatchNorm's batch statistics (Tensor.train() sets it)
WINO = ContextVar("WINO", 0)                 # Winograd convolutions (public tinygrad's switch; accepted, no winograd path yet)
OPTIM_DTYPE = ContextVar("OPTIM_DTYPE", "float32")   # optimizer state (momentum, Adam's m and v) dtype, as public tinygrad; a float64 parameter's stays float64
TRACK_MATCH_STATS = ContextVar("TRACK_MATCH_STATS", 0)  # public tinygrad's rewrite-statistics switch (examples/llama.py sets it in a Context); accepted, no statistics kept (VIZ=1 records the rewrites)
FUSE_OPTIM = ContextVar("FUSE_OPTIM", 0)     # public tinygrad's switch to update all parameters as one flat buffer (fewer kernels); accepted, same result: the update here is one schedule already
USE_ATOMICS = ContextVar("USE_ATOMICS", 0)   # public tinygrad's switch to run Embedding's backward as an atomic scatter-add (its mlperf LLMs set it); accepted, same result
class _DevVar(ContextVar):
  """DEV: the default device as a string ("NV", "CPU:LLVM", "NV:1:PTX"; read when Device.DEFAULT is first chosen). Its
  parts are attributes, as on public tinygrad's DEV: `.device` ("NV"), `.renderer` (the compiler pair asked for, "PTX",
  or ""), `.index` (1), `.interface` and `.arch` ("": this project selects neither through DEV)."""
  def _parts(self) -> list[str]: return str(self.value).strip().split(":") if str(self.value).strip() else [""]
  @property
  def device(self) -> str: return self._parts()[0].upper()
  @property
  def index(self) -> int:
    rest = self._parts()[1:]
    return int(rest[0]) if rest and rest[0].isdigit() else 0
  @property
  def renderer(self) -> str:
    rest = [r for r in self._parts()[1:] if not r.isdigit()]
    return rest[0].upper() if rest else ""
  interface = arch = ""
DEV = _DevVar("DEV", "")                     # the default device, "NV", "CPU:LLVM", "NV:1" (read when Device.DEFAULT is first chosen)
DISABLE_HTTP_CACHE = ContextVar("DISABLE_HTTP_CACHE", 0)  # 1: fetch downloads again even when the file is in the cache
OSX, WIN = sys.platform == "darwin", sys.platform == "win32"
CI = os.getenv("CI", "") != ""               # running under continuous integration (public tinygrad's flag, read by scripts)
# 1: tensor indices (getitem, gather, one_hot, Embedding, the class labels of cross_entropy, nll_loss and
# sparse_categorical_crossentropy but their ignore_index) are checked against the dimension size and an out-of-range one
# raises IndexError; this realizes the index tensor (a device sync). Off (default, as public tinygrad): out-of-range reads give 0
CHECK_OOB = ContextVar("CHECK_OOB", 0)
# 1: each walk over the live tensors that may hold a graph (tensor.lazy_tensors, an index kept as they are rebound), and
# each over those with an implicit gradient (tensor.grad_holders), also walks every live tensor and raises if the index
# missed one (the test suite sets it: a miss is a silently stale value, or an implicit gradient computed early)
CHECK_LAZY_INDEX = ContextVar("CHECK_LAZY_INDEX", 0)
# seconds a tinygrad.distributed collective may wait for the other ranks before it aborts the job (a rank died or hangs)
DIST_TIMEOUT = ContextVar("TINYGRAD_DIST_TIMEOUT", 300.0)
# VIZ=1 records every rewrite pass and kernel (tinygrad.viz) and serves the record at exit; PROFILE=1 writes a Chrome
# trace-event timeline of schedule, compile, run and copy events (tinygrad.viz.profile). Both are read at import.
VIZ = ContextVar("VIZ", 0)                   # 1: record every rewrite pass and kernel, and serve the record as a page at exit
VIZ_PORT = ContextVar("VIZ_PORT", 8000)      # where VIZ=1 serves its page at exit (the next free port when taken)
VIZ_MAX_STEPS = ContextVar("VIZ_MAX_STEPS", 20000)  # rewrite steps a VIZ record keeps; later ones are counted, not kept
PROFILE = ContextVar("PROFILE", 0)           # 1: write a Chrome trace-event timeline of schedule, compile, run and copy events
PROFILE_PATH = ContextVar("PROFILE_PATH", "")  # where PROFILE=1 writes its trace (default: a new file in the temp dir)

# ---- small generic helpers ----
def prod(x: Iterable[Any], start: Any = 1) -> Any: return functools.reduce(lambda a, b: a*b, x, start)
def dedup(x: Iterable[T]) -> list[T]: return list(dict.fromkeys(x))
def argfix(*x: Any) -> tuple:
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arg {x}")
    return tuple(x[0])
  return x
def argsort(x: Sequence[Any]) -> list[int]: return sorted(range(len(x)), key=x.__getitem__)
def all_same(items: Sequence[Any]) -> bool: return all(x == items[0] for x in items)
def all_int(t: Iterable[Any]) -> bool: return all(isinstance(s, int) for s in t)
def flatten(l: Iterable[Iterable[T]]) -> list[T]: return [item for sublist in l for item in sublist]
def make_tuple(x: int | Sequence[int], cnt: int) -> tuple[int, ...]: return (x,)*cnt if isinstance(x, int) else tuple(x)
def round_up(num: int, amt: int) -> int: return (num+amt-1)//amt*amt
def round_down(num: int, amt: int) -> int: return num//amt*amt
def next_power2(x: int) -> int: return 1 if x <= 1 else 1 << (x - 1).bit_length()
def to_tuple(x: Any) -> tuple: return x if isinstance(x, tuple) else (x,)
def pluralize(word: str, cnt: int) -> str: return f"{cnt} {word}" + ("" if cnt == 1 else "s")
def strides_for_shape(shape: Sequence[int]) -> tuple[int, ...]:
  """Contiguous (row-major) element strides of `shape`, 0 along a dimension of size 1 (public tinygrad's canonical form)."""
  st: list[int] = []
  acc = 1
  for d in reversed(shape): st, acc = [0 if d == 1 else acc] + st, acc * d
  return tuple(st)
def time_to_str(t: float, w: int = 8) -> str:
  """Seconds as `w`-wide text in s, ms or us, whichever keeps the number above 10 (public tinygrad's DEBUG=2 times)."""
  return f"{t:{w}.2f}s " if t > 10 else f"{t*1e3:{w}.2f}ms" if t > 10e-3 else f"{t*1e6:{w}.2f}us"
def ceildiv(num: Any, amt: Any) -> Any:
  """ceil(num / amt) for amt > 0; num or amt may be a symbolic size (a UOp)."""
  if isinstance(num, int) and isinstance(amt, int): return -(num//-amt)
  # a UOp's // truncates toward zero (C), so -(num//-amt) was floor(num/amt) for num >= 0 (ceildiv(n, 2) at n=3 gave 1).
  # num is shifted by a multiple of amt to be >= 0 over its whole range, where truncation is floor
  k = -(min(0, int(num.vmin)) // amt) if isinstance(amt, int) and not isinstance(num, int) else 0
  return (num + (k * amt + amt - 1)) // amt - k
def merge_dicts(ds: Iterable[dict]) -> dict:
  out: dict = {}
  for d in ds:
    for k, v in d.items():
      if k in out and out[k] != v: raise RuntimeError(f"cannot merge, {k} has {out[k]} != {v}")
      out[k] = v
  return out
def partition(itr: Iterable[T], fxn: Callable[[T], bool]) -> tuple[list[T], list[T]]:
  a: list[T] = []
  b: list[T] = []
  for s in itr: (a if fxn(s) else b).append(s)
  return a, b
def unwrap(x: T | None) -> T:
  if x is None: raise ValueError("unexpected None")
  return x
_COLORS = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white']
_NO_COLOR = os.environ.get("NO_COLOR", "") not in ("", "0")   # set (not 0): no ANSI colours in output, even on a terminal (no-color.org; public tinygrad's)
def colored(st: str, color: str | None = None, background: bool = False) -> str:
  """`st` in an ANSI colour (one of _COLORS; upper case: the bright variant) when stdout is a terminal and NO_COLOR is not set."""
  if color is None or _NO_COLOR or not os.isatty(1): return st
  if color.lower() not in _COLORS: raise ValueError(f"unknown color {color!r}; valid: {_COLORS} (upper case for bright)")
  return f"\u001b[{10*background+60*(color.upper() == color)+30+_COLORS.index(color.lower())}m{st}\u001b[0m"
def ansistrip(s: str) -> str: return re.sub(r"\x1b\[(K|.*?m)", "", s)
def ansilen(s: str) -> int:
  """The printed width of `s`: its length without ANSI escape sequences."""
  return len(ansistrip(s))
def get_child(obj: Any, key: str) -> Any:
  """`obj` followed down the dotted path `key`: attributes, dict keys, and list/tuple indices ("layers.0.attn.wq")."""
  for k in key.split("."):
    if k.isnumeric() and isinstance(obj, (list, tuple)): obj = obj[int(k)]
    elif isinstance(obj, dict): obj = obj[k]
    else: obj = getattr(obj, k)
  return obj
def to_function_name(s: str) -> str: return "".join(c if c.isalnum() or c == "_" else f"{ord(c):02X}" for c in s)
def pairwise(x: Iterable[T]) -> Iterator[tuple[T, T]]: return itertools.pairwise(x)
def cdiv(x: int, y: int) -> int:
  """C's integer division: the quotient rounded toward zero (0 for y == 0, as public tinygrad's)."""
  return abs(x)//abs(y)*(1, -1)[(x < 0) ^ (y < 0)] if y != 0 else 0
def get_single_element(x: Sequence[T]) -> T:
  """The one element of `x`; ValueError naming the length when it has none or several."""
  if len(x) != 1: raise ValueError(f"expected one element, got {len(x)}: {list(x)[:4]!r}")
  return x[0]
def temp(x: str, append_user: bool = False) -> str:
  """The path `x` in the system's temp directory (with `.<user>` appended when append_user), as a POSIX string."""
  import getpass, pathlib, tempfile
  return (pathlib.Path(tempfile.gettempdir()) / (f"{x}.{getpass.getuser()}" if append_user else x)).as_posix()
# raw memory as bytes (programs hand tinygrad a pointer from another library: from_blob, a driver's mapping)
def to_mv(ptr: int, sz: int) -> memoryview:
  """`sz` bytes at address `ptr` as a writable memoryview of unsigned bytes (no copy: the caller keeps the memory alive)."""
  import ctypes
  return memoryview((ctypes.c_uint8 * sz).from_address(ptr)).cast("B")
def mv_address(mv: memoryview) -> int:
  """The address of a writable memoryview's first byte."""
  import ctypes
  return ctypes.addressof(ctypes.c_char.from_buffer(mv))
def flat_mv(mv: memoryview) -> memoryview:
  """`mv` as one flat run of unsigned bytes."""
  return mv if len(mv) == 0 else mv.cast("B", shape=(mv.nbytes,))
def diskcache(func: Callable[..., T]) -> Callable[..., T]:
  """Memoise `func` in the on-disk cache (tinygrad.diskcache), keyed by its module, name, own code (an edited body computes
  afresh; the functions it calls are not covered) and arguments. Arguments and the value must be plain data (None, bool,
  int, float, str, bytes, lists/tuples/dicts of them), kept with their types: a hit is the value computed for arguments
  of the same types (f((1, 2)) and f([1, 2]) are two entries) and of the same type (a tuple stays a tuple). Nothing read
  back can run code, so unlike public tinygrad's (a pickle) other values raise TypeError."""
  from tinygrad.diskcache import diskcache_get, diskcache_put, typed, untyped, code_digest
  # (by the name alone, as public tinygrad's, two modules' `load(path)` read each other's values; the module's name and the
  # qualified name are encoded unambiguously: '_' doubled, '.' and other characters as _<hex>_)
  name = "".join(c if c.isalnum() and c.isascii() else "__" if c == "_" else f"_{ord(c):x}_" for c in f"{func.__module__}.{func.__qualname__}")
  table, version = f"cache_{name}", code_digest(func)
  @functools.wraps(func)
  def wrapper(*args: Any, **kwargs: Any) -> T:
    key = ["typed", typed(args, True), typed(kwargs, True)]
    if isinstance(hit := diskcache_get(table, key, version), bytes): return hit  # type: ignore[return-value]
    if hit is not None:
      try: return untyped(hit)
      except (ValueError, TypeError, KeyError, IndexError): pass   # not a row this wrapper wrote: a miss
    ret = func(*args, **kwargs)
    diskcache_put(table, key, ret if type(ret) is bytes else typed(ret, False), version)  # type: ignore[arg-type]
    return ret
  return wrapper
# the cache's own functions, at public tinygrad's import path (tinygrad.diskcache holds them: imported on the first call)
def diskcache_get(table: str, key: Any, version: str = "", device: str = "") -> Any:
  """The value `diskcache_put` stored under `key` in `table`, or None (see tinygrad.diskcache.diskcache_get)."""
  from tinygrad.diskcache import diskcache_get as get
  return get(table, key, version, device)
def diskcache_put(table: str, key: Any, value: Any, version: str = "", device: str = "") -> Any:
  """Store `value` (bytes or JSON data) under `key` (plain data) in `table` and return it (see tinygrad.diskcache.diskcache_put)."""
  from tinygrad.diskcache import diskcache_put as put
  return put(table, key, value, version, device)
def diskcache_clear() -> None:
  """Empty the on-disk cache (every table: compiled programs, BEAM results, memoised values)."""
  from tinygrad.diskcache import diskcache_clear as clear
  clear()
# set by tinygrad.viz.profile while a Profiler records: where profile_marker's markers go
marker_sink: Callable[[str, str], None] | None = None
def profile_marker(name: str, color: str = "gray") -> None:
  """An instant marker named `name` on the PROFILE=1 timeline (tinygrad.viz.profile); nothing when not profiling."""
  if marker_sink is not None: marker_sink(name, color)

# (the leaf locks are unlocked afresh in a forked child: see ENGINE_LOCK's fork handling below)
_leaf_locks: list[Any] = []
def leaf_lock() -> Any:
  """A lock held only briefly around plain state updates (never across a fork): unlocked afresh in a forked child.
  Re-entrant: a signal handler, a __del__ or a weakref callback (run by a gc pass any allocation may start) can make a
  Tensor on the thread that holds it, which a plain lock deadlocked."""
  lock = threading.RLock()
  _leaf_locks.append(lock)
  return lock
import gc as _gc, threading as _threading
GC_PROMOTE = 50_000   # young objects (net of those freed) past which a pause's survivors go old unscanned (~10 ms a young scan)
_gc_lock, _gc_depth = leaf_lock(), [0, False]   # [nesting depth, whether the outermost pause turned collection off]
class gc_paused:
  """No cyclic garbage collection inside the block (nested and thread-safe: the outermost block restores it). Scheduling
  and codegen allocate hundreds of thousands of short-lived UOps, freed by reference counting; the collector still scans
  every live object each time its allocation counts trip, which was ~17% of ViT-Ti's codegen (6 full collections of
  ~400k objects). What the block leaves alive (kernels, programs, caches: ~230k objects after ViT-Ti's cold call) goes
  to the oldest generation unscanned (freeze + unfreeze), where two young collections would have moved it: the first
  allocation after the block scanned it all, 75-120 ms at the end of that call. Only past GC_PROMOTE new objects (a new
  model's kernels): the young objects a steady loop's realize leaves (its own and the caller's) stay young, so cyclic
  garbage among them is found as soon as before, not at the next full collection. Skipped when the user has frozen
  objects (unfreeze would release theirs)."""
  # (a class, not a @contextmanager generator: it wraps every realize, and the generator's protocol cost ~3 us of a tiny one)
  __slots__ = ()
  def __enter__(self) -> None:
    with _gc_lock:
      if _gc_depth[0] == 0: _gc_depth[1] = _gc.isenabled()
      _gc_depth[0] += 1
      _gc.disable()
  def __exit__(self, *exc: Any) -> None:
    with _gc_lock:
      _gc_depth[0] -= 1
      if _gc_depth[0] == 0 and _gc_depth[1]:
        if _gc.get_count()[0] > GC_PROMOTE and _gc.get_freeze_count() == 0:
          _gc.freeze()
          _gc.unfreeze()
        _gc.enable()

class Timing(contextlib.ContextDecorator):
  """Print the block's wall time in ms after `prefix`; `on_exit(ns)` returns a string appended to the line."""
  def __init__(self, prefix: str = "", on_exit: Callable[[int], str] | None = None, enabled: bool = True):
    self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled
  def __enter__(self) -> Timing:
    self.st = time.perf_counter_ns()
    return self
  def __exit__(self, *exc: Any) -> None:
    self.et = time.perf_counter_ns() - self.st
    if self.enabled: print(f"{self.prefix}{self.et*1e-6:6.2f} ms" + (self.on_exit(self.et) if self.on_exit else ""))

class Profiling(contextlib.ContextDecorator):
  """cProfile the block, then print the `frac` most expensive functions by `sort` (cumtime) with times in ms."""
  def __init__(self, enabled: bool = True, sort: str = "cumtime", frac: float = 0.2, fn: str | None = None, ts: int = 1):
    self.enabled, self.sort, self.frac, self.fn, self.time_scale = enabled, sort, frac, fn, 1e3/ts
  def __enter__(self) -> Profiling:
    import cProfile
    self.pr = cProfile.Profile()
    if self.enabled: self.pr.enable()
    return self
  def __exit__(self, *exc: Any) -> None:
    if not self.enabled: return
    self.pr.disable()
    if self.fn: self.pr.dump_stats(self.fn)
    import pstats
    stats = pstats.Stats(self.pr).strip_dirs().sort_stats(self.sort)
    for fcn in stats.fcn_list[:max(1, int(len(stats.fcn_list)*self.frac))]:  # type: ignore[attr-defined]
      _, ncalls, tottime, cumtime, _ = stats.stats[fcn]  # type: ignore[attr-defined]
      print(f"n:{ncalls:8d}  tm:{tottime*self.time_scale:7.2f}ms  tot:{cumtime*self.time_scale:7.2f}ms  {fcn[2]} {fcn[0]}:{fcn[1]}")

class CapturedStderr:
  """`with CapturedStderr() as c:` sends file descriptor 2 to a temp file and restores it: a C library's warnings (the
  Vulkan loader's "XDG_RUNTIME_DIR is invalid", driver banners) printed while a device is probed or opened go to `c.text`
  instead of the user's terminal, so a caller can show them where they explain a failure."""
  def __init__(self): self.text = ""
  def __enter__(self) -> CapturedStderr:
    import tempfile
    sys.stderr.flush()
    self._tmp, self._saved = tempfile.TemporaryFile(mode="w+b"), os.dup(2)
    os.dup2(self._tmp.fileno(), 2)
    return self
  def __exit__(self, *exc: Any) -> None:
    sys.stderr.flush()
    os.dup2(self._saved, 2)
    os.close(self._saved)
    self._tmp.seek(0)
    self.text = self._tmp.read().decode(errors="replace")
    self._tmp.close()
  def lines(self) -> list[str]: return list(dict.fromkeys(ln.strip() for ln in self.text.splitlines() if ln.strip()))

# Tensors may be used from several threads (docs/guide.md, "Threads"): scheduling, codegen, running kernels, reading data
# back, allocating a tensor's buffer, opening a device and TinyJit calls hold this one re-entrant lock, one thread at a time
ENGINE_LOCK = threading.RLock()
_F = TypeVar("_F", bound=Callable[..., Any])

# fork(): a lock another thread holds stays held in the child, where that thread does not exist, so the child's first
# realize (or new Tensor) waited forever. A fork waits (up to FORK_WAIT_S) for another thread's engine work to end, so the
# child starts from whole engine state, and the leaf locks (held only around small state updates, never across a fork) are
# made afresh in the child. A wait that runs out (a thread holding the engine waits for the forking one) forks anyway,
# with a warning in the child: its engine lock is made afresh too, and the other thread's half-done work is the child's.
FORK_WAIT_S = 10.0
_fork_held: dict[int, bool] = {}   # per forking thread: whether its wait got the engine lock (absent: not waited yet)
def engine_before_fork() -> None:
  """Take ENGINE_LOCK for a fork (once per fork). A module whose own before-fork hook takes a lock that a realize takes
  inside the engine's calls this first: hooks registered later run earlier, and the other order deadlocks with a realize."""
  if (me := threading.get_ident()) not in _fork_held: _fork_held[me] = ENGINE_LOCK.acquire(timeout=FORK_WAIT_S)
def _engine_after_fork_in_parent() -> None:
  if _fork_held.pop(threading.get_ident(), False): ENGINE_LOCK.release()
def _engine_after_fork_in_child() -> None:
  for lock in _leaf_locks: lock._at_fork_reinit()
  held = _fork_held.pop(threading.get_ident(), False)
  _fork_held.clear()   # (other threads' forks in flight: those threads are not in this child)
  if held: ENGINE_LOCK.release()   # (the forking thread's own hold, if it had one, stays)
  else:
    ENGINE_LOCK._at_fork_reinit()  # type: ignore[attr-defined]
    print(f"tinygrad: fork() waited {FORK_WAIT_S} s for another thread's realize; the child may hold its half-done state", file=sys.stderr)
if hasattr(os, "register_at_fork"):
  os.register_at_fork(before=engine_before_fork, after_in_parent=_engine_after_fork_in_parent, after_in_child=_engine_after_fork_in_child)
def engine_locked(fn: _F) -> _F:
  """`fn` run holding ENGINE_LOCK."""
  @functools.wraps(fn)
  def wrapper(*args: Any, **kwargs: Any) -> Any:
    with ENGINE_LOCK: return fn(*args, **kwargs)
  return wrapper  # type: ignore[return-value]

class GlobalCounters:
  """Running totals of what the realize engine ran: kernels (and copies), their estimated ALU ops and bytes touched, their
  measured time (only when timed: DEBUG>=2), and the bytes allocated on devices now (in all, and per device). `reset()`
  zeroes all but the memory counts."""
  global_ops: ClassVar[int] = 0
  global_mem: ClassVar[int] = 0
  time_sum_s: ClassVar[float] = 0.0
  kernel_count: ClassVar[int] = 0
  mem_used: ClassVar[int] = 0   # bytes: counted by Buffer.allocate/deallocate
  mem_used_per_device: ClassVar[collections.defaultdict[str, int]] = collections.defaultdict(int)   # the same, by device name
  @staticmethod
  def reset() -> None: GlobalCounters.global_ops, GlobalCounters.global_mem, GlobalCounters.time_sum_s, GlobalCounters.kernel_count = 0, 0, 0.0, 0

# ---- progress bars: the tqdm package when installed, else this small one with the same basic interface ----
class _TinyTqdm:
  def __init__(self, iterable: Iterable | None = None, desc: str = "", disable: bool = False, unit: str = "it", unit_scale: bool = False,
               total: int | None = None, rate: int = 100, **kwargs: Any):
    self.iterable, self.disable, self.unit, self.unit_scale, self.rate = iterable, disable, unit, unit_scale, rate
    self.st, self.i, self.n, self.skip, self.t = time.perf_counter(), -1, 0, 1, total if total is not None else getattr(iterable, "__len__", lambda: 0)()
    self.set_description(desc)
    self.update(0)
  def __iter__(self) -> Iterator:
    if self.iterable is None: raise TypeError("tqdm without an iterable: use update()")
    for item in self.iterable:
      yield item
      self.update(1)
    self.update(close=True)
  def __enter__(self) -> _TinyTqdm: return self
  def __exit__(self, *exc: Any) -> None: self.update(close=True)
  def set_description(self, desc: str) -> None: self.desc = f"{desc}: " if desc else ""
  def close(self) -> None: self.update(close=True)
  def update(self, n: int = 0, close: bool = False) -> None:
    self.n, self.i = self.n + n, self.i + 1
    if self.disable or (not close and self.i % self.skip != 0): return
    elapsed = time.perf_counter() - self.st
    if self.i/elapsed > self.rate and self.i: self.skip = max(int(self.i/elapsed)//self.rate, 1)   # redraw ~rate times a second
    def fmt(t: float) -> str: return f"{int(t//3600):02d}:{int(t%3600//60):02d}:{int(t%60):02d}" if t >= 3600 else f"{int(t//60):02d}:{int(t%60):02d}"
    def num(x: float) -> str:
      if not self.unit_scale: return f"{x:.0f}" if x == int(x) else f"{x:.2f}"
      for p in ("", "k", "M", "G", "T"):
        if abs(x) < 1000: return f"{x:.3g}{p}"
        x /= 1000
      return f"{x:.3g}P"
    rate = self.n/elapsed if elapsed else 0
    suf = f"{num(self.n)}/{num(self.t)} [{fmt(elapsed)}<{fmt((self.t-self.n)/rate) if rate and self.t else '?'}, {num(rate)}{self.unit}/s]" if self.t \
      else f"{num(self.n)}{self.unit} [{fmt(elapsed)}, {num(rate)}{self.unit}/s]"
    import shutil
    width = shutil.get_terminal_size().columns
    if self.t:
      bar_w = max(width - len(self.desc) - len(suf) - 10, 1)
      filled = int(bar_w * min(self.n/self.t, 1))
      line = f"{self.desc}{100*self.n/self.t:3.0f}%|{'#'*filled}{' '*(bar_w-filled)}| {suf}"
    else: line = f"{self.desc}{suf}"
    print(f"\r{line[:width]}", end="\n" if close else "", flush=True, file=sys.stderr)
def _tiny_trange(n: int, **kwargs: Any) -> _TinyTqdm: return _TinyTqdm(range(n), total=n, **kwargs)
def __getattr__(name: str) -> Any:
  # `tqdm` and `trange`: the tqdm package's when installed (imported on first use: it costs ~50 ms), else the small one
  # (every `from tinygrad.helpers import X` in a function body asks for __path__ here: no message built for that)
  if name not in ("tqdm", "trange"): raise AttributeError(name if name.startswith("__") else f"module 'tinygrad.helpers' has no attribute {name!r}")
  try: import tqdm as _pkg
  except ImportError: _pkg = None
  globals().update(tqdm=_pkg.tqdm if _pkg else _TinyTqdm, trange=_pkg.trange if _pkg else _tiny_trange)
  return globals()[name]

def cache_dir() -> str:
  """The per-user cache directory (XDG_CACHE_HOME, ~/Library/Caches on macOS) for tinygrad's files."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/Library/Caches" if os.uname().sysname == "Darwin" else "~/.cache")
  return os.path.join(base, "tinygrad")

def is_finite(x: float) -> bool: return not (math.isinf(x) or math.isnan(x))

def fetch(url: str, name: str | pathlib.Path | None = None, subdir: str | None = None, gunzip: bool = False,
          allow_caching: bool | None = None, timeout: float = 30) -> pathlib.Path:
  """Download `url` once into the cache directory (`cache_dir()/downloads[/subdir]/name`, name defaulting to a hash of the
  URL) and return its path; later calls return the cached file. gunzip: store the decompressed contents. The file is written
  aside and renamed into place, so an interrupted download never leaves a truncated file behind. A `name` that is a path
  (absolute, or with a separator) is used as the destination itself."""
  import pathlib, hashlib, tempfile
  if url.startswith(("/", ".")): return pathlib.Path(url)
  if name is not None and (isinstance(name, pathlib.Path) or os.sep in name): fp = pathlib.Path(name)
  else:
    fn = name if name is not None else hashlib.md5(url.encode()).hexdigest() + (".gunzip" if gunzip else "")
    fp = pathlib.Path(cache_dir()) / "downloads" / (subdir or "") / fn
  if fp.is_file() and (allow_caching if allow_caching is not None else not DISABLE_HTTP_CACHE): return fp
  fp.parent.mkdir(parents=True, exist_ok=True)
  import urllib.request
  with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "tinygrad"}), timeout=timeout) as r:
    if r.status != 200: raise RuntimeError(f"fetch {url}: HTTP status {r.status}")
    length = r.getheader("Content-Length")
    total = int(length) if length is not None and not gunzip else None
    fd, tmp = tempfile.mkstemp(dir=fp.parent, prefix=fp.name + ".", suffix=".tmp")
    try:
      with os.fdopen(fd, "wb") as f:
        import gzip
        src: Any = gzip.GzipFile(fileobj=r) if gunzip else r
        bar = __getattr__("tqdm")(total=total, unit="B", unit_scale=True, desc=url, disable=not total or not sys.stderr.isatty())
        while chunk := src.read(1 << 16):
          f.write(chunk)
          bar.update(len(chunk))
        bar.close()
      if total is not None and (got := os.stat(tmp).st_size) != total: raise RuntimeError(f"fetch {url}: got {got} of {total} bytes")
      os.replace(tmp, fp)
    except BaseException:
      with contextlib.suppress(OSError): os.unlink(tmp)
      raise
  return fp
