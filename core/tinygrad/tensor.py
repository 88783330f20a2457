"""Tensor: the lazy, user-facing array. Every op builds a tensor-level UOp graph (docs/ir.md); nothing runs until
`realize()`, `numpy()`, `tolist()` or `item()`. The API follows public tinygrad's Tensor (names, arguments, semantics)."""
from __future__ import annotations
import math, struct, time, functools, itertools, weakref
from typing import Any, Callable, Iterator, Sequence, cast
from dataclasses import dataclass
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes, ConstType, to_dtype, least_upper_dtype, least_upper_float, sum_acc_dtype, float_to_bf16, INVERSE_DTYPES_DICT
from tinygrad.helpers import TRAINING, prod, argfix, make_tuple, flatten, ceildiv, all_int, SPLIT_REDUCEOP, MATMUL_PACK, MATMUL_PACK_BYTES, CHECK_OOB
from tinygrad.engine.buffers import new_buffer, buffer_of, has_buffer

class AxisError(IndexError, ValueError):
  """An axis outside a tensor's dimensions (caught by `except IndexError` and `except ValueError`, like numpy's AxisError)."""

def _canon_device(device: str | None) -> str:
  from tinygrad.device import Device
  return Device.DEFAULT if device is None else Device.canonicalize(device)

def _matmul_panel(device: str, itemsize: int, m: int, k: int, n: int) -> int:
  """The panel width (elements) the device's renderer wants a big matmul's right operand copied into (0: used in place)."""
  from tinygrad.device import Device, DeviceError
  if not MATMUL_PACK or not all_int((m, k, n)) or m < 16 or k * n * itemsize < MATMUL_PACK_BYTES.value: return 0
  try: p = Device[device].renderer.matmul_pack // itemsize
  except DeviceError: return 0   # an unopenable device: the plain form (realizing it raises the reason)
  while p > 4 and n % p: p //= 2   # narrower panels where n is not a multiple of the widest (1000: 8)
  return p if p > 1 and n % p == 0 and n > p else 0

def _broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
  nd = max(len(s) for s in shapes)
  padded = [(1,) * (nd - len(s)) + tuple(s) for s in shapes]
  out = []
  for dims in zip(*padded):
    sizes = {d for d in dims if d != 1}
    if len(sizes) > 1: raise ValueError(f"cannot broadcast shapes {' and '.join(str(tuple(s)) for s in shapes)}")
    out.append(sizes.pop() if sizes else 1)
  return tuple(out)

def _flatten_py(data: Any) -> tuple[tuple[int, ...], list]:
  """(shape, flat values) of a nested list/tuple; a ragged list is an error."""
  if not isinstance(data, (list, tuple)): return (), [data]
  if len(data) == 0: return (0,), []
  subs = [_flatten_py(d) for d in data]
  if not all(s[0] == subs[0][0] for s in subs):
    raise ValueError(f"ragged nested list: sub-lists have shapes {sorted({s[0] for s in subs})}; every row needs the same shape")
  return (len(data),) + subs[0][0], [v for s in subs for v in s[1]]

def _check_int(v: Any, dtype: DType, fix: str) -> None:
  """numpy 2's rule: a Python int that does not fit an int dtype is an OverflowError, not a silent wrap."""
  if dtypes.is_int(dtype) and isinstance(v, int) and not isinstance(v, bool) and not dtypes.min(dtype) <= v <= dtypes.max(dtype):
    raise OverflowError(f"Python int {v} does not fit {dtype} (valid: {dtypes.min(dtype)}..{dtypes.max(dtype)}); {fix}")

def _pack(vals: list, dtype: DType) -> bytes:
  for v in vals: _check_int(v, dtype, "pass a wider dtype=, e.g. dtypes.int64")
  if dtype == dtypes.bfloat16: return struct.pack(f"{len(vals)}H", *(float_to_bf16(float(v)) for v in vals))
  return struct.pack(f"{len(vals)}{dtype.fmt}", *(dtypes.as_const(v, dtype) for v in vals))

def _check_shape(op: str, shape: tuple) -> tuple[int, ...]:
  if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in shape):
    raise ValueError(f"{op}: invalid shape {shape}; every size must be an int >= 0")
  return shape
def _check_positive(op: str, name: str, vals: tuple) -> tuple[int, ...]:
  # a zero stride/kernel/dilation would divide by zero in the window arithmetic; negative ones have no meaning
  if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in vals): raise ValueError(f"{op}: {name} must be ints >= 1, got {vals}")
  return vals

def _check_oob(op: str, idx: Tensor, n: int, axis: int, allow_negative: bool) -> None:
  """With CHECK_OOB=1: an IndexError for the first index outside [-n, n) (or [0, n)); realizes `idx`."""
  if not CHECK_OOB or idx.numel() == 0: return
  lo = -n if allow_negative and not dtypes.is_unsigned(idx.dtype) else 0
  bad = [v for v in idx.flatten().tolist() if not lo <= v < n]
  if bad: raise IndexError(f"{op}: index {bad[0]} is out of bounds for axis {axis} with size {n} (valid: {lo}..{n-1}; CHECK_OOB=1)")

_CHUNK = 1 << 16   # the most elements one accumulator of a split reduce sums (Tensor._split_reduce)
def _round_to(x: float, dt: DType) -> float:
  # a Python float rounded to the nearest value of float dtype `dt` (what numpy's fill computes its start and delta in)
  if dt == dtypes.bfloat16: return struct.unpack("f", struct.pack("I", float_to_bf16(x) << 16))[0]
  return struct.unpack(fmt, struct.pack(fmt, x))[0] if (fmt := {dtypes.float32: "f", dtypes.float16: "e"}.get(dt)) else float(x)
def _dtname(dt: DType) -> str: return INVERSE_DTYPES_DICT.get(dt.name, dt.name)   # float16, not half

def _is_scalar(x: Any) -> bool: return isinstance(x, (int, float, bool)) and not isinstance(x, UOp)

@dataclass
class _IndexPlan:
  """Basic indexing as movement ops: flip `flips`, shrink, take every step-th, reshape to out_shape; tensor indices come after."""
  idx: list[Any]
  flips: list[int]
  shrinks: list[tuple[int, int]]
  steps: list[int]
  lens: list[int]
  out_shape: list[int]
  tensor_idx: list[tuple[int, int, Any]]  # (input dim, position in out_shape, index)
  adv_pos: list[int]                      # positions in idx of ints and tensor indices (numpy's placement rule)

class _TensorType(type):
  # Tensor.training is the TRAINING flag, so `Context(TRAINING=1)`, `Tensor.train()` and `Tensor.training = True` are one switch
  @property
  def training(cls) -> bool: return bool(TRAINING.value)
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
  def bool(self) -> Tensor:
    """Cast to bool (nonzero -> True)."""
    return self.cast(dtypes.bool)

# every live Tensor (weakly): backward() finds the tensors with requires_grad here
all_tensors: weakref.WeakSet[Tensor] = weakref.WeakSet()
# tensors holding an assign that has not run yet: TinyJit realizes them at the end of a call so the write is captured
# (keyed by id: a WeakSet would compare two tensors with ==, which is elementwise)
pending_assigns: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()

def _movement_chain(top: UOp, bottom: UOp) -> list[UOp] | None:
  """The movement ops from `top` down to `bottom` (top first), or None when `top` is not a view of `bottom`."""
  chain: list[UOp] = []
  while top is not bottom:
    if top.op not in _MOVEMENT: return None
    chain.append(top)
    top = top.src[0]
  return chain
_MOVEMENT = {Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.SHRINK, Ops.FLIP, Ops.PAD}

def _buffer_under(u: UOp) -> UOp | None:
  """The BUFFER a realized tensor's graph is (under RESHAPEs), else None."""
  while u.op is Ops.RESHAPE: u = u.src[0]
  return u if u.op is Ops.BUFFER else None

def _unview(chain: list[UOp], x: Tensor, base: Tensor) -> Tensor:
  """`base` with the elements that the view `chain` (movement ops, top first) shows replaced by `x`: each op inverted in turn."""
  if any(n.op is Ops.PAD for n in chain): _unview_mask_check(chain)
  val, mask = x, None   # mask None: every element of the current shape is written
  for n in chain:
    src = n.src[0].shape
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
  # a view through PAD may only write positions that exist in the base: replay the written mask on the host to check
  import numpy as np
  m = np.ones(chain[0].shape, dtype=bool)
  for n in chain:
    src = n.src[0].shape
    if n.op is Ops.RESHAPE: m = m.reshape(src)
    elif n.op is Ops.PERMUTE: m = m.transpose(np.argsort(n.arg))
    elif n.op is Ops.FLIP: m = np.flip(m, tuple(i for i, f in enumerate(n.arg) if f))
    elif n.op is Ops.SHRINK: m = np.pad(m, [(b, s - e) for (b, e), s in zip(n.arg, src)])
    elif n.op is Ops.PAD:
      inner = tuple(slice(b, b + s) for (b, _), s in zip(n.arg, src))
      if m.sum() != m[inner].sum():
        raise ValueError(f"assign: the target view reaches into padding (PAD {n.arg} of shape {src}); only positions of the base tensor can be written")
      m = m[inner]

class Tensor(_DTypeCasts):
  """A lazy n-dimensional array on a device. `Tensor([[1, 2], [3, 4]])`, `Tensor.rand(2, 3)`, `(a @ b).relu().numpy()`."""
  # _view_of: the tensor this one is a movement-op view of (assign writes there); _views: the live views of this one;
  # _graph: the graph a realized tensor was computed from (backward after realize() or item() still reaches its inputs)
  __slots__ = ("uop", "_requires_grad", "grad", "_view_of", "_views", "_graph", "__weakref__")
  no_grad: bool = False
  _seed: int = int(time.time())

  def __init__(self, data: Any, device: str | None = None, dtype: DType | str | None = None, requires_grad: bool | None = None):
    dt = to_dtype(dtype) if dtype is not None else None
    all_tensors.add(self)
    self._requires_grad: bool | None = None
    self.grad: Tensor | None = None
    self._view_of: Tensor | None = None
    self._views: weakref.WeakValueDictionary[int, Tensor] | None = None
    self._graph: UOp | None = None
    if isinstance(data, UOp):
      if dt is not None and dt != data.dtype: data = data.cast(dt)
      if device is not None and _canon_device(device) != data.device: data = UOp(Ops.COPY, data.dtype, (data, UOp(Ops.DEVICE, arg=_canon_device(device))))
      self.uop: UOp = data
      self.requires_grad = requires_grad
      return
    dev = _canon_device(device)
    if data is None: data = []
    if _is_scalar(data):
      dt = dt or dtypes.from_py(data)
      _check_int(data, dt, "pass a wider dtype=, e.g. dtypes.int64")
      self.uop = UOp.const(dt, data, src=(UOp(Ops.DEVICE, arg=dev),))
    elif isinstance(data, (list, tuple)):
      shape, vals = _flatten_py(data)
      if not all(_is_scalar(v) for v in vals): raise TypeError(f"Tensor data must be numbers, got {sorted({type(v).__name__ for v in vals if not _is_scalar(v)})}")
      dt = dt or (max((dtypes.from_py(v) for v in vals), default=dtypes.default_float))
      self.uop = Tensor._from_bytes(_pack(vals, dt), shape, dt, dev) if vals else Tensor._full_uop(shape, 0, dt, dev)
    elif isinstance(data, (bytes, bytearray, memoryview)):
      raw = bytes(data)
      self.uop = Tensor._from_bytes(raw, (len(raw),), dtypes.uint8, dev)
      if dt is not None and dt != dtypes.uint8: self.uop = self.uop.bitcast(dt) if dt.itemsize == 1 else self.uop.cast(dt)
    elif hasattr(data, "dtype") and hasattr(data, "shape") and hasattr(data, "tobytes"):  # numpy array or scalar
      import numpy as np
      from tinygrad.dtype import from_numpy, to_numpy
      shape = tuple(int(s) for s in np.shape(data))
      arr = np.ascontiguousarray(data)  # (this makes a 0-d array 1-d: the shape is taken before)
      if not arr.dtype.isnative: arr = arr.astype(arr.dtype.newbyteorder("="))  # big-endian '>i4': the device reads native order
      src_dt = from_numpy(arr.dtype)
      if dt is not None and dt != src_dt and dt != dtypes.bfloat16: arr, src_dt = arr.astype(to_numpy(dt)), dt
      self.uop = Tensor._from_bytes(arr.tobytes(), shape, src_dt, dev) if arr.size else Tensor._full_uop(shape, 0, src_dt, dev)
      if dt is not None and dt != src_dt: self.uop = self.uop.cast(dt)
    else: raise TypeError(f"cannot make a Tensor from {type(data).__name__}; valid: int, float, bool, list, tuple, bytes, numpy array, UOp")
    self.requires_grad = requires_grad

  @property
  def requires_grad(self) -> bool | None:
    """True: backward() gives this tensor a `.grad`; None (the default): it does too when it is in the graph (as upstream),
    unless it is a broadcast constant; False: never."""
    return self._requires_grad
  @requires_grad.setter
  def requires_grad(self, value: bool | None) -> None:
    self._requires_grad = value
    # a broadcast constant is one hash-consed node shared by every equal constant (Tensor(3.0), Tensor.ones(4)): a tensor
    # that is to get a gradient gets a buffer of its own, or its gradient would be lost or mixed with another's
    if value and self.numel() > 0:
      from tinygrad.gradient import is_const   # the very test autograd uses to leave constants out
      if is_const(self.uop): self._set_uop(Tensor(self.uop).contiguous().realize().uop)

  # ---- construction helpers ----
  @staticmethod
  def _from_bytes(raw: bytes, shape: tuple[int, ...], dtype: DType, device: str) -> UOp:
    u = new_buffer(device, prod(shape), dtype)
    buffer_of(u).allocate().copyin(memoryview(bytearray(raw)))
    return u.reshape(shape)
  @staticmethod
  def _full_uop(shape: tuple[int, ...], value: ConstType, dtype: DType, device: str) -> UOp:
    c = UOp.const(dtype, value, src=(UOp(Ops.DEVICE, arg=device),))
    return c.reshape((1,) * len(shape)).expand(shape)
  def _const(self, value: ConstType, dtype: DType | None = None, shape: tuple[int, ...] = ()) -> Tensor:
    return Tensor(Tensor._full_uop(shape, value, dtype or self.dtype, self.device))

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
  def device(self) -> str:
    """The canonical name of the device holding (or that will compute) this tensor."""
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
  def __bool__(self) -> bool: raise TypeError("the truth value of a Tensor is ambiguous; use .item(), .any() or .all()")
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]
  def __iter__(self) -> Iterator[Tensor]: return (self[i] for i in range(len(self)))

  # ---- realization ----
  def _is_realized(self) -> bool:
    base = self.uop.src[0] if self.uop.op is Ops.RESHAPE else self.uop
    return base.op is Ops.BUFFER and has_buffer(base) and buffer_of(base).is_allocated()
  def realize(self, *lst: Tensor) -> Tensor:
    """Compute this tensor (and `lst`) now: afterwards each one's UOp is a realized buffer. Returns self.

    A view with a pending assign first runs the assign (the base's buffer is written), then becomes a copy of its own.
    The graph a float tensor was computed from is kept beside the buffer, so `backward()` after `realize()` still works."""
    todo = [t for t in dict.fromkeys((self,) + lst) if not t._is_realized() and t.numel() > 0]
    if not todo: return self
    from tinygrad.engine import realize as engine
    roots: dict[UOp, None] = {}
    direct: list[Tensor] = []   # tensors whose own graph is realized (the rest are views of an assign: realized after it)
    again: list[Tensor] = []
    for t in todo:
      b = t.uop
      while b.op in _MOVEMENT: b = b.src[0]
      if b.op is Ops.ASSIGN and b is not t.uop: roots[b] = None
      elif t.uop in roots: again.append(t)  # the same (hash-consed) graph as another tensor here: it gets its own buffer
      else:
        roots[t.uop] = None
        direct.append(t)
    rl = list(roots)
    results = dict(zip(rl, engine.realize_uops(rl)))
    for t in direct:
      if t.requires_grad is not False and dtypes.is_float(t.dtype) and t.uop.op is not Ops.ASSIGN: t._graph = t.uop
      t._set_uop(results[t.uop])
      # a view realized into a copy of its own no longer writes into its base (one realized as the base's buffer still does)
      if t._view_of is not None and _buffer_under(t.uop) is not _buffer_under(t._view_of.uop): t._detach_view()
    # every realized assign is now its target's buffer: no live tensor may run it a second time
    amap = {n: n.src[0] for n in UOp(Ops.SINK, src=tuple(rl)).toposort(gate=lambda x: x.op is not Ops.BUFFER) if n.op is Ops.ASSIGN}
    if amap:
      for x in list(all_tensors):
        if x.uop.op is not Ops.BUFFER and not (x.uop.op is Ops.RESHAPE and x.uop.src[0].op is Ops.BUFFER): x.uop = x.uop.substitute(amap)
    done = {id(t) for t in direct}
    rest = [t for t in again + [t for t in todo if id(t) not in done] if not t._is_realized()]
    if rest: Tensor.realize(*rest)
    return self
  def numpy(self) -> Any:
    """The data as a numpy array (realizes the tensor; bfloat16 comes back as float32)."""
    import numpy as np
    from tinygrad.dtype import to_numpy
    npdt = np.float32 if self.dtype == dtypes.bfloat16 else to_numpy(self.dtype)
    if self.numel() == 0: return np.zeros(self.shape, dtype=npdt)
    raw = self._host_bytes()
    if self.dtype == dtypes.bfloat16: arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    else: arr = np.frombuffer(raw, dtype=npdt).copy()
    return arr.reshape(self.shape)
  def _host_bytes(self) -> memoryview:
    from tinygrad.engine import realize as engine
    if engine.capturing is not None:
      from tinygrad.engine.jit import JitError
      raise JitError("a TinyJit function read tensor data into Python (numpy/tolist/item/data) while being captured: "
                     "that value would not change on replay; return the tensor from the jitted function instead")
    # a view of a buffer is read through a copy: realizing it would make it a tensor of its own, no longer writing into
    # its base (a view of a lazy computation is realized as usual, so a second read does not compute it again)
    b = self.uop
    while b.op in _MOVEMENT: b = b.src[0]
    t = Tensor(self.uop) if self._view_of is not None and not self._is_realized() and b.op in (Ops.BUFFER, Ops.ASSIGN) else self
    t.realize()
    base = t.uop.src[0] if t.uop.op is Ops.RESHAPE else t.uop
    return buffer_of(base).as_buffer()
  def tolist(self) -> Any:
    """The data as (nested) Python lists; a 0-d tensor gives a Python scalar."""
    if self.dtype.fmt is None or self.dtype.fmt not in "?bBhHiIqQfd" or self.numel() == 0: return self.numpy().tolist()
    # through memoryview, without numpy: keeps a first result from paying numpy's import
    flat = self._host_bytes().cast(self.dtype.fmt).tolist()  # type: ignore[call-overload]
    if not self.shape: return flat[0]
    for n in reversed(self.shape[1:]): flat = [flat[i:i+n] for i in range(0, len(flat), n)]
    return flat
  def item(self) -> ConstType:
    """The value of a one-element tensor as a Python scalar."""
    if self.numel() != 1: raise ValueError(f"item() needs a tensor with exactly one element, got shape {self.shape}")
    return self.numpy().reshape(()).item()
  def data(self) -> memoryview:
    """The realized bytes as a memoryview (cast to the dtype's struct format when it has one)."""
    mv = self._host_bytes()
    if self.dtype.fmt is None or self.numel() == 0 or not self.shape: return mv
    return mv.cast(self.dtype.fmt, self.shape)  # type: ignore[call-overload]
  def schedule(self, *lst: Tensor) -> list:
    """The kernels (ExecItems) that realizing this tensor (and `lst`) would run, without running them."""
    from tinygrad.engine.schedule import create_schedule
    return create_schedule([t.uop for t in (self,) + lst])[0]

  # ---- autograd (tinygrad/gradient.py) ----
  def backward(self, gradient: Tensor | None = None) -> Tensor:
    """Accumulate d(self)/dx into `.grad` of every tensor x with requires_grad that self depends on. Returns self."""
    from tinygrad.gradient import backward
    return backward(self, gradient)
  def gradient(self, *targets: Tensor, gradient: Tensor | None = None, materialize_grads: bool = False) -> list[Tensor]:
    """The gradients of self with respect to `targets`, as new lazy tensors."""
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
  def detach(self) -> Tensor:
    """The same values, with gradients stopped."""
    return Tensor(UOp(Ops.DETACH, self.dtype, (self.uop,)), requires_grad=False)
  def clone(self) -> Tensor:
    """A copy in a new buffer on the same device."""
    return Tensor(UOp(Ops.COPY, self.dtype, (self.uop, UOp(Ops.DEVICE, arg=self.device))))
  def to(self, device: str | None) -> Tensor:
    """This tensor on `device` (a COPY when it differs)."""
    dev = _canon_device(device)
    return self if dev == self.device else Tensor(UOp(Ops.COPY, self.dtype, (self.uop, UOp(Ops.DEVICE, arg=dev))))
  def assign(self, x: Tensor | ConstType | list) -> Tensor:
    """Write `x` into this tensor (in place into its buffer when it is realized). Returns self.

    A view (slices, reshape, permute, flip, shrink, a view of a view) writes into the tensor it views: that tensor and every
    view of it see the new values. A broadcast (expanded) view, or one reaching into padding, cannot be written: an error."""
    if not isinstance(x, Tensor): x = Tensor(x, device=self.device, dtype=self.dtype)
    if x.device != self.device: raise ValueError(f"assign: value is on {x.device}, target on {self.device}; use .to({self.device!r})")
    if x.dtype != self.dtype: raise ValueError(f"assign: value dtype {x.dtype} != target dtype {self.dtype}; cast it first")
    if x.shape != self.shape:
      try: x = x._broadcast_to(self.shape)
      except ValueError: raise ValueError(f"assign: value shape {x.shape} does not fit target shape {self.shape}") from None
    if x is self or x.uop is self.uop: return self
    base = self._view_of
    if base is None:
      self._assign_whole(x.uop)
      return self
    # a realized base is written through its buffer (a realized view may hold that buffer under another reshape)
    buf = _buffer_under(base.uop)
    target = buf if buf is not None else base.uop
    chain = _movement_chain(self.uop, target)
    if chain is None: raise RuntimeError(f"assign: this view (shape {self.shape}) lost track of the tensor it views (shape {base.shape}); "
                                         "assign into that tensor with setitem instead")
    base._assign_whole(_unview(chain, x, Tensor(target)).reshape(base.shape).uop)
    return self
  def _assign_whole(self, v: UOp) -> None:
    if self._is_realized(): new = UOp(Ops.ASSIGN, self.dtype, (self.uop, v))
    elif self.uop.op is Ops.ASSIGN: new = UOp(Ops.ASSIGN, self.dtype, (self.uop.src[0], v))
    else: new = v  # nothing else can see an unrealized tensor's buffer: take the value
    self._graph = None
    self._set_uop(new)
    if new.op is Ops.ASSIGN: pending_assigns[id(self)] = self

  # ---- creation ----
  @staticmethod
  def empty(*shape: Any, device: str | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """An allocated, uninitialized tensor."""
    sh, dt, dev = _check_shape("empty", argfix(*shape)), to_dtype(dtype) if dtype is not None else dtypes.default_float, _canon_device(device)
    if prod(sh) == 0: return Tensor(Tensor._full_uop(sh, 0, dt, dev), **kwargs)
    u = new_buffer(dev, prod(sh), dt)
    buffer_of(u).allocate()
    return Tensor(u.reshape(sh), **kwargs)
  @staticmethod
  def full(shape: tuple[int, ...] | int, fill_value: ConstType, device: str | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (a broadcast constant: no buffer until realized)."""
    sh = (shape,) if isinstance(shape, int) else tuple(shape)
    _check_shape("full", sh)
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
  def arange(start: int | float, stop: int | float | None = None, step: int | float = 1, **kwargs: Any) -> Tensor:
    """Values from `start` up to (not including) `stop` by `step`, like numpy.arange (int32 unless an argument is a float)."""
    if stop is None: start, stop = 0, start
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
    idx = Tensor._arange_index(n, dtypes.int64 if wide else dtypes.int32, dev)
    if ints: ret = idx.cast(dt) * step + start if (start, step) != (0, 1) else idx.cast(dt)
    else:
      # numpy's float fill: start + i*delta in the float type, delta = (start+step) - start rounded to that type
      fdt = least_upper_float(dt)
      f0 = _round_to(start, fdt)
      ret = (idx.cast(fdt) * _round_to(_round_to(start + step, fdt) - f0, fdt) + f0).cast(dt)
    if kwargs: ret.requires_grad = kwargs.get("requires_grad")
    return ret
  @staticmethod
  def _arange_index(n: int, dt: DType, dev: str | None) -> Tensor:
    # 0..n-1: small sizes as a blocked cumsum (it fuses into its user), larger ones as one elementwise kernel from two
    # realized index tables (i = a*B + b), since a cumsum costs each element a reduce over its block
    if n <= 1 << 14: return (Tensor.full((n,), 1, dtype=dtypes.int32, device=dev).cumsum() - 1).cast(dt)
    b = 1 << 14
    a = ceildiv(n, b)
    hi, lo = Tensor._arange_index(a, dt, dev).contiguous(), Tensor._arange_index(b, dt, dev).contiguous()
    return (hi.reshape(a, 1) * b + lo.reshape(1, b)).reshape(a * b).shrink(((0, n),))
  @staticmethod
  def linspace(start: int | float, stop: int | float, steps: int, **kwargs: Any) -> Tensor:
    """`steps` evenly spaced values from `start` to `stop` inclusive."""
    if steps < 0: raise ValueError(f"linspace: steps must be non-negative, got {steps}")
    dt = to_dtype(kwargs.pop("dtype")) if kwargs.get("dtype") is not None else dtypes.default_float
    kwargs.pop("dtype", None)
    if steps <= 1: return Tensor.full((steps,), start, dtype=dt, **kwargs)
    fdt = least_upper_float(dt)
    return (Tensor.arange(steps, dtype=fdt, **kwargs) * ((stop - start) / (steps - 1)) + start).cast(dt)
  @staticmethod
  def eye(n: int, m: int | None = None, **kwargs: Any) -> Tensor:
    """The identity matrix (n x m, ones on the diagonal), built from movement ops only."""
    m_ = n if m is None else m
    if n < 0 or m_ < 0: raise ValueError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    k = max(n, m_)
    dt = kwargs.pop("dtype", None) or dtypes.default_float
    # rows of (1, 0*k) laid end to end and cut into rows of k put the 1 one step further each row
    x = Tensor.ones((k, 1), dtype=dt, **kwargs).pad(((0, 0), (0, k))).flatten().shrink(((0, k*k),)).reshape(k, k)
    return x.shrink(((0, n), (0, m_)))
  def full_like(self, fill_value: ConstType, **kwargs: Any) -> Tensor:
    """A tensor like this one (shape, dtype, device unless given) filled with `fill_value`."""
    return Tensor.full(self.shape, fill_value, dtype=kwargs.pop("dtype", self.dtype), device=kwargs.pop("device", self.device), **kwargs)
  def zeros_like(self, **kwargs: Any) -> Tensor:
    """Zeros shaped like this tensor."""
    return self.full_like(0, **kwargs)
  def ones_like(self, **kwargs: Any) -> Tensor:
    """Ones shaped like this tensor."""
    return self.full_like(1, **kwargs)
  def empty_like(self, **kwargs: Any) -> Tensor:
    """An uninitialized tensor shaped like this one."""
    return Tensor.empty(self.shape, dtype=kwargs.pop("dtype", self.dtype), device=kwargs.pop("device", self.device), **kwargs)

  # ---- random: threefry2x32-20 run as kernels on the tensor's device, keyed by the seed, counted per device ----
  # Each device holds a realized uint32 state [key0, key1, calls]. A random call snapshots it and bumps `calls` in place
  # (one schedule: the scheduler orders the snapshot's read before the assign's write), then hashes the counter block
  # (element index, calls) under the key. Under TinyJit the snapshot and the bump are captured kernels, so every replay
  # draws fresh numbers; manual_seed rewrites the same buffers, so it also reaches captured jits. The snapshot and the bump
  # run when the random tensor is built (two 3-element kernels), so the numbers follow call order, not realize order.
  # (a state lives in a buffer of the opened device it was made on: after Device.reset() that device is gone, and a state
  # of it is dropped, never assigned: a reopened WEBGPU rejects the old device's buffers)
  _rng_states: dict[str, tuple[Any, Tensor]] = {}
  @staticmethod
  def manual_seed(seed: int = 0) -> None:
    """Seed the random generator: key = seed, every device's counter back to 0, so what follows is reproducible on any device."""
    from tinygrad.device import Device
    Tensor._seed = seed
    for dev, (opened, st) in list(Tensor._rng_states.items()):
      if Device.opened(dev) is opened: st.assign(Tensor._rng_init(dev)).realize()
      else: del Tensor._rng_states[dev]
  @staticmethod
  def _rng_state(dev: str) -> Tensor:
    """The device's generator state (made on first use, and again when the device was reopened)."""
    from tinygrad.device import Device
    opened = Device[dev]
    if (ent := Tensor._rng_states.get(dev)) is None or ent[0] is not opened: ent = Tensor._rng_states[dev] = (opened, Tensor._rng_init(dev))
    return ent[1]
  @staticmethod
  def _rng_init(dev: str) -> Tensor:
    return Tensor([Tensor._seed & 0xFFFFFFFF, (Tensor._seed >> 32) & 0xFFFFFFFF, 0], dtype=dtypes.uint32, device=dev)
  @staticmethod
  def _iota(n: int, dev: str) -> Tensor:
    """0..n-1 as uint32 from base-256 digits (tiny uploaded aranges, broadcast and summed): no O(n) scan, no host n-array."""
    digits = max(1, math.ceil(math.log(max(n, 2), 256) - 1e-9))
    base = Tensor(list(range(256)), dtype=dtypes.uint32, device=dev)
    ret = functools.reduce(Tensor.add, (base.reshape(*[1] * k, 256, *[1] * (digits - k - 1)) * (256 ** (digits - k - 1)) for k in range(digits)))
    return ret.expand((256,) * digits).flatten().shrink(((0, n),))
  @staticmethod
  def _threefry2x32(c0: Tensor, c1: Tensor, k0: Tensor, k1: Tensor) -> tuple[Tensor, Tensor]:
    """Random123's threefry2x32 with 20 rounds on uint32 tensors (counter block (c0, c1), key (k0, k1)) -> 2 output words."""
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = c0 + k0, c1 + k1
    for i in range(20):
      r = (13, 15, 26, 6, 17, 29, 16, 24)[i % 8]   # the rotation constants R_32x2
      x0 = x0 + x1
      x1 = ((x1 << r) | (x1 >> (32 - r))) ^ x0
      if i % 4 == 3:   # key injection every 4 rounds
        s = i // 4 + 1
        x0, x1 = x0 + ks[s % 3], x1 + ks[(s + 1) % 3] + s
    return x0, x1
  @staticmethod
  def _random_bits(shape: tuple[int, ...], device: str | None) -> tuple[Tensor, Tensor]:
    """Two independent uint32 words per element of `shape` (numel > 0), advancing the device's counter by one call."""
    dev, num = _canon_device(device), prod(shape)
    if num >= 2**32: raise ValueError(f"random tensors are limited to 2**32 - 1 elements per call, got shape {shape} ({num})")
    st = Tensor._rng_state(dev)
    snap = st.contiguous()
    st.assign(st + Tensor.ones(1, dtype=dtypes.uint32, device=dev).pad(((2, 0),)))
    Tensor.realize(snap, st)
    k0, k1, calls = (snap.shrink(((i, i + 1),)) for i in range(3))
    x0, x1 = Tensor._threefry2x32(Tensor._iota(num, dev), calls, k0, k1)
    return x0.reshape(shape), x1.reshape(shape)
  @staticmethod
  def _uniform_bits(x0: Tensor, x1: Tensor, dtype: DType) -> Tensor:
    """Bits -> [0, 1): float64 from 52 bits (26 of each word, exact sum); other floats by mantissa fill in float32 with only
    as many bits as the target keeps (float32 23, float16 10, bfloat16 7), so the cast is exact and never rounds up to 1."""
    if dtype == dtypes.float64: return (x0 >> 6).cast(dtypes.float64) * 2.0**-26 + (x1 >> 6).cast(dtypes.float64) * 2.0**-52
    m = {dtypes.float16: 10, dtypes.bfloat16: 7}.get(dtype, 23)
    return (((x0 >> (32 - m)) << (23 - m)) | 0x3F800000).bitcast(dtypes.float32).sub(1.0).cast(dtype)
  @staticmethod
  def _random_dtype(name: str, dtype: DType | str | None, kind: str = "float") -> DType:
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    ok, valid = (dtypes.is_float, dtypes.floats) if kind == "float" else (dtypes.is_int, dtypes.ints)
    if not ok(dt): raise ValueError(f"{name} needs {'a float' if kind == 'float' else 'an int'} dtype, got {_dtname(dt)}; valid: {', '.join(map(_dtname, valid))}")
    return dt
  @staticmethod
  def rand(*shape: Any, device: str | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """Uniform random values in [0, 1), generated on `device` (threefry2x32; see manual_seed)."""
    sh, dt = argfix(*shape), Tensor._random_dtype("rand", dtype)
    ret = Tensor.zeros(sh, dtype=dt, device=device) if prod(sh) == 0 else Tensor._uniform_bits(*Tensor._random_bits(sh, device), dt)
    ret.requires_grad = kwargs.get("requires_grad")
    return ret
  @staticmethod
  def randn(*shape: Any, device: str | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """Standard normal random values (Box-Muller on two uniforms per element, in float32; float64 in float64)."""
    sh, dt = argfix(*shape), Tensor._random_dtype("randn", dtype)
    if prod(sh) == 0: ret = Tensor.zeros(sh, dtype=dt, device=device)
    else:
      x0, x1 = Tensor._random_bits(sh, device)
      cdt = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
      # 1 - u is in (0, 1]: the log stays finite (|z| <= 5.8 in float32)
      u1, u2 = (1.0 - (x0 >> 8).cast(cdt) * 2.0**-24), (x1 >> 8).cast(cdt) * 2.0**-24
      ret = ((-2.0 * u1.log()).sqrt() * (u2 * (2 * math.pi)).cos()).cast(dt)
    ret.requires_grad = kwargs.get("requires_grad")
    return ret
  @staticmethod
  def randint(*shape: Any, low: int = 0, high: int = 10, device: str | None = None, dtype: DType | str = dtypes.int32, **kwargs: Any) -> Tensor:
    """Random integers in [low, high): the high word of bits * (high - low) (bias below (high-low)/2**32), or for a range
    above 2**32 (64-bit dtypes) the 64-bit bits modulo the range (bias below range/2**64)."""
    if not isinstance(low, int) or not isinstance(high, int): raise TypeError(f"randint: low and high must be ints, got {low!r}, {high!r}")
    if high <= low: raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    dt, sh = Tensor._random_dtype("randint", dtype, "int"), argfix(*shape)
    if low < dtypes.min(dt) or high - 1 > dtypes.max(dt):  # type: ignore[operator]
      raise ValueError(f"randint: [{low}, {high}) does not fit {_dtname(dt)} ([{dtypes.min(dt)}, {dtypes.max(dt)}]); use a wider dtype")
    if prod(sh) == 0: return Tensor.zeros(sh, dtype=dt, device=device)
    x0, x1 = Tensor._random_bits(sh, device)
    r = high - low
    if r > 2**32: v = ((x1.cast(dtypes.uint64) << 32) | x0.cast(dtypes.uint64)) % r
    else:   # mulhi32(x0, r) from 16-bit limbs: every partial product fits uint32
      al, ah, bl, bh = x0 & 0xFFFF, x0 >> 16, r & 0xFFFF, r >> 16
      mid = ((al * bl) >> 16) + ((al * bh) & 0xFFFF) + ((ah * bl) & 0xFFFF)
      v = ah * bh + ((al * bh) >> 16) + ((ah * bl) >> 16) + (mid >> 16)
    udt, sdt = (dtypes.uint64, dtypes.int64) if dt.itemsize == 8 else (dtypes.uint32, dtypes.int32)
    w = v.cast(udt) + low % 2**(8 * udt.itemsize)   # unsigned adds wrap: exact modulo 2**bits, and the result fits dt
    return w.cast(dt) if dtypes.is_unsigned(dt) else w.bitcast(sdt).cast(dt)
  @staticmethod
  def randperm(n: int, device: str | None = None, dtype: DType | str = dtypes.int32, **kwargs: Any) -> Tensor:
    """A random permutation of 0..n-1: the rank of each index's random key (ties by index), as n x n kernels (for modest n)."""
    dt = Tensor._random_dtype("randperm", dtype, "int")
    if n < 0: raise ValueError(f"randperm: n must be >= 0, got {n}")
    if n == 0: return Tensor.zeros(0, dtype=dt, device=device)
    keys = Tensor._random_bits((n,), device)[0]
    return Tensor._rank_select(keys.unsqueeze(0), n)[0].cast(dt)
  @staticmethod
  def _rank_select(keys: Tensor, k: int) -> Tensor:
    """For each row of `keys` (b, n), the indices of its k largest keys, largest first (equal keys: lower index first)."""
    n, dev = keys.shape[-1], keys.device
    ar = Tensor._iota(n, dev).cast(dtypes.int32)
    ki, kj = keys.unsqueeze(-1), keys.unsqueeze(-2)
    before = (kj > ki) | ((kj == ki) & (ar.unsqueeze(0) < ar.unsqueeze(1)))   # [.., i, j]: j ranks ahead of i
    rank = before.cast(dtypes.int32).sum(-1)                                     # (b, n): a permutation of 0..n-1 per row
    hit = rank.unsqueeze(-2) == ar.shrink(((0, k),)).unsqueeze(-1)               # (b, k, n): index i has rank r
    return hit.where(ar, 0).sum(-1)
  def multinomial(self, num_samples: int = 1, replacement: bool = False) -> Tensor:
    """Indices (int32) drawn from the categories weighted by this 1-d (n,) or 2-d (b, n) tensor, like torch.multinomial:
    with replacement by searching the normalized cumulative sum, without it by the largest log(u)/w keys (exponential races,
    the same law as drawing one by one); zero-weight categories come only after every positive one."""
    if self.ndim not in (1, 2): raise ValueError(f"multinomial needs 1-d or 2-d weights, got shape {self.shape}")
    if num_samples < 1: raise ValueError(f"multinomial: num_samples must be >= 1, got {num_samples}")
    w = (self.unsqueeze(0) if self.ndim == 1 else self)._float()
    b, n = w.shape
    if n == 0: raise ValueError("multinomial: the weights have no categories (shape {self.shape})")
    if not replacement and num_samples > n:
      raise ValueError(f"multinomial without replacement: num_samples ({num_samples}) > number of categories ({n}); use replacement=True")
    if replacement:
      cdf = w.cumsum(1)
      cdf = cdf / cdf.shrink((None, (n - 1, n)))
      u = Tensor.rand(b, num_samples, 1, device=self.device, dtype=cdf.dtype)
      ret = (cdf.unsqueeze(1) <= u).cast(dtypes.int32).sum(2).minimum(n - 1)
    else:
      u = 1.0 - Tensor.rand(b, n, device=self.device, dtype=w.dtype)   # (0, 1]
      ret = Tensor._rank_select((w > 0).where(u.log() / w, -math.inf), num_samples)
    return ret[0] if self.ndim == 1 else ret
  def dropout(self, p: float = 0.5) -> Tensor:
    """While Tensor.training, zero each element with probability p and scale the rest by 1/(1-p); else the tensor itself."""
    if not 0 <= p < 1: raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    if not Tensor.training or p == 0: return self
    return (Tensor.rand(*self.shape, device=self.device) >= p).where(self, 0) * (1 / (1 - p))
  @staticmethod
  def uniform(*shape: Any, low: float = 0.0, high: float = 1.0, **kwargs: Any) -> Tensor:
    """Uniform random values in [low, high)."""
    dt, rg = kwargs.pop("dtype", None) or dtypes.default_float, kwargs.pop("requires_grad", None)
    ret = (Tensor.rand(*shape, **kwargs) * (high - low) + low).cast(dt)
    ret.requires_grad = rg
    return ret
  @staticmethod
  def normal(*shape: Any, mean: float = 0.0, std: float = 1.0, **kwargs: Any) -> Tensor:
    """Normal random values with `mean` and `std`."""
    rg = kwargs.pop("requires_grad", None)
    ret = Tensor.randn(*shape, **kwargs) * std + mean
    ret.requires_grad = rg
    return ret
  @staticmethod
  def scaled_uniform(*shape: Any, **kwargs: Any) -> Tensor:
    """Uniform in [-1, 1) scaled by 1/sqrt(numel)."""
    return Tensor.uniform(*shape, low=-1.0, high=1.0, **kwargs) * (prod(argfix(*shape)) ** -0.5)
  @staticmethod
  def glorot_uniform(*shape: Any, **kwargs: Any) -> Tensor:
    """Glorot/Xavier uniform initialization."""
    sh = argfix(*shape)
    bound = (6 / (sh[0] + prod(sh[1:]))) ** 0.5
    return Tensor.uniform(*sh, low=-bound, high=bound, **kwargs)
  @staticmethod
  def kaiming_uniform(*shape: Any, a: float = 0.01, **kwargs: Any) -> Tensor:
    """Kaiming/He uniform initialization (leaky-relu gain with slope `a`)."""
    sh = argfix(*shape)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(sh[1:]))
    return Tensor.uniform(*sh, low=-bound, high=bound, **kwargs)
  @staticmethod
  def kaiming_normal(*shape: Any, a: float = 0.01, **kwargs: Any) -> Tensor:
    """Kaiming/He normal initialization."""
    sh = argfix(*shape)
    std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(sh[1:]))
    return Tensor.normal(*sh, mean=0.0, std=std, **kwargs)
  def rand_like(self, **kwargs: Any) -> Tensor:
    """Uniform random values shaped like this tensor."""
    dt = kwargs.pop("dtype", self.dtype)
    return Tensor.rand(*self.shape, device=kwargs.pop("device", self.device), dtype=dt if dtypes.is_float(to_dtype(dt)) else dtypes.default_float, **kwargs)
  def randn_like(self, **kwargs: Any) -> Tensor:
    """Normal random values shaped like this tensor."""
    dt = kwargs.pop("dtype", self.dtype)
    return Tensor.randn(*self.shape, device=kwargs.pop("device", self.device), dtype=dt if dtypes.is_float(to_dtype(dt)) else dtypes.default_float, **kwargs)

  # ---- dtype ----
  def cast(self, dtype: DType | str) -> Tensor:
    """The values converted to `dtype` (float -> int truncates toward zero)."""
    dt = to_dtype(dtype)
    return self if dt == self.dtype else Tensor(self.uop.cast(dt))
  def bitcast(self, dtype: DType | str) -> Tensor:
    """The same bits read as `dtype` (which must have the same item size)."""
    dt = to_dtype(dtype)
    if dt.itemsize != self.dtype.itemsize: raise ValueError(f"bitcast from {self.dtype} ({self.dtype.itemsize} bytes) to {dt} ({dt.itemsize} bytes): sizes differ")
    return self if dt == self.dtype else Tensor(self.uop.bitcast(dt))
  def _float(self) -> Tensor: return self.cast(least_upper_float(self.dtype))

  # ---- views ----
  def _mv(self, u: UOp) -> Tensor:
    """A movement-op view of this tensor: assigning into it writes into the tensor it views (and every other view sees it)."""
    ret = Tensor(u)
    base = self._view_of if self._view_of is not None else self
    ret._view_of = base
    if base._views is None: base._views = weakref.WeakValueDictionary()
    base._views[id(ret)] = ret
    return ret
  def _set_uop(self, new: UOp) -> None:
    """Rebind this tensor's graph; its views follow (each one's movement ops now read the new graph)."""
    old, self.uop = self.uop, new
    if old is new or not self._views: return
    for v in list(self._views.values()):
      if (chain := _movement_chain(v.uop, old)) is None: continue
      u = new
      for n in reversed(chain): u = n.replace(src=(u,) + n.src[1:])
      v.uop = u
  def _detach_view(self) -> None:
    if self._view_of is not None and self._view_of._views is not None: self._view_of._views.pop(id(self), None)
    self._view_of = None

  # ---- broadcasting ----
  def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
    if self.shape == shape: return self
    if len(shape) < self.ndim: raise ValueError(f"cannot broadcast shapes {self.shape} and {shape}")
    padded = (1,) * (len(shape) - self.ndim) + self.shape
    if any(s != t and s != 1 for s, t in zip(padded, shape)): raise ValueError(f"cannot broadcast shapes {self.shape} and {shape}")
    return self._mv(self.uop.reshape(padded).expand(shape))
  def _to_tensor(self, y: Any, dtype: DType | None = None) -> Tensor:
    """`y` as a Tensor on this device; Python scalars are weak: they take this tensor's dtype when they fit its kind."""
    if isinstance(y, Tensor): return y
    if _is_scalar(y):
      if dtype is None:
        weak = dtypes.is_float(self.dtype) or (dtypes.is_int(self.dtype) and isinstance(y, int) and not isinstance(y, bool))
        dtype = self.dtype if weak else dtypes.from_py(y)
        if weak: _check_int(y, dtype, f"cast the tensor first, e.g. t.cast(dtypes.int64), to compute with {y}")
      return self._const(y, dtype)
    return Tensor(y, device=self.device)
  def _broadcasted(self, y: Any, reverse: bool = False, match_dtype: bool = True) -> tuple[Tensor, Tensor]:
    x, t = self, self._to_tensor(y)
    if reverse: x, t = t, x
    if x.device != t.device: raise ValueError(f"tensors on different devices: {x.device} and {t.device}; move one with .to()")
    if match_dtype and x.dtype != t.dtype:
      out = least_upper_dtype(x.dtype, t.dtype)
      x, t = x.cast(out), t.cast(out)
    shape = _broadcast_shape(x.shape, t.shape)
    return x._broadcast_to(shape), t._broadcast_to(shape)
  def _alu(self, op: Ops, *src: Tensor) -> Tensor: return Tensor(self.uop.alu(op, *(s.uop for s in src)))

  # ---- elementwise binary ----
  def add(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self + x (with broadcasting and dtype promotion)."""
    a, b = self._broadcasted(x, reverse)
    return a._alu(Ops.ADD, b)
  def sub(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self - x (bool - bool is an error, as in numpy and torch)."""
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_bool(a.dtype): raise TypeError("subtracting bool tensors is not supported; use ^ (xor) or logical_not() instead")
    return a._alu(Ops.SUB, b)
  def mul(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self * x."""
    a, b = self._broadcasted(x, reverse)
    return a._alu(Ops.MUL, b)
  def div(self, x: Tensor | ConstType, reverse: bool = False, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division (ints promote to float); rounding_mode "trunc" or "floor" rounds the quotient."""
    if rounding_mode == "floor": return self._floordiv(x, reverse)
    if rounding_mode == "trunc":
      a, b = self._broadcasted(x, reverse)
      return a._int_divmod(b)[0] if dtypes.is_int(a.dtype) else (a / b).trunc()
    if rounding_mode is not None: raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    a, b = self._broadcasted(x, reverse)
    fdt = least_upper_float(a.dtype)
    return a.cast(fdt)._alu(Ops.FDIV, b.cast(fdt))
  def _int_divmod(self, y: Tensor, yval: Any = None) -> tuple[Tensor, Tensor]:
    """C (truncating) quotient and remainder of ints; x/0 gives 0 and MIN/-1 wraps, as numpy (and no trap on the device)."""
    if dtypes.is_unsigned(self.dtype) or dtypes.is_bool(self.dtype) or (isinstance(yval, int) and yval not in (0, -1)):
      return self._alu(Ops.IDIV, y), self._alu(Ops.MOD, y)
    bad = (y == 0) | (y == -1)
    ys = bad.where(1, y)
    q, r = self._alu(Ops.IDIV, ys), self._alu(Ops.MOD, ys)
    return (y == 0).where(0, (y == -1).where(-self, q)), r
  def idiv(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Integer division rounding toward zero (C semantics)."""
    a, b = self._broadcasted(x, reverse)
    if not dtypes.is_int(a.dtype): raise TypeError(f"idiv needs int tensors, got {a.dtype}")
    return a._int_divmod(b, None if reverse else x)[0]
  def _floordiv(self, x: Any, reverse: bool = False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): return (a / b).floor()
    if dtypes.is_bool(a.dtype): a, b = a.int(), b.int()
    q, r = a._int_divmod(b, None if reverse else x)
    if dtypes.is_unsigned(a.dtype): return q
    # truncation rounds up when the remainder's sign differs from the divisor's: step down by one
    return ((r != 0) & ((r < 0) != (b < 0))).where(q - 1, q)
  def mod(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise remainder with Python/numpy semantics (the result has the divisor's sign)."""
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): return a - b * (a / b).floor()
    if dtypes.is_bool(a.dtype): a, b = a.int(), b.int()
    r = a._int_divmod(b, None if reverse else x)[1]
    if dtypes.is_unsigned(a.dtype): return r
    return ((r != 0) & ((r < 0) != (b < 0))).where(r + b, r)
  def _bitwise(self, op: Ops, x: Any, reverse: bool, name: str) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): raise TypeError(f"{name} needs int or bool tensors, got {a.dtype}")
    return a._alu(op, b)
  def bitwise_and(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical and (ints and bools)."""
    return self._bitwise(Ops.AND, x, reverse, "bitwise and")
  def bitwise_or(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical or (ints and bools)."""
    return self._bitwise(Ops.OR, x, reverse, "bitwise or")
  def xor(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical xor (ints and bools)."""
    return self._bitwise(Ops.XOR, x, reverse, "bitwise xor")
  def bitwise_not(self) -> Tensor:
    """Elementwise ~x: bit inversion for ints, logical not for bools."""
    if dtypes.is_float(self.dtype): raise TypeError(f"bitwise not needs int or bool tensors, got {self.dtype}")
    return self.logical_not() if dtypes.is_bool(self.dtype) else self.xor(-1 if not dtypes.is_unsigned(self.dtype) else dtypes.max(self.dtype))
  def lshift(self, x: Tensor | int, reverse: bool = False) -> Tensor:
    """Elementwise shift left (ints)."""
    a, b = self._broadcasted(x, reverse)
    if not dtypes.is_int(a.dtype): raise TypeError(f"shift needs int tensors, got {a.dtype}")
    return a._alu(Ops.SHL, b)
  def rshift(self, x: Tensor | int, reverse: bool = False) -> Tensor:
    """Elementwise shift right (ints; arithmetic for signed)."""
    a, b = self._broadcasted(x, reverse)
    if not dtypes.is_int(a.dtype): raise TypeError(f"shift needs int tensors, got {a.dtype}")
    return a._alu(Ops.SHR, b)
  def _inverse(self) -> Tensor:
    # an order-reversing map: min(x) = inverse(max(inverse(x)))
    if dtypes.is_float(self.dtype): return -self
    return self.logical_not() if dtypes.is_bool(self.dtype) else self.bitwise_not()
  def maximum(self, x: Tensor | ConstType) -> Tensor:
    """Elementwise maximum."""
    a, b = self._broadcasted(x)
    return a._alu(Ops.MAX, b)
  def minimum(self, x: Tensor | ConstType) -> Tensor:
    """Elementwise minimum."""
    a, b = self._broadcasted(x)
    return a._inverse().maximum(b._inverse())._inverse()
  def where(self: Tensor, x: Tensor | ConstType, y: Tensor | ConstType) -> Tensor:
    """Elementwise `x if self else y` (self is the condition; all three broadcast together)."""
    if isinstance(x, Tensor): x_, y_ = x._broadcasted(y)
    elif isinstance(y, Tensor): y_, x_ = y._broadcasted(x)
    else:
      dt = least_upper_dtype(dtypes.from_py(x), dtypes.from_py(y))
      x_, y_ = self._const(x, dt), self._const(y, dt)
    cond = self.cast(dtypes.bool)
    shape = _broadcast_shape(cond.shape, x_.shape, y_.shape)
    cond, x_, y_ = cond._broadcast_to(shape), x_._broadcast_to(shape), y_._broadcast_to(shape)
    return Tensor(UOp(Ops.WHERE, x_.dtype, (cond.uop, x_.uop, y_.uop)))
  def masked_fill(self, mask: Tensor, value: Tensor | ConstType) -> Tensor:
    """`value` where mask is True, else self."""
    return mask.where(value, self)

  # ---- comparisons (bool results) ----
  def _cmp_widen(self, x: Any) -> Tensor:
    # a Python int past this int dtype compares exactly, as numpy 2 does (t < 2**40 is True): compare in a dtype that holds both
    if dtypes.is_int(self.dtype) and isinstance(x, int) and not isinstance(x, bool) and not dtypes.min(self.dtype) <= x <= dtypes.max(self.dtype):
      return self.cast(least_upper_dtype(self.dtype, dtypes.from_py(x)))
    return self
  def _cmp(self, op: Ops, x: Any, reverse: bool = False) -> Tensor:
    a, b = self._cmp_widen(x)._broadcasted(x, reverse)
    return a._alu(op, b)
  def __lt__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPLT, x)
  def __gt__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPLT, x, True)
  def __le__(self, x: Any) -> Tensor:
    a, b = self._cmp_widen(x)._broadcasted(x)
    return (a < b) | (a == b) if dtypes.is_float(a.dtype) else (b < a).logical_not()
  def __ge__(self, x: Any) -> Tensor:
    a, b = self._cmp_widen(x)._broadcasted(x)
    return (b < a) | (a == b) if dtypes.is_float(a.dtype) else (a < b).logical_not()
  def __eq__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPEQ, x)  # type: ignore[override]
  def __ne__(self, x: Any) -> Tensor: return self._cmp(Ops.CMPNE, x)  # type: ignore[override]
  def eq(self, x: Tensor | ConstType) -> Tensor:
    """Elementwise ==."""
    return self._cmp(Ops.CMPEQ, x)
  def ne(self, x: Tensor | ConstType) -> Tensor:
    """Elementwise !=."""
    return self._cmp(Ops.CMPNE, x)
  def logical_not(self) -> Tensor:
    """Elementwise not (True where the value is zero/False)."""
    return self._alu(Ops.CMPNE, self._const(True, dtypes.bool, self.shape)) if dtypes.is_bool(self.dtype) else (self == 0)
  def isnan(self) -> Tensor:
    """True where the value is NaN."""
    return self != self if dtypes.is_float(self.dtype) else self._const(False, dtypes.bool, self.shape)
  def isinf(self, detect_positive: bool = True, detect_negative: bool = True) -> Tensor:
    """True where the value is +inf (detect_positive) or -inf (detect_negative)."""
    if not dtypes.is_float(self.dtype): return self._const(False, dtypes.bool, self.shape)
    pos, neg = self == math.inf, self == -math.inf
    if detect_positive and detect_negative: return pos | neg
    return pos if detect_positive else neg if detect_negative else self._const(False, dtypes.bool, self.shape)
  def isfinite(self) -> Tensor:
    """True where the value is neither inf nor NaN."""
    return (self.isinf() | self.isnan()).logical_not()

  # ---- python operators ----
  def __add__(self, x: Any) -> Tensor: return self.add(x)
  def __radd__(self, x: Any) -> Tensor: return self.add(x, True)
  def __sub__(self, x: Any) -> Tensor: return self.sub(x)
  def __rsub__(self, x: Any) -> Tensor: return self.sub(x, True)
  def __mul__(self, x: Any) -> Tensor: return self.mul(x)
  def __rmul__(self, x: Any) -> Tensor: return self.mul(x, True)
  def __truediv__(self, x: Any) -> Tensor: return self.div(x)
  def __rtruediv__(self, x: Any) -> Tensor: return self.div(x, True)
  def __floordiv__(self, x: Any) -> Tensor: return self._floordiv(x)
  def __rfloordiv__(self, x: Any) -> Tensor: return self._floordiv(x, True)
  def __mod__(self, x: Any) -> Tensor: return self.mod(x)
  def __rmod__(self, x: Any) -> Tensor: return self.mod(x, True)
  def __pow__(self, x: Any) -> Tensor: return self.pow(x)
  def __rpow__(self, x: Any) -> Tensor: return self.pow(x, True)
  def __matmul__(self, x: Tensor) -> Tensor: return self.matmul(x)
  def __rmatmul__(self, x: Tensor) -> Tensor: return self._to_tensor(x).matmul(self)
  def __and__(self, x: Any) -> Tensor: return self.bitwise_and(x)
  def __rand__(self, x: Any) -> Tensor: return self.bitwise_and(x, True)
  def __or__(self, x: Any) -> Tensor: return self.bitwise_or(x)
  def __ror__(self, x: Any) -> Tensor: return self.bitwise_or(x, True)
  def __xor__(self, x: Any) -> Tensor: return self.xor(x)
  def __rxor__(self, x: Any) -> Tensor: return self.xor(x, True)
  def __lshift__(self, x: Any) -> Tensor: return self.lshift(x)
  def __rlshift__(self, x: Any) -> Tensor: return self.lshift(x, True)
  def __rshift__(self, x: Any) -> Tensor: return self.rshift(x)
  def __rrshift__(self, x: Any) -> Tensor: return self.rshift(x, True)
  def __invert__(self) -> Tensor: return self.bitwise_not()
  # in-place operators are assigns (public tinygrad: `x += y` is `x.assign(x + y)`): they write the tensor's buffer, so a
  # jitted counter `s.c += 1` advances on every replay
  def __iadd__(self, x: Any) -> Tensor: return self._inplace(self + x, "+=")
  def __isub__(self, x: Any) -> Tensor: return self._inplace(self - x, "-=")
  def __imul__(self, x: Any) -> Tensor: return self._inplace(self * x, "*=")
  def __itruediv__(self, x: Any) -> Tensor: return self._inplace(self / x, "/=")
  def __ifloordiv__(self, x: Any) -> Tensor: return self._inplace(self // x, "//=")
  def __imod__(self, x: Any) -> Tensor: return self._inplace(self % x, "%=")
  def __imatmul__(self, x: Tensor) -> Tensor: return self._inplace(self @ x, "@=")
  def __ipow__(self, x: Any) -> Tensor: return self._inplace(self ** x, "**=")
  def __iand__(self, x: Any) -> Tensor: return self._inplace(self & x, "&=")
  def __ior__(self, x: Any) -> Tensor: return self._inplace(self | x, "|=")
  def __ixor__(self, x: Any) -> Tensor: return self._inplace(self ^ x, "^=")
  def __ilshift__(self, x: Any) -> Tensor: return self._inplace(self << x, "<<=")
  def __irshift__(self, x: Any) -> Tensor: return self._inplace(self >> x, ">>=")
  def _inplace(self, r: Tensor, op: str) -> Tensor:
    if r.shape != self.shape:
      raise ValueError(f"in-place {op}: the result has shape {r.shape} but the tensor has shape {self.shape}; "
                       f"an in-place op cannot change the shape (use x = x {op[:-1]} y for a new tensor)")
    if r.dtype != self.dtype:
      # torch's in-place rule: the result may be cast back unless that changes its kind (float -> int, number -> bool)
      if (dtypes.is_float(r.dtype) and not dtypes.is_float(self.dtype)) or (self.dtype == dtypes.bool and r.dtype != dtypes.bool):
        raise TypeError(f"in-place {op}: result type {r.dtype} can't be cast to the tensor's dtype {self.dtype}; "
                        f"use x = x {op[:-1]} y for a new tensor, or cast the tensor first")
      r = r.cast(self.dtype)
    return self.assign(r)
  def __neg__(self) -> Tensor: return self.neg()
  def __abs__(self) -> Tensor: return self.abs()

  # ---- elementwise unary ----
  def neg(self) -> Tensor:
    """Elementwise -x (logical not for bools)."""
    return self.logical_not() if dtypes.is_bool(self.dtype) else Tensor(UOp(Ops.NEG, self.dtype, (self.uop,)))
  def abs(self) -> Tensor:
    """Elementwise |x|."""
    if dtypes.is_unsigned(self.dtype) or dtypes.is_bool(self.dtype): return self
    return (self <= 0).where(-self, self) if not dtypes.is_float(self.dtype) else (self <= 0).where(0 - self, self)
  def sign(self) -> Tensor:
    """Elementwise -1, 0 or 1 (NaN stays NaN)."""
    ret = (self != 0).where((self < 0).where(self._const(-1 if not dtypes.is_unsigned(self.dtype) else 0), self._const(1)), self._const(0))
    return ret + self * 0 if dtypes.is_float(self.dtype) else ret
  def _unary(self, op: Ops) -> Tensor:
    x = self._float()
    return Tensor(UOp(op, x.dtype, (x.uop,)))
  def exp2(self) -> Tensor:
    """Elementwise 2**x."""
    return self._unary(Ops.EXP2)
  def log2(self) -> Tensor:
    """Elementwise base-2 logarithm."""
    return self._unary(Ops.LOG2)
  def exp(self) -> Tensor:
    """Elementwise e**x: 2**(r/ln2) * 2**n with n = round(x/ln2) and r = x - n*ln2 in two parts (Cody-Waite), so the
    rounding of x/ln2 does not cost accuracy for large x. 2**n is exact: built in the exponent field (kept normal), then
    one multiply by 2**-64 or 2 that rounds once where the result is subnormal or overflows (one exp2, not three: an exp2
    decomposed from arithmetic, as on the CPU, costs ~40 ops). float16/bfloat16 compute in float32."""
    x = self._float()
    if x.dtype in (dtypes.float16, dtypes.bfloat16): return x.float().exp().cast(x.dtype)
    f64 = x.dtype == dtypes.float64
    # ln2 split so that n*hi is exact (n has at most 11 bits for float64, 8 for float32); past the clamp e**x rounds to 0
    # (below half the smallest subnormal) or overflows, as it does at the clamp itself
    (lo_lim, hi_lim), hi, lo = ((-746.0, 710.0), 0.6931471803691238, 1.9082149292705877e-10) if f64 else \
                                ((-104.0, 89.0), 0.693145751953125, 1.428606765330187e-06)
    xc = (x > hi_lim).where(hi_lim, (x < lo_lim).where(lo_lim, x))  # keeps NaN; +-inf end at inf / 0
    n = (xc * (1 / math.log(2)) + 0.5).floor()
    r = (xc - n * hi) - n * lo
    bias, mb, idt = (1023, 52, dtypes.int64) if f64 else (127, 23, dtypes.int32)
    small, big = n < 1 - bias, n > bias
    e = small.where(n + 64, big.where(n - 1, n))
    p2 = ((xc.ne(xc).where(0, e).cast(idt) + bias) << mb).bitcast(x.dtype)   # 2**e, normal (NaN's e: any value)
    # e**r, |r| <= ln2/2, by Taylor to the degree whose remainder is below 1/16 ulp (7 for float32, 13 for float64)
    poly = r * (1 / math.factorial(13 if f64 else 7)) + 1 / math.factorial(12 if f64 else 6)
    for i in reversed(range(12 if f64 else 6)): poly = poly * r + 1 / math.factorial(i)
    return poly * p2 * small.where(2.0**-64, big.where(2.0, 1.0))
  def log(self) -> Tensor:
    """Elementwise natural logarithm."""
    return self.log2() * math.log(2)
  def sqrt(self) -> Tensor:
    """Elementwise square root."""
    return self._unary(Ops.SQRT)
  def rsqrt(self) -> Tensor:
    """Elementwise 1/sqrt(x)."""
    return self.sqrt().reciprocal()
  def reciprocal(self) -> Tensor:
    """Elementwise 1/x."""
    return self._unary(Ops.RECIPROCAL)
  def sin(self) -> Tensor:
    """Elementwise sine."""
    return self._unary(Ops.SIN)
  def cos(self) -> Tensor:
    """Elementwise cosine from SIN of exactly representable arguments (pi/2 - x would round away accuracy for large x):
    sin(2x) / (2 sin x) in general, 1 - 2 sin(x/2)**2 near 0 and where 2x overflows."""
    x = self._float()
    half = x * 0.5
    via_half = 1 - 2 * half.sin().square()
    via_double = (x * 2).sin() / (2 * x.sin())
    big = {dtypes.float16: 32752.0, dtypes.bfloat16: 1.69e38, dtypes.float32: 1.7e38}.get(x.dtype, 8.9e307)  # about max/2
    return ((x.abs() < 0.5) | (x.abs() > big)).where(via_half, via_double)
  def tan(self) -> Tensor:
    """Elementwise tangent."""
    return self.sin() / self.cos()
  def square(self) -> Tensor:
    """Elementwise x*x."""
    return self * self
  def trunc(self) -> Tensor:
    """Elementwise rounding toward zero."""
    return Tensor(UOp(Ops.TRUNC, self.dtype, (self.uop,))) if dtypes.is_float(self.dtype) else self
  def floor(self) -> Tensor:
    """Elementwise rounding down."""
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return (t > self).where(t - 1, t)
  def ceil(self) -> Tensor:
    """Elementwise rounding up."""
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return (t < self).where(t + 1, t)
  def round(self) -> Tensor:
    """Elementwise rounding to the nearest integer, halves to even (like numpy)."""
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    frac = self - t                                       # exact, same sign as x
    odd = (t - (t * 0.5).trunc() * 2) != 0
    up = (frac.abs() > 0.5) | ((frac.abs() == 0.5) & odd)
    return up.where((self < 0).where(t - 1, t + 1), t)
  def relu(self) -> Tensor:
    """max(x, 0) (NaN -> 0, like tinygrad)."""
    return (self > 0).where(self, 0)
  def relu6(self) -> Tensor:
    """min(max(x, 0), 6)."""
    return self.relu() - (self - 6).relu()
  def sigmoid(self) -> Tensor:
    """1 / (1 + e**-x)."""
    return (1 + (self._float() * (-1 / math.log(2))).exp2()).reciprocal()
  def hardsigmoid(self, alpha: float = 1/6, beta: float = 0.5) -> Tensor:
    """clip(alpha*x + beta, 0, 1)."""
    return (alpha * self + beta).relu() - (alpha * self + beta - 1).relu()
  def tanh(self) -> Tensor:
    """Hyperbolic tangent: 2*sigmoid(2x) - 1."""
    return 2.0 * (2.0 * self._float()).sigmoid() - 1.0
  def sinh(self) -> Tensor:
    """Hyperbolic sine."""
    return (self.exp() - self.neg().exp()) / 2
  def cosh(self) -> Tensor:
    """Hyperbolic cosine."""
    return (self.exp() + self.neg().exp()) / 2
  def gelu(self) -> Tensor:
    """GELU, tanh approximation."""
    x = self._float()
    return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())
  def quick_gelu(self) -> Tensor:
    """x * sigmoid(1.702 x)."""
    return self * (self * 1.702).sigmoid()
  def silu(self) -> Tensor:
    """x * sigmoid(x) (swish)."""
    return self * self.sigmoid()
  def swish(self) -> Tensor:
    """x * sigmoid(x)."""
    return self.silu()
  def softplus(self, beta: float = 1.0) -> Tensor:
    """log(1 + e**(beta x)) / beta, computed without overflow."""
    bx = self._float() * beta
    return (bx.relu() + (1 + (-bx.abs()).exp()).log()) * (1 / beta)
  def mish(self) -> Tensor:
    """x * tanh(softplus(x))."""
    return self * self.softplus().tanh()
  def elu(self, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha*(e**x - 1) otherwise."""
    return self.relu() - alpha * (1 - self.exp()).relu()
  def celu(self, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha*(e**(x/alpha) - 1))."""
    return self.maximum(0) + (alpha * ((self / alpha).exp() - 1)).minimum(0)
  def selu(self, alpha: float = 1.67326, gamma: float = 1.0507) -> Tensor:
    """gamma * (x if x > 0 else alpha*(e**x - 1))."""
    return gamma * (self >= 0).where(self, alpha * (self.exp() - 1))
  def leaky_relu(self, neg_slope: float = 0.01) -> Tensor:
    """x for x >= 0, neg_slope*x otherwise."""
    return (self < 0).where(self * neg_slope, self)
  def hardtanh(self, min_val: float = -1, max_val: float = 1) -> Tensor:
    """clip(x, min_val, max_val)."""
    return self.clip(min_val, max_val)
  def hardswish(self) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return self * (self + 3).relu6() * (1 / 6)
  def softsign(self) -> Tensor:
    """x / (1 + |x|)."""
    return self / (1 + self.abs())
  def erf(self) -> Tensor:
    """The error function (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7)."""
    x = self._float()
    t = 1.0 / (1.0 + 0.3275911 * x.abs())
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return x.sign() * (1.0 - poly * (-x * x).exp())
  def clip(self, min_: Tensor | ConstType | None = None, max_: Tensor | ConstType | None = None) -> Tensor:
    """Elementwise clamp into [min_, max_] (either bound may be None)."""
    if min_ is None and max_ is None: raise ValueError("clip needs at least one of min_ and max_")
    ret = self.maximum(min_) if min_ is not None else self
    return ret.minimum(max_) if max_ is not None else ret
  def clamp(self, min_: Tensor | ConstType | None = None, max_: Tensor | ConstType | None = None) -> Tensor:
    """Alias of clip."""
    return self.clip(min_, max_)
  def lerp(self, end: Tensor | ConstType, weight: Tensor | ConstType) -> Tensor:
    """self + (end - self) * weight."""
    return self + (end - self) * weight
  def pow(self, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self ** x (reverse: x ** self). Int ** non-negative int stays int (wrapping like numpy); int ** a negative
    int constant is a ValueError, as in numpy. With an int tensor exponent the power is computed in float, rounded and cast
    back, so a negative exponent gives round(b**e) (0 for |b| > 1, as 2**-1 = 0.5 rounds to even) rather than an error."""
    if not reverse and isinstance(x, int) and not isinstance(x, bool) and x < 0 and dtypes.is_int(self.dtype):
      raise ValueError(f"integers to negative integer powers are not allowed: {self.dtype} tensor ** {x}; cast to float first, e.g. t.float() ** {x}")
    if not reverse and isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x == int(x):
      n = int(x)
      base = self if isinstance(x, int) or dtypes.is_float(self.dtype) else self._float()
      if n >= 0 and (dtypes.is_int(base.dtype) or n <= 16): return base._pow_int(n)
      if n < 0 and dtypes.is_float(base.dtype) and -n <= 16: return base._pow_int(-n).reciprocal()
    if not reverse and isinstance(x, float) and x == 0.5: return self.sqrt()
    b, e = self._broadcasted(x, reverse)
    if not dtypes.is_float(b.dtype): return Tensor._pow_float(b._float(), e._float()).round().cast(b.dtype)
    return Tensor._pow_float(b, e)
  def _pow_int(self, n: int) -> Tensor:
    ret, base = None, self
    while n:  # square-and-multiply
      if n & 1: ret = base if ret is None else ret * base
      n >>= 1
      if n: base = base * base
    return ret if ret is not None else self.ones_like()
  @staticmethod
  def _pow_float(b: Tensor, e: Tensor) -> Tensor:
    r = (e * b.abs().log2()).exp2()
    e_int, odd = e.trunc() == e, (e - (e * 0.5).trunc() * 2) != 0
    r = (b < 0).where(e_int.where(odd.where(-r, r), math.nan), r)
    return ((e == 0) | (b == 1)).where(1.0, r)

  # ---- reductions ----
  def _resolve_dim(self, dim: int, extra: bool = False) -> int:
    total = self.ndim + int(extra)
    lo, hi = -max(1, total), max(1, total) - 1
    if not isinstance(dim, int) or not lo <= dim <= hi: raise AxisError(f"axis {dim} is out of range for a tensor of shape {self.shape} (valid: {lo}..{hi})")
    return dim + total if dim < 0 else dim
  def _axes(self, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None: return tuple(range(self.ndim))
    axes = tuple(self._resolve_dim(a) for a in ((axis,) if isinstance(axis, int) else axis))
    if len(set(axes)) != len(axes): raise ValueError(f"repeated axis in {axis} for a tensor of shape {self.shape}")
    return tuple(a for a in axes if self.ndim)
  def _reduce(self, op: Ops, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    axes = self._axes(axis)
    new_shape = tuple(1 if i in axes else s for i, s in enumerate(self.shape)) if keepdim else tuple(s for i, s in enumerate(self.shape) if i not in axes)
    if any(self.shape[a] == 0 for a in axes):
      identity = {Ops.ADD: 0, Ops.MUL: 1, Ops.MAX: dtypes.min(self.dtype)}[op]
      return self._const(identity, shape=new_shape)
    split = self._split_reduce(op, axes)
    return (split if split is not None else Tensor(self.uop.r(op, axes))).reshape(new_shape)
  def _split_reduce(self, op: Ops, axes: tuple[int, ...]) -> Tensor | None:
    # a reduce of R elements runs as chunks, each summed by one accumulator, then a reduce of the chunk results (itself
    # split again when needed): chunks of at most _CHUNK keep float32 sums at numpy's pairwise accuracy (one accumulator
    # stalls at 2**24: ones(30000001).sum() gave 16777216), and k >= 8 chunks of a big reduce to few outputs run in
    # parallel (threads, GPU work-groups). None when a plain reduce is fine
    red = prod(self.shape[a] for a in axes)
    if not SPLIT_REDUCEOP or red <= _CHUNK and (red < 1 << 15 or self.numel() // red > 16): return None
    # prefer an exact split (no padding: the loads stay unmasked): k parallel chunks, else a chunk size dividing R
    k = next((d for d in (256, 128, 64, 32, 16, 8) if red % d == 0 and 256 <= red // d <= _CHUNK), 0)
    c = red // k if k else next((d for d in range(_CHUNK, _CHUNK // 4, -1) if red % d == 0), _CHUNK)
    m = ceildiv(red, c)
    kept = tuple(i for i in range(self.ndim) if i not in axes)
    x = self.permute(kept + axes).reshape(*(self.shape[i] for i in kept), red)
    if m * c != red:
      ident = {Ops.ADD: 0, Ops.MUL: 1, Ops.MAX: dtypes.min(self.dtype)}[op]
      x = x.pad(((0, 0),) * len(kept) + ((0, m * c - red),), value=ident)
    x = x.reshape(*(self.shape[i] for i in kept), m, c)
    return Tensor(x.uop.r(op, (x.ndim-1,))).contiguous()._reduce(op, x.ndim-2)
  def sum(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, dtype: DType | str | None = None) -> Tensor:
    """Sum over `axis` (all when None). Ints and bools accumulate in at least int32/uint32; float16/bfloat16 accumulate in float32
    and return their own dtype, as tinygrad does."""
    acc = to_dtype(dtype) if dtype is not None else sum_acc_dtype(self.dtype)
    ret = self.cast(acc)._reduce(Ops.ADD, axis, keepdim)
    return ret.cast(self.dtype) if dtype is None and self.dtype in (dtypes.float16, dtypes.bfloat16) else ret
  def prod(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, dtype: DType | str | None = None) -> Tensor:
    """Product over `axis` (in this tensor's dtype unless `dtype` is given)."""
    return self.cast(to_dtype(dtype) if dtype is not None else self.dtype)._reduce(Ops.MUL, axis, keepdim)
  def max(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Maximum over `axis`."""
    return self._reduce(Ops.MAX, axis, keepdim)
  def min(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Minimum over `axis`."""
    return self._inverse().max(axis, keepdim)._inverse()
  def any(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """True where any element along `axis` is nonzero."""
    return self.bool().max(axis, keepdim)
  def all(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """True where every element along `axis` is nonzero."""
    return self.logical_not().any(axis, keepdim).logical_not()
  def _count(self, axis: int | Sequence[int] | None) -> int: return prod(self.shape[a] for a in self._axes(axis))
  def mean(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Arithmetic mean over `axis` (ints give float32; an empty reduction gives NaN)."""
    out_dt = self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float
    return (self.cast(sum_acc_dtype(self.dtype)).sum(axis, keepdim) / self._count(axis)).cast(out_dt)
  def var(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """Variance over `axis`, dividing by N - correction (tinygrad's default correction=1)."""
    squares = (self - self.mean(axis, keepdim=True)).square()
    return squares.sum(axis, keepdim) / max(0, self._count(axis) - correction)
  def std(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """Standard deviation over `axis`."""
    return self.var(axis, keepdim, correction).sqrt()
  def var_mean(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> tuple[Tensor, Tensor]:
    """(var, mean) over `axis`."""
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  def std_mean(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> tuple[Tensor, Tensor]:
    """(std, mean) over `axis`."""
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
  def argmax(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """Index (int32) of the first maximum along `axis` (of the flattened tensor when None); NaN counts as the maximum."""
    if axis is None: return self.flatten().argmax(0).reshape((1,) * self.ndim if keepdim else ())
    ax = self._resolve_dim(axis)
    n = self.shape[ax]
    if n == 0: raise ValueError(f"argmax of an empty axis {ax} (shape {self.shape})")
    hit = self == self.max(ax, keepdim=True)
    if dtypes.is_float(self.dtype): hit = hit | self.isnan()
    # count down from n so the max picks the first hit
    rev = Tensor.arange(n, 0, -1, device=self.device).reshape(*[n if i == ax else 1 for i in range(self.ndim)])
    return (n - hit.where(rev, 0).max(ax, keepdim)).cast(dtypes.int32)
  def argmin(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """Index (int32) of the first minimum along `axis`."""
    return self._inverse().argmax(axis, keepdim)
  def logsumexp(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed stably."""
    m = self.max(axis, keepdim=True)
    m = m.isinf().where(0, m)
    ret = (self - m).exp().sum(axis, keepdim=True).log() + m
    return ret if keepdim else ret.reshape(tuple(s for i, s in enumerate(self.shape) if i not in self._axes(axis)))
  def softmax(self, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    x = self.cast(dtype) if dtype is not None else self
    e = (x - x.max(axis, keepdim=True)).exp()
    return e / e.sum(axis, keepdim=True)
  def log_softmax(self, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    """log(softmax(x)) along `axis`, computed stably."""
    x = self.cast(dtype) if dtype is not None else self
    ss = x - x.max(axis, keepdim=True)
    return ss - ss.exp().sum(axis, keepdim=True).log()

  # ---- cumulative ----
  def _cumalu(self, axis: int, op: Ops) -> Tensor:
    ax = self._resolve_dim(axis)
    if self.ndim == 0: return self
    x = self.transpose(ax, -1)
    n = x.shape[-1]
    ident = {Ops.ADD: 0, Ops.MUL: 1, Ops.MAX: dtypes.min(self.dtype)}[op]
    combine: Callable[[Tensor, Tensor], Tensor] = {Ops.ADD: Tensor.add, Ops.MUL: Tensor.mul, Ops.MAX: Tensor.maximum}[op]
    reduce: Callable[..., Tensor] = {Ops.ADD: Tensor.sum, Ops.MUL: Tensor.prod, Ops.MAX: Tensor.max}[op]
    pre: list[tuple[int, int] | None] = [None] * (x.ndim - 1)
    if n == 0: ret = reduce(x.unsqueeze(-1), -1)
    elif n > 256:
      # blocks of 256: scan inside each block, then add the scan of the block totals shifted by one block
      nb = ceildiv(n, 256)
      blocks = x.pad(pre + [(0, nb*256 - n)], value=ident).reshape(*x.shape[:-1], nb, 256)._cumalu(-1, op)
      totals = blocks.shrink(tuple(pre + [None, (255, 256)])).reshape(*x.shape[:-1], nb)
      carry = totals.pad(pre + [(1, -1)], value=ident)._cumalu(-1, op)
      ret = combine(blocks, carry.unsqueeze(-1)).reshape(*x.shape[:-1], nb*256).shrink(tuple(pre + [(0, n)]))
    else: ret = reduce(x.pad(pre + [(n-1, 0)], value=ident)._pool((n,)), -1)
    return ret.transpose(ax, -1)
  def cumsum(self, axis: int = 0) -> Tensor:
    """Running sum along `axis` (ints accumulate in at least int32)."""
    return self._cumalu(axis, Ops.ADD)
  def cumprod(self, axis: int = 0) -> Tensor:
    """Running product along `axis`."""
    return self._cumalu(axis, Ops.MUL)
  def cummax(self, axis: int = 0) -> Tensor:
    """Running maximum along `axis`."""
    return self._cumalu(axis, Ops.MAX)

  # ---- movement ----
  def reshape(self, shape: Any, *args: int) -> Tensor:
    """The same elements (row-major) in a new shape; one dimension may be -1 (inferred), None keeps that dimension."""
    new = tuple(self.shape[i] if s is None else s for i, s in enumerate(argfix(shape, *args)))
    if not all_int(new): raise ValueError(f"reshape from {self.shape} to {new}: sizes must be ints")
    if sum(s == -1 for s in new) > 1: raise ValueError(f"reshape from {self.shape} to {new}: only one dimension can be -1")
    if any(s < -1 for s in new): raise ValueError(f"reshape from {self.shape} to {new}: negative size")
    if -1 in new:
      rest = prod(s for s in new if s != -1)
      if rest == 0 or self.numel() % rest: raise ValueError(f"reshape from {self.shape} to {new}: cannot infer -1 ({self.numel()} elements into blocks of {rest})")
      new = tuple(self.numel() // rest if s == -1 else s for s in new)
    if prod(new) != self.numel(): raise ValueError(f"reshape from {self.shape} to {new}: sizes {self.numel()} != {prod(new)}")
    return self if new == self.shape else self._mv(self.uop.reshape(new))
  def view(self, shape: Any, *args: int) -> Tensor:
    """Alias of reshape."""
    return self.reshape(shape, *args)
  def permute(self, order: Any, *args: int) -> Tensor:
    """Reorder the dimensions: result dim i is input dim order[i]."""
    o = argfix(order, *args)
    if len(o) != self.ndim: raise ValueError(f"permute: order {o} has {len(o)} axes, tensor of shape {self.shape} has {self.ndim}")
    res = tuple(self._resolve_dim(i) for i in o)
    if sorted(res) != list(range(self.ndim)): raise ValueError(f"permute: {o} is not a permutation of the axes of shape {self.shape}")
    return self._mv(self.uop.permute(res)) if res != tuple(range(self.ndim)) else self
  def transpose(self, dim0: int = 1, dim1: int = 0) -> Tensor:
    """Swap two dimensions."""
    order = list(range(self.ndim))
    a, b = self._resolve_dim(dim0), self._resolve_dim(dim1)
    if self.ndim == 0: return self
    order[a], order[b] = order[b], order[a]
    return self.permute(order)
  def expand(self, shape: Any, *args: int) -> Tensor:
    """Broadcast size-1 dimensions to larger sizes (-1 keeps a size; new leading dimensions may be added)."""
    new = argfix(shape, *args)
    if len(new) < self.ndim: raise ValueError(f"expand: cannot expand shape {self.shape} to {new} (fewer dimensions)")
    if any(not isinstance(s, int) or s < -1 for s in new): raise ValueError(f"expand: invalid shape {new}; sizes must be ints >= 0, or -1 to keep one")
    cur = (1,) * (len(new) - self.ndim) + self.shape
    return self._broadcast_to(tuple(c if s == -1 else s for c, s in zip(cur, new)))
  def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions start_dim..end_dim into one."""
    if self.ndim == 0: return self.reshape(1)
    s, e = self._resolve_dim(start_dim), self._resolve_dim(end_dim)
    return self.reshape(self.shape[:s] + (prod(self.shape[s:e+1]),) + self.shape[e+1:])
  def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension `dim` into `sizes` (one may be -1)."""
    d = self._resolve_dim(dim)
    return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d+1:])
  def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 dimensions (all, or the given ones; a given dimension whose size is not 1 is kept, like torch)."""
    if dim is None: return self.reshape(tuple(s for s in self.shape if s != 1))
    dims = {self._resolve_dim(d) for d in ((dim,) if isinstance(dim, int) else dim)}
    if self.ndim == 0: return self
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if i not in dims or s != 1))
  def unsqueeze(self, dim: int) -> Tensor:
    """Insert a size-1 dimension at `dim`."""
    d = self._resolve_dim(dim, extra=True)
    return self.reshape(self.shape[:d] + (1,) + self.shape[d:])
  def _pad_arg(self, padding: Any) -> list[tuple[int, int]]:
    if all(isinstance(p, int) for p in padding):  # flat, torch order: (last_before, last_after, prev_before, prev_after, ...)
      if len(padding) % 2 or len(padding) // 2 > self.ndim:
        raise ValueError(f"pad: flat padding {tuple(padding)} needs an even length of at most {2*self.ndim} for shape {self.shape}")
      pairs = [(0, 0)] * self.ndim
      for k in range(len(padding) // 2): pairs[self.ndim - 1 - k] = (padding[2*k], padding[2*k+1])
      return pairs
    if len(padding) != self.ndim: raise ValueError(f"pad: padding {tuple(padding)} has {len(padding)} entries, shape {self.shape} has {self.ndim} dims")
    return [(0, 0) if p is None else (int(p[0]), int(p[1])) for p in padding]
  def pad(self, padding: Any, mode: str = "constant", value: ConstType = 0.0) -> Tensor:
    """Pad each dimension: ((before, after) or None per axis) or a flat torch-style tuple starting at the last axis.
    Negative amounts cut. Modes: constant (with `value`), reflect, replicate, circular."""
    pairs = self._pad_arg(padding)
    if mode not in ("constant", "reflect", "replicate", "circular"): raise ValueError(f"pad: unknown mode {mode!r}; valid: constant, reflect, replicate, circular")
    if mode != "constant": return self._pad_mode(pairs, mode)
    x = self.shrink(tuple((-min(b, 0), s + min(a, 0)) for (b, a), s in zip(pairs, self.shape)))
    pos = tuple((max(b, 0), max(a, 0)) for b, a in pairs)
    ret = x._mv(x.uop.pad(pos))
    if value == 0 or all(p == (0, 0) for p in pos): return ret
    if dtypes.is_int(self.dtype) and isinstance(value, float) and math.isinf(value): value = dtypes.max(self.dtype) if value > 0 else dtypes.min(self.dtype)
    mask = Tensor(Tensor._full_uop(x.shape, True, dtypes.bool, self.device).pad(pos))
    return mask.where(ret, self._const(value, self.dtype))
  def _pad_mode(self, pairs: list[tuple[int, int]], mode: str) -> Tensor:
    x = self
    for d, (b, a) in enumerate(pairs):
      if b < 0 or a < 0: raise ValueError(f"pad: mode {mode!r} needs non-negative padding, got {pairs}")
      n = x.shape[d]
      if mode == "reflect" and (b >= n or a >= n): raise ValueError(f"pad: reflect padding {(b, a)} must be smaller than the size {n} of axis {d}")
      if mode == "circular" and (b > n or a > n): raise ValueError(f"pad: circular padding {(b, a)} must be at most the size {n} of axis {d}")
      def take(lo: int, hi: int) -> Tensor: return x.shrink(tuple((lo, hi) if i == d else None for i in range(x.ndim)))
      parts = []
      if b:
        parts.append({"reflect": lambda: take(1, b+1).flip(d), "replicate": lambda: take(0, 1).repeat([b if i == d else 1 for i in range(x.ndim)]),
                      "circular": lambda: take(n-b, n)}[mode]())
      parts.append(x)
      if a:
        parts.append({"reflect": lambda: take(n-1-a, n-1).flip(d), "replicate": lambda: take(n-1, n).repeat([a if i == d else 1 for i in range(x.ndim)]),
                      "circular": lambda: take(0, a)}[mode]())
      x = parts[0].cat(*parts[1:], dim=d) if len(parts) > 1 else x
    return x
  def shrink(self, arg: Sequence[tuple[int, int] | None]) -> Tensor:
    """Keep [start, end) of each dimension (None keeps all of it)."""
    if len(arg) != self.ndim: raise ValueError(f"shrink: {tuple(arg)} has {len(arg)} entries, shape {self.shape} has {self.ndim} dims")
    full = tuple((0, s) if a is None else (int(a[0]), int(a[1])) for a, s in zip(arg, self.shape))
    if any(not 0 <= b <= e <= s for (b, e), s in zip(full, self.shape)): raise ValueError(f"shrink: {full} is out of bounds for shape {self.shape}")
    return self if all(r == (0, s) for r, s in zip(full, self.shape)) else self._mv(self.uop.shrink(full))
  def flip(self, axis: Any, *args: int) -> Tensor:
    """Reverse the order of elements along the given axes."""
    axes = {self._resolve_dim(a) for a in argfix(axis, *args)}
    return self._mv(self.uop.flip(tuple(i in axes for i in range(self.ndim)))) if axes else self
  def repeat(self, repeats: Any, *args: int) -> Tensor:
    """Tile the tensor `repeats[i]` times along each dimension (extra leading repeats add dimensions)."""
    reps = argfix(repeats, *args)
    if any(not isinstance(r, int) or isinstance(r, bool) or r < 0 for r in reps): raise ValueError(f"repeat: repeats must be ints >= 0, got {reps}")
    if len(reps) < self.ndim: raise ValueError(f"repeat: {reps} has fewer entries than shape {self.shape} has dims")
    base = (1,) * (len(reps) - self.ndim) + self.shape
    x = self.reshape(flatten((1, s) for s in base)).expand(flatten((r, s) for r, s in zip(reps, base)))
    return x.reshape(tuple(r * s for r, s in zip(reps, base)))
  def cat(self: Tensor | Sequence[Tensor], *args: Tensor, dim: int = 0) -> Tensor:
    """Concatenate tensors along `dim` (`a.cat(b, c, dim=1)` or `Tensor.cat(a, b)`)."""
    ts: list[Tensor] = (list(self) if isinstance(self, (list, tuple)) else [cast(Tensor, self)]) + list(args)
    first = ts[0]
    d = first._resolve_dim(dim)
    for t in ts[1:]:
      if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != d):
        raise ValueError(f"cat: shapes {first.shape} and {t.shape} differ outside dim {d}")
    dt = least_upper_dtype(*(t.dtype for t in ts))
    total, off, parts = sum(t.shape[d] for t in ts), 0, []
    for t in ts:
      parts.append(t.cast(dt).pad([(off, total - off - t.shape[d]) if i == d else None for i in range(t.ndim)]))
      off += t.shape[d]
    return functools.reduce(Tensor.bitwise_or if dt == dtypes.bool else Tensor.add, parts)
  def stack(self: Tensor | Sequence[Tensor], *args: Tensor, dim: int = 0) -> Tensor:
    """Stack same-shaped tensors along a new dimension `dim`."""
    ts: list[Tensor] = (list(self) if isinstance(self, (list, tuple)) else [cast(Tensor, self)]) + list(args)
    for t in ts[1:]:
      if t.shape != ts[0].shape: raise ValueError(f"stack: shapes {ts[0].shape} and {t.shape} differ")
    d = ts[0]._resolve_dim(dim, extra=True)
    return Tensor.cat(*[t.unsqueeze(d) for t in ts], dim=d)
  def split(self, sizes: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split along `dim` into chunks of `sizes` (an int: equal chunks, the last may be smaller)."""
    d = self._resolve_dim(dim)
    n = self.shape[d]
    if isinstance(sizes, int):
      if sizes <= 0: raise ValueError(f"split: size must be positive, got {sizes}")
      sz = [min(sizes, n - i) for i in range(0, max(1, n), sizes)]
    else:
      sz = list(sizes)
      if sum(sz) != n: raise ValueError(f"split: sizes {sz} sum to {sum(sz)}, but dim {d} of shape {self.shape} has {n}")
    offs = list(itertools.accumulate(sz, initial=0))
    return tuple(self.shrink([(offs[k], offs[k+1]) if i == d else None for i in range(self.ndim)]) for k in range(len(sz)))
  def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
    """Split into `chunks` nearly equal pieces along `dim`."""
    if chunks <= 0: raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    d = self._resolve_dim(dim)
    return list(self.split(ceildiv(self.shape[d], chunks) if self.shape[d] else 1, d))

  # ---- indexing ----
  def _index_plan(self, indices: Any) -> _IndexPlan:
    idx = list(indices) if isinstance(indices, tuple) else [indices]
    for i in idx:
      if isinstance(i, bool): raise IndexError("boolean scalar indices are not supported; index with ints, slices, None, ... or int Tensors")
      if not (i is None or i is Ellipsis or isinstance(i, (int, slice, Tensor, list)) or hasattr(i, "dtype")):
        raise IndexError(f"unsupported index {i!r} ({type(i).__name__}); valid: int, slice, None, Ellipsis, int Tensor, list of ints")
    if sum(i is Ellipsis for i in idx) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(i is not None and i is not Ellipsis for i in idx)
    if consumed > self.ndim: raise IndexError(f"too many indices for tensor of shape {self.shape}: {consumed} given")
    ell = next((k for k, i in enumerate(idx) if i is Ellipsis), len(idx))
    idx = idx[:ell] + [slice(None)] * (self.ndim - consumed) + idx[ell+1:]
    # basic indexing: flip negative steps, shrink, stride, then drop int dims and add None dims
    flips: list[int] = []
    shrinks: list[tuple[int, int]] = []
    steps: list[int] = []
    lens: list[int] = []
    out_shape: list[int] = []
    tensor_idx: list[tuple[int, int, Any]] = []
    adv_pos: list[int] = []
    d, out_pos = 0, 0
    for k, i in enumerate(idx):
      if i is None:
        out_shape.append(1)
        out_pos += 1
        continue
      n = self.shape[d]
      if isinstance(i, int):
        if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
        start, step, length = i + n if i < 0 else i, 1, 1
        adv_pos.append(k)
      elif isinstance(i, slice):
        r = range(*i.indices(n))
        start, step, length = r.start, r.step, len(r)
        out_shape.append(length)
        out_pos += 1
      else:
        start, step, length = 0, 1, n
        tensor_idx.append((d, out_pos, i))
        adv_pos.append(k)
        out_shape.append(n)
        out_pos += 1
      if length == 0: step = 1
      elif step < 0:
        flips.append(d)
        start, step = n - 1 - start, -step
      shrinks.append((start, start + (length - 1) * step + 1) if length else (0, 0))
      steps.append(step)
      lens.append(length)
      d += 1
    return _IndexPlan(idx, flips, shrinks, steps, lens, out_shape, tensor_idx, adv_pos)
  def __getitem__(self, indices: Any) -> Tensor:
    """numpy-style indexing: ints, slices (any step), None, Ellipsis, and int Tensor/list indices (lazy: masks and a sum)."""
    p = self._index_plan(indices)
    idx, flips, shrinks, steps, lens, out_shape, tensor_idx, adv_pos = p.idx, p.flips, p.shrinks, p.steps, p.lens, p.out_shape, p.tensor_idx, p.adv_pos
    x = self.flip(flips) if flips else self
    x = x.shrink(shrinks)
    if any(s > 1 for s in steps):
      x = x.pad([(0, ln * s - (e - b)) for (b, e), s, ln in zip(shrinks, steps, lens)])
      x = x.reshape(flatten((ln, s) for ln, s in zip(lens, steps)))
      x = x.shrink(flatten(((0, ln), (0, 1)) for ln in lens)).reshape(lens)
    x = x.reshape(out_shape)
    if not tensor_idx: return x
    # advanced indexing: one-hot masks over the indexed dims, a where and a sum (stays lazy, fuses)
    ts = []
    for dd, pos, i in tensor_idx:
      t = i if isinstance(i, Tensor) else Tensor(i, device=self.device)
      if not dtypes.is_int(t.dtype): raise IndexError(f"tensor indices must be ints, got {t.dtype} (boolean masks are not supported: their shape depends on the data)")
      n = self.shape[dd]
      _check_oob("index", t, n, dd, True)
      ts.append((pos, (t < 0).where(t + n, t) if not dtypes.is_unsigned(t.dtype) else t, n))
    bshape = _broadcast_shape(*(t.shape for _, t, _ in ts))
    nb, nx = len(bshape), x.ndim
    mask: Tensor | None = None
    for pos, t, n in ts:
      m = t._broadcast_to(bshape).reshape(bshape + (1,) * nx) == \
        Tensor.arange(n, device=self.device).reshape((1,) * nb + tuple(n if j == pos else 1 for j in range(nx)))
      mask = m if mask is None else mask & m
    assert mask is not None
    xe = x.reshape((1,) * nb + x.shape)
    ret = mask.where(xe, xe._const(0, shape=())).sum(tuple(nb + pos for pos, _, _ in ts), dtype=self.dtype)
    # numpy: advanced indices next to each other put the broadcast dims where they were; otherwise first
    if adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos))):
      first = sum(1 for i in idx[:adv_pos[0]] if i is None or isinstance(i, slice))
      order = list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, ret.ndim))
      ret = ret.permute(order)
    return ret
  def __setitem__(self, indices: Any, v: Tensor | ConstType) -> None:
    """Write `v` (broadcast) into self[indices]: basic indices (ints, slices, None, Ellipsis); an assign of a masked where."""
    p = self._index_plan(indices)
    if p.tensor_idx: raise NotImplementedError("setitem with Tensor/list indices is not supported; use mask.where(value, x) and assign")
    # `x[i] += y` calls x[i].__iadd__ (already an assign into x) and then sets the result back: nothing left to write
    if isinstance(v, Tensor) and v._view_of is not None and v._view_of is (self._view_of or self) and v.uop is self[indices].uop: return
    vt = self._to_tensor(v).cast(self.dtype)
    try: vt = vt._broadcast_to(tuple(p.out_shape))
    except ValueError: raise ValueError(f"setitem: value of shape {vt.shape} does not fit the indexed shape {tuple(p.out_shape)}") from None
    def scatter(x: Tensor) -> Tensor:  # the inverse of the basic-indexing movement ops: back to self's shape, zeros elsewhere
      x = x.reshape(p.lens)
      if any(s > 1 for s in p.steps):
        x = x.reshape(flatten((ln, 1) for ln in p.lens)).pad(flatten(((0, 0), (0, s - 1)) for s in p.steps))
        x = x.reshape([ln * s for ln, s in zip(p.lens, p.steps)]).shrink([(0, e - b) for b, e in p.shrinks])
      x = x.pad([(b, n - e) for (b, e), n in zip(p.shrinks, self.shape)])
      return x.flip(p.flips) if p.flips else x
    mask = scatter(Tensor.full(tuple(p.out_shape), True, dtype=dtypes.bool, device=self.device))
    self.assign(mask.where(scatter(vt), self))
  def gather(self, dim: int, index: Tensor) -> Tensor:
    """out[..., j, ...] = self[..., index[..., j, ...], ...] along `dim` (index may be smaller than self in other dims)."""
    d = self._resolve_dim(dim)
    if index.ndim != self.ndim: raise ValueError(f"gather: index shape {index.shape} and input shape {self.shape} need the same number of dims")
    if any(a > b for i, (a, b) in enumerate(zip(index.shape, self.shape)) if i != d):
      raise ValueError(f"gather: index shape {index.shape} is larger than input shape {self.shape} outside dim {d}")
    n = self.shape[d]
    _check_oob("gather", index, n, d, False)
    x = self.shrink([None if i == d else (0, s) for i, s in enumerate(index.shape)])
    xe = x.unsqueeze(-1).transpose(d, -1).expand(*index.shape, n)
    mask = index.unsqueeze(-1) == Tensor.arange(n, device=self.device)
    return mask.where(xe, xe._const(0, shape=())).sum(-1, dtype=self.dtype)
  def one_hot(self, num_classes: int = -1) -> Tensor:
    """int32 one-hot encoding along a new last dimension (num_classes=-1 computes max+1, which realizes)."""
    if num_classes == -1: num_classes = int(self.max().item()) + 1
    _check_oob("one_hot", self, num_classes, self.ndim, False)
    return (self.unsqueeze(-1) == Tensor.arange(num_classes, device=self.device)).where(1, 0)
  def _tri(self, diagonal: int, upper: bool) -> Tensor:
    r, c = self.shape[-2], self.shape[-1]
    rows, cols = Tensor.arange(r, device=self.device).unsqueeze(-1), Tensor.arange(c, device=self.device)
    mask = (cols >= rows + diagonal) if upper else (cols <= rows + diagonal)
    return mask.where(self, self._const(0, shape=()))
  def triu(self, diagonal: int = 0) -> Tensor:
    """Zero below the `diagonal`-th diagonal of the last two dims."""
    return self._tri(diagonal, True)
  def tril(self, diagonal: int = 0) -> Tensor:
    """Zero above the `diagonal`-th diagonal of the last two dims."""
    return self._tri(diagonal, False)

  # ---- linear algebra and nn ----
  def dot(self, w: Tensor, dtype: DType | str | None = None) -> Tensor:
    """Matrix product with batching/broadcasting over leading dims (1-d operands as numpy): one reduce over a broadcast product."""
    if self.ndim == 0 or w.ndim == 0: raise ValueError(f"matmul: both operands need at least 1 dimension, got shapes {self.shape} and {w.shape}")
    a = self.unsqueeze(0) if self.ndim == 1 else self
    b = w.unsqueeze(-1) if w.ndim == 1 else w
    if a.shape[-1] != b.shape[-2]:
      raise ValueError(f"matmul: shapes {self.shape} and {w.shape} do not match: contracted dims {a.shape[-1]} != {b.shape[-2]}")
    try: _broadcast_shape(a.shape[:-2], b.shape[:-2])
    except ValueError: raise ValueError(f"matmul: batch dims of shapes {self.shape} and {w.shape} cannot broadcast") from None
    out_dt = least_upper_dtype(a.dtype, b.dtype) if dtype is None else to_dtype(dtype)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if (p := _matmul_panel(self.device, b.dtype.itemsize, m, k, n)):
      # b copied into n/p panels of (k, p), each contiguous: the kernel reads one panel in order while row blocks of a pass
      bp = b.reshape(*b.shape[:-2], k, n // p, p).transpose(-3, -2).contiguous().transpose(-1, -2)   # (..., n/p, p, k)
      ret = (a.reshape(*a.shape[:-2], m, 1, 1, k) * bp.unsqueeze(-4)).sum(-1, dtype=dtype).cast(out_dt)
      ret = ret.reshape(*ret.shape[:-2], n)
    else: ret = (a.reshape(*a.shape[:-2], m, 1, k) * b.transpose(-1, -2).reshape(*b.shape[:-2], 1, n, k)).sum(-1, dtype=dtype).cast(out_dt)
    if self.ndim == 1: ret = ret.squeeze(-2)
    if w.ndim == 1: ret = ret.squeeze(-1)
    return ret
  def matmul(self, x: Tensor, reverse: bool = False, dtype: DType | str | None = None) -> Tensor:
    """self @ x (reverse: x @ self)."""
    return x.dot(self, dtype) if reverse else self.dot(x, dtype)
  def linear(self, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """self @ weight + bias (weight is (in, out); a 1-d weight multiplies elementwise)."""
    x = self * weight if weight.ndim == 1 else self.dot(weight)
    return x + bias if bias is not None else x
  def sequential(self, ll: Sequence[Callable[[Tensor], Tensor]]) -> Tensor:
    """Apply each callable in turn."""
    return functools.reduce(lambda x, f: f(x), ll, self)
  def layernorm(self, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over `axis` (population variance)."""
    y = self - self.mean(axis, keepdim=True)
    return y * (y * y).mean(axis, keepdim=True).add(eps).rsqrt()
  def _pool(self, k_: Sequence[int], stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1) -> Tensor:
    """Sliding windows over the last len(k_) dims as movement ops: (..., *in) -> (..., *out, *k_)."""
    nk = len(k_)
    if self.ndim < nk: raise ValueError(f"pool: kernel {tuple(k_)} has more dims than shape {self.shape}")
    s_, d_ = make_tuple(stride, nk), make_tuple(dilation, nk)
    pre, i_ = self.shape[:-nk], self.shape[-nk:]
    if any(d * (k - 1) + 1 > i for k, d, i in zip(k_, d_, i_)):
      raise ValueError(f"pool: kernel {tuple(k_)} with dilation {d_} is larger than the input {i_}")
    o_ = [(i - d * (k - 1) - 1) // s + 1 for i, d, k, s in zip(i_, d_, k_, s_)]
    npre, keep = len(pre), [None] * len(pre)
    if all(k <= s for k, s in zip(k_, s_)) and all(d == 1 for d in d_):
      # windows don't overlap: split each axis into (out, stride) and keep the first k of each stride
      x = self.pad(keep + [(0, max(0, o * s - i)) for i, o, s in zip(i_, o_, s_)]).shrink(keep + [(0, o * s) for o, s in zip(o_, s_)])
      x = x.reshape(*pre, *flatten((o, s) for o, s in zip(o_, s_))).shrink(keep + flatten(((0, o), (0, k)) for o, k in zip(o_, k_)))
      return x.permute(*range(npre), *[npre + 2*j for j in range(nk)], *[npre + 2*j + 1 for j in range(nk)])
    # overlapping windows: tile the axis and cut it into k rows of length L = f*i + d (L = d mod i), so row a starts a*d
    # elements further; every stride-th column of the first o*s then holds window element a of each output position
    L_ = [max(1, ceildiv(o * s - d, i)) * i + d for i, o, s, d in zip(i_, o_, s_, d_)]
    x = self.repeat(*[1] * npre, *[ceildiv(k * L, i) for k, L, i in zip(k_, L_, i_)])
    x = x.shrink(keep + [(0, k * L) for k, L in zip(k_, L_)]).reshape(*pre, *flatten((k, L) for k, L in zip(k_, L_)))
    x = x.shrink(keep + flatten(((0, k), (0, o * s)) for k, o, s in zip(k_, o_, s_))).reshape(*pre, *flatten((k, o, s) for k, o, s in zip(k_, o_, s_)))
    x = x.shrink(keep + flatten(((0, k), (0, o), (0, 1)) for k, o in zip(k_, o_))).reshape(*pre, *flatten((k, o) for k, o in zip(k_, o_)))
    return x.permute(*range(npre), *[npre + 2*j + 1 for j in range(nk)], *[npre + 2*j for j in range(nk)])
  @staticmethod
  def _pool_pads(padding: int | Sequence[int], dims: int) -> list[int]:
    """Padding as a flat torch-order list (last dim first) for `dims` spatial dims."""
    if isinstance(padding, int): return [padding] * (2 * dims)
    if len(padding) == dims: return [p for p in reversed(padding) for _ in range(2)]
    if len(padding) == 2 * dims: return list(padding)
    raise ValueError(f"padding {tuple(padding)} must be an int, {dims} ints (one per spatial dim) or {2*dims} ints (before/after, last dim first)")
  def _ceil_pads(self, k_: tuple[int, ...], s_: tuple[int, ...], d_: tuple[int, ...], pads: list[int]) -> list[int]:
    # ceil_mode: extra padding at the end so a last partial window counts, unless it would start in the right padding
    pads = list(pads)
    for j, (k, s, d) in enumerate(zip(k_, s_, d_)):
      ax = self.ndim - len(k_) + j
      slot = 2 * (len(k_) - 1 - j)
      i, pb, pa = self.shape[ax], pads[slot], pads[slot + 1]
      span = i + pb + pa - d * (k - 1) - 1
      o = ceildiv(span, s) + 1
      if (o - 1) * s >= i + pb: o -= 1
      pads[slot + 1] += max(0, (o - 1) * s + d * (k - 1) + 1 - (i + pb + pa))
    return pads
  @staticmethod
  def _window_args(op: str, kernel_size: Any, stride: Any, dilation: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    k_ = _check_positive(op, "kernel_size", tuple(make_tuple(kernel_size, 2)))
    s_ = _check_positive(op, "stride", tuple(make_tuple(stride if stride is not None else k_, len(k_))))
    return k_, s_, _check_positive(op, "dilation", tuple(make_tuple(dilation, len(k_))))
  def max_pool2d(self, kernel_size: int | tuple[int, ...] = (2, 2), stride: int | tuple[int, ...] | None = None, dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] = 0, ceil_mode: bool = False) -> Tensor:
    """Max over sliding windows of the last len(kernel_size) dims (stride defaults to the kernel size)."""
    k_, s_, d_ = Tensor._window_args("max_pool2d", kernel_size, stride, dilation)
    pads = Tensor._pool_pads(padding, len(k_))
    if ceil_mode: pads = self._ceil_pads(k_, s_, d_, pads)
    x = self.pad(pads, value=dtypes.min(self.dtype))._pool(k_, s_, d_)
    return x.max(tuple(range(-len(k_), 0)))
  def avg_pool2d(self, kernel_size: int | tuple[int, ...] = (2, 2), stride: int | tuple[int, ...] | None = None, dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last len(kernel_size) dims (stride defaults to the kernel size)."""
    k_, s_, d_ = Tensor._window_args("avg_pool2d", kernel_size, stride, dilation)
    pads = Tensor._pool_pads(padding, len(k_))
    axes = tuple(range(-len(k_), 0))
    full = self._ceil_pads(k_, s_, d_, pads) if ceil_mode else pads
    if count_include_pad and not ceil_mode: return self.pad(pads)._pool(k_, s_, d_).mean(axes)
    total = self.pad(full)._pool(k_, s_, d_).sum(axes)
    ones = Tensor.ones(self.shape[-len(k_):], device=self.device)
    if count_include_pad: ones = ones.pad(pads)  # padding counts; the ceil_mode overhang does not
    extra = [f - p for f, p in zip(full, pads)] if count_include_pad else full
    count = ones.pad(extra)._pool(k_, s_, d_).sum(axes)
    return (total / count).cast(self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float)
  def conv2d(self, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | tuple[int, ...] = 1, dilation: int | tuple[int, ...] = 1,
             padding: int | tuple[int, ...] = 0, dtype: DType | str | None = None) -> Tensor:
    """Convolution (cross-correlation) over the spatial dims: input (N, Cin, *spatial), weight (Cout, Cin/groups, *kernel)."""
    if self.ndim != weight.ndim or self.ndim < 3: raise ValueError(f"conv2d: input {self.shape} and weight {weight.shape} need the same number of dims (>= 3)")
    (bs, cin_), (cout, cin), hw = self.shape[:2], weight.shape[:2], weight.shape[2:]
    _check_positive("conv2d", "groups", (groups,))
    if groups * cin != cin_: raise ValueError(f"conv2d: input channels {cin_} != groups ({groups}) * weight in-channels ({cin}) for input {self.shape}, weight {weight.shape}")
    if cout % groups: raise ValueError(f"conv2d: out channels {cout} not divisible by groups {groups}")
    nd = len(hw)
    _check_positive("conv2d", "stride", tuple(make_tuple(stride, nd)))
    _check_positive("conv2d", "dilation", tuple(make_tuple(dilation, nd)))
    x = self.pad(Tensor._pool_pads(padding, nd))._pool(hw, stride, dilation)  # (bs, cin_, *out, *hw)
    rcout, oyx = cout // groups, x.shape[2:2 + nd]
    x = x.reshape(bs, groups, cin, 1, *oyx, *hw).expand(bs, groups, cin, rcout, *oyx, *hw)
    x = x.permute(0, 1, 3, *[4 + j for j in range(nd)], 2, *[4 + nd + j for j in range(nd)])  # (bs, groups, rcout, *out, cin, *hw)
    w = weight.reshape(1, groups, rcout, *[1] * nd, cin, *hw)
    ret = (x * w).sum(tuple(range(-1 - nd, 0)), dtype=dtype).reshape(bs, cout, *oyx)
    return ret if bias is None else ret + bias.reshape(1, -1, *[1] * nd)
