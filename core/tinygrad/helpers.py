"""Small shared utilities: environment flags (ContextVar/Context), DEBUG, and generic helpers."""
from __future__ import annotations
import os, functools, contextlib, time, math, itertools
from typing import Any, Iterable, Iterator, TypeVar, Callable, Sequence

T = TypeVar("T")

@functools.cache
def getenv(key: str, default: Any = 0) -> Any:
  """Read an environment variable, converted to the type of `default` (int or str)."""
  val = os.environ.get(key)
  if val is None: return default
  return type(default)(val)

class ContextVar:
  """A flag read once from the environment (its default declared here, once) and overridable with Context(**flags)."""
  _cache: dict[str, ContextVar] = {}
  value: Any
  key: str
  def __init__(self, key: str, default: Any):
    if key in ContextVar._cache: raise RuntimeError(f"ContextVar {key} declared twice")
    self.key, self.default = key, default
    self.value = getenv(key, default)
    ContextVar._cache[key] = self
  def __bool__(self) -> bool: return bool(self.value)
  def __ge__(self, x: int) -> bool: return self.value >= x
  def __gt__(self, x: int) -> bool: return self.value > x
  def __lt__(self, x: int) -> bool: return self.value < x
  def __le__(self, x: int) -> bool: return self.value <= x
  def __repr__(self) -> str: return f"ContextVar({self.key}={self.value!r})"

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
DEBUG = ContextVar("DEBUG", 0)               # 1: schedule summary, 2: per-kernel timing, 3: uops, 4: source
SPEC = ContextVar("SPEC", 0)                 # type_verify every graph against its spec
EGRAPH = ContextVar("EGRAPH", 0)             # symbolic passes via equality saturation
EGRAPH_BUDGET = ContextVar("EGRAPH_BUDGET", 2000)  # max e-nodes before saturation stops
CACHELEVEL = ContextVar("CACHELEVEL", 2)     # 0 disables the on-disk compile cache
NOOPT = ContextVar("NOOPT", 0)               # disable kernel optimizations
BEAM = ContextVar("BEAM", 0)                 # beam search width
BEAM_TIMEOUT = ContextVar("BEAM_TIMEOUT", 60)  # seconds one kernel's beam search may take (the best so far wins)
BEAM_MAX_CANDIDATES = ContextVar("BEAM_MAX_CANDIDATES", 64)  # candidates timed per beam step
BEAM_THREADS = ContextVar("BEAM_THREADS", 2)  # threads compiling beam candidates in parallel
IGNORE_BEAM_CACHE = ContextVar("IGNORE_BEAM_CACHE", 0)  # 1: search again even when the disk cache has this kernel's result
SPLIT_REDUCEOP = ContextVar("SPLIT_REDUCEOP", 1)   # a big reduce to few outputs runs as two kernels (the first one parallel)
MATMUL_PACK = ContextVar("MATMUL_PACK", 1)   # a matmul whose right operand is big is preceded by a copy into panels (renderer.matmul_pack)
MATMUL_PACK_BYTES = ContextVar("MATMUL_PACK_BYTES", 1 << 20)   # the right operand's size from which it is packed
USE_TC = ContextVar("USE_TC", 1)             # the heuristics map matmuls onto the renderer's tensor cores
OPTS = ContextVar("OPTS", "")                # forced actions, "LOCAL:0:16,GROUP:0:8": every kernel they fit gets them (tests)
EMULATE = ContextVar("EMULATE", "")          # PYTHON device mimics NV/AMD/METAL abilities
CAPTURING = ContextVar("CAPTURING", 1)       # TinyJit may capture

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
def ceildiv(num: int, amt: int) -> int: return -(num//-amt)
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
def colored(st: str, color: str | None = None) -> str:
  if color is None or not os.isatty(1): return st
  return f"\u001b[{30+['black','red','green','yellow','blue','magenta','cyan','white'].index(color)}m{st}\u001b[0m"
def to_function_name(s: str) -> str: return "".join(c if c.isalnum() or c == "_" else f"{ord(c):02X}" for c in s)
def pairwise(x: Iterable[T]) -> Iterator[tuple[T, T]]: return itertools.pairwise(x)

class Timing(contextlib.ContextDecorator):
  def __init__(self, prefix: str = "", enabled: bool = True): self.prefix, self.enabled = prefix, enabled
  def __enter__(self) -> Timing:
    self.st = time.perf_counter_ns()
    return self
  def __exit__(self, *exc: Any) -> None:
    self.et = time.perf_counter_ns() - self.st
    if self.enabled: print(f"{self.prefix}{self.et*1e-6:6.2f} ms")

def cache_dir() -> str:
  """The per-user cache directory (XDG_CACHE_HOME, ~/Library/Caches on macOS) for tinygrad's files."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/Library/Caches" if os.uname().sysname == "Darwin" else "~/.cache")
  return os.path.join(base, "tinygrad")

def is_finite(x: float) -> bool: return not (math.isinf(x) or math.isnan(x))
