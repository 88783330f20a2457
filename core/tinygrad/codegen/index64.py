"""64-bit index arithmetic for kernels whose indices do not fit in 32 bits.

The scheduler builds every kernel's index arithmetic in int64, where nothing wraps, and `narrow_indices` then retypes it
to int32 (fast on every device) when exact bounds show every value fits; a kernel over a buffer of more than 2**31-1
elements, or with a longer loop, keeps int64 indices. `INDEX64=1` keeps int64 everywhere (tests run kernels that way to
check the wide code on every renderer).
"""
from __future__ import annotations
import functools
from typing import Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, _alu_bounds
from tinygrad.dtype import dtypes, DType
from tinygrad.helpers import ContextVar

INDEX64 = ContextVar("INDEX64", 0)   # 1: kernels keep int64 index math even where int32 would do
_LO, _HI = dtypes.min(dtypes.int32), dtypes.max(dtypes.int32)

def _arith(u: UOp, dt: DType) -> bool:
  return u.dtype in (dt, dtypes.bool) and (u.op in GroupOp.ALU or u.op in (Ops.CONST, Ops.DEFINE_VAR, Ops.RANGE))

def index_nodes(sink: UOp, dt: DType) -> list[UOp]:
  """The kernel's index arithmetic of type `dt` in dependency order: the loop counters and what feeds an INDEX's offset or
  gate or a RANGE's end, through ALU ops, constants and variables (nodes of `dt` or bool)."""
  seen: set[UOp] = set()
  todo = [s for u in sink.toposort() for s in ((u,) + u.src if u.op is Ops.RANGE else u.src[1:] if u.op is Ops.INDEX else ())]
  while todo:
    u = todo.pop()
    if u in seen or not _arith(u, dt): continue
    seen.add(u)
    todo.extend(u.src)
  return [u for u in sink.toposort() if u in seen]

def _bounds(u: UOp, b: dict[UOp, Any]) -> tuple[Any, Any] | None:
  """Exact bounds of `u` from its sources' (no wraparound clamp); None where unknown."""
  if u.op in (Ops.CONST, Ops.DEFINE_VAR): return u._min_max
  if u.op is Ops.RANGE: return (0, b.get(u.src[0], u.src[0]._min_max)[1] - 1)
  srcs = [b.get(s, s._min_max) for s in u.src]
  # a value of a loop that never runs (a range of 0 trips: bounds (0, -1)) is never computed, so any type holds it: the
  # reduce of a (2, 0) tensor indexes with r // 0 and r % 0, unbounded, and kept int64 indices that WGSL cannot compile
  if any(lo > hi for lo, hi in srcs): return (0, -1)
  return _alu_bounds(u, srcs)

def _fits(u: UOp, lohi: tuple[Any, Any] | None) -> bool:
  return lohi is not None and (u.dtype == dtypes.bool or (_LO <= lohi[0] and lohi[1] <= _HI))

def _narrowable(sink: UOp) -> list[UOp] | None:
  """The int64 index nodes to retype to int32, or None when some index value may leave int32. Arithmetic on index values
  only (an arange's comparisons, a range times a constant) joins them where its own values fit."""
  nodes = index_nodes(sink, dtypes.int64)
  b: dict[UOp, Any] = {}
  for u in nodes:
    if not _fits(u, lohi := _bounds(u, b)): return None
    b[u] = lohi
  topo = sink.toposort()
  for u in topo:
    if u in b or u.op not in GroupOp.ALU or not _arith(u, dtypes.int64) or not any(s in b for s in u.src): continue
    # (a constant joining them must fit too: a bool result fits always, but `x < 2**40` retyped would compare with 0)
    if not all(s in b or _arith(s, dtypes.int64) and s.op is Ops.CONST and _fits(s, s._min_max) for s in u.src): continue
    if not _fits(u, lohi := _bounds(u, b)): continue
    for s in u.src:
      if s not in b: b[s] = s._min_max
    b[u] = lohi
  return [u for u in topo if u in b]

def retype_indices(sink: UOp, nodes: list[UOp], frm: DType, to: DType) -> UOp:
  """`sink` with `nodes` retyped from `frm` to `to`; where a retyped value is used elsewhere (as data) that use gets its
  old type back through a CAST, and a `frm` value from elsewhere entering them is cast to `to`."""
  idx = set(nodes)
  new: dict[UOp, UOp] = {}
  for u in sink.toposort():
    src = tuple(new[s] for s in u.src)
    if u in idx:
      dt = to if u.dtype == frm else u.dtype
      src = tuple(n.cast(to) if s not in idx and n.dtype == frm else n for s, n in zip(u.src, src))
      new[u] = UOp.const(dt, u.arg) if u.op is Ops.CONST else UOp(u.op, dt, src, u.arg)
      continue
    # an INDEX's offset and gate and a REDUCE's ranges take the retyped values
    keep = range(1, len(src)) if u.op in (Ops.INDEX, Ops.REDUCE) else range(0)
    src = tuple(n if i in keep or n.dtype == o.dtype else n.cast(o.dtype) for i, (o, n) in enumerate(zip(u.src, src)))
    new[u] = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
  return new[sink]

def narrow_indices(sink: UOp) -> UOp:
  """A scheduled kernel (int64 index math) with int32 index math when every index value fits."""
  return sink if INDEX64 else _narrow(sink)
# the scheduler builds the same kernel again for every identical layer (ViT-Ti's 317 kernels are 34 distinct ASTs), and
# this walk was ~40% of building one: a kernel is narrowed once
@functools.lru_cache(maxsize=512)
def _narrow(sink: UOp) -> UOp:
  return sink if not (nodes := _narrowable(sink)) else retype_indices(sink, nodes, dtypes.int64, dtypes.int32)
