"""Kernel optimization actions on a kernel's ranges, and the heuristics that pick them without search.

An action names an axis by its position among the kernel's ranges (globals first, then reduces, each in axis order).
Every action is validated: an invalid one raises KernelOptError and never changes the kernel.
"""
from __future__ import annotations
from dataclasses import dataclass
from enum import Enum, auto
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.dtype import dtypes
from tinygrad.helpers import NOOPT
from tinygrad.renderer import Renderer

class OptOps(Enum):
  UPCAST = auto()   # split a global axis and unroll the inner part: register blocking, several outputs per loop trip
  UNROLL = auto()   # split a reduce axis and unroll the inner part: several independent accumulations per loop trip
  TC = auto()       # map a matmul onto the renderer's tensor core number `arg` (codegen/tc.py; runs before the others)

@dataclass(frozen=True)
class Opt:
  op: OptOps
  axis: int
  arg: int
  def __repr__(self) -> str: return f"Opt({self.op.name}, {self.axis}, {self.arg})"

class KernelOptError(ValueError):
  """An optimization action that does not apply to this kernel."""

def kernel_ranges(sink: UOp) -> tuple[list[UOp], list[UOp]]:
  """The kernel's global and reduce ranges, each sorted by axis id."""
  rngs = [u for u in sink.toposort() if u.op is Ops.RANGE]
  glob = sorted([r for r in rngs if r.arg[1] is not AxisType.REDUCE], key=lambda r: r.arg[0])
  red = sorted([r for r in rngs if r.arg[1] is AxisType.REDUCE], key=lambda r: r.arg[0])
  return glob, red

def _split(r: UOp, amt: int) -> tuple[UOp, list[UOp]]:
  """r -> (outer range, the r value for each of the amt unrolled lanes)."""
  size = r.src[0].arg
  if not isinstance(size, int) or amt < 2 or size % amt != 0:
    raise KernelOptError(f"cannot split axis {r.arg[0]} of size {size} by {amt}: the amount must be >1 and divide the size")
  if size == amt: return r, [UOp.const(r.dtype, c) for c in range(amt)]
  outer = UOp.range(size // amt, r.arg[0], r.arg[1])
  return outer, [outer * amt + c for c in range(amt)]

def apply_opt(sink: UOp, opt: Opt) -> UOp:
  glob, red = kernel_ranges(sink)
  if opt.op is OptOps.UPCAST:
    if not 0 <= opt.axis < len(glob): raise KernelOptError(f"UPCAST axis {opt.axis} out of range: the kernel has {len(glob)} global axes")
    r = glob[opt.axis]
    _, lanes = _split(r, opt.arg)
    stores = [s2 for s in sink.src for s2 in ([s.substitute({r: ln}) for ln in lanes] if r in s.toposort() else [s])]
    return UOp(Ops.SINK, dtypes.void, tuple(stores), sink.arg)
  if opt.op is OptOps.UNROLL:
    if not 0 <= opt.axis < len(red): raise KernelOptError(f"UNROLL axis {opt.axis} out of range: the kernel has {len(red)} reduce axes")
    r = red[opt.axis]
    outer, lanes = _split(r, opt.arg)
    sub: dict[UOp, UOp] = {}
    for u in sink.toposort():
      if u.op is Ops.REDUCE and r in u.src[1:]:
        vals = [u.src[0].substitute({r: ln}) for ln in lanes]
        acc = vals[0]
        for v in vals[1:]: acc = UOp(u.arg, acc.dtype, (acc, v))
        rest = tuple(outer if x is r else x for x in u.src[1:] if not (x is r and outer is r))
        sub[u] = UOp(Ops.REDUCE, u.dtype, (acc,) + rest, u.arg) if rest else acc
    return sink.substitute(sub)
  raise KernelOptError(f"unknown optimization {opt.op}")

def apply_opts(sink: UOp, opts: list[Opt]) -> UOp:
  for o in opts: sink = apply_opt(sink, o)
  return sink

def hand_coded_opts(sink: UOp, ren: Renderer) -> list[Opt]:
  """Good actions without search. CPU-style targets: register-block reduce kernels (matmul-like) over the last two output
  axes and unroll small reduce steps; elementwise kernels are left to the C compiler's vectorizer."""
  if NOOPT or not ren.has_threads: return []
  glob, red = kernel_ranges(sink)
  opts: list[Opt] = []
  if red and glob:
    upcasted = 1
    # the reduce reads are shared between blocked outputs: up to 4x4 accumulators
    for ax in reversed(range(max(0, len(glob)-2), len(glob))):
      size = glob[ax].src[0].arg
      for amt in (4, 3, 2):
        if isinstance(size, int) and size % amt == 0 and size >= 2*amt:
          opts.append(Opt(OptOps.UPCAST, ax, amt))
          upcasted *= amt
          break
    rsize = red[-1].src[0].arg
    if upcasted <= 4 and isinstance(rsize, int) and rsize % 4 == 0 and rsize >= 16: opts.append(Opt(OptOps.UNROLL, len(red)-1, 4))
  return opts

def optimize(sink: UOp, ren: Renderer, opts: list[Opt] | None = None) -> UOp:
  """Apply `opts`, or the heuristics' choice when None."""
  return apply_opts(sink, hand_coded_opts(sink, ren) if opts is None else opts)
