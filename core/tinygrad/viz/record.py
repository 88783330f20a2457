"""The VIZ record: every graph_rewrite call and codegen pass (its name, input and output graph, time, and each rule that
fired with the rule's file:line), and every kernel (AST, passes, linearized uops, source, compiled size).

Installed as `tinygrad.uop.upat.TRACER` (VIZ=1 at import, or `with Recorder() as rec:`); while it is None, which is the
default, graph_rewrite and PatternMatcher.rewrite pay one read of a module global and nothing else. Graphs are stored once
per node: UOps are hash-consed, so a node shared by the input and output of many passes is one row of `nodes`."""
from __future__ import annotations
import inspect, os, sys, threading, time
from typing import Any, Callable
from tinygrad.uop.ops import UOp
from tinygrad.helpers import VIZ_MAX_STEPS

TRACE_VERSION = 2   # 2: schedules, and an optional Chrome-trace profile beside the record
ARG_CHARS = 160   # a node's arg as text is cut here (a kernel's source as an arg would dwarf the graph)

def project_path(filename: str, module: str | None = None) -> str:
  """A source file's path as a reader knows it: from its top-level package's folder (`tinygrad/uop/symbolic.py`,
  `tinygrad_cpu/renderer.py`) whatever the working directory, else relative to the working directory when inside it,
  else absolute (never a chain of ../)."""
  top = sys.modules.get((module or "").split(".")[0])
  pkg_file = getattr(top, "__file__", None) if top is not None and module else None
  if pkg_file and os.path.basename(pkg_file) == "__init__.py":
    root = os.path.dirname(os.path.dirname(os.path.abspath(pkg_file)))
    if os.path.abspath(filename).startswith(root + os.sep): return os.path.relpath(os.path.abspath(filename), root)
  rel = os.path.relpath(os.path.abspath(filename))
  return os.path.abspath(filename) if rel.startswith("..") else rel

def _rule_source(fxn: Callable) -> tuple[str, str]:
  """A rule's 'file:line' and its source text (the lambda's whole line, or the function)."""
  code = getattr(fxn, "__code__", None)
  if code is None: return repr(fxn), ""
  loc = f"{project_path(code.co_filename, getattr(fxn, '__module__', None))}:{code.co_firstlineno}"
  try: lines, _ = inspect.getsourcelines(fxn)
  except (OSError, TypeError): return loc, ""
  return loc, "".join(lines[:40])

class Recorder:
  """Collects the compiler's work while installed (a context manager, or `install()`/`uninstall()`); `to_json()` is the
  trace that `tinygrad.viz.serve` shows. Thread-safe: background compiles report their binaries from other threads."""
  def __init__(self, max_steps: int | None = None):
    self.max_steps = VIZ_MAX_STEPS.value if max_steps is None else max_steps
    self.nodes: dict[UOp, int] = {}
    self.node_rows: list[list[Any]] = []
    self.rules: dict[Callable, int] = {}
    self.rule_rows: list[dict[str, str]] = []
    self.steps: list[dict[str, Any]] = []
    self.kernels: list[dict[str, Any]] = []
    self.schedules: list[dict[str, Any]] = []
    self.by_source: dict[str, int] = {}
    self.dropped = 0      # steps past max_steps: counted so the page can say the record is partial
    self.suspended = 0    # >0 while BEAM times candidates: their passes are not the kernel's
    self.lock = threading.RLock()
    self.local = threading.local()   # per thread: the stack of open steps and the kernel being built
    self._prev: Any = None
    self.profiler: Any = None   # a Profiler whose timeline the trace carries (VIZ=1 with PROFILE=1), shown beside the graphs

  # ---- installation ----
  def install(self) -> Recorder:
    from tinygrad.uop import upat
    self._prev, upat.TRACER = upat.TRACER, self
    return self
  def uninstall(self) -> None:
    from tinygrad.uop import upat
    upat.TRACER = self._prev
  def __enter__(self) -> Recorder: return self.install()
  def __exit__(self, *exc: Any) -> None: self.uninstall()

  # ---- graphs ----
  def node(self, u: UOp) -> int:
    """The id of `u` in the node table, adding it and every node under it that is not there yet."""
    with self.lock:
      if (i := self.nodes.get(u)) is not None: return i
      for n in u.toposort():
        if n in self.nodes: continue
        arg = n.arg if isinstance(n.arg, (int, float, bool, str, type(None))) else repr(n.arg)
        if isinstance(arg, str) and len(arg) > ARG_CHARS: arg = arg[:ARG_CHARS] + "..."
        if isinstance(arg, float) and arg != arg or arg in (float("inf"), float("-inf")): arg = repr(arg)   # JSON has no nan/inf
        self.nodes[n] = len(self.node_rows)
        self.node_rows.append([n.op.name, str(n.dtype), arg, [self.nodes[s] for s in n.src]] + ([repr(n.tag)] if n.tag is not None else []))
      return self.nodes[u]

  # ---- steps: rewrites and passes ----
  def _stack(self) -> list[int]:
    if not hasattr(self.local, "stack"): self.local.stack, self.local.kernel = [], None
    return self.local.stack
  def open(self, name: str, kind: str, before: UOp) -> int | None:
    """Start a step; returns its index, or None when it is not kept (suspended, or past max_steps)."""
    if self.suspended: return None
    stack = self._stack()
    with self.lock:
      if len(self.steps) >= self.max_steps:
        self.dropped += 1
        return None
      i = len(self.steps)
      self.steps.append({"name": name, "kind": kind, "parent": stack[-1] if stack else None, "kernel": self.local.kernel,
                         "in": self.node(before), "out": None, "ms": 0.0, "matches": [], "t0": time.perf_counter()})
      if not stack and self.local.kernel is not None: self.kernels[self.local.kernel]["steps"].append(i)   # a kernel's pass
    stack.append(i)
    return i
  def close(self, i: int | None, after: UOp | None) -> None:
    if i is None: return
    st = self.steps[i]
    st["ms"] = (time.perf_counter() - st.pop("t0")) * 1e3
    st["out"] = self.node(after) if isinstance(after, UOp) else None
    stack = self._stack()
    if stack and stack[-1] == i: stack.pop()
  def rewrite(self, name: str | None, sink: UOp, run: Callable[[], UOp]) -> UOp:
    """One graph_rewrite call, recorded around `run` (the rewrite itself)."""
    i = self.open(name or "graph_rewrite", "rewrite", sink)
    out = None
    try: out = run()
    finally: self.close(i, out)
    return out
  def match(self, fxn: Callable, before: UOp, after: UOp) -> None:
    """A rule fired: attributed to the innermost open step of this thread (none open: not recorded)."""
    stack = self._stack()
    # a spec table's rules answer True/False (PatternMatcher.rewrite used as a predicate): a check, not a rewrite
    if not stack or self.suspended or not isinstance(after, UOp): return
    with self.lock:
      if (r := self.rules.get(fxn)) is None:
        loc, src = _rule_source(fxn)
        self.rules[fxn] = r = len(self.rule_rows)
        self.rule_rows.append({"loc": loc, "src": src})
      self.steps[stack[-1]]["matches"].append([r, self.node(before), self.node(after)])

  # ---- kernels ----
  def begin_kernel(self, name: str, device: str, renderer: str, ast: UOp) -> int | None:
    if self.suspended: return None
    self._stack()
    with self.lock:
      k = len(self.kernels)
      self.kernels.append({"name": name, "device": device, "renderer": renderer, "ast": self.node(ast), "uops": [],
                           "source": "", "binary_bytes": None, "steps": []})
    self.local.kernel = k
    return k
  def end_kernel(self, k: int | None, uops: list[UOp], source: str) -> None:
    if k is None: return
    self.local.kernel = None
    with self.lock:
      kd = self.kernels[k]
      kd["uops"] = [f"{i:4d} {u.op.name:16s} {str(u.dtype):24s} {u.arg!r}"[:200] for i, u in enumerate(uops)]
      kd["source"] = source
      self.by_source.setdefault(source, k)
  def name_kernel(self, k: int | None, name: str) -> None:
    if k is not None: self.kernels[k]["name"] = name   # the ProgramSpec's name (what DEBUG=2 prints), known after rendering
  def binary(self, source: str, nbytes: int) -> None:
    """A kernel's compiled size, reported when its compile (maybe on a background thread) finishes."""
    with self.lock:
      if (k := self.by_source.get(source)) is not None: self.kernels[k]["binary_bytes"] = nbytes

  # ---- the scheduler: which tensor-graph nodes became kernels, and why ----
  def schedule(self, roots: list[UOp], realizes: dict[UOp, Any], items: list[Any]) -> None:
    """One scheduled graph: the tensor graph of `roots`, and for each item (ExecItem) the node it computes, why that node
    is a kernel boundary, and its kernel AST (the codegen record of the same AST is its kernel)."""
    if self.suspended: return
    from tinygrad.uop import Ops
    sink = UOp(Ops.SINK, src=tuple(roots))
    users: dict[UOp, list[UOp]] = {}
    for n in sink.toposort():
      for x in n.src: users.setdefault(x, []).append(n)
    with self.lock:
      self.schedules.append({"graph": self.node(sink), "items": [
        {"node": self.node(it.node) if it.node is not None else None, "ast": self.node(it.ast), "kind": "copy" if it.ast.op is Ops.COPY else "kernel",
         "name": it.ast.arg if isinstance(it.ast.arg, str) else str(it.ast.op.name).lower(), "reason": boundary_reason(it.node, roots, users)}
        for it in items], "boundaries": {str(self.node(n)): boundary_reason(n, roots, users) for n in realizes}})

  # ---- output ----
  def to_json(self) -> dict[str, Any]:
    with self.lock:
      steps = [{k: v for k, v in s.items() if k != "t0"} for s in self.steps]
      return {"version": TRACE_VERSION, "nodes": self.node_rows, "rules": self.rule_rows, "steps": steps, "kernels": self.kernels,
              "schedules": self.schedules, "dropped_steps": self.dropped} | ({"profile": self.profiler.to_json()} if self.profiler else {})
  def save(self, path: str | None = None) -> str:
    """Write the trace as JSON (a unique temp file renamed into place); returns the path."""
    if path is None:
      from tinygrad.helpers import cache_dir
      os.makedirs(d := os.path.join(cache_dir(), "viz"), exist_ok=True)
      path = os.path.join(d, f"trace_{time.strftime('%Y%m%d_%H%M%S')}_{os.getpid()}.json")
    from tinygrad.viz import write_json
    return write_json(path, self.to_json())

def boundary_reason(n: UOp | None, roots: list[UOp], users: dict[UOp, list[UOp]]) -> str:
  """Why the scheduler made node `n` a kernel boundary (engine/schedule.py find_realizes), in words."""
  from tinygrad.uop import Ops, GroupOp
  if n is None: return "unknown"
  if n.op is Ops.COPY: return "a copy to another device"
  if n.op is Ops.ASSIGN: return "an assign: written into its target buffer"
  if n.op is Ops.CONTIGUOUS: return "CONTIGUOUS: .contiguous() or .realize() asked for its own buffer"
  if any(r is n for r in roots): return "an output: the value realized"
  us = users.get(n, [])
  if any(u.op is Ops.COPY for u in us): return "copied to another device, so computed into a buffer first"
  if any(u.op is Ops.ASSIGN and u.src[1] is n for u in us): return "an assign's value that reads the target elsewhere (or another assign's target): computed into a temporary first"
  if any(u.op is Ops.PAD for u in us): return "padded, and holds an integer division that must not run on the padded lanes"
  if n.op is Ops.REDUCE_AXIS: return "a reduce read through an expand or by several kernels: inlined it would be recomputed per element"
  if n.op in GroupOp.ALU and len(us) > 1: return "an elementwise value several kernels read that streams 3+ buffers: computed once"
  return "the input of a reduce that expands it: inlined it would be recomputed per element"

def current() -> Recorder | None:
  """The installed recorder, if any."""
  from tinygrad.uop import upat
  return upat.TRACER
