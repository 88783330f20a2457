"""The scheduler: a lazy tensor graph becomes a list of kernels (ExecItems) over buffers.

Elementwise chains fuse into their consumer, a reduce fuses its elementwise inputs and its elementwise output, movement
ops become index arithmetic. Realized buffers, CONTIGUOUS, COPY and reduces that would be recomputed through an EXPAND
are kernel boundaries.
"""
from __future__ import annotations
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType, KernelInfo, sint, smax, sym_vars, _rebuild, view_index, _flat
from tinygrad.uop import upat as _upat
from tinygrad.dtype import DType, dtypes, PtrDType
from tinygrad.helpers import prod, all_int, DEBUG, SCACHE, NO_MEMORY_PLANNER, WatchedDict
from tinygrad.engine.buffers import new_buffer, base_buffer, has_buffer, reshape_base
from tinygrad.codegen.index64 import narrow_indices

@dataclass
class ExecItem:
  """One step of a schedule: a kernel (`ast` is a SINK) or a copy (`ast` is a COPY), over `bufs` (BUFFER UOps, outputs first)."""
  ast: UOp
  bufs: list[UOp]
  metadata: dict[str, Any] = field(default_factory=dict)
  var_vals: dict[UOp, int] = field(default_factory=dict)   # the values of the kernel's variables (DEFINE_VAR -> int)
  node: UOp | None = None   # the tensor-graph node whose value this item computes (an interrupted realize keeps what ran)

def strides_for(shape: tuple[sint, ...]) -> tuple[sint, ...]:
  out: list[sint] = []
  acc: sint = 1
  for s in reversed(shape):
    out.append(acc if not (isinstance(s, int) and s == 1) else 0)
    acc = acc * s
  return tuple(reversed(out))

def buffer_view(buf: UOp, shape: tuple[sint, ...]) -> UOp:
  """A BUFFER seen as a tensor of `shape`: reshaped, after a prefix shrink when the size is symbolic (the buffer holds the
  largest) or smaller than the buffer's (a memory plan's larger buffer)."""
  n = 1
  for s in shape: n = n * s
  return (buf if isinstance(n, int) and n == buf.arg else buf.shrink(((0, n),))).reshape(shape)

def _i64(x: sint) -> sint:
  """A size as kernel index arithmetic: an int, or the expression retyped to int64 (its variables cast), like the indices."""
  if not isinstance(x, UOp) or x.dtype == dtypes.int64: return x
  done: dict[UOp, UOp] = {}
  for n in x.toposort():
    if n.op is Ops.CONST: done[n] = UOp.const(dtypes.int64 if dtypes.is_int(n.dtype) else n.dtype, n.arg)
    elif n.op is Ops.DEFINE_VAR: done[n] = n.cast(dtypes.int64)
    elif n.op in GroupOp.ALU:
      dt = n.dtype if dtypes.is_bool(n.dtype) else dtypes.int64
      done[n] = UOp(n.op, dt, tuple(done[s] for s in n.src), n.arg)
    else: raise ValueError(f"a symbolic size may only hold variables and arithmetic, got {n.op} in {x.render()}")
  return done[x]

# ---- which nodes become kernel outputs ----
def find_realizes(roots: list[UOp], topo: dict[UOp, None] | None = None) -> dict[UOp, None]:
  nodes = list(_graph_topo(roots) if topo is None else topo)   # topo: the roots' _graph_topo, where the caller has it
  consumers: dict[UOp, list[UOp]] = {n: [] for n in nodes}
  for n in nodes:
    if n.op is Ops.BUFFER: continue
    for s in dict.fromkeys(n.src): consumers[s].append(n)
  # a DETACH computes nothing (.detach(); no_grad puts one over a value computed from outside it): its users are its
  # source's, so a costly value read behind one by two kernels is still computed once (it was inlined into both: 1.96x the ops)
  kept = {*roots, *(n.src[0] for n in nodes if n.op is Ops.COPY), *(_src_of(s) for n in nodes if n.op is Ops.KERNEL for s in n.src)}
  for d in reversed(nodes):
    if d.op is Ops.DETACH and d not in kept:
      up = consumers[d.src[0]]
      up[up.index(d):up.index(d) + 1] = [c for c in consumers[d] if c not in up]
  realizes: dict[UOp, None] = {}
  # _streams' memo: a node's entry holds while nothing at or below it is realized. Nodes are visited users first, so
  # realizing the visited node leaves every entry a later visit reads (theirs lie below it) valid: only realizing a node
  # below it (a PAD's source, a reduce's producers) clears the memo
  streams: dict[UOp, tuple[UOp, ...]] = {}
  above: dict[UOp, tuple[UOp, ...]] = {}     # _kernels_above's memo (what is above a node is settled before it is visited)
  explored: set = set()                      # _expanded_producers' walks so far
  for r in roots:
    if base_buffer(r) is None: realizes[r] = None
  for n in nodes:
    if n.op in (Ops.CONTIGUOUS, Ops.COPY, Ops.ASSIGN, Ops.KERNEL, Ops.AFTER): realizes[n] = None
    # a custom kernel's tensors are its buffers: each one that is not one yet is computed into one first
    if n.op is Ops.KERNEL: realizes.update(dict.fromkeys(_src_of(s) for s in n.src))
    if n.op is Ops.COPY and base_buffer(n.src[0]) is None: realizes[n.src[0]] = None
  for n in reversed(nodes):
    size, was = len(realizes), n in realizes
    # a PAD over an integer division must not run the division on padded (gated) lanes: realize what it pads
    if n.op is Ops.PAD and _has_unsafe_div(n.src[0], realizes): realizes[n.src[0]] = None
    # (a reduce that collapses into index arithmetic is free wherever it is read, except under a PAD: its index runs past
    # the arange on the padded lanes, a gate the simplifier cannot fold, and with the reshapes of a conv's or a pool's window
    # (div/mod) it stays a loop of its length per read: conv2d of an arange 512x512 ran 43 s, max_pool2d 35 s, cumsum of a
    # padded arange 7 s. Realized, it is one pass over n elements)
    if n.op is Ops.REDUCE_AXIS and n not in realizes and _reduce_needs_realize(n, consumers, realizes) and \
       (not (_collapses(n) or _load_pick(n, realizes)) or _reaches_kernels(n, consumers, realizes, stop=(Ops.PAD,), count=False)) and \
       not _row_local(n, consumers, realizes): realizes[n] = None
    if n.op is Ops.REDUCE_AXIS: realizes.update(dict.fromkeys(_expanded_producers(n, realizes, explored)))
    if len(realizes) - size > (n in realizes) - was: streams.clear()   # (realizes only grows)
    # (never a one-hot mask: realized, each reduce over it is a real sum of n*m, not a load, and starts at +0.0, so a picked
    # -0.0 came out 0.0: a sorted scatter_reduce amax into <= 4 positions, whose gathers share one mask with its gradient's)
    if n.op in GroupOp.ALU and n not in realizes and len(consumers[n]) > 1 and not _one_hot(n) and \
       _shared_and_costly(n, consumers, realizes, streams, above): realizes[n] = None
  # an assign whose value reads another assign's target computes the value into a temporary first, so the writes can
  # wait for every read of the old contents (A, B = f(A, B), g(A, B) would otherwise deadlock)
  targets = {base_buffer(n.src[0]): n for n in nodes if n.op is Ops.ASSIGN}
  for a in (n for n in nodes if n.op is Ops.ASSIGN):
    own = base_buffer(a.src[0])
    reads = a.src[1].toposort(gate=lambda x: x not in realizes and x.op is not Ops.BUFFER)
    if any(b in targets and b is not own for b in reads): realizes[a.src[1]] = None
  for r in list(realizes):
    if r.op is Ops.BUFFER: del realizes[r]
  return realizes

SHARED_READS = 3   # buffers an elementwise value read by several kernels may load before it is computed once, into its own

def _shared_and_costly(n: UOp, consumers: dict[UOp, list[UOp]], realizes: dict[UOp, None], memo: dict[UOp, tuple[UOp, ...]],
                       above: dict[UOp, tuple[UOp, ...]]) -> bool:
  """An elementwise value that more than one kernel reads, and that streams SHARED_READS buffers or more: inlined, every
  reader loads them all again (a transformer's residual stream x + attn(x) + mlp(..) is read by the next layer norm's
  kernels and the next add: each layer's kernels re-add every earlier layer, 56 buffers deep at ViT's 12th, one distinct
  kernel per layer to compile). Computed once it costs one store and one load per reader."""
  # loads that stream for every element: a buffer a quarter of n's size or more (a broadcast per-channel parameter stays
  # in cache), not behind a PAD (a concat's parts are each read for their own elements: a KV cache ++ the new key is one load)
  size = _size(n)   # symbolic sizes at their largest
  srcs = [u for u in _streams(n, realizes, memo) if _size(u) * 4 >= size]
  return len(srcs) >= SHARED_READS and len(_kernels_above(n, consumers, realizes, above)) > 1

def _memo_walk(n: UOp, memo: dict[UOp, tuple[UOp, ...]], nexts, value) -> tuple[UOp, ...]:
  """memo[n] = value(n), each node's computed once after every node of nexts(node) (no recursion: graphs are deep)."""
  stack = [n]
  while stack:
    u = stack[-1]
    if u in memo:
      stack.pop()
      continue
    if (todo := [c for c in nexts(u) if c not in memo]):
      stack.extend(todo)
      continue
    stack.pop()
    memo[u] = value(u)
  return memo[n]

def _kernels_above(n: UOp, consumers: dict[UOp, list[UOp]], realizes: dict[UOp, None], memo: dict[UOp, tuple[UOp, ...]]) -> tuple[UOp, ...]:
  """Two of the kernels (realized nodes) n's value reaches going up (fewer if it reaches fewer): _reaches_kernels with a
  memo, since find_realizes visits users first and settles everything above a node before it. Each node's once, not a walk
  up from every shared value (quadratic in a long chain of three inputs)."""
  return _memo_walk(n, memo, lambda u: [c for c in consumers[u] if c not in realizes],
                    lambda u: tuple(dict.fromkeys(x for c in consumers[u] for x in ((c,) if c in realizes else memo[c])))[:2])

def _size(u: UOp) -> int:
  # (kept on the node: _streams sorts every node's candidates by it, ~5000 asks in ViT-Ti's graph)
  if (sz := u.__dict__.get("_smax")) is None: sz = u.__dict__["_smax"] = smax(prod(u.shape))
  return sz

def _streams(n: UOp, realizes: dict[UOp, None], memo: dict[UOp, tuple[UOp, ...]]) -> tuple[UOp, ...]:
  """The SHARED_READS largest loads below n: buffers, reduces (an inlined reduce is one value per element, whatever it
  reads) and realized nodes, reached through unrealized nodes but not through a PAD. The largest few are enough to count
  those as big as a quarter of any size, so each node's are found once, from its sources' (`memo`, valid while realizes is
  unchanged), instead of walking the graph below every shared value (quadratic in a long chain: each relu reads x twice)."""
  # (a reduce that folds into index arithmetic loads nothing, a one-hot gather the buffer it picks from: a sort step reads
  # v and its partner v[i ^ m] as the old one read v and its flip)
  def loads(u: UOp) -> bool:
    return u in realizes or u.op is Ops.BUFFER or (u.op is Ops.REDUCE_AXIS and not _load_pick(u, realizes) and not _collapses(u))
  def below(u: UOp) -> tuple[UOp, ...]: return () if loads(u) or u.op is Ops.PAD else u.src
  def largest(u: UOp) -> tuple[UOp, ...]:
    cands = dict.fromkeys(([u] if loads(u) else []) + [x for s in below(u) for x in memo[s]])
    return tuple(sorted(cands, key=_size, reverse=True)[:SHARED_READS])
  return _memo_walk(n, memo, below, largest)

def _reaches_kernels(n: UOp, consumers: dict[UOp, list[UOp]], realizes: dict[UOp, None], stop: tuple[Ops, ...] = (),
                     count: bool = True) -> bool:
  """n's value reaches more than one kernel (realized node) above it (`count`), or a node of an op in `stop`."""
  reached: set[UOp] = set()
  stack, seen = list(consumers[n]), set()
  while stack:
    c = stack.pop()
    if c in seen: continue
    seen.add(c)
    if c.op in stop: return True
    if c in realizes:
      reached.add(c)
      if count and len(reached) > 1: return True
      continue
    stack.extend(consumers[c])
  return False

def _has_unsafe_div(u: UOp, realizes: dict[UOp, None]) -> bool:
  for n in u.toposort(gate=lambda x: x not in realizes and x.op is not Ops.BUFFER):
    if n.op in (Ops.IDIV, Ops.MOD) and dtypes.is_int(n.dtype) and n not in realizes: return True
  return False

EXPANDED_ALU = 2   # ALU ops from which an elementwise producer broadcast into a reduce is realized instead of recomputed
# ... unless it is broadcast at most EXPANDED_CHEAP times and has EXPANDED_CHEAP_SIZE elements or more: recomputed costs at most 4x
# its ALU ops where storing it costs a buffer that large (attention's probabilities over a head of 4: stable diffusion's
# softmax written beside its scores, 2 x 8.4 MB alive together; recomputed, as public tinygrad does, the scores alone)
EXPANDED_CHEAP, EXPANDED_CHEAP_SIZE = 4, 1 << 20

def _alu_at_least(u: UOp, realizes: dict[UOp, None], n: int) -> bool:
  """u's unrealized graph (down to realized nodes and buffers) holds n ALU ops or more: a walk that stops at the n-th, not
  a toposort of everything below (ViT-Ti's whole residual stream lies below each layer's reduce)."""
  stack, seen = [u], set()
  while stack:
    x = stack.pop()
    if x in seen or x in realizes: continue
    seen.add(x)
    if x.op in GroupOp.ALU:
      n -= 1
      if n <= 0: return True
    if x.op is not Ops.BUFFER: stack.extend(x.src)
  return False

def _expanded_producers(r: UOp, realizes: dict[UOp, None], seen: set) -> list[UOp]:
  """The elementwise producers that reach reduce r through an EXPAND (by 4x or more) and cost EXPANDED_ALU ALU ops or
  more: inlined, each would run once per step of the reduce loop instead of once per element (a conv's weight gradient
  broadcasts dy, with the batchnorm/relu/max-pool backward chain that makes it, over cin x kh x kw: 800x the work).
  `seen`: the states earlier walks took. What they found is realized, and realizes only grows (a walk only stops sooner
  and counts fewer ALU ops), so a later walk finds nothing new below them: each node's once, not once per reduce above it
  (the residual stream lies below every reduce of a transformer's later layers)."""
  out: list[UOp] = []
  stack, frame = [(r.src[0], False)], (r.shape, r.src[0].shape)   # (the walk's course depends on r's shapes)
  while stack:
    u, ex = stack.pop()
    if (u, ex, frame) in seen or u in realizes or u.op in (Ops.BUFFER, Ops.CONST, Ops.DEFINE_VAR, Ops.BIND): continue
    seen.add((u, ex, frame))
    if ex and u.op in GroupOp.ALU and _alu_at_least(u, realizes, EXPANDED_ALU) and not _one_hot(u):
      out.append(u)
      continue
    # a value per row of r broadcast along r's own axes (logsumexp's inf-guarded max) is the same on every step of r's loop:
    # the linearizer computes it once, outside
    if u.op is Ops.EXPAND and not (u.src[0].shape == r.shape and u.shape == r.src[0].shape):
      a, b = u.src[0].shape, u.shape
      if not (all_int(a) and all_int(b)): ex = True
      else: ex = ex or prod(b) >= 4 * prod(a) and not (prod(b) <= EXPANDED_CHEAP * prod(a) and prod(a) >= EXPANDED_CHEAP_SIZE)
    if u.op is Ops.REDUCE_AXIS: continue   # its own source is judged when it is visited
    # (a one-hot mask's sides are index arithmetic the sum collapses into a load, computed once per element, not per step:
    # realized, the partner index i ^ m of a sort step became a buffer, and its gradient a loop of n*n, not a load)
    if _one_hot(u): continue
    stack.extend((s, ex) for s in u.src)
  return out

def _one_hot(u: UOp) -> bool:
  """A comparison of an arange with something (the one-hot masks of x[idx], gather, Embedding): inlined into the reduce that
  sums over the arange's axis, the simplifier turns the whole sum into a load at the index (_reduce_collapse); realized, it is
  a mask as large as the table times the indices, and the reduce reads every row (x[idx] over 60000 rows: 3 s, not 10 us)."""
  if u.op is not Ops.CMPEQ: return False
  # (an arange reaches the comparison reshaped, expanded, offset and cast: index arithmetic above its reduce)
  stack, seen = list(u.src), set()
  while stack:
    if (x := stack.pop()) in seen or x.op not in _INDEX_ONLY: continue
    seen.add(x)
    if x.op is Ops.REDUCE_AXIS:
      if _collapses(x): return True
      continue
    stack.extend(x.src)
  return False

_INDEX_ONLY = GroupOp.ALU | GroupOp.Movement | {Ops.CONST, Ops.DEVICE, Ops.DEFINE_VAR, Ops.BIND, Ops.CAST, Ops.REDUCE_AXIS, Ops.DETACH}
def _collapses(r: UOp) -> bool:
  """A reduce computed from indices alone that the simplifier turns into index arithmetic (an arange: a cumsum of ones,
  symbolic.py's _reduce_collapse) costs nothing where it is used: it needs no kernel of its own even where it is expanded,
  and inlined it stays visible to the rules that read it (an Embedding's arange == idx becomes a gather)."""
  # (the walk ends at the first node of another op: below a matmul's reduce lies the whole model, ALU and movement ops)
  stack, seen = [r], set()
  while stack:
    if (x := stack.pop()) in seen: continue
    if x.op not in _INDEX_ONLY: return False
    seen.add(x)
    stack.extend(x.src)
  # the answer is a property of r's graph (indices, constants, devices): kept on disk like a program, so a warm process
  # neither imports nor compiles the simplifier for it (~25 ms of GPT-2 small's first call, which needs it for nothing else)
  from tinygrad.codegen.progcache import decision_key
  from tinygrad.diskcache import diskcache_get, diskcache_put
  if (key := decision_key("collapses", r)) is not None and isinstance(hit := diskcache_get("collapses", key, version=key[2]), bool): return hit
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  kb = KernelBuilder({}, {})
  kb.root = r
  idx = tuple(kb.new_range(s, AxisType.GLOBAL) if s != 1 else UOp.const(dtypes.int64, 0) for s in r.shape)
  ret = not any(u.op is Ops.REDUCE for u in graph_rewrite(kb.lower(r, idx, None), sym).toposort())
  if key is not None: diskcache_put("collapses", key, ret, version=key[2])
  return ret

def _load_pick(r: UOp, realizes: dict[UOp, None]) -> bool:
  """A one-hot sum over a buffer's (or a realized value's) elements, gather's: the simplifier turns it into one load at the
  index (_reduce_collapse), so it is as cheap as the load in every kernel that reads it (a sort step's partner, read by the
  values' and the indices' kernel: realized, each step was 5 kernels instead of 2)."""
  def under(u: UOp) -> UOp:   # below the views (and a DETACH: nothing either)
    while (u.op in GroupOp.Movement or u.op is Ops.DETACH) and u not in realizes: u = u.src[0]
    return u
  if r.arg[0] is not Ops.ADD: return False
  v = r.src[0].src[0] if r.src[0].op is Ops.CAST else r.src[0]
  if v.op is not Ops.WHERE or (z := under(v.src[2])).op is not Ops.CONST or z.arg != 0 or not _one_hot(under(v.src[0])): return False
  return (x := under(v.src[1])) in realizes or x.op is Ops.BUFFER

def _reduce_needs_realize(r: UOp, consumers: dict[UOp, list[UOp]], realizes: dict[UOp, None]) -> bool:
  """A reduce gets its own kernel when inlining would compute it more than once: its value reaches an EXPAND (recomputed
  per expanded element) or more than one kernel (recomputed per kernel); or a PAD: the padded lanes would run the reduce
  gated, with the pad's offset (and any reshape after it: the flattened conv input's copy, div/mod) in every step's
  index, 100x slower than the reduce on its own. Decided consumers-first, so `realizes` is final above r."""
  return _reaches_kernels(r, consumers, realizes, stop=(Ops.EXPAND, Ops.PAD))

ROW_FUSE_ROWS = 16   # rows from which a row's reduces fuse into the kernel that reads the row (fewer: threads lack rows)

def _row_local(r: UOp, consumers: dict[UOp, list[UOp]], realizes: dict[UOp, None]) -> bool:
  """A reduce over the last axes, broadcast back over them into one kernel that writes those rows (softmax's max and sum,
  a layer norm's mean and variance): inlined, the kernel computes it once per row, before its loops over the row (the
  linearizer hoists it) and reads the row again from cache instead of from memory in a kernel of its own (softmax 4096^2:
  3 kernels reading x 3 times -> 1). On renderers whose threads split the rows (has_threads); a GPU keeps a kernel per
  reduce, its rows spread over its threads."""
  full, axes = r.src[0].shape, r.arg[1]
  if any(i not in axes and not (isinstance(full[i], int) and full[i] == 1) for i in range(min(axes), len(full))) or \
     smax(prod(r.shape)) < ROW_FUSE_ROWS: return False
  if not isinstance(r.device, str) or not _threads(r.device): return False
  kernels: set[UOp] = set()
  frames = (_squeezed(full), _squeezed(r.shape))
  stack, seen = list(consumers[r]), set()
  while stack:
    c = stack.pop()
    if c in seen: continue
    seen.add(c)
    ok = c.op is Ops.EXPAND and c.src[0].shape == r.shape and c.shape == full or \
      c.op is Ops.REDUCE_AXIS and c.src[0].shape == full and c.arg[1] == axes or \
      (c.op in GroupOp.ALU or c.op in (Ops.CAST, Ops.BITCAST, Ops.DETACH, Ops.CONTIGUOUS)) and _squeezed(c.shape) in frames or \
      c.op is Ops.RESHAPE and _squeezed(c.shape) == _squeezed(c.src[0].shape)   # keepdim=False: the same loops
    if not ok: return False
    if c in realizes:
      kernels.add(c)
      if len(kernels) > 1: return False
    else: stack.extend(consumers[c])
  return len(kernels) == 1

def _squeezed(shape: tuple[sint, ...]) -> tuple[sint, ...]: return tuple(s for s in shape if not (isinstance(s, int) and s == 1))

def _threads(device: str) -> bool:
  from tinygrad.device import Device
  try: return bool(Device[device].renderer.has_threads)
  except Exception: return False   # a device that does not open: its schedule is never run

# ---- lowering one kernel: tensor ops at an index -> kernel-level value ----
class KernelBuilder:
  def __init__(self, realizes: dict[UOp, None], buffer_map: dict[UOp, UOp]):
    self.realizes, self.buffer_map = realizes, buffer_map
    self.bufs: list[UOp] = []            # BUFFER UOps in DEFINE_GLOBAL slot order
    self.defines: dict[UOp, UOp] = {}
    self.axis = 0
    self.memo: dict[tuple, UOp] = {}
    self.reads: set[UOp] = set()      # BUFFERs read as they were before this schedule
    self.deps: set[UOp] = set()       # realized nodes of this schedule that this kernel reads

  def new_range(self, size: sint, kind: AxisType) -> UOp:
    self.axis += 1
    return UOp.range(_i64(size), self.axis-1, kind, dtypes.int64)   # int64 while building: nothing wraps (codegen/index64.py)

  def define(self, buf: UOp) -> UOp:
    if buf not in self.defines:
      self.defines[buf] = UOp(Ops.DEFINE_GLOBAL, buf.dtype.ptr(buf.arg), (), len(self.bufs))
      self.bufs.append(buf)
    return self.defines[buf]

  def load(self, buf: UOp, shape: tuple[int, ...], idx: tuple[UOp, ...], gate: UOp | None) -> UOp:
    flat = _flat_index(idx, shape)
    # every gate is a PAD's validity (_source_index), and the PAD's node masks the value it lowers to (_build's WHERE):
    # the gate only keeps the read in bounds. A read in bounds for every index drops it: a batchnorm's per-channel
    # statistics under a conv output's pad were read behind a branch each, and their rsqrt and division, loop-invariant
    # once ungated, ran per pixel (ResNet-18 batch 32's bn+relu+pad kernel 24 ms)
    if gate is not None and isinstance(size := buf.arg, int) and flat.vmin >= 0 and flat.vmax < size: gate = None
    return self.define(buf).index(flat, gate).load()

  def lower(self, root: UOp, idx: tuple[UOp, ...], gate: UOp | None) -> UOp:
    """The kernel-level value of tensor node `root` at multi-index `idx` (iterative: deep graphs never recurse)."""
    # (an entry whose sources were pushed carries its deps: they are not worked out, index arithmetic built, a second time)
    stack: list[tuple[UOp, tuple[UOp, ...], UOp | None, list | None]] = [(root, idx, gate, None)]
    while stack:
      node, ix, g, deps = stack.pop()
      key = (node, ix, g)
      if key in self.memo: continue
      if deps is None:
        deps = self._deps(node, ix, g)
        if any(d not in self.memo for d in deps):
          stack.append((node, ix, g, deps))
          # reversed so the first source is lowered first (buffer slots follow source order)
          stack.extend((d[0], d[1], d[2], None) for d in reversed(deps) if d not in self.memo)
          continue
      self.memo[key] = self._build(node, ix, g, [self.memo[d] for d in deps])
    return self.memo[(root, idx, gate)]

  def _source_index(self, node: UOp, ix: tuple[UOp, ...], g: UOp | None) -> tuple[tuple[UOp, ...], UOp | None]:
    """Index (and gate) into the single source of movement op `node`."""
    src_shape, op, arg = node.src[0].shape, node.op, node.arg
    if op is Ops.RESHAPE: return _unflat_index(_flat_index(ix, node.shape), src_shape), g
    if op is Ops.PERMUTE:
      out: list[UOp] = [ix[0]] * len(arg)
      for i, p in enumerate(arg): out[p] = ix[i]
      return tuple(out), g
    if op is Ops.EXPAND: return tuple(UOp.const(dtypes.int64, 0) if s == 1 and n != 1 else i for i, s, n in zip(ix, src_shape, node.shape)), g
    if op is Ops.SHRINK: return tuple(i + _i64(b) if _nz(b) else i for i, (b, _) in zip(ix, arg)), g
    if op is Ops.FLIP: return tuple((_i64(s)-1) - i if f else i for i, s, f in zip(ix, src_shape, arg)), g
    if op is Ops.PAD:
      valid = self._pad_valid(node, ix)
      return tuple(i - _i64(b) if _nz(b) else i for i, (b, _) in zip(ix, arg)), (valid if g is None else (g & valid) if valid is not None else g)
    raise RuntimeError(f"not a movement op: {op}")

  def _pad_valid(self, node: UOp, ix: tuple[UOp, ...]) -> UOp | None:
    conds = []
    for i, s, (b, a) in zip(ix, node.src[0].shape, node.arg):
      if _nz(b): conds.append(i >= _i64(b))
      if _nz(a): conds.append(i < _i64(b + s))
    if not conds: return None
    v = conds[0]
    for c in conds[1:]: v = v & c
    return v

  def _edges(self, node: UOp) -> tuple[UOp, ...]:
    """The sources of `node` that lowering visits: none for a load or a constant."""
    if node in self.realizes and node is not self.root or node.op in (Ops.BUFFER, Ops.CONST, Ops.DEFINE_VAR): return ()
    if node.op in GroupOp.Movement or node.op is Ops.REDUCE_AXIS: return node.src[:1]
    if node.op in (Ops.CONTIGUOUS, Ops.DETACH, Ops.CAST, Ops.BITCAST) or node.op in GroupOp.ALU: return node.src
    if node.op is Ops.ASSIGN: return node.src[1:2]
    raise NotImplementedError(f"the scheduler cannot lower {node.op} inside a kernel")

  def _deps(self, node: UOp, ix: tuple[UOp, ...], g: UOp | None) -> list[tuple[UOp, tuple[UOp, ...], UOp | None]]:
    if not (edges := self._edges(node)): return []
    if node.op in GroupOp.Movement:
      six, sg = self._source_index(node, ix, g)
      return [(edges[0], six, sg)]
    if node.op is Ops.REDUCE_AXIS: return [(edges[0], self._reduce_index(node, ix), g)]
    return [(s, ix, g) for s in edges]

  def _reduce_index(self, node: UOp, ix: tuple[UOp, ...]) -> tuple[UOp, ...]:
    # one set of reduce ranges per (reduce node, output index): memoised so the REDUCE's value and its ranges agree
    key = ("ranges", node, ix)
    if key not in self.memo:
      self.memo[key] = tuple(self.new_range(s, AxisType.REDUCE) if i in node.arg[1] else x  # type: ignore[assignment]
                             for i, (x, s) in enumerate(zip(ix, node.src[0].shape)))
    return self.memo[key]  # type: ignore[return-value]

  def _build(self, node: UOp, ix: tuple[UOp, ...], g: UOp | None, srcs: list[UOp]) -> UOp:
    if node.op is Ops.CONST: return UOp.const(node.dtype, node.arg)
    if node.op is Ops.DEFINE_VAR: return node   # a symbolic size used as a value (a mean's count): the kernel's argument
    if node.op is Ops.BUFFER:
      self.reads.add(node)
      return self.load(node, node.shape, ix, g)
    if node in self.realizes and node is not self.root:
      self.deps.add(_dep(node))
      return self.load(self.buffer_map[node], node.shape, ix, g)
    if node.op is Ops.PAD:
      valid = self._pad_valid(node, ix)
      return srcs[0] if valid is None else valid.where(srcs[0], srcs[0].const_like(0))
    if node.op in GroupOp.Movement or node.op in (Ops.CONTIGUOUS, Ops.DETACH): return srcs[0]
    if node.op is Ops.ASSIGN: return srcs[0]
    if node.op is Ops.REDUCE_AXIS:
      ranges = [r for i, r in enumerate(self._reduce_index(node, ix)) if i in node.arg[1]]
      if not ranges: return srcs[0]
      return UOp(Ops.REDUCE, srcs[0].dtype, (srcs[0], *ranges), node.arg[0])
    if node.op in (Ops.CAST, Ops.BITCAST): return UOp(node.op, node.dtype, (srcs[0],))
    return UOp(node.op, node.dtype, tuple(srcs), node.arg)

  def kernel(self, root: UOp, out_buf: UOp, chain: list[UOp] | None = None, cache: dict | None = None) -> UOp:
    """The kernel storing `root` into `out_buf`; with `chain` (movement ops over root, top first: an assign's view,
    _assign_region) each element goes where the chain puts it, and only those are written; root is then the assign's value,
    not the kernel's output, so a realized one (a COPY between devices) is loaded like any input.
    `cache`: region structure -> (AST, slot -> buffer number) of kernels lowered before, reused by one of the same structure."""
    self.root = root if chain is None else None
    if cache is not None:
      key, bufs, reads, deps = self._region(root, out_buf, chain or [])
      if (hit := cache.get(key)) is not None:
        self.bufs, self.reads, self.deps = [bufs[i] for i in hit[1]], reads, deps
        return hit[0]
      ast = self.kernel(root, out_buf, chain)
      num = {b: i for i, b in enumerate(bufs)}
      cache[key] = (ast, [num[b] for b in self.bufs])
      return ast
    shape = root.shape
    out = self.define(out_buf)
    idx = tuple(self.new_range(s, AxisType.GLOBAL) if s != 1 else UOp.const(dtypes.int64, 0) for s in shape)
    val = self.lower(root, idx, None)
    if val.dtype != root.dtype: val = val.cast(root.dtype)
    oidx, oshape = idx, shape
    for n in reversed(chain or []): oidx, oshape = _forward_index(n, oidx), n.shape
    store = out.index(_flat_index(oidx, oshape)).store(val)
    return narrow_indices(UOp(Ops.SINK, dtypes.void, (store,), _kernel_name(shape, store)))

  def _region(self, root: UOp, out_buf: UOp, chain: list[UOp]) -> tuple[tuple, list[UOp], set[UOp], set[UOp]]:
    """What lowering the kernel depends on: the graph lowering visits with each load replaced by a placeholder numbered by
    first visit, carrying its buffer's number (out_buf is 0: a buffer loaded twice, or the assign target read, is one slot),
    dtype, size and the loaded shape; and the buffers by number, the reads and the deps lowering would record. Two regions
    of one key (a transformer's blocks: the same ops over other weights) lower to one AST, over their own buffers."""
    bufs, reads, deps = {out_buf: 0}, set(), set()
    done: dict[UOp, UOp] = {}
    stack: list[tuple[UOp, tuple[UOp, ...] | None]] = [(root, None)]   # (node, its edges once they are pushed)
    while stack:
      node, edges = stack.pop()
      if node in done: continue
      if edges is not None: done[node] = UOp(node.op, node.dtype, tuple(done[s] for s in edges), node.arg, node.tag)
      elif node.op is Ops.BUFFER or node in self.realizes and node is not self.root:
        b = node if node.op is Ops.BUFFER else self.buffer_map[node]
        if node.op is Ops.BUFFER: reads.add(node)
        else: deps.add(_dep(node))
        done[node] = UOp(Ops.BUFFER, node.dtype, (), (len(done), bufs.setdefault(b, len(bufs)), b.dtype, b.arg, node.shape), "region")
      elif not (edges := self._edges(node)): done[node] = node   # a constant, a variable: the same in every region
      else:
        stack.append((node, edges))
        stack.extend((s, None) for s in reversed(edges) if s not in done)
    top = done[root]
    for c in reversed(chain): top = UOp(c.op, c.dtype, (top,), c.arg)
    return (done[root], top, root.shape, root.dtype), list(bufs), reads, deps

def _forward_index(n: UOp, ix: tuple[UOp, ...]) -> tuple[UOp, ...]:
  """Where element `ix` of movement op n's source lands in n (PAD, RESHAPE, PERMUTE, FLIP: one-to-one)."""
  if n.op is Ops.PAD: return tuple(i + _i64(b) if _nz(b) else i for i, (b, _) in zip(ix, n.arg))
  if n.op is Ops.RESHAPE: return _unflat_index(_flat_index(ix, n.src[0].shape), n.shape)
  if n.op is Ops.PERMUTE: return tuple(ix[p] for p in n.arg)
  if n.op is Ops.FLIP: return tuple((_i64(s)-1) - i if f else i for i, s, f in zip(ix, n.shape, n.arg))
  raise RuntimeError(f"not a one-to-one movement op: {n.op}")

_ONE_TO_ONE = (Ops.PAD, Ops.RESHAPE, Ops.PERMUTE, Ops.FLIP)
def _assign_region(a: UOp) -> tuple[UOp, list[UOp]] | None:
  """An assign into a view, as Tensor.assign builds it: the target's buffer with the view's elements replaced,
  WHERE(M(True), M(x), buffer) for the view's inverse movement ops M. (x, M top first) when M maps x one-to-one onto the
  written elements: the kernel then writes only those and computes x only there (a KV-cache write of one position
  computed and stored the whole cache, its new keys' matmul for every position); else None (the whole buffer is stored)."""
  if (v := reshape_base(a.src[1])).op is not Ops.WHERE or v.src[2].op is not Ops.BUFFER or v.src[2] is not base_buffer(a.src[0]): return None
  m, x, chain = v.src[0], v.src[1], []
  while m.op is x.op and m.op in _ONE_TO_ONE and m.arg == x.arg:
    chain.append(x)
    m, x = m.src[0], x.src[0]
  while m.op in (Ops.RESHAPE, Ops.EXPAND): m = m.src[0]
  # (a value of no elements writes nothing: its region kernel stored it into a target of one element, t[0:0] = empty)
  if any(isinstance(s, int) and s == 0 for s in x.shape): return None
  return (x, chain) if chain and m.op is Ops.CONST and m.arg is True else None

def _nz(x: sint) -> bool: return isinstance(x, UOp) or x != 0

def _flat_index(idx: tuple[UOp, ...], shape: tuple[sint, ...]) -> UOp:
  terms = [i * st if not isinstance(st, int) or st != 1 else i for i, st in zip(idx, strides_for(tuple(_i64(s) for s in shape)))
           if not isinstance(st, int) or st != 0]
  if not terms: return UOp.const(dtypes.int64, 0)
  out = terms[0]
  for t in terms[1:]: out = out + t
  return out

def _unflat_index(flat: UOp, shape: tuple[sint, ...]) -> tuple[UOp, ...]:
  out: list[UOp] = []
  acc: sint = 1
  shape = tuple(_i64(s) for s in shape)
  for k in reversed(range(len(shape))):
    s = shape[k]
    if isinstance(s, int) and s == 1: out.append(UOp.const(dtypes.int64, 0))
    else:
      q = flat // acc if not isinstance(acc, int) or acc != 1 else flat
      # the outermost dimension that is not 1 needs no modulo
      out.append(q if all(isinstance(x, int) and x == 1 for x in shape[:k]) else q % s)
    acc = acc * s
  return tuple(reversed(out))

def _size_name(s: Any) -> str:
  # a kernel name is a function name in the source: a symbolic size shows as its variables' names
  return str(s) if isinstance(s, int) else "_".join(n.arg[0] for n in s.toposort() if n.op is Ops.DEFINE_VAR) or "n"
def _kernel_name(shape: tuple[sint, ...], store: UOp) -> str:
  reduces = [u for u in store.toposort() if u.op is Ops.REDUCE]
  rsizes = [r.src[0].arg if r.src[0].op is Ops.CONST else r.src[0] for u in reduces for r in u.src[1:]]
  prefix = "r" if reduces else "E"
  return "_".join([prefix] + [_size_name(s) for s in shape if not (isinstance(s, int) and s == 1)] + [_size_name(s) for s in rsizes]) or prefix

# ---- a hand-written kernel (Tensor.custom_kernel) in this IR ----
def _dep(u: UOp) -> UOp: return u.src[1] if u.op is Ops.AFTER else u   # what computes a realized node: a custom kernel's output, that kernel
def _src_of(s: UOp) -> UOp:
  """The node whose buffer serves custom kernel tensor `s`: s's base where s's elements are all of it in its order (a
  reshape, x.T.T), else s (computed into a buffer of its own)."""
  b = s.base
  if b is s or prod(b.shape) != prod(s.shape) or not all_int(s.shape) or Ops.PAD in {u.op for u in s.toposort(gate=lambda x: x is not b)}: return s
  rs = tuple(UOp.range(n, k) for k, n in enumerate(s.shape))
  under, idx = view_index(s, rs)
  return b if _flat(idx, under.shape).simplify() is _flat(rs, s.shape).simplify() else s

def lower_custom(ast: UOp) -> UOp:
  """A kernel written over placeholder views (UOp.placeholder, INDEX(view, offset) as value or store target, AFTER for
  ordering, END closing loops) as this IR's kernel: INDEX(DEFINE_*, offset) loaded or stored, AFTER's dependencies on the
  LOAD or STORE (ordering sources), ENDs left for the linearizer to nest the loops by. Its loops are REDUCE loops: none
  is split over threads (iterations may depend on each other), and the optimizer gets no actions unless it names some."""
  done: dict[UOp, UOp] = {}
  ptrs: dict[UOp, tuple[UOp, tuple[UOp, ...]]] = {}
  def base(v: UOp) -> tuple[UOp, tuple[UOp, ...]]:
    deps: list[UOp] = []
    while v.op not in GroupOp.Defines:
      if v.op is Ops.AFTER: deps += [done[d] for d in v.src[1:]]
      v = v.src[0]
    return v, tuple(deps)
  open_: dict[UOp, frozenset[UOp]] = {}
  for n in ast.toposort():
    open_[n] = frozenset().union(*(open_[x] for x in n.src)) | ({n} if n.op is Ops.RANGE else set())
    if n.op in (Ops.END, Ops.REDUCE): open_[n] -= set(n.src[1:])   # (a REDUCE's value is read after its loops)
    if n.op is Ops.INDEX and not isinstance(n.dtype, PtrDType):
      buf, deps = base(n.src[0])
      ptrs[n] = (UOp(Ops.INDEX, buf.dtype, (buf, done[n.src[1]])), deps)
      done[n] = ptrs[n][0].load(*deps)
    elif n.op is Ops.STORE and n.src[0] in ptrs: done[n] = UOp(Ops.STORE, dtypes.void, (ptrs[n.src[0]][0], done[n.src[1]]) + ptrs[n.src[0]][1])
    elif n.op is Ops.AFTER: done[n] = UOp.group(*base(n)[1])
    elif n.op is Ops.RANGE and n.arg[1] is AxisType.LOOP: done[n] = UOp(Ops.RANGE, n.dtype, tuple(done[x] for x in n.src), (n.arg[0], AxisType.REDUCE))
    elif n.op in GroupOp.Movement or n.op in GroupOp.Defines: done[n] = n
    else: done[n] = UOp(n.op, n.dtype, tuple(done[x] for x in n.src), n.arg, n.tag)
  if open_[ast]: raise ValueError(f"custom kernel leaves loops open: {sorted(r.arg[0] for r in open_[ast])}; close each with .end(range)")
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo(ast.arg if isinstance(ast.arg, str) else "custom")
  if info.opts_to_apply is None: info = KernelInfo(info.name, ())
  # every placeholder stays a kernel argument, used or not: the runtime passes each tensor's buffer
  params = tuple(u for u in ast.toposort() if u.op is Ops.DEFINE_GLOBAL)
  return UOp(Ops.SINK, dtypes.void, done[ast].src + params, info)

# ---- the whole schedule ----
# ---- the schedule cache: a graph built again (same ops, same input buffers' places) reuses its schedule ----
SCHEDULE_CACHE_SIZE = 512
# structure key -> (per item: its AST, its buffers as (is an input, index), the key graph's node it computes), the roots' buffers, new buffers
_schedule_cache: WatchedDict[UOp, tuple[list[tuple[UOp, list[tuple[bool, int]], UOp | None]], list[tuple[bool, int]], list[tuple[str, int, Any]]]] = \
  WatchedDict()

def _remember(key: UOp, entry: Any) -> None:
  if len(_schedule_cache) >= SCHEDULE_CACHE_SIZE: _schedule_cache.pop(next(iter(_schedule_cache)))
  _schedule_cache[key] = entry

# ---- the schedule cache on disk: a new process (the warm start of a model) reuses an earlier one's schedules ----
def _disk_key(key: UOp) -> tuple | None:
  """The disk cache key of the schedule of structure `key`, or None when it must not be cached: the structure exactly, the
  code and every flag (progcache.decision_key), and each device's compiler and renderer (the scheduler asks the renderer,
  has_threads; a device that does not open is not cached)."""
  from tinygrad.codegen.progcache import decision_key, code_version, Uncacheable
  from tinygrad.device import Device
  if (k := decision_key("schedule", key)) is None: return None
  devs = []
  for d in sorted({u.arg for u in key.toposort() if u.op is Ops.DEVICE}, key=repr):
    if not isinstance(d, str): return None
    try:
      dev = Device[d]
      ren = dev.renderer
      devs.append([d, dev.compiler_name, f"{type(ren).__module__}.{type(ren).__qualname__}", repr(ren.ability_key()), code_version(ren)])
    except Exception: return None   # (Uncacheable: a renderer without a source folder)
  return (*k, devs)

def _disk_store(dkey: tuple, key: UOp, entry: Any) -> None:
  from tinygrad.codegen.progcache import encode_graph, Uncacheable, _json, ast_digest
  from tinygrad.diskcache import diskcache_put
  items, outs, news = entry
  # (each kernel's digest too: the program lookups of a warm process that loads this row need not walk the kernels again)
  try:
    vals, nodes, pos = encode_graph([ast for ast, _, _ in items])
    digests = [ast_digest(ast) if ast.op is Ops.SINK else None for ast, _, _ in items]
  except Uncacheable as e:
    if DEBUG >= 3: print(f"schedule cache: not stored ({e})")
    return
  kpos = {u: i for i, u in enumerate(key.toposort())}
  if any(kn is not None and kn not in kpos for _, _, kn in items) or any(not isinstance(d, str) or type(n) is not int for d, n, _ in news): return
  diskcache_put("schedule", dkey, {"vals": vals, "nodes": nodes, "outs": [[a, i] for a, i in outs], "news": [[d, n, _json(dt)] for d, n, dt in news],
                                   "items": [[pos[ast], [[a, i] for a, i in refs], -1 if kn is None else kpos[kn], dg] for (ast, refs, kn), dg in zip(items, digests)]},
                version=dkey[2], device=",".join(d[0] for d in dkey[-1]))

def _disk_load(dkey: tuple, key: UOp, n_inputs: int) -> Any:
  """The cached entry (as _schedule_cache holds it) of structure `key`, or None: a miss, or a row that does not decode or
  does not fit this structure (its items read inputs it lacks, compute nodes it does not have)."""
  from tinygrad.codegen.progcache import decode_graph, _dec_val, set_digests
  from tinygrad.diskcache import diskcache_get
  v = diskcache_get("schedule", dkey, version=dkey[2], device=",".join(d[0] for d in dkey[-1]))
  if not isinstance(v, dict): return None
  try:
    built, knodes = decode_graph(v["vals"], v["nodes"]), list(key.toposort())
    news = [(d, n, _dec_val(json.loads(dt))) for d, n, dt in v["news"]]
    if not all(isinstance(d, str) and type(n) is int and n >= 0 and isinstance(dt, DType) for d, n, dt in news): return None
    def ref(r: Any) -> tuple[bool, int]:
      a, i = r
      if not (type(a) is bool and type(i) is int and 0 <= i < (n_inputs if a else len(news))): raise ValueError("bad buffer reference")
      return (a, i)
    items = []
    for a, refs, k, _ in v["items"]:
      if not (type(a) is int and 0 <= a < len(built) and built[a].op in (Ops.SINK, Ops.COPY) and type(k) is int and -1 <= k < len(knodes)):
        return None
      items.append((built[a], [ref(r) for r in refs], knodes[k] if k >= 0 else None))
    set_digests([(ast, dg) for (ast, _, _), (_, _, _, dg) in zip(items, v["items"]) if ast.op is Ops.SINK])
    return items, [ref(r) for r in v["outs"]], news
  except (ValueError, TypeError, KeyError, IndexError): return None

def _map_arg(a: Any, sub: dict[UOp, UOp]) -> Any:
  if isinstance(a, UOp): return a.substitute(sub)
  if isinstance(a, tuple): return tuple(_map_arg(x, sub) for x in a)
  return a

# (the loops below run over every node of every realize's graph: an `Ops.X` lookup in them costs ~0.05 us a node on
# CPython 3.11, ~8 us of exp(x)'s 77-node graph per pass; these are plain globals)
_BUFFER, _BIND, _COPY, _MOVEMENT = Ops.BUFFER, Ops.BIND, Ops.COPY, GroupOp.Movement

def _int_arg(arg: tuple) -> bool:
  # a movement op's arg holds no symbolic size: ints, or pairs of ints (PAD, SHRINK), or bools (FLIP)
  for x in arg:
    if type(x) is tuple:
      for y in x:
        if not isinstance(y, int): return False
    elif not isinstance(x, int): return False
  return True

def _graph_binds(topo: dict[UOp, None]) -> dict[UOp, None]:
  # the BINDs of a tensor graph: in movement ops' args (symbolic shapes) and as nodes (symbolic values)
  out: dict[UOp, None] = {}
  for n in topo:
    if (op := n.op) is _BIND: out[n] = None
    elif op in _MOVEMENT and not _int_arg(n.arg): out.update(sym_vars(n.arg))
  return out

def _replace_binds(roots: list[UOp], topo: dict[UOp, None], binds: dict[UOp, UOp]) -> list[UOp]:
  done: dict[UOp, UOp] = {}
  for n in topo:
    if n in binds: done[n] = binds[n]
    elif n.op is Ops.BUFFER: done[n] = n
    else:
      new_arg = _map_arg(n.arg, binds) if n.op in GroupOp.Movement else n.arg
      done[n] = UOp(n.op, dtypes.default_int if n.dtype is dtypes.weakint else n.dtype, tuple(done[x] for x in n.src), new_arg, n.tag)
  return [done[r] for r in roots]

class VariableBindError(ValueError, RuntimeError):
  """One graph binds a variable to two values: a ValueError, and the RuntimeError public tinygrad raises for it."""

def above_buffers(x: UOp) -> bool: return x.op is not _BUFFER   # a tensor graph's toposort gate: buffers are its leaves
def _graph_topo(roots: list[UOp]) -> dict[UOp, None]: return UOp(Ops.SINK, src=tuple(roots)).toposort(gate=above_buffers)

def unbind_graph(roots: list[UOp], topo: dict[UOp, None] | None = None) -> tuple[list[UOp], dict[UOp, int]]:
  """`roots` with every bound variable (BIND, in shapes and as values) replaced by its variable, and the values:
  kernels and the schedule cache see variables only, so one schedule and one compile serve every value. The weak int of a
  Tensor(variable) commits to default_int here: no kernel sees it. `topo`: the roots' `_graph_topo`, where the caller has it."""
  if topo is None: topo = _graph_topo(roots)
  binds: dict[UOp, UOp] = {}
  var_vals: dict[UOp, int] = {}
  for b in _graph_binds(topo):
    v, val = b.unbind()
    if var_vals.setdefault(v, val) != val:
      raise VariableBindError(f"bind mismatch on {v.arg[0]}: the variable is bound to two values in one graph ({var_vals[v]} and {val}); bind it once per step")
    binds[b] = v
  weakint = dtypes.weakint
  weak = any(n.dtype is weakint for n in topo)
  return (_replace_binds(roots, topo, binds) if binds or weak else roots), var_vals

def rebind_graph(root: UOp, var_vals: dict[UOp, int]) -> UOp:
  """`root` with each of its bound variables that is in `var_vals` bound to that value instead (a TinyJit replay's
  outputs then report the shapes of this call)."""
  topo = root.toposort(gate=lambda x: x.op is not Ops.BUFFER)
  binds = {b: b.src[0].bind(var_vals[b.src[0]]) for b in _graph_binds(topo) if b.src[0] in var_vals}
  return _replace_binds([root], topo, binds)[0] if binds else root

def _structure(roots: list[UOp], topo: dict[UOp, None] | None = None, done: dict[UOp, UOp] | None = None) -> tuple[UOp, list[UOp]]:
  """The graph with each input BUFFER replaced by a placeholder numbered by first use, and the inputs in that order.
  One walk (the roots' `_graph_topo`, reused when the caller has it): this runs on every realize. `done`, when given,
  gets each node of `roots`' graph -> its node in the key."""
  inputs: list[UOp] = []
  clones: dict[Any, int] = {}
  if done is None: done = {}
  for n in (_graph_topo(roots) if topo is None else topo):
    if n.op is _BUFFER:
      done[n] = UOp(_BUFFER, n.dtype, (n.src[1],), n.arg, tag=("input", len(inputs)))
      inputs.append(n)
    elif n.op is _COPY and type(n.tag) is tuple and n.tag[:1] == ("clone",):
      # a clone's own number (Tensor.clone) only keeps two clones apart: numbered by first use, a loop's clones share a key
      done[n] = UOp(_COPY, n.dtype, tuple([done[s] for s in n.src]), n.arg, ("clone", clones.setdefault(n.tag, len(clones))))
    else: done[n] = _rebuild(n, tuple([done[s] for s in n.src]))
  return UOp(Ops.SINK, src=tuple(done[r] for r in roots)), inputs

def create_schedule(roots: list[UOp], topo: dict[UOp, None] | None = None) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  """Kernels and copies that compute `roots`, in dependency order, and the BUFFER (viewed in its shape) for each root.

  Cached by graph structure: the ASTs are reused and only the buffers are fresh, so a loop that builds the same graph
  again skips scheduling; kept on disk too (CACHELEVEL=2), so a new process (a model's warm start) skips it for a graph an
  earlier one scheduled. Any change of shape, dtype, device or op gives a different key; a bound variable's value does
  not (the kernels take it as an argument: each ExecItem carries the values in `var_vals`).
  Each item's `node` is the node of `roots`' graph it computes (None for an item of a cached schedule until asked for:
  `item_nodes`). `topo`: the roots' `_graph_topo` (its last node, a SINK, may be over fewer of them), where the caller has it."""
  if topo is None: topo = _graph_topo(roots)
  uroots, var_vals = unbind_graph(roots, topo)
  to_key: dict[UOp, UOp] = {}
  key, inputs = _structure(uroots, topo if uroots is roots else None, to_key)
  hit = _schedule_cache.get(key) if SCACHE else None
  dkey = _disk_key(key) if hit is None and SCACHE else None
  if dkey is not None and (hit := _disk_load(dkey, key, len(inputs))) is not None: _remember(key, hit)
  if hit is None:
    schedule, results = _create_schedule(uroots)
    pos = {b: i for i, b in enumerate(inputs)}
    created: dict[UOp, int] = {}
    def ref(b: UOp) -> tuple[bool, int]:
      if b in pos: return (True, pos[b])
      return (False, created.setdefault(b, len(created)))
    # the cache holds each item's node as the key graph's (placeholders, not this call's buffers, which it must not keep alive)
    as_key = _pair_nodes(uroots, list(key.src))
    # (a copy's ast is its graph node, whose source is this call's buffer: the key graph's node stands in, or the cache would
    # keep every copied buffer alive)
    items = [(as_key.get(ei.ast, ei.ast) if ei.ast.op is Ops.COPY else ei.ast, [ref(b) for b in ei.bufs], as_key.get(ei.node) if ei.node is not None else None)
             for ei in schedule]
    outs = [ref(results[r]) for r in uroots]
    news = sorted(created, key=created.__getitem__)
    if SCACHE:
      _remember(key, entry := (items, outs, [(b.device, b.arg, b.dtype) for b in news]))
      if dkey is not None: _disk_store(dkey, key, entry)
    if uroots is not roots:   # the nodes of the caller's graph (with its bound variables), not of the unbound one
      to_bound = _pair_nodes(uroots, roots)
      for ei in schedule: ei.node = to_bound.get(ei.node) if ei.node is not None else None
    for ei in schedule: ei.var_vals = var_vals
    return schedule, {root: buffer_view(results[u], root.shape) for root, u in zip(roots, uroots)}
  items, outs, news_spec = hit
  fresh = [new_buffer(dev, size, dt) for dev, size, dt in news_spec]
  def get(r: tuple[bool, int]) -> UOp: return inputs[r[1]] if r[0] else fresh[r[1]]
  # (the key and, where it is of `roots`' own graph, its node map: item_nodes finds each item's node without a walk)
  meta = {"key": key, "to_key": to_key if uroots is roots else None}
  return [ExecItem(ast, [get(r) for r in refs], var_vals=var_vals, metadata={"key_node": kn, **meta}) for ast, refs, kn in items], \
    {root: buffer_view(get(o), root.shape) for root, o in zip(roots, outs)}

def item_nodes(roots: list[UOp], schedule: list[ExecItem]) -> list[UOp | None]:
  """The node of `roots`' graph each item of `create_schedule(roots)` computes (found again for a cached schedule's items,
  whose nodes the cache keeps as its key graph's)."""
  if all(ei.node is not None or "key_node" not in ei.metadata for ei in schedule): return [ei.node for ei in schedule]
  if (to_key := next((m for ei in schedule if (m := ei.metadata.get("to_key")) is not None), None)) is not None:
    want = {kn for ei in schedule if ei.node is None and (kn := ei.metadata.get("key_node")) is not None}
    found = {k: n for n, k in to_key.items() if k in want}
    return [ei.node if ei.node is not None else found.get(ei.metadata.get("key_node")) for ei in schedule]  # type: ignore[arg-type]
  # (the key create_schedule built: building it again was ~1/3 of the host work of a realize that hands on its intermediates)
  key = next((k for ei in schedule if (k := ei.metadata.get("key")) is not None), None)
  if key is None: key = _structure(unbind_graph(roots)[0])[0]
  to_roots = _pair_nodes(list(key.src), roots)
  return [ei.node if ei.node is not None else to_roots.get(ei.metadata.get("key_node")) for ei in schedule]  # type: ignore[arg-type]

def _pair_nodes(a: list[UOp], b: list[UOp]) -> dict[UOp, UOp]:
  """Each node of graph `a` -> the node at the same place in graph `b`, a graph of the same structure (the same ops over
  the same sources; its buffers, bound variables and their values may differ: the walk stops at those leaves)."""
  out: dict[UOp, UOp] = {}
  stack = list(zip(a, b))
  while stack:
    x, y = stack.pop()
    if x in out: continue
    out[x] = y
    if x.op in (Ops.BUFFER, Ops.BIND, Ops.DEFINE_VAR) or len(x.src) != len(y.src): continue
    stack.extend(zip(x.src, y.src))
  return out

def gone(u: UOp, why: str) -> UOp:
  """A node in place of `u` (its shape, dtype and device) whose value can no longer be computed: scheduling a graph that
  reads it raises `why` (Tensor._mark_gone)."""
  return UOp(Ops.NOOP, u.dtype, (u,), arg=("gone", why))
def is_gone(u: UOp) -> bool: return u.op is Ops.NOOP and isinstance(u.arg, tuple) and u.arg[:1] == ("gone",)

def gone_error(nodes: Iterable[UOp]) -> None:
  """Raise, with its message, for a graph that reads a tensor whose value is gone."""
  for n in nodes:
    if is_gone(n): raise RuntimeError(n.arg[1])

def _create_schedule(roots: list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  topo = _graph_topo(roots)
  gone_error(topo)
  realizes = find_realizes(roots, topo)
  buffer_map: dict[UOp, UOp] = {}
  items: dict[UOp, tuple[ExecItem, set[UOp], set[UOp]]] = {}   # realized node -> (item, BUFFERs read, nodes depended on)
  order = [n for n in topo if n in realizes]
  def buf(b: UOp) -> UOp: return b if b.op is Ops.BUFFER else buffer_map[b]   # b: a custom kernel tensor's _src_of
  # kernels of one structure are lowered once (a model's repeated blocks: ViT-Ti's 223 kernels are ~25 ASTs)
  lowered: dict | None = {} if SCACHE else None
  def build(n: UOp) -> None:
    if n.op is Ops.AFTER:   # the buffer of the custom kernel's tensor, which the kernel wrote
      if len(n.src) != 2 or n.src[1].op is not Ops.KERNEL:
        raise NotImplementedError(f"AFTER over {[s.op for s in n.src[1:]]} in a tensor graph: only Tensor.custom_kernel's outputs are one here")
      buffer_map[n] = buf(_src_of(n.src[0]))
      return
    if n.op is Ops.KERNEL:
      srcs = [_src_of(s) for s in n.src]
      items[n] = (ExecItem(lower_custom(n.arg.ast), [buf(b) for b in srcs], node=n),
                  {b for b in srcs if b.op is Ops.BUFFER}, {_dep(b) for b in srcs} & items.keys())
      return
    if n.op is Ops.ASSIGN:
      target = base_buffer(n.src[0])
      if target is None: raise ValueError("assign target must be a realized, contiguous tensor")
      buffer_map[n] = target
    elif n.op is Ops.COPY:
      buffer_map[n] = new_buffer(n.src[1].arg, smax(n.size), n.dtype)
      src_base = base_buffer(n.src[0])
      src_buf = src_base if src_base is not None else buffer_map[n.src[0]]
      # (a source with nothing to compute, an empty one, has no item to wait for: the COPY would never be ready)
      items[n] = (ExecItem(n, [buffer_map[n], src_buf], node=n), {src_base} if src_base is not None else set(),
                  set() if src_base is not None else {_dep(n.src[0])} & items.keys())
      return
    else: buffer_map[n] = new_buffer(n.device, smax(n.size), n.dtype)   # a symbolic size: room for its largest value
    if n.size == 0: return  # nothing to compute for an empty tensor
    kb = KernelBuilder(realizes, buffer_map)
    region = _assign_region(n) if n.op is Ops.ASSIGN and n.src[1] not in realizes else None
    if region is not None: ast = kb.kernel(region[0], buffer_map[n], region[1], lowered)
    else: ast = kb.kernel(n.src[1] if n.op is Ops.ASSIGN and n.src[1] not in realizes else n, buffer_map[n], None, lowered)
    if n.op is Ops.ASSIGN and _reads_target_elsewhere(ast):
      # the value reads the target at other elements than the one each step writes (x[1:] = x[:-1], x += x.T, a flip): in
      # one kernel a step would read what an earlier step already overwrote. The value (the part going into a view, when
      # the assign is into one) is computed into a buffer of its own first; the assign then copies it in.
      value = region[0] if region is not None else n.src[1]
      realizes[value] = None
      build(value)
      build(n)
      return
    items[n] = (ExecItem(ast, kb.bufs, node=n), kb.reads, kb.deps & items.keys())
  for n in order: build(n)
  del build   # a recursive closure is a reference cycle: dropped now, with every item it holds, not by a later collection
  schedule = _order(items, buffer_map)
  if (rec := _upat.TRACER) is not None: rec.schedule(roots, realizes, schedule)   # VIZ: kernel boundaries and why
  if DEBUG >= 1 and schedule: print(f"scheduled {len(schedule)} kernels")
  results: dict[UOp, UOp] = {}
  for r in roots:
    base = base_buffer(r)
    results[r] = base if base is not None else buffer_map[r]
  return schedule, results

def _reads_target_elsewhere(ast: UOp) -> bool:
  """Kernel `ast` (one STORE) loads the buffer it stores into at an index that is not, as far as the simplifier can tell,
  the element being stored (an element read where it is written is safe: each step reads it before writing it)."""
  store_idx = ast.src[0].src[0]
  out = store_idx.src[0]
  loads = [u for u in ast.toposort() if u.op is Ops.INDEX and u.src[0] is out and u is not store_idx]
  if not loads: return False
  want = store_idx.src[1].simplify()
  return any(u.src[1] is not store_idx.src[1] and u.src[1].simplify() is not want for u in loads)

def _order(items: dict[UOp, tuple[ExecItem, set[UOp], set[UOp]]], buffer_map: dict[UOp, UOp]) -> list[ExecItem]:
  """Dependency order; an ASSIGN runs after every other kernel that reads its target's old contents (write after read)."""
  after: dict[UOp, set[UOp]] = {n: set(deps) for n, (_, _, deps) in items.items()}
  for n in items:
    if n.op is Ops.ASSIGN:
      target = buffer_map[n]
      after[n] |= {k for k, (_, reads, _) in items.items() if k is not n and target in reads}
    if n.op is Ops.KERNEL:   # a custom kernel writes buffers in place: after every other reader of what they held
      ei = items[n][0]
      slots = {u.src[0].src[0].arg for u in ei.ast.toposort() if u.op is Ops.STORE and u.src[0].src[0].op is Ops.DEFINE_GLOBAL}
      bufs, srcs = {ei.bufs[i] for i in slots}, {_dep(_src_of(n.src[i])) for i in slots}
      after[n] |= {k for k, (_, reads, deps) in items.items() if k is not n and (bufs & reads or srcs & deps)}
  pos = {n: i for i, n in enumerate(items)}
  out: list[ExecItem] = []
  done: set[UOp] = set()
  pending = sorted(items, key=pos.__getitem__)
  while pending:
    ready = [n for n in pending if after[n] <= done]
    if not ready: raise RuntimeError(f"cannot order the schedule: a cycle of assigns that read each other's targets ({', '.join(str(n.op) for n in pending)}); realize what reads a tensor's old value before assigning to it")
    for n in ready:
      out.append(items[n][0])
      done.add(n)
    pending = [n for n in pending if n not in done]
  return out

def memory_plan(schedule: list[ExecItem], keep: set[UOp], larger: Callable[[], bool] | None = None) -> dict[UOp, UOp]:
  """Reuse intermediate buffers whose lifetimes do not overlap: BUFFER -> BUFFER to use instead. `keep`: buffers that outlive
  the schedule. A new buffer takes a free one of its device and dtype of its own size, else, where `larger()` says so (asked
  once, at the first such chance) and only compiled kernels use it (a copy moves its buffers' whole size), the smallest
  larger one. Exact sizes only left a CNN's activations (each conv's output a size of its own) in new memory: ResNet-18
  batch 32's forward made 526 MB of buffers, 290 this way. (The realize says no where a live graph may read what an
  intermediate holds once it ran: taken by another, the value is computed again, a decode step's attention scores.)"""
  # (a buffer is only reused after a step that ended its last use: none before the last item)
  if len(schedule) < 2 or NO_MEMORY_PLANNER: return {}
  last_use: dict[UOp, int] = {}
  first_def: dict[UOp, int] = {}
  copied: set[UOp] = set()   # buffers a step other than a compiled kernel uses (a larger buffer in their place: no)
  for i, ei in enumerate(schedule):
    for b in ei.bufs: last_use[b] = i
    first_def.setdefault(ei.bufs[0], i)
    if ei.ast.op is not Ops.SINK: copied.update(ei.bufs)
  free: dict[tuple, list[UOp]] = {}
  assigned: dict[UOp, UOp] = {}
  ending: dict[int, list[UOp]] = {}
  for b, i in last_use.items(): ending.setdefault(i, []).append(b)
  may: list[bool] = []   # (larger()'s answer, once asked)
  for i, ei in enumerate(schedule):
    out = ei.bufs[0]
    if first_def.get(out) == i and out not in keep and out.op is Ops.BUFFER and _fresh(out) and (cands := free.get((out.device, out.dtype))):
      # (the last freed first: its memory is the likeliest still in cache)
      fit = [j for j, m in enumerate(cands) if m.arg == out.arg]
      if not fit and larger is not None and out not in copied and type(out.arg) is int:
        if not may: may.append(larger())
        if may[0]: fit = sorted((j for j, m in enumerate(cands) if type(m.arg) is int and m.arg > out.arg), key=lambda j: (-cands[j].arg, j))
      if fit: assigned[out] = cands.pop(fit[-1])
    for b in ending.get(i, []):
      if b in first_def and b not in keep and _fresh(b):
        free.setdefault((b.device, b.dtype), []).append(assigned.get(b, b))
  return assigned

def _fresh(b: UOp) -> bool: return not has_buffer(b)
