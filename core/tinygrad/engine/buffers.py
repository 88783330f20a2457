"""The map from BUFFER UOps (the tensor graph's handles) to device Buffers holding the data."""
from __future__ import annotations
import itertools, weakref
from typing import TYPE_CHECKING
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType
if TYPE_CHECKING:
  from tinygrad.device import Buffer

_unique = itertools.count()
_buffers: weakref.WeakKeyDictionary[UOp, Buffer] = weakref.WeakKeyDictionary()

def new_buffer(device: str, size: int, dtype: DType) -> UOp:
  """A fresh BUFFER UOp of `size` elements of `dtype` on `device`; its Buffer is created (not allocated) on first use."""
  return UOp(Ops.BUFFER, dtype, (UOp(Ops.UNIQUE, arg=next(_unique)), UOp(Ops.DEVICE, arg=device)), size)

def buffer_of(u: UOp) -> Buffer:
  """The device Buffer behind a BUFFER UOp (created on first call; allocate() it before use)."""
  if u.op is not Ops.BUFFER: raise ValueError(f"expected a BUFFER UOp, got {u.op}")
  buf = _buffers.get(u)
  if buf is None:
    from tinygrad.device import Buffer
    _buffers[u] = buf = Buffer(u.src[1].arg, u.arg, u.dtype)
  return buf

def has_buffer(u: UOp) -> bool: return u in _buffers
