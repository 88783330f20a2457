"""Tensor: the lazy, user-facing array. Every op builds a tensor-level UOp graph (docs/ir.md); nothing runs until
`realize()`, `numpy()`, `tolist()` or `item()`. The API follows public tinygrad's Tensor (names, arguments, semantics)."""
from __future__ import annotations
import math, sys, time, weakref, numbers, functools, types, threading, itertools
from typing import Any, Callable, Iterator, Sequence
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, substitute_all, buffers_reached, sym_infer, smax, ssimplify, sym_vars, sint, sint_eq, all_bound, BroadcastError, shape_str, vals_str
from tinygrad.dtype import DType, dtypes, ConstType, to_dtype, least_upper_dtype, least_upper_float, truncate_int, NO_NUMPY, uint_of_size
from tinygrad.helpers import TRAINING, CHECK_LAZY_INDEX, ContextVar, prod, argfix, ceildiv, all_int, engine_locked, leaf_lock, GlobalCounters as GC
from tinygrad.engine.buffers import new_buffer, buffer_of, has_buffer, base_buffer, reshape_base, check_storable
from tinygrad.mixin.disk import is_disk
from tinygrad.mixin.common import _canon_device, _broadcast_shape, _flatten_py, _check_int, _pack, _check_shape, _round_to, _is_scalar, _is_np_scalar, _whole_int
from tinygrad.mixin.common import AxisError, ArgumentError, AssertedArgumentError, EmptyReductionError, IntDivisionByZeroError, OpDTypeError  # noqa: F401 (public, importable from here)
from tinygrad.mixin.common import DeviceMismatchError
from tinygrad import multi as _multi  # noqa: F401 (registers the multi-device lowering before a Tensor can build a MULTI)
from tinygrad.mixin import random, elementwise, reduce, movement, indexing, sorting, nn, loss, linalg, sharding, hashing
# names programs import from this module, as they do from public tinygrad's tinygrad.tensor
from typing import cast  # noqa: F401
from tinygrad.uop.ops import Variable  # noqa: F401
from tinygrad.uop import ops as _uop_ops
from tinygrad.dtype import _to_np_dtype, _from_np_dtype  # noqa: F401
from tinygrad.helpers import getenv, fetch  # noqa: F401
def is_numpy_ndarray(x: Any) -> bool:
  """Whether `x` is a numpy array (checked without importing numpy)."""
  return type(x).__module__ == "numpy" and type(x).__name__ == "ndarray"

# how many times Tensor.training was read (dropout, BatchNorm, user code): TinyJit tells from it whether a capture depends on
# the mode (a replay in the other mode is then an error); the library's own lookups that do not change a graph read TRAINING
training_reads = [0]
# set by a TinyJit capture to a list, else None: host values a captured kernel baked in that the program may change between
# calls (an optimizer's lr set to a float or to another tensor), each as ((id of the object, attribute), what, a getter, the
# value read); a replay whose getter gives another value raises JitError instead of replaying the old one
host_reads: list[tuple[tuple[int, str], str, Callable[[], Any], Any]] | None = None
host_reads_thread: list[int | None] = [None]   # (the capturing thread: another thread's reads are not the capture's)
# set by a TinyJit capture, else None: what a replay, which runs no Python, must do for the `.grad` attributes backward() sets.
# "start": the .grad of each tensor with requires_grad True when the call started (by id: the tensor and its grad);
# "set": the tensors whose .grad backward() made in this call (by id: the tensor and that grad); "cleared": ids of the
# tensors Optimizer.zero_grad cleared in it. backward() adding to a gradient from before the call raises JitError (a
# replay would add to that old value again: accumulation across calls cannot replay)
capture_grads: dict[str, Any] | None = None
def capturing_grads() -> dict[str, Any] | None:
  """`capture_grads` when a TinyJit capture runs on this thread, else None."""
  return capture_grads if capture_grads is not None and host_reads_thread[0] == threading.get_ident() else None
def note_host_read(owner: Any, attr: str) -> None:
  """Record, while a TinyJit capture runs on this thread, that its kernels bake in `owner.attr`'s value (see `host_reads`).
  Each object's attribute is its own entry: two optimizers or layers of one class are checked apart."""
  if host_reads is not None and host_reads_thread[0] == threading.get_ident():
    host_reads.append(((id(owner), attr), f"{type(owner).__name__}.{attr}", functools.partial(getattr, owner, attr, None), getattr(owner, attr)))

class _TensorType(type):
  # Tensor.training is the TRAINING flag, so `Context(TRAINING=1)`, `Tensor.train()` and `Tensor.training = True` are one switch
  @property
  def training(cls) -> bool:
    training_reads[0] += 1
    return bool(TRAINING.value)
  @training.setter
  def training(cls, v: bool) -> None: TRAINING.value = int(v)

class _DTypeCasts(metaclass=_TensorType):
  """The cast shorthands; in a base class so that, inside Tensor's body, `int`/`float`/`bool` still name the builtins."""
  __slots__ = ()
  def cast(self, dtype: DType | str) -> Tensor: raise NotImplementedError
  def float(self) -> Tensor:
    """Cast to float32."""
    return self.cast(dtypes.float32)
  def half(self) -> Tensor:
    """Cast to float16."""
    return self.cast(dtypes.float16)
  def double(self) -> Tensor:
    """Cast to float64."""
    return self.cast(dtypes.float64)
  def bfloat16(self) -> Tensor:
    """Cast to bfloat16."""
    return self.cast(dtypes.bfloat16)
  def int(self) -> Tensor:
    """Cast to int32."""
    return self.cast(dtypes.int32)
  def long(self) -> Tensor:
    """Cast to int64."""
    return self.cast(dtypes.int64)
  def short(self) -> Tensor:
    """Cast to int16."""
    return self.cast(dtypes.int16)
  def bool(self) -> Tensor:
    """Cast to bool (nonzero -> True)."""
    return self.cast(dtypes.bool)

def _np_f32_odd(a: Any) -> Any:
  # float64 array -> float32 rounded to odd (dtype._f32_odd_bits' rule, element-wise); past float32's range FLT_MAX
  import numpy as np
  with np.errstate(over="ignore"): t = a.astype(np.float32)
  t = np.where(np.isinf(t) & np.isfinite(a), np.copysign(np.float32(np.finfo(np.float32).max), a).astype(np.float32), t)
  u, back = t.view(np.uint32), t.astype(np.float64)
  u = np.where(np.abs(back) > np.abs(a), u - np.uint32(1), u)   # (rounded away from 0: the float below it in magnitude)
  return np.where((back < a) | (back > a), u | np.uint32(1), u).astype(np.uint32).view(np.float32)

def _np_float_to_int(a: Any, dt: DType) -> Any:
  # float array -> int dtype as every device casts (docs/guide.md, Numerics): truncated toward 0, saturated, NaN -> 0 (numpy's
  # astype leaves these to C: INT_MIN on x86, and -2.5 -> uint8 wrapped to 254)
  import numpy as np
  from tinygrad.dtype import to_numpy
  npdt = to_numpy(dt)
  info, t = np.iinfo(npdt), np.trunc(a.astype(np.float64))   # (float16/32 values are exact in float64)
  over, under = t >= float(info.max), t <= float(info.min)   # (float(max) rounds up to 2**63 for int64: what is left fits)
  r = np.where(over | under | np.isnan(t), 0, t).astype(npdt)
  return np.where(over, npdt.type(info.max), np.where(under, npdt.type(info.min), r))

@functools.cache
def _memoryview_takes(fmt: str) -> bool:
  # memoryview.cast accepts only some struct formats: 'e' (half) raised ValueError on Python 3.11 from data()
  try: memoryview(bytes(8)).cast(fmt)  # type: ignore[call-overload]
  except ValueError: return False
  return True

# numpy() reads with the dtype's numpy dtype: looked up once per dtype
@functools.cache
def _fp8_table(dt: DType) -> Any:
  """The float32 value of each of the 256 bytes of fp8 dtype `dt` (numpy has no fp8: numpy() reads through it)."""
  import numpy as np
  from tinygrad.dtype import fp8_to_float
  return np.array([fp8_to_float(b, dt) for b in range(256)], dtype=np.float32)
@functools.cache
def _numpy_dtype(dt: DType) -> Any:
  from tinygrad.dtype import to_numpy
  return to_numpy(dt)

# every live Tensor (weakly): backward() finds the tensors with requires_grad here
# (weak references as dict keys, as public tinygrad's: a walk costs a third of a WeakSet's, whose iterator is Python code)
all_tensors: dict[weakref.ref[Tensor], None] = {}
# those of them that may hold a graph, not only a buffer (lazy_tensors): a superset, kept so an update's realize walks the few
# lazy tensors, not a model's thousands of weights (three walks over 5000 live tensors were 2 ms of an in-place update).
# Every tensor enters when made and again whenever its graph is rebound (`_relazy`); a walk drops the plain buffers
maybe_lazy: dict[weakref.ref[Tensor], None] = {}
# the tensors backward() gave a gradient (_readers_of leaves the implicit ones, of requires_grad=None tensors, lazy)
grad_holders: dict[weakref.ref[Tensor], None] = {}
_registry_lock = leaf_lock()   # every new Tensor adds itself while another thread may be walking the set
def _unregister(r: weakref.ref[Tensor], _regs: tuple[dict, ...] = (all_tensors, maybe_lazy, grad_holders)) -> None:
  # (the registries bound here: at interpreter exit the module's globals are None while the last tensors die)
  for reg in _regs: reg.pop(r, None)
def _leaf(data: Any) -> type:
  """The type of a nested list's first element that is not a list (bytes and bytearray are both bytes)."""
  while isinstance(data, (list, tuple)) and data: data = data[0]
  return bytes if isinstance(data, (bytes, bytearray)) else type(data)
def live_tensors() -> list[Tensor]:
  """Every live, fully built Tensor (a snapshot: safe while other threads make tensors)."""
  with _registry_lock: refs = list(all_tensors)
  return [t for r in refs if (t := r()) is not None and hasattr(t, "uop")]   # one still in its __init__ has no graph yet
def _realized(t: Tensor) -> bool:
  # a realized tensor of its own: its buffer, or a reshape of it (an n-d tensor's form), and no view of another tensor.
  # (not base_buffer: a symbolic-shaped tensor's prefix SHRINK of its buffer stays in maybe_lazy, as it always has)
  return reshape_base(t.uop).op is Ops.BUFFER and t._view_of is None
def lazy_tensors() -> list[Tensor]:
  """Every live, fully built Tensor but the realized ones of their own (`_realized`: views of buffers are included): what
  the walks of a realize over the live graphs need, from an index (`maybe_lazy`), in a time of the lazy tensors' number,
  not of every live one (a model's weights)."""
  with _registry_lock: refs = list(maybe_lazy)
  out, drop = [], []
  for r in refs:
    if (t := r()) is None or not hasattr(t, "uop"): continue
    if _realized(t): drop.append((r, t))
    else: out.append(t)
  if drop:
    with _registry_lock:   # (checked again under the lock: a rebind adds its tensor back after it set the graph)
      for r, t in drop:
        if _realized(t): maybe_lazy.pop(r, None)
  if CHECK_LAZY_INDEX: _check_lazy_index()
  return out
def _check_index(index: dict[weakref.ref[Tensor], None], belongs: Callable[[Tensor], bool], name: str) -> None:
  # every live, fully built tensor that `belongs` in `index` must be in it (CHECK_LAZY_INDEX)
  # (another thread may be between a rebind and its index update: a miss is looked at again after it had time to finish)
  for again in (True, False):
    # (snapshots taken in C: a Python loop over the dicts let another thread's dying tensor change them mid-walk)
    with _registry_lock: every, held = list(all_tensors), list(index)
    indexed = {id(r) for r in held}   # (the same weakref object is the key of every registry)
    if not (missed := [t for r in every if id(r) not in indexed and (t := r()) is not None and hasattr(t, "uop") and belongs(t)]): return
    if again: time.sleep(0.02)
  raise RuntimeError(f"internal: {name} missed {len(missed)} live tensor(s), e.g. {missed[0].uop.op} {missed[0].shape} {missed[0].dtype}")
def _check_lazy_index() -> None: _check_index(maybe_lazy, lambda t: not _realized(t), "lazy_tensors' index (maybe_lazy)")
def _check_grad_index() -> None:
  # every live tensor with a gradient and requires_grad None must be in grad_holders: one missed has its implicit gradient
  # computed by the next update's realize as a reader (silently: a training step computing every intermediate's gradient);
  # its .grad was set without _note_grad
  _check_index(grad_holders, lambda t: t.grad is not None and t._requires_grad is None, "the grad_holders index")
def _relazy(t: Tensor) -> None:
  # (after the graph is set: a walk that saw the old buffer checks again under the lock before it drops the tensor)
  with _registry_lock: maybe_lazy[t._ref] = None
def _note_grad(t: Tensor) -> None:
  with _registry_lock: grad_holders[t._ref] = None
ARANGE_FOLD_MAX = 1 << 30   # aranges up to this size are one count the simplifier folds (Tensor._arange_index); past it, two combined
# tensors holding an assign that has not run yet: TinyJit realizes them at the end of a call so the write is captured
# (keyed by id: a WeakSet would compare two tensors with ==, which is elementwise)
# (keyed by (thread, id): a TinyJit captures the assigns of its own thread, never another thread's)
pending_assigns: weakref.WeakValueDictionary[tuple[int, int], Tensor] = weakref.WeakValueDictionary()
# a TinyJit capture's thread, and the tensors made on that thread during the call (by id, weakly): the lazy ones that live
# on are the call's to compute (engine/jit.py); other threads make tensors meanwhile, which are theirs, never the capture's
capture_made: list[Any] = [None, None]   # [thread ident, dict id -> weakref] while a capture runs
# bumped whenever a tensor may start to read other buffers (a tensor made from a graph, a graph rebound, a realize): a TinyJit
# replay looks for the lazy tensors that read what it overwrites only when this moved since it last looked (engine/jit.py)
graph_epoch = [0]
# counts the realizes that ran assigns: each stamps its targets' BUFFER UOps (`_written_at`) and each kept graph
# (Tensor._graph) its own time, so backward knows a kept graph read a buffer an update overwrote since (gradient._Realized)
write_epoch = [0]
# the tensors with requires_grad=True, by id (weakly): a realized tensor's graph with one below outlives the tensor while
# another graph reads its buffer (gradient.KEPT_CHAIN, Tensor.__del__)
grad_leaves: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
def _stamp_writes(assigns: Any) -> None:
  write_epoch[0] += 1
  written = set()
  for n in assigns:
    n.__dict__["_ran_at"] = write_epoch[0]   # (a kept graph that holds it reads its target's value from then: gradient._Realized._stale)
    if (b := base_buffer(n.src[0])) is not None:
      b.__dict__["_written_at"] = write_epoch[0]
      written.add(b)
  # (an overwritten buffer no longer holds what its kept graph computed: the gradient stops there, as at a live tensor's)
  if (gm := sys.modules.get("tinygrad.gradient")) is not None and len(chain := gm.KEPT_CHAIN):
    for r in [r for r in list(chain) if base_buffer(r) in written]: chain.pop(r, None)
_clone_ids = itertools.count()   # Tensor.clone's node numbers

def _movement_chain(top: UOp, bottom: UOp) -> list[UOp] | None:
  """The movement ops (and detach()/bitcast() views) from `top` down to `bottom` (top first), or None when `top` is not a
  view of `bottom`."""
  chain: list[UOp] = []
  while top is not bottom:
    if top.op not in GroupOp.Movement and top.op not in (Ops.DETACH, Ops.BITCAST): return None
    chain.append(top)
    top = top.src[0]
  return chain

_BOOL_BYTES = bytes([0] + [1] * 255)   # bytes.translate table: each nonzero byte to 1
def _host_view(buf: Any, snapshot: bool) -> memoryview:
  mv = buf.as_buffer()
  return memoryview(bytearray(mv)) if snapshot and hasattr(buf.allocator, "_as_buffer") else mv   # (else as_buffer copied)

def _is_const(u: UOp) -> bool:
  while u.op in GroupOp.Movement or u.op is Ops.CAST: u = u.src[0]
  return u.op is Ops.CONST
_NOT_COMPUTED = frozenset({Ops.BUFFER, Ops.MULTI, Ops.COPY, Ops.ASSIGN})
def _computed_anywhere(u: UOp) -> bool:
  # a graph of constants only (Tensor.arange, Tensor.full, a constant): it reads no data, so it is computed on whatever
  # device(s) the other operand is on, as public tinygrad's elementwise ops do (llama3's Int8Embedding compares its arange
  # with sharded token ids); a tensor with data stays an error (data is not moved silently)
  return _is_const(u) or not any(n.op in _NOT_COMPUTED for n in u.toposort(gate=_above_buffers))
def _on_device(u: UOp, device: Any) -> UOp:
  return u.substitute({n: UOp(Ops.DEVICE, arg=device) for n in u.toposort() if n.op is Ops.DEVICE})

def _unbound_in(arg: Any) -> bool:
  # a movement op's argument holds a Variable that is not bound (`x[:v]` of Variable("v", 1, 4)): its graph cannot run yet
  if type(arg) is UOp: return not all_bound(arg)
  return type(arg) is tuple and any(type(a) is not int and _unbound_in(a) for a in arg)

_BUFFER, _MOVEMENT = Ops.BUFFER, GroupOp.Movement
def _above_buffers(x: UOp) -> bool: return x.op is not _BUFFER   # a tensor graph's toposort gate (a global: no Ops.X per node)
def _views_buffer(u: UOp) -> bool:
  # a buffer under movement ops only: a graph that reads no other node
  while u.op in _MOVEMENT: u = u.src[0]
  return u.op is _BUFFER

def _views_buffer_detached(u: UOp) -> bool:
  # _views_buffer through DETACHs too (a view of x.detach() views what x views)
  while u.op in _MOVEMENT or u.op is Ops.DETACH: u = u.src[0]
  return u.op is _BUFFER

# (shape, value's type, value, its sign, dtype, device) -> the node of a constant tensor (x * 2, x + 1): the nodes of the
# constants a program uses stay built, their shape and device known (a new one cost ~8 of `x * 2`'s ~14 us of host time)
_FULL_MEMO: dict[tuple, UOp] = {}

def _deviceless(u: UOp) -> bool:
  try: u.device
  except ValueError: return True
  return False

def _rebase_view(view: UOp, old: UOp, new: UOp) -> UOp | None:
  """The view `view` of `old` (movement ops) reading `new` instead, or None when it is no view of `old`. A multi-device
  view is rebased shard by shard (each shard a view of the base's shard on its device)."""
  if view.op is Ops.MULTI and old.op is Ops.MULTI and new.op is Ops.MULTI and len(view.src) == len(old.src) == len(new.src):
    parts = [_rebase_view(v, o, n) for v, o, n in zip(view.src, old.src, new.src)]
    return None if any(p is None for p in parts) else UOp(Ops.MULTI, view.dtype, tuple(p for p in parts if p is not None), view.arg)
  if (chain := _movement_chain(view, old)) is None: return None
  u = new
  for n in reversed(chain): u = n.replace(src=(u,) + n.src[1:])
  return u

def _views_a_pad(t: Tensor) -> bool:
  # a view (of one device) whose base tensor is a pad's value: the padding is cut away again, but it is no view of the
  # padded buffer (F.pad copies)
  return (vb := t._view_of) is not None and vb.uop.op is Ops.PAD

def _shows_padding(view: UOp, base: UOp) -> bool:
  # the view (of one device, or shard by shard) pads `base` where it shows
  if view.op is Ops.MULTI and base.op is Ops.MULTI: return any(_shows_padding(v, b) for v, b in zip(view.src, base.src))
  return (chain := _movement_chain(view, base)) is not None and _reached_padding(chain) is not None

def _unview(chain: list[UOp], x: Tensor, base: Tensor) -> Tensor:
  """`base` with the elements that the view `chain` (movement ops, top first) shows replaced by `x`: each op inverted in turn."""
  if any(n.op is Ops.PAD for n in chain): _unview_mask_check(chain)
  val, mask = x, None   # mask None: every element of the current shape is written
  for n in chain:
    src = n.src[0].shape
    if n.op is Ops.DETACH: continue
    if n.op is Ops.BITCAST:   # the same elements with the base's bits
      val = val.bitcast(n.src[0].dtype)
      continue
    if n.op is Ops.EXPAND:
      if src != n.shape:
        raise ValueError(f"assign: the target is a broadcast (expanded) view, shape {src} -> {n.shape}: several of its elements are one "
                         "element of the base; assign into the unexpanded tensor, or .contiguous() the view first for a copy of its own")
      continue
    if n.op is Ops.SHRINK and mask is None: mask = Tensor.full(val.shape, True, dtype=dtypes.bool, device=val.device)
    if n.op is Ops.RESHAPE: f: Callable[[Tensor], Tensor] = lambda t: t.reshape(src)
    elif n.op is Ops.PERMUTE: f = lambda t: t.permute(tuple(sorted(range(len(n.arg)), key=n.arg.__getitem__)))
    elif n.op is Ops.FLIP: f = lambda t: t.flip(tuple(i for i, fl in enumerate(n.arg) if fl))
    elif n.op is Ops.SHRINK: f = lambda t: t.pad(tuple((b, s - e) for (b, e), s in zip(n.arg, src)))
    else: f = lambda t: t.shrink(tuple((b, b + s) for (b, _), s in zip(n.arg, src)))   # PAD: the base has no padded elements
    val, mask = f(val), (f(mask) if mask is not None else None)
  return val if mask is None else mask.where(val, base)

def _unview_mask_check(chain: list[UOp]) -> None:
  # a view through PAD may only write positions that exist in the base
  if (pad := _reached_padding(chain)) is not None:
    raise ValueError(f"assign: the target view reaches into padding (PAD {pad.arg} of shape {pad.src[0].shape}); only positions of the base tensor can be written")

def _reached_padding(chain: list[UOp]) -> UOp | None:
  """The PAD of the view `chain` (movement ops, top first) whose padding the view shows, or None: a strided slice pads
  and cuts the padding away again. The mask of the view's positions is replayed on the host."""
  if not any(n.op is Ops.PAD for n in chain): return None
  import numpy as np
  # (a symbolic size or offset is replayed at its variable's bound value; with one unbound, the first PAD is the answer)
  def at(x: Any) -> Any:
    if isinstance(x, UOp): return int(sym_infer(x, {})) if all_bound(x) else None
    return tuple(at(y) for y in x) if isinstance(x, tuple) else x
  def known(x: Any) -> bool: return x is not None and (not isinstance(x, tuple) or all(known(y) for y in x))
  # (a detach()/bitcast() view has no arg: it moves nothing)
  if not all(known(at(n.shape)) and known(at(n.src[0].shape)) and (n.op not in GroupOp.Movement or known(at(n.arg))) for n in chain):
    return next(n for n in chain if n.op is Ops.PAD)
  m = np.ones(at(chain[0].shape), dtype=bool)
  for n in chain:
    src, arg = at(n.src[0].shape), at(n.arg)
    if n.op is Ops.RESHAPE: m = m.reshape(src)
    elif n.op is Ops.PERMUTE: m = m.transpose(np.argsort(arg))
    elif n.op is Ops.FLIP: m = np.flip(m, tuple(i for i, f in enumerate(arg) if f))
    elif n.op is Ops.SHRINK: m = np.pad(m, [(b, s - e) for (b, e), s in zip(arg, src)])
    elif n.op is Ops.EXPAND: m = np.asarray(m.any(axis=tuple(i for i, (a, b) in enumerate(zip(src, at(n.shape))) if a != b), keepdims=True))
    elif n.op is Ops.PAD:
      inner = tuple(slice(b, b + s) for (b, _), s in zip(arg, src))
      if m.sum() != m[inner].sum(): return n
      m = m[inner]
  return None

def _is_path(x: Any) -> bool:
  # a pathlib path (without importing pathlib for `import tinygrad`: an object can only be one once pathlib is loaded)
  return "pathlib" in sys.modules and isinstance(x, sys.modules["pathlib"].PurePath)

def _load_tensor(u: UOp, requires_grad: bool | None, grad: Tensor | None) -> Tensor:
  t = Tensor(u)
  t._requires_grad, t.grad = requires_grad, grad
  if grad is not None: _note_grad(t)   # (an implicit one stays lazy, as before the pickle: _readers_of)
  return t

class Tensor(_DTypeCasts, random.RandomMixin, elementwise.ElementwiseMixin, reduce.ReduceMixin, movement.MovementMixin, indexing.IndexingMixin,
             sorting.SortingMixin, nn.NNMixin, loss.LossMixin, linalg.LinalgMixin, sharding.ShardingMixin, hashing.HashingMixin):
  """A lazy n-dimensional array on a device. `Tensor([[1, 2], [3, 4]])`, `Tensor.rand(2, 3)`, `(a @ b).relu().numpy()`."""
  # _view_of: the tensor this one is a movement-op view of (assign writes there); _views: the live views of this one;
  # _graph: the graph a realized tensor was computed from (backward after realize() or item() still reaches its inputs)
  # _virtual: a constant made with buffer=False, which realize() leaves without a buffer (public tinygrad's)
  # _parents: the tensors a view was made from, nearest first (a view of a view: that view, then its own), weakly held; it
  # follows the nearest one realized into a copy of its own
  # _bits_of: the tensor a bitcast to another item size copied its bits from (writing into the copy raises: it would not
  # reach the source)
  _in_shards = 0   # inside _realize_multi's realize of the shards
  _readers_done: frozenset = frozenset()   # its readers' shards: every live graph reads their buffers after that realize
  _own_parts = False   # a realize computes its own graphs' old-value parts first (_readers_of)
  __slots__ = ("uop", "_requires_grad", "grad", "_view_of", "_views", "_kept", "_kept_at", "_virtual", "_replay", "_parents", "_bits_of", "_ref",
               "__weakref__")
  no_grad: bool = False
  _seed: int = int(time.time())

  def __init__(self, data: Any, device: str | None = None, dtype: DType | str | None = None, requires_grad: bool | None = None):
    self._ref = r = weakref.ref(self, _unregister)
    with _registry_lock: all_tensors[r] = maybe_lazy[r] = None
    if capture_made[0] is not None and capture_made[0] == threading.get_ident(): capture_made[1][id(self)] = weakref.ref(self)
    self._requires_grad: bool | None = None
    self.grad: Tensor | None = None
    self._view_of: Tensor | None = None
    self._views: weakref.WeakValueDictionary[int, Tensor] | None = None
    self._kept: UOp | None = None
    self._kept_at = 0
    self._virtual = False
    self._bits_of: Tensor | None = None
    self._replay: tuple[Callable[[UOp], UOp], ...] | None = None
    self._parents: tuple[weakref.ref[Tensor], ...] = ()
    if type(data) is UOp and device is None and dtype is None and requires_grad is None and data.__dict__.get("_device") is not None:
      # (a graph node on a device, as every Tensor op makes: none of the cases below applies)
      graph_epoch[0] += 1
      self.uop: UOp = data
      return
    dt = to_dtype(dtype) if dtype is not None else None
    if isinstance(device, (tuple, list)): device = _canon_device(device)   # (one device in a tuple is that device)
    if isinstance(device, tuple) and not isinstance(data, UOp):   # several devices: built on the first, replicated
      self.uop = Tensor(data, device=device[0], dtype=dtype).shard(device).uop
      self.requires_grad = requires_grad
      return
    if isinstance(data, UOp) and _deviceless(data):   # a Variable (bound or not) or an expression of them: a 0-d tensor
      dev_u = UOp(Ops.DEVICE, arg=_canon_device(device if isinstance(device, str) else None))
      if (c := data.simplify()).op is Ops.CONST: data = UOp.const(c.dtype, c.arg, src=(dev_u,))   # UOp.const(1.0): a constant
      else:
        wdt = dtypes.weakint if data.dtype == dtypes.index else data.dtype   # a plain Variable is a weak int, as an int literal
        data = UOp.const(wdt, 0, src=(dev_u,)) + data.cast(wdt)
      device = None
    if isinstance(data, UOp):
      if dt is not None and dt != data.dtype: data = data.cast(dt)
      if device is not None and _canon_device(device) != data.device: data = UOp(Ops.COPY, data.dtype, (data, UOp(Ops.DEVICE, arg=_canon_device(device))))
      graph_epoch[0] += 1
      self.uop = data
      self.requires_grad = requires_grad
      return
    dev = _canon_device(device)
    if data is None: data = 0.0   # (public tinygrad 0.14: a 0-d zero; before it an empty (0,) tensor)
    # a typed memoryview (t.data(), a numpy array's): its items, as numpy and torch read it; a plain one is bytes
    if isinstance(data, memoryview) and (data.format != "B" or data.ndim != 1):
      import numpy as np
      data = np.asarray(data)
    if _is_scalar(data):
      dt = dt or dtypes.from_py(data)
      _check_int(data, dt, "pass a wider dtype=, e.g. dtypes.int64")
      # (a file runs no kernels, so its 0-d tensor is written as bytes, as a list's are: a CONST there could not be read)
      if is_disk(dev): self.uop = Tensor._from_bytes(_pack([data], dt), (), dt, dev)
      else: self.uop = UOp.const(dt, data, src=(UOp(Ops.DEVICE, arg=dev),))
    elif isinstance(data, (list, tuple)):
      shape, vals = _flatten_py(data)
      if any(type(v).__name__ == "ndarray" and v.ndim for v in vals):   # (a 0-d one is a scalar, below)
        # numpy arrays in a list (a replay buffer of observations, beautiful_cartpole's): one array, of numpy's dtype, as
        # torch.tensor and numpy read it (ragged ones: numpy's error)
        import numpy as np
        self.uop = Tensor(np.asarray(data), device=dev, dtype=dt).uop
        self.requires_grad = requires_grad
        return
      if any(_is_np_scalar(v) for v in vals):
        # numpy scalars (np.float16(1), an element of an array) keep their dtype and promote with the rest, as in torch:
        # [np.int8(1), 2] is int32, [np.float16(1), 1.5] float32; the values go on as Python numbers
        dt = dt or least_upper_dtype(*{dtypes.from_py(v) for v in vals})
        vals = [v.item() if _is_np_scalar(v) else v for v in vals]
      if not all(_is_scalar(v) for v in vals): raise TypeError(f"Tensor data must be numbers, got {sorted({type(v).__name__ for v in vals if not _is_scalar(v)})}")
      # (rows given as bytes are uint8 as a Tensor of bytes is: public tinygrad cannot infer their dtype and raises)
      dt = dt or (dtypes.uint8 if _leaf(data) is bytes else max((dtypes.from_py(v) for v in vals), default=dtypes.default_float))
      check_storable(dt)   # (before packing: void's values raised struct.error "bad char in struct format")
      self.uop = Tensor._from_bytes(_pack(vals, dt), shape, dt, dev) if vals else Tensor._full_uop(shape, 0, dt, dev)
    elif _is_path(data) and (device is None or is_disk(dev)):
      # a path with no device: the file itself, a DISK tensor (read or copy it to compute), its bytes as `dtype` (uint8)
      path = sys.modules["pathlib"].Path(data).resolve()
      size = path.stat().st_size   # (FileNotFoundError before the DISK device would create the file)
      dt = dt or dtypes.uint8
      self.uop = new_buffer(f"DISK:{path}", size // dt.itemsize, dt)
    elif isinstance(data, (bytes, bytearray, memoryview)) or _is_path(data):
      # a path given a device: the file's bytes, read into it now
      raw = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else sys.modules["pathlib"].Path(data).read_bytes()
      # with a dtype the bytes are its items, as public tinygrad reads them (raw weights: Tensor(f.read(), dtype=dtypes.float32))
      dt = dt or dtypes.uint8
      check_storable(dt)   # (void's item size 0: ZeroDivisionError)
      if len(raw) % dt.itemsize: raise ValueError(f"{len(raw)} bytes are not a whole number of {dt.name} items ({dt.itemsize} bytes each)")
      self.uop = Tensor._from_bytes(raw, (len(raw) // dt.itemsize,), dt, dev)
    elif hasattr(data, "dtype") and hasattr(data, "shape") and hasattr(data, "tobytes"):  # numpy array or scalar
      import numpy as np
      from tinygrad.dtype import from_numpy, to_numpy
      shape = tuple(int(s) for s in np.shape(data))
      arr = np.ascontiguousarray(data)  # (this makes a 0-d array 1-d: the shape is taken before)
      if not arr.dtype.isnative: arr = arr.astype(arr.dtype.newbyteorder("="))  # big-endian '>i4': the device reads native order
      src_dt = from_numpy(arr.dtype)
      if dt is not None and dt != src_dt and dt not in NO_NUMPY:
        arr = _np_float_to_int(arr, dt) if dtypes.is_float(src_dt) and dtypes.is_int(dt) else arr.astype(to_numpy(dt))
        src_dt = dt
      # float64 to bfloat16/fp8: narrowed here to a float32 rounded to odd, which the device's cast rounds from as from the
      # float64 (once, as a kernel's cast: docs/guide.md); a device without float64 (WEBGPU, METAL) takes it (it raised
      # "dtype double is not supported"), and half the bytes are copied
      elif dt in NO_NUMPY and src_dt == dtypes.float64: arr, src_dt = _np_f32_odd(arr), dtypes.float32
      # (the array's own bytes, not a copy: the device buffer's copyin is the one copy of a big array, a model's weights)
      self.uop = Tensor._from_bytes(arr.reshape(-1).view(np.uint8), shape, src_dt, dev) if arr.size else Tensor._full_uop(shape, 0, src_dt, dev)
      if dt is not None and dt != src_dt: self.uop = self.uop.cast(dt)
    else: raise TypeError(f"cannot make a Tensor from {type(data).__name__}; valid: int, float, bool, list, tuple, bytes, a file path, numpy array, UOp")
    self.requires_grad = requires_grad

  def __del__(self) -> None:
    # a realized tensor's kept graph outlives it while another kept graph reads its buffer, where a requires_grad=True
    # tensor is below (Y = (Y * w).realize() in a loop: the last Y's graph reads the one before's buffer only)
    if grad_leaves and (g := getattr(self, "_kept", None)) is not None and (gm := sys.modules.get("tinygrad.gradient")) is not None:
      gm.keep_chain(self.uop, g, self._kept_at)
  def _keep_assign_graph(self, a: UOp) -> None:
    # its pending assign `a` runs now: the graph its new value was computed from (gradient.realized_assign_graph). Not for
    # a tensor with requires_grad True (a leaf: an optimizer's parameters, updated in place as under torch's no_grad)
    if self._requires_grad is None and not Tensor.no_grad and dtypes.is_float(self.dtype):
      from tinygrad.gradient import realized_assign_graph
      if (kg := realized_assign_graph(a)) is not None: self._kept, self._kept_at = kg
  @property
  def _graph(self) -> UOp | None: return self._kept
  @_graph.setter
  def _graph(self, g: UOp | None) -> None:
    # (kept now: it read the buffers as they are at this write_epoch; a rewrite of the same graph sets _kept itself)
    self._kept, self._kept_at = g, write_epoch[0]
  @property
  def requires_grad(self) -> bool | None:
    """True: backward() gives this tensor a `.grad`; None (the default): it does too when it is in the graph (as upstream),
    unless it is a broadcast constant; False: never."""
    return self._requires_grad
  @requires_grad.setter
  def requires_grad(self, value: bool | None) -> None:
    self._requires_grad = value
    if value: grad_leaves[id(self)] = self
    else: grad_leaves.pop(id(self), None)
    # a broadcast constant is one hash-consed node shared by every equal constant (Tensor(3.0), Tensor.ones(4)): a tensor
    # that is to get a gradient gets a buffer of its own, or its gradient would be lost or mixed with another's
    if value and smax(self.numel()) > 0:
      from tinygrad.gradient import is_const   # the very test autograd uses to leave constants out
      if is_const(self.uop): self._set_uop(Tensor(self.uop).contiguous().realize().uop)

  # ---- construction helpers ----
  @staticmethod
  @engine_locked
  def _from_bytes(raw: Any, shape: tuple[int, ...], dtype: DType, device: str) -> UOp:
    # raw: bytes or any buffer of them (a numpy array's), copied once into the new buffer
    # a bool is one byte that kernels read as it is: a nonzero byte other than 1 (a numpy bool array viewed from uint8, a
    # file's bytes) made CL/CLANG's logical_not True and int() 2, so each byte is made 0 or 1, as numpy reads it
    if dtype == dtypes.bool: raw = bytes(memoryview(raw)).translate(_BOOL_BYTES)
    u = new_buffer(device, prod(shape), dtype)
    buffer_of(u).allocate().copyin(memoryview(raw))
    return u.reshape(shape)
  @staticmethod
  def _full_uop(shape: tuple[int, ...], value: ConstType, dtype: DType, device: str, weak: bool = False) -> UOp:
    # weak: a Python number in an expression (x * 2.0), a node apart from a constant tensor of the same value (Tensor(2.0),
    # Tensor.full): one node, the gradient of t = Tensor(2.0) in (t * 2.0).gradient(t) took both factors as t and came out 4
    # (public tinygrad keeps them apart the same way: its Python numbers have a weak dtype)
    key = (shape, type(value), value, math.copysign(1.0, value) if type(value) is float else 0, dtype, device, weak)
    if (u := _FULL_MEMO.get(key)) is not None: return u
    c = UOp.const(dtype, value, src=(UOp(Ops.DEVICE, arg=device),))
    if weak: c = c.replace(tag="weak")
    u = c.reshape((1,) * len(shape)).expand(shape)
    if type(value) in (int, float, bool) and value == value and type(device) is str and all_int(shape):
      if len(_FULL_MEMO) >= 1024: _FULL_MEMO.clear()
      _FULL_MEMO[key] = u
    return u
  def _const(self, value: ConstType, dtype: DType | None = None, shape: tuple[int, ...] = (), weak: bool = False) -> Tensor:
    return Tensor(Tensor._full_uop(shape, value, dtype or self.dtype, self.device, weak))

  @property
  def lazydata(self) -> UOp: return self.uop  # the older tinygrad name

  # ---- properties ----
  @property
  def shape(self) -> tuple[int, ...]:
    """The size of each dimension."""
    return self.uop.shape
  @property
  def dtype(self) -> DType:
    """The element type."""
    return self.uop.dtype
  @property
  def device(self) -> Any:
    """The canonical name of the device holding (or that will compute) this tensor (a str); for a multi-device tensor
    (shard) the tuple of its devices' names."""
    return self.uop.device
  @property
  def ndim(self) -> int:
    """The number of dimensions."""
    return len(self.shape)
  def numel(self) -> int:
    """The number of elements."""
    return prod(self.shape)
  def element_size(self) -> int:
    """The size of one element in bytes."""
    return self.dtype.itemsize
  def nbytes(self) -> int:
    """The size of the data in bytes."""
    return self.numel() * self.element_size()
  def is_floating_point(self) -> bool:
    """True for float dtypes."""
    return dtypes.is_float(self.dtype)
  @property
  def T(self) -> Tensor:
    """`transpose()`: swaps the first two dimensions (a 0-d or 1-d tensor is returned as is)."""
    return self if self.ndim < 2 else self.transpose()
  def __repr__(self) -> str:
    return f"<Tensor shape={self.shape} dtype={self.dtype} device={self.device!r} op={self.uop.op} realized={self._is_realized()} grad={self.grad!r}>"
  def __hash__(self) -> int: return id(self)
  # pickled as its graph (a BUFFER with its bytes), requires_grad and grad, as public tinygrad's; not the engine's
  # bookkeeping: the graph a realized tensor was computed from (with its inputs' buffers), its live views
  def __reduce__(self): return _load_tensor, (self.uop, self._requires_grad, self.grad)
  # numpy's operators defer to ours (np.float32(2) * t is t.__rmul__): they read a tensor as a sequence and made an object
  # array of lazy 0-d tensors; a numpy ufunc on a tensor (np.sin(t)) raises TypeError
  __array_ufunc__ = None
  def __bool__(self) -> bool: raise TypeError("the truth value of a Tensor is ambiguous; use .item(), .any() or .all()")
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]
  def __delitem__(self, k: Any) -> None: raise TypeError("Tensor does not support item deletion; build a new tensor (x[mask], x.cat ...)")
  def __iter__(self) -> Iterator[Tensor]: return (self[i] for i in range(len(self)))

  # ---- realization ----
  def _is_realized(self) -> bool:
    if self.uop.op is Ops.MULTI: return all(Tensor(s)._is_realized() for s in self.uop.src)
    base = base_buffer(self.uop)
    return base is not None and has_buffer(base) and buffer_of(base).is_allocated()
  def _views_a_buffer(self) -> bool:
    """Whether this tensor is a view (movement ops) of its base's realized buffer, which realize() leaves as it is (on
    several devices: each shard a view of the base's shard on its device). A pad is not: it is a value of its own once
    realized, as torch's F.pad and numpy's np.pad make one. A view of a symbolic shape (`t[:n]` of a bound n) is one too
    (it used to be realized into a copy, and writing into it left t as it was)."""
    base = self._view_of
    if base is None or self._virtual: return False
    def on_buffer(v: UOp, b: UOp) -> bool:
      if (bb := base_buffer(b)) is None or not has_buffer(bb) or not buffer_of(bb).is_allocated(): return False
      return (chain := _movement_chain(v, bb)) is not None and _reached_padding(chain) is None
    if self.uop.op is Ops.MULTI:
      return base.uop.op is Ops.MULTI and len(self.uop.src) == len(base.uop.src) and all(map(on_buffer, self.uop.src, base.uop.src))
    return on_buffer(self.uop, base.uop)
  @engine_locked
  def realize(self, *lst: Tensor, do_update_stats: bool = True) -> Tensor:
    """Compute this tensor (and `lst`) now: afterwards each one's UOp is a realized buffer. Returns self.
    `do_update_stats=False` (public tinygrad's) leaves GlobalCounters' kernel, op, byte and time totals as they were.

    A view of a realized tensor (a slice, permute, flip ...) stays a view of its buffer, as torch's views share their
    tensor's storage: later writes into either show in the other (`.contiguous()` or `.clone()` gives a copy). A view
    with a pending assign first runs the assign (the base's buffer is written). A view of a lazy tensor is computed into
    a buffer of its own (the tensor it views is not computed as a whole).
    The graph a float tensor was computed from is kept beside the buffer, so `backward()` after `realize()` still works."""
    if not do_update_stats:
      # (the totals are put back afterwards: the engine counts each kernel as it runs, also in the realizes this one starts)
      saved = (GC.kernel_count, GC.global_ops, GC.global_mem, GC.time_sum_s)
      try: return self.realize(*lst)
      finally: GC.kernel_count, GC.global_ops, GC.global_mem, GC.time_sum_s = saved
    # (one tensor, the usual call, without dict.fromkeys: Tensor.__hash__ is a Python call)
    todo = [t for t in (dict.fromkeys((self,) + lst) if lst else (self,))
            if not t._is_realized() and not t._virtual and smax(t.numel()) > 0 and not t._views_a_buffer()]
    if not todo: return self
    if any(t.uop.op is Ops.MULTI for t in todo): return self._realize_multi(todo)
    from tinygrad.engine import realize as engine
    # a pure graph (no assign, copy, contiguous, variable) of one tensor: run from its eager plan when it has one
    eager = self._eager(engine) if not lst and not (Tensor._in_shards or Tensor._readers_done or Tensor._own_parts) else None
    if eager is True: return self
    roots: dict[UOp, None] = {}
    direct: list[Tensor] = []   # tensors whose own graph is realized (the rest are views of an assign: realized after it)
    again: list[Tensor] = []
    for t in todo:
      b = t.uop
      # (a detach() or bitcast() view of a pending assign too: realized on its own, it became a copy and left its base; so
      # did one that numpy() read, through the stand-in it realizes, whose copy it got as the same graph's second tensor)
      while b.op in GroupOp.Movement or b.op in (Ops.DETACH, Ops.BITCAST): b = b.src[0]
      if b.op is Ops.ASSIGN and b is not t.uop: roots[b] = None
      elif t.uop in roots: again.append(t)  # the same (hash-consed) graph as another tensor here: it gets its own buffer
      else:
        roots[t.uop] = None
        direct.append(t)
    # the graph's nodes, once: the kept-contiguous search, the schedule and the assign map below read them (the kept ones
    # are among them: the same nodes, in the same order, as the roots' and theirs)
    nodes = UOp(Ops.SINK, src=tuple(roots)).toposort(gate=_above_buffers)
    ops = {n.op for n in nodes}   # (one pass: most graphs have no CONTIGUOUS, COPY or ASSIGN to look for)
    if Ops.ASSIGN in ops and _uop_ops._multi_live and (whole := Tensor._assigned_with(nodes)):
      # one shard's pending assign of a tensor on several devices (a copy of one replica reads it) runs with the others:
      # alone, it overwrote a buffer the others read later (their values gather across devices: t.assign(t.flip(0) +
      # w.shard(devs, 0)); t.to(dev).realize() left t's other shards built from device 0's new rows)
      Tensor.realize(*whole)
      return Tensor.realize(self, *lst)
    kept = Tensor._live_contiguous(roots, nodes) if Ops.CONTIGUOUS in ops or Ops.COPY in ops else []
    if engine.observing is not None and engine.call_outer is not None: kept += Tensor._jit_state(roots, nodes, kept)
    for t in kept: roots[t.uop] = None
    # live lazy tensors that read what this realize's assigns overwrite are computed by it, before the writes (torch's values)
    twins: list[tuple[Tensor, UOp, Tensor]] = []
    frozen: list[Tensor] | None = []
    frontier: dict[UOp, UOp] = {}
    if Ops.ASSIGN in ops and (frozen := Tensor._stale_readers(roots, nodes, frontier)) is None:
      # (None: some were computed in a realize of their own first, which may have rebased the graphs here: start again)
      return Tensor.realize(self, *lst)
    if frozen:
      for t in frozen:
        if t.uop in roots: twins.append((t, t.uop, next(k for k in kept if k.uop is t.uop)))
        else:
          roots[t.uop] = None
          kept.append(t)
    kept_roots = [t.uop for t in kept]
    # (an old-value part that is itself realized here is read as its result: left out, the graph computed it again later,
    # from the updated buffers: `e2 = w * 1; w += 1; e3 = e2 * w`, realizing w and e2 gave e3 the new w squared)
    frontier = {f: f if f in roots else r for f, r in frontier.items()}
    for r in frontier.values(): roots[r] = None
    if frozen or frontier: nodes = UOp(Ops.SINK, src=tuple(roots)).toposort(gate=_above_buffers)
    rl = list(roots)
    # the intermediate results a realize still holds are handed on (below) only to live graphs that may read them: with
    # none (every other live tensor a buffer or a view of one) and no assign, nothing is looked for (a plain (a @ b)'s
    # packed panel: ~150 us of a 2 ms realize). Asked only once the schedule has intermediates: the look is a pass over
    # every live tensor (a tiny realize in a program holding 5000 tensors paid 1.3 ms for it)
    mine = {id(t) for t in direct + kept}
    def want_held() -> bool:
      if eager is not None and eager[1] is not None: return eager[1]   # (_eager asked already)
      return any(id(x) not in mine and not _views_buffer(x.uop) for x in lazy_tensors())
    held: dict[UOp, UOp] = {}
    # a Ctrl-C after the first kernel is held until every tensor records what ran (raised then, or at a step boundary):
    # one between the last kernel and the records below left an assign that ran pending, and it ran again (a += 1 gave +2)
    with engine.DeferredInterrupt(lazy=True):
      try: results = dict(zip(rl, engine.realize_uops(rl, lambda done: Tensor._keep_partial(done, direct), held, nodes, None if Ops.ASSIGN in ops else want_held)))
      except RuntimeError as e:
        # a graph that reads a buffer before and after its update: its old-value parts are computed first (nothing ran yet)
        if Tensor._own_parts or Ops.ASSIGN not in ops or not str(e).startswith("cannot order the schedule"): raise
        Tensor._own_parts = True
        try: return Tensor.realize(self, *lst)
        finally: Tensor._own_parts = False
      copies: list[tuple[Tensor, UOp]] = []
      orphans: list[tuple[UOp, UOp, int]] = []
      # each one's graph as realized: a base's _set_uop below rebases its views, which may be realized here too
      olds = [(t, t.uop) for t in direct + kept]
      for t, old in olds:
        if t.requires_grad is not False and dtypes.is_float(t.dtype) and old.op is not Ops.ASSIGN: t._graph = old
        elif old.op is Ops.ASSIGN: t._keep_assign_graph(old)
        t._set_uop(results[old])
        # a view realized into a copy of its own no longer writes into its base (one realized as the base's buffer still does)
        if t._view_of is not None and base_buffer(t.uop) is not base_buffer(t._view_of.uop): copies.append((t, old))
      # (after the loop: it rebases views made from t, which may be realized here too; a base realized here rebased them
      # onto its buffer already: from its graph as realized)
      if copies: prev = {id(t): old for t, old in olds}
      for t, old in copies: t._own_views(old, prev.get(id(t._view_of)))
      # every realized assign is now its target's buffer: no live tensor may run it a second time
      amap = {n: n.src[0] for n in nodes if n.op is Ops.ASSIGN} if Ops.ASSIGN in ops else {}
      # and every graph that reads a kept CONTIGUOUS reads its buffer now, instead of computing it again
      amap |= {k: results[k] for k in kept_roots}
      # (and a multi-device reader's shards, _realize_multi)
      if Tensor._readers_done: amap |= {r: results[r] for r in rl if r in Tensor._readers_done}
      # and every graph that read old and new values reads the old parts' buffers (_readers_of)
      amap |= {f: results[r] for f, r in frontier.items()}
      # and so does every graph that reads another node the schedule computed into a buffer of its own (a matmul whose
      # result the KV-cache assign needs, which the queries need too)
      # and every custom kernel that ran is its outputs' buffers (it writes them in place: it must not run again)
      inter = Tensor._live_intermediates({n: b for n, b in held.items() if n.op is not Ops.AFTER}, rl, nodes) if held else {}
      if held: amap |= {n: b for n, b in held.items() if n.op is Ops.AFTER} | inter
      if amap:
        # (most are buffers; the rest share most of their graphs: one walk over the union, substitute_all)
        # (in the index, which these rebinds keep them in: walks that drop buffers run under the engine lock, as this one)
        xs = [x for x in lazy_tensors() if base_buffer(x.uop) is None]
        # every other live tensor of a graph realized here (hash-consed: `e1, e2 = b * 2, b * 2`) gets a copy of its value
        # too: left lazy, it was computed later from the buffers this realize's assigns overwrote (`b.assign(b + 10)`
        # realized with e1, or with both, gave e2 the new b times 2). (Found in the walk above: a pass of its own over the
        # live tensors cost an assign realize in a program of 5000 tensors ~0.4 ms more)
        if Ops.ASSIGN in ops:
          firsts, mine_now = {old: t for t, old in olds if old.op is not Ops.ASSIGN}, {id(t) for t, _ in olds} | {id(t) for t, _, _ in twins}
          twins += [(x, x.uop, firsts[x.uop]) for x in xs if x.uop in firsts and id(x) not in mine_now]
        # the graphs kept for autograd read those intermediates as buffers too, as the live graphs now do: else a lazy
        # parameter (a fresh model's random init, whose seed arithmetic is such an intermediate) is no longer the node its
        # reader's kept graph holds, and backward gives it no gradient. Only these: no gradient flows below them (an assign
        # that ran, or a custom kernel, stays a node its gradient rule sees)
        gs = [t for t, _ in olds if t._graph is not None] if inter else []
        # (but a view of a buffer keeps viewing it: the copy of its old values that a graph reading old and new values gets
        # (_readers_of's frontier) is that graph's; substituted in a view, the view showed the old values from then on)
        if own := {f for f in frontier if _views_buffer(f)}:
          views = [x for x in xs if _views_buffer(x.uop)]
          for x, u in zip(views, substitute_all([x.uop for x in views], {k: v for k, v in amap.items() if k not in own})): x.uop = u
          xs = [x for x in xs if not _views_buffer(x.uop)]
        for x in xs:   # (a tensor whose pending assign ran with another one's realize)
          if x.uop.op is Ops.ASSIGN and x.uop in amap: x._keep_assign_graph(x.uop)
        # and one whose tensor died while it was pending (z += x * 2; y = z * z; del z; y.realize()): its graph is kept as
        # a dead tensor's (gradient.keep_chain) once the stamp below dropped the kept graphs of the buffers written here
        if grad_leaves and Ops.ASSIGN in ops and not Tensor.no_grad:
          orphans = Tensor._orphan_assigns(nodes, {old for _, old in olds} | {x.uop for x in xs})
        # (only the graphs that may hold a node of the map: one holding a node reads that node's buffers. Walking them all
        # made every realize cost the size of every live lazy graph)
        reached = [kr for k in amap if (kr := buffers_reached(k))]
        if len(reached) == len(amap):   # (each a non-empty set: a node of no buffer, or of too many, may be in any graph)
          keys = frozenset().union(*reached)
          xs = [x for x in xs if (br := buffers_reached(x.uop)) is None or not keys.isdisjoint(br)]
        for x, u in zip(xs, substitute_all([x.uop for x in xs], amap)): x.uop = u
        for t, g in zip(gs, substitute_all([t._graph for t in gs if t._graph is not None], inter) if gs else []): t._kept = g
      # a second tensor of the same frozen graph gets a copy of its value (one buffer for two tensors would alias them)
      for t, old, first in twins:
        if t.requires_grad is not False and dtypes.is_float(t.dtype): t._graph = old
        t.uop = first.clone().uop
        _relazy(t)
        if t._view_of is not None: t._own_views(old)   # (a view of a lazy tensor: a copy of its own, as if realized here)
      graph_epoch[0] += 1   # (live graphs were rebound to the buffers computed here)
      # (after the graphs above were kept: they read these targets' old values)
      if Ops.ASSIGN in ops:
        _stamp_writes(n for n in nodes if n.op is Ops.ASSIGN)
        if orphans:
          from tinygrad.gradient import keep_chain
          for u, g, at in orphans: keep_chain(u, g, at)
        from tinygrad.gradient import ASSIGNED_OVER
        if len(ASSIGNED_OVER):   # (their targets hold the new values now: no old value left to read, nor a graph to hold)
          for n in nodes:
            if n.op is Ops.ASSIGN: ASSIGNED_OVER.pop(n, None)
    # a pure graph without a plan: its plan now, from what this realize scheduled and compiled
    if eager is not None and eager[1] is None and len(olds) == 1 and olds[0][0] is self and \
       (plan := engine.make_eager_plan(olds[0][1], nodes)) is not None:
      if len(engine.eager_plans) >= 1024: engine.eager_plans.clear()
      engine.eager_plans[eager[0]] = plan
    done = {id(t) for t in direct}
    rest = [t for t in again + [t for t in todo if id(t) not in done] if not t._is_realized()]
    if rest: Tensor.realize(*rest)
    return self
  @staticmethod
  def _orphan_assigns(nodes: dict[UOp, None], owned: set[UOp]) -> list[tuple[UOp, UOp, int]]:
    # the pending float assigns realized here (`nodes`) that no live tensor holds (`owned`), nor a later assign of the same
    # target replaced: (the target, the graph its new value was computed from, when kept), as Tensor._keep_assign_graph
    from tinygrad.gradient import SUPERSEDED, realized_assign_graph
    out = []
    for n in nodes:
      if n.op is Ops.ASSIGN and n not in owned and dtypes.is_float(n.dtype) and n not in SUPERSEDED and (kg := realized_assign_graph(n)) is not None:
        out.append((n.src[0], *kg))
    return out
  def _eager(self, engine: Any) -> Any:
    # True: realized from its eager plan (engine.make_eager_plan); None: not a pure graph, or nothing records it now; else
    # (key, None: it has no plan yet | whether want_held said to hand its intermediates on)
    if not engine.eager_ready() or (k := engine.eager_key(self.uop)) is None: return None
    key, inputs = k
    if (plan := engine.eager_plans.get(key)) is None or plan.version != ContextVar.version: return (key, None)
    # (a plan that writes intermediates: realize_uops hands them on to live graphs that may read them, which the plan does not)
    if plan.inter and any(x is not self and not _views_buffer(x.uop) for x in lazy_tensors()): return (key, True)
    old = self.uop
    # a Ctrl-C is held: one during a kernel stops the run after it, one after the last waits for the records below (as
    # run_steps and realize's hold it)
    with engine.DeferredInterrupt() as held:
      out = engine.run_eager_plan(plan, inputs, old, Tensor._keep_partial, held)
      if self.requires_grad is not False and dtypes.is_float(self.dtype): self._graph = old
      self._set_uop(engine.buffer_view(out, old.shape))
      # (a view of a lazy tensor, as a sum's reshape of its reduce is: realized into a buffer of its own, it leaves its base)
      if self._view_of is not None and base_buffer(self.uop) is not base_buffer(self._view_of.uop): self._own_views(old)
    return True
  @staticmethod
  def _keep_partial(done: dict[UOp, UOp], asked: Sequence[Tensor] = ()) -> None:
    # a realize that raised part-way (a failing kernel, Ctrl-C): what ran is kept, in every live graph, as its buffer (an
    # assign that ran as its target, already holding the new value); realizing again runs only the rest, and an update
    # that ran is never applied twice. `asked`: the tensors the realize was asked for
    xs = [x for x in lazy_tensors() if base_buffer(x.uop) is None]
    for x in xs:
      if x.uop in done and x.requires_grad is not False and dtypes.is_float(x.dtype) and x.uop.op is not Ops.ASSIGN: x._graph = x.uop
    olds = [x.uop for x in xs]
    _stamp_writes(u for u in done if u.op is Ops.ASSIGN)   # (the assigns that ran: after the graphs above were kept)
    graph_epoch[0] += 1
    for x, u in zip(xs, substitute_all(olds, done)): x.uop = u
    # a value (no view) whose own kernel did not run but whose graph is now only movement ops over a buffer that ran (a
    # cumsum over an axis of size 1 of a sum that ran: the sum's buffer) is a lazy copy of it: as a view it followed the
    # next write into that buffer (e3 = w.sum(2, keepdim=True); e5 = e3.cumsum(0) cut short after e3's kernel; e3 += 1 showed in e5)
    # (through a detach() too: x.detach()[0] of a lazy x, its realize cut short after x's kernel, stayed a view of x's buffer
    # and showed x's next write, where a whole realize makes it a copy)
    def now_a_view(x: Tensor, old: UOp) -> bool:
      # (on several devices: any shard that is, each shard's graph holding its own node)
      if old.op is Ops.MULTI:
        return x.uop.op is Ops.MULTI and len(x.uop.src) == len(old.src) and any(map(shard_now_a_view, x.uop.src, old.src))
      return shard_now_a_view(x.uop, old)
    def shard_now_a_view(u: UOp, old: UOp) -> bool: return old not in done and _views_buffer_detached(u) and not _views_buffer_detached(old)
    for x, old in zip(xs, olds):
      if x._view_of is None and now_a_view(x, old): x._set_uop(x._copy_node().uop)
    # a view asked for whose base was lazy is a copy after a whole realize (docs/guide.md): cut short after its base's kernel
    # but before its own copy, it is a lazy copy of what its base's buffer holds, as if that copy had run (as a view of the
    # buffer it was not a copy after the realize run again: `e3 = (w + w).flip(0)`, then e2 += 100 showed in e3)
    mine = {id(t) for t in asked}
    # (a tensor on several devices is asked for as its shards: _realize_multi's realize of one tensor per shard)
    shards = {old for x, old in zip(xs, olds) if id(x) in mine}
    def was_asked(x: Tensor, old: UOp) -> bool: return id(x) in mine or (old.op is Ops.MULTI and any(s in shards for s in old.src))
    # (or a view that gathers a sharded axis: copies of the base's shards, no view of a buffer, whose base was lazy and is
    # now realized: run again it stayed the realized base's view, which the base's next write remade)
    # (lazy before this realize: a tensor on several devices has no base buffer of its own, realized or not: its shards do)
    lazy = {id(x) for x, old in zip(xs, olds) if old.op is not Ops.MULTI or not all(base_buffer(s) is not None for s in old.src)}
    def gathers(x: Tensor, old: UOp) -> bool:
      b = x._view_of
      return b is not None and old.op is Ops.MULTI and id(b) in lazy and b.uop.op is Ops.MULTI and \
        all(base_buffer(s) is not None for s in b.uop.src) and not all(base_buffer(s) is not None for s in x.uop.src)
    # (a pass of its own, after the values': a base made a copy above rebased its views, which are no longer views of the buffer)
    for x, old in zip(xs, olds):
      if was_asked(x, old) and x._view_of is not None and (now_a_view(x, old) or gathers(x, old)):
        now = x.uop
        x._set_uop(x._copy_node().uop)
        x._own_views(now)
    # a view whose own copy ran is a realized copy now, as after a whole realize: it leaves its base (it no longer reads it)
    for x, old in zip(xs, olds):
      if x._view_of is not None and x.uop is not old and (b := base_buffer(x.uop)) is not None and b is not base_buffer(x._view_of.uop): x._own_views(old)
    # two tensors of one (hash-consed) graph whose kernel ran: the first holds the buffer, each other one a lazy copy of it,
    # as a whole realize gives each its own buffer (sharing it, a write into one showed in the other); the copy reads the
    # buffer, so a write into it computes the copy first (_readers_of)
    owners: set[UOp] = set()
    for x, old in zip(xs, olds):
      if old not in done or old.op is Ops.ASSIGN or base_buffer(x.uop) is None: continue
      if old in owners: x._set_uop(Tensor(x.uop)._own(Tensor(x.uop)).uop)
      else: owners.add(old)
  def _whole_chain(self, base: Tensor) -> list[UOp] | None:
    """This multi-device view's logical movement ops over the whole tensor `base` (top first): its ops (`_replay`) on a
    stand-in for `base`; None for a view without them or a symbolic base."""
    if self._replay is None or not all_int(base.shape): return None
    stand_in = new_buffer(base.device[0], prod(base.shape), base.dtype).reshape(base.shape)
    return _movement_chain(self._replayed(stand_in), stand_in)
  def _realize_multi(self, todo: list[Tensor]) -> Tensor:
    # a multi-device tensor is realized as one tensor per shard (all in one schedule), then bundled again
    # a view of a tensor with pending assigns runs them first, as on one device: then it is a view of the written buffers
    # (realized with them, it became copies of its own and missed the base's next write)
    if pend := [b for t in todo if (b := t._view_of) is not None and b.uop.op is Ops.MULTI and any(s.op is Ops.ASSIGN for s in b.uop.src)]:
      Tensor.realize(*pend)
      if rest := [t for t in todo if not t._is_realized() and not t._views_a_buffer()]: Tensor.realize(*rest)
      return self
    # live tensors on several devices that read what these assigns overwrite are computed with them (see _readers_of; one
    # device's are, in the realize of the shards below)
    nodes = UOp(Ops.SINK, src=tuple(t.uop for t in todo)).toposort(gate=_above_buffers)
    if asg := {n for n in nodes if n.op is Ops.ASSIGN}:
      targets = {tb for n in asg if (tb := base_buffer(n.src[0])) is not None}
      ids = {id(t) for t in todo}
      if (readers := Tensor._readers_closure(targets, asg, {t.uop: None for t in todo}, True)) is None: return Tensor.realize(*todo)
      added = [x for x in readers if id(x) not in ids]
      # (and every other live tensor of a graph realized here: it is skipped as a root, and left lazy it read the new values)
      same = {t.uop for t in todo if t.uop.op is Ops.MULTI and not any(s.op is Ops.ASSIGN for s in t.uop.src)}
      ids |= {id(x) for x in added}
      added += [x for x in lazy_tensors() if x.uop in same and id(x) not in ids]
      todo = todo + added
    else: added = []
    from tinygrad.engine import realize as engine
    if engine.observing is not None and engine.call_outer is not None: todo = todo + Tensor._jit_state({t.uop: None for t in todo}, nodes, [], True)
    parts = {id(t): [Tensor(s) for s in t.uop.src] for t in todo if t.uop.op is Ops.MULTI}
    # the lazy graphs as they were: the realize below hands its intermediate buffers to live graphs, and a graph kept for
    # autograd must not hold them (a shard's source buffer on the default device stayed allocated)
    olds = {id(t): t.uop for t in todo}
    # a view of a realized tensor that gathers shards (a slice across them) is realized into copies but stays its view, as
    # on one device: its base's writes remake it from its ops (`_replay`), and writing into it writes the base. A pad is
    # a value of its own, as is a view of a lazy tensor (not computed as a whole)
    stays = {id(t) for t in todo if t._view_of is not None and t._view_of._is_realized() and (c := t._whole_chain(t._view_of)) is not None
             and _reached_padding(c) is None}
    # (the tensors on several devices that read what it overwrites are in todo already)
    Tensor._in_shards += 1
    # a reader computed here (its value from before the writes) is its buffers in every other live graph that holds it, as a
    # kept reader is on one device: `n = -x; x += x; s = x * 1 + n` computed n's shards for s again after the write (0 for
    # 1). In the same substitution as the updates' (after it, a graph whose update became its buffer holds the same node)
    saved, Tensor._readers_done = Tensor._readers_done, Tensor._readers_done | {u for t in added if t.uop.op is Ops.MULTI for u in t.uop.src}
    kept_at = write_epoch[0]   # (the graphs below read the buffers as they were before the shards' assigns)
    try: Tensor.realize(*[p for ps in parts.values() for p in ps], *[t for t in todo if t.uop.op is not Ops.MULTI])
    finally: Tensor._in_shards, Tensor._readers_done = Tensor._in_shards - 1, saved
    for t in todo:
      if t.uop.op is not Ops.MULTI: continue
      old = olds[id(t)]
      t._set_uop(UOp(Ops.MULTI, old.dtype, tuple(p.uop for p in parts[id(t)]), old.arg))
      if t.requires_grad is not False and dtypes.is_float(t.dtype) and not any(s.op is Ops.ASSIGN for s in old.src): t._kept, t._kept_at = old, kept_at
      elif any(s.op is Ops.ASSIGN for s in old.src):
        # its shards' assigns ran: the graphs of their new values (each part's _keep_assign_graph) are its own, bundled as
        # it is (left on the parts, they were kept only once it died: held, z.realize() of z += x * 2 lost x's gradient)
        ps = parts[id(t)]
        ks = tuple(k for p in ps if (k := p._kept) is not None)
        if t._requires_grad is None and len(ks) == len(ps): t._kept, t._kept_at = UOp(Ops.MULTI, old.dtype, ks, old.arg), min(p._kept_at for p in ps)
        for p in ps: p._kept = None
      # any other view realized into copies of its own leaves its base, as on one device (else the base's next write remade it)
      b = t._view_of
      if b is not None and id(t) not in stays and (b.uop.op is not Ops.MULTI or any(base_buffer(x) is not base_buffer(y) for x, y in zip(t.uop.src, b.uop.src))):
        t._own_views(old)
    return self
  @staticmethod
  def _assigned_with(nodes: dict[UOp, None]) -> list[Tensor]:
    # the live tensors on several devices with a pending assign on some shard among `nodes` but not on all of them
    asg = {n for n in nodes if n.op is Ops.ASSIGN}
    # (a shard that is a buffer already has nothing left to run: one a realize cut short wrote is not among the nodes of the
    # others, and asking for it realized the tensor again and again, to a RecursionError)
    return [t for t in lazy_tensors() if t.uop.op is Ops.MULTI and any(s in asg for s in t.uop.src)
            and not all(s in nodes or base_buffer(s) is not None for s in t.uop.src)]
  @staticmethod
  def _stale_readers(roots: dict[UOp, None], nodes: dict[UOp, None], frontier: dict[UOp, UOp]) -> list[Tensor] | None:
    # the live readers (_readers_of) of the buffers this realize's assigns overwrite; None when some were computed now, in
    # a realize of their own (the caller's graphs may have changed)
    # (one on several devices, whose shards a copy of it reads, is computed first, in a realize of its own)
    updates = {n for n in nodes if n.op is Ops.ASSIGN}
    targets = {b for n in updates if (b := base_buffer(n.src[0])) is not None}
    out = Tensor._readers_closure(targets, updates, roots, None, frontier, nodes) if targets else []
    if out is None: return None
    if (multi := [x for x in out if x.uop.op is Ops.MULTI]) and not Tensor._in_shards:
      Tensor.realize(*multi)
      if any(x._is_realized() for x in multi): return None
    return [x for x in out if x.uop.op is not Ops.MULTI]
  @staticmethod
  def _readers_closure(targets: set[UOp], updates: set[UOp], roots: dict[UOp, None], multi: bool | None,
                       frontier: dict[UOp, UOp] | None = None, nodes: dict[UOp, None] | None = None) -> list[Tensor] | None:
    # _readers_of, and a pending update of another buffer that a reader (or an old-value part, `frontier`) is or holds runs
    # here too, so that buffer's readers are computed before it (`c = b.cumsum(0); b *= a.max(); a += 1`: realizing a runs
    # b's update, which c must not see): to a fixed point
    out = Tensor._readers_of(targets, updates, roots, multi, frontier, nodes)
    def held(xs: list[UOp]) -> set[UOp]: return {n for x in xs for n in x.toposort(gate=_above_buffers) if n.op is Ops.ASSIGN}
    while out is not None and (more := held([x.uop for x in out] + list((frontier or {}).values())) - updates):
      updates, seen = updates | more, {id(x) for x in out}
      targets = targets | {b for n in more if (b := base_buffer(n.src[0])) is not None}
      if (nxt := Tensor._readers_of(targets, updates, roots | {x.uop: None for x in out}, multi, frontier, nodes)) is None: return None
      out += [x for x in nxt if id(x) not in seen]
    return out
  @staticmethod
  def _readers_of(targets: set[UOp], updates: set[UOp], roots: dict[UOp, None], multi: bool | None = False,
                  frontier: dict[UOp, UOp] | None = None, nodes: dict[UOp, None] | None = None) -> list[Tensor] | None:
    # live lazy tensors whose graph reads a buffer of `targets` as it is now, and none of `updates` (pending assigns of
    # them) nor an unbound Variable (it cannot run yet): a realize that overwrites those buffers computes each one first,
    # so it keeps the value it had when it was built, as in torch (later it would read the updated buffer: a PPO ratio read
    # after opt.step(), losses kept in a list, `t = w * 2; w += 1`). A graph that reads an update (of a chain
    # `w += 1; t = w * 2; w += 1`, or old and new values at once) is left lazy, and so is a view (it follows its base) and
    # an implicit gradient (below). `multi`: tensors on one device (False), on several (True), or both (None). Under
    # TinyJit, a tensor that was live before the call is computed now, outside the capture (a replay must not write it
    # again), and left out.
    cands, live = [], lazy_tensors()
    # (not the gradient backward() gave a tensor that did not ask for one, requires_grad None: an input's or an
    # intermediate's, which torch does not compute; it stays lazy, so a training step does not compute them all)
    if CHECK_LAZY_INDEX: _check_grad_index()
    with _registry_lock: holders = list(grad_holders)
    implicit = {id(t.grad) for r in holders if (t := r()) is not None and t.grad is not None and t.requires_grad is None}
    # (the lazy ones, of the devices asked for, are walked too: one that reads an old value is marked gone below)
    def lazy(u: UOp) -> bool: return any(base_buffer(s) is None for s in u.src) if u.op is Ops.MULTI else base_buffer(u) is None
    # (a graph that reads no target's buffer reads no old value nor an update (an assign's target is a buffer): it is not
    # walked. None: some update's target reads too many buffers to tell)
    tids: frozenset[int] | None = frozenset(id(b) for b in targets)
    for n in updates:
      if (r := buffers_reached(n.src[0])) is None or not r: tids = None
      elif tids is not None: tids |= r
    def may_read(u: UOp) -> bool: return tids is None or (r := buffers_reached(u)) is None or not tids.isdisjoint(r)
    implicit_lazy = [x for x in live if id(x) in implicit and not x._virtual and (multi is None or multi == (x.uop.op is Ops.MULTI))
                     and lazy(x.uop) and may_read(x.uop)] if implicit else []
    for x in live:
      if (u := x.uop).op is Ops.BUFFER or id(x) in implicit or u in roots or x._virtual or not may_read(u): continue
      if u.op is Ops.MULTI:
        if multi is False or smax(x.numel()) == 0: continue
        shards = list(u.src)
      elif multi is True: continue
      else: shards = [u]
      # a view follows its base (a pad that shows padding is a value of its own, as F.pad's copy)
      # (on several devices, a shard that a realize cut short computed is a buffer beside lazy ones: not a view)
      padded, views = False, 0
      for b in shards:
        chain = []
        while b.op in GroupOp.Movement:
          chain.append(b)
          b = b.src[0]
        padded = padded or _reached_padding(chain) is not None
        # (a pending update of another buffer is a reader too: `c += v + a` with v computed from a before a's update)
        if b.op is Ops.ASSIGN and (chain or b in updates) or b.op is Ops.MULTI: break
        # (not a view of a pad's value, `t.pad((1, 1))[1:-1]`: its chain reaches t's buffer, but it is a copy, as F.pad's)
        views += b.op is Ops.BUFFER and not padded and not _views_a_pad(x)
      else:
        # (a view across the shards, or of a tensor with a pending update: realized after it, as its view, _realize_multi)
        if views == len(shards) or u.op is Ops.MULTI and x._view_of is not None and not padded: continue
        if u.op is Ops.MULTI or smax(x.numel()) != 0: cands.append(x)
    # (the realize's own results too, for the parts of them that read old values, `d = w * 1; w += 1; d = w - d`: only
    # once their schedule could not be ordered, so that a realize pays for the walk of its graph only then)
    # (and the values of its updates: `y = x + 0; x[1:] += x[:-1]; x[1:] += y[:-1]` with y dead by then)
    own = [r for r in roots if r.op is not Ops.ASSIGN and r.op is not Ops.MULTI] + [u.src[1] for u in updates] \
      if frontier is not None and Tensor._own_parts else []
    if not cands and not own and not implicit_lazy: return []
    # 1: reads an old value, 2: reads an update, 4: an unbound Variable, 8: one in a movement op's argument (`x[:v]` of an
    # unbound v: it cannot run yet); set in the same pass (a toposort per candidate for the last was ~a tenth of a plain step)
    flags: dict[UOp, int] = {}
    # (a pending update of a target that this realize does not run counts as an update: run here, it could land after the
    # newer one)
    def leaf(u: UOp) -> int | None:
      if u.op is Ops.BUFFER: return 1 if u in targets else 0
      if u in updates or u.op is Ops.ASSIGN and base_buffer(u.src[0]) in targets: return 2
      return 4 if u.op is Ops.DEFINE_VAR else 0 if u.op is Ops.BIND else None
    # the realize's own graph, sources first, in one pass (the live graphs mostly share it: a decoder's residual stream)
    for u in nodes or ():
      if (lf := leaf(u)) is None:
        lf = 8 if u.op in _MOVEMENT and _unbound_in(u.arg) else 0
        for s in u.src: lf |= flags.get(s, 0)
      flags[u] = lf
    for top in [x.uop for x in cands + implicit_lazy] + own:
      stack = [top]
      while stack:
        u = stack[-1]
        if u in flags: stack.pop(); continue
        if (lf := leaf(u)) is not None:
          flags[u] = lf
          stack.pop()
          continue
        if pend := [s for s in u.src if s not in flags]:
          stack.extend(pend)
          continue
        f = 8 if u.op in _MOVEMENT and _unbound_in(u.arg) else 0
        for s in u.src: f |= flags[s]
        flags[u] = f
        stack.pop()
    out = [x for x in cands if flags[x.uop] == 1]
    # an implicit gradient that reads an old value is not computed now (every training step would compute each input's
    # gradient, unasked): it is marked gone, so that reading it later raises instead of giving a value computed from the
    # updated buffers (public tinygrad's is silently wrong there), and its graph is dropped (a reused input's implicit
    # gradient grew by a whole backward each step, and every realize walked it)
    for x in implicit_lazy:
      if flags[x.uop] & 1: x._mark_gone()
    # a view of a tensor computed here follows it, as a view of a buffer does (its base's _set_uop rebases it onto the new
    # buffer): computed into a copy of its own, it no longer saw its base's later writes (`s = t + t; v = s.flip(0);
    # t.assign(s).realize(); s += 1` left v at the old s). Not a pad that shows padding (a value, as F.pad's copy)
    # (the first of two tensors of one graph only: the second gets a copy of its value, and its views stay copies too)
    here: dict[UOp, int] = {}
    for x in out: here.setdefault(x.uop, id(x))
    out = [x for x in out if not ((vb := x._view_of) is not None and x.uop.op is not Ops.MULTI and (here.get(vb.uop) == id(vb) or vb.uop in roots)
                                  and _movement_chain(x.uop, vb.uop) is not None and not _shows_padding(x.uop, vb.uop))]
    if frontier is not None:
      # a graph that reads old and new values (a pending `b += a` where b was computed from a, and a's update runs here):
      # each part of it that reads only old values is computed here, before the writes, and the graph reads its buffer
      for top in [x.uop for x in cands] + own:
        if flags[top] != 3: continue
        for u in top.toposort(gate=lambda n: flags.get(n) == 3):
          if flags.get(u) != 3: continue
          for part in u.src:
            if flags.get(part) != 1 or part in frontier: continue
            pb = part
            while pb.op in GroupOp.Movement: pb = pb.src[0]
            # (an old buffer read as it is, or a view of it: a copy of its values)
            frontier[part] = part.copy_to_device(part.device) if pb.op is Ops.BUFFER else part
    from tinygrad.engine import realize as engine
    if out and (engine.capturing is not None or engine.observing is not None) and engine.call_outer is not None:
      outer = [x for x in out if (r := engine.call_outer.get(id(x))) is not None and r() is x and not any(n.op is Ops.ASSIGN for n in x.uop.toposort(gate=_above_buffers))]
      if outer:
        saved, engine.capturing, engine.observing = (engine.capturing, engine.observing), None, None
        try: Tensor.realize(*outer)
        finally: engine.capturing, engine.observing = saved
        if any(x._is_realized() for x in outer): return None
    return out
  @staticmethod
  def _jit_state(roots: dict[UOp, None], nodes: dict[UOp, None], kept: list[Tensor], multi: bool = False) -> list[Tensor]:
    # in a TinyJit function's first call: the tensors live before the call whose lazy graph it reads (its own state, never
    # an argument: `b = Tensor.arange(4).float()`, `Tensor.full(...)`, `w_realized + 1`) are realized as results too and
    # become buffers. Left lazy, the capture computed them inside its kernels, and a later write into one
    # (`b.assign(...)`, `b += 1`, which take a lazy tensor's new value as a graph of its own) never reached a replay: it
    # replayed the old value. Not a node two tensors hold (one buffer would alias them), nor an autograd leaf
    from tinygrad.engine import realize as engine
    holders: dict[UOp, list[Tensor]] = {}
    mine = {t.uop for t in kept}
    devices = {n.arg for n in nodes if n.op is Ops.DEVICE and isinstance(n.arg, str)}
    for ref in (engine.call_outer or {}).values():
      if (t := ref()) is None or t.uop in roots or t.uop in mine or t.requires_grad is True: continue
      # (a multi-device tensor is read per shard: the graph holds its shards' nodes)
      if t.uop not in nodes and not (t.uop.op is Ops.MULTI and any(x in nodes for x in t.uop.src)): continue
      if t.uop.op in (Ops.BUFFER, Ops.ASSIGN) or t._is_realized() or t._virtual or t._views_a_buffer(): continue
      if t.uop.op is Ops.MULTI and (not multi or any(s.op is Ops.ASSIGN for s in t.uop.src)): continue   # (multi: _realize_multi's)
      # a graph of constants the call reads on other devices too (llama3's Int8Embedding's arange, compared with sharded
      # token ids) stays one: realized, it was data on its own device, and the next call's comparison raised
      if _computed_anywhere(t.uop) and any(_on_device(t.uop, d) in nodes for d in devices - {t.device}):
        if engine.call_consts is not None: engine.call_consts.append((ref, t.uop))   # (a replay checks it is unchanged)
        continue
      if smax(t.numel()) > 0: holders.setdefault(t.uop, []).append(t)
    # (not a view, which follows its base, nor a value of a pending update: both are the function's writes, not state)
    return [ts[0] for ts in holders.values() if len(ts) == 1 and ts[0]._view_of is None and
            not any(n.op is Ops.ASSIGN for n in ts[0].uop.toposort(gate=_above_buffers))]
  @staticmethod
  def _live_contiguous(roots: dict[UOp, None], nodes: dict[UOp, None]) -> list[Tensor]:
    # live tensors whose graph is an unrealized CONTIGUOUS inside `roots` (a transformer block's output that the layer's
    # KV-cache assign needs): the schedule computes it anyway, so it is realized as a result too and the tensor becomes its
    # buffer; else every later graph that reads the tensor computes it again (layer k's cache write recomputed layers
    # 0..k-1). Not where autograd may need the lazy graph (the stand-in for a realized tensor lives only with the tensor),
    # and not a node two tensors hold (one buffer for both would alias them). `nodes`: the roots' graph. Only a graph with
    # such a node walks the live tensors (a walk costs ~0.4 ms per 1000 live tensors, on every realize)
    if not any(n.op in (Ops.CONTIGUOUS, Ops.COPY) and n not in roots for n in nodes): return []
    holders: dict[UOp, list[Tensor]] = {}
    for x in lazy_tensors():
      if x.uop.op in (Ops.CONTIGUOUS, Ops.COPY) and x.uop not in roots: holders.setdefault(x.uop, []).append(x)
    if not holders: return []
    # a copy taken before an update in the same graph (`prev = w.clone(); w += 1; w - prev`) is kept whatever autograd
    # would like: computing it again later would read the updated buffer, giving the tensor a second value
    targets = {base_buffer(n.src[0]) for n in nodes if n.op is Ops.ASSIGN} - {None}
    def reads_target(u: UOp) -> bool: return bool(targets) and any(x in targets for x in u.toposort(gate=lambda x: x.op is not Ops.BUFFER))
    return [ts[0] for u, ts in holders.items() if u in nodes and len(ts) == 1 and
            (Tensor.no_grad or ts[0].requires_grad is False or not dtypes.is_float(ts[0].dtype) or reads_target(u))]
  @staticmethod
  def _live_intermediates(held: dict[UOp, UOp], roots: list[UOp], nodes: dict[UOp, None]) -> dict[UOp, UOp]:
    # node -> buffer, of the intermediate results of a realize (`held`: kernel outputs whose buffers still hold their values)
    # that every live graph may read instead of computing them again (the queries' x @ w, which the KV-cache write computed):
    # _live_contiguous's rules, for nodes no tensor need hold. Not where autograd may need the lazy graph (a live float
    # tensor with requires_grad not False below the node), unless the node reads a buffer an assign of the same graph
    # overwrites (computed again, it would give a second value). A tensor whose graph is the node under reshapes becomes a
    # realized tensor of that buffer (its _graph keeps the node), and an assign into it writes the buffer: only one such
    # tensor, with its own views, may hold it, else the buffer would alias two tensors. `nodes`: the roots' graph.
    # (not a buffer under movement ops: a view of it follows it, and reads the buffer as it is then; the copy a value that
    # reads its target elsewhere, `x.assign(x.flip(0))`, computes holds the old values, which x[2:0:-1] then showed)
    held = {n: b for n, b in held.items() if n.op is not Ops.ASSIGN and n not in roots and not _views_buffer(n)}
    if not held: return {}
    live = live_tensors()
    holders: dict[UOp, list[Tensor]] = {}
    for x in live:
      for b in x.uop.src if x.uop.op is Ops.MULTI else (x.uop,):
        while b not in held and b.op is Ops.RESHAPE: b = b.src[0]   # (the held node may be a reshape itself: a view's shard)
        if b in held: holders.setdefault(b, []).append(x)
    grad_nodes = set() if Tensor.no_grad else {x.uop for x in live if x.requires_grad is not False and dtypes.is_float(x.dtype)}
    targets = {base_buffer(n.src[0]) for n in nodes if n.op is Ops.ASSIGN} - {None}
    # per node, sources first (one pass: a walk below every held node is quadratic in a training step's graph)
    grad_below: dict[UOp, bool] = {}
    reads_target: dict[UOp, bool] = {}
    for u in nodes:
      grad_below[u] = bool(grad_nodes) and any(s in grad_nodes or grad_below.get(s, False) for s in u.src)
      reads_target[u] = u in targets or any(reads_target.get(s, False) for s in u.src)
    out: dict[UOp, UOp] = {}
    for n, buf in held.items():
      hs = holders.get(n, [])
      heads = [x for x in hs if x._view_of is None]
      if hs and (len(heads) != 1 or any(x.uop.op is Ops.MULTI or x is not heads[0] and x._view_of is not heads[0] for x in hs)): continue
      if dtypes.is_float(n.dtype) and grad_below.get(n, True) and not reads_target.get(n, False): continue
      for x in hs:
        if x.requires_grad is not False and dtypes.is_float(x.dtype): x._graph = x.uop
      out[n] = buf
    return out
  def numpy(self) -> Any:
    """The data as a numpy array (realizes the tensor; bfloat16 and the fp8 dtypes come back as float32)."""
    import numpy as np
    bf16 = (dt := self.dtype) is dtypes.bfloat16 or dt == dtypes.bfloat16
    npdt = np.float32 if dt in NO_NUMPY else _numpy_dtype(dt)
    shape = self._concrete_shape()
    if (n := prod(shape)) == 0: return np.zeros(shape, dtype=npdt)
    raw = self._host_bytes()
    if bf16: arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    elif dt in dtypes.fp8s: arr = _fp8_table(dt)[np.frombuffer(raw, dtype=np.uint8)]   # each byte's value
    else: arr = np.frombuffer(raw, dtype=npdt).copy()
    return (arr if arr.size == n else arr[:n]).reshape(shape)   # a symbolic shape's buffer holds its largest size
  def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
    # np.asarray(t), np.testing.assert_allclose(t, ...): the data, as numpy() (numpy read a tensor as a sequence of lazy 0-d
    # tensors: an object array)
    if copy is False: raise ValueError("a Tensor's data is copied to the host: np.asarray(t, copy=False) cannot share it")
    return self.numpy() if dtype is None else self.numpy().astype(dtype)
  def _concrete_shape(self) -> tuple[int, ...]:
    # the shape with its bound variables' values (a symbolic shape is only readable once bound)
    if all_int(self.shape): return self.shape
    try: return tuple(sym_infer(s, {}) for s in self.shape)
    except KeyError as e: raise ValueError(f"the shape {shape_str(self.shape)} has an unbound variable ({e}): bind it to read the data") from None
  @engine_locked
  def _host_bytes(self, snapshot: bool = False) -> memoryview:
    # snapshot: bytes of their own, never a host view of the buffer (CPU's, PYTHON's zero-copy as_buffer), which the next
    # write into the tensor, or a new tensor reusing the freed memory, would change under the caller
    from tinygrad.engine import realize as engine
    if engine.capturing is not None:
      raise engine.JitError("a TinyJit function read tensor data into Python (numpy/tolist/item/data) while being captured: "
                     "that value would not change on replay; return the tensor from the jitted function instead")
    # a view is read through a copy: realizing it would make it a tensor of its own, no longer writing into its base nor
    # seeing the base's writes (also a view of a lazy computation: `v = (x * 2)[::-1]; v.numpy(); v += 1` must write x * 2)
    if all_int(self.shape) and prod(self.shape) == 0: return memoryview(bytearray(0))   # (nothing to realize: an empty view)
    if is_disk(self.device):
      from tinygrad.mixin.disk import disk_bytes
      return disk_bytes(self)
    if self.uop.op is Ops.MULTI: return self.to(self.device[0])._host_bytes(snapshot)   # gathered onto the first device (see _assigned_with)
    b = reshape_base(self.uop)
    # a realized buffer (the usual read, as a jitted call's outputs): its bytes, with nothing to realize
    if b.op is Ops.BUFFER and not self._virtual and has_buffer(b) and (buf := buffer_of(b)).is_allocated(): return _host_view(buf, snapshot)
    while b.op in GroupOp.Movement: b = b.src[0]
    t = Tensor(self.uop) if self._virtual or self._view_of is not None and not self._is_realized() else self
    t.realize()
    base = base_buffer(t.uop)
    if base is None: raise RuntimeError(f"realize left {t.uop.op}, not a buffer")
    # a copy's bytes are copied out while it lives: the view of its memory outlived it, and another thread's next buffer
    # (the allocator hands freed memory out again) overwrote what numpy() was about to read
    return _host_view(buffer_of(base), snapshot) if t is self else memoryview(bytearray(buffer_of(base).as_buffer()))
  def tolist(self) -> Any:
    """The data as (nested) Python lists; a 0-d tensor gives a Python scalar."""
    if self.dtype.fmt is None or self.dtype.fmt not in "?bBhHiIqQfd" or not all_int(self.shape) or self.numel() == 0: return self.numpy().tolist()
    # through memoryview, without numpy: keeps a first result from paying numpy's import
    flat = self._host_bytes().cast(self.dtype.fmt).tolist()  # type: ignore[call-overload]
    if not self.shape: return flat[0]
    for n in reversed(self.shape[1:]): flat = [flat[i:i+n] for i in range(0, len(flat), n)]
    return flat
  def item(self) -> ConstType:
    """The value of a one-element tensor as a Python scalar."""
    if self.numel() != 1: raise AssertedArgumentError(f"item() needs a tensor with exactly one element, got shape {self.shape}")
    return self.numpy().reshape(()).item()
  def data(self) -> memoryview:
    """A copy of the realized bytes as a memoryview (later writes to the tensor do not show in it), cast to the dtype's struct
    format when it has one that memoryview takes: of the tensor's shape (a 0-d tensor's is 0-d), or 1-d of length 0 for an
    empty tensor (a memoryview's shape holds no zeros). bfloat16 and fp8 (no struct format), and float16 where Python's
    memoryview cannot cast to 'e' (3.11 cannot), give the plain bytes: `.numpy()` reads their values."""
    # a bound symbolic shape reads as its values: the buffer holds the largest size (it raised TypeError, and a bfloat16 one
    # gave the bytes past the elements too)
    shape = self._concrete_shape()
    mv = self._host_bytes(snapshot=True)[:prod(shape) * self.dtype.itemsize]   # (as public tinygrad's: not the live memory)
    if self.dtype.fmt is None or not _memoryview_takes(self.dtype.fmt): return mv
    if prod(shape) == 0: return mv.cast(self.dtype.fmt)  # type: ignore[call-overload]
    return mv.cast(self.dtype.fmt, shape)  # type: ignore[call-overload]
  @engine_locked
  def schedule(self, *lst: Tensor) -> list:
    """The kernels (ExecItems) that realizing this tensor (and `lst`) would run, without running them."""
    from tinygrad.engine.schedule import create_schedule
    return create_schedule([t.uop for t in (self,) + lst])[0]
  @engine_locked
  def linear_with_vars(self, *lst: Tensor) -> tuple[UOp, dict[str, int]]:
    """The steps that realize self (and `lst`), not run yet: public tinygrad's LINEAR UOp, one CALL per kernel or copy (its
    src: the kernel's SINK or the COPY, then its buffers, output first), and the bound Variables' values by name. As in
    public tinygrad, each tensor is its result buffer from now on, and the buffers are filled when
    `tinygrad.engine.realize.run_linear(linear, var_vals)` runs the steps: run them before reading any of these tensors."""
    from tinygrad.engine import realize as engine
    if engine.recording is not None: raise RuntimeError("linear_with_vars cannot be called while another one schedules")
    calls: list[UOp] = []
    engine.recording = calls
    try: Tensor.realize(self, *lst)
    finally: engine.recording = None
    return UOp(Ops.LINEAR, src=tuple(calls)), {v.arg[0]: x for c in calls for v, x in c.arg}
  def schedule_linear(self, *lst: Tensor) -> UOp:
    """linear_with_vars' LINEAR, for a graph without bound Variables (a ValueError names them otherwise)."""
    linear, var_vals = self.linear_with_vars(*lst)
    if var_vals: raise ValueError(f"the schedule has bound Variables {sorted(var_vals)}: use linear_with_vars, which returns their values")
    return linear

  # ---- autograd (tinygrad/gradient.py) ----
  def backward(self, gradient: Tensor | None = None) -> Tensor:
    """Accumulate d(self)/dx into `.grad` of every tensor x with requires_grad that self depends on. Returns self."""
    from tinygrad.gradient import backward
    return backward(self, gradient)
  def gradient(self, *targets: Tensor, gradient: Tensor | None = None, materialize_grads: bool = True) -> list[Tensor]:
    """The gradients of self with respect to `targets`, as new lazy tensors: zeros for a target self does not depend on
    (as public tinygrad), or a RuntimeError with materialize_grads=False."""
    from tinygrad.gradient import gradient as grad_fn
    return grad_fn(self, *targets, gradient=gradient, materialize_grads=materialize_grads)
  @staticmethod
  def train(mode: bool = True) -> Any:
    """`with Tensor.train():` sets Tensor.training inside (also a decorator)."""
    from tinygrad.gradient import train
    return train(mode)
  @staticmethod
  def test(mode: bool = False) -> Any:
    """`with Tensor.test():` clears Tensor.training inside."""
    from tinygrad.gradient import test
    return test(mode)

  def contiguous(self) -> Tensor:
    """A tensor that is realized into its own buffer when computed (a kernel boundary)."""
    return Tensor(UOp(Ops.CONTIGUOUS, self.dtype, (self.uop,)))
  def custom_kernel(self, *lst: Tensor, fxn: Callable, grad_fxn: Callable | None = None) -> list[Tensor]:
    """Run a kernel written in UOps on the buffers of self and `lst`; returns each of them as it is after the kernel ran
    (the kernel writes its outputs into them in place: pass `Tensor.empty_like(x)` for a fresh output). `fxn` gets one
    placeholder per tensor (its shape and dtype; index it, store into it) and returns the kernel's SINK: stores ended over
    their ranges. `grad_fxn(gradient, kernel)` (several outputs with a gradient: `grad_fxn(*gradients, call=kernel)`)
    returns one gradient (a UOp, or None) per tensor, `kernel.src[1:]` being the tensors. Public tinygrad's alpha API."""
    return [Tensor(u) for u in UOp.custom_kernel(*[t.uop for t in (self,) + lst], fxn=fxn, grad_fxn=grad_fxn)]
  def contiguous_backward(self) -> Tensor:
    """The same tensor in the forward pass (no kernel); in the backward pass its gradient is made contiguous (a kernel
    boundary), as public tinygrad's CONTIGUOUS_BACKWARD: a DETACH tagged so that autograd passes through it."""
    from tinygrad.gradient import CONTIGUOUS_BACKWARD
    return Tensor(UOp(Ops.DETACH, self.dtype, (self.uop,), tag=CONTIGUOUS_BACKWARD))
  def detach(self) -> Tensor:
    """The same values, with gradients stopped: no gradient flows through it into self. Used as a leaf it gets its own
    `.grad` like any float tensor (public tinygrad's rule; torch's detach() sets requires_grad=False instead). A view, as
    in torch: assigning into it writes into self."""
    return self._mv(lambda u: UOp(Ops.DETACH, u.dtype, (u,)))
  def _own(self, *srcs: Tensor) -> Tensor:
    """Self, or a value of its own where it came out as (a view of) a source's data: an op torch defines as a new tensor
    (sum over axes of size 1, roll by 0, cat of one tensor, repeat by ones, sort of one element) that is a no-op here.
    Shared, an in-place write into either would show in the other, and a realized one would alias the source's buffer.
    A lazy graph is taken as it is, by a tensor that is no view (realized, it gets a buffer of its own); over a buffer or a
    pending assign (realized, both are the target buffer) it gets a `* 1` node (folded away in the kernel)."""
    def roots(u: UOp) -> list[UOp]:   # (a multi-device tensor's: one per shard)
      out = []
      for s in u.src if u.op is Ops.MULTI else (u,):
        while s.op in GroupOp.Movement: s = s.src[0]
        out.append(s)
      return out
    mine = roots(self.uop)
    if not any(self is s or len(r := roots(s.uop)) == len(mine) and all(a is b for a, b in zip(mine, r)) for s in srcs): return self
    if all(r.op not in (Ops.BUFFER, Ops.ASSIGN) for r in mine): return Tensor(self.uop)
    return self._copy_node()
  def _copy_node(self) -> Tensor:
    # the same values as a node of its own over self (folded away in the kernel)
    return self.bitwise_or(False) if self.dtype == dtypes.bool else self * 1
  def clone(self, device: str | tuple[str, ...] | None = None) -> Tensor:
    """A copy in a new buffer, on this tensor's device or on `device`, with a copy of `.grad` when it has one."""
    dev = self.device if device is None else _canon_device(device)
    if is_disk(self.device):
      # a copy on the file itself would be the file: later writes into either showed in the other (a view of it raised)
      if dev == self.device: raise ValueError(f"clone of a {self.device} tensor: a copy needs another device or file, e.g. clone('CPU')")
      # a file is read at once, as to() reads it (docs/guide.md): a lazy copy read the file when realized, after later writes
      from tinygrad.mixin.disk import disk_read
      ret = disk_read(self, dev) if isinstance(dev, str) else disk_read(self, dev[0]).shard(dev)   # (several devices: replicated)
    else:   # numbered: two clones of one tensor are two nodes (hash-consed into one, both got the sum of their gradients)
      ret = Tensor(UOp(Ops.COPY, self.dtype, (self.uop, UOp(Ops.DEVICE, arg=dev)), tag=("clone", next(_clone_ids))))
    if self.grad is not None:
      ret.grad = self.grad.clone(device)
      _note_grad(ret)
    return ret
  def to(self, device: str | None) -> Tensor:
    """This tensor on `device` (a COPY when it differs)."""
    dev = _canon_device(device)
    if dev == self.device: return self
    if is_disk(self.device):   # a file's bytes (or a view of them) read now: the DISK device runs no kernels
      from tinygrad.mixin.disk import disk_read
      return disk_read(self, dev)
    if is_disk(dev):   # written into the file now, from its start (public tinygrad's copy to a disk tensor)
      return Tensor.empty(*self.shape, dtype=self.dtype, device=dev).assign(self)
    return Tensor(UOp(Ops.COPY, self.dtype, (self.uop, UOp(Ops.DEVICE, arg=dev))))
  def to_(self, device: str | None) -> Tensor:
    """Move this tensor (and its .grad) to `device` in place; it no longer writes into a tensor it was a view of. Returns self."""
    dev = _canon_device(device)
    if dev == self.device: return self
    def mv(u: UOp) -> UOp: return UOp(Ops.COPY, u.dtype, (u, UOp(Ops.DEVICE, arg=dev)))
    if self.grad is not None:
      self.grad = self.grad.to(dev)
      _note_grad(self)
    self._detach_view()
    was_realized, graph, at = self._is_realized(), self._graph, self._kept_at
    self._set_uop(mv(self.uop))
    if was_realized: self.realize()   # moved now: a realized tensor stays realized (and a later realize keeps the graph below)
    if graph is not None: self._kept, self._kept_at = mv(graph), at   # backward still reaches the tensors it was computed from
    return self
  def shard_(self, devices: Sequence[str], axis: int | None = None) -> Tensor:
    """shard() in place (for parameters: an optimizer made afterwards steps the sharded tensor); its .grad follows. Returns self."""
    from tinygrad.multi import to_layout
    from tinygrad.mixin.common import _canon_device as canon
    devs, ax = canon(tuple(devices)), None if axis is None else self._resolve_dim(axis)
    if self.uop.op is Ops.MULTI:
      self.shard(devs, ax)   # already laid out so: nothing to do (another layout raises, as shard does)
      return self
    if isinstance(devs, str): return self.to_(devs)   # one device: a move, as shard
    if self.grad is not None:
      self.grad = Tensor(to_layout(self.grad.uop, devs, ax))
      _note_grad(self)
    self._detach_view()
    was_realized, graph, at = self._is_realized(), self._graph, self._kept_at
    self._set_uop(to_layout(self.uop, devs, ax))
    if was_realized: self.realize()
    if graph is not None: self._kept, self._kept_at = to_layout(graph, devs, ax), at
    return self
  @property
  def is_param(self) -> bool:
    """Whether an optimizer trains this tensor (public tinygrad's name for requires_grad not False; default True): False marks
    a buffer (running statistics, counters) that optimizers keep apart and never update."""
    return self.requires_grad is not False
  @is_param.setter
  def is_param(self, value: bool) -> None: self.requires_grad = bool(value)
  def is_param_(self, is_param: bool = True) -> Tensor:
    """Set is_param in place (True: requires_grad=True, False: requires_grad=False). Returns self."""
    self.is_param = is_param
    return self
  def size(self, dim: int | None = None) -> int | tuple[int, ...]:
    """torch's size(): the shape, or the size of dimension `dim` (negative counts from the end)."""
    return self.shape if dim is None else self.shape[self._resolve_dim(dim)]
  @staticmethod
  def from_blob(ptr: int, shape: tuple[int, ...] | int, dtype: DType | str | None = None, device: str | None = None, **kwargs: Any) -> Tensor:
    """A tensor holding the prod(shape) elements of `dtype` (float32 by default) at host address `ptr`. Unlike public
    tinygrad, which wraps the memory without a copy (the pointer must outlive the tensor), the data is copied at the call:
    later writes to the memory are not seen, and freeing it afterwards is safe."""
    import ctypes
    sh, dt = _check_shape("from_blob", (shape,) if isinstance(shape, int) else tuple(shape)), to_dtype(dtype) if dtype is not None else dtypes.default_float
    if not isinstance(ptr, int) or isinstance(ptr, bool) or ptr <= 0: raise ValueError(f"from_blob: ptr must be a host address (an int > 0), got {ptr!r}")
    raw = ctypes.string_at(ptr, prod(sh) * dt.itemsize)
    return Tensor(Tensor._from_bytes(raw, sh, dt, _canon_device(device)) if prod(sh) else Tensor._full_uop(sh, 0, dt, _canon_device(device)), **kwargs)
  def _mark_gone(self) -> None:
    # this lazy tensor's value can no longer be computed: in place of its graph, a node with its shape, dtype and device
    # that the scheduler refuses with this message (schedule.gone)
    shape = ", ".join(str(d) if isinstance(d, int) else d.render() for d in self.shape) + "," * (self.ndim == 1)
    why = (f"this {self.dtype.name} tensor of shape ({shape}) is the gradient backward() gave a tensor that did not ask for "
           "one (requires_grad=None), and an update (an optimizer step, an assign) overwrote values it reads before it was "
           "computed: its value is gone. Read it before the update, or set requires_grad=True on the tensor it belongs to "
           "(the update then computes it first)")
    self._detach_view()
    graph_epoch[0] += 1
    from tinygrad.engine.schedule import gone
    z = self.zeros_like().uop   # (sharded like it: one per shard)
    self.uop = UOp(Ops.MULTI, z.dtype, tuple(gone(s, why) for s in z.src), z.arg) if z.op is Ops.MULTI else gone(z, why)
    _relazy(self)
  def replace(self, x: Tensor) -> Tensor:
    """This tensor now holds `x`'s data (its graph: dtype and device may differ; only the shapes must match), without a
    copy or a kernel. Unlike `assign`, nothing is written into this tensor's old buffer: its other views keep the old data."""
    if not isinstance(x, Tensor): raise TypeError(f"replace needs a Tensor, got {type(x).__name__}; use assign for a value")
    if self.shape != x.shape: raise ValueError(f"replace: shape {x.shape} != this tensor's {self.shape}; reshape it first")
    self._detach_view()
    graph_epoch[0] += 1
    self.uop = x.uop
    _relazy(self)
    return self
  def assign(self, x: Tensor | ConstType | list) -> Tensor:
    """Write `x` into this tensor (in place into its buffer when it is realized). Returns self.

    A view (slices, reshape, permute, flip, shrink, a view of a view) writes into the tensor it views: that tensor and every
    view of it see the new values. A broadcast (expanded) view, or one reaching into padding, cannot be written: an error."""
    if is_disk(self.device):   # written into the file now (from any device)
      from tinygrad.mixin.disk import disk_write
      disk_write(self, x)
      return self
    if not isinstance(x, Tensor): x = Tensor(x, device=self.device, dtype=self.dtype)
    if x.device != self.device and _is_const(x.uop) and isinstance(self.device, str): x = Tensor(_on_device(x.uop, self.device))   # no buffer to move, as in binary ops
    if x.device != self.device: raise ValueError(f"assign: value is on {x.device}, target on {self.device}; use .to({self.device!r})")
    if x.dtype != self.dtype: raise ArgumentError(f"assign dtype mismatch: value {x.dtype} != target {self.dtype}; cast it first (assign never casts: it could lose precision)")
    if x.shape != self.shape:
      try: x = x._broadcast_to(self.shape)
      except ValueError: raise ValueError(f"assign: value shape {x.shape} does not fit target shape {self.shape}") from None
    if x is self or x.uop is self.uop: return self
    base = self._view_of
    if (src := self._bits_of if self._bits_of is not None else base._bits_of if base is not None else None) is not None:
      raise RuntimeError(f"assign: this tensor is a copy of the bits of a {src.dtype} tensor (a bitcast to another item size), not a view of "
                         f"it: writing into it would not change that tensor; write the value's bits there instead, "
                         f"src.assign(value.bitcast(src.dtype))")
    # a view of no elements writes nothing (into a sharded base it made copies between shards that assigned each other)
    if base is not None and any(isinstance(d, int) and d == 0 for d in self.shape): return self
    # a pending update that another live tensor reads runs now, so that tensor keeps the value it was built from, as in
    # torch: left pending, it either ran later for that tensor, over this update (`b.assign(x); s = b.sum(); b.assign(y)`),
    # or ran with this one and the reader read the buffer after both (`w += 1; t = w * 2; w += 1`, t realized after w); the
    # next realize computes the reader before it overwrites the buffer. An update only `x` reads stays pending (one chain)
    tgt = self if base is None else base
    if not tgt._is_realized(): tgt._state_buffer()
    pend = [u for u in (tgt.uop.src if tgt.uop.op is Ops.MULTI else (tgt.uop,)) if u.op is Ops.ASSIGN]
    if pend and Tensor._read_by_others(pend, tgt, x):
      tgt.realize()
      pend = []
    # the value itself reads that update (`w += 1; y = w + 1; w.assign(y)`): once both ran, the update reads as the buffer,
    # which holds this assign's value by then (y gave 4, torch 3). y is that value: it becomes a copy of what is written.
    # (not the target itself, `v.assign(x)` into a view v of x, nor a view: one of the target follows it, as it should; one of
    # another tensor that reads the update was realized above)
    keep = bool(pend) and x is not tgt and x._view_of is None and base_buffer(x.uop) is None and Tensor._reads_any(x.uop, set(pend))
    self._write_value(base, x)
    if keep: x._set_uop(self.contiguous().uop)
    return self
  @staticmethod
  def _reads_any(u: UOp, nodes: set[UOp], seen: set[UOp] | None = None) -> bool:
    # whether graph `u` has one of `nodes` in it (a walk that stops at buffers); `seen`, shared by several walks, skips the
    # nodes an earlier one found free of them
    stack, seen = [u], set() if seen is None else seen
    while stack:
      if (n := stack.pop()) in nodes: return True
      if n in seen or n.op is Ops.BUFFER: continue
      seen.add(n)
      stack.extend(n.src)
    return False
  def _state_buffer(self) -> None:
    # a TinyJit function's own state (a tensor live before the call) that is still lazy, `w = Tensor.zeros(4).contiguous()`,
    # gets its buffer before the call writes it, outside the call's kernels: written lazily it took the new value as a graph
    # of its own, which the capture baked in (its replays computed zeros + x each time: w was 2 after every later call)
    from tinygrad.engine import realize as engine
    if engine.call_outer is None or (r := engine.call_outer.get(id(self))) is None or r() is not self: return
    if any(u.op is Ops.ASSIGN for u in (self.uop.src if self.uop.op is Ops.MULTI else (self.uop,))): return
    saved, engine.capturing, engine.observing = (engine.capturing, engine.observing), None, None
    try: self.realize()
    finally: engine.capturing, engine.observing = saved
  def _write_value(self, base: Tensor | None, x: Tensor) -> None:
    if base is None:
      self._assign_whole(x.uop)
      return
    if base.uop.op is Ops.MULTI:
      base._assign_whole(self._unview_multi(base, x))
      return
    # a realized base is written through its buffer (a realized view may hold that buffer under another reshape)
    buf = base_buffer(base.uop)
    target = buf if buf is not None else base.uop
    chain = _movement_chain(self.uop, target)
    if chain is None: raise RuntimeError(f"assign: this view (shape {self.shape}) lost track of the tensor it views (shape {base.shape}); "
                                         "assign into that tensor with setitem instead")
    base._assign_whole(_unview(chain, x, Tensor(target)).reshape(base.shape).uop)
  @staticmethod
  def _read_by_others(nodes: list[UOp], me: Tensor, value: Tensor) -> bool:
    # whether a live tensor other than `me` (or its views) and the `value` written into it has one of `nodes` in its graph
    want, seen = set(nodes), set[UOp]()
    return any(Tensor._reads_any(t.uop, want, seen) for t in lazy_tensors() if not (t is me or t._view_of is me or t is value))
  def _unview_multi(self, base: Tensor, x: Tensor) -> UOp:
    # a view of a multi-device tensor whose every shard is a view of the base's shard on its device: each shard of the base
    # takes the part of x its view shows (x laid out like the view first); a view that gathered shards has no such chains
    from tinygrad.multi import multi, relayout
    v = self.uop
    tgts = [b if (b := base_buffer(s)) is not None else s for s in base.uop.src]
    chains = [_movement_chain(vs, t) for vs, t in zip(v.src, tgts)] if v.op is Ops.MULTI and len(v.src) == len(tgts) else [None]
    # a view that gathered shards: its logical movement ops, inverted over the whole (multi-device) tensor, then laid out as
    # its shards
    if any(c is None for c in chains) and (chain := self._whole_chain(base)) is not None: return relayout(_unview(chain, x, base).uop, base.uop)
    if any(c is None for c in chains):
      raise NotImplementedError(f"assign into this view (shape {self.shape}) of a multi-device tensor (shape {base.shape}, {base.device}) "
                                "moves elements between its shards; write it with setitem, `t[index] = value` (an in-place op on such a view, as "
                                "`t[index] += 1`, is `t[index] = t[index] + 1`), or assign the whole tensor, e.g. t.assign(mask.where(value, t))")
    xv = relayout(x.uop, v)
    parts = [_unview(c, Tensor(xs), Tensor(t)).reshape(bs.shape).uop for c, xs, t, bs in zip(chains, xv.src, tgts, base.uop.src) if c is not None]
    return multi(parts, base.uop.arg)
  def _assign_whole(self, v: UOp) -> None:
    if self.uop.op is Ops.MULTI and (self._is_realized() or all(s.op is Ops.ASSIGN for s in self.uop.src)):
      # per shard: into its buffer (a pending assign's target again)
      tgt = UOp(Ops.MULTI, self.dtype, tuple(s.src[0] if s.op is Ops.ASSIGN else s for s in self.uop.src), self.uop.arg)
      new = UOp(Ops.ASSIGN, self.dtype, (tgt, v))
    elif self._is_realized(): new = UOp(Ops.ASSIGN, self.dtype, (self.uop, v))
    elif self.uop.op is Ops.ASSIGN: new = UOp(Ops.ASSIGN, self.dtype, (self.uop.src[0], v))
    # nothing else can see an unrealized tensor's buffer: take the value; a buffer or a pending assign (`b.assign(c)`, also
    # per shard) as a value of its own, else both tensors held c's buffer and a write into either showed in the other
    else:
      # a multi-device tensor with views keeps its layout: they are made again from their movement ops, which may not
      # divide over the value's shards (a reshape of a replicated tensor, then a value split on axis 0: "moves items")
      if self.uop.op is Ops.MULTI and v.op is Ops.MULTI and self._views and any(w._replay is not None for w in self._views.values()):
        from tinygrad.multi import relayout
        v = relayout(v, self.uop)
      new = Tensor(v)._own(Tensor(v)).uop
    olds, kept, kept_at = (self.uop.src if self.uop.op is Ops.MULTI else (self.uop,)), self._kept, self._kept_at
    if prev := [s for s in olds if s.op is Ops.ASSIGN]:
      from tinygrad.gradient import SUPERSEDED   # (pending assigns this one replaces: a gradient reads them as their values)
      SUPERSEDED.update(prev)
    self._graph = None
    self._set_uop(new, write=True)
    # until it runs, the target's buffer holds the old value, and backward reaches the graph that was computed from through
    # it (y = (x * 2).realize(); y += x: d/dx was 1, not 3); a second pending assign reads the first, the same old value
    from tinygrad.gradient import ASSIGNED_OVER
    news = self.uop.src if self.uop.op is Ops.MULTI else (self.uop,)
    for a, o, g in zip(news, olds, (kept.src if kept.op is Ops.MULTI else (kept,)) if kept is not None else (None,) * len(olds)):
      if a.op is not Ops.ASSIGN: continue
      if g is not None and a.src[0] is o: ASSIGNED_OVER[a] = (o, g, kept_at)
      elif (rec := ASSIGNED_OVER.get(o)) is not None: ASSIGNED_OVER[a] = rec
    # a gradient through it that reads the value it overwrites reads a copy (gradient.save_old_value)
    if grad_leaves and self._requires_grad is None and not Tensor.no_grad and dtypes.is_float(self.dtype):
      from tinygrad.gradient import save_old_value
      for a, o in zip(news, olds):   # (per shard on several devices)
        if a.op is Ops.ASSIGN: save_old_value(a, o)
    # (an assign into a multi-device tensor is built as one ASSIGN per shard)
    if new.op is Ops.ASSIGN or (new.op is Ops.MULTI and all(s.op is Ops.ASSIGN for s in new.src)):
      pending_assigns[(threading.get_ident(), id(self))] = self

  # ---- creation ----
  @staticmethod
  def empty(*shape: Any, device: str | tuple[str, ...] | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """An allocated, uninitialized tensor."""
    if isinstance(device, (tuple, list)) and isinstance(device := _canon_device(device), tuple):   # one empty tensor per device, replicated
      from tinygrad.multi import multi
      return Tensor(multi([Tensor.empty(*shape, device=d, dtype=dtype).uop for d in device], None), **kwargs)
    sh, dt, dev = _check_shape("empty", argfix(*shape)), to_dtype(dtype) if dtype is not None else dtypes.default_float, _canon_device(device)
    if smax(prod(sh)) == 0: return Tensor(Tensor._full_uop(sh, 0, dt, dev), **kwargs)
    u = new_buffer(dev, smax(prod(sh)), dt)   # a symbolic shape gets room for its largest size
    buffer_of(u).allocate()
    from tinygrad.engine.schedule import buffer_view
    return Tensor(buffer_view(u, sh), **kwargs)
  @staticmethod
  def full(shape: tuple[sint, ...] | sint, fill_value: ConstType, dtype: DType | str | None = None, device: str | None = None,
           buffer: bool = True, **kwargs: Any) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (a broadcast constant: no buffer until realized). With buffer=False it
    stays a constant: realize() gives it no buffer (reading it computes the values; it cannot be assigned into in place)."""
    if not buffer:
      ret = Tensor.full(shape, fill_value, device=device, dtype=dtype, **kwargs)
      ret._virtual = True
      return ret
    sh = _check_shape("full", (shape,) if isinstance(shape, (int, UOp)) else tuple(shape))
    if isinstance(fill_value, UOp):   # a bound Variable (or an expression of them): its value, broadcast
      v = Tensor(fill_value, device=device, dtype=dtype)
      return Tensor(v.uop.reshape((1,) * len(sh)).expand(sh), **kwargs)
    dt = to_dtype(dtype) if dtype is not None else dtypes.from_py(fill_value)
    _check_int(fill_value, dt, "pass a wider dtype=, e.g. dtypes.int64")
    return Tensor(Tensor._full_uop(sh, fill_value, dt, _canon_device(device)), **kwargs)
  @staticmethod
  def zeros(*shape: Any, **kwargs: Any) -> Tensor:
    """A tensor of zeros (float32 unless `dtype` is given)."""
    return Tensor.full(argfix(*shape), 0.0, **kwargs)
  @staticmethod
  def ones(*shape: Any, **kwargs: Any) -> Tensor:
    """A tensor of ones (float32 unless `dtype` is given)."""
    return Tensor.full(argfix(*shape), 1.0, **kwargs)
  @staticmethod
  def arange(start: int | float | UOp, stop: int | float | UOp | None = None, step: int | float | UOp = 1, dtype: DType | str | None = None,
             **kwargs: Any) -> Tensor:
    """Values from `start` up to (not including) `stop` by `step`, like numpy.arange (int32 unless an argument is a float)."""
    if dtype is not None: kwargs["dtype"] = dtype
    if stop is None: start, stop = 0, start
    if dtype is not None and to_dtype(dtype) == dtypes.bool and not any(isinstance(x, UOp) for x in (start, stop, step)):
      # values of 0 and 1 only, or an OverflowError (public tinygrad's): arange(1, 4, dtype=bool) was an int32 [1, 2, 2],
      # arange(0, 3, 0.5, dtype=bool) all False (a nonzero step reaches at most two such values)
      vals = [start + i * step for i in range(min(3, max(0, math.ceil((stop - start) / step))))] if step != 0 else []
      if step == 0 or len(vals) > 2 or any(v not in (0, 1) for v in vals):
        raise OverflowError(f"arange({start}, {stop}, {step}) does not fit {dtypes.bool} (values 0 and 1 only); compare an int arange instead")
      kwargs["dtype"] = dtypes.bool
      return Tensor([bool(v) for v in vals], **kwargs) if vals else Tensor.full((0,), False, **kwargs)
    if isinstance(start, UOp) or isinstance(stop, UOp) or isinstance(step, UOp): return Tensor._arange_symbolic(start, stop, step, **kwargs)
    if step == 0: raise ValueError("arange: step must not be 0")
    given = kwargs.get("dtype") is not None
    dt = to_dtype(kwargs.pop("dtype")) if kwargs.get("dtype") is not None else \
      (dtypes.default_float if any(isinstance(x, float) for x in (start, stop, step)) else dtypes.default_int)
    kwargs.pop("dtype", None)
    n = max(0, math.ceil((stop - start) / step))
    dev = kwargs.pop("device", None)
    if n == 0: return Tensor.full((0,), 0, dtype=dt, device=dev, **kwargs)
    ints = all(isinstance(x, int) for x in (start, step)) and not dtypes.is_float(dt)
    # int64 where an index or a value leaves int32 (default dtype only: a given dtype is kept)
    wide = n > dtypes.max(dtypes.int32) or (ints and not -2**31 <= start + (n-1)*step < 2**31)
    if wide and not given and ints: dt = dtypes.int64
    # an int or bool dtype from float arguments: numpy's int fill, the first two values cast (truncated), then their
    # difference repeated (arange(0, 5, 1.5, dtype=int32) is [0, 1, 2, 3]; truncating 0, 1.5, 3, 4.5 gave [0, 1, 3, 4];
    # torch's answer depends on the dtype, 0.14 gave [0, 0, 1, 2])
    i0, d = (start, step) if ints or dtypes.is_float(dt) else (int(start), int(start + step) - int(start))
    if dtypes.is_int(dt):   # a given int dtype holds the first and the last value, or the range is an error
      for v in (i0, i0 + (n-1)*d): _check_int(v, dt, f"arange({start}, {stop}, {step}) needs a wider dtype=, e.g. dtypes.int64")
    idx = Tensor._arange_index(n, dtypes.int64 if wide else dtypes.int32, dev)
    if ints and not dtypes.min(dt) <= step <= dtypes.max(dt):   # a step the dtype cannot hold (negative, unsigned): its values can
      # unsigned: i*step wraps modulo 2**bits (defined on every device) to the in-range value; signed: in int64, cast
      ret = idx.cast(dt) * truncate_int(int(step), dt) + start if dtypes.is_unsigned(dt) else (idx.cast(dtypes.int64) * step + start).cast(dt)
    elif ints: ret = idx.cast(dt) * step + start if (start, step) != (0, 1) else idx.cast(dt)
    elif not dtypes.is_float(dt): ret = (idx.cast(dtypes.int64 if wide else dtypes.int32) * d + i0).cast(dt)
    else:
      # numpy's float fill: start + i*delta in the float type, delta = (start+step) - start rounded to that type; a type
      # narrower than float32 (numpy's float16, ml_dtypes' bfloat16 and fp8) fills in float32 from its two rounded first
      # values and rounds each value once (in float16, i*delta rounded before the add: arange(-1, 1, 0.4)[3] was 0.1992)
      fdt = least_upper_float(dt)
      cdt = dtypes.float32 if fdt.itemsize < 4 else fdt
      f0, f1 = _round_to(start, fdt), _round_to(start + step, fdt)
      d = _round_to(f1 - f0, cdt)
      ret = (idx.cast(cdt) * d + f0).cast(dt)
      # numpy's second value is start+step rounded, not f0 + delta (which can miss it by an ulp where start+step cancels:
      # arange(1.38, 0, -1.375)[1] was 0.004999995, numpy 0.0049999999)
      if n > 1 and _round_to(_round_to(f0 + d, cdt), fdt) != f1: ret = (idx == 1).where(Tensor(f1, dtype=dt, device=dev), ret)
    if kwargs: ret.requires_grad = kwargs.get("requires_grad")
    return ret
  @staticmethod
  def _arange_symbolic(start: Any, stop: Any, step: Any, **kwargs: Any) -> Tensor:
    # bounds or step given by bound Variables: the arange of the largest length their ranges allow, shrunk to this length
    # (a float expression of Variables too, n*1.0: it raised OverflowError 'cannot convert float infinity to integer')
    if any(isinstance(x, float) or (isinstance(x, UOp) and dtypes.is_float(x.dtype)) for x in (start, stop, step)):
      raise TypeError("arange: a symbolic (Variable) start, stop or step needs int arguments")
    up = step > 0 if isinstance(step, int) else (True if step.vmin > 0 else False if step.vmax < 0 else None)
    if up is None: raise ValueError(f"arange: the step {step.render()} must be positive or negative for every value of its variables")
    span, by = (stop - start, step) if up else (start - stop, -step)
    m = (span + by - 1) // by   # ceil(span / by), C division on symbols: a negative span gives <= 0 either way
    n = ssimplify(m.maximum(0)) if isinstance(m, UOp) else max(0, m)
    dev, dt = kwargs.pop("device", None), to_dtype(kwargs.pop("dtype", None) or dtypes.default_int)
    if smax(n) == 0: return Tensor.full((0,), 0, dtype=dt, device=dev, **kwargs)
    idx = Tensor._arange_index(smax(n), dtypes.int32, dev).shrink(((0, n),))
    return Tensor(((idx.cast(dt) * step) + start).uop, **kwargs)
  @staticmethod
  def _arange_index(n: int, dt: DType, dev: str | None) -> Tensor:
    # 0..n-1 as a count of ones (a one-level cumsum: one plain reduce, neither blocked nor split), which the simplifier
    # folds into the index itself (symbolic.py's _reduce_collapse; the scheduler inlines it, schedule._collapses): no
    # kernel, no table, and an Embedding's arange == idx becomes a gather. Larger: i = a*B + b from two such aranges
    if n <= ARANGE_FOLD_MAX:
      ones = Tensor.full((n,), 1, dtype=dtypes.int32, device=dev).pad(((n-1, 0),))._pool((n,))
      return (Tensor(ones.uop.r(Ops.ADD, (1,))).reshape(n) - 1).cast(dt)
    b = 1 << 14
    a = ceildiv(n, b)
    hi, lo = Tensor._arange_index(a, dt, dev), Tensor._arange_index(b, dt, dev)
    return (hi.reshape(a, 1) * b + lo.reshape(1, b)).reshape(a * b).shrink(((0, n),))
  @staticmethod
  def linspace(start: int | float, stop: int | float, steps: int, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """`steps` evenly spaced values from `start` to `stop` inclusive."""
    if dtype is not None: kwargs["dtype"] = dtype
    steps = _whole_int("linspace", "steps", steps)   # (2.5 gave 3 values)
    if steps < 0: raise ArgumentError(f"linspace: steps must be non-negative, got {steps}")
    dt = to_dtype(kwargs.pop("dtype")) if kwargs.get("dtype") is not None else dtypes.default_float
    kwargs.pop("dtype", None)
    if dt == dtypes.bool: raise ArgumentError("linspace: dtype bool has no values between start and stop; use an int or float dtype")
    if steps <= 1: return Tensor.full((steps,), start, dtype=dt, **kwargs)
    # computed in float32 at least and from both ends, as torch: float16's start + i*step cancels badly near 0 (-48 + 24*2.03)
    fdt = least_upper_dtype(least_upper_float(dt), dtypes.float32)
    i, step = Tensor.arange(steps, dtype=fdt, **kwargs), (stop - start) / (steps - 1)
    return (i < steps / 2).where(i * step + start, stop - (steps - 1 - i) * step).cast(dt)
  @staticmethod
  def eye(n: int, m: int | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """The identity matrix (n x m, ones on the diagonal), built from movement ops only."""
    if dtype is not None: kwargs["dtype"] = dtype
    # (a whole float is its int, as public tinygrad's eye(2.0); it raised "full: invalid shape (2.0, 1)")
    n = _whole_int("eye", "n", n)
    m_ = n if m is None else _whole_int("eye", "m", m)
    if n < 0 or m_ < 0: raise ValueError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    k = max(n, m_)
    dt = kwargs.pop("dtype", None) or dtypes.default_float
    # rows of (1, 0*k) laid end to end and cut into rows of k put the 1 one step further each row
    x = Tensor.ones((k, 1), dtype=dt, **kwargs).pad(((0, 0), (0, k))).flatten().shrink(((0, k*k),)).reshape(k, k)
    return x.shrink(((0, n), (0, m_)))
  def full_like(self, fill_value: ConstType, dtype: DType | str | None = None, device: str | None = None, **kwargs: Any) -> Tensor:
    """A tensor like this one (shape, dtype, device unless given) filled with `fill_value`; like a multi-device tensor, it is
    sharded the same way."""
    kwargs |= {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
    if self.uop.op is Ops.MULTI and "device" not in kwargs:
      rg = kwargs.pop("requires_grad", None)
      ret = Tensor.full(self.shape, fill_value, dtype=kwargs.pop("dtype", self.dtype), device=self.device[0], **kwargs).shard_like(self)
      ret.requires_grad = rg
      return ret
    return Tensor.full(self.shape, fill_value, dtype=kwargs.pop("dtype", self.dtype), device=kwargs.pop("device", self.device), **kwargs)
  @staticmethod
  def invalids(*shape: Any, device: str | None = None, dtype: DType | str | None = None) -> Tensor:
    """A tensor whose elements hold no value yet (public tinygrad's name for a scratch buffer written before it is read):
    here the same as `Tensor.empty`; what is read before it is written is undefined."""
    return Tensor.empty(*shape, device=device, dtype=dtype)
  @staticmethod
  def from_url(url: str, gunzip: bool = False, **kwargs: Any) -> Tensor:
    """A uint8 tensor of the bytes at `url` (downloaded once into the cache by helpers.fetch; `gunzip`: decompressed)."""
    from tinygrad.helpers import fetch
    return Tensor(fetch(url, gunzip=gunzip), **kwargs)
  @property
  def max_shape(self) -> tuple[int, ...]:
    """The shape with every symbolic dimension at its largest value (the size its buffer is allocated with)."""
    return tuple(int(smax(s)) for s in self.shape)
  def max_numel(self) -> int:
    """The number of elements of `max_shape`."""
    return prod(self.max_shape)
  def const_like(self, b: ConstType, dtype: DType | str | None = None) -> Tensor:
    """A tensor of this one's shape and device (and dtype unless given) filled with the constant `b`."""
    return self.full_like(b, dtype=self.dtype if dtype is None else dtype)
  def zeros_like(self, **kwargs: Any) -> Tensor:
    """Zeros shaped like this tensor."""
    return self.full_like(0, **kwargs)
  def ones_like(self, **kwargs: Any) -> Tensor:
    """Ones shaped like this tensor."""
    return self.full_like(1, **kwargs)
  def empty_like(self, dtype: DType | str | None = None, device: str | None = None, **kwargs: Any) -> Tensor:
    """An uninitialized tensor shaped (and, for a multi-device tensor, sharded) like this one."""
    kwargs |= {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
    if isinstance(self.device, tuple) and "device" not in kwargs:
      dt = kwargs.pop("dtype", self.dtype)
      if self.uop.arg is None: return Tensor.empty(self.shape, dtype=dt, device=self.device, **kwargs)   # one on each device
      return self._multi_like(lambda shape, dev: Tensor.empty(shape, dtype=dt, device=dev, **kwargs))
    return Tensor.empty(self.shape, dtype=kwargs.pop("dtype", self.dtype), device=kwargs.pop("device", self.device), **kwargs)

  # ---- dtype ----
  def cast(self, dtype: DType | str) -> Tensor:
    """The values converted to `dtype` (float -> int truncates toward zero and saturates, NaN -> 0; int -> int wraps)."""
    dt = to_dtype(dtype)
    return self if dt == self.dtype else Tensor(self.uop.cast(dt))
  def bitcast(self, dtype: DType | str) -> Tensor:
    """The same bits read as `dtype`. Of the same item size: a view (assigning into it writes self's bits). Of another item
    size, the last axis is rescaled by the ratio, as public tinygrad and torch's `view(dtype)` do (a (..., 8) uint8 tensor
    is (..., 2) as int32, bytes in little-endian order), and the result holds a copy of the bits: writing into it raises
    (public tinygrad's result drops such a write silently; torch's is a view)."""
    dt = to_dtype(dtype)
    if dt == self.dtype: return self
    if dt.itemsize == self.dtype.itemsize: return self._mv(lambda u: u.bitcast(dt))
    if is_disk(self.device):   # a view of the same bytes of the file (the DISK device computes nothing)
      from tinygrad.mixin.disk import disk_bitcast
      return disk_bitcast(self, dt)
    return self._resized_bitcast(dt)
  def _resized_bitcast(self, dt: DType) -> Tensor:
    # (a shape that does not divide is an ArgumentError: a ValueError, and the RuntimeError of torch's view(dtype) and public tinygrad)
    old, new = self.dtype.itemsize, dt.itemsize
    what = f"bitcast from {self.dtype} ({old} bytes) to {dt} ({new} bytes)"
    if self.ndim == 0: raise ArgumentError(f"{what}: a 0-d tensor has no last axis to rescale; reshape it to (1,) first")
    last = self.shape[-1]
    if not isinstance(last, int): raise ArgumentError(f"{what}: the last axis ({last}) must have a fixed size")
    uold, unew = uint_of_size(old), uint_of_size(new)
    x = self.bitcast(uold)
    if new > old:   # k items of self make one of dt: OR their bits together, the first item the lowest
      k = new // old
      if last % k: raise ArgumentError(f"{what}: the last axis ({last}) must be a multiple of {k}")
      parts = x.reshape(*self.shape[:-1], last // k, k)
      words = [parts.shrink(tuple((0, s) for s in parts.shape[:-1]) + ((i, i + 1),)).cast(unew) << (8 * old * i) for i in range(k)]
      ret = functools.reduce(Tensor.bitwise_or, words).reshape(*self.shape[:-1], last // k).bitcast(dt)
    else:   # one item of self makes k of dt, lowest bits first
      k = old // new
      words = [((x >> (8 * new * i)) & (2 ** (8 * new) - 1)).cast(unew) for i in range(k)]
      ret = Tensor.stack(*words, dim=-1).reshape(*self.shape[:-1], last * k).bitcast(dt)
    for t in (ret, ret._view_of):   # (ret is a same-size bitcast view of the value: its views' base is that value)
      if t is not None: t._bits_of = self
    return ret
  def _float(self) -> Tensor: return self.cast(least_upper_float(self.dtype))

  # ---- views ----
  def _mv(self, fn: Callable[[UOp], UOp]) -> Tensor:
    """The movement-op view `fn(self.uop)` of this tensor: assigning into it writes into the tensor it views (and every
    other view sees it)."""
    ret = self._view_at(fn(self.uop))
    base = self._view_of if self._view_of is not None else self
    # a view of a multi-device tensor keeps the ops that made it from its base: one that gathered shards (a slice across
    # them) is no per-shard view of the base, so when the base changes it is made again from them, and an assign into it
    # inverts them on the whole tensor
    # (from the base: its own ops only. A view realized into a copy of its own is a base now, and the ops that made it from
    # its former base replayed on it too: e1 = e0.flip(0) realized, e4 = e1.flip(0) followed e1's update as flip(flip(e1)))
    if base.uop.op is Ops.MULTI and (self is base or self._replay is not None): ret._replay = (() if self is base else self._replay or ()) + (fn,)
    return ret
  def _view_at(self, u: UOp) -> Tensor:
    """A tensor of the graph `u`, movement ops over this tensor's graph or buffers (per shard), that is a view of this
    tensor: assigning into it writes into the tensor this one views."""
    ret = Tensor(u)
    base = self._view_of if self._view_of is not None else self
    ret._view_of, ret._parents = base, (weakref.ref(self),) + self._parents
    if base._views is None: base._views = weakref.WeakValueDictionary()
    base._views[id(ret)] = ret
    return ret
  def _replayed(self, base: UOp) -> UOp:
    """This multi-device view's movement ops (`_replay`) applied to `base` instead of its base's graph."""
    return functools.reduce(lambda u, f: f(u), self._replay or (), base)
  def _set_uop(self, new: UOp, write: bool = False) -> None:
    """Rebind this tensor's graph; its views follow (each one's movement ops now read the new graph). `write`: the new
    graph is an in-place update's value (of a tensor with no buffer yet: no ASSIGN)."""
    old, self.uop = self.uop, new
    _relazy(self)
    graph_epoch[0] += 1
    if old is new or not self._views: return
    # (a pad that shows padding is a value, as F.pad's copy: it keeps reading the buffer, or the graph of a tensor with no
    # buffer yet, not a pending update of it: `s = t + t; p = s.pad((1, 0)); s += 1` gave p the new s)
    update = write or new.op is Ops.ASSIGN or new.op is Ops.MULTI and any(s.op is Ops.ASSIGN for s in new.src)
    for v in list(self._views.values()):
      if update and (_reached_padding(c) is not None if v._replay is not None and (c := v._whole_chain(self)) is not None
                     else v._replay is None and _shows_padding(v.uop, old)): continue
      if v._replay is not None and new.op is Ops.MULTI: v.uop = v._replayed(new)
      elif (u := _rebase_view(v.uop, old, new)) is not None: v.uop = u
      else: continue
      _relazy(v)
  def _own_views(self, old: UOp, base_old: UOp | None = None) -> None:
    # this view is realized into a copy of its own: it leaves its base, and the views made from it (through it: a view of
    # `s = y.sum(0)`, itself a reshape view of the reduce) follow it to its buffer instead of reading the base's graph.
    # base_old: the base's graph before the realize that gave it a buffer and rebased these views onto it (realizing e2
    # and its view e3 together left e4 = e3.flip(0) on e2's buffer: it no longer saw e3's writes, and saw e2's)
    base, mine = self._view_of, self._replay or ()
    if base is not None and base_old is not None and base_old is not base.uop and (now := _rebase_view(old, base_old, base.uop)) is not None:
      old = now
    self._detach_view()
    if base is None or not base._views: return
    for v in [v for v in base._views.values() if any(p() is self for p in v._parents)]:
      u: UOp | None
      if v._replay is not None and self.uop.op is Ops.MULTI and v._replay[:len(mine)] == mine:
        # a multi-device view is remade from its ops (its graph may be rebased on the base's buffers already): those after self's
        v._replay = v._replay[len(mine):]
        u = v._replayed(self.uop)
      elif (u := _rebase_view(v.uop, old, self.uop)) is None: continue
      base._views.pop(id(v), None)
      v.uop, v._view_of = u, self
      _relazy(v)
      if self._views is None: self._views = weakref.WeakValueDictionary()
      self._views[id(v)] = v
  def _detach_view(self) -> None:
    if self._view_of is not None and self._view_of._views is not None: self._view_of._views.pop(id(self), None)
    self._view_of = None

  # ---- broadcasting ----
  def _broadcast_to(self, shape: tuple[sint, ...], view: bool = True) -> Tensor:
    # view=False: an operand an op reads now (_broadcasted), whose result is a plain tensor of the expand: no view of this
    # one to keep up to date when it changes (a view's bookkeeping was ~half the host time of `a - s * b` with s 0-d)
    if self.shape == shape: return self
    if len(shape) < self.ndim: raise ValueError(f"cannot broadcast shapes {shape_str(self.shape)} and {shape_str(tuple(shape))}")
    # (a symbolic size equal to the target's but spelled otherwise, j+i for i+j, is reshaped to the target's spelling)
    padded = tuple(t if sint_eq(s, t) else s for s, t in zip((1,) * (len(shape) - self.ndim) + self.shape, shape))
    if any(s is not t and s != 1 for s, t in zip(padded, shape)): raise BroadcastError(f"cannot broadcast shapes {shape_str(self.shape)} and {shape_str(tuple(shape))}{vals_str(self.shape, shape)}")
    if not view: return Tensor(self.uop.reshape(padded).expand(shape))
    return self._mv(lambda u: u.reshape(padded).expand(shape))
  def _to_tensor(self, y: Any, dtype: DType | None = None) -> Tensor:
    """`y` as a Tensor on this device; Python scalars are weak: they take this tensor's dtype when they fit its kind."""
    if isinstance(y, Tensor): return y
    if isinstance(y, UOp) and (y.op is Ops.BIND or y.op in GroupOp.ALU) and sym_vars(y):
      # a symbolic int (a bound variable's expression, a mean's count) as a scalar on this device, a weak int like an int
      # literal; the kernel reads the variable, its argument
      v = ssimplify(y)
      if isinstance(v, int): return self._const(v, dtype or (self.dtype if dtypes.is_float(self.dtype) or dtypes.is_int(self.dtype) else dtypes.default_int))
      return Tensor(v, device=self.device if isinstance(self.device, str) else self.device[0], dtype=dtype).to(self.device)
    if isinstance(y, UOp) and y.op is Ops.DEFINE_VAR: raise ValueError(f"variable {y.arg[0]} used as a value must be bound: use .bind(value)")
    if _is_scalar(y): return self._const(y, self._scalar_dtype(y) if dtype is None else dtype, weak=True)
    return Tensor(y, device=self.device)
  def _scalar_dtype(self, y: ConstType) -> DType:
    """A Python scalar's dtype beside this tensor: weak (this tensor's) where it fits its kind, else its own."""
    weak = dtypes.is_float(self.dtype) or (dtypes.is_int(self.dtype) and isinstance(y, int) and not isinstance(y, bool))
    if weak: _check_int(y, self.dtype, f"cast the tensor first, e.g. t.cast(dtypes.int64), to compute with {y}")
    return self.dtype if weak else dtypes.from_py(y)
  def _broadcasted(self, y: Any, reverse: bool = False, match_dtype: bool = True) -> tuple[Tensor, Tensor]:
    if _is_scalar(y) and (dt := self._scalar_dtype(y)) == self.dtype:
      # a scalar of this tensor's dtype (x + 1, 0.5 * x): the constant _to_tensor and _broadcast_to below make, in this
      # tensor's shape at once (a fifth of the host time of `x + 1`: no second tensor, no view bookkeeping for it)
      t = self._const(y, dt, self.shape, weak=True)
      return (t, self) if reverse else (self, t)
    x, t = self, self._to_tensor(y)
    x, t = (t, x) if reverse else (x, t)
    x, t = x._same_device(t)
    if match_dtype and x.dtype != t.dtype:
      out = least_upper_dtype(x.dtype, t.dtype)
      x, t = x.cast(out), t.cast(out)
    shape = _broadcast_shape(x.shape, t.shape)
    return x._broadcast_to(shape, view=False), t._broadcast_to(shape, view=False)
  def _same_device(self, t: Tensor) -> tuple[Tensor, Tensor]:
    """(self, t) on one device: a broadcast constant (Tensor(2.0), Tensor(UOp.const(1.0))), or a graph of constants
    (Tensor.arange), joins the other operand on its device(s), as public tinygrad's device-less constants do: it has no data
    to move. Data on two devices raises DeviceMismatchError when the op is built (a lazy result claimed one of them and
    failed only when realized)."""
    if self.device == t.device: return self, t
    if _computed_anywhere(t.uop): return self, Tensor(_on_device(t.uop, self.device))
    if _computed_anywhere(self.uop): return Tensor(_on_device(self.uop, t.device)), t
    raise DeviceMismatchError(f"tensors on different devices: {self.device} and {t.device}; move one with .to() (.shard_like() for a multi-device tensor)")
  def _alu(self, op: Ops, *src: Tensor) -> Tensor: return Tensor(self.uop.alu(op, *(s.uop for s in src)))

# the mixins build Tensors: each module's `Tensor` name is bound to the class here, once it exists
for _m in (random, elementwise, reduce, movement, indexing, sorting, nn, loss, linalg, sharding): setattr(_m, "Tensor", Tensor)

# numpy integers (a shape or an argmax read back from numpy, len() of an array's dims) are accepted wherever a Python int
# is: the arguments below (sizes, axes, counts; never values, whose numpy type sets a result's dtype) of every public
# method are turned into ints here, once, instead of in every check of every mixin
_INT_ARGS = frozenset({"shape", "args", "axis", "dim", "dims", "dim0", "dim1", "dim2", "dimension", "order", "arg", "sizes", "repeats", "shifts",
  "chunks", "diagonal", "offset", "k", "num_classes", "num_samples", "start_dim", "end_dim", "size", "steps", "n", "m", "kernel_size", "stride",
  "padding", "dilation", "groups", "output_padding", "output_size"})
# and the ends and steps of ranges (arange, linspace, randint, uniform, unfold's step) are Python numbers: they pick no dtype
# of their own, and `isinstance(x, float)` missed a numpy float32 (arange(np.float32(0), 1, np.float32(0.25)) was int32
# zeros, linspace of numpy ends raised a numpy dtype TypeError, randint refused numpy ints)
_NUM_ARGS = frozenset({"start", "stop", "step", "low", "high"})
def _py_int(x: Any) -> Any:
  if type(x) is tuple or type(x) is list: return type(x)(_py_int(v) for v in x)
  return int(x) if type(x).__module__ == "numpy" and isinstance(x, numbers.Integral) else x
def _py_num(x: Any) -> Any:
  if type(x).__module__ != "numpy" or not isinstance(x, numbers.Real): return x
  return int(x) if isinstance(x, numbers.Integral) else float(x)
def _int_args(fn: Callable) -> Callable:
  # the parameters from the code object (inspect.signature took ~10 ms for the ~300 methods at every import)
  inner = fn
  while hasattr(inner, "__wrapped__"): inner = inner.__wrapped__
  co = inner.__code__
  names, nkw = co.co_varnames[:co.co_argcount], co.co_kwonlyargcount
  conv = {n: _py_num if n in _NUM_ARGS else _py_int for n in names + co.co_varnames[co.co_argcount:co.co_argcount + nkw]
          if n in _INT_ARGS or n in _NUM_ARGS}
  pos = {i: conv[n] for i, n in enumerate(names) if n in conv}
  var = co.co_argcount if co.co_flags & 0x04 and co.co_varnames[co.co_argcount + nkw] in _INT_ARGS else None   # CO_VARARGS: *name
  if not conv and var is None: return fn
  @functools.wraps(fn)
  def wrapper(*args: Any, **kwargs: Any) -> Any:
    if var is not None and len(args) > var: args = args[:var] + tuple(_py_int(a) for a in args[var:])
    if any(i < len(args) for i in pos): args = tuple(pos[i](a) if i in pos else a for i, a in enumerate(args))
    if kwargs and not conv.keys().isdisjoint(kwargs): kwargs = {k: conv[k](v) if k in conv else v for k, v in kwargs.items()}
    return fn(*args, **kwargs)
  return wrapper
for _name in [n for n in dir(Tensor) if not n.startswith("_")]:
  _attr = next(c.__dict__[_name] for c in Tensor.__mro__ if _name in c.__dict__)   # as defined, not bound (getattr_static)
  if isinstance(_attr, (staticmethod, classmethod)): setattr(Tensor, _name, type(_attr)(_int_args(_attr.__func__)))
  elif isinstance(_attr, types.FunctionType): setattr(Tensor, _name, _int_args(_attr))
# activations, norms, softmax and attention build their graphs once per shape and copy them after (mixin/graphcache.py)
from tinygrad.mixin import graphcache  # noqa: E402
graphcache.install(Tensor)

# public tinygrad's UOp shares the Tensor's reductions (its mixins): on a tensor-level UOp they build the Tensor's graph
def _uop_reduce(name: str) -> Callable[..., UOp]:
  def f(self: UOp, *args: Any, **kwargs: Any) -> UOp: return getattr(Tensor(self), name)(*args, **kwargs).uop
  f.__name__, f.__doc__ = name, f"Tensor.{name} of this tensor-level UOp."
  return f
for _name in ("sum", "prod", "max", "min", "mean", "var", "std"): setattr(UOp, _name, _uop_reduce(_name))
