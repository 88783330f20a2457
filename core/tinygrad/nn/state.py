"""Model state: finding parameters, state dicts, and the safetensors file format (written and read here, no dependency).

safetensors: an 8-byte little-endian header length N, N bytes of JSON ({name: {"dtype", "shape", "data_offsets": [begin, end]}},
optional "__metadata__": {str: str}), then the raw little-endian data; offsets count from the end of the header. The format is
small enough that owning it keeps the core's dependencies at pluggy + numpy.
"""
from __future__ import annotations
import json, os, struct
from collections import OrderedDict
from typing import Any
from tinygrad.tensor import Tensor
from tinygrad.dtype import DType, dtypes

# ---- parameters and state dicts ----
def get_state_dict(obj: Any, prefix: str = "", tensor_type: type = Tensor) -> dict[str, Tensor]:
  """Every Tensor reachable from `obj` (attributes, lists, tuples, dicts, namedtuples) by dotted name: {"l1.weight": t, ...}."""
  out: dict[str, Tensor] = {}
  seen: set[int] = set()
  # (object, prefix) work list, processed in order so names come out in attribute order
  todo: list[tuple[Any, str]] = [(obj, prefix)]
  while todo:
    o, p = todo.pop(0)
    if isinstance(o, tensor_type):
      out[p.strip(".")] = o  # type: ignore[assignment]
      continue
    if id(o) in seen: continue   # a cycle or a shared sub-object: first name wins
    seen.add(id(o))
    if hasattr(o, "_asdict"): o = o._asdict()
    elif isinstance(o, OrderedDict): o = dict(o)
    elif hasattr(o, "__dict__") and not isinstance(o, type): o = o.__dict__
    if isinstance(o, (list, tuple)): todo[0:0] = [(x, f"{p}{i}.") for i, x in enumerate(o)]
    elif isinstance(o, dict): todo[0:0] = [(v, f"{p}{k}.") for k, v in o.items()]
  return out

def get_parameters(obj: Any) -> list[Tensor]:
  """Every Tensor reachable from `obj` (each once), in state-dict order: what an optimizer takes."""
  ret, ids = [], set()
  for t in get_state_dict(obj).values():
    if id(t) not in ids: ret.append(t)
    ids.add(id(t))
  return ret

def load_state_dict(model: Any, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = False, consume: bool = False,
                    realize: bool = True) -> None:
  """Copy `state_dict`'s tensors into `model`'s (in place, cast to the model's dtype, moved to its device).

  strict: every model key must be present and no extra key may be; shape mismatches are always an error. The error lists
  every missing key, unexpected key and mismatched shape at once. consume: delete loaded keys from `state_dict`.
  """
  model_sd = get_state_dict(model)
  missing = [k for k in model_sd if k not in state_dict]
  unexpected = [k for k in state_dict if k not in model_sd]
  shapes = [f"{k}: model {v.shape} vs state dict {state_dict[k].shape}" for k, v in model_sd.items() if k in state_dict and v.shape != state_dict[k].shape]
  problems = ([f"missing keys: {missing}"] if strict and missing else []) + ([f"unexpected keys: {unexpected}"] if strict and unexpected else []) + \
             ([f"shape mismatches: {'; '.join(shapes)}"] if shapes else [])
  if problems: raise ValueError("load_state_dict: " + "; ".join(problems))
  todo = [(k, v) for k, v in model_sd.items() if k in state_dict]
  # each model tensor gets its own buffer first, so the loaded value is copied in rather than aliased
  for _, v in todo: v.realize()
  for k, v in todo:
    src = state_dict[k]
    if verbose: print(f"load {k} {src.shape} {src.dtype} -> {v.dtype} on {v.device}")
    src = src.to(v.device)
    v.assign(src.cast(v.dtype) if src.dtype != v.dtype else src)
    if consume: del state_dict[k]
  if realize and todo: Tensor.realize(*[v for _, v in todo])

# ---- safetensors ----
SAFE_DTYPES: dict[str, DType] = {"BOOL": dtypes.bool, "I8": dtypes.int8, "U8": dtypes.uint8, "I16": dtypes.int16, "U16": dtypes.uint16,
  "I32": dtypes.int32, "U32": dtypes.uint32, "I64": dtypes.int64, "U64": dtypes.uint64, "F16": dtypes.float16, "BF16": dtypes.bfloat16,
  "F32": dtypes.float32, "F64": dtypes.float64}
_SAFE_NAMES = {v: k for k, v in SAFE_DTYPES.items()}

def _raw_bytes(t: Tensor) -> bytes:
  if t.numel() == 0: return b""
  if t.dtype == dtypes.bfloat16: return t.bitcast(dtypes.uint16).numpy().astype("<u2").tobytes()
  return t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()

def safe_save(tensors: dict[str, Tensor], fn: str | os.PathLike, metadata: dict[str, Any] | None = None) -> None:
  """Write `tensors` to `fn` in the safetensors format (with optional string `metadata`)."""
  header: dict[str, Any] = {}
  blobs, off = [], 0
  for name, t in tensors.items():
    if t.dtype not in _SAFE_NAMES: raise TypeError(f"safe_save: {name} has dtype {t.dtype}, which safetensors cannot store; valid: {list(SAFE_DTYPES)}")
    raw = _raw_bytes(t)
    header[name] = {"dtype": _SAFE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
  if metadata: header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
  hj = json.dumps(header, separators=(",", ":")).encode()
  hj += b" " * (-(8 + len(hj)) % 8)   # the data starts 8-byte aligned, as the reference writer does
  tmp = f"{os.fspath(fn)}.tmp"
  with open(tmp, "wb") as f:      # written aside and renamed: a failed save leaves no half file
    f.write(struct.pack("<Q", len(hj)))
    f.write(hj)
    for b in blobs: f.write(b)
  os.replace(tmp, fn)

def _read_header(f: Any, fn: Any) -> tuple[dict[str, Any], int]:
  head = f.read(8)
  if len(head) != 8: raise ValueError(f"{fn}: not a safetensors file (shorter than 8 bytes)")
  n = struct.unpack("<Q", head)[0]
  size = os.fstat(f.fileno()).st_size
  if n > size - 8: raise ValueError(f"{fn}: not a safetensors file (header length {n} > file size {size})")
  try: header = json.loads(f.read(n))
  except ValueError as e: raise ValueError(f"{fn}: corrupt safetensors header: {e}") from None
  return header, 8 + n

def safe_load_metadata(fn: str | os.PathLike) -> dict[str, Any]:
  """The JSON header of a safetensors file: {name: {"dtype", "shape", "data_offsets"}, "__metadata__": {...}}."""
  with open(fn, "rb") as f: return _read_header(f, fn)[0]

def safe_load(fn: str | os.PathLike, device: str | None = None) -> dict[str, Tensor]:
  """The tensors of a safetensors file, by name, on `device` (the default device when None)."""
  import numpy as np
  from tinygrad.dtype import to_numpy
  with open(fn, "rb") as f:
    header, start = _read_header(f, fn)
    data = f.read()
  out: dict[str, Tensor] = {}
  for name, info in header.items():
    if name == "__metadata__": continue
    if info["dtype"] not in SAFE_DTYPES: raise TypeError(f"{fn}: tensor {name} has dtype {info['dtype']}; supported: {list(SAFE_DTYPES)}")
    dt, shape = SAFE_DTYPES[info["dtype"]], tuple(info["shape"])
    b, e = info["data_offsets"]
    npdt = np.dtype("<u2") if dt == dtypes.bfloat16 else to_numpy(dt).newbyteorder("<")
    if e - b != int(np.prod(shape)) * npdt.itemsize or e > len(data):
      raise ValueError(f"{fn}: tensor {name} has offsets {b}..{e} but needs {int(np.prod(shape)) * npdt.itemsize} bytes (data is {len(data)} bytes)")
    arr = np.frombuffer(data, dtype=npdt, count=int(np.prod(shape)), offset=b).reshape(shape)
    t = Tensor(arr.astype(npdt.newbyteorder("=")).reshape(-1), device=device).reshape(shape)
    out[name] = t.bitcast(dtypes.bfloat16) if dt == dtypes.bfloat16 else t
  return out

__all__ = ["get_state_dict", "get_parameters", "load_state_dict", "safe_save", "safe_load", "safe_load_metadata", "SAFE_DTYPES"]
