"""Row cache: a value a row's reduce sums, which the row's output computes again, is stored into the output by the reduce's
loop and read back by the output's loop instead of computed twice (a fused softmax's exp(x - max): once for the sum, once
for the output). On renderers whose loops run in order on one thread per row (has_threads: the CPU), after vectorize.

The kernel, one STORE of out[idx(rows, j)] = V, where V reads R = REDUCE(op, g_0 op ... op g_{n-1}, k) and holds H(j)
with H(j := n*k + c) = g_c for every lane group c < n (the same nodes once simplified: an identity, not a guess), becomes
  in k's loop: out[idx(rows, n*k + c)] = g_c for each c (the row's elements, in cache when the sum ends);
  after it:    out[idx(rows, j)] = V with H(j) replaced by a load of out[idx(rows, j)].
Sound only when k's loop runs once per row before j's: every range the stored values and places depend on, but k, is a
global one outside j's loop (a lower id) that the output index reads (rows written by one iteration only, one thread), j's
range covers n*k + c exactly, the store is ungated and the kernel reads nothing of `out` before. Else the kernel is left.

Streaming: an output codegen/stream.py's `streams` writes past the caches (large, whole-line stores, a renderer with
`nontemporal_stores`) gets the row in a scratch array of the kernel's own (a DEFINE_REG of the row's size, at most
ROW_SCRATCH_BYTES: a thread's stack holds it) instead: k's loop stores g_c into scratch[(n*k + c)*L], j's loop reads
scratch[j*L] (L: the stored value's lanes) and writes out[idx], a store the stream pass then marks non-temporal. The output's
memory is then written once and never read: a store into it from k's loop first read every line of it from memory. k's
loop also PREFETCHes what its loads read for the next row, so the next row's max loop does not wait on memory.
"""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.uop.upat import graph_rewrite
from tinygrad.renderer import Renderer
from tinygrad.codegen.vectorize import _flatten
from tinygrad.codegen.stream import streams

ROW_CACHE_BYTES = 1 << 18   # a row this large or smaller is still in the core's cache when its output loop reads it back
ROW_CACHE_ALU = 4           # ALU ops from which recomputing a summand costs more than its store and load
ROW_SCRATCH_BYTES = 1 << 16 # the largest row a kernel keeps in a scratch array of its own (on each thread's stack)

def _open_ranges(u: UOp, memo: dict[UOp, frozenset[UOp]]) -> frozenset[UOp]:
  """The ranges u's value depends on: a reduce's own ranges end with it."""
  for n in u.toposort():
    if n in memo: continue
    s = frozenset().union(*(memo[x] for x in n.src)) if n.src else frozenset()
    memo[n] = s | {n} if n.op is Ops.RANGE else s - set(n.src[1:]) if n.op is Ops.REDUCE else s
  return memo[u]

def _prefetch_next_row(leaves: list[UOp], out: UOp, k: UOp, r: UOp) -> list[tuple[UOp, ...]]:
  """For each summand, a PREFETCH of what its loads read for the next row (range r's next value; the last row its own):
  the row's max loop then finds it in the cache, read while this row's exp ran, instead of waiting on memory."""
  nr = r + 1
  nxt = (nr < r.src[0]).where(nr, r)
  return [tuple(UOp(Ops.PREFETCH, dtypes.void, (ld.src[0].substitute({r: nxt}),)) for ld in g.toposort()
                if ld.op is Ops.LOAD and ld.src[0].op is Ops.INDEX and ld.src[0].src[0].op is Ops.DEFINE_GLOBAL
                and ld.src[0].src[0] is not out and {r, k} <= ld.src[0].range_set) for g in leaves]

def cache_rows(sink: UOp, ren: Renderer) -> UOp:
  if not ren.has_threads or len(sink.src) != 1 or (st := sink.src[0]).op is not Ops.STORE or len(st.src) != 2: return sink
  oidx, val = st.src
  if oidx.op is not Ops.INDEX or len(oidx.src) != 2 or oidx.src[0].op is not Ops.DEFINE_GLOBAL: return sink
  out = oidx.src[0]
  topo = sink.toposort()
  if any(u.op is Ops.INDEX and u.src[0] is out and u is not oidx for u in topo): return sink   # it reads out
  memo: dict[UOp, frozenset[UOp]] = {}
  places = _open_ranges(oidx.src[1], memo)
  # every loop outside the reduces is a place of the output: each iteration writes elements of its own
  if places != {u for u in topo if u.op is Ops.RANGE and u.arg[1] is not AxisType.REDUCE}: return sink
  from tinygrad.uop.symbolic import sym
  for red in [u for u in val.toposort() if u.op is Ops.REDUCE and len(u.src) == 2 and u.src[1].arg[1] is AxisType.REDUCE]:
    k, leaves = red.src[1], _flatten(red.src[0], red.arg)
    if len(leaves) > 16: continue   # (each lane group is one more copy of the candidate to simplify)
    for j in sorted((r for r in places if r.arg[1] is AxisType.GLOBAL), key=lambda r: -r.arg[0]):
      n, ksize = j.src[0].arg, k.src[0].arg
      if not isinstance(n, int) or not isinstance(ksize, int) or n != len(leaves) * ksize: continue
      n = len(leaves)
      if n * ksize * val.dtype.itemsize > ROW_CACHE_BYTES: continue
      rows = places - {j}
      if any(r.arg[1] is not AxisType.GLOBAL or r.arg[0] >= j.arg[0] for r in rows): continue
      # the largest part of the output that is, lane group by lane group, the reduce's summand
      for h in reversed([u for u in val.toposort() if u.op is leaves[0].op and u.dtype == leaves[0].dtype and j in u.range_set]):
        if red in h.toposort() or sum(1 for u in h.toposort() if u.op in GroupOp.ALU) < ROW_CACHE_ALU: continue
        subs = [{j: k * n + c} for c in range(n)]
        if not all(graph_rewrite(h.substitute(s), sym) is g for s, g in zip(subs, leaves)): continue
        sidx = [graph_rewrite(oidx.substitute(s), sym) for s in subs]
        if any(_open_ranges(x, memo) - {k} - rows for x in sidx + leaves): continue
        lanes, row = h.dtype.count, j.src[0].arg * h.dtype.count
        if streams(out, val.dtype, ren) and row * h.dtype.scalar().itemsize <= ROW_SCRATCH_BYTES:
          # (the output store, which no longer reads `out` back, is then marked non-temporal by codegen/stream.py)
          scratch = UOp(Ops.DEFINE_REG, h.dtype.scalar().ptr(row, AddrSpace.REG), (), "row")
          pfs = _prefetch_next_row(leaves, out, k, max(rows, key=lambda r: r.arg[0])) if rows else [() for _ in leaves]
          ends = tuple(UOp(Ops.STORE, st.dtype, (scratch.index((k * n + c) * lanes), g) + pf).end(k) for c, (g, pf) in enumerate(zip(leaves, pfs)))
          ld = UOp(Ops.LOAD, h.dtype, (scratch.index(j * lanes),) + ends)
          return sink.replace(src=(st.replace(src=(oidx, val.substitute({h: ld}))),))
        # `out` holds the summand only where it is of out's dtype: a bool mask of a float row (x == x.max(-1)) stored
        # 4-byte floats into 1-byte slots, each store overwriting its neighbours, and read back garbage
        if h.dtype != val.dtype: continue
        ends = tuple(UOp(Ops.STORE, st.dtype, (x, g)).end(k) for x, g in zip(sidx, leaves))
        ld = UOp(Ops.LOAD, h.dtype, (oidx,) + ends)
        return sink.replace(src=(st.replace(src=(oidx, val.substitute({h: ld}))),))
  return sink
