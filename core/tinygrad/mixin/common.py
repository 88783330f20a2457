"""What the Tensor module and its mixins share: argument checks, broadcasting, host-side packing, error types."""
from __future__ import annotations
import struct
from typing import Any, overload
from tinygrad.uop.ops import UOp, ssimplify, sint_le, _broadcast_shape  # noqa: F401 (the Tensor modules import it from here)
from tinygrad.dtype import DType, dtypes, float_to_bf16_bits, float_to_fp8, truncate_float, as_float, INVERSE_DTYPES_DICT

class AxisError(IndexError, ValueError):
  """An axis outside a tensor's dimensions (caught by `except IndexError` and `except ValueError`, like numpy's AxisError)."""
class ArgumentError(ValueError, RuntimeError):
  """A Tensor op's arguments do not fit each other (shapes, axes, options): caught by `except ValueError` and by
  `except RuntimeError`, which is what public tinygrad (and torch) raise for these."""
class AssertedArgumentError(ArgumentError, AssertionError):
  """Arguments public tinygrad checks with `assert` (multinomial's; the shapes of cat, stack, split, conv2d, item's one
  element): also caught by `except AssertionError`, as there."""
class DeviceMismatchError(ArgumentError):
  """Operands with data on different devices (data is not moved silently): public tinygrad's RuntimeError, and a ValueError."""
class DTypeKindError(ValueError, TypeError):
  """A dtype of the wrong kind for an op (randint of a float dtype, rand of an int one, arange of bool): a ValueError, and the
  TypeError public tinygrad raises for randint's."""
class UnknownModeError(ValueError, NotImplementedError):
  """A mode name that is not one of an op's modes (`pad(mode="typo")`): a ValueError, and the NotImplementedError torch raises."""

class OpDTypeError(TypeError, RuntimeError):
  """An op given a dtype it does not take (a shift or bitwise op of floats): a TypeError, and the RuntimeError torch raises."""
class IntDivisionByZeroError(ZeroDivisionError, RuntimeError):
  """An integer // or % by a constant 0 (torch raises RuntimeError "ZeroDivisionError"; Python ints raise ZeroDivisionError)."""
class EmptyReductionError(IndexError, ValueError):
  """max/min/argmax/argmin over an empty axis (torch raises IndexError; argmax here always raised ValueError)."""

@overload
def _canon_device(device: str | None) -> str: ...
@overload
def _canon_device(device: tuple[str, ...] | list[str]) -> str | tuple[str, ...]: ...
def _canon_device(device: str | tuple[str, ...] | list[str] | None) -> str | tuple[str, ...]:
  # a tuple (or list) of devices names a multi-device tensor's devices (tinygrad/multi.py): each one canonical. One device
  # in a tuple is that device, as public tinygrad's canonicalize_device (device=(d,) is a plain tensor on d, shard((d,)) a move)
  from tinygrad.device import Device
  if isinstance(device, (tuple, list)):
    devs = tuple(Device.canonicalize(d) for d in device)
    if not devs or len(set(devs)) != len(devs): raise ValueError(f"a multi-device tensor needs distinct devices, got {device!r}")
    return devs[0] if len(devs) == 1 else devs
  return Device.DEFAULT if device is None else Device.canonicalize(device)

def _has_dtype(device: str | tuple[str, ...], dt: DType) -> bool:
  """Whether kernels on `device` (every device of a multi-device tensor) may use `dt`: its renderer's supported_dtypes."""
  from tinygrad.device import Device, DeviceError
  for d in (device if isinstance(device, tuple) else (device,)):
    try: sup = Device[d].renderer.supported_dtypes
    except DeviceError: continue   # a device that does not open: realizing says why
    if callable(sup): sup = sup()
    if sup is not None and dt not in sup: return False
  return True

def _flatten_py(data: Any) -> tuple[tuple[int, ...], list]:
  """(shape, flat values) of a nested list/tuple; a ragged list is an error. A bytes object inside is a row of its byte
  values (public tinygrad's `Tensor([b"abc", b"def"], dtype=dtypes.uint8)`)."""
  if isinstance(data, (bytes, bytearray)): return (len(data),), list(data)
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
  if dtype == dtypes.bfloat16: return struct.pack(f"{len(vals)}H", *(float_to_bf16_bits(as_float(v, dtype)) for v in vals))
  if dtype in dtypes.fp8s: return bytes(float_to_fp8(as_float(v, dtype), dtype) for v in vals)
  return struct.pack(f"{len(vals)}{dtype.fmt}", *(dtypes.as_const(v, dtype) for v in vals))

def _check_shape(op: str, shape: tuple) -> tuple:
  # a size is an int >= 0 or a symbolic int (an expression of bound variables) that is >= 0 for every value
  if any(isinstance(s, UOp) and (s.dtype == dtypes.void or not dtypes.is_int(s.dtype) or not sint_le(0, s)) or
         not isinstance(s, UOp) and (not isinstance(s, int) or isinstance(s, bool) or s < 0) for s in shape):
    # (public tinygrad raises RuntimeError "shape must be int", torch RuntimeError for a negative size: ArgumentError is both)
    raise ArgumentError(f"{op}: invalid shape {shape}; a shape must be int, every size an int >= 0 (or a bound Variable's expression that is)")
  return tuple(ssimplify(s) for s in shape)
def _whole_int(op: str, name: str, x: Any, symbolic: bool = False) -> Any:
  """An int argument (a diagonal, a step count): a whole float is its int, as public tinygrad takes it (tril(1.0)); another
  float raises TypeError as torch does (int() truncated tril(0.5) to tril(0), whose values were tril(-1)'s). symbolic: a
  UOp (a bound Variable) passes too."""
  if isinstance(x, float) and float.is_integer(x): return int(x)
  if not isinstance(x, (int, UOp) if symbolic else int): raise TypeError(f"{op}: {name} must be an int, got {x!r}")
  return x

def _check_positive(op: str, name: str, vals: tuple) -> tuple[int, ...]:
  # a zero stride/kernel/dilation would divide by zero in the window arithmetic; negative ones have no meaning
  if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in vals): raise ValueError(f"{op}: {name} must be ints >= 1, got {vals}")
  return vals

_CHUNK = 1 << 16   # the most elements one accumulator of a split reduce sums (Tensor._split_reduce)
_ACC_RUN = 1 << 12   # a float sum longer than this into at most 256 outputs (statistics) is split too (Tensor._split_reduce)
def _round_to(x: float, dt: DType) -> float:
  # a Python float rounded to the nearest value of float dtype `dt` (what numpy's fill computes its start and delta in)
  if dt == dtypes.bfloat16: return struct.unpack("f", struct.pack("I", float_to_bf16_bits(x) << 16))[0]
  if dt in dtypes.fp8s: return truncate_float(x, dt)
  return struct.unpack(fmt, struct.pack(fmt, x))[0] if (fmt := {dtypes.float32: "f", dtypes.float16: "e"}.get(dt)) else float(x)
def _dtname(dt: DType) -> str: return INVERSE_DTYPES_DICT.get(dt.name, dt.name)   # float16, not half

def _is_scalar(x: Any) -> bool: return isinstance(x, (int, float, bool)) and not isinstance(x, UOp)
def _is_np_scalar(x: Any) -> bool:
  # a numpy scalar or 0-d array (without importing numpy): np.float16(1), np.int32(2), arr[0], arr.sum()
  return type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0 and hasattr(x, "item")
