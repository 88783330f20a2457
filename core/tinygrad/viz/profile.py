"""PROFILE=1: a timeline of schedule, codegen, compile, kernel-run, copy, TinyJit-replay and BEAM-candidate events,
written as Chrome trace-event JSON (ui.perfetto.dev and chrome://tracing open it).

The core records while `tinygrad.viz.profile.PROFILER` is set (PROFILE=1 at import, or `with Profiler() as p:`); the
check is one global read per event site. Each device is a process in the trace, the host's work (schedule, codegen,
compile threads) is process "host" with one track per thread. A kernel's span is its runtime's own when the program
reports one (the optional `last_span` attribute: the (start, end) of its last waited call on `time.perf_counter`'s
clock, see docs/plugins.md), else the host's time around the waited call; DEBUG=2 prints the same duration."""
from __future__ import annotations
import contextlib, os, tempfile, threading, time
from typing import Any, Iterator
from tinygrad import helpers

PROFILER: Profiler | None = None

class Profiler:
  """Collects trace events while installed (a context manager, or install()/uninstall())."""
  def __init__(self) -> None:
    self.t0 = time.perf_counter()
    self.events: list[dict[str, Any]] = []
    self.pids: dict[str, int] = {"host": 0}
    self.tids: dict[int, int] = {}
    self.lock = threading.Lock()
    self._prev: Profiler | None = None
  def install(self) -> Profiler:
    global PROFILER
    self._prev, PROFILER = PROFILER, self
    helpers.marker_sink = self.marker
    return self
  def uninstall(self) -> None:
    global PROFILER
    PROFILER = self._prev
    helpers.marker_sink = PROFILER.marker if PROFILER is not None else None
  def __enter__(self) -> Profiler: return self.install()
  def __exit__(self, *exc: Any) -> None: self.uninstall()

  def span(self, name: str, cat: str, start: float, end: float, device: str = "host", **args: Any) -> None:
    """A complete event from `start` to `end` (time.perf_counter seconds) on `device`'s track (the host's: this thread's)."""
    with self.lock:
      pid = self.pids.setdefault(device, len(self.pids))
      tid = 0 if device != "host" else self.tids.setdefault(threading.get_ident(), len(self.tids))
      self.events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": (start - self.t0) * 1e6,
                          "dur": max(end - start, 0.0) * 1e6, "args": {k: _jsonable(v) for k, v in args.items()}})
  def marker(self, name: str, color: str = "gray") -> None:
    """An instant event at this moment, on the host's track (public tinygrad's profile_marker)."""
    with self.lock:
      self.events.append({"name": name, "cat": "marker", "ph": "i", "s": "g", "pid": 0, "tid": 0, "ts": (time.perf_counter() - self.t0) * 1e6,
                          "args": {"color": color}})
  @contextlib.contextmanager
  def timed(self, name: str, cat: str, device: str = "host", **args: Any) -> Iterator[None]:
    st = time.perf_counter()
    try: yield
    finally: self.span(name, cat, st, time.perf_counter(), device, **args)

  def to_json(self) -> dict[str, Any]:
    with self.lock:
      meta = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": dev}} for dev, pid in self.pids.items()]
      meta += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": f"thread {tid}"}} for tid in self.tids.values()]
      return {"traceEvents": meta + sorted(self.events, key=lambda e: e["ts"]), "displayTimeUnit": "ms"}
  def save(self, path: str | None = None) -> str:
    """Write the trace (a unique temp file renamed into place); returns its path."""
    if path is None:
      fd, path = tempfile.mkstemp(prefix=f"tinygrad_profile_{os.getpid()}_", suffix=".json")
      os.close(fd)
    from tinygrad.viz import write_json
    return write_json(path, self.to_json())

def _jsonable(v: Any) -> Any:   # JSON has no inf/nan: those, and anything not a plain value, become text
  if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))): return str(v)
  return v if isinstance(v, (int, float, str, bool, type(None))) else str(v)

@contextlib.contextmanager
def timed(name: str, cat: str, device: str = "host", **args: Any) -> Iterator[None]:
  """An event around the block when profiling, nothing otherwise (call sites on hot paths check PROFILER themselves)."""
  if (p := PROFILER) is None: yield
  else:
    with p.timed(name, cat, device, **args): yield
