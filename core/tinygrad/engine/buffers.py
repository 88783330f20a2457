"""The map from BUFFER UOps (the tensor graph's handles) to device Buffers holding the data."""
from __future__ import annotations
import itertools, pickle
from typing import Any, TYPE_CHECKING
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, register_buffer_lookup, reshape_base
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import leaf_lock
if TYPE_CHECKING:
  from tinygrad.device import Buffer

_unique = itertools.count()
_lock = leaf_lock()   # two threads' first buffer_of of one BUFFER must get the same Buffer
_BUFFER = Ops.BUFFER
# A BUFFER node's Buffer is kept in the node's own __dict__ (as its cached shape and device are): it lives exactly as long
# as the node, as in a WeakKeyDictionary, whose Python-level get (a weak reference made per lookup) cost ~1 us a lookup

_device_uops: dict[str, UOp] = {}   # each device name's DEVICE node, kept (one per device used: ~1 us of every new buffer)
def check_storable(dtype: DType) -> None:
  """A TypeError for a dtype no buffer holds: weakint (the dtype of an int literal until it meets a typed value; computed,
  it is dtypes.default_int) and void (no values)."""
  if dtype.scalar() == dtypes.weakint:
    raise TypeError("cannot create storage for weak dtype dtypes.weakint (an int literal's dtype until it meets a typed value); "
                    "use dtypes.int32 (dtypes.default_int) or another int dtype")
  if dtype.scalar() == dtypes.void: raise TypeError("cannot create storage for dtypes.void (it has no values); use a dtype with a size, e.g. dtypes.uint8")

def new_buffer(device: str, size: int, dtype: DType) -> UOp:
  """A fresh BUFFER UOp of `size` elements of `dtype` on `device`; its Buffer is created (not allocated) on first use.
  weakint and void have no storage: a TypeError (check_storable)."""
  check_storable(dtype)   # (it made a 4-byte weakint buffer, 0.14 raises; a void one read as a struct error or ZeroDivisionError)
  if (dev := _device_uops.get(device)) is None:
    dev = UOp(Ops.DEVICE, arg=device)
    dev.__dict__["_device"] = device
    if len(_device_uops) >= 64: _device_uops.clear()   # (DISK:<path> names one per file)
    _device_uops[device] = dev
  uniq = UOp(Ops.UNIQUE, arg=next(_unique))
  u = UOp(Ops.BUFFER, dtype, (uniq, dev), size)
  # (its shape and device, and its sources' devices, known here: each result's view of its buffer asked for them, a walk
  # over its new sources; the rules give the same: ops._shape, ops._device)
  uniq.__dict__["_device"] = None
  u.__dict__["_shape"], u.__dict__["_device"] = (size,), device
  return u

def buffer_node(buf: Buffer) -> UOp:
  """A fresh BUFFER UOp standing for the existing Buffer `buf` (buffer_of gives it back): a view of a file's range, a
  TinyJit capture's buffers listed as its LINEAR."""
  u = new_buffer(buf.device, buf.size, buf.dtype)
  u.__dict__["_buf"] = buf
  return u

def buffer_of(u: UOp) -> Buffer:
  """The device Buffer behind a BUFFER UOp (created on first call; allocate() it before use)."""
  if (buf := u.__dict__.get("_buf")) is not None: return buf
  if u.op is not _BUFFER: raise ValueError(f"expected a BUFFER UOp, got {u.op}")
  from tinygrad.device import Buffer
  with _lock:
    if (buf := u.__dict__.get("_buf")) is None: buf = u.__dict__["_buf"] = Buffer(u.src[1].arg, u.arg, u.dtype)
  return buf

def buffer_if_any(u: UOp) -> Buffer | None:
  """The Buffer of a BUFFER UOp if buffer_of made one, else None (none is made)."""
  return u.__dict__.get("_buf")

def has_buffer(u: UOp) -> bool: return "_buf" in u.__dict__

def reshape_chain(u: UOp) -> list[UOp]:
  """u and each node under it through RESHAPEs, down to reshape_base(u)."""
  out = [u]
  while u.op is Ops.RESHAPE: out.append(u := u.src[0])
  return out

def base_buffer(u: UOp) -> UOp | None:
  """The BUFFER under a chain of RESHAPEs (and the prefix SHRINK of a symbolic-shaped tensor, which is realized into a
  buffer of its largest size) that keep it contiguous, else None."""
  u = reshape_base(u)
  if u.op is Ops.SHRINK and len(u.arg) == 1 and isinstance(u.arg[0][1], UOp) and u.arg[0][0] == 0 and u.src[0].op is Ops.BUFFER: u = u.src[0]
  return u if u.op is Ops.BUFFER else None

def _reduce_buffer(u: UOp, protocol: int) -> tuple:
  # pickled with its bytes when allocated, as public tinygrad's Buffer (protocol 5: a PickleBuffer, which can go out of
  # band); loaded, it is a fresh node (its UNIQUE number may be another buffer's in the loading process). The bytes are
  # the state, which UOp.__setstate__ gives to _fill_buffer: in the arguments they would stay in the unpickler's memo until
  # the load ends. copy.deepcopy takes the same form: the copy has a buffer of its own
  # (the schedule's tagged stand-ins for its inputs, BUFFERs without a UNIQUE, pickle as plain nodes)
  if len(u.src) != 2 or u.tag is not None: return u.__reduce__()
  args = (u.src[1].arg, u.arg, u.dtype)
  if (buf := buffer_if_any(u)) is None or not buf.is_allocated(): return _load_buffer, args
  # a DISK buffer is its file's range: it pickles as that range (writing its bytes to a fresh buffer would write them at
  # the file's start)
  if (offset := getattr(buf._buf, "offset", None)) is not None and buf.device.startswith("DISK:"): return _load_disk_buffer, (*args, offset)
  return _load_buffer, args, pickle.PickleBuffer(buf.as_buffer()) if protocol >= 5 else bytes(buf.as_buffer())

def _load_buffer(device: str, size: int, dtype: DType) -> UOp: return new_buffer(device, size, dtype)

def _fill_buffer(u: UOp, data: Any) -> None: buffer_of(u).allocate().copyin(memoryview(data))

def _load_disk_buffer(device: str, size: int, dtype: DType, offset: int) -> UOp:
  from tinygrad.device import Buffer
  # (a DiskBuffer of the file's mapping, holding the Buffer of its first offset + nbytes bytes: the mapping stays open)
  file = buffer_of(new_buffer(device, offset + size * dtype.itemsize, dtypes.uint8)).allocate()
  return buffer_node(Buffer(device, size, dtype, opaque=type(file._buf)(file._buf.dev, offset, size * dtype.itemsize, base=file)))

register_buffer_lookup(buffer_of, _reduce_buffer, _fill_buffer)
