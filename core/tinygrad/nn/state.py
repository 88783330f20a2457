"""Model state: finding parameters, state dicts, and the safetensors file format (written and read here, no dependency).

safetensors: an 8-byte little-endian header length N, N bytes of JSON ({name: {"dtype", "shape", "data_offsets": [begin, end]}},
optional "__metadata__": {str: str}), then the raw little-endian data; offsets count from the end of the header. The format is
small enough that owning it keeps the core's dependencies at pluggy + numpy.
"""
from __future__ import annotations
import collections, io, json, math, os, struct, tempfile, time
from collections import OrderedDict
from typing import Any, Callable
from tinygrad.tensor import Tensor
from tinygrad.dtype import DType, dtypes, NO_NUMPY
from tinygrad.helpers import DEBUG, GlobalCounters

# ---- a tensor's bytes as a file ----
class TensorIO(io.RawIOBase):
  """A read-only, seekable binary file over the bytes of a 1-d uint8 tensor (public tinygrad's; e.g. for a reader that
  takes a file object). The bytes are read from the device once, at the first read."""
  def __init__(self, t: Tensor):
    if t.ndim != 1 or t.dtype != dtypes.uint8: raise ValueError(f"TensorIO needs a 1-d uint8 tensor, got shape {t.shape} and {t.dtype}")
    super().__init__()
    self._tensor, self._pos = t, 0
    self._data: memoryview | None = None
  def readable(self) -> bool: return True
  def seekable(self) -> bool: return True
  def readinto(self, buffer: Any) -> int:
    if self._data is None: self._data = self._tensor.data()
    data = self._data
    n = max(0, min(len(buffer), len(data) - self._pos))
    memoryview(buffer).cast("B")[:n] = data[self._pos:self._pos + n]
    self._pos += n
    return n
  def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
    if whence not in (io.SEEK_SET, io.SEEK_CUR, io.SEEK_END): raise ValueError(f"TensorIO.seek: whence must be 0, 1 or 2, got {whence}")
    base = (0, self._pos, len(self._tensor))[whence]
    self._pos = min(len(self._tensor), max(0, base + offset))   # kept inside the data, as public tinygrad's
    return self._pos
  def tell(self) -> int: return self._pos
  def write(self, b: Any) -> int: raise io.UnsupportedOperation("TensorIO is read-only")

# ---- parameters and state dicts ----
def get_state_dict(obj: Any, prefix: str = "", tensor_type: type = Tensor) -> dict[str, Tensor]:
  """Every Tensor reachable from `obj` (attributes, lists, tuples, dicts, namedtuples) by dotted name: {"l1.weight": t, ...}."""
  out: dict[str, Tensor] = {}
  # (object, prefix, ids of the objects above it) work list, processed in order so names come out in attribute order
  todo: list[tuple[Any, str, frozenset[int]]] = [(obj, prefix, frozenset())]
  while todo:
    o, p, above = todo.pop(0)
    if isinstance(o, tensor_type):
      out[p.strip(".")] = o  # type: ignore[assignment]
      continue
    # a cycle ends here; a sub-object shared by two parents (T5's embedding, held as `shared` and `encoder.embed_tokens`)
    # is listed under each name, as public tinygrad does: a checkpoint may name it either way
    if id(o) in above: continue
    above = above | {id(o)}
    if hasattr(o, "_asdict"): o = o._asdict()
    elif isinstance(o, OrderedDict): o = dict(o)
    elif hasattr(o, "__dict__") and not isinstance(o, type): o = o.__dict__
    if isinstance(o, (list, tuple)): todo[0:0] = [(x, f"{p}{i}.", above) for i, x in enumerate(o)]
    elif isinstance(o, dict): todo[0:0] = [(v, f"{p}{k}.", above) for k, v in o.items()]
  return out

def get_parameters(obj: Any) -> list[Tensor]:
  """Every Tensor reachable from `obj` (each once), in state-dict order: what an optimizer takes."""
  ret, ids = [], set()
  for t in get_state_dict(obj).values():
    if id(t) not in ids: ret.append(t)
    ids.add(id(t))
  return ret

def load_state_dict(model: Any, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = True, consume: bool = False,
                    realize: bool = True) -> list[Tensor]:
  """Copy `state_dict`'s tensors into `model`'s (in place, cast to the model's dtype, moved to its device); returns the model
  tensors that were loaded, in the model's order (public tinygrad's return value).

  strict: every model key must be present; shape mismatches are always an error (a () and a (1,) tensor are taken for each
  other, as public tinygrad does: an old checkpoint's scalar optimizer lr). The error lists every missing key and
  mismatched shape at once. Keys the model does not have are left unused, as in public tinygrad (a checkpoint with more
  than the model: a classifier head, optimizer state); the verbose line counts them, and DEBUG>=1 names them. consume: delete loaded keys from `state_dict`. verbose (the
  default, as public tinygrad's): print one line with the time taken and the bytes loaded.
  """
  st, mem0 = time.perf_counter(), GlobalCounters.mem_used
  model_sd = get_state_dict(model)
  missing = [k for k in model_sd if k not in state_dict]
  unexpected = [k for k in state_dict if k not in model_sd]
  for k, v in model_sd.items():
    if k in state_dict and {v.shape, state_dict[k].shape} == {(), (1,)}: state_dict[k] = state_dict[k].reshape(v.shape)
  shapes = [f"Shape mismatch in layer `{k}`: Expected shape {v.shape}, but found {state_dict[k].shape} in state dict." for k, v in model_sd.items()
            if k in state_dict and v.shape != state_dict[k].shape]   # (public tinygrad's wording)
  problems = ([f"missing keys: {missing}"] if strict and missing else []) + shapes
  if problems: raise ValueError("load_state_dict: " + "; ".join(problems))
  from tinygrad.multi import to_layout
  todo = [(k, v) for k, v in model_sd.items() if k in state_dict]
  # each model tensor gets its own buffer first, so the loaded value is copied in rather than aliased: an unrealized one (its
  # init, a random uniform, which the load overwrites whole) a new empty buffer, not its init computed (GPT-2 small: 124M
  # random numbers, ~3 s), a view its own copy, in one realize (one each re-walked every live graph: 5 s for GPT-2)
  fresh = [v for _, v in todo if v._view_of is None and not v._is_realized()]
  # a source that is one of those tensors (the model's own state dict, a weight tied on load) keeps its value: its graph,
  # taken before the empty buffer replaces it (the tensor itself read that buffer: zeros or garbage loaded, silently)
  fresh_ids = {id(v) for v in fresh}
  srcs = {k: Tensor(state_dict[k].uop) if id(state_dict[k]) in fresh_ids else state_dict[k] for k, _ in todo}
  for v in fresh: v.replace(v.empty_like())
  if todo: Tensor.realize(*[v for _, v in todo])
  for k, v in todo:
    src = srcs[k]
    # onto v's device, or sharded the way v is (also from a checkpoint sharded another way)
    src = Tensor(to_layout(src.uop, v.device, v.uop.arg)) if isinstance(v.device, tuple) else src.to(v.device)
    v.assign(src.cast(v.dtype) if src.dtype != v.dtype else src)
    if consume: del state_dict[k]
  if realize and todo: Tensor.realize(*[v for _, v in todo])
  if verbose:
    nbytes = sum(v.nbytes() for _, v in todo)
    print(f"loaded {len(todo)} weights ({nbytes/1e9:.2f} GB, {(GlobalCounters.mem_used-mem0)/1e9:.2f} GB newly allocated) in "
          f"{(time.perf_counter()-st)*1e3:.2f} ms" + ("" if realize else " (not realized yet)") +
          (f"; {len(unexpected)} state dict keys the model does not have were not used" if unexpected else ""))
  if unexpected and DEBUG >= 1: print(f"load_state_dict: unused keys: {unexpected}")
  return [v for _, v in todo]

# ---- safetensors ----
SAFE_DTYPES: dict[str, DType] = {"BOOL": dtypes.bool, "I8": dtypes.int8, "U8": dtypes.uint8, "I16": dtypes.int16, "U16": dtypes.uint16,
  "I32": dtypes.int32, "U32": dtypes.uint32, "I64": dtypes.int64, "U64": dtypes.uint64, "F16": dtypes.float16, "BF16": dtypes.bfloat16,
  "F32": dtypes.float32, "F64": dtypes.float64, "F8_E4M3": dtypes.fp8e4m3, "F8_E5M2": dtypes.fp8e5m2}   # (safetensors has no fnuz fp8)
_SAFE_NAMES = {v: k for k, v in SAFE_DTYPES.items()}

def _raw_bytes(t: Tensor) -> bytes:
  if t.numel() == 0: return b""
  if t.dtype == dtypes.bfloat16: return t.bitcast(dtypes.uint16).numpy().astype("<u2").tobytes()
  if t.dtype in dtypes.fp8s: return t.bitcast(dtypes.uint8).numpy().tobytes()   # the bytes themselves (numpy() would widen them)
  return t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()

def _umask() -> int:
  mask = os.umask(0o022)   # the only portable read of the umask is to set it: put it straight back
  os.umask(mask)
  return mask

def safe_save(tensors: dict[str, Tensor], fn: str | os.PathLike, metadata: dict[str, Any] | None = None) -> None:
  """Write `tensors` to `fn` in the safetensors format (with optional string `metadata`).

  The file is written to a fresh temporary file in the same directory and renamed over `fn`, so a failed save leaves
  neither a half file nor a temporary one, and concurrent saves to one path each land whole (the last one wins)."""
  if "__metadata__" in tensors: raise ValueError("safe_save: a tensor may not be named '__metadata__' (the format's metadata key); rename it")
  raws: dict[str, bytes] = {}
  for name, t in tensors.items():
    if not isinstance(name, str): raise TypeError(f"safe_save: tensor names are str, got {name!r}")
    if t.dtype not in _SAFE_NAMES: raise TypeError(f"safe_save: {name} has dtype {t.dtype}, which safetensors cannot store; valid: {list(SAFE_DTYPES)}")
    raws[name] = _raw_bytes(t)
  # every tensor starts at a multiple of its item size with no gaps (readers reject both): dict order when that holds,
  # else the largest items first, as the reference writer lays them out
  order = list(tensors)
  if any(sum(len(raws[n]) for n in order[:i]) % tensors[k].dtype.itemsize for i, k in enumerate(order)):
    order.sort(key=lambda n: -tensors[n].dtype.itemsize)
  offs, off = {}, 0
  for n in order:
    offs[n] = [off, off + len(raws[n])]
    off += len(raws[n])
  header: dict[str, Any] = {n: {"dtype": _SAFE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": offs[n]} for n, t in tensors.items()}
  if metadata: header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
  hj = json.dumps(header, separators=(",", ":")).encode()
  hj += b" " * (-(8 + len(hj)) % 8)   # the data starts 8-byte aligned, as the reference writer does
  path = os.fspath(fn)
  try: mode = os.stat(path).st_mode & 0o777   # overwriting keeps the file's mode, as open() would
  except FileNotFoundError: mode = 0o666 & ~_umask()
  # mkstemp: a fresh name (O_EXCL, so a planted symlink is never followed) that no other saver shares
  fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
  try:
    with os.fdopen(fd, "wb") as f:
      f.write(struct.pack("<Q", len(hj)))
      f.write(hj)
      for n in order: f.write(raws[n])
      f.flush()
      os.fchmod(f.fileno(), mode)   # mkstemp creates 0o600
    os.replace(tmp, path)
  except BaseException:
    try: os.unlink(tmp)
    except FileNotFoundError: pass
    raise

def _no_duplicates(fn: Any):
  def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
      if k in out: raise ValueError(f"{fn}: corrupt safetensors header: the name {k!r} appears twice")
      out[k] = v
    return out
  return hook

def _is_int(x: Any) -> bool: return type(x) is int

def _check_header(header: Any, fn: Any, data_size: int) -> None:
  """One ValueError naming the file and the entry for anything a writer could not have meant."""
  if not isinstance(header, dict): raise ValueError(f"{fn}: corrupt safetensors header: a JSON object is needed, got {type(header).__name__}")
  spans = []
  for name, info in header.items():
    bad = lambda why: ValueError(f"{fn}: corrupt safetensors header: entry {name!r} {why}")
    if name == "__metadata__":
      if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()): raise bad("must map str to str")
      continue
    if not isinstance(info, dict): raise bad(f"must be an object, got {type(info).__name__}")
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in info]
    if missing: raise bad(f"lacks {', '.join(missing)}")
    if not isinstance(info["dtype"], str) or info["dtype"] not in SAFE_DTYPES: raise bad(f"has dtype {info['dtype']!r}; supported: {list(SAFE_DTYPES)}")
    shape, offs = info["shape"], info["data_offsets"]
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape): raise bad(f"has shape {shape!r}, not a list of non-negative integers")
    if not (isinstance(offs, list) and len(offs) == 2 and all(_is_int(o) and o >= 0 for o in offs) and offs[0] <= offs[1]):
      raise bad(f"has data_offsets {offs!r}, not [begin, end] non-negative integers with begin <= end")
    b, e = offs
    isz = SAFE_DTYPES[info["dtype"]].itemsize
    need = math.prod(shape) * isz
    if e - b != need: raise bad(f"has offsets {b}..{e} ({e-b} bytes) but shape {shape} of {info['dtype']} needs {need} bytes")
    if e > data_size: raise bad(f"has offsets {b}..{e} past the end of the data ({data_size} bytes)")
    if b == e: continue   # an empty tensor occupies nothing (the safetensors library wants it between two others: not checked)
    # (an offset that is not a multiple of the item size is valid: the safetensors library reads it, and public tinygrad's
    # safe_save writes one after a tensor of an odd byte count; safe_save here aligns)
    spans.append((b, e, name))
  # the tensors tile the data exactly, as the safetensors library checks: it rejects a gap, an overlap and bytes after the
  # last tensor ("file not fully covered"), which loaded here unread
  pos, prev = 0, None
  for b, e, name in sorted(spans):
    if b < pos: raise ValueError(f"{fn}: corrupt safetensors header: entries {prev!r} and {name!r} overlap")
    if b > pos: raise ValueError(f"{fn}: corrupt safetensors header: {b - pos} bytes before entry {name!r} belong to no tensor (a gap)")
    pos, prev = e, name
  if pos != data_size: raise ValueError(f"{fn}: corrupt safetensors file: {data_size - pos} bytes after the last tensor belong to no tensor")

# ---- a file named by path, or its bytes in a uint8 Tensor (Tensor(pathlib.Path(fn)), Tensor.from_url), as public tinygrad's
# readers accept both ----
FileLike = str | os.PathLike | Tensor
def _name(fn: FileLike) -> Any: return "<file bytes in a Tensor>" if isinstance(fn, Tensor) else fn
def _open(fn: FileLike) -> Any:
  """A fresh binary file object over `fn`: the file, or a Tensor's bytes in memory."""
  if not isinstance(fn, Tensor): return open(fn, "rb")
  import io
  return io.BytesIO(fn.numpy().tobytes())
def _size(f: Any) -> int: return len(f.getbuffer()) if hasattr(f, "getbuffer") else os.fstat(f.fileno()).st_size

def _read_header(f: Any, fn: Any) -> tuple[dict[str, Any], int]:
  head = f.read(8)
  if len(head) != 8: raise ValueError(f"{fn}: not a safetensors file (shorter than 8 bytes)")
  n = struct.unpack("<Q", head)[0]
  size = _size(f)
  if n > size - 8: raise ValueError(f"{fn}: not a safetensors file (header length {n} > file size {size})")
  try: header = json.loads(f.read(n), object_pairs_hook=_no_duplicates(fn))
  except ValueError as e: raise ValueError(f"{fn}: corrupt safetensors header: {e}") from None
  except RecursionError: raise ValueError(f"{fn}: corrupt safetensors header: JSON nested too deeply to be one") from None
  _check_header(header, fn, size - 8 - n)
  return header, 8 + n

def safe_load_metadata(fn: FileLike) -> dict[str, Any]:
  """The JSON header of a safetensors file (a path, or a uint8 Tensor of its bytes): {name: {"dtype", "shape",
  "data_offsets"}, "__metadata__": {...}}; a malformed header raises one ValueError naming the file and the entry."""
  with _open(fn) as f: return _read_header(f, _name(fn))[0]

def safe_load(fn: FileLike, device: str | None = None) -> dict[str, Tensor]:
  """The tensors of a safetensors file (a path, or a uint8 Tensor of its bytes), by name, on `device` (the default device
  when None); a malformed header raises one ValueError naming the file and the entry."""
  import mmap
  with _open(fn) as f:
    header, start = _read_header(f, _name(fn))
    # the file mapped, not read: each tensor's bytes are copied once, from the page cache into its buffer (read, then
    # copied through numpy and bytes, GPT-2 small's 500 MB took 4 copies into fresh memory, each page faulted in)
    with f.getbuffer() if isinstance(fn, Tensor) else mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
      return {name: _safe_tensor(mm, start, info, device) for name, info in header.items() if name != "__metadata__"}

def _file_npdt(dt: DType) -> Any:
  """The little-endian numpy dtype a file stores dt's values as: numpy has no bfloat16 or fp8, so those are read as their bits."""
  import numpy as np
  from tinygrad.dtype import to_numpy
  return np.dtype("<u2") if dt == dtypes.bfloat16 else np.dtype("u1") if dt in dtypes.fp8s else to_numpy(dt).newbyteorder("<")

def _from_file_bits(t: Tensor, dt: DType) -> Tensor: return t.bitcast(dt) if dt in NO_NUMPY else t

def _safe_tensor(mm: Any, start: int, info: dict, device: str | None) -> Tensor:
  import numpy as np
  dt, shape = SAFE_DTYPES[info["dtype"]], tuple(info["shape"])
  npdt = _file_npdt(dt)
  arr = np.frombuffer(mm, dtype=npdt, count=math.prod(shape), offset=start + info["data_offsets"][0])
  t = Tensor(arr if npdt.isnative else arr.astype(npdt.newbyteorder("=")), device=device).reshape(shape)
  return _from_file_bits(t, dt)

# ---- archives: tar and zip members as uint8 tensors ----
def _archive_bytes(t: FileLike) -> bytes:
  with _open(t) as f: return f.read()

def tar_extract(t: Tensor | str | os.PathLike) -> dict[str, Tensor]:
  """The regular files of a tar archive (a uint8 Tensor of its bytes, or a path), by member name, as uint8 Tensors."""
  import tarfile, io
  with tarfile.open(fileobj=io.BytesIO(_archive_bytes(t)), mode="r:*") as tar:
    return {m.name: Tensor(tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]

def zip_extract(t: Tensor | str | os.PathLike) -> dict[str, Tensor]:
  """The files of a zip archive (a uint8 Tensor of its bytes, or a path), by member name, as uint8 Tensors."""
  import zipfile, io
  with zipfile.ZipFile(io.BytesIO(_archive_bytes(t))) as z: return {i.filename: Tensor(z.read(i)) for i in z.infolist() if not i.is_dir()}

# ---- torch's checkpoint formats (zip and legacy), read without torch ----
# A restricted unpickler: the only globals a checkpoint may name are the ones below (tensor rebuilders, storage types and
# dtypes, the plain data torch's weights_only loader allows: OrderedDict, set, bytes ...); any other global -- os.system,
# builtins.eval, a model class -- is refused, so loading runs no code from the file.
_TORCH_STORAGES: dict[str, DType] = {"FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64, "HalfStorage": dtypes.float16,
  "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
  "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool, "UInt16Storage": dtypes.uint16,
  "UInt32Storage": dtypes.uint32, "UInt64Storage": dtypes.uint64}

_TORCH_DTYPES: dict[str, DType] = {"float32": dtypes.float32, "float64": dtypes.float64, "float16": dtypes.float16, "bfloat16": dtypes.bfloat16,
  "int64": dtypes.int64, "int32": dtypes.int32, "int16": dtypes.int16, "int8": dtypes.int8, "uint8": dtypes.uint8, "bool": dtypes.bool,
  "uint16": dtypes.uint16, "uint32": dtypes.uint32, "uint64": dtypes.uint64, "float8_e4m3fn": dtypes.fp8e4m3, "float8_e5m2": dtypes.fp8e5m2,
  "float8_e4m3fnuz": dtypes.fp8e4m3fnuz, "float8_e5m2fnuz": dtypes.fp8e5m2fnuz}

class _TorchStorage:
  def __init__(self, dtype: DType, data: bytes | None = None, big: bool = False): self.dtype, self.data, self.big = dtype, data, big

def _swap(data: bytes, itemsize: int) -> bytes:
  import numpy as np
  return np.frombuffer(data, dtype=f">u{itemsize}").astype(f"<u{itemsize}").tobytes()

def _rebuild_tensor(storage: _TorchStorage, offset: int, size: tuple[int, ...], stride: tuple[int, ...] | None = None, *args: Any) -> Tensor:
  import numpy as np
  if storage.data is None: return None  # type: ignore[return-value]  # legacy format's first pass: the bytes come after the pickle
  dt = storage.dtype
  npdt = _file_npdt(dt)
  size = tuple(size)
  stride = tuple(stride) if stride is not None else tuple(math.prod(size[i+1:]) for i in range(len(size)))
  # the view comes from the file: anything but ints (bool is not one), or size and stride of different lengths, was
  # numpy's error naming neither tensor nor file; a negative size passed the bounds check below
  if not all(type(x) is int for x in (offset, *size, *stride)) or len(size) != len(stride) or any(s < 0 for s in size):
    raise ValueError(f"torch_load: a tensor view needs int offset and non-negative sizes with one stride each; got size {size!r}, "
                     f"stride {stride!r}, offset {offset!r}")
  if len(storage.data) % npdt.itemsize:   # (its tail was dropped without a word)
    raise ValueError(f"torch_load: a storage of {len(storage.data)} bytes is not a whole number of {dt} items ({npdt.itemsize} bytes each)")
  n = len(storage.data) // npdt.itemsize
  last = offset + sum((s - 1) * st for s, st in zip(size, stride)) if all(s > 0 for s in size) else offset - 1
  if offset < 0 or last >= n or any(st < 0 for st in stride):
    raise ValueError(f"torch_load: tensor of size {size}, stride {stride}, offset {offset} reaches past its storage of {n} elements")
  # a dim of stride 0 (an expanded tensor, as torch saves one) stays an expand: copied out it made a few bytes of file into
  # any amount of memory (size (2**20, 2**20), stride (0, 0): 4 TiB)
  base = tuple(1 if st == 0 and s > 0 else s for s, st in zip(size, stride))
  # overlapping strides (as_strided, unfold) repeat elements too: size (100,)*4, stride (1,)*4 over 400 floats is 4e8
  # (public tinygrad refuses any view but a permute); bounded at 16x the storage, past a floor for small ones
  if math.prod(base) > max(16 * n, 1 << 20):
    raise ValueError(f"torch_load: tensor of size {size}, stride {stride} repeats its storage of {n} elements into {math.prod(base)}; "
                     "refusing to copy out more than 16x a storage")
  flat = np.frombuffer(storage.data, dtype=npdt, count=n)
  arr = np.lib.stride_tricks.as_strided(flat[offset:], shape=base, strides=tuple(st * npdt.itemsize for st in stride))
  arr = np.ascontiguousarray(arr).astype(npdt.newbyteorder("="))
  ret = _from_file_bits(Tensor(arr.reshape(-1)).reshape(base), dt)
  return ret.expand(size) if base != size else ret

def _rebuild_tensor_v3(storage: _TorchStorage, offset: int, size: tuple[int, ...], stride: tuple[int, ...], requires_grad: Any, hooks: Any,
                       dtype: Any, *args: Any) -> Tensor:
  # torch >= 2.3 writes tensors of the dtypes without a typed storage class (uint16/32/64, float8) as untyped bytes plus a dtype
  dt = _storage_dtype(dtype)
  data = _swap(storage.data, dt.itemsize) if storage.big and storage.data is not None and dt.itemsize > 1 else storage.data   # (untyped: not swapped yet)
  return _rebuild_tensor(_TorchStorage(dt, data), offset, size, stride)
def _rebuild_parameter(data: Tensor, requires_grad: bool = True, *args: Any) -> Tensor: return data
def _latin1_bytes(s: str, encoding: str = "latin1") -> bytes:
  # protocol 2 pickles bytes as _codecs.encode(str, "latin1"); any other codec is not how bytes are written
  if encoding not in ("latin1", "latin-1") or not isinstance(s, str): raise ValueError(f"torch_load: refusing _codecs.encode(..., {encoding!r})")
  return s.encode("latin1")
def _bytearray(data: Any = b"", *args: Any) -> bytearray:
  # pickled as bytearray(bytes) (or (str, "latin-1")); an int would allocate that many zero bytes from a few bytes of file
  if isinstance(data, int): raise ValueError("torch_load: refusing bytearray(int) (an allocation the file sizes, not data)")
  return bytearray(data, *args)
def _torch_device(kind: str, index: int | None = None) -> str: return kind if index is None else f"{kind}:{index}"   # torch.device as its string
def _rebuild_from_type_v2(func: Callable, new_type: Any, args: tuple, state: Any) -> Any: return func(*args)

class _TorchType:
  """What torch.Tensor / torch.nn.Parameter stand for in a pickle: only ever an argument (the type _rebuild_from_type_v2
  ignores), never called, so a pickle cannot construct anything through them."""
  def __init__(self, name: str): self.name = name
  def __repr__(self) -> str: return f"<torch type {self.name}>"

_TORCH_GLOBALS: dict[tuple[str, str], Any] = {("collections", "OrderedDict"): OrderedDict,
  ("torch._utils", "_rebuild_tensor"): _rebuild_tensor, ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
  ("torch._utils", "_rebuild_parameter"): _rebuild_parameter, ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
  ("torch", "Tensor"): _TorchType("torch.Tensor"), ("torch.nn.parameter", "Parameter"): _TorchType("torch.nn.Parameter"),
  ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3, ("torch.storage", "UntypedStorage"): dtypes.uint8,
  ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter, ("torch", "Size"): tuple, ("torch", "device"): _torch_device,
  # plain data torch's own weights_only loader also allows (protocol 2 names builtins "__builtin__")
  **{(m, k): v for m in ("builtins", "__builtin__") for k, v in (("set", set), ("complex", complex),
     ("bytearray", _bytearray))}, ("collections", "Counter"): collections.Counter, ("_codecs", "encode"): _latin1_bytes,
  **{("torch", k): v for k, v in _TORCH_STORAGES.items()}, **{("torch", k): v for k, v in _TORCH_DTYPES.items()},
  # dtypes tinygrad lacks: named, so the error says which (a _TorchType is never called)
  **{("torch", k): _TorchType(f"torch.{k}") for k in ("complex32", "complex64", "complex128", "ComplexFloatStorage", "ComplexDoubleStorage",
     "float8_e8m0fnu", "QInt8Storage", "QUInt8Storage", "QInt32Storage")}}

def _torch_unpickler(f: Any, persistent: Callable[[Any], Any] | None = None) -> Any:
  """The one unpickler every pickle of every checkpoint format goes through: globals only from _TORCH_GLOBALS, persistent ids
  only where the format has them (`persistent` maps one to its object; None refuses them all)."""
  import pickle
  def load_build(self: Any) -> None:
    # BUILD sets the state of the object below it; aimed at an allowed global it rewrote that object for the whole process
    # (dtypes.float32's itemsize, a rebuilder's __defaults__). Only a dict the pickle built (an OrderedDict's _metadata) may
    # take state, so Python's unpickler (whose opcodes can be overridden; the C one's cannot) runs every checkpoint pickle.
    state, inst = self.stack[-1], self.stack[-2]
    if not isinstance(inst, dict) or not isinstance(state, dict):
      raise pickle.UnpicklingError(f"torch_load: refusing to set the state of {repr(inst)[:80]} ({type(inst).__name__}): a checkpoint may only set "
                                   "attributes of the dicts it builds")
    pickle._Unpickler.load_build(self)  # type: ignore[attr-defined]
  def load_bytearray8(self: Any) -> None:   # (Python's allocates the length first, unchecked: BYTEARRAY8 of 2**40 was a MemoryError)
    n = struct.unpack("<Q", self.read(8))[0]
    self.append(bytearray(self.read(n)))   # (read checks n against the bytes left)
  class Dispatch(dict):
    def __missing__(self, op: int) -> Any: raise pickle.UnpicklingError(f"invalid load key, {bytes([op])!r} (not a pickle opcode)")
  class Exact:
    # Python's unpickler takes a short read as data (the C one said "truncated"), and a length in the file is read whole
    # before its bytes are checked (a BINBYTES8 or FRAME of 2**40 allocated it): both checked against what is left
    def __init__(self, f: Any): self.f, self.end = f, _end_of(f)
    def read(self, n: int) -> bytes:
      left = self.end - self.f.tell()
      if not 0 <= n <= left: raise pickle.UnpicklingError(f"pickle data was truncated ({n} bytes needed, {left} left)")
      return self.f.read(n)
    def readline(self) -> bytes:
      line = self.f.readline()
      if not line.endswith(b"\n"): raise pickle.UnpicklingError("pickle data was truncated (a line without its end)")
      return line
  class Unpickler(pickle._Unpickler):  # type: ignore[name-defined]
    dispatch = Dispatch({**pickle._Unpickler.dispatch, pickle.BUILD[0]: load_build,  # type: ignore[attr-defined]
                         pickle.BYTEARRAY8[0]: load_bytearray8})
    def load(self) -> Any:
      # garbage opcodes fail inside Python's unpickler as whatever they hit (IndexError on a stack underflow, TypeError
      # SETITEM on an int, UnicodeDecodeError, AttributeError): one UnpicklingError; ours say "torch_load:" and pass
      try: return super().load()
      except Exception as e:
        if isinstance(e, pickle.UnpicklingError) or str(e).startswith("torch_load:"): raise
        raise pickle.UnpicklingError(f"corrupt pickle ({type(e).__name__}: {e})") from None
    def find_class(self, module: str, name: str) -> Any:
      if (module, name) not in _TORCH_GLOBALS:
        raise pickle.UnpicklingError(f"torch_load: refusing global {module}.{name}: a checkpoint may only name tensor rebuilders, storage "
                                     f"types, dtypes and plain data (loading never runs code from the file); save a state_dict of tensors instead")
      return _TORCH_GLOBALS[(module, name)]
    def persistent_load(self, pid: Any) -> Any:
      if persistent is None: raise pickle.UnpicklingError(f"torch_load: unexpected persistent id {pid!r} in a pickle of plain data")
      return persistent(pid)
  return Unpickler(Exact(f))

def _storage_pid(pid: Any) -> tuple:
  import pickle
  if not isinstance(pid, tuple) or len(pid) < 3 or pid[0] != "storage": raise pickle.UnpicklingError(f"torch_load: unsupported persistent id {pid!r}")
  return pid

def _storage_dtype(t: Any) -> DType:
  if isinstance(t, DType): return t
  what = t.name if isinstance(t, _TorchType) else repr(t)
  raise TypeError(f"torch_load: tensors of {what} are not supported; supported: {list(_TORCH_STORAGES)} and the dtypes {list(_TORCH_DTYPES)}")

def _end_of(f: Any) -> int:
  """The offset of the end of the seekable file `f`, whose position stays where it was."""
  pos = f.tell()
  end = f.seek(0, io.SEEK_END)
  f.seek(pos)
  return end

def _read_exact(f: Any, n: int, fn: Any, what: str) -> bytes:
  # n comes from the file: checked before the read, which allocates n bytes first (a count of 2**40 was a MemoryError, a
  # smaller absurd one an allocation of that size, and -1 read the rest of the file)
  left = _end_of(f) - f.tell()
  if n < 0: raise ValueError(f"{fn}: {what} has a negative length {n}")
  if n > left: raise ValueError(f"{fn}: {what} is truncated ({left} of {n} bytes)")
  b = f.read(n)
  if len(b) != n: raise ValueError(f"{fn}: {what} is truncated ({len(b)} of {n} bytes)")
  return b

def _torch_zip(fobj: Any, fn: Any) -> Any:
  import zipfile, zlib
  # a damaged archive fails in zipfile as BadZipFile (a CRC, a header), NotImplementedError ('zip file version 20.1'),
  # EOFError, zlib.error or UnicodeDecodeError (a member name), none naming the file
  try: return _torch_zip_read(fobj, fn)
  except (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError, NotImplementedError) as e:
    raise ValueError(f"{fn}: the torch checkpoint's zip archive is corrupt ({type(e).__name__}: {e})") from None

def _torch_zip_read(fobj: Any, fn: Any) -> Any:
  import io, zipfile
  with zipfile.ZipFile(fobj) as z:
    names = z.namelist()
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl: raise ValueError(f"{fn}: a zip file without <archive>/data.pkl is not a torch checkpoint")
    root = pkl[0][:-len("data.pkl")]
    big = f"{root}byteorder" in names and z.read(f"{root}byteorder").strip() == b"big"
    def load_zip(pid: Any) -> _TorchStorage:
      dt = _storage_dtype(_storage_pid(pid)[1])
      if f"{root}data/{pid[2]}" not in names: raise ValueError(f"torch_load: the pickle names storage {pid[2]!r}, which the archive does not hold")
      data = z.read(f"{root}data/{pid[2]}")
      if big and dt.itemsize > 1: data = _swap(data, dt.itemsize)   # stored big-endian: to little, which _rebuild_tensor reads
      return _TorchStorage(dt, data, big)
    return _torch_unpickler(io.BytesIO(z.read(pkl[0])), load_zip).load()

def _torch_tar(fobj: Any, fn: Any) -> Any:
  """torch < 0.4's tar format: members 'storages' (count; per storage: (key, location, type), int64 count, bytes), 'tensors'
  (count; per tensor: (key, storage key, type), int32 ndim, 4 bytes, sizes, strides, int64 offset) and 'pickle' (the object,
  whose persistent ids are tensor keys)."""
  import tarfile
  try: return _torch_tar_read(fobj, fn)
  except (tarfile.TarError, EOFError) as e:   # (a tar cut short: ReadError 'unexpected end of data', naming no file)
    raise ValueError(f"{fn}: the torch checkpoint's tar archive is corrupt ({type(e).__name__}: {e})") from None

def _torch_tar_read(fobj: Any, fn: Any) -> Any:
  import io, tarfile
  with tarfile.open(fileobj=fobj, mode="r:") as tar:
    def member(name: str) -> io.BytesIO:
      try: return io.BytesIO(tar.extractfile(name).read())  # type: ignore[union-attr]
      except KeyError: raise ValueError(f"{fn}: a tar file without a '{name}' member is not a torch checkpoint") from None
    f = member("storages")
    storages: dict[Any, _TorchStorage] = {}
    for _ in range(_torch_unpickler(f).load()):
      key, _, st = _torch_unpickler(f).load()
      dt = _storage_dtype(st)
      n = struct.unpack("<q", _read_exact(f, 8, fn, f"storage {key}"))[0]
      storages[key] = _TorchStorage(dt, _read_exact(f, n * dt.itemsize, fn, f"storage {key}"))
    f, tensors = member("tensors"), {}
    for _ in range(_torch_unpickler(f).load()):
      key, sid, _ = _torch_unpickler(f).load()
      if sid not in storages: raise ValueError(f"{fn}: tensor {key} names storage {sid!r}, which the file does not hold")
      ndim = struct.unpack("<i", _read_exact(f, 8, fn, f"tensor {key}")[:4])[0]
      size, stride = (struct.unpack(f"<{ndim}q", _read_exact(f, 8 * ndim, fn, f"tensor {key}")) for _ in range(2))
      tensors[str(key)] = _rebuild_tensor(storages[sid], struct.unpack("<q", _read_exact(f, 8, fn, f"tensor {key}"))[0], size, stride)
    def load_tar(pid: Any) -> Tensor:
      if str(pid) not in tensors: raise ValueError(f"torch_load: the pickle names tensor {pid!r}, which the file does not hold")
      return tensors[str(pid)]
    return _torch_unpickler(member("pickle"), load_tar).load()

def _torch_legacy(f: Any, fn: Any) -> Any:
  """torch.save(_use_new_zipfile_serialization=False): pickles of the magic number, protocol version, system info, the object
  and the storage keys, then each storage as int64 count + bytes. The object is rebuilt twice: the first pass learns the
  storages' types, the second has their bytes."""
  import pickle
  def load(persistent: Callable[[Any], Any] | None = None) -> Any:
    # a file cut short ends a pickle early: pickle's bare EOFError / "pickle data was truncated" named neither file nor cause
    try: return _torch_unpickler(f, persistent).load()
    except EOFError: raise ValueError(f"{fn}: the torch checkpoint is truncated (a pickle runs past the end of the file)") from None
    except pickle.UnpicklingError as e:
      if str(e).startswith("torch_load:"): raise   # a refusal says what and why itself
      raise ValueError(f"{fn}: the torch checkpoint is {'truncated' if 'truncated' in str(e) else 'corrupt'} ({e})") from None
  try: magic = _torch_unpickler(f).load()
  except Exception as e: raise ValueError(f"{fn}: not a torch checkpoint ({type(e).__name__}: {e})") from None
  if magic != 0x1950a86a20f9469cfc6c: raise ValueError(f"{fn}: not a torch checkpoint (bad magic number {magic!r})")
  for _ in range(2): load()  # protocol version, sys info: plain data
  storages: dict[str, _TorchStorage] = {}
  def load_legacy(pid: Any) -> _TorchStorage:
    key = str(_storage_pid(pid)[2])
    if key not in storages: storages[key] = _TorchStorage(_storage_dtype(pid[1]))
    return storages[key]
  load(load_legacy)
  raw = {}
  for k in load():
    if str(k) not in storages: raise ValueError(f"{fn}: storage {k} is stored but the object never names it")
    n = struct.unpack("<q", _read_exact(f, 8, fn, f"storage {k}"))[0]
    raw[str(k)] = _read_exact(f, n * storages[str(k)].dtype.itemsize, fn, f"storage {k}")
  if (lost := [k for k in storages if k not in raw]): raise ValueError(f"{fn}: storages {lost} are named but not stored in the file")
  for k, st in storages.items(): st.data = raw[k]
  f.seek(0)
  for _ in range(3): _torch_unpickler(f).load()
  return _torch_unpickler(f, load_legacy).load()

def torch_load(fn: FileLike) -> Any:
  """The object torch.save wrote to `fn` (a path, or a uint8 Tensor of its bytes; usually a state dict), its tensors as
  tinygrad Tensors on the default device.

  Reads torch's zip format (torch >= 1.6), the legacy format (`_use_new_zipfile_serialization=False`) and torch < 0.4's tar
  format without importing torch. Every pickle in every format goes through one restricted unpickler: it may only name the
  globals a tensor checkpoint needs (see _TORCH_GLOBALS), anything else raises pickle.UnpicklingError before it runs."""
  import pickle, tarfile, zipfile
  with _open(fn) as f:
    try: is_zip = zipfile.is_zipfile(f)
    except zipfile.BadZipFile as e: raise ValueError(f"{_name(fn)}: the torch checkpoint's zip archive is corrupt ({e})") from None
    f.seek(0)
    is_tar = not is_zip and tarfile.is_tarfile(f)
    f.seek(0)
    try: return (_torch_zip if is_zip else _torch_tar if is_tar else _torch_legacy)(f, _name(fn))
    except ValueError as e:   # a rebuilder's error, raised inside the pickle, names the file here
      if not str(e).startswith("torch_load: "): raise
      raise ValueError(f"{_name(fn)}: {str(e)[len('torch_load: '):]}") from None
    except pickle.UnpicklingError as e:   # a corrupt pickle (a refusal says what and why itself)
      if str(e).startswith("torch_load:"): raise
      raise ValueError(f"{_name(fn)}: the torch checkpoint is corrupt ({e})") from None

# ---- GGUF (llama.cpp's format) through the `gguf` package, an optional extra: it parses every version of the format and
# dequantizes every GGML quantization type in numpy, which a parser of our own would have to reimplement (and keep up with) ----
def _gguf() -> Any:
  try: import gguf
  except ImportError: raise ImportError("GGUF support needs the gguf package: pip install 'tinygrad-core[gguf]' (or pip install gguf)") from None
  return gguf

def _gguf_read(path: str, name: str) -> tuple[dict[str, Any], dict[str, Tensor]]:
  """(metadata, tensors) of one GGUF file; a malformed one is a ValueError naming `name`."""
  import numpy as np
  gguf = _gguf()
  # the gguf package reports a malformed file as whatever numpy or struct raised (IndexError, ValueError, ...): one
  # ValueError naming the file instead
  try:
    reader = gguf.GGUFReader(path)
    kv = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    Q = gguf.GGMLQuantizationType
    plain = {Q.F32, Q.F16, Q.F64, Q.I8, Q.I16, Q.I32, Q.I64}
    arrays: dict[str, tuple[Any, bool]] = {}   # name -> (numpy array, is bfloat16 bits)
    for rt in reader.tensors:
      shape = tuple(int(d) for d in reversed(rt.shape.tolist()))
      if rt.tensor_type in plain: arrays[rt.name] = (np.array(rt.data).reshape(shape), False)
      elif rt.tensor_type == Q.BF16: arrays[rt.name] = (np.array(rt.data).view(np.uint16).reshape(shape), True)
      else: arrays[rt.name] = (gguf.quants.dequantize(np.array(rt.data), rt.tensor_type).astype(np.float32).reshape(shape), False)
  except (ValueError, IndexError, KeyError, TypeError, OverflowError, EOFError, struct.error, NotImplementedError) as e:
    raise ValueError(f"{name}: not a valid GGUF file ({type(e).__name__}: {e})") from None
  out: dict[str, Tensor] = {}
  for n, (arr, bf16) in arrays.items():
    flat = Tensor(np.ascontiguousarray(arr).reshape(-1))
    out[n] = (flat.bitcast(dtypes.bfloat16) if bf16 else flat).reshape(arr.shape)
  return kv, out

def gguf_load(t: Tensor | str | os.PathLike) -> tuple[dict[str, Any], dict[str, Tensor]]:
  """(key-value metadata, tensors by name) of a GGUF file (a path, or a uint8 Tensor of its bytes). Quantized tensors are
  dequantized to float32 on the host; float and int tensors keep their dtype. Shapes are row-major (GGUF's dims reversed).
  A model split into parts (`name-00001-of-00003.gguf` ..., metadata `split.count`) is loaded whole from the path of its
  first part, as in public tinygrad; a missing part is a FileNotFoundError."""
  if not isinstance(t, Tensor): return _gguf_load_parts(os.fspath(t))  # type: ignore[arg-type]
  fd, tmp = tempfile.mkstemp(suffix=".gguf")
  try:
    with os.fdopen(fd, "wb") as f: f.write(t.numpy().tobytes())
    kv, sd = _gguf_read(tmp, "<GGUF bytes in a Tensor>")
  finally: os.unlink(tmp)
  if _gguf_split(kv, "<GGUF bytes in a Tensor>")[0] > 1:
    raise ValueError("a multi-part GGUF file (split.count > 1) is loaded from the path of its first part, not from a Tensor")
  return kv, sd

def _gguf_split(kv: dict[str, Any], name: str) -> tuple[int, int]:
  """(split.count, split.no) of a GGUF file's metadata, checked: a string count was a bare TypeError, a float one a format error."""
  count, no = kv.get("split.count", 1), kv.get("split.no", 0)
  if type(count) is not int or count < 1 or type(no) is not int or not 0 <= no < count:
    raise ValueError(f"{name}: not a valid GGUF file (split.count {count!r}, split.no {no!r}: a part count >= 1 and a part index below it)")
  return count, no

def _gguf_load_parts(path: str) -> tuple[dict[str, Any], dict[str, Tensor]]:
  import re
  kv, sd = _gguf_read(path, path)
  if (total := _gguf_split(kv, path)[0]) <= 1: return kv, sd
  if kv.get("split.no", 0) != 0: raise ValueError(f"{path}: part {kv['split.no']} of a multi-part GGUF file; load it from its first part (-00001-of-{total:05d}.gguf)")
  if not (m := re.fullmatch(r"(.*)-00001-of-\d{5}\.gguf", path)): raise ValueError(f"{path}: the first part of a multi-part GGUF file must be named <name>-00001-of-{total:05d}.gguf")
  for i in range(2, total + 1):
    part = f"{m.group(1)}-{i:05d}-of-{total:05d}.gguf"
    if not os.path.exists(part): raise FileNotFoundError(f"{part}: part {i} of {total} of the GGUF model {path} is missing")
    sd.update(_gguf_read(part, part)[1])
  return kv, sd

# GGML's own element types: the dtype of each plain one (a quantized one is decoded by the gguf package)
_GGML_PLAIN = {0: dtypes.float32, 1: dtypes.float16, 24: dtypes.int8, 25: dtypes.int16, 26: dtypes.int32, 27: dtypes.int64, 28: dtypes.float64,
               30: dtypes.bfloat16}

def _q1_0(raw: Any) -> Any:
  # Q1_0 (gguf 0.19 knows its block, 2 + 16 bytes for 128 values, but not how to decode it): a float16 scale d, then one
  # bit per value, least significant first: d for a 1, -d for a 0
  import numpy as np
  d = raw[:, :2].copy().view(np.float16).astype(np.float32)
  return d * (np.unpackbits(raw[:, 2:], axis=1, bitorder="little").astype(np.float32) * 2 - 1)
# quantized types decoded here, where the gguf package has the type but no decoder
_GGML_OWN = {"Q1_0": _q1_0}

def ggml_data_to_tensor(t: Tensor, n: int, ggml_type: int) -> Tensor:
  """The `n` values of GGML type `ggml_type` (its GGMLQuantizationType id) stored in the bytes of the uint8 tensor `t`, as
  public tinygrad's: a plain type (F32 0, F16 1, I8..I64 24-27, F64 28, BF16 30) is a 1-d tensor of its dtype, a view of
  the bytes; a quantized one (Q4_0 2, Q8_0 8, Q4_K 12, Q6_K 14, IQ4_XS 23, MXFP4 39 ..., every type the gguf package
  decodes, and Q1_0 41, decoded here) is a 1-d float32 tensor of the n values, decoded on the host by the gguf package,
  on t's device."""
  if (dt := _GGML_PLAIN.get(ggml_type)) is not None: return t[:dt.itemsize * n].bitcast(dt)
  import numpy as np
  gguf = _gguf()
  try: qt = gguf.GGMLQuantizationType(ggml_type)
  except ValueError:
    raise ValueError(f"unknown GGML type {ggml_type!r}; valid: {', '.join(f'{q.name} {q.value}' for q in gguf.GGMLQuantizationType)}") from None
  elems, nbytes = gguf.GGML_QUANT_SIZES[qt]
  if n % elems: raise ValueError(f"{qt.name} stores values in blocks of {elems}: n = {n} is not a multiple of it")
  raw = t[:n // elems * nbytes].numpy().reshape(-1, nbytes)
  try: vals = gguf.quants.dequantize(raw, qt) if qt.name not in _GGML_OWN else _GGML_OWN[qt.name](raw)
  except NotImplementedError: raise ValueError(f"the gguf package cannot decode GGML type {qt.name} ({ggml_type})") from None
  return Tensor(np.ascontiguousarray(vals, dtype=np.float32).reshape(-1), device=t.device)

__all__ = ["get_state_dict", "get_parameters", "load_state_dict", "safe_save", "safe_load", "safe_load_metadata", "SAFE_DTYPES",
           "tar_extract", "zip_extract", "torch_load", "gguf_load", "ggml_data_to_tensor"]
