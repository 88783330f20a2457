"""Multi-device tensors: a MULTI UOp bundles one tensor-level graph per device (its shards); arg is the sharded axis, or
None when every device holds the whole tensor (replicated). Its shape is the logical one, its device the tuple of its
shards' devices.

A MULTI is lowered as it is built (this module registers `lower` with the IR, uop/ops.py's register_multi_lowering, which
builds any node with a MULTI or a DEVICE(tuple) source through it):
elementwise ops run per shard, movement ops keep or move the sharded axis, a reduce over the sharded axis is an all-reduce
(a partial reduce per device, COPYs between devices and combining kernels), and whatever moves elements across shards
first gathers them. So MULTI only ever sits at the top of a graph, the scheduler sees per-device graphs and COPYs, and
every device plugin gets sharding without writing any of it.

Uneven splits follow tinygrad 0.9's rule (public tinygrad today refuses them): each shard holds ceil(size/n) elements
of the axis and the last one the remainder; a split that would leave a shard empty is an error (an empty axis splits into
empty shards, as public tinygrad's)."""
from __future__ import annotations
import functools, weakref
from typing import Any, Sequence
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, register_multi_lowering, sint_eq, ssimplify
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import prod, ceildiv, RING, RING_BYTES, ALL2ALL, ALLREDUCE_CAST

# ops applied shard by shard once the operands share one layout
_ELEMENTWISE = set(GroupOp.ALU) | {Ops.CAST, Ops.BITCAST, Ops.CONTIGUOUS, Ops.DETACH, Ops.ASSIGN}

def shard_bounds(size: int, n: int) -> list[tuple[int, int]]:
  """The [start, end) of each of `n` shards of an axis of `size`: ceil(size/n) each, the remainder to the last."""
  sz = ceildiv(size, n)
  b = [(min(i*sz, size), min((i+1)*sz, size)) for i in range(n)]
  if size and any(e <= s for s, e in b):   # (an empty axis splits as public tinygrad's: 0 on each device)
    raise ValueError(f"cannot split an axis of size {size} over {n} devices: {sz} per shard (ceil) leaves a shard empty; "
                     "shard another axis, use fewer devices, or replicate with axis=None")
  return b

def bounds(m: UOp) -> list[tuple[int, int]]:
  """The [start, end) of each shard of MULTI `m` along its axis."""
  out, off = [], 0
  for s in m.src:
    out.append((off, off + s.shape[m.arg]))
    off += s.shape[m.arg]
  return out

def shard_regions(m: UOp) -> list[tuple]:
  """The [start, end) per axis of the part of the whole (logical) tensor each shard of a sharded MULTI `m` holds."""
  if is_mesh(m): return [_block_slice(m.shape, m.arg, i) for i in range(len(m.src))]
  return [tuple((b, e) if d == m.arg else (0, n) for d, n in enumerate(m.shape)) for b, e in bounds(m)]

def describe(u: UOp) -> str:
  if u.op is not Ops.MULTI: return f"on {u.device}"
  if is_mesh(u): return f"sharded over {u.device} on a mesh ({', '.join(f'axis {a} in {max(p)+1}' for a, p in u.arg)})"
  return f"sharded over {u.device} " + ("replicated" if u.arg is None else f"on axis {u.arg} as {[e - b for b, e in bounds(u)]}")

Layout = int | None | tuple   # a MULTI's arg: sharded axis, None (replicated), or a mesh ((axis, piece per device), ...)
def multi(srcs: Sequence[UOp], axis: Layout) -> UOp:
  if isinstance(axis, tuple):   # a mesh in its simplest spelling: None without axes, the axis when it is a plain split
    axis = tuple(sorted(axis))
    if not axis: axis = None
    elif len(axis) == 1 and axis[0][1] == tuple(range(len(srcs))): axis = axis[0][0]
  return UOp(Ops.MULTI, srcs[0].dtype, tuple(srcs), axis)

# ---- 2-D (mesh) sharding: several axes split at once, each device holding one block (devices may hold the same block) ----
def is_mesh(m: UOp) -> bool: return m.op is Ops.MULTI and isinstance(m.arg, tuple)
def _as_mesh(m: UOp) -> tuple:
  """The layout of `m` as a mesh ((axis, piece per device), ...); a plain split must be even."""
  if is_mesh(m): return m.arg
  if m.arg is None: return ()
  if len({s.shape[m.arg] for s in m.src}) != 1: raise RuntimeError(f"a mesh needs even shards; the tensor is {describe(m)}")
  return ((m.arg, tuple(range(len(m.src)))),)
def _block(mesh: tuple, i: int) -> tuple: return tuple(p[i] for _, p in mesh)
def _block_slice(shape: tuple, mesh: tuple, i: int) -> tuple:
  """The [start, end) per axis of the block device i holds in a tensor of (logical) `shape`."""
  arg = [(0, n) for n in shape]
  for a, p in mesh:
    sz = shape[a] // (max(p) + 1)
    arg[a] = (p[i] * sz, (p[i] + 1) * sz)
  return tuple(arg)
def _mesh_assemble(m: UOp, d: str) -> UOp:
  """All of mesh-sharded `m` on device `d`: one holder of each block (d itself where it has it) copied over and padded in."""
  mesh, parts, seen = m.arg, [], set()
  order = sorted(range(len(m.src)), key=lambda i: m.src[i].device != d)   # d's own blocks first
  for i in order:
    if (key := _block(mesh, i)) in seen: continue
    seen.add(key)
    b = m.src[i] if m.src[i].device == d else _copy(m.src[i], d)
    parts.append((b, tuple((lo, n - hi) for (lo, hi), n in zip(_block_slice(m.shape, mesh, i), m.shape))))
  return _place(parts)
def _mesh_slice(r: UOp, mesh: tuple) -> UOp:
  """Replicated `r` laid out as `mesh`: each device keeps its block."""
  return multi([s.shrink(_block_slice(r.shape, mesh, i)) for i, s in enumerate(r.src)], mesh)
def _splits(m: UOp, axes: tuple[int, ...]) -> bool:
  """Whether a reduce over `axes` of multi-device `m` crosses its shards (a mesh's or a plain split's axis is among them)."""
  return any(a in axes for a, _ in m.arg) if is_mesh(m) else m.arg is not None and m.arg in axes
def _on(parts: list[UOp], j: int, i: int, m: UOp) -> UOp:
  """Device j's value of `parts` on device i of `m` (a copy unless j is i)."""
  return parts[j] if j == i else _copy(parts[j], m.src[i].device)
def first_holders(m: UOp) -> list[bool]:
  """For each shard of mesh-sharded `m`: whether it is the first device holding its block (the others hold copies)."""
  seen: set = set()
  return [not (k in seen or seen.add(k)) for k in (_block(m.arg, i) for i in range(len(m.src)))]  # type: ignore[func-returns-value]
def sum_replicas(m: UOp, parts: list[UOp]) -> UOp:
  """Per-device partial values `parts` laid out as mesh `m`: every holder of a block gets the sum over its holders."""
  blocks = [_block(m.arg, i) for i in range(len(m.src))]
  return multi([functools.reduce(lambda a, b: _combine(Ops.ADD, a, b), [_on(parts, j, i, m) for j in range(len(parts)) if blocks[j] == blocks[i]])
                for i in range(len(parts))], m.arg)

def shard_by(m: UOp, axis: int, piece: UOp) -> UOp:
  """`m` (replicated or sharded on other axes) split along `axis` too: device i keeps piece `piece`(i) of it, `piece` an
  expression of a DEVICE range (UOp.range(n, -1, AxisType.DEVICE) // 2: a 2 x 2 mesh with the next axis split by % 2)."""
  if m.op is not Ops.MULTI: raise RuntimeError(f"_shard: {describe(m)}; copy it to the devices first (copy_to_device)")
  rng = next((n for n in piece.toposort() if n.op is Ops.RANGE), None)
  if rng is None or rng.src[0].op is not Ops.CONST or rng.src[0].arg != len(m.src):
    raise RuntimeError(f"_shard: the piece index must be an expression of a DEVICE range over the {len(m.src)} devices")
  pieces = tuple(int(piece.substitute({rng: UOp.const(rng.dtype, i)}).simplify().arg) for i in range(len(m.src)))
  count, mesh = max(pieces) + 1, _as_mesh(m)
  if any(a == axis for a, _ in mesh): raise RuntimeError(f"_shard: axis {axis} is sharded already ({describe(m)})")
  if m.shape[axis] % count: raise RuntimeError(f"multi axis uneven: axis {axis} of size {m.shape[axis]} in {count} pieces")
  sz = m.shape[axis] // count
  return multi([s.shrink(_on_axis(s.shape, axis, (p * sz, (p + 1) * sz), lambda n: (0, n))) for s, p in zip(m.src, pieces)], mesh + ((axis, pieces),))
def _dev(d: str) -> UOp: return UOp(Ops.DEVICE, arg=d)
def _copy(u: UOp, d: str) -> UOp:
  """`u` on device `d`: a COPY, or for a broadcast constant the same constant made there (no data to move)."""
  c = u
  while c.op in GroupOp.Movement or c.op is Ops.CAST: c = c.src[0]
  if c.op is Ops.CONST: return u.substitute({n: _dev(d) for n in u.toposort() if n.op is Ops.DEVICE})
  # nothing to move either: an empty piece's COPYs (each shard's empty graph the same node) ordered as a cycle of assigns
  if any(isinstance(s, int) and s == 0 for s in u.shape): return UOp.const(u.dtype, 0, src=(_dev(d),)).reshape((1,) * len(u.shape)).expand(u.shape)
  return UOp(Ops.COPY, u.dtype, (u, _dev(d)))
def _on_axis(shape: tuple, axis: int, v: Any, other: Any) -> tuple:
  return tuple(v if i == axis else (other(s) if callable(other) else other) for i, s in enumerate(shape))
def _combine(op: Ops, a: UOp, b: UOp) -> UOp: return a.alu(Ops.OR if op is Ops.ADD and a.dtype == dtypes.bool else op, b)
def _place(parts: list[tuple[UOp, tuple]]) -> UOp:
  """The disjoint `parts` (each with its pad arg) padded into place on one device, as one tensor (a cat). Float parts are
  selected in, not added: + made an element -0.0 of one part 0.0 (-0.0 + the other parts' 0 padding), and a gathered
  sharded tensor read [[-0.0, 1], [2, -0.0]] as all 0.0 signs; ints add, bools or (exact either way)."""
  acc = parts[0][0].pad(parts[0][1])
  for p, arg in parts[1:]:
    if not dtypes.is_float(p.dtype): acc = _combine(Ops.ADD, acc, p.pad(arg))
    else:
      mask = UOp.const(dtypes.bool, True, src=(_dev(p.device),)).reshape((1,) * len(p.shape)).expand(p.shape).pad(arg)
      acc = mask.where(p.pad(arg), acc)
  return acc

def _assemble(m: UOp, lo: int, hi: int, d: str) -> UOp:
  """The [lo, hi) range of sharded `m` along its axis, on device `d`: the overlapping pieces of its shards, copied over
  where they live elsewhere, and placed (_place: a cat)."""
  ax, parts = m.arg, []
  for s, (b, e) in zip(m.src, bounds(m)):
    l2, h2 = max(lo, b), min(hi, e)
    if l2 >= h2: continue
    p = s.shrink(_on_axis(s.shape, ax, (l2 - b, h2 - b), lambda n: (0, n)))
    if s.device != d: p = _copy(p, d)
    parts.append((p, _on_axis(p.shape, ax, (l2 - lo, hi - h2), (0, 0))))
  if not parts:   # an empty range: no shard has a piece of it
    shape = _on_axis(m.shape, ax, hi - lo, lambda n: n)
    return UOp.const(m.dtype, 0, src=(_dev(d),)).reshape((1,) * len(shape)).expand(shape)
  return _place(parts)

def allgather(m: UOp) -> UOp:
  """`m` replicated on its devices: each one assembles the whole tensor."""
  if m.arg is None: return m
  if is_mesh(m): return multi([_mesh_assemble(m, d) for d in m.device], None)
  return multi([_assemble(m, 0, m.shape[m.arg], d) for d in m.device], None)

def to_layout(u: UOp, devs: tuple[str, ...], axis: Layout) -> UOp:
  """`u` (one device's, or a MULTI) sharded over `devs` on `axis` (None: replicated): COPYs of its pieces."""
  if u.op is Ops.MULTI and u.device == devs and u.arg == axis: return u
  if isinstance(axis, tuple): return _mesh_slice(to_layout(u, devs, None), axis)
  if is_mesh(u): return to_layout(allgather(u), devs, axis)
  if u.op is Ops.MULTI and u.arg is not None:
    if axis != u.arg: return to_layout(allgather(u), devs, axis)
    return multi([_assemble(u, b, e, d) for (b, e), d in zip(shard_bounds(u.shape[u.arg], len(devs)), devs)], u.arg)
  def whole(d: str) -> UOp:   # a copy of the whole tensor to read on d: the replica already there, if any
    if u.op is not Ops.MULTI: return u
    return next((s for s in u.src if s.device == d), u.src[0])
  if axis is None: return multi([_copy(whole(d), d) for d in devs], None)
  shape = u.shape
  if not 0 <= axis < len(shape): raise ValueError(f"shard: axis {axis} out of range for shape {shape}")
  return multi([_copy(whole(d).shrink(_on_axis(shape, axis, be, lambda n: (0, n))), d)
                for be, d in zip(shard_bounds(shape[axis], len(devs)), devs)], axis)

def _local_slice(s: UOp, ax: int, b: int, e: int) -> UOp:
  """[b, e) of axis `ax` of replica `s`, on its device. A broadcast axis (a weight expanded over a sharded batch) is
  expanded to the shard's size instead of shrunk from the whole: the gradient then sums the shard's rows only."""
  if s.op is Ops.EXPAND and s.src[0].shape[ax] == 1: return s.src[0].expand(_on_axis(s.shape, ax, e - b, lambda n: n))
  return s.shrink(_on_axis(s.shape, ax, (b, e), lambda n: (0, n)))

def relayout(m: UOp, lead: UOp) -> UOp:
  """`m` in the layout of `lead` (same devices, shape): sliced locally from a replica, else moved between devices."""
  if m.arg == lead.arg and (m.arg is None or is_mesh(m) or bounds(m) == bounds(lead)): return m
  if lead.arg is None: return allgather(m)
  if is_mesh(lead): return _mesh_slice(allgather(m), lead.arg)
  if is_mesh(m): return relayout(allgather(m), lead)
  if m.arg is None: return multi([_local_slice(s, lead.arg, b, e) for s, (b, e) in zip(m.src, bounds(lead))], lead.arg)
  if m.arg != lead.arg: return relayout(allgather(m), lead)
  return multi([_assemble(m, b, e, d) for (b, e), d in zip(bounds(lead), lead.device)], lead.arg)

def _ratio(p: Any, r: Any) -> Any:
  """p / r when it divides exactly (ints, or symbolic sizes), else None."""
  if isinstance(p, int) and isinstance(r, int): return p // r if p % r == 0 else None
  if isinstance(r, int): return p.divides(r)
  return 1 if sint_eq(p, r) else None

def _reshape_axis(shape: tuple, new: tuple, ax: int, sizes: list) -> tuple[int, list] | None:
  """Where the sharded axis goes under a reshape, with each shard's size there; None when the reshape mixes shards."""
  pre, post, acc = prod(shape[:ax]), prod(shape[ax+1:]), 1
  for b, d in enumerate(new):
    if sint_eq(acc, pre):
      rest = prod(new[b+1:])
      # (an empty tensor, rest 0: the axis stays where a dim of its size is, its shards' sizes as they were)
      if isinstance(rest, int) and rest == 0:
        if sint_eq(d, shape[ax]): return b, list(sizes)
        acc = acc * d
        continue
      per = [_ratio(s * post, rest) for s in sizes]
      if all(p is not None for p in per): return b, [ssimplify(p) for p in per]
    acc = acc * d
  return None

def _mesh_movement(op: Ops, m: UOp, arg: Any) -> UOp:
  mesh, axes = m.arg, [a for a, _ in m.arg]
  shard = m.src[0].shape
  if op is Ops.PERMUTE: return multi([UOp(op, m.dtype, (s,), arg) for s in m.src], tuple((arg.index(a), p) for a, p in mesh))
  if op is Ops.RESHAPE:
    new: list[Any] = list(arg)
    out: list[tuple[int, tuple]] = []
    for a, p in mesh:
      r = _reshape_axis(m.shape, arg, a, [shard[a]])
      if r is None or any(r[0] == b for b, _ in out): break
      out.append((r[0], p))
      new[r[0]] = r[1][0]
    else: return multi([UOp(op, m.dtype, (s,), tuple(new)) for s in m.src], tuple(out))
    raise RuntimeError(f"reshape from {m.shape} to {arg} moves items between the shards of a tensor {describe(m)}")
  whole = {Ops.EXPAND: lambda i: arg[i] == m.shape[i], Ops.SHRINK: lambda i: arg[i] == (0, m.shape[i]),
           Ops.PAD: lambda i: arg[i] == (0, 0), Ops.FLIP: lambda i: not arg[i]}[op]
  if all(whole(a) for a in axes):   # the sharded axes untouched: each block on its own
    local = tuple(shard[i] if op is Ops.EXPAND and i in axes else (0, shard[i]) if op is Ops.SHRINK and i in axes else x for i, x in enumerate(arg))
    return multi([UOp(op, m.dtype, (s,), local) for s in m.src], mesh)
  return _movement(op, allgather(m), arg)

def _movement(op: Ops, m: UOp, arg: Any) -> UOp:
  ax = m.arg
  if ax is None: return multi([UOp(op, m.dtype, (s,), arg) for s in m.src], None)
  if is_mesh(m): return _mesh_movement(op, m, arg)
  sizes = [e - b for b, e in bounds(m)]
  full = m.shape[ax]
  if op is Ops.PERMUTE: return multi([UOp(op, m.dtype, (s,), arg) for s in m.src], arg.index(ax))
  if (op is Ops.FLIP and not arg[ax]) or (op is Ops.PAD and arg[ax] == (0, 0)): return multi([UOp(op, m.dtype, (s,), arg) for s in m.src], ax)
  if op is Ops.SHRINK and arg[ax] == (0, full): return multi([UOp(op, m.dtype, (s,), _on_axis(arg, ax, (0, s.shape[ax]), lambda a: a)) for s in m.src], ax)
  if op is Ops.EXPAND and arg[ax] == full: return multi([UOp(op, m.dtype, (s,), _on_axis(arg, ax, s.shape[ax], lambda a: a)) for s in m.src], ax)
  # (the shards must add up to the new axis: in an empty tensor a 0 before the axis makes any split look like it divides)
  if op is Ops.RESHAPE and (r := _reshape_axis(m.shape, arg, ax, sizes)) is not None and sint_eq(ssimplify(sum(r[1])), arg[r[0]]):
    nax, nsz = r
    return multi([UOp(op, m.dtype, (s,), _on_axis(arg, nax, n, lambda x: x)) for s, n in zip(m.src, nsz)], nax)
  if op is Ops.RESHAPE and any(isinstance(s, int) and s == 0 for s in m.shape):   # no elements to move: replicated empties
    return multi([UOp.const(m.dtype, 0, src=(_dev(d),)).reshape((1,) * len(arg)).expand(arg) for d in m.device], None)
  if op is Ops.RESHAPE:   # as public tinygrad: a reshape may not move elements from one shard to another
    raise RuntimeError(f"reshape from {m.shape} to {arg} moves items between the shards of a tensor {describe(m)}; reshape so the "
                       "sharded axis stays whole (or splits along it), or gather it first with .to(device)")
  # anything else that moves elements between shards (a flip, pad or shrink of the sharded axis): every device gathers
  # the whole tensor first
  return _movement(op, allgather(m), arg)

def all_reduce(op: Ops, parts: list[UOp]) -> list[UOp]:
  """Combine (ADD, MUL or MAX) the equal-shaped `parts`, one per device, so that every device holds the result, bit for bit
  the same: naive (each device combines copies of all, in device order), a ring (reduce-scatter then all-gather of n
  chunks, each device sending 2(n-1)/n of the data instead of n-1 times it) or all-to-all (each device combines one chunk
  from every device's copy, then sends it to all) for big tensors over more than two devices (RING, ALL2ALL)."""
  n, shape = len(parts), parts[0].shape
  size = prod(shape)
  devs = [p.device for p in parts]
  big = n > 2 and size * parts[0].dtype.itemsize >= RING_BYTES.value
  a2a = ALL2ALL.value >= 2 or (ALL2ALL.value >= 1 and big)
  ring = not a2a and (RING.value >= 2 or (RING.value >= 1 and big))
  # (a chunk per device: where ceil(size/n)-sized chunks leave one empty, as 4 over 3 devices, the naive sum)
  if not (ring or a2a) or ceildiv(size, n) * (n - 1) >= size:
    return [functools.reduce(lambda a, b: _combine(op, a, b), [p if j == i else _copy(p, d) for j, p in enumerate(parts)]) for i, d in enumerate(devs)]
  cb = shard_bounds(size, n)
  chunks = [[p.reshape((size,)).shrink((be,)) for be in cb] for p in parts]
  done: list[tuple[UOp, int]] = []   # each reduced chunk and the device that holds it
  for c in range(n):
    if a2a:   # every device's piece of chunk c to device c, combined there in device order
      done.append((functools.reduce(lambda a, b: _combine(op, a, b), [ch[c] if j == c else _copy(ch[c], devs[c]) for j, ch in enumerate(chunks)]), c))
      continue
    acc = chunks[c][c]   # reduce-scatter: chunk c travels the ring from device c, each device adding its own piece
    for k in range(1, n):
      d = (c + k) % n
      acc = _combine(op, _copy(acc, devs[d]), chunks[d][c])
    done.append((acc, (c - 1) % n))   # finished on device c-1
  out: list[list[UOp]] = [[] for _ in range(n)]
  for acc, owner in done:   # all-gather: the finished chunk travels on round the ring (all-to-all: from its owner to each device)
    out[owner].append(acc)
    hop = acc
    for k in range(1, n):
      hop = _copy(acc if a2a else hop, devs[(owner + k) % n])
      out[(owner + k) % n].append(hop)
  # each device's pieces are in chunk order c = 0..n-1 (appended in that order above): placed in
  return [_place([(ch, ((lo, size - hi),)) for ch, (lo, hi) in zip(out[i], cb)]).reshape(shape) for i in range(n)]

# A max over a sharded axis is each device's max combined by a chain of binary MAXes. One device's max splits its gradient
# equally among all tied inputs, but the binary MAX halves it at each tie, so a tie across shards got 1/4 and 1/2 where one
# device gives 1/3 each. gradient.py reads these tables: the chain's MAXes pass the whole gradient on a tie, and each local
# max divides it by the count of ties over all shards (the multi-device tensor, the reduced axes and the index are kept here).
SHARD_MAX_CHAIN: weakref.WeakSet[UOp] = weakref.WeakSet()
SHARD_MAX_PARTS: weakref.WeakKeyDictionary[UOp, tuple[UOp, tuple[int, ...], int]] = weakref.WeakKeyDictionary()

def local_max(m: UOp, axes: tuple[int, ...]) -> list[UOp]:
  # each device's max; a shard one wide on a sharded axis still gets a REDUCE_AXIS node (.r() drops it) for the gradient to find
  sharded = {a for a, _ in m.arg} if is_mesh(m) else {m.arg}
  return [UOp(Ops.REDUCE_AXIS, s.dtype, (s,), (Ops.MAX, tuple(a for a in sorted(axes) if s.shape[a] != 1 or a in sharded))) for s in m.src]

def combine_shards(op: Ops, m: UOp, axes: tuple[int, ...], parts: list[UOp]) -> list[UOp]:
  """Each device's `parts` (reduced over `axes` of `m`) combined with `op` over the shards of the reduced axes, one per device."""
  return list(_mesh_reduce(op, m, axes, parts).src) if is_mesh(m) else all_reduce(op, parts)

def _mark_shard_max(m: UOp, axes: tuple[int, ...], parts: list[UOp], outs: list[UOp]) -> list[UOp]:
  for i, p in enumerate(parts): SHARD_MAX_PARTS[p] = (m, axes, i)   # m, not the parts: a value may not hold its key
  stop = set(parts)
  for o in outs:
    for u in o.toposort(gate=lambda u: u not in stop):
      if u.op is Ops.MAX and u not in stop: SHARD_MAX_CHAIN.add(u)
  return outs

def _mesh_groups(m: UOp, axes: tuple) -> tuple[tuple, list[list[int]]]:
  """The mesh's kept axes, and for each device the devices whose partials it combines over the reduced `axes`: one holder of
  each block of the reduced axes among those sharing its kept axes' pieces, itself where it holds one, in block order (so
  every device of a group ends with the same bits)."""
  keep, gone = tuple(x for x in m.arg if x[0] not in axes), tuple(x for x in m.arg if x[0] in axes)
  groups = []
  for i in range(len(m.src)):
    holders: dict[tuple, int] = {}
    for j in sorted(range(len(m.src)), key=lambda j: j != i):
      if _block(keep, j) == _block(keep, i): holders.setdefault(_block(gone, j), j)
    groups.append([j for _, j in sorted(holders.items())])
  return keep, groups

def _mesh_reduce(rop: Ops, m: UOp, axes: tuple, parts: list[UOp]) -> UOp:
  keep, groups = _mesh_groups(m, axes)   # the result is sharded on the kept axes only
  return multi([functools.reduce(lambda a, b: _combine(rop, a, b), [_on(parts, j, i, m) for j in g]) for i, g in enumerate(groups)], keep)

def _reduce(m: UOp, arg: tuple) -> UOp:
  rop, axes = arg
  parts = [s.r(rop, axes) for s in m.src]
  # a shard's sum over its axes of size 1 is no reduce and kept -0.0; a sum starts from +0.0 ([-0.0, -0.0] on 2 devices gave -0.0)
  if rop is Ops.ADD and dtypes.is_float(m.dtype): parts = [p + p.const_like(0.0) if p is s else p for p, s in zip(parts, m.src)]
  if not _splits(m, axes): return multi(parts, m.arg)
  if is_mesh(m):
    if rop is not Ops.MAX: return _mesh_reduce(rop, m, axes, parts)
    parts = local_max(m, axes)
    out = _mesh_reduce(rop, m, axes, parts)
    return multi(_mark_shard_max(m, axes, parts, list(out.src)), out.arg)
  if rop is Ops.MAX: parts = local_max(m, axes)
  # ALLREDUCE_CAST: a sum of half/bfloat16 values taken in float sends its partial sums in the narrow dtype (a max's partials
  # are such values, exact there; a product's are not: 300*300 in half is inf), not an int sum's (2049 in half is 2048)
  narrow = m.src[0].src[0].dtype if m.src[0].op is Ops.CAST and m.src[0].src[0].dtype in (dtypes.half, dtypes.bfloat16) \
    and dtypes.is_float(m.dtype) else None
  if ALLREDUCE_CAST.value and rop is not Ops.MUL and narrow is not None and all(s.op is Ops.CAST for s in m.src):
    outs = [p.cast(parts[0].dtype) for p in all_reduce(rop, [p.cast(narrow) for p in parts])]
  else: outs = all_reduce(rop, parts)
  return multi(_mark_shard_max(m, axes, parts, outs) if rop is Ops.MAX else outs, None)

def pick(m: UOp, mask: UOp, axes: tuple[int, ...]) -> UOp:
  """The sum over `axes` of `m` = mask.where(x, 0) with at most one True in `mask` along them (Tensor._pick: a gather, an
  index, an Embedding): sharded on a reduced axis, each device takes the partial of the shard that holds the picked term
  (a where on each shard's count of hits), not the sum of all partials: + added the other shards' 0.0, which turned a
  picked -0.0 into 0.0 (a sharded masked_select, interpolate(mode="nearest")). Its gradient reaches that shard alone."""
  if not _splits(m, axes): return m.r(Ops.ADD, axes)
  parts = [s.r(Ops.ADD, axes) for s in m.src]
  # (each count is an int one-hot sum, which the codegen turns into a bounds check as it does the value's pick)
  hits = [k.where(1, 0).cast(dtypes.int32).r(Ops.ADD, axes).alu(Ops.CMPNE, UOp.const(dtypes.int32, 0, src=(_dev(k.device),)))
          for k in relayout(mask, m).src]
  # on a mesh each device picks among the holders of its group (_mesh_groups), as its sum would combine them
  keep, groups = _mesh_groups(m, axes) if is_mesh(m) else (None, [list(range(len(m.src)))] * len(m.src))
  outs = []
  for i, g in enumerate(groups):
    here = [(_on(parts, j, i, m), _on(hits, j, i, m)) for j in g]
    outs.append(functools.reduce(lambda acc, ph: ph[1].where(ph[0], acc), here[1:], here[0][0]))
  return multi(outs, keep)

def _elementwise(op: Ops, dtype: DType, src: tuple[UOp, ...], arg: Any, tag: Any, ms: list[UOp]) -> UOp:
  # the result's layout: the assign target's, else the first sharded operand's; the other operands are brought to it
  lead = src[0] if op is Ops.ASSIGN and src[0].op is Ops.MULTI else next((m for m in ms if m.arg is not None), ms[0])
  per: list[list[UOp]] = []
  for s in src:
    if s.op is Ops.MULTI: per.append(list(relayout(s, lead).src))
    elif s.op is Ops.DEVICE and isinstance(s.arg, tuple): per.append([_dev(d) for d in lead.device])
    elif _device_of(s) is None: per.append([s] * len(lead.src))   # a device-less scalar (a bound variable)
    else: raise ValueError(f"{op}: an operand on {s.device} with a tensor {describe(lead)}; move it with .shard(devices) or .to()")
  return multi([UOp(op, dtype, tuple(p[i] for p in per), arg, tag) for i in range(len(lead.src))], lead.arg)

def _device_of(u: UOp) -> Any:
  try: return u.device
  except ValueError: return None

def lower(op: Ops, dtype: DType, src: tuple[UOp, ...], arg: Any, tag: Any) -> UOp:
  """The node UOp(op, dtype, src, arg, tag) whose sources include a MULTI (or a DEVICE tuple), built per device."""
  ms = [s for s in src if s.op is Ops.MULTI]
  if not ms:   # on a DEVICE tuple only: one node per device, replicated (a constant, an empty buffer, a copy to each)
    devs = next(s.arg for s in src if s.op is Ops.DEVICE and isinstance(s.arg, tuple))
    if op is Ops.COPY: return to_layout(src[0], _canon(devs), None)
    return multi([UOp(op, dtype, tuple(_dev(d) if s.op is Ops.DEVICE and isinstance(s.arg, tuple) else s for s in src), arg, tag) for d in devs], None)
  for m in ms[1:]:
    if m.device != ms[0].device: raise ValueError(f"{op}: tensors sharded over different devices, {m.device} and {ms[0].device}; .shard() one like the other")
  m = ms[0]
  if op is Ops.COPY:
    target = _canon(src[1].arg) if isinstance(src[1].arg, tuple) else src[1].arg
    if target == m.device: return multi([_copy(s, d) for s, d in zip(m.src, target)], m.arg)   # a clone
    if isinstance(target, tuple): return to_layout(m, _canon(target), m.arg)
    if is_mesh(m): return _mesh_assemble(m, target)
    return _copy(next((s for s in m.src if s.device == target), m.src[0]), target) if m.arg is None else _assemble(m, 0, m.shape[m.arg], target)
  if op in GroupOp.Movement: return _movement(op, m, arg)
  if op is Ops.REDUCE_AXIS: return _reduce(m, arg)
  if op in _ELEMENTWISE: return _elementwise(op, dtype, src, arg, tag, ms)
  raise NotImplementedError(f"{op} is not supported on a tensor {describe(m)}; gather it onto one device first with .to(device)")

def _canon(devices: Sequence[str]) -> tuple[str, ...]:
  from tinygrad.device import Device
  return tuple(Device.canonicalize(d) for d in devices)

def _shard(u: UOp, devices: Sequence[str], axis: int | None) -> UOp:
  devs = _canon(devices)
  return to_layout(u, devs, None if axis is None else axis + len(u.shape) if axis < 0 else axis)

register_multi_lowering(lower, _shard, shard_by)
