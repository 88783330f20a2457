"""Codegen in a forked child: a schedule's new kernels are rendered by two processes at once, on two cores.

Codegen is Python under one GIL: ViT-Ti's cold first call renders 25 kernels for ~1.4 s on one core while the other
only compiles. With PARALLEL_CODEGEN, lower_schedule forks a child (the fork holds the kernels: nothing is serialized on
the way in) that renders new kernels and writes each program as the program cache's JSON (progcache.encode: no pickle,
nothing executable) to a pipe, while the parent renders others. Both take kernels in the same order, the costliest first
by a rough estimate (`cost`), so the last kernel either renders, which the other may wait for and whose compile ends the
call, is a small one (rendering ViT-Ti's from both ends, its 0.3 s GELU matmul came last: one core idle for ~0.15 s).
Each side marks a kernel in shared memory before rendering it and skips those the other has marked; the parent waits
for one the child has marked (up to CHILD_WAIT_S, then renders it itself). A failed, killed or hung child costs at most
that wait: the parent renders whatever did not arrive, and raises its errors, in schedule order. The child only renders
(no compiler, device or cache call), leaves with os._exit and is killed when the parent is done. Linux only (a fork of a
threaded process is unsafe where system libraries keep per-thread state, as on macOS)."""
from __future__ import annotations
import json, mmap, os, signal, sys, threading, warnings
from typing import Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType

def cost(ast: UOp) -> int:
  """A rough rank of a kernel's codegen time: its ALU ops, times 16 for a reduce of 16-8192 steps into 1024 outputs or
  more (the heuristics upcast those into a register tile of up to hundreds of lanes, each op built once per lane), and a
  transcendental (decomposed into ~30 ops per lane) counts 4 times."""
  topo = ast.toposort()
  size = {t: 1 for t in (True, False)}
  for u in topo:
    if u.op is Ops.RANGE and u.src[0].op is Ops.CONST: size[u.arg[-1] is AxisType.REDUCE] *= u.src[0].arg
  alu = sum(4 if u.op in (Ops.EXP2, Ops.LOG2, Ops.SIN) else 1 for u in topo if u.op in GroupOp.ALU)
  return alu * (16 if 16 <= size[True] <= 8192 and size[False] >= 1024 else 1)

def order(asts: list[UOp]) -> list[int]:
  """The order both sides take kernels in: costliest first, ties in schedule order."""
  return sorted(range(len(asts)), key=lambda i: -cost(asts[i]))

CHILD_WAIT_S = 10.0   # the longest the parent waits for a kernel the child is rendering (a hung child)
PARENT, CHILD = 1, 2  # marks in the shared byte per kernel

class ForkedCodegen:
  """Renders some of `asts` for device `dev` in a forked child, costliest first; `take(ast)` is its encoded program, or None."""
  def __init__(self, asts: list[UOp], dev: Any):
    self.asts, self.index, self.device = asts, {a: i for i, a in enumerate(asts)}, dev.device
    self.order = order(asts)
    self.got: dict[int, Any] = {}
    self.done, self.cond = False, threading.Condition()
    self.marks = mmap.mmap(-1, len(asts))   # anonymous and shared with the child
    r, w = os.pipe()
    with warnings.catch_warnings():   # (Python 3.12 warns on any fork of a threaded process; the child only runs Python codegen)
      warnings.simplefilter("ignore", DeprecationWarning)
      self.pid = os.fork()
    if self.pid == 0: _child(asts, self.order, dev, self.marks, r, w)
    os.close(w)
    self.reader = threading.Thread(target=self._read, args=(r,), daemon=True, name="tinygrad_forkgen")
    self.reader.start()
  def _read(self, fd: int) -> None:
    with os.fdopen(fd, "rb") as f:
      for line in f:
        try: i, enc = json.loads(line)
        except ValueError: break   # a torn line: the child was killed mid-write
        with self.cond:
          self.got[i] = enc
          self.cond.notify_all()
    with self.cond:
      self.done = True
      self.cond.notify_all()
  def arrived(self) -> list[UOp]:
    """The kernels whose programs came and were not taken yet (to start their compiles before the parent gets to them)."""
    with self.cond: return [self.asts[i] for i in self.got]
  def claim(self) -> UOp | None:
    """The next kernel in `order` neither side has marked, marked the parent's (None: none is left)."""
    for i in self.order:
      if self.marks[i] == 0:
        self.marks[i] = PARENT
        return self.asts[i]
    return None
  def take(self, ast: UOp) -> Any:
    """The child's program of `ast` (waiting while the child renders it), or None: the caller renders it."""
    if (i := self.index.get(ast)) is None: return None
    with self.cond:
      if self.marks[i] != CHILD: self.marks[i] = PARENT   # (a race with the child's mark costs a kernel rendered twice)
      self.cond.wait_for(lambda: i in self.got or self.done or self.marks[i] != CHILD, timeout=CHILD_WAIT_S)
      return self.got.pop(i, None)
  def close(self) -> None:
    try: os.kill(self.pid, signal.SIGKILL)
    except ProcessLookupError: pass
    os.waitpid(self.pid, 0)
    self.reader.join()
    self.marks.close()

def _child(asts: list[UOp], order: list[int], dev: Any, marks: mmap.mmap, r: int, w: int) -> None:
  try:
    os.close(r)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's; it kills this child
    from tinygrad.codegen import get_program, progcache
    with os.fdopen(w, "wb") as f:
      for i in order:
        if marks[i] == PARENT: continue   # the parent's
        marks[i] = CHILD
        f.write(json.dumps([i, progcache.encode(get_program(asts[i], dev.renderer, None, compile=False))]).encode() + b"\n")
        f.flush()
  except BaseException: pass   # the parent renders what did not arrive, and raises its error there
  finally: os._exit(0)

def start(asts: list[UOp], dev: Any) -> ForkedCodegen | None:
  """A child rendering some of `asts` (the schedule's new kernels, in order), or None when not worth it or not possible."""
  from tinygrad.helpers import PARALLEL_CODEGEN, DEBUG, BEAM, CPUS
  if PARALLEL_CODEGEN.value <= 0 or len(asts) < PARALLEL_CODEGEN.value or CPUS < 2 or not sys.platform.startswith("linux") or DEBUG >= 4 \
    or BEAM.value or threading.current_thread() is not threading.main_thread(): return None
  try: return ForkedCodegen(asts, dev)
  except OSError: return None   # no fork (a resource limit): the parent renders everything
