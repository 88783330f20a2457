"""TinyJit: capture the kernels a function runs on its second call and replay them on later calls, without rescheduling."""
from __future__ import annotations
import contextlib, enum, functools, inspect, itertools, math, operator, threading, weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.helpers import CAPTURING, JIT, JITBEAM, NO_MEMORY_PLANNER, DEBUG, TRAINING, Context, engine_locked, all_int
from tinygrad.device import Buffer, BufferView
from tinygrad.engine import realize as _realize
from tinygrad.engine.realize import JitError  # noqa: F401 (public here: `from tinygrad.engine.jit import JitError`)
from tinygrad.viz import profile as _prof
from tinygrad.engine.buffers import buffer_of, base_buffer, buffer_if_any, buffer_node, reshape_base
from tinygrad.tensor import Tensor, training_reads, graph_epoch, pending_assigns, write_epoch, capture_made
from tinygrad import tensor as _tensor
from tinygrad.engine.graph import Replay
from tinygrad.uop.ops import UOp, sym_vars, sym_infer
from tinygrad.uop import ops as _ops
from tinygrad.dtype import DType, dtypes

R = TypeVar("R")

def _is_array(x: Any) -> bool: return type(x).__name__ == "ndarray" and type(x).__module__ == "numpy"

def _same_read(a: Any, b: Any) -> bool: return a is b if isinstance(a, Tensor) or isinstance(b, Tensor) else _same(a, b)
def _fmt_read(v: Any) -> str: return f"a tensor of shape {v.shape} (id {id(v):#x})" if isinstance(v, Tensor) else repr(v)

def _same(a: Any, b: Any) -> bool:
  # equal and of one type (1 and 1.0 and True compare equal but may trace differently); NaN equals NaN; 0.0 and -0.0 differ
  # (1 / (x * s) is inf or -inf); numpy arrays: of one dtype and shape, with equal items (an array's == is an array, whose
  # truth value raises), their zeros of one sign
  if type(a) is not type(b): return False
  if _is_array(a):
    import numpy as np   # (loaded already: a is its array)
    if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"): return False
    if a.dtype.kind == "c": a, b = np.concatenate([a.real.ravel(), a.imag.ravel()]), np.concatenate([b.real.ravel(), b.imag.ravel()])
    return a.dtype.kind not in "fc" or bool(np.array_equal(np.signbit(a[a == 0]), np.signbit(b[a == 0])))
  try:
    if not (a == b or a != a and b != b): return False
    if not (isinstance(a, float) or type(a).__module__ == "numpy" and getattr(a, "dtype", None) is not None and a.dtype.kind == "f"): return True
    return a != 0 or math.copysign(1.0, a) == math.copysign(1.0, b)
  except Exception: return a is b   # (an object whose == is not a bool, another library's array: only itself is the same)

def _items(d: dict) -> list[tuple[Any, Any]]:
  # a dict's items in one order whatever order it was built in: a replay's {"b": y, "a": x} binds its tensors as the
  # capture's {"a": x, "b": y} did (in the order given, y would be read where x was captured)
  try: return sorted(d.items(), key=lambda kv: kv[0])
  except TypeError: return sorted(d.items(), key=lambda kv: (type(kv[0]).__qualname__, repr(kv[0])))

class _DictKeys(tuple):
  """A dict argument's keys, compared like a plain value: a replay with other keys raises (its tensors would be read where
  the capture's other keys' were)."""
  def __repr__(self) -> str: return f"a dict with keys {list(self)!r}"

def _tensors_in(x: Any) -> list[Tensor]:
  if isinstance(x, Tensor): return [x]
  if isinstance(x, (list, tuple)): return [t for v in x for t in _tensors_in(v)]
  if isinstance(x, dict): return [t for _, v in _items(x) for t in _tensors_in(v)]
  return []

# the values a capture bakes in as constants: a change would replay the old value, so it is an error
_PLAIN = (type(None), bool, int, float, complex, str, bytes, DType, enum.Enum)
def _scan(x: Any, where: Any, static: bool, tensors: list[Tensor], binds: list[UOp], constants: list[tuple[Any, Any]]) -> None:
  """One walk over an argument's leaves (lists, tuples and dicts are walked): its Tensors, its bound Variables (BIND UOps:
  inputs of the capture, like tensors) and, unless `static`, its plain-value leaves with where they are (a `_where` path:
  the string is made only for an error). Plain values are Python scalars, strings, dtypes, enums and numpy values; other
  objects (a model, a fresh OptimizerGroup each step, a function) are not compared, as public tinygrad compares none: what
  the function reads from them is what it read when captured."""
  if isinstance(x, Tensor):
    # an empty tensor has no buffer (realized, it is a constant) and no kernel reads it: its shape, dtype and device are
    # what the capture bakes in, as for a plain value (taken as an input, the call raised "not realized into a buffer")
    if all_int(x.shape) and 0 in x.shape:
      if not static: constants.append((where, _Empty((x.shape, x.dtype, x.device))))
    else: tensors.append(x)
  elif isinstance(x, UOp):
    if x.op is Ops.BIND: binds.append(x)
  elif isinstance(x, (list, tuple)):
    for i, v in enumerate(x): _scan(v, (where, i), static, tensors, binds, constants)
  elif isinstance(x, dict):
    items = _items(x)
    if not static: constants.append((where, _DictKeys(k for k, _ in items)))
    for k, v in items: _scan(v, (where, k), static, tensors, binds, constants)
  elif not static and (isinstance(x, _PLAIN) or type(x).__module__ == "numpy"): constants.append((where, x))

class _Keywords(tuple):
  def __repr__(self) -> str: return f"the arguments {list(self)!r}"

class _Empty(tuple):
  def __repr__(self) -> str: return f"an empty tensor {self[0]} {self[1]} {self[2]}"

def _where(path: Any) -> str:
  # (None, position or keyword): the argument; (parent, index or key): an element of it
  return f"argument {path[1]!r}" if path[0] is None else f"{_where(path[0])}[{path[1]!r}]"

def _realized_buffers(inputs: list[Tensor]) -> list[Buffer] | None:
  """The Buffers of the inputs when each one is a realized single-device buffer (a replay's usual inputs), else None."""
  out = []
  for t in inputs:
    if (u := reshape_base(t.uop)).op is not Ops.BUFFER or (b := buffer_if_any(u)) is None or not b.is_allocated(): return None
    out.append(b)
  return out

def _unbound(shape: tuple) -> tuple:
  # a shape as the capture sees it: variables, not their values (a replay may bind new ones)
  if all(type(s) is int for s in shape): return shape
  return tuple(s.substitute({b: b.src[0] for b in sym_vars(s)}) if isinstance(s, UOp) else s for s in shape)

def _unbind_arg(a: Any, binds: list[UOp]) -> Any:
  # a movement op's argument with its bound variables unbound (their BINDs added to `binds`: inputs of the call)
  if isinstance(a, tuple): return tuple(_unbind_arg(x, binds) for x in a)
  if not isinstance(a, UOp) or not (bs := sym_vars(a)): return a
  binds += bs
  return a.substitute({b: b.src[0] for b in bs})

def _view_chain(u: UOp, binds: list[UOp]) -> tuple[UOp, tuple] | None:
  """A view of a buffer: the BUFFER and the view's form (the buffer's size and dtype, then each movement op, top first,
  by its variables: their BINDs are added to `binds`), None when `u` is not a view of a buffer."""
  chain = []
  while u.op in GroupOp.Movement or u.op in (Ops.DETACH, Ops.BITCAST):
    chain.append((u.op, _unbind_arg(u.arg, binds), u.dtype))
    u = u.src[0]
  return (u, (u.arg, u.dtype, tuple(chain))) if u.op is Ops.BUFFER else None

def _view_form(t: Tensor, binds: list[UOp]) -> tuple | None:
  """() for an input that is its buffer (or a reshape of it), else the form of the view of a realized buffer it is, per
  shard (`_view_chain`), or None for another view (of a symbolic shape, or showing padding)."""
  if all(base_buffer(s) is not None for s in (t.uop.src if t.uop.op is Ops.MULTI else (t.uop,))): return ()
  if not all_int(t.shape) or not t._views_a_buffer(): return None
  chains = [_view_chain(s, binds) for s in (t.uop.src if t.uop.op is Ops.MULTI else (t.uop,))]
  return tuple(c[1] for c in chains) if all(c is not None for c in chains) else None   # type: ignore[index]

def _buffer_uops(t: Any) -> list[UOp]:
  """The BUFFER UOps an input tensor is read from: its own, or a multi-device tensor's shards' (for a view: its base's)."""
  out = []
  for s in (t.uop.src if t.uop.op is Ops.MULTI else (t.uop,)):
    u = base_buffer(s)
    if u is None and (c := _view_chain(s, [])) is not None: u = c[0]
    if u is None: raise JitError(f"jit input is not realized into a buffer ({s.op})")
    out.append(u)
  return out

def _ops_from(t: Tensor, inputs: list[Tensor]) -> tuple[int, tuple] | None:
  """For a view of a multi-device tensor that is (or views the tensor that) one of `inputs` (views): that input's position
  and the movement ops (`Tensor._replay`) that make the view from it, or None."""
  for k, x in enumerate(inputs):
    if x is t._view_of: return k, t._replay or ()
    mine = x._replay or ()
    if x._view_of is not None and x._view_of is t._view_of and t._replay is not None and t._replay[:len(mine)] == mine: return k, t._replay[len(mine):]
  return None

def _aliases(bufs: list[Buffer]) -> tuple[int, ...]:
  # per buffer the first position it is at: which inputs are one buffer (two arguments, or views of one tensor)
  first: dict[int, int] = {}
  return tuple(first.setdefault(id(b), i) for i, b in enumerate(bufs))

def _written(step: Any) -> list[Buffer]:
  # the buffers a captured step writes: a kernel's outputs; a copy's (or another step's) first buffer
  p = getattr(step.runner, "p", None)
  return [step.bufs[i] for i in p.outs] if p is not None else step.bufs[:1]

def _read(step: Any) -> list[Buffer]:
  # the buffers a captured step reads: a kernel's inputs; a copy's source
  p = getattr(step.runner, "p", None)
  return [step.bufs[i] for i in p.ins] if p is not None else step.bufs[1:]

def _prune(steps: list, inputs: list[Buffer], held: set[int]) -> list:
  """TinyJit(prune=True): the captured steps a replay runs. Public tinygrad's rule, in order: a step that uses an input's
  buffer, or a buffer a step kept before it uses, is kept. And so is one whose result could differ at a replay or whose
  skipping would change one: it reads a Variable, updates state (writes a buffer that it or a step before it read: a
  counter's `+= 1`), writes a buffer a live tensor holds (`held`, by id: a returned output or state, which the caller can
  write between calls), reads or writes a buffer a kept step writes (an accumulator it resets), to a fixed point. The rest
  give each replay the value they gave the capture call, which ran them."""
  keep, read = [False] * len(steps), set()
  for i, s in enumerate(steps):
    read |= {id(b) for b in _read(s)}
    # (held: public tinygrad skips it, and a returned `2*state` the caller assigned v into was v at every later replay)
    keep[i] = not read.isdisjoint(w := {id(b) for b in _written(s)}) or not held.isdisjoint(w)
  while True:
    needed = {id(b) for b in inputs}
    for i, s in enumerate(steps):
      ids = {id(b) for b in s.bufs}
      if keep[i] or not needed.isdisjoint(ids) or getattr(getattr(s.runner, "p", None), "vars", None):
        keep[i] = True
        needed |= ids
    kept_writes = {id(b) for i, s in enumerate(steps) if keep[i] for b in _written(s)}
    more = [i for i, s in enumerate(steps) if not keep[i] and not kept_writes.isdisjoint(id(b) for b in s.bufs)]
    if not more: return [s for s, k in zip(steps, keep) if k]
    for i in more: keep[i] = True

def _held_buffers(kept: bool = True, multi: bool = True) -> dict[int, Buffer]:
  """The Buffers (by id) a live tensor's graph, or (kept) the graph autograd keeps for it (`_graph`), reads; not (multi)
  those of tensors on several devices."""
  from tinygrad.tensor import live_tensors
  from tinygrad.engine.buffers import has_buffer
  held: dict[int, Buffer] = {}
  for t in live_tensors():
    if not multi and not isinstance(t.device, str): continue
    for g in (t.uop, t._graph if kept else None):
      for u in g.toposort(gate=lambda x: x.op is not Ops.BUFFER) if g is not None else ():
        if u.op is Ops.BUFFER and has_buffer(u):
          b = buffer_of(u)
          held[id(b)] = b
  return held

_UOP = operator.attrgetter("uop")
def _holders(bufs: dict[int, Buffer]) -> dict[int, tuple[bool, list[Tensor]]]:
  """For each of `bufs` (by id) that a live tensor's graph reads: whether a tensor holds it as its own (its graph is the
  buffer or a view of it, the steadiest holder), and that tensor, else every tensor whose lazy graph reads it."""
  from tinygrad.tensor import live_tensors, _views_buffer
  own: dict[int, list[Tensor]] = {}
  lazy: dict[int, list[Tensor]] = {}
  for t in live_tensors():
    mine = own if all(_views_buffer(s) for s in (t.uop.src if t.uop.op is Ops.MULTI else (t.uop,))) else lazy
    for u in t.uop.toposort(gate=lambda x: x.op is not Ops.BUFFER):
      if u.op is Ops.BUFFER and (b := buffer_if_any(u)) is not None and id(b) in bufs: mine.setdefault(id(b), []).append(t)
  return {k: (True, own[k][:1]) if k in own else (False, lazy[k]) for k in own.keys() | lazy.keys()}

def _plan_memory(steps: list, inputs: list[Buffer], held: set[int]) -> list:
  """A capture's steps with its intermediates sharing memory (public tinygrad plans its captured kernels' memory too). The
  capture call ran each realize with a plan of its own, so the buffers of one realize's results that a later realize of
  the call read (a training step's activations, read by its backward and optimizer) stayed allocated apart, and a realize's
  own plan shares only buffers of one size. An intermediate here is a value (a buffer, or one of the values a realize's
  plan put in it one after another: ExecStep.values) that a plain kernel writes before any step reads it (or computes
  there, new in its realize, reading back only what it wrote), in a buffer used by plain kernels only that is no input
  (`inputs`), no buffer a live tensor holds (`held`: outputs, state, gradients), owned, of default options, and holds no
  other value that must stay. Its life runs from the step that first uses it to the step that last does; two share memory
  only when one's life ends at a step before the other's begins (no step reads or writes memory another value of that
  step uses). On a device whose allocator has `_offset` they are placed in one buffer per device (BufferView), else each
  shares a whole buffer as large as its largest user (_place)."""
  from tinygrad.device import Device
  from tinygrad.engine.realize import CompiledRunner
  first: dict[tuple, int] = {}
  last: dict[tuple, int] = {}
  byid: dict[tuple, Buffer] = {}
  fixed: set[tuple] = set()
  pinned = {id(b) for b in inputs} | held   # (buffers that stay, with every value in them)
  # (values apart only where every step names them: one unnamed use of a value would be a second key with a life of its own)
  named = all(s.values is not None and s.new is not None for s in steps)
  # a value's key: (buffer, its UOp). A realize's plan names a Buffer by the UOp of its first value, so a later realize of the
  # call reads the last value put there under the first one's name, not new: that use is the value the buffer holds then
  # (keyed by the name, the first value's life ran on past the last one's: mamba's jitted decode step read stale memory)
  cur: dict[int, tuple] = {}
  keys: list[list[tuple]] = []
  for i, s in enumerate(steps):
    plain = type(s.runner) is CompiledRunner
    wrote, read = ({id(b) for b in _written(s)}, {id(b) for b in _read(s)}) if plain else (set(), set())
    n = len(s.bufs)
    keys.append([])
    for b, u, isnew in zip(s.bufs, s.values if named else [None] * n, s.new if named else [False] * n):
      k = (id(b), u)
      if not isnew and k in first and cur[id(b)] != k: k = cur[id(b)]
      cur[id(b)] = k
      keys[-1].append(k)
      if k not in first:
        first[k], byid[k] = i, b
        # (a new value's kernel may read what it wrote itself: a softmax's max and sum stored and read back)
        if id(b) not in wrote or id(b) in read and not isnew or not b._owned or b.options is not None or type(b) is not Buffer: fixed.add(k)
      if not plain: pinned.add(id(b))
      last[k] = i
  # a buffer that stays keeps every value in it: moved out, they took new memory beside it (a realize's plan had put them
  # there, in memory a fixed value needs anyway)
  pinned |= {k[0] for k in fixed}
  per_device: dict[str, list[tuple]] = {}
  for k in first:
    if k[0] not in pinned: per_device.setdefault(byid[k].device, []).append(k)
  # a value's elements: its own (a realize's plan may have put it in a larger buffer of its dtype), else its buffer's
  def size(k: tuple) -> int:
    u = k[1]
    return u.arg if u is not None and u.op is Ops.BUFFER and isinstance(u.arg, int) and u.arg < byid[k].size else byid[k].size
  new: dict[tuple, Buffer] = {}
  for dev, ks in per_device.items():
    if len(ks) < 2: continue
    arena = hasattr(Device[dev].allocator, "_offset")
    # (a multiple of 256 bytes: every view starts aligned; a whole buffer of 16: a host view of it is an array of any dtype)
    nbytes = [size(k) * byid[k].dtype.itemsize for k in ks]
    offs, sizes = _place([(first[k], last[k], -(-n // 256) * 256 if arena else -(-n // 16) * 16) for k, n in zip(ks, nbytes)], arena)
    if arena:
      base = Buffer(dev, max(o + n for o, n in zip(offs, sizes)), dtypes.uint8)
      for k, o in zip(ks, offs): new[k] = BufferView(base, o, size(k), byid[k].dtype)
    else:
      shared = {o: Buffer(dev, n, dtypes.uint8) for o, n in zip(offs, sizes)}   # (an offset here names a whole buffer)
      for k, o in zip(ks, offs): new[k] = shared[o]
  # (every step anew: the values are the capture call's, not a replay's)
  return [type(s)(s.runner, [new.get(k, b) for b, k in zip(s.bufs, ks)], s.var_vals) for s, ks in zip(steps, keys)]

def _place(lives: list[tuple[int, int, int]], arena: bool) -> tuple[list[int], list[int]]:
  """Where each of the buffers `lives` (first step, last step, bytes) goes, and the bytes it takes there: the smallest of
  greedy placements in a few orders (_place_in). Largest first (TFLite's) is not always the best: unet_resblock's arena
  took 86,016 bytes that way and 83,712 in order of first use (its largest step has 70,912 alive), which brought the
  step under public tinygrad's limit."""
  orders = [lambda i: (-lives[i][2], lives[i][0]), lambda i: (lives[i][0], -lives[i][2]),
            lambda i: (lives[i][0] - lives[i][1], -lives[i][2]), lambda i: (-lives[i][2] * (lives[i][1] - lives[i][0] + 1), lives[i][0])]
  def cost(p: tuple[list[int], list[int]]) -> int:
    if arena: return max((o + n for o, n in zip(*p)), default=0)
    return sum(dict(zip(*p)).values())   # (whole buffers: each named by its offset, as large as its largest holder)
  return min((_place_in(lives, sorted(range(len(lives)), key=k), arena) for k in orders), key=cost)

def _place_in(lives: list[tuple[int, int, int]], order: list[int], arena: bool) -> tuple[list[int], list[int]]:
  """The buffers `lives` placed one by one in `order`. `arena`: at the lowest byte offset clear of every placed buffer whose
  life meets its own; else in the smallest whole buffer large enough, or else the largest one, whose holders' lives all
  miss its own (growing it to this size), or a new one (numbered by the offset its first holder got)."""
  offs, sizes, placed = [0] * len(lives), [n for _, _, n in lives], list[int]()
  for i in order:
    lo, hi, n = lives[i]
    meets = [j for j in placed if not (lives[j][1] < lo or hi < lives[j][0])]
    if arena:
      at = 0
      for o, m in sorted((offs[j], sizes[j]) for j in meets):
        if at + n <= o: break
        at = max(at, o + m)
      offs[i] = at
    else:
      busy = {offs[j] for j in meets}
      free = {offs[j]: sizes[j] for j in placed if offs[j] not in busy}   # (the holders of one buffer all have its size)
      fit = [(m, o) for o, m in free.items() if m >= n]
      if fit or free:
        m, offs[i] = min(fit) if fit else max((m, o) for o, m in free.items())
        for k in placed:   # (a buffer grown: each holder takes all of it)
          if offs[k] == offs[i]: sizes[k] = max(m, n)
        sizes[i] = max(m, n)
      else: offs[i] = i
    placed.append(i)
  return offs, sizes

def memory_report(fn: TinyJit, top: int = 12) -> str:
  """What a captured TinyJit's memory holds, to find what to shrink (after its capture call): the bytes of its inputs, of
  the buffers that stay (weights, gradients, optimizer state, outputs) and of the planned intermediates (_plan_memory's
  views and their arenas); the step where the most intermediates are alive, and those there, largest first, each with the
  steps (index:kernel) that write and read it; then the largest buffers that stay."""
  steps, ins = fn.steps, {id(b) for b in fn.in_bufs}
  def kname(i: int) -> str: return getattr(getattr(steps[i].runner, "p", None), "name", "copy")
  owners: dict[int, tuple[str, Buffer]] = {}
  first: dict[int, int] = {}
  last: dict[int, int] = {}
  views: dict[int, Buffer] = {}
  writers: dict[int, list[int]] = {}
  readers: dict[int, list[int]] = {}
  for i, s in enumerate(steps):
    for b in s.bufs:
      base = b.base if isinstance(b, BufferView) else b
      owners.setdefault(id(base), ("input" if id(b) in ins else "arena" if base is not b else "stays", base))
      if base is not b:
        views[id(b)] = b
        first.setdefault(id(b), i)
        last[id(b)] = i
    for b in _written(s): writers.setdefault(id(b), []).append(i)
    for b in _read(s): readers.setdefault(id(b), []).append(i)
  total = {c: sum(b.nbytes for k, b in owners.values() if k == c) for c in ("input", "stays", "arena")}
  delta = [0] * (len(steps) + 1)   # (bytes coming alive at each step, less those gone: one sweep, not a sum per step)
  for k, b in views.items():
    delta[first[k]] += b.nbytes
    delta[last[k] + 1] -= b.nbytes
  live = list(itertools.accumulate(delta[:len(steps)]))
  peak = max(range(len(steps)), key=live.__getitem__, default=0)
  def row(b: Buffer) -> str:
    w, r = writers.get(id(b), []), readers.get(id(b), [])
    return (f"  {b.nbytes/1e6:9.3f} MB {b.dtype.name:>8} x{b.size:<9} written by {', '.join(f'{j}:{kname(j)}' for j in w[:2]) or '-'}; "
            f"read by {', '.join(f'{j}:{kname(j)}' for j in r[:4]) or '-'}{' ...' if len(r) > 4 else ''}")
  alive = sorted((b for k, b in views.items() if first[k] <= peak <= last[k]), key=lambda b: -b.nbytes)
  stays = sorted((b for k, b in owners.values() if k == "stays"), key=lambda b: -b.nbytes)
  head = f"{len(steps)} steps: inputs {total['input']/1e6:.3f} MB, buffers that stay {total['stays']/1e6:.3f} MB, planned intermediates " \
         f"{total['arena']/1e6:.3f} MB" + (f" ({live[peak]/1e6:.3f} MB of them alive at step {peak}, {kname(peak)}):" if steps else "")
  return "\n".join([head, *[row(b) for b in alive[:top]], f"largest buffers that stay ({len(stays)}):", *[row(b) for b in stays[:top]]])

def _state_read(steps: list, inputs: set[int]) -> weakref.WeakValueDictionary[int, Buffer]:
  """The buffers `steps` read before any of them wrote it, less `inputs` (ids): the tensors a function reads on its own."""
  written: set[int] = set()
  out: weakref.WeakValueDictionary[int, Buffer] = weakref.WeakValueDictionary()
  for step in steps:
    for b in _read(step):
      if id(b) not in written and id(b) not in inputs: out[id(b)] = b
    written.update(id(b) for b in _written(step))
  return out

def _outer_tensors() -> dict[int, weakref.ref[Tensor]]:
  # the tensors live before a call (Tensor.realize computes one that the call's updates would change outside its capture)
  from tinygrad.tensor import live_tensors
  return {id(t): weakref.ref(t) for t in live_tensors() if t.uop.op is not Ops.BUFFER}
def _lazy_readers(written: set[int]) -> list[Tensor]:
  """The live tensors with a graph to compute (not a buffer, nor a view of one: a view shows later writes, as torch's) that
  reads a buffer whose id is in `written`."""
  from tinygrad.tensor import lazy_tensors, _views_buffer, _above_buffers
  def view(u: UOp) -> bool: return all(_views_buffer(s) for s in (u.src if u.op is Ops.MULTI else (u,)))
  return [t for t in lazy_tensors() if not view(t.uop) and any(n.op is Ops.BUFFER and (b := buffer_if_any(n)) is not None and id(b) in written
                                                              for n in t.uop.toposort(gate=_above_buffers))]
def _pending_here() -> list[tuple[Any, Tensor]]:
  """This thread's pending assigns (key, tensor): another thread's are its own."""
  me = threading.get_ident()
  return [(k, t) for k, t in list(pending_assigns.items()) if k[0] == me]
def _pending_into(bufs: set[int]) -> list[Tensor]:
  """This thread's tensors with an assign not run yet into a buffer whose id is in `bufs`."""
  out: list[Tensor] = []
  for k, t in _pending_here() if bufs else []:
    # (one whose assign ran is forgotten: a program that loaded its weights with assign scans none of them each replay)
    if base_buffer(t.uop) is not None: pending_assigns.pop(k, None)
    elif any(n.op is Ops.ASSIGN and (b := base_buffer(n.src[0])) is not None and (x := buffer_if_any(b)) is not None and id(x) in bufs
             for n in t.uop.toposort(gate=lambda u: u.op is not Ops.BUFFER)): out.append(t)
  return out
def _realize_readers(readers: list[Tensor]) -> None:
  """Compute `readers` (_lazy_readers) before a replay overwrites what they read, in as few realizes as their bound Variables
  allow: readers binding one variable to different values (each a step's slice x[i:i+bs]) are computed apart. A reader that
  binds one variable to two values itself can never be computed, by any realize (VariableBindError): left as it is. That is
  the gradient a training loop accumulates into its data tensor over steps of bound slices (hlb_cifar10's X_train.grad)."""
  from tinygrad.engine.schedule import _graph_topo, _graph_binds
  def bound(t: Tensor) -> dict[UOp, int] | None:
    vals: dict[UOp, int] = {}
    for b in _graph_binds(_graph_topo([t.uop])):
      v, x = b.unbind()
      if vals.setdefault(v, x) != x: return None
    return vals
  groups: list[tuple[dict[UOp, int], list[Tensor]]] = []
  for t in readers:
    if (vals := bound(t)) is None: continue
    for gvals, ts in groups:
      if all(gvals.get(v, x) == x for v, x in vals.items()):
        gvals.update(vals)
        ts.append(t)
        break
    else: groups.append((vals, [t]))
  for _, ts in groups: Tensor.realize(*ts)
def _buffers(t: Any) -> list[Buffer]:
  """The Buffers an input tensor is read from: its own, or a multi-device tensor's shards'."""
  return [buffer_of(u) for u in _buffer_uops(t)]

def _map_tensors(x: Any, f: Callable[[Tensor], Any]) -> Any:
  """`x` with each Tensor in it (lists, tuples, named tuples and dicts are walked) replaced by f(tensor)."""
  if isinstance(x, Tensor): return f(x)
  if isinstance(x, (list, tuple)):
    out = [_map_tensors(v, f) for v in x]
    return type(x)(*out) if hasattr(x, "_fields") else type(x)(out)
  if isinstance(x, dict): return {k: _map_tensors(v, f) for k, v in x.items()}
  return x

def _layout(t: Any) -> tuple:
  # a multi-device input's sharding (axis and shard shapes) is part of what the capture was made for
  return (t.uop.arg, tuple(s.shape for s in t.uop.src)) if t.uop.op is Ops.MULTI else ()

@dataclass(frozen=True)
class CapturedJit:
  """A TinyJit's capture: what the captured call returned (`ret`), its kernels in order (`jit_cache`: ExecSteps), and per
  Tensor input the argument it came from (`expected_names`: a position or keyword) and its (shape, variables of the
  call, dtype, device) (`expected_input_info`), the signature a replay is checked against."""
  ret: Any
  jit_cache: list
  expected_names: list[int | str]
  expected_input_info: list[tuple]
  _free: Callable[[], None] | None = field(default=None, repr=False, compare=False)
  @functools.cached_property
  def linear(self) -> UOp:
    """The captured steps as public tinygrad's LINEAR UOp (Tensor.linear_with_vars' form): one CALL per kernel or copy in
    `jit_cache`, in order, each over the kernel's SINK (or a COPY node) and then its buffers as BUFFER nodes, output first,
    with the variables' values of the capture call as its arg. For looking at a capture (how many kernels, which ones);
    `run_linear` of it runs the captured kernels on the captured buffers, as a replay of the capture call would."""
    nodes: dict[int, UOp] = {}
    def node(b: Buffer) -> UOp:
      if (u := nodes.get(id(b))) is None: u = nodes[id(b)] = buffer_node(b)
      return u
    calls = []
    for step in self.jit_cache:
      bufs = [node(b) for b in step.bufs]
      ast = step.runner.p.ast if step.runner is not None else UOp(Ops.COPY, bufs[1].dtype, (bufs[1], bufs[0].src[1]))
      if ast is None: raise RuntimeError(f"the captured kernel {step.runner.p.name} has no AST to list")
      calls.append(UOp(Ops.CALL, src=(ast, *bufs), arg=tuple(step.var_vals.items())))
    return UOp(Ops.LINEAR, src=tuple(calls))
  def free_intermediates(self) -> None:
    """Free the memory of the capture's intermediate buffers (public tinygrad's, between a training and an eval step):
    those its replays write before they read them, that are not inputs and that no live tensor holds (the returned
    outputs, a model's state, keep theirs). The next replay allocates them again."""
    if self._free is not None: self._free()

class TinyJit(Generic[R]):
  """Decorate a function of Tensors: call 1 runs it normally, call 2 records its kernels, later calls replay them with the
  new input buffers. Inputs must keep their shapes, dtypes and devices; the function's Python code does not run on replay.

  A plain-value argument (int, float, str, None, a dtype, a numpy value, lists/tuples/dicts of them) is baked into the
  capture, so one that differs from the captured call raises JitError: pass a Tensor (or a bound Variable) for a value
  that changes. Other objects are not compared (public tinygrad compares none): a replay runs what was captured, whatever
  object is passed, and the Tensors inside such an object are not inputs (the captured buffers are read). `static` names arguments
  (keyword names or positions) that are known not to change what the function computes: they are not checked, e.g.
  `TinyJit(step, static=("log_every", 2))` or `@functools.partial(TinyJit, static=("name",))`.
  Assigns made inside (`x += 1`, `cache[a:b].assign(v)`) are realized at the end of each call, so replays write them too.
  `prune=True` (public tinygrad's, also as `@TinyJit(prune=True)`): kernels whose results do not change from call to call
  (they read no input, no Variable and nothing a replayed kernel writes, and write nothing one writes nor a buffer a live
  tensor holds: a model's weights cast or packed once) ran in the capture call and are not replayed (_prune)."""
  def __new__(cls, fxn: Callable[..., R] | None = None, *args: Any, **kwargs: Any) -> Any:
    # `@TinyJit(prune=True)`: without the function, a decorator that makes the TinyJit
    if fxn is None: return functools.partial(cls, *args, **kwargs)
    return super().__new__(cls)
  def __init__(self, fxn: Callable[..., R], static: tuple[str | int, ...] | list[str | int] = (), prune: bool = False, captured: Any = None):
    if captured is not None:
      raise NotImplementedError("TinyJit(captured=...) replays a capture unpickled from another process, which this tinygrad does not "
                                "do: a pickle runs code as it loads. Call the jitted function twice to capture it in this process")
    self.fxn, self.static, self.prune = fxn, set(static), prune
    # a position also names its parameter (and a name its position), so either spelling of the call is covered
    try: params = [n for n, p in inspect.signature(fxn).parameters.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError): params = []
    self.pos = {n: i for i, n in enumerate(params)}   # each parameter's position: a keyword argument binds there (__call__)
    self.static |= {params[i] for i in self.static if isinstance(i, int) and i < len(params)} | \
                   {params.index(n) for n in self.static if isinstance(n, str) and n in params}
    functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
    self.reset()
  def reset(self) -> None:
    """Forget the capture: the next call runs normally again."""
    self.cnt = 0
    # the last replay's arguments when they were all realized tensors, positional, with no view or bound variable: their
    # UOps and Buffers, weakly (held, they kept the last call's inputs in memory). A call passing tensors with the same UOps
    # has the same inputs, signature and buffers (a UOp fixes shape, dtype, device and sharding, and a BUFFER's Buffer), so
    # the scan of its arguments is skipped; every other check runs
    self.last_args: tuple[tuple[weakref.ref[UOp], ...], list[weakref.ref[Buffer]]] | None = None
    self.steps: list[_realize.ExecStep] = []
    self.in_bufs: list[Buffer] = []
    self.in_uops: list[UOp] = []   # (the captured inputs' BUFFER UOps, as in_bufs)
    # the returned tensors that are inputs, or views of their buffers (by id): the input's position, or None for a view;
    # a replay returns the new input, or the same view of the new input's buffer, in their place
    self.from_inputs: dict[int, int | None] = {}
    # the returned views of a multi-device input (by id; one across its shards the capture computed into copies): the input's
    # position and the view's movement ops (`Tensor._replay`)
    self.view_ops: dict[int, tuple[int, tuple]] = {}
    # the same for a returned view across the shards of a tensor that is no input (the function's state): that tensor
    self.state_views: dict[int, tuple[Tensor, tuple]] = {}
    self.views: list[tuple | None] = []   # per input its `_view_form` at capture, when any input was a view
    self.aliases: tuple[int, ...] = ()    # `_aliases` of the captured input buffers
    self.distinct = True                  # (whether they are distinct buffers)
    self.written: list[bool] = []         # per input: whether the capture writes into its buffer
    self.written_bufs: list[bool] = []    # the same per input buffer (as in_bufs)
    self.touched: set[int] = set()        # (ids of) the buffers the capture uses that are not its inputs: outputs, state
    self.owned: set[int] = set()          # those it writes
    # graph_epoch and the input buffers a replay wrote when it last looked for lazy tensors reading them (_lazy_readers)
    self.seen_epoch, self.seen_written = -1, set[int]()
    self.replay_epoch = 0   # Tensor.write_epoch at the last replay: its kernels overwrote the buffers marked _written_by it
    # the buffers the first call read that were not its inputs nor written by it before (the function's own tensors, by id)
    self.state: weakref.WeakValueDictionary[int, Buffer] = weakref.WeakValueDictionary()
    self.consts: list[tuple[Any, UOp]] = []   # the function's lazy state the capture computes in its kernels (call_consts)
    self.first_writes: list[bool] = []   # per input: whether the first call wrote into it ([]: not seen)
    self.copied: list[bool] = []         # per input: whether the capture read it through a copy (a view not written into)
    # Tensor.training when captured, if the capture read it (Dropout, BatchNorm's batch statistics: other kernels in the
    # other mode); None: it did not, and a replay in either mode runs the same kernels
    self.training: int | None = None
    self.host_reads: list[tuple[str, Callable[[], Any], Any]] = []   # (tinygrad.tensor.host_reads of the capture, less their keys)
    # the tensors whose .grad backward() set in the capture (tinygrad.tensor.capture_grads): the tensor (weakly), whether it
    # was there with .grad None when the capture call started and the function did not clear it (a replay needs it None:
    # eager backward() would add to a gradient), and its .grad when the call ended, which each replay computes and puts back
    self.grads: list[tuple[weakref.ref[Tensor], bool, Tensor | None]] = []
    # the buffers the capture reads or writes that tensors' graphs held before the capture call (not its inputs): every
    # replay checks a live tensor's graph still holds each (one none holds was replaced by a new tensor, `self.h = ...` in the
    # function, or a KV cache made anew by the program for the next prompt, and a replay would go on reading the old one; the
    # graph autograd keeps for a tensor does not count), cheaply (_check_held)
    self.held_before: weakref.WeakValueDictionary[int, Buffer] = weakref.WeakValueDictionary()
    # (the tensors that held the held_before buffers at the last full look, weakly, and their graphs then: while each lives
    # with that graph, every buffer is still held; else the next replay looks at every live tensor again; None: not looked yet)
    self.holders: tuple[list[Any], list[UOp]] | None = None
    # (per held_before buffer the first look found held only inside lazy graphs, no tensor's own, the tensors whose graph
    # read it, weakly: one that lives on was computed since, not replaced (tinygrad.llm's freqs_cis, a table left lazy that
    # reads a realized arange, realized by the other jit's first call), and the replay's kernels compute its value from the
    # buffer still; it is held while one of them lives)
    self.lazy_held: dict[int, list[weakref.ref[Tensor]]] = {}
    self.signature: list[tuple] = []
    self.constants: list[tuple[str, Any]] = []
    self.assumed: list[UOp] = []
    self.names: list[int | str] = []
    self.ret: Any = None
    self.replay: Replay | None = None   # the steps as replayed: runs of kernels through their device's graph runner
    self.replay_vars: list[UOp] = []    # (the Variables a replay takes)
    # (ids of) the returned tensors whose graph binds a Variable, in its shape or only in a view's offset (`cache[sp]`): a
    # replay binds them to its values
    self.bound_rets: set[int] = set()
    # the thread whose calls these are; another thread's calls go to a capture of its own (a replay rewrites the outputs'
    # buffers, which the other thread may still be reading)
    self.owner: int | None = None
    self.others: dict[int, TinyJit] = {}
  def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., R]: return functools.partial(self.__call__, obj)  # as a method
  @property
  def captured(self) -> CapturedJit | None:
    """What the capture holds (public tinygrad's TinyJit.captured), None before the second call has captured."""
    if self.cnt < 2 or not self.steps and self.ret is None: return None
    variables = tuple(e[1] for e in self.signature if e[0] == "var")
    tensors = [e for e in self.signature if e[0] != "var"]
    return CapturedJit(self.ret, list(self.steps), list(self.names), [(shape, variables, dt, dev) for shape, dt, dev, _ in tensors],
                       self._free_intermediates)

  def _free_intermediates(self) -> None:
    held = _held_buffers()
    seen, first_written = {id(b) for b in self.in_bufs}, []
    for step in self.steps:
      seen.update(id(b) for b in _read(step))
      for b in _written(step):
        if id(b) not in seen: first_written.append(b)
        seen.add(id(b))
    freed = [b for b in first_written if id(b) not in held and b.is_allocated()]
    # (the memory plan's views free nothing themselves: the buffer they are placed in goes, with every view of it, all
    # intermediates of this capture that no tensor holds)
    views: list[Buffer] = [b for step in self.steps for b in step.bufs if isinstance(b, BufferView) and b.is_allocated()]
    freed += [v.base for v in {id(v.base): v for v in views if isinstance(v, BufferView)}.values()] + views
    for b in freed: b.deallocate()
    if freed: self.replay = None   # (its graph runners hold the freed handles: built again, allocating, at the next replay)

  def _check_held(self) -> None:
    """At every replay: each buffer of held_before is still held by a tensor, else JitError (state the function or the
    program replaced by a new tensor, which a replay, running no Python, does not see). Cheap while the tensors that held
    them at the last look live on with the same graph, else a walk over every live tensor's graph (`_holders`)."""
    if self.holders is not None:
      try:
        if all(map(operator.is_, map(_UOP, self.holders[0]), self.holders[1])): return   # (C loops: this runs every replay)
      except ReferenceError: pass   # (a holder was freed)
    held, first = dict(self.held_before.items()), self.holders is None
    found, self.holders, keep = _holders(held), None, []
    for k, b in held.items():
      own, ts = found.get(k, (False, []))
      if k in self.lazy_held or first and ts and not own:
        alive = [x for r in self.lazy_held.get(k, []) if (x := r()) is not None]
        ts = list({id(t): t for t in ts + alive}.values())
        self.lazy_held[k] = [weakref.ref(t) for t in ts]
      if not ts:
        raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured reading a tensor ({b.size} x {b.dtype} on "
                       f"{b.device}) that no tensor holds now: the function (or the program) replaced it by a new tensor "
                       "(self.h = ..., a name bound again), which a replay does not see: it would go on with the old one. Update "
                       "such state in place (self.h.assign(...)), pass it as an argument, or call .reset() to capture again")
      keep += ts
    ts = list({id(t): t for t in keep}.values())
    self.holders = [weakref.proxy(t) for t in ts], [t.uop for t in ts]

  def _last_buffers(self, args: tuple) -> list[Buffer] | None:
    """The last replay's input Buffers when `args` are its tensors with the same UOps and the Buffers are still allocated."""
    if (last := self.last_args) is None or len(args) != len(last[0]): return None
    if not all(type(a) is Tensor and a.uop is r() for a, r in zip(args, last[0])): return None
    live = [r() for r in last[1]]
    return cast(list[Buffer], live) if all(b is not None and b.is_allocated() for b in live) else None

  def _inputs(self, args: tuple, kwargs: dict, binds: list[UOp], constants: list[tuple[Any, Any]]) -> tuple:
    """A call's tensor inputs (its arguments' tensors in order), their Buffers (None unless each is a realized buffer), their
    view forms, the call's signature and its variables' values; `binds` and `constants` get the arguments' bound Variables
    and plain values."""
    inputs: list[Tensor] = []
    for i, a in enumerate(args): _scan(a, (None, i), i in self.static, inputs, binds, constants)
    if kwargs:
      # keyword arguments in their parameters' order (others by name, after them), as bound: f(x, b=y), f(b=y, a=x) and
      # f(x, y) are one call. The tensors are matched by their order in `inputs`, so which parameters were given is
      # compared too: a capture of f(x, b=y) replayed f(x, c=y) with y read as b
      order = sorted((self.pos.get(k, len(self.pos)), k) for k in kwargs)
      for _, k in order: _scan(kwargs[k], (None, k), k in self.static, inputs, binds, constants)
      slots = tuple(range(len(args))) + tuple(i if i < len(self.pos) else k for i, k in order)
      if slots != tuple(range(len(slots))):
        names = list(self.pos)
        constants.append(((None, "**kwargs"), _Keywords(names[g] if isinstance(g, int) and g < len(names) else g for g in slots)))
    # a lazy input is realized into a buffer of its own; a view of a realized tensor (which realize() leaves a view) is
    # passed as it is: its kernels read and write the viewed buffer, as without the JIT (`_view_form`)
    if (bufs := _realized_buffers(inputs)) is None and inputs: Tensor.realize(*inputs)
    forms = [_view_form(t, binds) for t in inputs] if bufs is None or self.views else None
    # bound variables are inputs: the arguments' and those in the input tensors' shapes
    signature: list[tuple] = []
    for t in inputs:
      u, shape = t.uop, t.uop.shape
      if all(type(d) is int for d in shape): signature.append((shape, u.dtype, u.device, _layout(t)))
      else:
        binds += sym_vars(shape)
        signature.append((_unbound(shape), u.dtype, u.device, _layout(t)))
    var_vals: dict[UOp, int] = {}
    for b in binds:
      v, val = b.unbind()
      if var_vals.setdefault(v, val) != val: raise JitError(f"variable {v.arg[0]} is bound to two values ({var_vals[v]} and {val}) in one call")
    signature += [("var",) + v.arg for v in var_vals]
    return inputs, bufs, forms, signature, var_vals

  @engine_locked   # one call at a time: a second thread's call waits (a capture must see only its own thread's kernels)
  def __call__(self, *args: Any, **kwargs: Any) -> R:
    if self.owner is None: self.owner = threading.get_ident()
    elif (me := threading.get_ident()) != self.owner:
      if (other := self.others.get(me)) is None: other = self.others[me] = TinyJit(self.fxn, tuple(self.static), self.prune)
      return other(*args, **kwargs)
    binds: list[UOp] = []
    constants: list[tuple[Any, Any]] = []
    if not kwargs and (live := self._last_buffers(args)) is not None:
      inputs, bufs, forms, signature, var_vals, given_bufs = list(args), live, None, self.signature, {}, None
    else:
      inputs, bufs, forms, signature, var_vals = self._inputs(args, kwargs, binds, constants)
      given_bufs = bufs
    if not CAPTURING or not JIT or self.cnt == 0:
      first = self.cnt == 0 and CAPTURING and JIT and _realize.capturing is None and _realize.observing is None
      self.cnt += 1
      if not first: return self._run_and_realize(args, kwargs)
      # (the inputs' buffers as passed: a view across shards that the function writes is remade from its base, lazy again)
      in_bufs = [_buffers(t) for t in inputs]
      _realize.observing, _realize.call_outer, _realize.call_consts = [], _outer_tensors(), []
      try: ret = self._run_and_realize(args, kwargs)
      except BaseException:
        # a first call cut short (a kernel's error, Ctrl-C, out of memory) is not one: the next call is the first again. Counted,
        # the next call captured what this one left to do (its state's initialisation) and every replay ran it again: a lazy
        # `w = Tensor.zeros(4).contiguous()` updated by `w.assign(w + x)` was 2 after every later call
        self.cnt = 0
        raise
      finally:
        seen, self.consts = _realize.observing, _realize.call_consts or []
        _realize.observing, _realize.call_outer, _realize.call_consts = None, None, None
      self.state = _state_read(seen, {id(b) for bs in in_bufs for b in bs})
      wrote = {id(b) for step in seen for b in _written(step)}
      self.first_writes = [any(id(b) in wrote for b in bs) for bs in in_bufs]
      return ret
    if self.cnt == 1:
      if _realize.capturing is not None: raise JitError("TinyJit functions cannot be nested (having TinyJit inside another TinyJit is not supported)")
      if self.state and (own := [k for k, t in enumerate(inputs) if any(id(b) in self.state for b in _buffers(t))]):
        raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} got as input {own[0]} ({self.names_of(args, kwargs)[own[0]]!r}) a "
                       "tensor it also reads without taking it as an argument (its first call did): the capture could not tell the "
                       "two apart, and every replay would read (and write) the new input in both places; pass a copy (.clone()), "
                       "or call .reset() and capture with another tensor")
      # an assign made before this call that has not run (outside the function, or by a call cut short by Ctrl-C) runs now:
      # captured, every replay applied it again (w.assign(w+100) lazy before the capture call: +100 per replay)
      if before := [t for _, t in _pending_here()]: Tensor.realize(*before)
      self.copied, given = [False] * len(inputs), inputs
      # (a view of symbolic shape, whose form is None, too: `tokens[:, sp:sp+n]` kept as a view, the kernels read the capture
      # call's offset into whatever copy a replay passed)
      if forms is not None and any(f != () for f in forms): args, kwargs, inputs, forms = self._read_views(args, kwargs, inputs, forms)
      # (an array as it is now: one changed in place by the next call is another value)
      self.in_uops, self.signature = [u for t in inputs for u in _buffer_uops(t)], signature
      self.constants = [(w, v.copy() if _is_array(v) else v) for w, v in constants]
      self.in_bufs = [buffer_of(u) for u in self.in_uops]
      self.views, self.aliases = (forms if forms is not None and any(forms) else []), _aliases(self.in_bufs)
      self.distinct = self.aliases == tuple(range(len(self.aliases)))
      self.names = self.names_of(args, kwargs)
      _realize.capturing, _ops.assumed, _realize.call_outer, _tensor.host_reads = [], [], _outer_tensors(), []
      # (the state the capture computes in its kernels, as it is now: a write since the first call is captured)
      self.consts = [(ref, t.uop) for ref, _ in self.consts if (t := ref()) is not None]
      _tensor.host_reads_thread[0] = threading.get_ident()
      _tensor.capture_grads = {"start": {id(t): (t, t.grad) for t in _tensor.live_tensors() if t.requires_grad is True}, "set": {},
                               "cleared": set()}
      # (weakly, by object: by id only, a buffer freed in the call and a new one made at its address read as held state, a
      # flaky false JitError in make test's jitted fuzzers. And not a multi-device tensor's: a view across its shards is
      # realized into copies that the capture's own machinery replaces)
      held_before = weakref.WeakValueDictionary(_held_buffers(kept=False, multi=False))
      reads, mode = training_reads[0], TRAINING.value
      # (JITBEAM: the captured kernels are searched, the first call's were not; BEAM is part of a runner's key)
      try:
        capture_made[:] = [threading.get_ident(), {}]
        with Context(BEAM=JITBEAM.value) if JITBEAM.value >= 0 else contextlib.nullcontext():
          self.ret = self._run_and_realize(args, kwargs, capture_made[1])
      finally:
        capture_made[:] = [None, None]
        # (the assumptions once each: every layer of a model asks the same `if start_pos > 0`, and each replay checks them all)
        (self.steps, _realize.capturing), (self.assumed, _ops.assumed) = (_realize.capturing, None), (list(dict.fromkeys(_ops.assumed or [])), None)
        _realize.call_outer, self.host_reads, _tensor.host_reads = None, list({k: (w, g, v) for k, w, g, v in _tensor.host_reads or []}.values()), None
        cg, _tensor.capture_grads = _tensor.capture_grads or {"start": {}, "set": {}, "cleared": set()}, None
      # (a tensor made in the call had no .grad before it: nothing to require of a replay)
      self.grads = [(weakref.ref(x), k in cg["start"] and cg["start"][k][1] is None and k not in cg["cleared"], x.grad)
                    for k, (x, _) in cg["set"].items()]
      self.training = mode if training_reads[0] != reads else None
      if self.prune and (kept := _prune(self.steps, self.in_bufs, set(_held_buffers(kept=False)))) != self.steps:
        if DEBUG >= 1: print(f"TinyJit pruned {len(self.steps)} -> {len(kept)} kernels")
        self.steps = kept
      if not NO_MEMORY_PLANNER: self.steps = _plan_memory(self.steps, self.in_bufs, set(_held_buffers()))
      self.replay_vars = list(var_vals)
      self.replay = Replay(self.steps, self.in_bufs, self.replay_vars)
      for step in self.steps:   # (the shared buffers of the plan now: the memory in use after the capture call is a replay's)
        for buf in step.bufs: buf.allocate()
      self.from_inputs = self._outputs_from_inputs(inputs)
      from tinygrad.engine.schedule import _graph_binds, _graph_topo
      self.bound_rets = {id(t) for t in _tensors_in(self.ret) if id(t) not in self.from_inputs and _graph_binds(_graph_topo([t.uop]))}
      # a returned view of an input that the capture computed into copies (across the shards of a multi-device tensor) is
      # the replays' output buffers from now on, not that input's view: a later write into the capture call's input must
      # not remake it (a replay with another input returned the remade view of the old one)
      # (a view of a multi-device input keeps its movement ops: a replay returns them applied to that call's input)
      self.view_ops, self.state_views = {}, {}
      bases = {id(b) for x in inputs for b in (x, x._view_of) if b is not None}
      for t in _tensors_in(self.ret):
        if t._replay is not None and (g := _ops_from(t, inputs)) is not None: self.view_ops[id(t)] = g
        elif t._replay is not None and (of := t._view_of) is not None and id(of) not in bases and not t._views_a_buffer():
          self.state_views[id(t)] = (of, t._replay)
        if id(t) not in self.from_inputs and t._view_of is not None and not t._views_a_buffer(): t._detach_view()
      wrote = {id(b) for step in self.steps for b in _written(step)}
      # a replay runs no realize that stamps what it overwrites (Tensor.write_epoch): the buffers its kernels write (not the
      # capture call's inputs: a replay writes its own) name this jit, and autograd reads its replay_epoch (gradient._written_at)
      jref, ins = weakref.ref(self), {id(b) for b in self.in_bufs}
      for wb in {id(x): x for step in self.steps for x in _written(step) if id(x) not in ins}.values():
        if jref not in (by := getattr(wb, "_written_by", ())): wb._written_by = by + (jref,)   # type: ignore[attr-defined]
      # a view across the shards of a multi-device tensor is its own copies, and writing into it writes the tensor it views:
      # the replay would write the capture call's tensor
      if (across := [j for j, t in enumerate(inputs) if t.uop.op is Ops.MULTI and (of := t._view_of) is not None and not t._views_a_buffer()
                     and of._is_realized() and any(id(x) in wrote for x in _buffers(of))]):
        raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} writes into input {across[0]} ({self.names[across[0]]!r}), a view "
                       "across the shards of a multi-device tensor, which a replay cannot write through: pass a tensor of its own "
                       "(.contiguous()) and write it back, or pass the tensor it views")
      self.written = [any(id(buffer_of(u)) in wrote for u in _buffer_uops(t)) for t in inputs]
      if (lost := [j for j in range(len(inputs)) if self.written[j] and self.copied[j]]):
        raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} wrote into input {lost[0]} ({self.names[lost[0]]!r}), a view it "
                       "did not write into at its first call, so it was captured reading a copy: the write did not reach the "
                       "tensor it views; call .reset() to capture again (the function's writes must not depend on the call)")
      self.written_bufs = [id(b) in wrote for b in self.in_bufs]
      ins = {id(b) for b in self.in_bufs}
      self.held_before = weakref.WeakValueDictionary({id(b): b for step in self.steps for b in step.bufs if held_before.get(id(b)) is b and id(b) not in ins})
      del held_before
      self.touched = {id(b) for step in self.steps for b in step.bufs} - ins
      self.owned = wrote & self.touched
      if DEBUG >= 1: print(f"TinyJit captured {len(self.steps)} kernels with {len(inputs)} inputs")
      self.cnt += 1
      return self._returned(given, inputs, {}, var_vals)
    if signature != self.signature:
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured with inputs {self._fmt(self.signature)} "
                     f"but called with {self._fmt(signature)}; call .reset() to capture again")
    if (constants or self.constants) and \
       (len(constants) != len(self.constants) or not all(w == cw and _same(v, cv) for (w, v), (cw, cv) in zip(constants, self.constants))):
      name = getattr(self.fxn, '__name__', 'function')
      old, new = {_where(w): v for w, v in self.constants}, {_where(w): v for w, v in constants}
      diff = [f"{w}: captured {old.get(w, '<absent>')!r}, now {new.get(w, '<absent>')!r}" for w in dict.fromkeys(list(old) + list(new))
              if w not in old or w not in new or not _same(old[w], new[w])]
      raise JitError(f"jitted {name} was captured with different non-Tensor arguments ({'; '.join(diff)}): the capture replays the "
                     "old value. Pass a Tensor (or a bound Variable) for a value that changes, mark the argument static "
                     f"(TinyJit({name}, static=(...))) if it does not change the result, or call .reset() to capture again")
    if self.training is not None and TRAINING.value != self.training:
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured with Tensor.training={bool(self.training)}, now it is "
                     f"{bool(TRAINING.value)}: its dropout and batchnorm would replay the other mode; use a jitted function per mode, "
                     "or call .reset() to capture again")
    if self.consts and (stale := [u for ref, u in self.consts if (t := ref()) is not None and t.uop is not u]):
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} reads a tensor of constants (shape {stale[0].shape}) that it computes "
                     "on several devices, so its capture computes it inside the kernels, and it was written since: the replay would "
                     "read the old value. Call .reset() to capture again, or give it those devices (.shard(devices)) before the first call")
    if self.held_before: self._check_held()
    if self.grads and (held := [x for r, none, _ in self.grads if none and (x := r()) is not None and x.grad is not None]):
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured with .grad None on the tensors its backward() sets, "
                     f"now a tensor {held[0].shape} {held[0].dtype} holds a gradient, which backward() would add to: a replay cannot. "
                     "Clear the gradients before each call (opt.zero_grad()) or in the function, or call .reset() to capture again")
    if self.host_reads and (changed := [(w, v, now) for w, g, v in self.host_reads if not _same_read(now := g(), v)]):
      w, v, now = changed[0]
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured reading {w} = {_fmt_read(v)}, now it is "
                     f"{_fmt_read(now)}: the capture replays the old value. " + ("Keep it one tensor and change its value in place "
                     "(opt.lr.assign(Tensor([0.01])), opt.lr *= 0.5 on the tensor), or call" if w.endswith(".lr") else "Call") + " .reset() to capture again")
    # a shape accepted at capture for the bound values only (x[:v] of a buffer shorter than v's max) must hold for these
    if self.assumed and (bad := [d for d in self.assumed if sym_infer(d, var_vals) < 0]):
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured with shapes that hold for the values it was "
                     f"captured with, not for {({v.arg[0]: x for v, x in var_vals.items()})}: {bad[0].render()} >= 0 fails; "
                     "keep the values in bounds, or narrow the Variables' ranges so every value is")
    # Ctrl-C is held until the replay ends: a replay is applied whole (its in-place updates are not re-run on the next call)
    if self.replay is None: self.replay = Replay(self.steps, self.in_bufs, self.replay_vars)
    copies = self._view_copies(inputs, forms) if forms is not None else {}
    in_uops = [u for j, t in enumerate(inputs) for u in _buffer_uops(copies.get(j, t))] if bufs is None or self.from_inputs else []
    if bufs is None: bufs = [buffer_of(u) for u in in_uops]
    ids = list(map(id, bufs))
    if (len(set(ids)) != len(ids) or not self.distinct) and (aliases := _aliases(bufs)) != self.aliases and not self._may_alias(aliases):
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured with {self._fmt_aliases(self.aliases)} "
                     f"but called with {self._fmt_aliases(_aliases(bufs))}: the captured kernels "
                     "cannot replay that (one buffer read as one, or written while read as another); pass the inputs as at capture "
                     "(.clone() one for a buffer of its own), or call .reset() to capture again")
    if not self.touched.isdisjoint(ids):
      # an input that is a buffer the captured kernels write (an output of an earlier call, as `h = f(h)`, or a state buffer)
      # is read from a copy: a kernel writing a buffer it reads would read its own writes
      copies = self._owned_copies(inputs, copies)
      in_uops = [u for j, t in enumerate(inputs) for u in _buffer_uops(copies.get(j, t))]
      bufs = [buffer_of(u) for u in in_uops]
    # a lazy tensor reading what this replay overwrites (an input or state it updates, a buffer it returns) keeps the value it
    # had when built, as without the JIT: it is computed first (looked for only when some graph changed since the last look)
    # (the capture's own writes, `owned`, are the same every replay: only the inputs it writes are compared)
    wrote_in = {id(b) for b, w in zip(bufs, self.written_bufs) if w} if True in self.written_bufs else set()
    if graph_epoch[0] != self.seen_epoch or not wrote_in <= self.seen_written:
      if readers := _lazy_readers(self.owned | wrote_in): _realize_readers(readers)
      # and an update made outside it into a buffer it only reads (buf.assign(batch) before each call) runs first: the replay
      # read the old value, and the next call's update replaced this one unrun (outputs 1, 11, 11, 11 for 1, 11, 21, 31)
      if pending := _pending_into(self.touched - self.owned): Tensor.realize(*pending)
      self.seen_epoch, self.seen_written = graph_epoch[0], wrote_in
    if _prof.PROFILER is None:
      with _realize.DeferredInterrupt(): self.replay(bufs, var_vals)
    else:
      with _prof.timed(f"jit replay {getattr(self.fxn, '__name__', 'function')}", "jit", steps=len(self.steps)), _realize.DeferredInterrupt():
        self.replay(bufs, var_vals)
    write_epoch[0] += 1
    self.replay_epoch = write_epoch[0]
    if given_bufs is not None and forms is None and not kwargs and not binds and not constants and len(inputs) == len(args):
      self.last_args = (tuple(weakref.ref(t.uop) for t in inputs), [weakref.ref(b) for b in given_bufs])
    for wb in bufs if wrote_in else ():
      if id(wb) in wrote_in: wb._written_at = write_epoch[0]   # type: ignore[attr-defined]
    if var_vals:
      # a returned tensor of symbolic shape has this call's values in its shape (its buffer holds this call's data), a
      # returned view of state (`cache[sp]`) this call's offset
      from tinygrad.engine.schedule import rebind_graph
      for t in _tensors_in(self.ret):
        if id(t) in self.bound_rets: t._set_uop(rebind_graph(t.uop, var_vals))
    # the gradients backward() set in the capture: this replay computed them into the same tensors, as the call would set them
    for ref, _, grad in self.grads:
      if (x := ref()) is not None: x.grad = grad
    self.cnt += 1
    return self._returned(inputs, [copies.get(j, t) for j, t in enumerate(inputs)] if copies else inputs, dict(zip(self.in_uops, in_uops)), var_vals)

  def _returned(self, inputs: list[Tensor], passed: list[Tensor], swap: dict[UOp, UOp], var_vals: dict[UOp, int]) -> Any:
    """What this call returns: the captured outputs, where a returned input (or a view of one) is this call's `inputs`' (the
    captured one is the capture call's input, which it still shows), a view of it as the function returned it: writing into
    it writes that input, and it shows the input's later writes (`v = f(x); v *= 2`), also where the kernels read the
    input through a copy (`passed`, whose buffers `swap` names for the captured ones)."""
    if not self.from_inputs and not self.view_ops and not self.state_views: return self.ret
    from tinygrad.engine.schedule import rebind_graph
    from tinygrad.tensor import _rebase_view
    # (an input whose buffers the replay rewrites: an earlier output passed back, read through a copy)
    def rewritten(x: Tensor) -> bool: return any(id(buffer_of(b)) in self.touched for b in _buffer_uops(x))
    def mine(t: Tensor) -> Tensor:
      if (g := self.view_ops.get(id(t))) is not None and not var_vals and not rewritten(inputs[g[0]]):
        return functools.reduce(lambda v, fn: v._mv(fn), g[1], inputs[g[0]])   # a multi-device view: its movement ops on this input
      if (sv := self.state_views.get(id(t))) is not None and not var_vals: return functools.reduce(lambda v, fn: v._mv(fn), sv[1], sv[0])
      if (j := self.from_inputs.get(id(t), -1)) == -1: return t
      if j is not None: return inputs[j]
      u = t.uop.substitute(swap) if swap else t.uop
      u = rebind_graph(u, var_vals) if var_vals else u
      reads = set(u.toposort(gate=lambda x: x.op is not Ops.BUFFER))
      k = next((k for k, x in enumerate(passed) if not reads.isdisjoint(_buffer_uops(x))), None)
      # (a multi-device view of a view: its shards need not read the viewed tensor's buffers)
      if k is None or u.op is Ops.MULTI and inputs[k]._view_of is not None: return Tensor(u)
      src = inputs[k]
      if passed[k] is not src:
        # (a view of the copy, the values this call read, where the replay rewrites the input)
        if not rewritten(src) and (w := _rebase_view(u, passed[k].uop, src.uop)) is not None: u = w
        else: src = passed[k]
      return src._view_at(u)
    return _map_tensors(self.ret, mine)

  def _read_views(self, args: tuple, kwargs: dict, inputs: list[Tensor], forms: list) -> tuple[tuple, dict, list[Tensor], list]:
    """At capture, the view inputs the first call did not write into (or that cannot be replayed as a view: of a symbolic
    shape, showing padding) are passed to the function as copies of their own, so that a replay may take any view of that
    shape (read through a copy); a view it wrote into is passed as it is (a replay must then get a view of the same form)."""
    copies: dict[int, Tensor] = {}
    for j, t in enumerate(inputs):
      if forms[j] == () or forms[j] is not None and (not self.first_writes or self.first_writes[j]): continue
      if forms[j] is None and self.first_writes and self.first_writes[j]:
        raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} writes into input {j}, a view of a symbolic shape (or showing "
                       "padding) that a capture cannot replay as a view of another tensor: pass a tensor of its own (.contiguous())")
      if id(t) not in copies: copies[id(t)] = t.contiguous()
      self.copied[j] = True
    if not copies: return args, kwargs, inputs, forms
    Tensor.realize(*copies.values())
    def mine(t: Tensor) -> Tensor: return copies.get(id(t), t)
    return _map_tensors(args, mine), _map_tensors(kwargs, mine), [mine(t) for t in inputs], [() if c else f for c, f in zip(self.copied, forms)]

  def _view_copies(self, inputs: list[Tensor], forms: list[tuple | None]) -> dict[int, Tensor]:
    """The inputs that are views of another form than at capture, each copied into a buffer of its own (the captured
    kernels read them as whole buffers); an error where that cannot replay the capture."""
    name, copies, made = getattr(self.fxn, '__name__', 'function'), {}, {}
    for k, (t, form) in enumerate(zip(inputs, forms)):
      want = self.views[k] if self.views else ()
      if form == want: continue
      if want != ():
        raise JitError(f"jitted {name} was captured with input {k} ({self.names[k]!r}) a view of a buffer, and its kernels read that "
                       f"buffer; now it is {'another view' if form else 'a tensor of its own'}: pass the same view of a tensor of the same "
                       "size, or call .reset() to capture again")
      if self.written[k]:
        raise JitError(f"jitted {name} writes into input {k} ({self.names[k]!r}), captured as a tensor of its own; now it is a view of "
                       "another tensor, which the replay cannot write through: pass a tensor of its own (.contiguous()) as at capture, "
                       "or call .reset() to capture again")
      # one copy per tensor: a view passed twice is one buffer, as the capture saw it (_read_views)
      if id(t) not in made: made[id(t)] = t.contiguous()
      copies[k] = made[id(t)]
    if made: Tensor.realize(*made.values())
    return copies

  def _may_alias(self, aliases: tuple[int, ...]) -> bool:
    # input buffers captured as one must still be one; ones captured apart may be one now where the capture reads them only
    cap, w = self.aliases, self.written_bufs
    return all(aliases[i] == aliases[cap[i]] for i in range(len(cap))) and \
           all(not w[i] and not w[aliases[i]] for i in range(len(cap)) if aliases[i] != i and cap[i] != cap[aliases[i]])

  def _owned_copies(self, inputs: list[Tensor], copies: dict[int, Tensor]) -> dict[int, Tensor]:
    """`copies` and a copy of each input that is a buffer the capture writes; an error where the capture writes the
    input while it uses its buffer otherwise too, or reads it as a view (a copy would take neither)."""
    made: dict[int, Tensor] = {}
    for k, t in enumerate(inputs):
      if k in copies or not (mine := [id(b) for b in _buffers(t) if id(b) in self.touched]): continue
      if not self.written[k] and not any(b in self.owned for b in mine): continue   # (read here and there: nothing is written)
      if self.written[k] or self.views and self.views[k]:
        how = "writes into" if self.written[k] else "reads a view of"
        raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} got as input {k} ({self.names[k]!r}) a buffer its captured "
                       f"kernels use otherwise (an earlier call's output, or a tensor it reads or updates), and it {how} that input: "
                       "pass a copy (.clone()), or call .reset() to capture again")
      if id(t) not in made: made[id(t)] = t.clone().realize()
      copies[k] = made[id(t)]
    return copies

  @staticmethod
  def _fmt_aliases(aliases: tuple[int, ...]) -> str:
    same = [f"{aliases[i]} and {i}" for i in range(len(aliases)) if aliases[i] != i]
    return "input buffers " + ", ".join(same) + " the same buffer" if same else "every input buffer distinct"

  def _outputs_from_inputs(self, inputs: list[Tensor]) -> dict[int, int | None]:
    ins, out = set(self.in_uops), {}
    for t in _tensors_in(self.ret):
      k = next((i for i, x in enumerate(inputs) if x is t), None)
      if k is not None or any(u in ins for u in t.uop.toposort(gate=lambda x: x.op is not Ops.BUFFER)): out[id(t)] = k
    return out

  def _run_and_realize(self, args: tuple, kwargs: dict, made: dict[int, weakref.ref[Tensor]] | None = None) -> Any:
    ret = self.fxn(*args, **kwargs)
    # the outputs, and every assign the call made (an in-place update of state it does not return is still part of the step)
    mine = _pending_here()
    outs = _tensors_in(ret) + [t for _, t in mine]
    # a capture (`made`: the tensors made on this thread in the call; in the tensors live since it started, another thread's
    # lazy ones were computed here and each replay wrote them again, also after their own thread updated what they read):
    # the tensors the call made that live on (kept by the function,
    # `self.logits = ...`, or by backward() as .grad), lazy: computed here, so each replay computes them again, where they
    # were left graphs of the capture call's values (a replay runs no Python to build them again)
    # (not the .grad backward() gives a tensor that did not ask for one, requires_grad None: lazy by design, as without the
    # JIT, where computing it would cost a replay an input's gradient; nor one an update marked gone, which cannot run)
    if made is not None:
      from tinygrad.gradient import _gone
      live = _tensor.live_tensors()
      unasked = {id(t.grad) for t in live if t.requires_grad is None and t.grad is not None}
      left = [t for t in live if (r := made.get(id(t))) is not None and r() is t and all_int(t.shape) and id(t) not in unasked
              and not t._is_realized() and t.uop.op is not Ops.CONST and not _gone(t)]
      if DEBUG >= 2 and left: print(f"TinyJit capture computes {len(left)} tensors the call left lazy: {[t.shape for t in left][:8]}")
      outs += left
    if outs: Tensor.realize(*outs)
    # (forgotten once they ran: an assign of a call cut short (Ctrl-C) stays pending, and runs before the next capture)
    for k, _ in mine: pending_assigns.pop(k, None)
    return ret

  @staticmethod
  def names_of(args: tuple, kwargs: dict) -> list[int | str]:
    # per input tensor the argument it is in: a position or a keyword
    return [i for i, a in enumerate(args) for _ in _tensors_in(a)] + [k for k in sorted(kwargs) for _ in _tensors_in(kwargs[k])]

  @staticmethod
  def _fmt(sig: list[tuple]) -> str:
    def one(e: tuple) -> str:
      if e[0] == "var": return f"Variable {e[1]} in [{e[2]}, {e[3]}]"
      shape = "(" + ", ".join(x.render() if isinstance(x, UOp) else str(x) for x in e[0]) + ("," if len(e[0]) == 1 else "") + ")"
      # (a multi-device input's layout: inputs sharded on two axes differ in nothing else shown)
      lay = "" if len(e) < 4 or not e[3] else " replicated" if e[3][0] is None else f" sharded on axis {e[3][0]} as {list(e[3][1])}"
      return f"{shape} {e[1]} {e[2]}{lay}"
    return "[" + ", ".join(one(e) for e in sig) + "]"
