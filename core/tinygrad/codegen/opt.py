"""Kernel optimization actions on a kernel's ranges, and the heuristics that pick them without search.

An action names an axis by its position among the kernel's ranges (globals first, then reduces, each in axis order).
Every action is validated: an invalid one raises KernelOptError and never changes the kernel.
"""
from __future__ import annotations
import functools
from dataclasses import dataclass
from enum import Enum, auto
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType, _rebuild, substitute_all
from tinygrad.dtype import dtypes, PtrDType
from tinygrad.helpers import NOOPT, OPTS, prod, all_int
from tinygrad.renderer import Renderer

class OptOps(Enum):
  UPCAST = auto()   # split a global axis and unroll the inner part: register blocking, several outputs per loop trip
  UNROLL = auto()   # split a reduce axis and unroll the inner part: several independent accumulations per loop trip
  THREAD = auto()   # CPU: split a global axis into `arg` chunks that become the outermost loop, the one threads divide
  PADTO = auto()    # round a global axis up to a multiple of `arg`; the extra iterations are gated off (odd sizes upcast)
  PEEL = auto()     # cut a reduce axis to a multiple of `arg`; the last size%arg steps run after its loop (odd sizes unroll)
  SWAP = auto()     # exchange the loop order of global axes `axis` and `arg` (which one is outermost, split by threads)
  TC = auto()       # map a matmul onto the renderer's tensor core number `arg` (codegen/tc.py; runs before the others)
  LOCAL = auto()    # GPU: split a global axis, the inner part becomes threads of a block (codegen/gpuopt.py)
  GROUP = auto()    # GPU: share a reduce axis among `arg` threads of a block (inner part), partials summed in shared memory
  GROUPTOP = auto() # GPU: the same with the outer part across threads (each thread reduces one contiguous chunk)

@dataclass(frozen=True)
class Opt:
  op: OptOps
  axis: int
  arg: int
  def __repr__(self) -> str: return f"Opt({self.op.name}, {self.axis}, {self.arg})"

class KernelOptError(ValueError):
  """An optimization action that does not apply to this kernel."""

def parse_opts(text: str) -> list[Opt]:
  """'LOCAL:0:16,GROUP:0:8' -> [Opt(LOCAL, 0, 16), Opt(GROUP, 0, 8)]: the OPTS flag's format."""
  out = []
  for part in (p for p in text.split(",") if p.strip()):
    name, *nums = part.strip().split(":")
    if name.upper() not in OptOps.__members__ or len(nums) != 2 or not all(n.lstrip("-").isdigit() for n in nums):
      raise ValueError(f"OPTS: {part!r} is not ACTION:axis:amount; actions: {', '.join(OptOps.__members__)}")
    out.append(Opt(OptOps[name.upper()], int(nums[0]), int(nums[1])))
  return out

def kernel_ranges(sink: UOp) -> tuple[list[UOp], list[UOp]]:
  """The kernel's global and reduce ranges, each sorted by axis id."""
  glob, red = _kernel_ranges(sink)
  return list(glob), list(red)
def range_nodes(sink: UOp) -> list[UOp]:
  """The RANGE nodes under `sink`, in no set order: a walk without toposort's second visit of each node."""
  seen, todo, out = {sink}, [sink], []
  while todo:
    for s in todo.pop().src:
      if s not in seen:
        seen.add(s)
        todo.append(s)
        if s.op is Ops.RANGE: out.append(s)
  return out
def _sorted_ranges(rngs: list[UOp]) -> tuple[tuple[UOp, ...], tuple[UOp, ...]]:
  glob = sorted([r for r in rngs if r.arg[1] not in (AxisType.REDUCE, AxisType.GROUP_REDUCE)], key=lambda r: r.arg[0])
  red = sorted([r for r in rngs if r.arg[1] is AxisType.REDUCE], key=lambda r: r.arg[0])
  return tuple(glob), tuple(red)
# the heuristics ask again for the ranges of the kernel they just built (a walk of up to 30k upcast nodes each time): kept
# on the kernel's SINK, and set by the actions that know them (_moved_ranges)
def _kernel_ranges(sink: UOp) -> tuple[tuple[UOp, ...], tuple[UOp, ...]]:
  if (kr := sink.__dict__.get("_kr")) is not None: return kr
  rngs = range_nodes(sink)
  # two ranges of one axis id keep their toposort order in the sort (stable): only then is that order needed
  if len({r.arg[0] for r in rngs}) != len(rngs): rngs = [u for u in sink.toposort() if u.op is Ops.RANGE]
  kr = sink.__dict__["_kr"] = _sorted_ranges(rngs)
  return kr
def _moved_ranges(old: UOp, new: UOp, moved: dict[UOp, UOp | None]) -> UOp:
  """`new`, the kernel `old` with every range in `moved` replaced by its value there (None: gone), knows its ranges
  without a walk; unless two ranges share an axis id (their order is then toposort's)."""
  glob, red = _kernel_ranges(old)
  rngs = [m for x in glob + red if (m := moved.get(x, x)) is not None]
  if "_kr" not in new.__dict__ and len({r.arg[0] for r in rngs}) == len(rngs): new.__dict__["_kr"] = _sorted_ranges(rngs)
  return new

def _split(r: UOp, amt: int) -> tuple[UOp, list[UOp]]:
  """r -> (outer range, the r value for each of the amt unrolled lanes)."""
  size = r.src[0].arg
  if not isinstance(size, int) or amt < 2 or size % amt != 0:
    raise KernelOptError(f"cannot split axis {r.arg[0]} of size {size} by {amt}: the amount must be >1 and divide the size")
  if size == amt: return r, [UOp.const(r.dtype, c) for c in range(amt)]
  outer = UOp.range(size // amt, r.arg[0], r.arg[1], r.dtype)
  return outer, [outer * amt + c for c in range(amt)]

def apply_opt(sink: UOp, opt: Opt, ren: Renderer | None = None) -> UOp:
  if opt.op in GPU_OPS:   # validated against the renderer's blocks and shared memory
    from tinygrad.codegen.gpuopt import apply_gpu_opt
    return apply_gpu_opt(sink, opt, ren)
  return _apply_cpu_opt(sink, opt)

# the heuristics apply their actions one by one to choose the next, then optimize applies the chosen list to the same
# kernel again: the CPU actions are pure functions of (hash-consed kernel, action), so the repeat is a cache hit
@functools.lru_cache(maxsize=32)
def _apply_cpu_opt(sink: UOp, opt: Opt) -> UOp:
  glob, red = kernel_ranges(sink)
  if opt.op is OptOps.UPCAST:
    r = nth_axis(glob, opt.axis, "UPCAST")
    # a tensor core's lane axis is a whole warp: fewer threads would run the WMMA on part of one (garbage on a GPU)
    if r.arg[1] is AxisType.LOCAL and any(u.op is Ops.WMMA and r in u.toposort() for u in sink.toposort()):
      raise KernelOptError(f"UPCAST axis {opt.axis} is a tensor core's lanes (a warp), which cannot be split")
    outer, lanes = _split(r, opt.arg)
    # a store that does not use the axis is kept once, one that does becomes one store per lane (the lanes of the whole
    # kernel in one walk: the stores of an upcast kernel share most of their graph)
    per_lane = sink.substitute_each(r, lanes)
    stores = [s2 for i in range(len(sink.src)) for s2 in dict.fromkeys(ls.src[i] for ls in per_lane)]
    # r's every use became a lane: its ranges are the old ones with r -> outer (or none when upcast whole)
    return _moved_ranges(sink, UOp(Ops.SINK, dtypes.void, tuple(stores), sink.arg), {r: None if outer is r else outer})
  if opt.op is OptOps.UNROLL:
    r = nth_axis(red, opt.axis, "UNROLL", "reduce")
    outer, lanes = _split(r, opt.arg)
    sub: dict[UOp, UOp] = {}
    reds = [u for u in sink.toposort() if u.op is Ops.REDUCE and r in u.src[1:]]
    # every reduce's lanes in one walk (an upcast kernel has one reduce per output lane, over shared loads)
    per_lane = UOp(Ops.SINK, dtypes.void, tuple(u.src[0] for u in reds)).substitute_each(r, lanes)
    for i, u in enumerate(reds):
      acc = per_lane[0].src[i]
      for ls in per_lane[1:]: acc = UOp(u.arg, acc.dtype, (acc, ls.src[i]))
      rest = tuple(outer if x is r else x for x in u.src[1:] if not (x is r and outer is r))
      # unrolled whole, no loop's +0.0 start remains: a float sum adds it (-0.0 + -0.0 is -0.0; torch's sum is +0.0)
      if not rest and u.arg is Ops.ADD and dtypes.is_float(acc.dtype.scalar()): acc = acc + acc.const_like(0.0)
      sub[u] = UOp(Ops.REDUCE, u.dtype, (acc,) + rest, u.arg) if rest else acc
    return sink.substitute(sub)
  if opt.op is OptOps.PEEL:
    r = nth_axis(red, opt.axis, "PEEL", "reduce")
    size = r.src[0].arg
    if not isinstance(size, int) or opt.arg < 2 or size % opt.arg == 0 or size < opt.arg:
      raise KernelOptError(f"PEEL reduce axis {opt.axis} of size {size} by {opt.arg}: the amount must be >1, at most the size and not divide it")
    main, cut = UOp.range(size - size % opt.arg, r.arg[0], r.arg[1], r.dtype), size - size % opt.arg
    sub = {}
    for u in sink.toposort():
      if u.op is Ops.REDUCE and r in u.src[1:]:
        rest = tuple(x for x in u.src[1:] if x is not r)
        # the tail steps are reduced over the reduce's other axes inside their loops: those must enclose r's
        if any(x.arg[0] > r.arg[0] for x in rest): raise KernelOptError(f"PEEL axis {opt.axis} is not the innermost axis of its reduce")
        acc = UOp(Ops.REDUCE, u.dtype, (u.src[0].substitute({r: main}),) + tuple(main if x is r else x for x in u.src[1:]), u.arg)
        for v in u.src[0].substitute_each(r, [UOp.const(r.dtype, c) for c in range(cut, size)]):
          acc = UOp(u.arg, u.dtype, (acc, UOp(Ops.REDUCE, u.dtype, (v,) + rest, u.arg) if rest else v))
        sub[u] = acc
    return sink.substitute(sub)
  if opt.op in _cpu_actions: return _cpu_actions[opt.op](sink, glob, opt)
  raise KernelOptError(f"unknown optimization {opt.op}")

def nth_axis(rngs: list[UOp], ax: int, what: str, kind: str = "global") -> UOp:
  """The action's axis `ax` among the kernel's `kind` ranges (kernel_ranges), or KernelOptError when it has no such axis."""
  if not 0 <= ax < len(rngs): raise KernelOptError(f"{what} axis {ax} out of range: the kernel has {len(rngs)} {kind} axes")
  return rngs[ax]

def _renumber(sink: UOp, new_id: dict[UOp, int]) -> UOp:
  """Give ranges new axis ids (the loop order), keeping their sizes and kinds."""
  sub = {r: UOp.range(r.src[0], i, r.arg[1], r.dtype) for r, i in new_id.items() if i != r.arg[0]}
  return _moved_ranges(sink, sink.substitute(sub), dict(sub))

def _swapped(glob: list[UOp], opt: Opt) -> list[UOp]:
  """The global ranges (kernel_ranges) after SWAP `opt`, without applying it (their ids differ: the sort is by id alone)."""
  a, b = glob[opt.axis], glob[opt.arg]
  new = {a: UOp.range(a.src[0], b.arg[0], a.arg[1], a.dtype), b: UOp.range(b.src[0], a.arg[0], b.arg[1], b.dtype)}
  return sorted([new.get(x, x) for x in glob], key=lambda r: r.arg[0])

def _swap(sink: UOp, glob: list[UOp], opt: Opt) -> UOp:
  a, b = nth_axis(glob, opt.axis, "SWAP"), nth_axis(glob, opt.arg, "SWAP")
  if a is b: raise KernelOptError(f"SWAP needs two different global axes, got {opt.axis} twice")
  return _renumber(sink, {a: b.arg[0], b: a.arg[0]})

def _thread(sink: UOp, glob: list[UOp], opt: Opt) -> UOp:
  r = nth_axis(glob, opt.axis, "THREAD")
  size = r.src[0].arg
  if not isinstance(size, int) or opt.arg < 2 or size % opt.arg != 0 or size == opt.arg:
    raise KernelOptError(f"THREAD cannot split axis {opt.axis} of size {size} into {opt.arg} chunks: the count must be >1 and a proper divisor")
  # every range moves one id up; the chunk index takes id 0 (the outermost loop), the rest of the axis keeps r's place
  rngs = sorted([u for u in sink.toposort() if u.op is Ops.RANGE], key=lambda u: -u.arg[0])
  shifted = {u: UOp.range(u.src[0], u.arg[0] + 1, u.arg[1], u.dtype) for u in rngs}
  chunk, inner = UOp.range(opt.arg, 0, r.arg[1], r.dtype), UOp.range(size // opt.arg, r.arg[0] + 1, r.arg[1], r.dtype)
  shifted[r] = chunk * (size // opt.arg) + inner
  return sink.substitute(shifted)

def _padto(sink: UOp, glob: list[UOp], opt: Opt) -> UOp:
  r = nth_axis(glob, opt.axis, "PADTO")
  size = r.src[0].arg
  if not isinstance(size, int) or opt.arg < 2 or size % opt.arg == 0:
    raise KernelOptError(f"PADTO axis {opt.axis} of size {size} to a multiple of {opt.arg}: the amount must be >1 and not divide the size")
  big = UOp.range((size + opt.arg - 1) // opt.arg * opt.arg, r.arg[0], r.arg[1], r.dtype)
  valid = big < size
  # the padded iterations store nothing: every store that depends on the axis is gated. When every store depends on it,
  # what they load reaches only their own (gated) stores, so a load reads the last real row instead (r clamped to size-1:
  # in bounds, a value the kernel also computes for a real row, so no new trap), ungated: a gate in a reduce loop costs
  # a branch or select per load (matmul 512's 6-row tile, 4 rows padded: 2.7 ms gated, against 1.9 for 4 rows unpadded).
  # Else (an axis some store does not use) every access is gated, loads too: padded iterations read nothing.
  order = sink.toposort()
  idxs = [u for u in order if u.op is Ops.INDEX and u.src[0].op is Ops.DEFINE_GLOBAL and r in u.src[1].range_set]
  stored = {s.src[0] for s in order if s.op is Ops.STORE}
  clamp = all(s.src[0].op is Ops.INDEX and r in s.src[0].src[1].range_set for s in order if s.op is Ops.STORE)
  gated = [u for u in idxs if u in stored or not clamp]
  loads = [u for u in idxs if u not in stored and clamp]
  gates = [valid if len(u.src) < 3 else (u.src[2] & valid) for u in gated]
  moved = substitute_all([u.src[1] for u in gated] + gates, {r: big})   # r -> big in every address and gate, one walk
  last = valid.where(big, UOp.const(big.dtype, size - 1))
  clamped = substitute_all([u.src[1] for u in loads] + [u.src[2] for u in loads if len(u.src) > 2], {r: last})
  sub: dict[UOp, UOp] = {r: big}
  for i, u in enumerate(gated): sub[u] = UOp(Ops.INDEX, u.dtype, (u.src[0], moved[i], moved[len(gated) + i]), u.arg)
  it = iter(clamped[len(loads):])
  for i, u in enumerate(loads): sub[u] = UOp(Ops.INDEX, u.dtype, (u.src[0], clamped[i]) + ((next(it),) if len(u.src) > 2 else ()), u.arg)
  # sink.substitute(gated).substitute({r: big}) in one walk: a gated access holds no r left to move
  done: dict[UOp, UOp] = {}
  for n in order: done[n] = sub[n] if n in sub else _rebuild(n, tuple(map(done.__getitem__, n.src)))
  return _moved_ranges(sink, done[sink], {r: big})

_cpu_actions = {OptOps.SWAP: _swap, OptOps.THREAD: _thread, OptOps.PADTO: _padto}
GPU_OPS = (OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP)

def apply_opts(sink: UOp, opts: list[Opt], ren: Renderer | None = None) -> UOp:
  for o in opts: sink = apply_opt(sink, o, ren)
  return sink

def stride(idx: UOp, r: UOp) -> int | None:
  """The coefficient of range `r` in an affine index (0: independent of it), or None where `r` enters non-linearly."""
  c, todo = 0, [idx]
  while todo:
    u = todo.pop()
    if u.op is Ops.ADD: todo.extend(u.src)
    elif u is r: c += 1
    elif u.op is Ops.MUL and u.src[0] is r and u.src[1].op is Ops.CONST: c += int(u.src[1].arg)
    elif u.op is Ops.MUL and u.src[1] is r and u.src[0].op is Ops.CONST: c += int(u.src[0].arg)
    elif r in u.range_set: return None
  return c

def _accesses(sink: UOp) -> tuple[list[UOp], list[UOp]]:
  """The index expressions of the kernel's global stores and loads."""
  st = [s.src[0].src[1] for s in sink.toposort() if s.op is Ops.STORE and s.src[0].op is Ops.INDEX]
  ld = [u.src[0].src[1] for u in sink.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.DEFINE_GLOBAL]
  return st, ld

def _vector_reduce(sink: UOp, r: UOp) -> bool:
  """Every global load that moves with reduce range `r` reads consecutive elements of it under a gate free of it: the
  vectorize pass can then keep the reduce in vector accumulators. Else (a strided or gathered operand, a concat's gate
  along r) the lanes stay scalar and a wide unroll only makes a long scalar loop body: ViT's LayerNorm statistics over its
  concatenated tokens unrolled 64 lanes into 70-90 KB of scalar IR that LLVM took ~0.4 s each to compile, for nothing."""
  for u in sink.toposort():
    if u.op is not Ops.LOAD or u.src[0].op is not Ops.INDEX or u.src[0].src[0].op is not Ops.DEFINE_GLOBAL: continue
    if stride(u.src[0].src[1], r) not in (0, 1) or any(r in g.range_set for g in u.src[0].src[2:]): return False
  return True

BIG_OPERAND = 8 << 20   # bytes: an operand this large does not stay in the shared (L3) cache next to the others
# bytes: a vector operand read in place (not packed) this large does not stay in one core's L2 beside the rows that pass
# it: its axis runs outermost too (each stripe of it, k x tile width, stays in L2 while every row passes) and the tile
# favours rows (matmul 512, B 1 MB: 8x2 vectors, stripes outermost 0.52-0.55 ms on 2 threads, 4x4 rows outermost 0.57-0.68)
STREAMED = 1 << 20
CHUNK_BYTES = 1 << 20   # bytes of the broadcast operand's rows one chunk of a panel-blocked matmul covers (both cores' L2)
TILE_ROWS = (8, 6, 4, 3, 2)
UNROLL_WORK = 1 << 27   # multiply-adds of a register-tiled reduce kernel from which its reduce is unrolled (hand_coded_opts)
TRANSPOSE_BYTES = 1 << 20   # an elementwise transpose this large or larger is tiled (a smaller one gained tens of us a
                            # call for ~30 ms more compile: ViT-Ti's cold call 5-8% longer with every transpose tiled)
TRANSPOSE_ROWS = (4, 2)   # rows of an elementwise transpose's tile, each read as one vector (see _hand_coded; 8 or 16
                          # rows compiled 2-6x longer for little more: 4096^2 x.T 12 ms at 4 rows, 9-12 at 8 or 16)
MATVEC_BYTES = 256   # bytes of each row of W one step of a matrix-vector product along W's columns reads (see _hand_coded)
MATVEC_ROWS = 64   # rows of W from which it does (a short reduce reads too few rows for the prefetchers to matter)
MATVEC_STEPS = 4   # and only where that leaves this many steps of its outer loops, for the threads to share
GATHER_TILE = 128   # outputs of a register tile whose epilogue gathers its lanes one by one (scalar loads)

def _divisor(size: object, amts: tuple[int, ...]) -> int:
  return next((a for a in amts if isinstance(size, int) and size % a == 0 and size >= a), 0)

PAD_ROWS = 8   # a block axis that (4, 3, 2) do not divide is padded to a multiple of this, when that adds at most 1/8 of its size (else of 4)

PAD_TILE = 32   # a big matmul's rows may be padded by up to 1/PAD_TILE of them to a register tile with more accumulators
PAD_ACCUMULATORS = 12   # registers of accumulators that cover the FMA latency (2 pipes x 4-5 cycles): fewer, padding may add more

SMALL_ROWS = 8   # a block axis this short that (4, 3, 2) do not divide (5, 7 kernel taps) is upcast whole

def _small(size: object) -> bool: return isinstance(size, int) and 2 <= size <= SMALL_ROWS and not _divisor(size, (4, 3, 2))

def _pad_rows(size: object) -> int:
  """The PADTO amount for a block axis of this size (0: none; it has a small divisor, or it is short enough to upcast
  whole): a multiple of PAD_ROWS where that adds at most 1/8 of its size, else of 4. (Unpadded, a prime like 13 or 17
  had a tile of one row, every vector of the other operand used once: 13x512 @ 512x512 302-327 us, 82-85 padded to 16)"""
  if not isinstance(size, int) or _divisor(size, (4, 3, 2)) or size <= SMALL_ROWS: return 0
  return PAD_ROWS if (-size % PAD_ROWS) * 8 <= size else 4

def _axis(sink: UOp, axis_id: int) -> int | None:
  """The position among the global axes of the range with this id (None: it was upcast away)."""
  return next((i for i, g in enumerate(kernel_ranges(sink)[0]) if g.arg[0] == axis_id), None)

def _pad_fits(rows: object, r: int) -> bool:
  """`rows` rounded up to a multiple of `r` adds at most 1/PAD_TILE of them (PADTO: the rows past the end are computed
  from the last real row's loads and not stored)."""
  return isinstance(rows, int) and rows >= r and (-rows % r) * PAD_TILE <= rows

def register_tile(ren: Renderer, rows: int, cols: int, vec_bytes: int, streamed: bool = False, pad: bool = False) -> tuple[int, int]:
  """(r, c): the register tile of a reduce kernel, r values of the block axis (dividing `rows`) by c vectors of `vec_bytes`
  (dividing `cols`), with the most accumulators the SIMD registers hold beside one row of vectors and a broadcast value;
  ties go to the fewest loads per step (r + vectors), then to more rows (the vector operand is the one read from cache).
  streamed: the vector operand is read in place from L2 (see STREAMED): ties go to more rows, fewer of its vectors a step.
  pad: where the dividing tiles hold fewer than PAD_ACCUMULATORS registers of accumulators, r may also be one `rows` is
  padded to (_pad_fits) for a tile with more (AVX2's 16 registers: 6 rows x 2 vectors, 12 accumulators, where 512 rows
  allow only 4 x 2: matmul 512 1.86 -> 1.72 ms; AVX-512's 4x4 vectors, 16, are enough)."""
  per_vec = max(1, -(-vec_bytes // (ren.register_bytes or ren.vector_bytes or vec_bytes)))
  def held(r: int, c: int) -> bool: return cols % c == 0 and (r*c + c)*per_vec + 1 <= ren.registers
  fits = [(r, c) for r in TILE_ROWS + ((rows,) if rows <= SMALL_ROWS else ()) for c in (1, 2, 4) if rows % r == 0 and held(r, c)]
  if pad and max((r*c for r, c in fits), default=0) * per_vec < PAD_ACCUMULATORS:
    padded = [(r, c) for r in TILE_ROWS for c in (1, 2, 4) if rows % r and _pad_fits(rows, r) and held(r, c)]
    if padded and max(r*c for r, c in padded) > max((r*c for r, c in fits), default=0): fits = padded
  key = (lambda t: (t[0]*t[1], t[0])) if streamed else (lambda t: (t[0]*t[1], -(t[0] + t[1]*per_vec), t[0]))
  return max(fits, key=key, default=(_divisor(rows, (4, 3, 2)) or 1, 1))

def panel_bytes(ren: Renderer) -> int:
  """The width in bytes of the panels Tensor.dot packs a big matmul's right operand into (0: never): the register tile's
  (its vectors for rows and columns every height divides), at least `ren.matmul_pack`. One k step of the tile then reads
  one contiguous row of one panel, which the cache blocking of hand_coded_opts needs: AVX-512's 4x4-vector tile in
  64-byte panels read 4 panels at once and went unblocked (matmul 1024, one core: 157 -> 233 GFLOPS in 256-byte ones)."""
  if not ren.matmul_pack: return 0
  vb = ren.vector_bytes
  # (memoized by every field it reads: Tensor.dot asks it for each matmul, and the tile search cost ~12 us of a@b's build)
  key = (ren.matmul_pack, vb, ren.register_bytes, ren.registers)
  if (pb := _PANEL_BYTES.get(key)) is None: pb = _PANEL_BYTES[key] = max(ren.matmul_pack, register_tile(ren, 24, 4, vb)[1] * vb if vb else 0)
  return pb
_PANEL_BYTES: dict[tuple, int] = {}

def _lone(sink: UOp, rid: int, vid: int | None) -> bool:
  """The range with id `rid` is the only range of the REDUCEs over it (not one loop of a conv's nest), and none of them
  depends on the range with id `vid` (when given)."""
  reds = [u for u in sink.toposort() if u.op is Ops.REDUCE and any(r.arg[0] == rid for r in u.src[1:])]
  return bool(reds) and all(len(u.src) == 2 for u in reds) and \
    (vid is None or not any(u.op is Ops.RANGE and u.arg[0] == vid for x in reds for u in x.toposort()))

def hand_coded_opts(sink: UOp, ren: Renderer) -> list[Opt]: return _hand_coded(sink, ren)[0]

def _hand_coded(sink: UOp, ren: Renderer) -> tuple[list[Opt], UOp, int]:
  """Good actions without search, for every renderer that is not a GPU (loops, maybe threads over the outer loop, maybe SIMD
  vectors; off with cpu_heuristics = False):
  1. vectorize the contiguous axis: a global axis with stride 1 in the stores and 0 or 1 in every load is upcast by the
     vector width (the vectorize pass makes vector loads, ALU and stores of it);
  2. register blocking in reduce kernels: the block axis, one the vector loads do not depend on (a matmul's rows), is
     upcast by r and the vector axis by c vectors, the largest r x c accumulator tile the renderer's registers hold
     (`register_tile`), so every vector loaded is used r times and every broadcast value c times;
  3. cache blocking: when the vector operand is read in contiguous panels (one step of the reduce advances it by one tile
     row: Tensor.dot's packed operand), the panel axis runs outside the block axis and the block axis is cut into chunks
     (THREAD: the outermost loop, split across cores) of CHUNK_BYTES of the other operand, so a panel stays in L2 while a
     chunk's rows pass; else a vector operand past one core's L2 (STREAMED) runs its axis outermost (matmul 2048: 23 -> 38 GFLOPS);
  4. the reduce: when it runs along memory (stride 1 in a load) and nothing was vectorized, it is unrolled by a few
     vector widths (vector accumulators, summed across lanes after the loop); else small steps of an untiled kernel are
     unrolled by 4.
  Also the kernel with the first n actions applied, and n: optimize applies only the rest (applying the list again from
  the start cost ViT-Ti's matmuls 25-95 ms each, where the split of a merged axis was simplified on the way)."""
  if NOOPT or not ren.cpu_heuristics: return [], sink, 0
  opts: list[Opt] = []
  cur, applied = sink, 0
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  # a SWAP chosen and not yet applied to cur: what is read after it (the global ranges, which it renumbers, and strides
  # along reduce ranges, which it keeps) needs no copy of the whole kernel with two ids exchanged, unless an action follows
  swap: Opt | None = None
  def add(o: Opt, simplify: bool = False) -> None:
    nonlocal cur, swap, applied
    if swap is not None: cur, swap = apply_opt(cur, swap), None
    cur = apply_opt(cur, o)
    if simplify: cur = graph_rewrite(cur, sym)   # the strides read below see through the div/mod the split folded
    opts.append(o)
    applied = len(opts)
  def swap_later(o: Opt) -> None:
    nonlocal swap
    if len({x.arg[0] for x in kernel_ranges(cur)[0]}) < len(kernel_ranges(cur)[0]): return add(o)   # (ties: order by the graph)
    opts.append(o)
    swap = o
  glob, red = kernel_ranges(cur)
  st, ld = _accesses(cur)
  # a reduce kernel's axes are chosen by the loads in its loop: an epilogue's (a residual, a transposed or concatenated
  # input, read once per output and gathered lane by lane when strided) must not leave the matmul unblocked (ViT's first
  # MLP adds the cat of its class token and transposed patch embeddings: scalar and unblocked, 32 ms instead of 0.9)
  epilogue = [x for x in ld if not any(r in x.toposort() for r in red)] if red else []
  ld = [x for x in ld if x not in epilogue]
  out_dt = next((s.src[1].dtype for s in cur.src if s.op is Ops.STORE), dtypes.float32)
  vw = max(2, ren.vector_bytes // out_dt.itemsize) if ren.vector_bytes else 4
  amts = tuple(a for a in (16, 8, 4, 2) if a <= vw)
  def split_lanes(i: int) -> int:
    # a merged axis (j//16, j%16 of a reshaped operand, as Tensor.dot's packed one): the lanes, a multiple of the vector
    # width, after which every index is affine in what is left of the axis (0: none). Only the index expressions are
    # split and simplified to find out (the whole upcast kernel is 10-60x larger: seconds per kernel)
    r, exprs = glob[i], [x for x in st + ld if stride(x, glob[i]) is None]   # st, ld: cur's accesses (nothing applied yet)
    every = UOp(Ops.SINK, dtypes.void, tuple(exprs))
    for amt in (a * _divisor(r.src[0].arg, amts) for a in (1, 2, 4)):
      if not amt or r.src[0].arg % amt: break
      outer, lanes = _split(r, amt)
      if outer is r: return amt   # the whole axis is upcast: every lane is a constant
      # lane by lane: an axis that stays non-affine (most of those tried) is rejected by its first lane
      if all(stride(y, outer) is not None for v in lanes for y in graph_rewrite(every.substitute({r: v}), sym).src):
        return amt
    return 0
  vec = next((i for i in reversed(range(len(glob))) if st and all(stride(x, glob[i]) == 1 for x in st) and
              all(stride(x, glob[i]) in (0, 1, None) for x in ld) and _divisor(glob[i].src[0].arg, amts)), None)
  # an elementwise transpose (the stores run along an axis every load crosses with a fixed stride): that axis is upcast all
  # the same, vector stores and ALU over loads gathered lane by lane (the CNN's channels-last copies: 0.59 -> 0.35 ms, ViT's
  # weight transposes 0.075 -> 0.06 ms, one thread). Not under gates along it (a cat's: 16 gated scalar loads a vector,
  # LLVM took 30 instead of 19 ms over ViT's E_3_7_64_32 for nothing)
  tile: int | None = None
  if vec is None and st and not red:
    gates = [u.src[0].src[2] for u in cur.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) > 2]
    vec = next((i for i in reversed(range(len(glob))) if all(stride(x, glob[i]) == 1 for x in st) and not any(glob[i] in g.range_set for g in gates)
                and None not in [stride(x, glob[i]) for x in ld] and _divisor(glob[i].src[0].arg, amts)), None)
    # and the axis the gathered loads run along is upcast too (a transposing tile: the values each line read brings are used
    # at once, LLVM packs them into vectors): a 4096^2 x.T.contiguous() 74 -> 12 ms, a gather used one value of each line
    if vec is not None and ren.vector_bytes and all_int(sizes := [g.src[0].arg for g in glob]) and prod(sizes) * out_dt.itemsize >= TRANSPOSE_BYTES:
      tile = next((i for i in reversed(range(len(glob))) if i != vec and any(stride(x, glob[i]) == 1 for x in ld)
                   and None not in [stride(x, glob[i]) for x in st + ld] and all(stride(x, glob[i]) != 0 for x in st)
                   and not any(glob[i] in g.range_set for g in gates) and _divisor(glob[i].src[0].arg, amts)), None)
  merged = vec is not None and any(stride(x, glob[vec]) is None for x in ld)
  lanes = (split_lanes(vec) if merged else _divisor(glob[vec].src[0].arg, amts)) if vec is not None else 1
  if not lanes: vec, lanes, tile = None, 1, None
  # the block axis (reduce kernels): one the vector loads do not depend on, else one some load does not depend on
  vloads = [x for x in ld if vec is not None and stride(x, glob[vec]) != 0]
  cands = [i for i in reversed(range(len(glob))) if red and i != vec and None not in (strides := [stride(x, glob[i]) for x in ld])
           and 0 in strides and (_divisor(glob[i].src[0].arg, (4, 3, 2)) or _pad_rows(glob[i].src[0].arg) or _small(glob[i].src[0].arg))]
  # the kernel's global loads (their INDEX), one walk for the two questions below (the largest operand, the streamed one)
  gidx = [(u.src[0], dt) for u in cur.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and isinstance(dt := u.src[0].src[0].dtype, PtrDType)]
  # the largest operand the reduce reads (W), when no axis is vectorized: both questions below are about it
  widest = max(((x.src[1], dt.size) for x, dt in gidx if x.src[1] in ld), key=lambda t: t[1], default=(None, 0))[0] if vec is None and cands else None
  if widest is not None and len(cands) > 1:
    # no vector axis (both operands run along the reduce: x @ W.T, an nn.Linear over a few rows): the block axis is one the
    # largest operand does not move with, so each of its loads serves every row of the tile (blocked along W's rows, W was
    # read again for every row of x: GPT-2's 5-token prefill at 7 GFLOPS, 5x the time of reading its weights once)
    cands.sort(key=lambda i: stride(widest, glob[i]) != 0)
  block = next((i for i in cands if all(stride(x, glob[i]) == 0 for x in vloads)), next(iter(cands), None))
  # a matrix-vector product along W's rows (x @ W.T for one row of x, GPT-2's logits): the only block axis is W's rows, whose
  # upcast reuses no load of W, only x's, and its lanes gathered row by row left a scalar loop (the 768 x 50257 head at 5
  # GB/s): no block axis, each row's dot product runs along W's memory in vector accumulators, as a row sum's does
  if widest is not None and block is not None and len(cands) == 1 and _divisor(red[-1].src[0].arg, (vw,)) and \
     stride(widest, glob[block]) != 0 and stride(widest, red[-1]) == 1: block = None
  # a row's own reduces (fused softmax, layer norm), which neither the vector nor the block axis reaches: nothing to block
  if red and any(i is not None and all(_lone(sink, r.arg[0], glob[i].arg[0]) for r in red) for i in (vec, block)): block = None
  block_id, vec_id = (glob[block].arg[0] if block is not None else None), (glob[vec].arg[0] if vec is not None else None)
  # the vector operand (loads the block axis does not move) in place and past STREAMED (Tensor.dot's packed one, a merged
  # axis, is read in panels instead)
  vbytes = max((dt.size * dt.base.itemsize for x, dt in gidx if block is not None and stride(x.src[1], glob[block]) == 0), default=0)
  streamed = not merged and vbytes >= STREAMED
  # rows of the block axis stored side by side: the vectorize pass packs their lanes (stores, and values gathered row by row)
  packed_rows = block is not None and bool(st) and all(stride(x, glob[block]) == 1 for x in st)
  rows, padded_rows = 1, False
  if vec is not None: add(Opt(OptOps.UPCAST, vec, lanes), simplify=merged)
  if tile is not None and (ti := _axis(cur, glob[tile].arg[0])) is not None and (rows_t := _divisor(glob[tile].src[0].arg, TRANSPOSE_ROWS)):
    add(Opt(OptOps.UPCAST, ti, rows_t))
  if block is not None and block_id is not None:
    # a block axis with no small divisor (197 tokens, a prime) is padded to a multiple of PAD_ROWS: the extra rows are gated
    # off, every other row is register-blocked as usual (unpadded it ran one row at a time: 2 GFLOPS)
    if (pad := _pad_rows(glob[block].src[0].arg)) and (bi := _axis(cur, block_id)) is not None: add(Opt(OptOps.PADTO, bi, pad))
    vi = _axis(cur, vec_id) if vec_id is not None else None
    left = kernel_ranges(cur)[0][vi].src[0].arg if vi is not None and lanes == vw else 1
    bsize = kernel_ranges(cur)[0][bi].src[0].arg if (bi := _axis(cur, block_id)) is not None else glob[block].src[0].arg
    # an epilogue gathered lane by lane (strided along the vector axis) is one scalar load per output of the tile: one vector
    # wide and at most GATHER_TILE outputs keep it short (ViT's first MLP: 136 KB of IR, 1 s of LLVM at 4x4 vectors; 72 KB,
    # 0.23 s at 8x1, and no slower; a 64-wide panel is 2 rows of 4 vectors)
    gathered = vec is not None and any(stride(x, glob[vec]) not in (0, 1) for x in epilogue)
    # (a padded tile only for a matmul of at least UNROLL_WORK multiply-adds: its 1.5x longer body costs compile time)
    big = all_int(sizes := [g.src[0].arg for g in glob] + [x.src[0].arg for x in red]) and prod(sizes) >= UNROLL_WORK and not pad
    rows, c = register_tile(ren, bsize, left if isinstance(left, int) and not gathered else 1, lanes * out_dt.itemsize, streamed, big) if vec is not None \
      else (_divisor(bsize, TILE_ROWS if not packed_rows else (4, 3, 2)) or (bsize if _small(bsize) else 1), 1)
    if gathered: rows = next((r for r in TILE_ROWS if r <= rows and bsize % r == 0 and r * lanes <= GATHER_TILE), 1)
    if c > 1 and vi is not None:
      add(Opt(OptOps.UPCAST, vi, c))
      lanes *= c
    if (bi := _axis(cur, block_id)) is not None and rows > 1:
      if padded_rows := isinstance(bsize, int) and bsize % rows != 0: add(Opt(OptOps.PADTO, bi, rows))
      add(Opt(OptOps.UPCAST, bi, rows))
  # a matrix-vector product along W's columns (x @ W for one row of x, a column sum): no block axis, and one vector of
  # columns walked down W's rows read 64 bytes of each row (12 KB apart), which the prefetchers do not follow (GPT-2's
  # 768 x 3072 at 9-20 GB/s); MATVEC_BYTES of each row per step, in as many vector accumulators
  if vec is not None and vec_id is not None and block is None and red and ren.vector_bytes and not merged and lanes == vw and \
     isinstance(w_rows := red[-1].src[0].arg, int) and w_rows >= MATVEC_ROWS and not _lone(sink, red[-1].arg[0], vec_id) and \
     (vi := _axis(cur, vec_id)) is not None and all_int(outer := [g.src[0].arg for g in kernel_ranges(cur)[0]]):
    strips = _divisor(outer[vi], (max(1, MATVEC_BYTES // (lanes * out_dt.itemsize)),))
    if strips > 1 and prod(outer) // strips >= MATVEC_STEPS:
      add(Opt(OptOps.UPCAST, vi, strips))
      lanes *= strips
  upcast = lanes * rows
  if block_id is not None and (bi := _axis(cur, block_id)) is not None:
    g, r = kernel_ranges(cur)
    shared = [u.src[0] for u in cur.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and stride(u.src[0].src[1], g[bi]) == 0]
    panel = next((i for i in range(len(g)) if i != bi and any(stride(x.src[1], g[i]) not in (0, None) for x in shared)), None)
    # (an epilogue's loads, a bias read once per output, do not run along the reduce: they do not count)
    inner = [x for x in shared if r and r[-1] in x.src[1].range_set]
    contiguous = bool(inner) and all(stride(x.src[1], r[-1]) == lanes for x in inner)
    if contiguous and panel is not None:
      if panel > bi:
        block_id = g[panel].arg[0]   # SWAP exchanges the two ranges' ids: the block axis now has the panel's
        swap_later(Opt(OptOps.SWAP, bi, panel))
      now = _swapped(g, swap) if swap is not None else kernel_ranges(cur)[0]
      bi = next((i for i, x in enumerate(now) if x.arg[0] == block_id), None)
      tiles = now[bi].src[0].arg if bi is not None else 0
      rsize = r[-1].src[0].arg
      per_chunk = max(1, CHUNK_BYTES // (rows * rsize * out_dt.itemsize)) if isinstance(rsize, int) else 0
      count = tiles // per_chunk if isinstance(tiles, int) and per_chunk and tiles % per_chunk == 0 else 0
      # a padded tile's count of tiles (2052 rows / 6: 342) is rarely a multiple of a chunk: the fewest chunks of at most
      # one, an even count (the chunks are shared out among the cores: 9 on 2 cores left one 5 chunks and the other 4)
      if padded_rows and not count and isinstance(tiles, int) and per_chunk:
        count = next((n for n in range(-(-tiles // per_chunk), tiles + 1) if tiles % n == 0 and n % 2 == 0), 0)
      if bi is not None and 1 < count < tiles: add(Opt(OptOps.THREAD, bi, count))
    else:
      if (streamed or vbytes >= BIG_OPERAND) and vec_id is not None and (vi := _axis(cur, vec_id)) is not None and bi < vi: swap_later(Opt(OptOps.SWAP, bi, vi))
  def vred(ri: int) -> tuple[int, int]:
    # (unroll, peel) for reduce axis ri when it runs along memory: by a few vector widths (vector accumulators, summed
    # across lanes after the loop); a length no such unroll divides (197 tokens: attention's softmax) runs its last steps
    # after the loop (PEEL), so the rest still gets vector accumulators (unpeeled: one scalar step at a time, 0.4 ms per
    # ViT-Ti softmax kernel)
    r, ld = kernel_ranges(cur)[1][ri], _accesses(cur)[1]
    if not ren.vector_bytes or not any(stride(x, r) == 1 for x in ld) or not _vector_reduce(cur, r): return 0, 0
    size = r.src[0].arg
    wide = _divisor(size, tuple(4*a for a in amts))
    return wide, 0 if wide else next((4*a for a in amts if isinstance(size, int) and size >= 8*a), 0)
  def unroll(ri: int, wide: int, peel: int) -> None:
    if peel: add(Opt(OptOps.PEEL, ri, peel))
    if wide or peel: add(Opt(OptOps.UNROLL, ri, wide or peel))
  # a reduce of its own range that the vector axis does not reach (a softmax row's max and sum, fused into the kernel that
  # writes the row) runs once per row, outside that axis' loop: it is vectorized along its range as a reduce kernel's is
  for rid in [r.arg[0] for r in kernel_ranges(cur)[1][:-1] if _lone(sink, r.arg[0], vec_id)]:
    ri = next(i for i, r in enumerate(kernel_ranges(cur)[1]) if r.arg[0] == rid)
    unroll(ri, *vred(ri))
  if red:
    red = kernel_ranges(cur)[1]
    rsize = red[-1].src[0].arg
    wide, peel = vred(len(red)-1) if vec is None or (vec_id is not None and _lone(sink, red[-1].arg[0], vec_id)) else (0, 0)
    # block rows upcast (no vector axis): the vectorize pass packs the rows' lanes, gathering each from its own row, so a
    # wide partial unroll only lengthens scalar code (ViT's 1000-class head: 89 KB of IR, 0.3 s of LLVM, a slower loop);
    # a full one, no loop left, stays (a short unroll would sum the lanes in another order: other low bits)
    # (the last action, valid by its choice, is not applied here: nothing reads the kernel after it; optimize applies it)
    if peel and rows == 1: unroll(len(red)-1, 0, peel)
    elif wide and (rows == 1 or (wide == rsize and packed_rows)): opts.append(Opt(OptOps.UNROLL, len(red)-1, wide))
    # rows not side by side (a few-row x @ W.T): one vector accumulator per row; one vector a step is enough for a loop
    # bound by reading W, and wider, LLVM took 4-5x as long over the rows' unrolled bodies (GPT-2 tiny: 36 -> 160-206 ms)
    elif wide and not packed_rows and (one := _divisor(rsize, (vw,))): opts.append(Opt(OptOps.UNROLL, len(red)-1, one))
    # small steps of a tile of at most 64 lanes are unrolled by 4; a bigger tile's step is long enough (AVX-512's 4x4-vector
    # matmul tile: unrolled by 2 it ran no faster and doubled its IR, 15% of ViT-Ti's cold-call CPU)
    elif isinstance(rsize, int) and upcast <= 64 and rsize % 4 == 0 and rsize >= 16: opts.append(Opt(OptOps.UNROLL, len(red)-1, 4))
    # a big tile's one reduce (a matmul) with at least UNROLL_WORK multiply-adds: unrolled by 4 all the same, a loop of
    # 4 steps of loads and FMAs runs ~10% faster (AVX-512, 4x4 vectors: matmul 512/1024/2048 at 291/313/309 -> 319/347/349
    # GFLOPS; by 2: no faster), worth its longer compile (4x the loop body) only for kernels that long
    elif isinstance(rsize, int) and len(red) == 1 and rsize % 4 == 0 and rsize >= 16 and \
        all_int(sizes := [g.src[0].arg for g in kernel_ranges(cur)[0]]) and prod(sizes) * rsize * upcast >= UNROLL_WORK:
      opts.append(Opt(OptOps.UNROLL, len(red)-1, 4))
  return opts, cur, applied

def heuristic_opts(sink: UOp, ren: Renderer) -> list[Opt]:
  """The heuristics' choice: GPU-style ones for renderers with threads in a block, else the CPU-style ones (unless the
  renderer opts out with cpu_heuristics = False). OPTS forces
  its actions on every kernel they fit (the conformance suite under forced options); others get the heuristics."""
  return _heuristic(sink, ren)[0]

def _heuristic(sink: UOp, ren: Renderer) -> tuple[list[Opt], UOp, int]:
  # (heuristic_opts, and the kernel with the first n of them applied, and n: see _hand_coded)
  if OPTS.value and not NOOPT:
    forced = [o for o in parse_opts(OPTS.value) if o.op is not OptOps.TC]
    try: return forced, apply_opts(sink, forced, ren), len(forced)
    except KernelOptError: pass   # they do not fit this kernel: the heuristics decide
  if ren.has_local and not ren.has_threads:
    from tinygrad.codegen.gpuopt import gpu_opts
    return gpu_opts(sink, ren), sink, 0
  return _hand_coded(sink, ren)

def optimize(sink: UOp, ren: Renderer, opts: list[Opt] | None = None) -> UOp:
  """Apply `opts`, or the heuristics' choice when None."""
  if opts is not None: return apply_opts(sink, opts, ren)
  opts, cur, n = _heuristic(sink, ren)
  return apply_opts(cur, opts[n:], ren)
