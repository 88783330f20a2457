"""Tensors on the DISK device (runtime/disk.py: a file, mapped): read into another device, written, bitcast, through any
view, at once. Tensor.to, assign, setitem, bitcast, shard and the data readers (numpy, tolist, data) call these; the
DISK device itself runs no kernels (docs/guide.md "Files as tensors")."""
from __future__ import annotations
from typing import Any

def is_disk(device: Any) -> bool: return type(device) is str and device.startswith("DISK:")

def _cstrides(shape: tuple[int, ...], item: int) -> tuple[int, ...]:
  from tinygrad.helpers import prod
  return tuple(prod(shape[k+1:]) * item for k in range(len(shape)))
def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...], item: int) -> bool:
  return all(st == c for n, st, c in zip(shape, strides, _cstrides(shape, item)) if n != 1)

def _strided(u: Any) -> tuple[Any, int, tuple[int, ...], tuple[int, ...]] | None:
  """View `u` of a DISK buffer as numpy sees a strided array: (BUFFER node, byte offset, shape, byte strides), in u's dtype;
  None where no such form exists (a pad, a reshape of a non-contiguous view, a bitcast of one to another item size)."""
  from tinygrad.uop import Ops
  if u.op is Ops.BUFFER: return u, 0, (u.arg,), (u.dtype.itemsize,)
  if u.op not in (Ops.RESHAPE, Ops.PERMUTE, Ops.SHRINK, Ops.EXPAND, Ops.FLIP, Ops.BITCAST, Ops.CONTIGUOUS) or \
     (r := _strided(u.src[0])) is None or not all(isinstance(s, int) for s in u.shape): return None
  base, off, shape, strides = r
  item = u.src[0].dtype.itemsize
  if u.op is Ops.CONTIGUOUS: return r   # (a file's bytes have no lazier form: contiguous() does nothing here, as upstream)
  if u.op is Ops.RESHAPE or (u.op is Ops.BITCAST and u.dtype.itemsize != item):
    if not _contiguous(shape, strides, item): return None
    return base, off, u.shape, _cstrides(u.shape, u.dtype.itemsize)
  if u.op is Ops.BITCAST: return r
  if u.op is Ops.PERMUTE: return base, off, tuple(shape[i] for i in u.arg), tuple(strides[i] for i in u.arg)
  if u.op is Ops.SHRINK: return base, off + sum(b * st for (b, _), st in zip(u.arg, strides)), u.shape, strides
  if u.op is Ops.EXPAND: return base, off, u.shape, tuple(0 if n != m else st for n, m, st in zip(shape, u.shape, strides))
  # FLIP
  return base, off + sum((n - 1) * st for n, st, f in zip(shape, strides, u.arg) if f), shape, tuple(-st if f else st for st, f in zip(strides, u.arg))

def _indices(u: Any) -> tuple[Any, Any] | None:
  """(BUFFER node, int64 array of u's shape: each element's index in the buffer, -1 in padding) for any view of a DISK
  buffer, walked from u's elements down (memory is u's size, not the file's); None below a node that is not a view."""
  import numpy as np
  from tinygrad.uop import Ops
  idx = [a.astype(np.int64) for a in np.indices(u.shape)] if u.shape else []
  valid = np.ones(u.shape, dtype=bool)
  while u.op is not Ops.BUFFER:
    if u.op in (Ops.CONTIGUOUS, Ops.BITCAST) and u.dtype.itemsize == u.src[0].dtype.itemsize: pass
    elif u.op is Ops.RESHAPE:
      flat = sum((i * int(np.prod(u.shape[k+1:])) for k, i in enumerate(idx)), np.zeros(valid.shape, np.int64))
      src = u.src[0].shape
      idx = [(flat // int(np.prod(src[k+1:]))) % s for k, s in enumerate(src)]
    elif u.op is Ops.PERMUTE: idx = [idx[u.arg.index(k)] for k in range(len(idx))]
    elif u.op is Ops.SHRINK: idx = [i + b for i, (b, _) in zip(idx, u.arg)]
    elif u.op is Ops.EXPAND: idx = [i if s == n else np.zeros_like(i) for i, s, n in zip(idx, u.src[0].shape, u.shape)]
    elif u.op is Ops.FLIP: idx = [s - 1 - i if f else i for i, s, f in zip(idx, u.shape, u.arg)]
    elif u.op is Ops.PAD:
      idx = [i - b for i, (b, _) in zip(idx, u.arg)]
      for i, s in zip(idx, u.src[0].shape): valid &= (i >= 0) & (i < s)
    else: return None
    u = u.src[0]
  return u, np.where(valid, idx[0], -1)

def _base_node(t: Any) -> Any:
  from tinygrad.uop import GroupOp, Ops
  b = t.uop
  while b.op in GroupOp.Movement or b.op in (Ops.BITCAST, Ops.CONTIGUOUS): b = b.src[0]
  return b

def _file_base(t: Any) -> Any:
  """The BUFFER node under DISK tensor `t`'s views. A lazy one is realized first: a copy to the disk (`x.to_("disk:/f")`)
  runs; anything computed raises (the DISK device runs no kernels)."""
  from tinygrad.uop import Ops
  if (base := _base_node(t)).op is not Ops.BUFFER:
    t.realize() if t.uop is base else type(t)(base).realize()
    if (base := _base_node(t)).op is not Ops.BUFFER: raise RuntimeError(f"{t.device}: this view is over {base.op}, not the file; realize it first")
  return base

def _mapped(t: Any) -> Any:
  """A numpy array viewing the file as DISK tensor `t` (its items as raw bytes), where t is a strided view of it; else None."""
  import numpy as np
  from tinygrad.engine.buffers import buffer_of
  _file_base(t)
  if (r := _strided(t.uop)) is None: return None
  base, off, shape, strides = r
  return np.ndarray(shape, dtype=np.dtype(f"V{t.dtype.itemsize}"), buffer=buffer_of(base).allocate()._buf.view(), offset=off, strides=strides)

def _elements(t: Any) -> tuple[Any, Any]:
  """(the file's items, as raw bytes of t's item size, viewing the mapping; the index of each of t's elements among them,
  -1 in padding) for a view `t` with no strided form."""
  import numpy as np
  from tinygrad.engine.buffers import buffer_of
  _file_base(t)
  if (r := _indices(t.uop)) is None: raise RuntimeError(f"{t.device}: cannot follow this view (shape {t.shape}) to the file")
  base, idx = r
  return np.frombuffer(buffer_of(base).allocate()._buf.view(), dtype=np.dtype(f"V{t.dtype.itemsize}")), idx

def _items(t: Any) -> tuple[Any, bool]:
  """(t's items in t's shape, as raw bytes; whether that array views the mapping rather than being a copy)."""
  import numpy as np
  if (m := _mapped(t)) is not None: return m, True
  # no strided form (a strided slice is a pad, a reshape and a shrink): gathered element by element
  items, idx = _elements(t)
  if (idx < 0).any(): return np.where(idx < 0, np.zeros(1, items.dtype), items[np.maximum(idx, 0)]), False   # (padding reads 0)
  return items[idx], False

def disk_bytes(t: Any) -> memoryview:
  """The bytes of DISK tensor `t` (any view of its file), in order: read now (a copy: no view of the mapping escapes)."""
  import numpy as np
  arr, view = _items(t)
  return (np.array(arr, order="C") if view else arr).reshape(-1).view(np.uint8).data

def disk_read(t: Any, device: str) -> Any:
  """DISK tensor `t` (or a view of it) copied to `device`: read now, so it keeps the file's current contents. A contiguous
  range of the file is copied once, straight into the device's buffer."""
  import numpy as np
  from tinygrad.helpers import prod
  Tensor = type(t)
  if prod(t.shape) == 0: return Tensor.empty(*t.shape, dtype=t.dtype, device=device)
  arr = np.ascontiguousarray(_items(t)[0])
  return Tensor(Tensor._from_bytes(arr.reshape(-1).view(np.uint8), t.shape, t.dtype, device))

def disk_write(t: Any, x: Any) -> None:
  """Write `x` (a Tensor on any device, or Python values) into DISK tensor `t`, a strided view of its file: now."""
  import numpy as np
  from tinygrad.helpers import prod
  Tensor = type(t)
  if not isinstance(x, Tensor): x = Tensor(x, dtype=t.dtype)
  if x.dtype != t.dtype: raise TypeError(f"assign dtype mismatch: value {x.dtype} != target {t.dtype}; cast it first (assign never casts)")
  if is_disk(x.device): x = disk_read(x, "CPU")
  try: x = x._broadcast_to(t.shape)
  except ValueError: raise ValueError(f"assign: value shape {x.shape} does not fit target shape {t.shape}") from None
  if prod(t.shape) == 0: return
  src = np.frombuffer(x.contiguous()._host_bytes(), dtype=np.dtype(f"V{t.dtype.itemsize}")).reshape(t.shape)
  broadcast = ValueError(f"assign into {t.device}: the target is a broadcast (expanded) view: several of its elements are one item of the file")
  if (m := _mapped(t)) is not None:
    dest = m
    if any(st == 0 and n > 1 for n, st in zip(dest.shape, dest.strides)): raise broadcast
    dest[...] = src
  else:
    items, idx = _elements(t)
    if (idx < 0).any(): raise ValueError(f"assign into {t.device}: the target reaches into padding, which has no place in the file")
    if len(np.unique(idx)) != idx.size: raise broadcast
    items[idx] = src
  dest = items = m = None

def disk_bitcast(t: Any, dt: Any) -> Any:
  """DISK tensor `t` read as `dt` of another item size: a view of the same bytes of the file (the last axis rescaled, as
  Tensor.bitcast), for a contiguous range of it."""
  from tinygrad.device import Buffer
  from tinygrad.engine.buffers import buffer_of, buffer_node
  from tinygrad.helpers import prod
  from tinygrad.mixin.common import ArgumentError   # ValueError and RuntimeError: the error of public tinygrad and torch's view(dtype)
  what = f"bitcast of a {t.device} tensor from {t.dtype} to {dt}"
  if t.ndim == 0: raise ArgumentError(f"{what}: a 0-d tensor has no last axis to rescale; reshape it to (1,) first")
  _file_base(t)
  if (r := _strided(t.uop)) is None or not _contiguous(r[2], r[3], t.dtype.itemsize):
    raise ArgumentError(f"{what}: only a contiguous range of the file can be read as another item size (this view is strided)")
  base, off, shape, _ = r
  if (shape[-1] * t.dtype.itemsize) % dt.itemsize: raise ArgumentError(f"{what}: the last axis ({shape[-1]}) does not fill whole {dt} items")
  nbytes = prod(shape) * t.dtype.itemsize
  bb = buffer_of(base).allocate()
  # (a DiskBuffer of the same mapping: the range, holding the base Buffer so that its mapping stays open)
  u = buffer_node(Buffer(t.device, nbytes // dt.itemsize, dt, opaque=type(bb._buf)(bb._buf.dev, bb._buf.offset + off, nbytes, base=bb)))
  return type(t)(u.reshape(tuple(shape[:-1]) + (shape[-1] * t.dtype.itemsize // dt.itemsize,)))
