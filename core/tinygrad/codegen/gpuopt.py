"""GPU optimization actions (LOCAL, GROUP, GROUPTOP), the pass that lowers grouped reduces to shared memory, and the
heuristics for renderers with threads in a block (`has_local` and a `local_max`).

- LOCAL(axis, amt): global axis `axis` (its position among the global axes) of size n becomes (n/amt) x amt, the inner
  part a LOCAL range: threads of one block (lidx). Thread axes become lidx0, lidx1, lidx2 in the order they were made,
  so the first LOCAL (or a tensor core's lane) is the fastest-varying thread index, the one warps are made of.
- GROUP(axis, amt) / GROUPTOP(axis, amt): reduce axis `axis` (its position among the reduce axes) of size n is shared by
  `amt` threads of a block. GROUP gives the threads the inner part (thread t reduces t, t+amt, ...: neighbouring threads
  read neighbouring elements when the reduce runs along memory); GROUPTOP the outer part (thread t reduces the contiguous
  chunk t*n/amt ...). The thread index is a GROUP_REDUCE range inside the REDUCE until `lower_groups` runs.

`lower_groups` (a codegen pass after the optimizer, when every UPCAST/UNROLL has made its copies) turns each REDUCE over
GROUP_REDUCE ranges into: the thread's partial reduce, a store of it to shared memory (DEFINE_LOCAL, one slot per thread
of the block), a BARRIER, and a tree of halving steps over the partials (each ends in a BARRIER); each global store is
then gated so only the threads at group position 0 write. Every action is validated against the renderer (has_local, has_shared,
local_max per launch dimension and in total threads, shared_max); an invalid one raises KernelOptError.
"""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.helpers import prod, NOOPT
from tinygrad.renderer import Renderer
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError, kernel_ranges, nth_axis, stride, apply_opt, _accesses, _axis, range_nodes

THREAD_KINDS = (AxisType.LOCAL, AxisType.GROUP_REDUCE)   # ranges that become a thread index in the block

def _ranges(sink: UOp) -> list[UOp]: return [u for u in sink.toposort() if u.op is Ops.RANGE]

def thread_ranges(sink: UOp) -> list[UOp]:
  """The ranges that are threads of a block, in launch-dimension order (lidx0 first)."""
  return sorted([r for r in _ranges(sink) if r.arg[1] in THREAD_KINDS], key=lambda r: r.arg[0])

def shared_bytes(sink: UOp) -> int:
  """Shared memory the grouped reduces of `sink` will take: one slot per thread of the block for each of them."""
  nthreads = prod(r.src[0].arg for r in thread_ranges(sink))
  return sum(nthreads * u.dtype.itemsize for u in sink.toposort() if u.op is Ops.REDUCE and any(r.arg[1] is AxisType.GROUP_REDUCE for r in u.src[1:]))

def _check_threads(sink: UOp, amt: int, ren: Renderer | None, what: str) -> None:
  """Raise unless one more thread axis of `amt` fits the renderer's blocks."""
  if ren is None or not ren.has_local or not ren.local_max:
    raise KernelOptError(f"{what} needs a renderer with threads in a block (has_local and local_max); "
                         f"{type(ren).__name__ if ren is not None else 'no renderer'} has none")
  trs = thread_ranges(sink)
  if len(trs) >= min(3, len(ren.local_max)):
    raise KernelOptError(f"{what}: the kernel already has {len(trs)} thread axes; {ren.device or 'this renderer'} launches at most {min(3, len(ren.local_max))}")
  if amt > ren.local_max[len(trs)]:
    raise KernelOptError(f"{what}: {amt} threads on launch dimension {len(trs)} exceed local_max {ren.local_max}")
  total = prod(r.src[0].arg for r in trs) * amt
  if total > ren.threads_max:
    raise KernelOptError(f"{what}: {total} threads per block exceed the {ren.threads_max} {ren.device or 'this renderer'} allows (threads_max)")

def _split_size(r: UOp, amt: int, what: str, axis: int) -> int:
  size = r.src[0].arg
  if r.src[0].op is not Ops.CONST or not isinstance(size, int) or amt < 2 or size % amt != 0:
    raise KernelOptError(f"{what} cannot split axis {axis} of size {r.src[0].render()} by {amt}: the amount must be >1 and divide the size")
  return size

def _new_id(sink: UOp) -> int: return 1 + max((r.arg[0] for r in _ranges(sink)), default=-1)

def _local(sink: UOp, opt: Opt, ren: Renderer | None) -> UOp:
  glob, _ = kernel_ranges(sink)
  r = nth_axis(glob, opt.axis, "LOCAL")
  if r.arg[1] is not AxisType.GLOBAL: raise KernelOptError(f"LOCAL axis {opt.axis} is a {r.arg[1].name} axis, not a global one")
  size = _split_size(r, opt.arg, "LOCAL", opt.axis)
  _check_threads(sink, opt.arg, ren, "LOCAL")
  lcl = UOp.range(opt.arg, _new_id(sink), AxisType.LOCAL, r.dtype)
  return sink.substitute({r: lcl if size == opt.arg else UOp.range(size // opt.arg, r.arg[0], AxisType.GLOBAL, r.dtype) * opt.arg + lcl})

def _open_ranges(u: UOp) -> set[UOp]:
  """The ranges `u`'s value varies with: those of its sources, less the ones a REDUCE inside it reduces over."""
  memo: dict[UOp, frozenset[UOp]] = {}
  for n in u.toposort():
    s: set[UOp] = {n} if n.op is Ops.RANGE else set()
    for x in (n.src[:1] if n.op is Ops.REDUCE else n.src): s |= memo[x]
    memo[n] = frozenset(s - set(n.src[1:])) if n.op is Ops.REDUCE else frozenset(s)
  return set(memo[u])

def _group(sink: UOp, opt: Opt, ren: Renderer | None) -> UOp:
  name = opt.op.name
  _, red = kernel_ranges(sink)
  r = nth_axis(red, opt.axis, name, "reduce")
  size = _split_size(r, opt.arg, name, opt.axis)
  _check_threads(sink, opt.arg, ren, name)
  assert ren is not None
  if not ren.has_shared: raise KernelOptError(f"{name} needs shared memory for the partial results; {ren.device or type(ren).__name__} has none (has_shared)")
  users = [u for u in sink.toposort() if u.op is Ops.REDUCE and r in u.src[1:]]
  for u in users:
    inner = [x for x in _open_ranges(u.src[0]) - set(u.src[1:]) if x.arg[1] in (AxisType.REDUCE, AxisType.GROUP_REDUCE)]
    if inner: raise KernelOptError(f"{name}: the reduce over axis {opt.axis} runs inside another reduce's loop: the next trip would overwrite its shared memory while threads still read it")
  grp = UOp.range(opt.arg, _new_id(sink), AxisType.GROUP_REDUCE, r.dtype)
  outer = UOp.range(size // opt.arg, r.arg[0], AxisType.REDUCE, r.dtype) if size != opt.arg else None
  if outer is None: val: UOp = grp
  elif opt.op is OptOps.GROUP: val = outer * opt.arg + grp        # threads take the inner part: neighbours read neighbours
  else: val = grp * (size // opt.arg) + outer                     # GROUPTOP: each thread reduces one contiguous chunk
  sub = {u: UOp(Ops.REDUCE, u.dtype, (u.src[0].substitute({r: val}),) + tuple(x for x in u.src[1:] if x is not r) +
                ((outer,) if outer is not None else ()) + (grp,), u.arg) for u in users}
  ret = sink.substitute(sub)
  if (need := shared_bytes(ret)) > ren.shared_max:
    raise KernelOptError(f"{name}: the partial results need {need} bytes of shared memory; {ren.device or 'this renderer'} has shared_max {ren.shared_max}")
  return ret

def apply_gpu_opt(sink: UOp, opt: Opt, ren: Renderer | None) -> UOp:
  """Apply LOCAL, GROUP or GROUPTOP (see the module docstring); raises KernelOptError when it does not apply."""
  if opt.op is OptOps.LOCAL: return _local(sink, opt, ren)
  return _group(sink, opt, ren)

def lower_groups(sink: UOp, ren: Renderer) -> UOp:
  """The codegen pass: each REDUCE over GROUP_REDUCE ranges becomes partial -> shared memory -> a tree of halving steps
  (threads in the lower half combine the upper half's partials into theirs, a BARRIER after each step) -> every thread
  reads the result at group position 0; GROUP_REDUCE ranges become LOCAL (thread) ranges and global stores are gated to
  group position 0. The tree takes log2(amt) steps where one thread reading every partial would take amt."""
  if not any(r.arg[1] is AxisType.GROUP_REDUCE for r in range_nodes(sink)): return sink   # (a CPU kernel: no toposort)
  groups = [r for r in _ranges(sink) if r.arg[1] is AxisType.GROUP_REDUCE]
  if (need := shared_bytes(sink)) > ren.shared_max:
    raise KernelOptError(f"grouped reduces need {need} bytes of shared memory; {ren.device or 'this renderer'} has shared_max {ren.shared_max}")
  # the thread's slot in the block: its thread indices, row-major in launch-dimension order (lidx0 fastest)
  slot, mul, strides = UOp.const(dtypes.index, 0), 1, {}
  for t in thread_ranges(sink):
    slot = slot + t * mul if mul != 1 else slot + t
    strides[t] = mul
    mul *= t.src[0].arg
  # rebuilt bottom-up, so a grouped reduce whose value holds another one gets that one lowered too
  done: dict[UOp, UOp] = {}
  n = 0
  for old in sink.toposort():
    u = old.replace(src=tuple(done[s] for s in old.src)) if old.src else old
    done[old] = u
    if u.op is not Ops.REDUCE or not any(x.arg[1] is AxisType.GROUP_REDUCE for x in u.src[1:]): continue
    gs = [x for x in u.src[1:] if x.arg[1] is AxisType.GROUP_REDUCE]
    rest = tuple(x for x in u.src[1:] if x.arg[1] is not AxisType.GROUP_REDUCE)
    partial = UOp(Ops.REDUCE, u.dtype, (u.src[0],) + rest, u.arg) if rest else u.src[0]
    # a float sum starts from +0.0 (-0.0 + -0.0 + ... is +0.0, torch's answer): a partial of one element adds it itself
    if not rest and u.arg is Ops.ADD and dtypes.is_float(u.dtype.scalar()): partial = partial + partial.const_like(0.0)
    smem = UOp(Ops.DEFINE_LOCAL, u.dtype.ptr(mul, AddrSpace.LOCAL), (), f"group{n}")
    n += 1
    bar = UOp(Ops.BARRIER, dtypes.void, (smem.index(slot).store(partial),))
    for g in gs:
      left = g.src[0].arg
      while left > 1:   # slots [0, left) of this axis hold partials: fold the upper half onto the lower one
        half = (left + 1) // 2
        active = g < left // 2
        other = smem.index(slot + half * strides[g], active).load(bar, dtype=u.dtype)
        both = UOp(u.arg, u.dtype, (smem.index(slot).load(bar, dtype=u.dtype), other))
        bar = UOp(Ops.BARRIER, dtypes.void, (smem.index(slot, active).store(both),))
        left = half
    done[old] = smem.index(slot.substitute({g: UOp.const(g.dtype, 0) for g in gs})).load(bar, dtype=u.dtype)
  ret = done[sink]
  # every thread of a group holds the same result: only position 0 writes it
  first = [g < 1 for g in groups]
  gate = first[0]
  for f in first[1:]: gate = gate & f
  st: dict[UOp, UOp] = {}
  for s in ret.toposort():
    # the STORE gets a gated copy of its INDEX (a load through the same INDEX keeps reading on every thread)
    if s.op is Ops.STORE and s.src[0].op is Ops.INDEX and s.src[0].src[0].op is Ops.DEFINE_GLOBAL:
      idx = s.src[0]
      st[s] = s.replace(src=(idx.replace(src=idx.src[:2] + (gate if len(idx.src) < 3 else idx.src[2] & gate,)),) + s.src[1:])
  ret = ret.substitute(st)
  return ret.substitute({g: UOp.range(g.src[0], g.arg[0], AxisType.LOCAL, g.dtype) for g in groups})

# ---- heuristics ----
LOCAL_TARGET = 128   # threads per block where outputs are plentiful (four 32-thread warps)
GROUP_TARGET = 256   # threads that share one reduce when outputs are few
FEW_OUTPUTS = 1 << 16   # fewer outputs than this cannot fill a GPU with one thread each: share the reduces among threads
MATMUL_TILE = (16, 4)   # matmul: 16x16 threads per block, each thread a 4x4 register tile of outputs

def _pow2(size: object, most: int) -> int:
  """The largest power of two <= most dividing size (1: none)."""
  return next((a for a in (most >> i for i in range(most.bit_length())) if isinstance(size, int) and a > 1 and size % a == 0), 1)

def _size(r: UOp) -> int | None: return r.src[0].arg if r.src[0].op is Ops.CONST else None

def gpu_opts(sink: UOp, ren: Renderer) -> list[Opt]:
  """Good actions without search for renderers with threads in a block:
  1. matmul-shaped kernels (a reduce whose loads each skip one of two global axes): a 16x16 LOCAL tile over both output
     axes (the store's contiguous axis first: it becomes lidx0, so a warp's loads are coalesced), then a 4x4 UPCAST of
     the axes' remaining parts (register blocking: 8 loads feed 16 FMAs) and UNROLL 4 of the reduce;
  2. reduces with few outputs: GROUP the reduce axis that runs along memory (threads read neighbouring elements; a
     reduce across memory first takes a LOCAL on the contiguous output axis) over up to 256 threads, UNROLL 8 (4 for short loops) the rest;
  3. everything else: UNROLL 4 of a reduce; the blocks of threads are the renderer's launch rule's (it knows the warp or
     wave width), except for a contiguous axis it cannot cut, which is padded to a multiple of 128 and made LOCAL.
  A kernel whose tensor core already laid out the threads is left alone."""
  if NOOPT or not ren.local_max or thread_ranges(sink): return []
  opts: list[Opt] = []
  cur = sink
  def add(o: Opt) -> bool:
    nonlocal cur
    try: nxt = apply_opt(cur, o, ren)
    except KernelOptError: return False
    cur = nxt
    opts.append(o)
    return True
  glob, red = kernel_ranges(cur)
  st, ld = _accesses(cur)
  sizes = [_size(g) for g in glob]
  outputs = prod(s if s is not None else FEW_OUTPUTS for s in sizes)
  cont = next((i for i in reversed(range(len(glob))) if st and all(stride(x, glob[i]) == 1 for x in st)), len(glob) - 1 if glob else None)
  # matmul: two global axes, each skipped by some load (that load is shared by the threads along the axis)
  skipped = [i for i in range(len(glob)) if None not in (s := [stride(x, glob[i]) for x in ld]) and 0 in s and sizes[i]]
  if red and cont is not None and cont in skipped and len(skipped) >= 2 and outputs >= FEW_OUTPUTS:
    other = next(i for i in reversed(skipped) if i != cont)
    ids = [glob[cont].arg[0], glob[other].arg[0]]
    lcl, up = MATMUL_TILE
    for aid in ids:   # the tile shrinks to the device's threads per block (this renderer instance's limits)
      room = max(1, ren.threads_max // prod(r.src[0].arg for r in thread_ranges(cur)))
      if (p := _axis(cur, aid)) is not None: add(Opt(OptOps.LOCAL, p, _pow2(_size(kernel_ranges(cur)[0][p]), min(lcl, room))))
    for aid in ids:
      if (p := _axis(cur, aid)) is not None and not add(Opt(OptOps.UPCAST, p, up)): add(Opt(OptOps.UPCAST, p, 2))
    add(Opt(OptOps.UNROLL, len(kernel_ranges(cur)[1]) - 1, 4))
    return opts
  if red and outputs < FEW_OUTPUTS:
    along = next((i for i in reversed(range(len(red))) if any(stride(x, red[i]) == 1 for x in ld)), None)
    # the reduce axis along memory when 8+ threads can share it, else the one the most threads can share
    gtarget = min(GROUP_TARGET, ren.threads_max, max(ren.local_max))   # no more threads than this device's work-group holds
    by_threads = sorted(reversed(range(len(red))), key=lambda i: -_pow2(_size(red[i]), gtarget))
    rax = along if along is not None and _pow2(_size(red[along]), gtarget) >= 8 else by_threads[0]
    nthreads = 1
    if along is None and cont is not None and (amt := _pow2(sizes[cont], 32)) > 1 and add(Opt(OptOps.LOCAL, cont, amt)): nthreads = amt
    rsize = _size(kernel_ranges(cur)[1][rax])
    # then unroll each thread's loop: more independent loads in flight per thread (8 where it runs 32+ trips)
    if (amt := _pow2(rsize, gtarget // nthreads)) >= 8 and add(Opt(OptOps.GROUP, rax, amt)) and isinstance(rsize, int) and rsize != amt:
      if rsize // amt < 32 or not add(Opt(OptOps.UNROLL, rax, 8)): add(Opt(OptOps.UNROLL, rax, 4))
    if opts: return opts
  # the renderer's launch rule (renderer/gpu.py split_launch) cuts the innermost axis into blocks sized for its warp or
  # wave; a size it cannot cut (no power-of-two divisor from 32 up) is padded to a multiple of 128 and made LOCAL here
  if cont is not None and (csize := sizes[cont]) is not None and _pow2(csize, LOCAL_TARGET) < 32 and csize >= 4 * LOCAL_TARGET:
    if add(Opt(OptOps.PADTO, cont, LOCAL_TARGET)): add(Opt(OptOps.LOCAL, cont, LOCAL_TARGET))
  if red: add(Opt(OptOps.UNROLL, len(red) - 1, 4))
  return opts
