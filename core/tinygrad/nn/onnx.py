"""Run ONNX models on any device: `OnnxRunner(model)({"input": x})["output"]`. The model is parsed with the `onnx` package
(`pip install tinygrad-core[onnx]`); each node maps onto Tensor methods (the table `onnx_ops`), so the whole graph stays lazy,
schedules and fuses as one program, and can be wrapped in TinyJit. Inputs that set shapes (Reshape's shape, Slice's starts,
Pad's pads ...) are read on the host: from initializers and Constants directly, otherwise by realizing them."""
from __future__ import annotations
import math, os, sys, time, argparse, functools, itertools, statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence
import numpy as np
from tinygrad.tensor import Tensor
from tinygrad.dtype import DType, dtypes, from_numpy, OPMATH_F32
from tinygrad.helpers import DEBUG, prod, flatten

def _onnx() -> Any:
  try: import onnx
  except ImportError as e: raise ImportError("tinygrad.nn.onnx parses models with the onnx package: pip install tinygrad-core[onnx]") from e
  return onnx

# ONNX TensorProto.DataType -> dtype (the ones a device can hold; string, complex, float4, e8m0 and 4-/2-bit ints are missing)
_DTYPES: dict[int, DType] = {1: dtypes.float32, 2: dtypes.uint8, 3: dtypes.int8, 4: dtypes.uint16, 5: dtypes.int16, 6: dtypes.int32, 7: dtypes.int64,
                             9: dtypes.bool, 10: dtypes.float16, 11: dtypes.float64, 12: dtypes.uint32, 13: dtypes.uint64, 16: dtypes.bfloat16,
                             17: dtypes.fp8e4m3, 18: dtypes.fp8e4m3fnuz, 19: dtypes.fp8e5m2, 20: dtypes.fp8e5m2fnuz}
# ml_dtypes' float8 numpy dtypes (what onnx's numpy_helper gives) -> dtype; their bytes are bitcast, so NaN and -0 bits carry over exactly
_NP_FP8: dict[str, DType] = {"float8_e4m3fn": dtypes.fp8e4m3, "float8_e4m3fnuz": dtypes.fp8e4m3fnuz, "float8_e5m2": dtypes.fp8e5m2,
                             "float8_e5m2fnuz": dtypes.fp8e5m2fnuz}
# the largest finite value of each fp8 dtype: Cast's saturate=1 clips to it (dtypes.max of fp8e5m2 is inf)
_FP8_MAX: dict[DType, float] = {dtypes.fp8e4m3: 448.0, dtypes.fp8e4m3fnuz: 240.0, dtypes.fp8e5m2: 57344.0, dtypes.fp8e5m2fnuz: 57344.0}
_DTYPE_NAMES = {0: "UNDEFINED", 8: "STRING", 14: "COMPLEX64", 15: "COMPLEX128", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
                20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2"}

def dtype_of(onnx_type: int) -> DType:
  """The dtype of an ONNX element type, or a clear error for the ones tinygrad has no dtype for."""
  if onnx_type in _DTYPES: return _DTYPES[onnx_type]
  raise NotImplementedError(f"ONNX element type {_DTYPE_NAMES.get(onnx_type, onnx_type)} has no tinygrad dtype; supported: "
                            "FLOAT, DOUBLE, FLOAT16, BFLOAT16, FLOAT8E4M3FN(UZ), FLOAT8E5M2(FNUZ), BOOL, INT8/16/32/64, UINT8/16/32/64")

def _to_numpy(t: Any) -> np.ndarray:
  onnx = _onnx()
  # onnx.load(path) reads external data (refusing a location outside the model's folder) and marks it loaded; one still
  # external came without its file's folder (bytes, a Tensor, a proto loaded without it), and numpy_helper then read the
  # location relative to the process's working directory: a model could pull in any file there
  if t.data_location == onnx.TensorProto.EXTERNAL:
    loc = next((e.value for e in t.external_data if e.key == "location"), None)
    raise ValueError(f"ONNX tensor {t.name!r} keeps its data in the external file {loc!r}, which is found next to the model's file: "
                     "pass the model's path (or a proto from onnx.load(path)), not its bytes")
  # dims and data are the file's: a negative dim was taken by numpy's reshape as "infer it" (dims [-2] over 2 values loaded),
  # and data that disagrees with the dims, or an unknown element type, was numpy's error (or a KeyError) naming no tensor
  if any(d < 0 for d in t.dims): raise ValueError(f"ONNX tensor {t.name!r} is corrupt: dims {list(t.dims)} has a negative dim")
  try: arr = onnx.numpy_helper.to_array(t)
  except (ValueError, KeyError, TypeError) as e:
    raise ValueError(f"ONNX tensor {t.name!r} (dims {list(t.dims)}, element type {t.data_type}) is corrupt: {type(e).__name__}: {e}") from None
  if arr.dtype.name == "bfloat16": arr = arr.astype(np.float32)   # ml_dtypes' bfloat16: widened here, cast back on the device
  return arr

def _tensor(arr: np.ndarray, device: str | None, dtype: DType | None = None) -> Tensor:
  if arr.dtype == object or arr.dtype.kind in "USc": raise NotImplementedError(f"ONNX tensors of {arr.dtype} (strings, complex) are not supported")
  if arr.dtype.name == "bfloat16": arr, dtype = arr.astype(np.float32), dtypes.bfloat16 if dtype is None else dtype
  if arr.dtype.name in _NP_FP8:
    t = Tensor(np.ascontiguousarray(arr).view(np.uint8).reshape(arr.shape), device=device).bitcast(_NP_FP8[arr.dtype.name])
    return t.cast(dtype) if dtype is not None and t.dtype != dtype else t
  t = Tensor(arr if arr.flags.c_contiguous else arr.copy(), device=device)   # (np.ascontiguousarray makes a 0-d array 1-d)
  return t.cast(dtype) if dtype is not None and t.dtype != dtype else t

@dataclass(frozen=True)
class OnnxValue:
  """A graph input's declared type, as public tinygrad's OnnxRunner.graph_inputs gives it: the shape (an int per fixed dim,
  the dim's name for a symbolic one, None for an unknown one), the element dtype, and whether it is optional or a sequence."""
  shape: tuple[str | int | None, ...]
  dtype: DType
  is_optional: bool
  is_sequence: bool

def _value_of(t: Any) -> OnnxValue:
  # an onnx TypeProto: optional(sequence(tensor)) at most
  optional = t.HasField("optional_type")
  if optional: t = t.optional_type.elem_type
  sequence = t.HasField("sequence_type")
  if sequence: t = t.sequence_type.elem_type
  dims = t.tensor_type.shape.dim
  shape = tuple(d.dim_param if d.HasField("dim_param") else d.dim_value if d.HasField("dim_value") else None for d in dims)
  return OnnxValue(shape, dtype_of(t.tensor_type.elem_type), optional, sequence)

@dataclass
class _Ctx:
  """What an op needs besides its inputs and attributes: the opset of its domain, the device, and host values of inputs."""
  opset: int
  device: str | None
  host: dict[int, np.ndarray] = field(default_factory=dict)   # id(Tensor) -> its value, for tensors known on the host
  keep: list[Tensor] = field(default_factory=list)             # the tensors of `host` (so their ids stay theirs)
  def val(self, t: Tensor) -> np.ndarray:
    if id(t) not in self.host: self.set(t, t.numpy())
    return self.host[id(t)]
  def ints(self, t: Tensor) -> list[int]: return [int(v) for v in self.val(t).reshape(-1)]
  def opt_ints(self, t: Tensor | None) -> list[int] | None: return None if t is None else self.ints(t)
  def set(self, t: Tensor, v: np.ndarray) -> Tensor:
    self.host[id(t)] = v
    self.keep.append(t)
    return t
  def const(self, v: np.ndarray) -> Tensor: return self.set(_tensor(v, self.device), v)

# ---- helpers shared by the ops ----
def _axis(a: int, n: int) -> int: return a + n if a < 0 else a
def _pads_torch(pads: Sequence[int]) -> list[int]:
  # ONNX [b_1..b_n, e_1..e_n] -> the flat torch order (last dim first, (before, after) each)
  n = len(pads) // 2
  return flatten((pads[i], pads[i + n]) for i in reversed(range(n)))
def _auto_pads(auto_pad: str, ins: Sequence[int], k: Sequence[int], s: Sequence[int], d: Sequence[int], pads: Sequence[int] | None) -> list[int]:
  n = len(k)
  if auto_pad in ("NOTSET", ""): return list(pads) if pads is not None else [0] * (2 * n)
  if auto_pad == "VALID": return [0] * (2 * n)
  if auto_pad not in ("SAME_UPPER", "SAME_LOWER"): raise ValueError(f"auto_pad {auto_pad!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
  tot = [max(0, (math.ceil(i / st) - 1) * st + (kk - 1) * dd + 1 - i) for i, kk, st, dd in zip(ins, k, s, d)]
  lo = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in tot]
  return lo + [t - l for t, l in zip(tot, lo)]
def _bcast(*ts: Tensor) -> list[Tensor]:
  shape = tuple(np.broadcast_shapes(*[t.shape for t in ts]))
  return [t.reshape((1,) * (len(shape) - t.ndim) + t.shape).expand(shape) if t.shape != shape else t for t in ts]
def _reshape_to(t: Tensor, axis: int, ndim: int) -> Tensor:
  # a per-axis vector (scale, zero point, mean ...) shaped to broadcast along `axis` of an ndim tensor
  return t.reshape([t.numel() if i == axis else 1 for i in range(ndim)]) if t.ndim == 1 and ndim > 1 else t

# ---- elementwise ----
def _unary(f: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]: return lambda ctx, x, consumed_inputs=None: f(x)
def _binary(f: Callable[..., Tensor]) -> Callable[..., Tensor]:
  # before opset 7 a binary op broadcasts only with broadcast=1, y aligned to x's dims from `axis` (default: the last ones)
  def op(ctx: _Ctx, x: Tensor, y: Tensor, broadcast: int = 0, axis: int | None = None, consumed_inputs: Any = None, **kw: Any) -> Tensor:
    if broadcast and axis is not None and y.ndim < x.ndim:
      ax = _axis(axis, x.ndim)
      y = y.reshape(*[1] * ax, *y.shape, *[1] * (x.ndim - ax - y.ndim))
    return f(ctx, x, y, **kw)
  return op
def _pow(ctx: _Ctx, x: Tensor, y: Tensor) -> Tensor:
  if dtypes.is_float(x.dtype): return x.pow(y.cast(x.dtype))
  return x.cast(dtypes.float64).pow(y.cast(dtypes.float64)).round().cast(x.dtype)
def _div(ctx: _Ctx, x: Tensor, y: Tensor) -> Tensor: return x.idiv(y) if dtypes.is_int(x.dtype) else x / y
def _mod(ctx: _Ctx, x: Tensor, y: Tensor, fmod: int = 0) -> Tensor:
  if fmod: return x.fmod(y) if dtypes.is_float(x.dtype) else x - x.idiv(y) * y
  return x.mod(y)
def _variadic(f: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
  return lambda ctx, *xs: functools.reduce(f, _bcast(*xs))
def _prelu_slope(y: Tensor, x: Tensor) -> Tensor:
  # a per-channel slope (C,) of an (N, C, ...) input that does not broadcast numpy-style (old opsets) aligns to dim 1
  if y.ndim == 1 and x.ndim >= 2 and y.shape[0] == x.shape[1] != x.shape[-1]: return y.reshape(1, y.shape[0], *[1] * (x.ndim - 2))
  return y
def _mean(ctx: _Ctx, *xs: Tensor) -> Tensor: return functools.reduce(Tensor.add, _bcast(*xs)) / len(xs)
def _clip(ctx: _Ctx, x: Tensor, mn: Tensor | None = None, mx: Tensor | None = None, min: float | None = None, max: float | None = None) -> Tensor:
  lo, hi = (min, max) if ctx.opset < 11 else (mn, mx)
  if lo is not None: x = x.maximum(lo.cast(x.dtype) if isinstance(lo, Tensor) else lo)
  if hi is not None: x = x.minimum(hi.cast(x.dtype) if isinstance(hi, Tensor) else hi)
  return x
def _isinf(ctx: _Ctx, x: Tensor, detect_negative: int = 1, detect_positive: int = 1) -> Tensor:
  return ((x == math.inf) & bool(detect_positive)) | ((x == -math.inf) & bool(detect_negative))
def _bitshift(ctx: _Ctx, x: Tensor, y: Tensor, direction: str = "") -> Tensor:
  if direction not in ("LEFT", "RIGHT"): raise ValueError(f"BitShift: direction {direction!r} is not LEFT or RIGHT")
  return x.lshift(y) if direction == "LEFT" else x.rshift(y)
def _shrink(ctx: _Ctx, x: Tensor, bias: float = 0.0, lambd: float = 0.5) -> Tensor:
  return (x < -lambd).where(x + bias, (x > lambd).where(x - bias, 0)).cast(x.dtype)
def _cast_to(x: Tensor, dt: DType, saturate: int) -> Tensor:
  if dt not in _FP8_MAX or x.dtype in (dt, dtypes.bool): return x.cast(dt)
  # onnx's reference: saturate=1 clips to the finite range first (inf too, on every fp8 type; NaN stays NaN); saturate=0 is a plain
  # cast, where e4m3fn (no inf) gives NaN past its rounding boundary 464, which the core's cast (torch's rule) saturates to 448
  m = _FP8_MAX[dt]
  if saturate: return (x.isnan().where(x, x.clip(-m, m)) if dtypes.is_float(x.dtype) else x.clip(-m, m)).cast(dt)
  return (x.abs() > 464).where(math.nan, x.cast(dtypes.float32)).cast(dt) if dt == dtypes.fp8e4m3 else x.cast(dt)
def _cast(ctx: _Ctx, x: Tensor, to: int = 1, saturate: int = 1, round_mode: str = "up") -> Tensor: return _cast_to(x, dtype_of(to), saturate)

ELEMENTWISE: dict[str, Callable[..., Any]] = {
  "Abs": _unary(Tensor.abs), "Neg": _unary(Tensor.neg), "Reciprocal": _unary(Tensor.reciprocal), "Sqrt": _unary(Tensor.sqrt),
  "Exp": _unary(Tensor.exp), "Log": _unary(Tensor.log), "Sin": _unary(Tensor.sin), "Cos": _unary(Tensor.cos), "Tan": _unary(Tensor.tan),
  "Asin": _unary(Tensor.asin), "Acos": _unary(Tensor.acos), "Atan": _unary(Tensor.atan), "Sinh": _unary(Tensor.sinh), "Cosh": _unary(Tensor.cosh),
  "Tanh": _unary(Tensor.tanh), "Asinh": _unary(Tensor.asinh), "Acosh": _unary(Tensor.acosh), "Atanh": _unary(Tensor.atanh),
  "Erf": _unary(Tensor.erf), "Floor": _unary(Tensor.floor), "Ceil": _unary(Tensor.ceil), "Round": _unary(Tensor.round), "Sign": _unary(Tensor.sign),
  "Relu": _unary(Tensor.relu), "Sigmoid": _unary(Tensor.sigmoid), "Softplus": _unary(Tensor.softplus), "Softsign": _unary(Tensor.softsign),
  "HardSwish": _unary(Tensor.hardswish), "Mish": _unary(Tensor.mish), "IsNaN": _unary(Tensor.isnan), "Not": _unary(Tensor.logical_not),
  "BitwiseNot": _unary(Tensor.bitwise_not), "Identity": _unary(lambda x: x),
  "Elu": lambda ctx, x, alpha=1.0: x.elu(alpha), "Celu": lambda ctx, x, alpha=1.0: x.celu(alpha),
  "Selu": lambda ctx, x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875: (gamma * (x > 0).where(x, alpha * (x.exp() - 1))).cast(x.dtype),
  "LeakyRelu": lambda ctx, x, alpha=0.01: x.leaky_relu(alpha), "ThresholdedRelu": lambda ctx, x, alpha=1.0: (x > alpha).where(x, 0).cast(x.dtype),
  "HardSigmoid": lambda ctx, x, alpha=0.2, beta=0.5: (alpha * x + beta).clip(0, 1).cast(x.dtype),
  "PRelu": _binary(lambda ctx, x, slope: (x < 0).where(x * _prelu_slope(slope, x), x)), "Gelu": lambda ctx, x, approximate="none": x.gelu(approximate).cast(x.dtype),
  "Swish": lambda ctx, x, alpha=1.0: x * (x * alpha).sigmoid(), "SwiGLU": lambda ctx, a, b, alpha=1.0: a * (a * alpha).sigmoid() * b, "Shrink": _shrink, "Clip": _clip, "IsInf": _isinf,
  "Add": _binary(lambda ctx, x, y: x + y), "Sub": _binary(lambda ctx, x, y: x - y), "Mul": _binary(lambda ctx, x, y: x * y), "Div": _binary(_div), "Pow": _binary(_pow), "Mod": _mod,
  "Sum": _variadic(Tensor.add), "Max": _variadic(Tensor.maximum), "Min": _variadic(Tensor.minimum), "Mean": _mean,
  "BitShift": _bitshift, "BitwiseAnd": lambda ctx, x, y: x & y, "BitwiseOr": lambda ctx, x, y: x | y, "BitwiseXor": lambda ctx, x, y: x ^ y,
  "And": lambda ctx, x, y: x & y, "Or": lambda ctx, x, y: x | y, "Xor": lambda ctx, x, y: x ^ y,
  "Equal": lambda ctx, x, y: x == y, "Less": lambda ctx, x, y: x < y, "LessOrEqual": lambda ctx, x, y: x <= y, "Greater": lambda ctx, x, y: x > y,
  "GreaterOrEqual": lambda ctx, x, y: x >= y, "Where": lambda ctx, c, x, y: c.where(x, y), "Cast": _cast,
  "BitCast": lambda ctx, x, to=1: x.cast(dtypes.uint8).bitcast(dtype_of(to)) if x.dtype == dtypes.bool else x.bitcast(dtype_of(to)),
  "CastLike": lambda ctx, x, like, saturate=1, round_mode="up": _cast_to(x, like.dtype, saturate),
}

# ---- reductions ----
def _reduce(f: Callable[[Tensor, tuple[int, ...], bool], Tensor], axes_input_from: int) -> Callable[..., Tensor]:
  # axes are an attribute before opset `axes_input_from` and an optional input from it on
  def op(ctx: _Ctx, x: Tensor, axes_t: Tensor | None = None, axes: Sequence[int] | None = None, keepdims: int = 1, noop_with_empty_axes: int = 0) -> Tensor:
    ax = ctx.opt_ints(axes_t) if ctx.opset >= axes_input_from else (list(axes) if axes is not None else None)
    # noop_with_empty_axes reduces over no axes, which still applies the op's elementwise part (ReduceL1 gives |x|, ReduceSumSquare x*x)
    if not ax: ax = [] if noop_with_empty_axes else list(range(x.ndim))
    # the output keeps the input's type (an int ReduceMean truncates, as onnxruntime's)
    return f(x, tuple(_axis(a, x.ndim) for a in ax), bool(keepdims)).cast(x.dtype)
  return op
def _rmax(x: Tensor, ax: tuple[int, ...], k: bool, lo: bool = False) -> Tensor:
  if any(x.shape[a] == 0 for a in ax):   # the identity of max (min) over nothing
    shape = tuple((1 if k else None) if i in ax else s for i, s in enumerate(x.shape))
    return Tensor.full(tuple(s for s in shape if s is not None), dtypes.max(x.dtype) if lo else dtypes.min(x.dtype), dtype=x.dtype, device=x.device)
  return x.min(ax, keepdim=k) if lo else x.max(ax, keepdim=k)
def _rmean(x: Tensor, ax: tuple[int, ...], k: bool) -> Tensor:
  # an int mean is its exact sum divided with truncation (onnxruntime's); through float32 an int64 mean lost its low digits
  n = prod(x.shape[a] for a in ax)
  return x.sum(ax, keepdim=k, dtype=x.dtype).idiv(n) if dtypes.is_int(x.dtype) and n > 0 else x.mean(ax, keepdim=k)
REDUCE: dict[str, Callable[..., Any]] = {
  "ReduceSum": _reduce(lambda x, a, k: x.sum(a, keepdim=k, dtype=x.dtype), 13), "ReduceMean": _reduce(_rmean, 18),
  "ReduceMax": _reduce(_rmax, 18), "ReduceMin": _reduce(lambda x, a, k: _rmax(x, a, k, True), 18),
  "ReduceProd": _reduce(lambda x, a, k: x.prod(a, keepdim=k, dtype=x.dtype), 18),
  "ReduceL1": _reduce(lambda x, a, k: x.abs().sum(a, keepdim=k, dtype=x.dtype), 18),
  "ReduceL2": _reduce(lambda x, a, k: (x * x).sum(a, keepdim=k).sqrt().cast(x.dtype), 18),
  "ReduceSumSquare": _reduce(lambda x, a, k: (x * x).sum(a, keepdim=k, dtype=x.dtype), 18),
  "ReduceLogSum": _reduce(lambda x, a, k: x.sum(a, keepdim=k).log(), 18),
  "ReduceLogSumExp": _reduce(lambda x, a, k: x.logsumexp(a, keepdim=k) if x.numel() else x.sum(a, keepdim=k).log(), 18),
}
def _argm(lo: bool) -> Callable[..., Tensor]:
  def op(ctx: _Ctx, x: Tensor, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> Tensor:
    ax = _axis(axis, x.ndim)
    y = x.flip(ax) if select_last_index else x
    r = (y.argmin(ax, keepdim=bool(keepdims)) if lo else y.argmax(ax, keepdim=bool(keepdims))).cast(dtypes.int64)
    return x.shape[ax] - 1 - r if select_last_index else r
  return op
def _softmax(kind: str) -> Callable[..., Tensor]:
  def op(ctx: _Ctx, x: Tensor, axis: int | None = None) -> Tensor:
    if ctx.opset < 13:   # the input is seen as 2-D: dims before `axis` x dims from it
      ax = _axis(1 if axis is None else axis, x.ndim)
      y = x.reshape(prod(x.shape[:ax]), prod(x.shape[ax:]))
      return op13(y, 1).reshape(x.shape)
    return op13(x, _axis(-1 if axis is None else axis, x.ndim))
  def op13(x: Tensor, ax: int) -> Tensor:
    if kind == "softmax": return x.softmax(ax)
    if kind == "log_softmax": return x.log_softmax(ax)
    return x.argmax(ax, keepdim=True).one_hot(x.shape[ax]).squeeze(ax).transpose(ax, -1).cast(x.dtype) if x.ndim > 1 and ax != x.ndim - 1 else \
      Tensor.arange(x.shape[ax], device=x.device).eq(x.argmax(ax, keepdim=True)).cast(x.dtype)
  return op
def _hardmax(ctx: _Ctx, x: Tensor, axis: int | None = None) -> Tensor:
  def hm(y: Tensor, ax: int) -> Tensor:
    shape = [y.shape[ax] if i == ax else 1 for i in range(y.ndim)]
    return (Tensor.arange(y.shape[ax], device=y.device).reshape(shape) == y.argmax(ax, keepdim=True)).cast(y.dtype)
  if ctx.opset < 13:
    ax = _axis(1 if axis is None else axis, x.ndim)
    return hm(x.reshape(prod(x.shape[:ax]), prod(x.shape[ax:])), 1).reshape(x.shape)
  return hm(x, _axis(-1 if axis is None else axis, x.ndim))
def _cumsum(ctx: _Ctx, x: Tensor, axis: Tensor, exclusive: int = 0, reverse: int = 0) -> Tensor:
  ax = _axis(ctx.ints(axis)[0], x.ndim)
  y = x.flip(ax) if reverse else x
  # exclusive: shift by one, a 0 first; subtracting x from the inclusive sum cancelled (exclusive of [1, 1e8] in float32 gave [0, 0], not [0, 1])
  if exclusive and x.shape[ax]: y = y.pad([(1, -1) if i == ax else None for i in range(x.ndim)])
  y = y.cumsum(ax).cast(x.dtype)
  return y.flip(ax) if reverse else y
def _cumprod(ctx: _Ctx, x: Tensor, axis: Tensor, exclusive: int = 0, reverse: int = 0) -> Tensor:
  ax = _axis(ctx.ints(axis)[0], x.ndim)
  y = x.flip(ax) if reverse else x
  if exclusive and x.shape[ax]: y = y.pad([(1, -1) if i == ax else None for i in range(x.ndim)], value=1)   # shift by one, a 1 first
  y = y.cumprod(ax).cast(x.dtype)
  return y.flip(ax) if reverse else y
def _topk(ctx: _Ctx, x: Tensor, k_t: Tensor | None = None, axis: int = -1, largest: int = 1, sorted: int = 1, k: int | None = None) -> tuple[Tensor, Tensor]:
  # k is an attribute before opset 10, an input from it
  kk = ctx.ints(k_t)[0] if k_t is not None else k
  if kk is None: raise ValueError("TopK: k is missing (an input from opset 10, the attribute k before)")
  v, i = x.topk(kk, _axis(axis, x.ndim), bool(largest), True)
  return v, i.cast(dtypes.int64)
REDUCE.update({"ArgMax": _argm(False), "ArgMin": _argm(True), "Softmax": _softmax("softmax"), "LogSoftmax": _softmax("log_softmax"),
               "Hardmax": _hardmax, "CumSum": _cumsum, "CumProd": _cumprod, "TopK": _topk})

# ---- shapes and movement ----
def _reshape(ctx: _Ctx, x: Tensor, shape_t: Tensor | None = None, allowzero: int = 0, shape: Sequence[int] | None = None, consumed_inputs: Any = None) -> Tensor:
  # the shape is an attribute before opset 5, an input from it
  if shape_t is None and shape is None: raise ValueError("Reshape: shape is missing (an input from opset 5, the attribute shape before)")
  s = ctx.ints(shape_t) if shape_t is not None else list(shape or [])
  return x.reshape([x.shape[i] if v == 0 and not allowzero else v for i, v in enumerate(s)])
def _squeeze(ctx: _Ctx, x: Tensor, axes_t: Tensor | None = None, axes: Sequence[int] | None = None) -> Tensor:
  ax = ctx.opt_ints(axes_t) if ctx.opset >= 13 else axes
  if ax is None: return x.reshape([s for s in x.shape if s != 1])
  drop = {_axis(a, x.ndim) for a in ax}
  return x.reshape([s for i, s in enumerate(x.shape) if i not in drop])
def _unsqueeze(ctx: _Ctx, x: Tensor, axes_t: Tensor | None = None, axes: Sequence[int] | None = None) -> Tensor:
  ax = (ctx.opt_ints(axes_t) or []) if ctx.opset >= 13 else list(axes or [])
  n = x.ndim + len(ax)
  new, it = {_axis(a, n) for a in ax}, iter(x.shape)
  return x.reshape([1 if i in new else next(it) for i in range(n)])
def _flatten(ctx: _Ctx, x: Tensor, axis: int = 1) -> Tensor:
  ax = _axis(axis, x.ndim)
  return x.reshape(prod(x.shape[:ax]), prod(x.shape[ax:]))
def _split(ctx: _Ctx, x: Tensor, split_t: Tensor | None = None, axis: int = 0, split: Sequence[int] | None = None, num_outputs: int | None = None,
           _nout: int = 1) -> tuple[Tensor, ...]:
  ax = _axis(axis, x.ndim)
  sizes = ctx.opt_ints(split_t) if ctx.opset >= 13 else (list(split) if split is not None else None)
  if not sizes:
    n, d = num_outputs or _nout, x.shape[ax]
    if num_outputs:   # chunks of ceil(d/n), the last ones smaller or empty (4 in 3: [2, 2, 0], onnxruntime's and onnx's reference)
      c = -(-d // n)
      sizes = [min(c, max(0, d - i * c)) for i in range(n)]
    else: sizes = [d // n] * n   # (before opset 18: equal parts)
  return x.split(sizes, ax)
def _slice(ctx: _Ctx, x: Tensor, starts: Any = None, ends: Any = None, axes_t: Tensor | None = None, steps: Tensor | None = None,
           **attrs: Any) -> Tensor:
  # before opset 10 starts, ends and axes are attributes (lists), from it on inputs
  st: list[int]
  if ctx.opset < 10: st, en, ax, sp = list(starts or []), list(ends or []), attrs.get("axes"), None
  else: st, en, ax, sp = ctx.ints(starts), ctx.ints(ends), ctx.opt_ints(axes_t), ctx.opt_ints(steps)
  ax = list(range(len(st))) if ax is None else [_axis(a, x.ndim) for a in ax]
  sp = sp or [1] * len(st)
  sl = [slice(None)] * x.ndim
  for a, s, e, p in zip(ax, st, en, sp):
    n = x.shape[a]
    s, e = s + n if s < 0 else s, e + n if e < 0 else e
    if p > 0: sl[a] = slice(min(max(s, 0), n), min(max(e, 0), n), p)
    else:
      s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
      sl[a] = slice(s, None if e < 0 else e, p)
  return x[tuple(sl)]
def _pad(ctx: _Ctx, x: Tensor, pads_t: Tensor | None = None, value_t: Tensor | None = None, axes_t: Tensor | None = None, mode: str = "constant",
         pads: Sequence[int] | None = None, paddings: Sequence[int] | None = None, value: float = 0.0) -> Tensor:
  if ctx.opset < 11: p, v, ax = list(pads if pads is not None else paddings or []), value, None
  else:
    p, ax = ctx.opt_ints(pads_t) or [], ctx.opt_ints(axes_t)
    v = ctx.val(value_t).reshape(-1)[0].item() if value_t is not None else 0
  ax = list(range(x.ndim)) if ax is None else [_axis(a, x.ndim) for a in ax]
  full = [(0, 0)] * x.ndim
  for j, a in enumerate(ax): full[a] = (p[j], p[j + len(ax)])
  if mode == "constant": return x.pad(full, value=v)
  if mode == "wrap": mode = "circular"
  elif mode == "edge": mode = "replicate"
  elif mode != "reflect": raise ValueError(f"Pad: mode {mode!r} is not one of constant, reflect, edge, wrap")
  # negative amounts cut first (the modes only extend)
  cut = [(min(b, 0), min(a, 0)) for b, a in full]
  if any(c != (0, 0) for c in cut): x = x.pad(cut)
  ext = [(max(b, 0), max(a, 0)) for b, a in full]
  if mode == "circular" and any(b > n or a > n for (b, a), n in zip(ext, x.shape) if n):
    # wrap wider than the axis (circular padding stops at its size): tile whole periods, then cut the window
    reps = [-(-b // n) + 1 + -(-a // n) if n else 1 for (b, a), n in zip(ext, x.shape)]
    return x.repeat(reps).shrink(tuple((-(-b // n) * n - b, -(-b // n) * n + n + a) if n else (0, 0) for (b, a), n in zip(ext, x.shape)))
  return x.pad(ext, mode=mode)
def _expand(ctx: _Ctx, x: Tensor, shape: Tensor) -> Tensor:
  s = tuple(np.broadcast_shapes(x.shape, tuple(ctx.ints(shape) or [])))
  return x.reshape((1,) * (len(s) - x.ndim) + x.shape).expand(s)
def _concat(ctx: _Ctx, *xs: Tensor, axis: int = 0) -> Tensor:
  ax = _axis(axis, xs[0].ndim)
  parts = [t for t in xs if t.shape[ax] != 0] or [xs[0]]
  return parts[0].cat(*parts[1:], dim=ax) if len(parts) > 1 else parts[0]
def _shape(ctx: _Ctx, x: Tensor, start: int = 0, end: int | None = None) -> Tensor:
  return ctx.const(np.array(x.shape[slice(start, end)], dtype=np.int64))
def _constant(ctx: _Ctx, value: Any = None, value_float: float | None = None, value_floats: Sequence[float] | None = None, value_int: int | None = None,
              value_ints: Sequence[int] | None = None, sparse_value: Any = None, value_string: Any = None, value_strings: Any = None) -> Tensor:
  if value is not None: return ctx.const(value)
  if value_float is not None: return ctx.const(np.array(value_float, dtype=np.float32))
  if value_floats is not None: return ctx.const(np.array(value_floats, dtype=np.float32))
  if value_int is not None: return ctx.const(np.array(value_int, dtype=np.int64))
  if value_ints is not None: return ctx.const(np.array(value_ints, dtype=np.int64))
  raise NotImplementedError("Constant: sparse and string values are not supported")
def _constant_of_shape(ctx: _Ctx, shape: Tensor, value: np.ndarray | None = None) -> Tensor:
  v = value if value is not None else np.zeros(1, np.float32)
  return Tensor.full(tuple(ctx.ints(shape) or []), v.reshape(-1)[0].item(), dtype=from_numpy(v.dtype), device=ctx.device)
def _range(ctx: _Ctx, start: Tensor, limit: Tensor, delta: Tensor) -> Tensor:
  s, l, d = (ctx.val(t).reshape(-1)[0].item() for t in (start, limit, delta))
  n = max(math.ceil((l - s) / d), 0)
  return (Tensor.arange(n, device=ctx.device, dtype=start.dtype if dtypes.is_int(start.dtype) else dtypes.float32) * d + s).cast(start.dtype) if n else \
    Tensor.zeros(0, dtype=start.dtype, device=ctx.device)
def _gather(ctx: _Ctx, x: Tensor, idx: Tensor, axis: int = 0) -> Tensor:
  ax = _axis(axis, x.ndim)
  i = (idx < 0).where(idx + x.shape[ax], idx) if not dtypes.is_unsigned(idx.dtype) else idx
  if idx.ndim == 0: return x._take_along(ax, i.reshape(1)).squeeze(ax) if x.ndim else x
  flat = x._take_along(ax, i.reshape(-1))
  return flat.reshape(*x.shape[:ax], *idx.shape, *x.shape[ax + 1:])
def _gather_elements(ctx: _Ctx, x: Tensor, idx: Tensor, axis: int = 0) -> Tensor:
  ax = _axis(axis, x.ndim)
  return x.gather(ax, (idx < 0).where(idx + x.shape[ax], idx))
def _lin_index(idx: Tensor, dims: Sequence[int]) -> Tensor:
  # indices (..., k) into dims[:k] -> flat row-major indices (...); negatives count from the end
  k = idx.shape[-1]
  dt = Tensor(np.array(dims[:k], dtype=np.int64), device=idx.device)
  idx = idx.cast(dtypes.int64)
  idx = (idx < 0).where(idx + dt, idx)
  strides = [prod(dims[j + 1:k]) for j in range(k)]
  return (idx * Tensor(np.array(strides, dtype=np.int64), device=idx.device)).sum(-1)
def _gather_nd(ctx: _Ctx, x: Tensor, idx: Tensor, batch_dims: int = 0) -> Tensor:
  b, k = batch_dims, idx.shape[-1]
  B, inner = x.shape[:b], idx.shape[b:-1]
  nb = prod(B)
  xr = x.reshape(nb, prod(x.shape[b:b + k]), *x.shape[b + k:])
  lin = _lin_index(idx.reshape(nb, prod(inner), k), x.shape[b:b + k])
  out = xr[Tensor.arange(nb, device=x.device).reshape(nb, 1).expand(nb, prod(inner)), lin]
  return out.reshape(*B, *inner, *x.shape[b + k:])
_REDUCTIONS = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
def _scatter_elements(ctx: _Ctx, x: Tensor, idx: Tensor, upd: Tensor, axis: int = 0, reduction: str = "none") -> Tensor:
  ax = _axis(axis, x.ndim)
  i = (idx < 0).where(idx + x.shape[ax], idx).cast(dtypes.int64)
  if reduction == "none": return x.scatter(ax, i, upd)
  if reduction not in _REDUCTIONS: raise ValueError(f"ScatterElements: reduction {reduction!r} is not one of none, add, mul, max, min")
  return x.scatter_reduce(ax, i, upd, _REDUCTIONS[reduction])
def _scatter_nd(ctx: _Ctx, x: Tensor, idx: Tensor, upd: Tensor, reduction: str = "none") -> Tensor:
  k = idx.shape[-1]
  n, rest = prod(idx.shape[:-1]), x.shape[k:]
  flat = x.reshape(prod(x.shape[:k]), *rest)
  lin = _lin_index(idx.reshape(n, k), x.shape).reshape(n, *[1] * len(rest)).expand(n, *rest)
  u = upd.reshape(n, *rest)
  if reduction == "none": out = flat.scatter(0, lin, u)
  elif reduction in _REDUCTIONS: out = flat.scatter_reduce(0, lin, u, _REDUCTIONS[reduction])
  else: raise ValueError(f"ScatterND: reduction {reduction!r} is not one of none, add, mul, max, min")
  return out.reshape(x.shape)
def _tile(ctx: _Ctx, x: Tensor, repeats: Tensor) -> Tensor: return x.repeat(ctx.ints(repeats))
def _transpose(ctx: _Ctx, x: Tensor, perm: Sequence[int] | None = None) -> Tensor:
  return x.permute(list(perm) if perm is not None else list(reversed(range(x.ndim))))
def _depth_to_space(ctx: _Ctx, x: Tensor, blocksize: int = 1, mode: str = "DCR") -> Tensor:
  b, c, h, w = x.shape
  bs = blocksize
  if mode == "DCR": y = x.reshape(b, bs, bs, c // bs**2, h, w).permute(0, 3, 4, 1, 5, 2)
  else: y = x.reshape(b, c // bs**2, bs, bs, h, w).permute(0, 1, 4, 2, 5, 3)
  return y.reshape(b, c // bs**2, h * bs, w * bs)
def _space_to_depth(ctx: _Ctx, x: Tensor, blocksize: int = 1, mode: str = "DCR") -> Tensor:
  b, c, h, w = x.shape
  bs = blocksize
  y = x.reshape(b, c, h // bs, bs, w // bs, bs)
  y = y.permute(0, 3, 5, 1, 2, 4) if mode == "DCR" else y.permute(0, 1, 3, 5, 2, 4)
  return y.reshape(b, c * bs * bs, h // bs, w // bs)
def _one_hot(ctx: _Ctx, idx: Tensor, depth: Tensor, values: Tensor, axis: int = -1) -> Tensor:
  d = int(ctx.val(depth).reshape(-1)[0])
  i = idx.cast(dtypes.int64)
  i = (i < 0).where(i + d, i)
  ax = _axis(axis, idx.ndim + 1)
  shape = [d if j == ax else 1 for j in range(idx.ndim + 1)]
  hit = Tensor.arange(d, device=idx.device, dtype=dtypes.int64).reshape(shape) == i.unsqueeze(ax)
  return hit.where(values[1], values[0])
def _trilu(ctx: _Ctx, x: Tensor, k: Tensor | None = None, upper: int = 1) -> Tensor:
  kk = ctx.ints(k)[0] if k is not None else 0
  return x.triu(kk) if upper else x.tril(kk)
def _eye_like(ctx: _Ctx, x: Tensor, dtype: int | None = None, k: int = 0) -> Tensor:
  n, m = x.shape
  r = Tensor.arange(n, device=x.device).reshape(n, 1) + k == Tensor.arange(m, device=x.device).reshape(1, m)
  return r.cast(dtype_of(dtype) if dtype is not None else x.dtype)
def _nonzero(ctx: _Ctx, x: Tensor) -> Tensor:
  nz = np.array(np.nonzero(ctx.val(x)), dtype=np.int64)
  return ctx.const(nz.reshape(x.ndim, -1))
def _unique(ctx: _Ctx, x: Tensor, axis: int | None = None, sorted: int = 1) -> tuple[Tensor, ...]:
  # the output's length depends on the values: computed on the host, as NonZero (NaNs count as one value, as numpy's unique)
  a = _axis(axis, x.ndim) if axis is not None else 0
  v = ctx.val(x) if axis is not None else ctx.val(x).reshape(-1)
  y, idx, inv, cnt = np.unique(v, return_index=True, return_inverse=True, return_counts=True, axis=a)
  inv = inv.reshape(-1)
  if not sorted:   # in order of first occurrence
    order = np.argsort(idx, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    y, idx, inv, cnt = np.take(v, idx[order], axis=a), idx[order], rank[inv], cnt[order]
  return (ctx.const(y).cast(x.dtype), *(ctx.const(np.asarray(t, dtype=np.int64)) for t in (idx, inv, cnt)))
def _det(ctx: _Ctx, x: Tensor) -> Tensor:
  # Gaussian elimination with partial pivoting, unrolled over the (static) n columns; batched over the leading dims
  n = x.shape[-1]
  a = x.cast(dtypes.float64 if x.dtype == dtypes.float64 else dtypes.float32)
  rows = Tensor.arange(n, device=x.device)
  det = Tensor.ones(*x.shape[:-2], dtype=a.dtype, device=x.device)
  for k in range(n):
    piv = (rows >= k).where(a[..., :, k].abs(), -1).argmax(-1)   # the largest remaining |a[i, k]|, i >= k
    ok, op = (rows == k).unsqueeze(-1), (rows == piv.unsqueeze(-1)).unsqueeze(-1)
    rk, rp = a[..., k:k + 1, :], (a * op).sum(-2, keepdim=True)
    a = a + ok * (rp - rk) + op * (rk - rp)   # swap rows k and piv (nothing when piv == k)
    p = a[..., k, k]
    det = det * (piv != k).where(-p, p)
    f = (rows > k).where(a[..., :, k] / (p == 0).where(1, p).unsqueeze(-1), 0)
    a = a - f.unsqueeze(-1) * a[..., k:k + 1, :]
  return det.cast(x.dtype)
def _affine_grid(ctx: _Ctx, theta: Tensor, size: Tensor, align_corners: int = 0) -> Tensor:
  # the sampling grid of theta [N, k, k+1] over size's spatial dims: [N, *spatial, k], coordinates (x, y[, z]) in [-1, 1]
  sp = ctx.ints(size)[2:]
  def lin(n: int) -> Tensor:   # pixel centers (align_corners=0) or corners (1) of n pixels; a lone pixel sits at 0 either way (as torch's;
    i = Tensor.arange(n, device=theta.device, dtype=dtypes.float32)   # onnx's reference divides by zero there)
    return (i * (2 / (n - 1)) - 1 if n > 1 else i) if align_corners else (i * 2 + 1) / n - 1
  axes = [lin(n).reshape([n if j == d else 1 for j in range(len(sp))]).expand(*sp) for d, n in enumerate(sp)]
  base = Tensor.stack(*axes[::-1], Tensor.ones(*sp, device=theta.device), dim=-1).reshape(-1, len(sp) + 1)   # [x, y(, z), 1] per point
  return (base @ theta.cast(dtypes.float32).transpose(1, 2)).reshape(theta.shape[0], *sp, len(sp)).cast(theta.dtype)
def _col2im(ctx: _Ctx, x: Tensor, image_shape: Tensor, block_shape: Tensor, dilations: list[int] | None = None, pads: list[int] | None = None,
            strides: list[int] | None = None) -> Tensor:
  # the inverse of im2col: every block offset's column is spread over the (padded) image with the stride, overlaps summed
  img, blk = ctx.ints(image_shape), ctx.ints(block_shape)
  k = len(img)
  dil, st, pd = dilations or [1] * k, strides or [1] * k, pads or [0] * (2 * k)
  full = [img[d] + pd[d] + pd[d + k] for d in range(k)]
  L = [(full[d] - dil[d] * (blk[d] - 1) - 1) // st[d] + 1 for d in range(k)]
  cols = x.reshape(x.shape[0], -1, *blk, *L)
  out: Tensor | None = None
  for b in itertools.product(*[range(n) for n in blk]):
    y = cols[(slice(None), slice(None), *b)]   # [N, C, *L]
    for d in range(k):   # L values at b*dilation + i*stride along spatial dim d
      a = 2 + d
      y = y.unsqueeze(a + 1).pad([(0, st[d] - 1) if i == a + 1 else None for i in range(y.ndim + 1)]).flatten(a, a + 1)
      y = y.shrink([(0, (L[d] - 1) * st[d] + 1) if i == a else None for i in range(y.ndim)])
      off = b[d] * dil[d]
      y = y.pad([(off, full[d] - off - y.shape[a]) if i == a else None for i in range(y.ndim)])
    out = y if out is None else out + y
  assert out is not None
  return out.shrink([None, None, *[(pd[d], pd[d] + img[d]) for d in range(k)]])
def _tensor_scatter(ctx: _Ctx, past: Tensor, upd: Tensor, write_indices: Tensor | None = None, mode: str = "linear", axis: int = -2) -> Tensor:
  # a KV-cache write: batch b's update goes to positions write_indices[b] + j along axis (mod its length when circular)
  if mode not in ("linear", "circular"): raise ValueError(f"TensorScatter: mode {mode!r} is not linear or circular")
  ax, n = _axis(axis, past.ndim), past.ndim
  smax, s = past.shape[ax], upd.shape[ax]
  w = write_indices.cast(dtypes.int64) if write_indices is not None else Tensor.zeros(past.shape[0], dtype=dtypes.int64, device=past.device)
  rel = Tensor.arange(smax, device=past.device).unsqueeze(0) - w.unsqueeze(1)   # [B, smax]: the update index each position takes
  if mode == "circular": rel = (rel + smax) % smax
  hit = rel.unsqueeze(-1) == Tensor.arange(s, device=past.device)               # [B, smax, s]
  hit = hit.reshape(past.shape[0], *[1] * (ax - 1), smax, s, *[1] * (n - ax - 1))
  new = (hit.where(upd.unsqueeze(ax), 0)).sum(ax + 1, dtype=past.dtype)
  return hit.any(ax + 1).where(new, past)
def _causal_conv(ctx: _Ctx, x: Tensor, w: Tensor, b: Tensor | None = None, past: Tensor | None = None, activation: str = "none") -> tuple[Tensor, Tensor]:
  # a depthwise causal conv1d whose left context is the carried state: (silu(conv([past | x])), the last k-1 steps of [past | x])
  if activation not in ("none", "silu", "swish"): raise ValueError(f"CausalConvWithState: activation {activation!r} is not none, silu or swish")
  k = w.shape[2]
  xp = (past if past is not None else Tensor.zeros(x.shape[0], x.shape[1], k - 1, dtype=x.dtype, device=x.device)).cat(x, dim=2)
  y = xp.conv2d(w, b, groups=x.shape[1]).cast(x.dtype)
  if activation != "none": y = y.cast(dtypes.float32).silu().cast(x.dtype)
  return y, xp.shrink((None, None, (xp.shape[2] - (k - 1), xp.shape[2])))
def _gs_reflect(v: Tensor, lo: float, hi: float) -> Tensor:
  # onnx's reflection of a coordinate into [lo, hi] (repeated bounces)
  rng = hi - lo
  dlo, dhi = lo - v, v - hi
  nlo, nhi = (dlo / rng).trunc(), (dhi / rng).trunc()
  rlo, rhi = dlo - nlo * rng, dhi - nhi * rng
  even_lo, even_hi = (nlo % 2) == 0, (nhi % 2) == 0
  return (v < lo).where(even_lo.where(lo + rlo, hi - rlo), (v > hi).where(even_hi.where(hi - rhi, lo + rhi), v))
def _gs_cubic(t: Tensor) -> list[Tensor]:
  # Keys' cubic convolution weights (A = -0.75, onnx's reference and torch's bicubic) of the taps at floor-1 .. floor+2, t = v - floor(v)
  A = -0.75
  near = lambda d: ((A + 2) * d - (A + 3)) * d * d + 1          # |d| <= 1
  far = lambda d: ((A * d - 5 * A) * d + 8 * A) * d - 4 * A    # 1 < |d| < 2
  return [far(t + 1), near(t), near(1 - t), far(2 - t)]
def _grid_sample(ctx: _Ctx, x: Tensor, grid: Tensor, align_corners: int = 0, mode: str = "linear", padding_mode: str = "zeros") -> Tensor:
  mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)   # (opset 16's names)
  if mode not in ("linear", "nearest", "cubic"): raise ValueError(f"GridSample: mode {mode!r} is not linear, nearest or cubic")
  if padding_mode not in ("zeros", "border", "reflection"): raise ValueError(f"GridSample: padding_mode {padding_mode!r} is not zeros, border or reflection")
  N, C, dims = x.shape[0], x.shape[1], x.shape[2:]
  k, out_sp = len(dims), grid.shape[1:-1]
  g = grid.cast(dtypes.float32)
  coords = []
  for d, n in enumerate(dims):   # grid's last axis is (x, y[, z]): the last spatial dim first
    gv = g[..., k - 1 - d]
    v = (gv + 1) / 2 * (n - 1) if align_corners else ((gv + 1) * n - 1) / 2
    if mode == "nearest": v = v.round()   # (half to even, as the reference's np.rint)
    lo, hi = (0.0, n - 1.0) if align_corners else (-0.5, n - 0.5)
    # only a coordinate outside [lo, hi] moves (the reference's rule): cubic's taps see the difference between -0.3 and 0 (linear's don't)
    if padding_mode == "border": v = ((v < lo) | (v > hi)).where(v.clip(0, n - 1), v)
    elif padding_mode == "reflection": v = _gs_reflect(v, lo, hi)
    coords.append((v, n, lo, hi))
  def pixel(idx: list[Tensor]) -> Tensor:   # x at integer indices (one per spatial dim), with onnx's index-level padding
    flat, ok = None, None
    for (_, n, lo, hi), i in zip(coords, idx):
      if padding_mode == "border": i = i.clip(0, n - 1)
      elif padding_mode == "reflection": i = _gs_reflect(i.cast(dtypes.float32), lo, hi).trunc().cast(dtypes.int32)
      valid = (i >= 0) & (i < n)
      ok = valid if ok is None else ok & valid
      i = valid.where(i, 0)
      flat = i if flat is None else flat * n + i
    assert flat is not None and ok is not None
    vals = x.reshape(N, C, -1).gather(2, flat.reshape(N, 1, -1).expand(N, C, -1).cast(dtypes.int64)).reshape(N, C, *out_sp)
    return ok.unsqueeze(1).where(vals, 0)
  if mode == "nearest": return pixel([v.trunc().cast(dtypes.int32) for v, *_ in coords]).cast(x.dtype)
  f = [v.floor() for v, *_ in coords]
  # per dim: the taps' offsets from floor(v) and their weights (linear: 2 taps, cubic: 4); the output sums every combination of taps
  taps = [list(zip((0, 1), (1 - (v - fl), v - fl))) if mode == "linear" else list(zip((-1, 0, 1, 2), _gs_cubic(v - fl)))
          for (v, *_), fl in zip(coords, f)]
  out: Tensor | None = None
  for combo in itertools.product(*taps):
    w = functools.reduce(lambda a, b: a * b, [wt for _, wt in combo])
    term = w.unsqueeze(1) * pixel([(fl + o).cast(dtypes.int32) for fl, (o, _) in zip(f, combo)])
    out = term if out is None else out + term
  assert out is not None
  return out.cast(x.dtype)
def _optional_get(ctx: _Ctx, x: Tensor | None = None) -> Tensor:
  if x is None: raise ValueError("OptionalGetElement: the optional is empty")
  return x
def _compress(ctx: _Ctx, x: Tensor, cond: Tensor, axis: int | None = None) -> Tensor:
  keep = np.nonzero(ctx.val(cond).reshape(-1))[0]
  src, ax = (x.reshape(-1), 0) if axis is None else (x, _axis(axis, x.ndim))
  # a condition longer than the axis selects nothing past its end (onnxruntime's); its index there read out of range, a slice of zeros
  keep = keep[keep < src.shape[ax]]
  return src._take_along(ax, Tensor(keep.astype(np.int32), device=x.device)) if len(keep) else src.shrink(tuple((0, 0) if i == ax else None for i in range(src.ndim)))
def _reverse_sequence(ctx: _Ctx, x: Tensor, lens: Tensor, batch_axis: int = 1, time_axis: int = 0) -> Tensor:
  T, B = x.shape[time_axis], x.shape[batch_axis]
  t = Tensor.arange(T, device=x.device, dtype=dtypes.int64).reshape([T if i == time_axis else 1 for i in range(x.ndim)])
  ln = lens.cast(dtypes.int64).reshape([B if i == batch_axis else 1 for i in range(x.ndim)])
  idx = (t < ln).where(ln - 1 - t, t).expand(x.shape)
  return x.gather(time_axis, idx)
def _center_crop_pad(ctx: _Ctx, x: Tensor, shape: Tensor, axes: Sequence[int] | None = None) -> Tensor:
  s = ctx.ints(shape) or []
  ax = [_axis(a, x.ndim) for a in axes] if axes is not None else list(range(x.ndim))
  full: list[tuple[int, int]] = [(0, 0)] * x.ndim
  for a, o in zip(ax, s):
    d = o - x.shape[a]
    full[a] = (d // 2, d - d // 2) if d >= 0 else (-((-d) // 2), -(-d - (-d) // 2))
  return x.pad(full)
def _window(kind: str) -> Callable[..., Tensor]:
  def op(ctx: _Ctx, size: Tensor, output_datatype: int = 1, periodic: int = 1) -> Tensor:
    n = int(ctx.val(size).reshape(-1)[0])
    d = n if periodic else n - 1
    k = Tensor.arange(n, device=ctx.device, dtype=dtypes.float32) * (2 * math.pi / d)
    if kind == "hann": w = 0.5 - 0.5 * k.cos()
    elif kind == "hamming": w = 25 / 46 - (1 - 25 / 46) * k.cos()
    else: w = 0.42 - 0.5 * k.cos() + 0.08 * (2 * k).cos()
    return w.cast(dtype_of(output_datatype))
  return op
MOVEMENT: dict[str, Callable[..., Any]] = {
  "Reshape": _reshape, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Flatten": _flatten, "Split": _split, "Slice": _slice, "Pad": _pad,
  "Expand": _expand, "Concat": _concat, "Shape": _shape, "Size": lambda ctx, x: ctx.const(np.array(x.numel(), dtype=np.int64)),
  "Constant": _constant, "ConstantOfShape": _constant_of_shape, "Range": _range, "Gather": _gather, "GatherElements": _gather_elements,
  "GatherND": _gather_nd, "ScatterElements": _scatter_elements, "Scatter": _scatter_elements, "ScatterND": _scatter_nd, "Tile": _tile,
  "Transpose": _transpose, "DepthToSpace": _depth_to_space, "SpaceToDepth": _space_to_depth, "OneHot": _one_hot, "Trilu": _trilu,
  "EyeLike": _eye_like, "NonZero": _nonzero, "Unique": _unique, "Det": _det, "AffineGrid": _affine_grid, "Col2Im": _col2im, "TensorScatter": _tensor_scatter, "CausalConvWithState": _causal_conv, "GridSample": _grid_sample,
  # an optional tensor is the tensor or absent (None); optional sequences are not supported (values are tensors)
  "OptionalHasElement": lambda ctx, x=None: Tensor(x is not None, device=ctx.device), "OptionalGetElement": _optional_get, "Compress": _compress, "ReverseSequence": _reverse_sequence, "CenterCropPad": _center_crop_pad,
  "HannWindow": _window("hann"), "HammingWindow": _window("hamming"), "BlackmanWindow": _window("blackman"),
}

# ---- linear algebra, convolution, pooling ----
def _gemm(ctx: _Ctx, a: Tensor, b: Tensor, c: Tensor | None = None, alpha: float = 1.0, beta: float = 1.0, transA: int = 0, transB: int = 0,
          broadcast: int = 0) -> Tensor:
  r = (a.T if transA else a) @ (b.T if transB else b)
  if alpha != 1.0: r = r * alpha
  if c is not None: r = r + (c * beta if beta != 1.0 else c)
  return r.cast(a.dtype)
def _conv_args(x: Tensor, kshape: Sequence[int], auto_pad: str, dilations: Sequence[int] | None, pads: Sequence[int] | None,
               strides: Sequence[int] | None) -> tuple[list[int], list[int], list[int]]:
  n = len(kshape)
  d, s = list(dilations or [1] * n), list(strides or [1] * n)
  return d, s, _auto_pads(auto_pad, x.shape[2:], kshape, s, d, pads)
def _conv(ctx: _Ctx, x: Tensor, w: Tensor, b: Tensor | None = None, auto_pad: str = "NOTSET", dilations: Sequence[int] | None = None, group: int = 1,
          kernel_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None, strides: Sequence[int] | None = None) -> Tensor:
  d, s, p = _conv_args(x, w.shape[2:], auto_pad, dilations, pads, strides)
  return x.conv2d(w, b, groups=group, stride=tuple(s), dilation=tuple(d), padding=tuple(_pads_torch(p)))
def _conv_transpose(ctx: _Ctx, x: Tensor, w: Tensor, b: Tensor | None = None, auto_pad: str = "NOTSET", dilations: Sequence[int] | None = None,
                    group: int = 1, kernel_shape: Sequence[int] | None = None, output_padding: Sequence[int] | None = None,
                    output_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None, strides: Sequence[int] | None = None) -> Tensor:
  k, n = w.shape[2:], w.ndim - 2
  d, s, op = list(dilations or [1] * n), list(strides or [1] * n), list(output_padding or [0] * n)
  full = [st * (i - 1) + (kk - 1) * dd + 1 for i, kk, st, dd in zip(x.shape[2:], k, s, d)]   # the output before pads and output_padding
  if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
    out = list(output_shape)[-n:] if output_shape is not None else [i * st for i, st in zip(x.shape[2:], s)]
    tot = [f + o - t for f, o, t in zip(full, op, out)]
    lo = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in tot]
    p = lo + [t - l for t, l in zip(tot, lo)]
  elif auto_pad == "VALID": p = [0] * (2 * n)
  else: p = list(pads or [0] * (2 * n))
  y = x.conv_transpose2d(w, None, groups=group, stride=tuple(s), dilation=tuple(d))
  y = y.pad([None, None] + [(-p[j], -p[j + n] + op[j]) for j in range(n)])
  return y if b is None else y + b.reshape(1, -1, *[1] * n)
def _pool_args(x: Tensor, kernel_shape: Sequence[int], auto_pad: str, dilations: Sequence[int] | None, pads: Sequence[int] | None,
               strides: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
  d, s, p = _conv_args(x, kernel_shape, auto_pad, dilations, pads, strides)
  return tuple(s), tuple(d), _pads_torch(p)
def _maxpool(ctx: _Ctx, x: Tensor, auto_pad: str = "NOTSET", ceil_mode: int = 0, dilations: Sequence[int] | None = None, kernel_shape: Sequence[int] = (),
             pads: Sequence[int] | None = None, storage_order: int = 0, strides: Sequence[int] | None = None, _nout: int = 1) -> Any:
  s, d, p = _pool_args(x, kernel_shape, auto_pad, dilations, pads, strides)
  if _nout == 1: return x.max_pool2d(tuple(kernel_shape), s, d, tuple(p), bool(ceil_mode))
  y, i = x.max_pool2d(tuple(kernel_shape), s, d, tuple(p), bool(ceil_mode), return_indices=True)
  i = i.cast(dtypes.int64)   # ONNX's indices are int64 (max_pool2d's are int32, as public tinygrad's)
  sp = x.shape[2:]
  if storage_order:   # column-major index of the plane: h + w*H
    if len(sp) != 2: raise NotImplementedError(f"MaxPool: storage_order=1 is supported for 2-d pools, not {len(sp)}-d")
    i = i // sp[1] + (i % sp[1]) * sp[0]
  nc = Tensor.arange(x.shape[0] * x.shape[1], device=x.device, dtype=dtypes.int64).reshape(x.shape[0], x.shape[1], *[1] * len(sp))
  return y, i + nc * prod(sp)
def _avgpool(ctx: _Ctx, x: Tensor, auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0, dilations: Sequence[int] | None = None,
             kernel_shape: Sequence[int] = (), pads: Sequence[int] | None = None, strides: Sequence[int] | None = None) -> Tensor:
  s, d, p = _pool_args(x, kernel_shape, auto_pad, dilations, pads, strides)
  return x.avg_pool2d(tuple(kernel_shape), s, d, tuple(p), bool(ceil_mode), bool(count_include_pad))
def _lppool(ctx: _Ctx, x: Tensor, auto_pad: str = "NOTSET", ceil_mode: int = 0, dilations: Sequence[int] | None = None, kernel_shape: Sequence[int] = (),
            p: int = 2, pads: Sequence[int] | None = None, strides: Sequence[int] | None = None) -> Tensor:
  s, d, pp = _pool_args(x, kernel_shape, auto_pad, dilations, pads, strides)
  if ceil_mode: pp = x._ceil_pads(tuple(kernel_shape), s, d, pp)
  axes = tuple(range(-len(kernel_shape), 0))
  return x.abs().pow(p).pad(pp)._pool(tuple(kernel_shape), s, d).sum(axes).pow(1 / p).cast(x.dtype)
def _max_unpool(ctx: _Ctx, x: Tensor, idx: Tensor, output_shape: Tensor | None = None, kernel_shape: Sequence[int] = (), pads: Sequence[int] | None = None,
                strides: Sequence[int] | None = None) -> Tensor:
  n = len(kernel_shape)
  s, p = list(strides or [1] * n), list(pads or [0] * (2 * n))
  out = [(i - 1) * st - p[j] - p[j + n] + k for j, (i, k, st) in enumerate(zip(x.shape[2:], kernel_shape, s))]
  y = x.max_unpool2d(idx % prod(out), tuple(kernel_shape), tuple(s), 1, 0, output_size=tuple(out))
  # indices are positions in the inferred shape; a bigger output_shape only pads at the end
  want = ctx.ints(output_shape)[-n:] if output_shape is not None else out
  return y.pad([None, None] + [(0, w - o) for w, o in zip(want, out)])
def _global(f: Callable[[Tensor, tuple[int, ...]], Tensor]) -> Callable[..., Tensor]:
  return lambda ctx, x: f(x, tuple(range(2, x.ndim)))
def _einsum(ctx: _Ctx, *xs: Tensor, equation: str = "") -> Tensor: return Tensor.einsum(equation, *xs).cast(xs[0].dtype)   # (ONNX: the inputs' type)
LINALG: dict[str, Callable[..., Any]] = {
  "MatMul": lambda ctx, a, b: a @ b, "Gemm": _gemm, "Einsum": _einsum, "Conv": _conv, "ConvTranspose": _conv_transpose,
  "MaxPool": _maxpool, "AveragePool": _avgpool, "LpPool": _lppool, "MaxUnpool": _max_unpool,
  "GlobalAveragePool": _global(lambda x, a: x.mean(a, keepdim=True)), "GlobalMaxPool": _global(lambda x, a: x.max(a, keepdim=True)),
  "GlobalLpPool": lambda ctx, x, p=2: x.abs().pow(p).sum(tuple(range(2, x.ndim)), keepdim=True).pow(1 / p).cast(x.dtype),
}

# ---- normalization, attention, losses ----
def _batchnorm(ctx: _Ctx, x: Tensor, scale: Tensor, b: Tensor, mean: Tensor, var: Tensor, epsilon: float = 1e-5, momentum: float = 0.9,
               training_mode: int = 0, spatial: int = 1, is_test: int = 0, consumed_inputs: Any = None, _nout: int = 1) -> Any:
  if training_mode:
    axes = tuple(i for i in range(x.ndim) if i != 1)
    # (the deviations of _centered: x - mean with the float32 mean's rounding, normalised, was O(1) off for a channel of
    # one large value)
    dev, bm, bv = x._centered(axes)
    y = dev * (bv + epsilon).rsqrt() * _reshape_to(scale, 1, x.ndim) + _reshape_to(b, 1, x.ndim)
    bm, bv = bm.reshape(-1), bv.reshape(-1)
    return y, mean * momentum + bm * (1 - momentum), var * momentum + bv * (1 - momentum)
  return x.batchnorm(scale, b, mean, (var + epsilon).rsqrt()).cast(x.dtype)
def _instancenorm(ctx: _Ctx, x: Tensor, scale: Tensor, b: Tensor, epsilon: float = 1e-5) -> Tensor:
  axes = tuple(range(2, x.ndim))
  return x.layernorm(axes, epsilon) * _reshape_to(scale, 1, x.ndim) + _reshape_to(b, 1, x.ndim)
def _layernorm(ctx: _Ctx, x: Tensor, scale: Tensor, b: Tensor | None = None, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1,
               _nout: int = 1) -> Any:
  axes = tuple(range(_axis(axis, x.ndim), x.ndim))
  xf = x.cast(dtypes.float32) if stash_type == 1 and x.dtype != dtypes.float32 else x
  dev, mean, var = xf._centered(axes)
  inv = var.add(epsilon).rsqrt()
  y = (dev * inv).cast(x.dtype) * scale
  if b is not None: y = y + b
  return (y, mean, inv)[:_nout] if _nout > 1 else y
def _groupnorm(ctx: _Ctx, x: Tensor, scale: Tensor, b: Tensor, epsilon: float = 1e-5, num_groups: int = 1, stash_type: int = 1) -> Tensor:
  n, c = x.shape[:2]
  y = x.reshape(n, num_groups, -1).layernorm(-1, epsilon).reshape(x.shape)
  if ctx.opset < 21: scale, b = scale.repeat_interleave(c // num_groups), b.repeat_interleave(c // num_groups)   # per group before opset 21
  return y * _reshape_to(scale, 1, x.ndim) + _reshape_to(b, 1, x.ndim)
def _rmsnorm(ctx: _Ctx, x: Tensor, scale: Tensor, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1) -> Tensor:
  axes = tuple(range(_axis(axis, x.ndim), x.ndim))
  xf = x.cast(dtypes.float32) if stash_type == 1 else x
  return (xf * (xf * xf).mean(axes, keepdim=True).add(epsilon).rsqrt()).cast(x.dtype) * scale
def _lrn(ctx: _Ctx, x: Tensor, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0, size: int = 1) -> Tensor:
  sq = (x * x).transpose(1, -1)
  sq = sq.pad([(0, 0)] * (x.ndim - 1) + [((size - 1) // 2, math.ceil((size - 1) / 2))])._pool((size,)).sum(-1).transpose(1, -1)
  return x / (bias + alpha / size * sq).pow(beta)
def _mvn(ctx: _Ctx, x: Tensor, axes: Sequence[int] = (0, 2, 3)) -> Tensor:
  ax = tuple(_axis(a, x.ndim) for a in axes)
  y, _, var = x._centered(ax)
  return y / (var.sqrt() + 1e-9)
def _lpnorm(ctx: _Ctx, x: Tensor, axis: int = -1, p: int = 2) -> Tensor:
  ax = _axis(axis, x.ndim)
  n = x.abs().sum(ax, keepdim=True) if p == 1 else (x * x).sum(ax, keepdim=True).sqrt()
  return (x / (n == 0).where(1, n)).cast(x.dtype)   # an all-zero slice stays zero
def _dropout(ctx: _Ctx, x: Tensor, ratio: Tensor | float | None = None, training_mode: Tensor | None = None, seed: int | None = None, is_test: int = 0,
             _nout: int = 1) -> Any:
  # ratio 0 drops nothing, so training mode is the identity too (exactly what onnx's reference gives); any other ratio draws a mask
  r = float(ctx.val(ratio).reshape(-1)[0]) if isinstance(ratio, Tensor) else 0.5 if ratio is None else ratio
  if training_mode is not None and bool(ctx.val(training_mode).reshape(-1)[0]) and r != 0:
    raise NotImplementedError(f"Dropout: training_mode=True with ratio {r} draws random masks that cannot match ONNX's; inference (or ratio 0) only")
  return (x, Tensor.full(x.shape, True, dtype=dtypes.bool, device=x.device)) if _nout > 1 else x
def _nll(x: Tensor, t: Tensor, w: Tensor | None, ignore_index: int | None, reduction: str) -> Tensor:
  t = t.cast(dtypes.int64)
  keep = (t != ignore_index) if ignore_index is not None else None
  tt = keep.where(t, 0) if keep is not None else t
  picked = -x.gather(1, tt.unsqueeze(1)).squeeze(1)
  wt = w[tt] if w is not None else Tensor.ones(tt.shape, dtype=x.dtype, device=x.device)
  if keep is not None: wt = keep.where(wt, 0)
  loss = picked * wt
  if reduction == "none": return loss
  if reduction == "sum": return loss.sum()
  if reduction != "mean": raise ValueError(f"loss: reduction {reduction!r} is not one of none, sum, mean")
  return loss.sum() / wt.sum()
def _nll_loss(ctx: _Ctx, x: Tensor, t: Tensor, w: Tensor | None = None, ignore_index: int | None = None, reduction: str = "mean") -> Tensor:
  return _nll(x, t, w, ignore_index, reduction)
def _sce_loss(ctx: _Ctx, x: Tensor, t: Tensor, w: Tensor | None = None, ignore_index: int | None = None, reduction: str = "mean", _nout: int = 1) -> Any:
  lp = x.log_softmax(1)
  loss = _nll(lp, t, w, ignore_index, reduction)
  return (loss, lp) if _nout > 1 else loss
def _attention(ctx: _Ctx, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, past_k: Tensor | None = None, past_v: Tensor | None = None,
               nonpad_kv_seqlen: Tensor | None = None, is_causal: int = 0, kv_num_heads: int | None = None, q_num_heads: int | None = None,
               qk_matmul_output_mode: int = 0, scale: float | None = None, softcap: float = 0.0, softmax_precision: int | None = None,
               left_window_size: int = -1, right_window_size: int = -1, _nout: int = 1) -> Any:
  three = q.ndim == 3
  if three:   # (B, S, H*E) -> (B, H, S, E)
    if q_num_heads is None or kv_num_heads is None: raise ValueError("Attention: 3-d inputs need the q_num_heads and kv_num_heads attributes")
    def heads(t: Tensor, h: int) -> Tensor: return t.reshape(t.shape[0], t.shape[1], h, t.shape[2] // h).transpose(1, 2)
    q, k, v = heads(q, q_num_heads), heads(k, kv_num_heads), heads(v, kv_num_heads)
  if past_k is not None: k = past_k.cat(k, dim=2)
  if past_v is not None: v = past_v.cat(v, dim=2)
  present_k, present_v = k, v
  L, S = q.shape[2], k.shape[2]
  i, j = Tensor.arange(L, device=q.device).reshape(L, 1), Tensor.arange(S, device=q.device).reshape(1, S)
  ninf = Tensor.full((1,), -math.inf, dtype=q.dtype, device=q.device)
  bias = Tensor.zeros(L, S, dtype=q.dtype, device=q.device)
  if mask is not None:
    if mask.shape[-1] < S: mask = mask.pad([None] * (mask.ndim - 1) + [(0, S - mask.shape[-1])], value=False if mask.dtype == dtypes.bool else -math.inf)
    bias = mask.where(bias, ninf) if mask.dtype == dtypes.bool else bias + mask.cast(q.dtype)
  # the causal and window frontiers are aligned bottom-right: to the past's length, or per batch to the non-padded length
  off: Tensor | int = past_k.shape[2] if past_k is not None else 0
  if past_k is None and nonpad_kv_seqlen is not None: off = (nonpad_kv_seqlen.cast(dtypes.int32) - L).reshape(-1, 1, 1, 1)
  diff = i + off - j
  if is_causal: bias = (diff >= 0).where(bias, ninf)
  if left_window_size >= 0: bias = (diff <= left_window_size).where(bias, ninf)
  if right_window_size >= 0: bias = (-diff <= right_window_size).where(bias, ninf)
  if nonpad_kv_seqlen is not None: bias = (Tensor.arange(S, device=q.device).reshape(1, 1, 1, S) < nonpad_kv_seqlen.reshape(-1, 1, 1, 1)).where(bias, ninf)
  hq = q.shape[1]
  kr, vr = k._repeat_heads(hq // k.shape[1]), v._repeat_heads(hq // v.shape[1])
  sc = math.sqrt((1 / math.sqrt(q.shape[-1])) if scale is None else scale)
  acc = dtypes.float32 if q.dtype in OPMATH_F32 else q.dtype   # half inputs: float32 sums, as numpy
  qk = (q * sc).matmul((kr * sc).transpose(-2, -1), dtype=acc).cast(q.dtype)
  if softcap: qk = softcap * (qk / softcap).tanh()
  qkb = qk + bias
  ft = dtype_of(softmax_precision) if softmax_precision else q.dtype
  dead = bias._max(-1, keepdim=True) == -math.inf   # a row with nothing to attend to gives zeros
  p = dead.where(0, dead.where(0, qkb.cast(ft)).softmax(-1)).cast(q.dtype)
  y = p.matmul(vr, dtype=acc).cast(q.dtype)
  if three: y = y.transpose(1, 2).reshape(y.shape[0], y.shape[2], -1)
  outs = (y, present_k, present_v, (qk, qk, qkb, p)[qk_matmul_output_mode].cast(q.dtype))
  return outs[:_nout] if _nout > 1 else y
def _rotary(ctx: _Ctx, x: Tensor, cos: Tensor, sin: Tensor, pos: Tensor | None = None, interleaved: int = 0, num_heads: int = 0,
            rotary_embedding_dim: int = 0) -> Tensor:
  four = x.ndim == 4
  if four: y = x.transpose(1, 2)   # (B, H, S, D) -> (B, S, H, D)
  else:
    if not num_heads: raise ValueError("RotaryEmbedding: 3-d input needs the num_heads attribute")
    y = x.reshape(x.shape[0], x.shape[1], num_heads, x.shape[2] // num_heads)
  d = y.shape[-1]
  rd = rotary_embedding_dim or d
  if pos is not None: cos, sin = cos[pos.cast(dtypes.int64)], sin[pos.cast(dtypes.int64)]
  cos, sin = cos[..., :rd // 2].unsqueeze(2), sin[..., :rd // 2].unsqueeze(2)
  rot, rest = y[..., :rd], y[..., rd:]
  if interleaved: x1, x2 = rot[..., 0::2], rot[..., 1::2]
  else: x1, x2 = rot[..., :rd // 2], rot[..., rd // 2:]
  o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
  r = o1.stack(o2, dim=-1).reshape(*o1.shape[:-1], rd) if interleaved else o1.cat(o2, dim=-1)
  out = r.cat(rest, dim=-1) if rd < d else r
  return out.transpose(1, 2) if four else out.reshape(x.shape)
NORM: dict[str, Callable[..., Any]] = {
  "BatchNormalization": _batchnorm, "InstanceNormalization": _instancenorm, "LayerNormalization": _layernorm, "GroupNormalization": _groupnorm,
  "RMSNormalization": _rmsnorm, "LRN": _lrn, "MeanVarianceNormalization": _mvn, "LpNormalization": _lpnorm, "Dropout": _dropout,
  "NegativeLogLikelihoodLoss": _nll_loss, "SoftmaxCrossEntropyLoss": _sce_loss, "Attention": _attention, "RotaryEmbedding": _rotary,
}

# ---- resize ----
def _resize_coords(mode: str, out: int, n: int, scale: float, roi: tuple[float, float] | None, device: str | None) -> Tensor:
  x = Tensor.arange(out, dtype=dtypes.float32, device=device)
  if mode == "half_pixel": return (x + 0.5) / scale - 0.5
  if mode == "half_pixel_symmetric":
    adj = out / (scale * n)
    return n / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
  if mode == "pytorch_half_pixel": return (x + 0.5) / scale - 0.5 if out > 1 else x * 0
  if mode == "align_corners":   # the resized length is scale*n, not its integer part, when scales are given
    return x * ((n - 1) / (scale * n - 1)) if scale * n > 1 else x * 0
  if mode == "asymmetric": return x / scale
  if mode == "tf_crop_and_resize":
    assert roi is not None
    s, e = roi
    return s * (n - 1) + x * ((e - s) * (n - 1) / (out - 1)) if out > 1 else x * 0 + 0.5 * (s + e) * (n - 1)
  raise ValueError(f"Resize: coordinate_transformation_mode {mode!r} is not one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, "
                   "align_corners, asymmetric, tf_crop_and_resize")
def _resize_axis(x: Tensor, ax: int, out: int, scale: float, mode: str, ctm: str, nearest_mode: str, a: float, exclude_outside: int,
                 roi: tuple[float, float] | None, extrapolation_value: float) -> Tensor:
  n = x.shape[ax]
  c = _resize_coords(ctm, out, n, scale, roi, x.device)
  shape = [out if i == ax else 1 for i in range(x.ndim)]
  if mode == "nearest":
    if nearest_mode == "round_prefer_floor": i = (c - 0.5).ceil()
    elif nearest_mode == "round_prefer_ceil": i = (c + 0.5).floor()
    elif nearest_mode == "floor": i = c.floor()
    elif nearest_mode == "ceil": i = c.ceil()
    else: raise ValueError(f"Resize: nearest_mode {nearest_mode!r} is not one of round_prefer_floor, round_prefer_ceil, floor, ceil")
    y = x._take_along(ax, i.clip(0, n - 1).cast(dtypes.int32))
  elif mode in ("linear", "cubic"):
    lo = c.floor()
    t = c - lo
    if mode == "linear": taps = [(lo, 1 - t), (lo + 1, t)]
    else:
      def w(d: Tensor) -> Tensor:
        d = d.abs()
        return (d <= 1).where(((a + 2) * d - (a + 3)) * d * d + 1, (d < 2).where(((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0))
      taps = [(lo - 1, w(t + 1)), (lo, w(t)), (lo + 1, w(1 - t)), (lo + 2, w(2 - t))]
    if exclude_outside:
      ws = [((i >= 0) & (i <= n - 1)).where(wt, 0) for i, wt in taps]
      tot = functools.reduce(Tensor.add, ws)
      taps = [(i, wt / tot) for (i, _), wt in zip(taps, ws)]
    xf = x.cast(dtypes.float32) if not dtypes.is_float(x.dtype) else x
    y = functools.reduce(Tensor.add, [xf._take_along(ax, i.clip(0, n - 1).cast(dtypes.int32)) * wt.reshape(shape).cast(xf.dtype) for i, wt in taps])
  else: raise ValueError(f"Resize: mode {mode!r} is not one of nearest, linear, cubic")
  if ctm == "tf_crop_and_resize":
    inside = ((c >= 0) & (c <= n - 1)).reshape(shape)
    y = inside.where(y, extrapolation_value)
  return y.cast(x.dtype) if y.dtype != x.dtype else y
def _resize(ctx: _Ctx, x: Tensor, roi: Tensor | None = None, scales: Tensor | None = None, sizes: Tensor | None = None, antialias: int = 0,
            axes: Sequence[int] | None = None, coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.75,
            exclude_outside: int = 0, extrapolation_value: float = 0.0, keep_aspect_ratio_policy: str = "stretch", mode: str = "nearest",
            nearest_mode: str = "round_prefer_floor") -> Tensor:
  if antialias: raise NotImplementedError("Resize: antialias=1 is not supported (it widens the filter when downscaling); use antialias=0")
  # opset 10 has no nearest_mode: onnxruntime's rounds down when upsampling and up when downsampling an axis ("ceil" below)
  if ctx.opset == 10: scales, roi, coordinate_transformation_mode, nearest_mode = roi, None, "asymmetric", "opset10"
  ax = [_axis(a, x.ndim) for a in axes] if axes is not None else list(range(x.ndim))
  sc = [float(v) for v in ctx.val(scales).reshape(-1)] if scales is not None and scales.numel() else None
  sz = ctx.ints(sizes) if sizes is not None and sizes.numel() else None
  ins = [x.shape[a] for a in ax]
  if sz is not None:
    if keep_aspect_ratio_policy == "stretch": sc = [o / i for o, i in zip(sz, ins)]
    else:
      f = (min if keep_aspect_ratio_policy == "not_larger" else max)(o / i for o, i in zip(sz, ins))
      sc, sz = [f] * len(ax), [int(f * i + 0.5) for i in ins]
  elif sc is not None: sz = [int(math.floor(i * s)) for i, s in zip(ins, sc)]
  else: raise ValueError("Resize: one of scales and sizes must be given")
  rv = [float(v) for v in ctx.val(roi).reshape(-1)] if roi is not None and roi.numel() else None
  for j, (a, o, s) in enumerate(zip(ax, sz, sc)):
    if o == x.shape[a] and s == 1.0 and coordinate_transformation_mode != "tf_crop_and_resize": continue
    r = (rv[j], rv[j + len(ax)]) if rv is not None else None
    nm = ("ceil" if s < 1 else "floor") if nearest_mode == "opset10" else nearest_mode
    x = _resize_axis(x, a, o, s, mode, coordinate_transformation_mode, nm, cubic_coeff_a, exclude_outside, r, extrapolation_value)
  return x
def _upsample(ctx: _Ctx, x: Tensor, scales_t: Tensor | None = None, mode: str = "nearest", scales: Sequence[float] | None = None) -> Tensor:
  if scales is None and scales_t is None: raise ValueError("Upsample: needs scales (an attribute before opset 9, an input from it)")
  sc = list(scales) if scales is not None else [float(v) for v in ctx.val(scales_t).reshape(-1)] if scales_t is not None else []
  for a, s in enumerate(sc):
    if s != 1.0:
      x = _resize_axis(x, a, int(math.floor(x.shape[a] * s)), s, mode, "asymmetric", "floor", -0.75, 0, None, 0.0)
  return x
LINALG.update({"Resize": _resize, "Upsample": _upsample})

# ---- quantization ----
def _qparams(s: Tensor, zp: Tensor | None, x: Tensor, axis: int, block_size: int) -> tuple[Tensor, Tensor | None]:
  ax = _axis(axis, x.ndim)
  if block_size and s.ndim > 0: s, zp = s.repeat_interleave(block_size, ax), zp.repeat_interleave(block_size, ax) if zp is not None else None
  if block_size and s.ndim > 0 and s.shape[ax] != x.shape[ax]:
    s = s.shrink(tuple((0, x.shape[ax]) if i == ax else None for i in range(s.ndim)))
    zp = zp.shrink(tuple((0, x.shape[ax]) if i == ax else None for i in range(zp.ndim))) if zp is not None else None
  return _reshape_to(s, ax, x.ndim), (_reshape_to(zp, ax, x.ndim) if zp is not None else None)
def _saturate(y: Tensor, dt: DType) -> Tensor:
  if not dtypes.is_int(dt): raise NotImplementedError(f"QuantizeLinear: output dtype {dt} is not supported (int8, uint8, int16, uint16, int32)")
  return y.clip(dtypes.min(dt), dtypes.max(dt)).cast(dt)
def _quantize(ctx: _Ctx, x: Tensor, s: Tensor, zp: Tensor | None = None, axis: int = 1, block_size: int = 0, output_dtype: int = 0, saturate: int = 1,
              precision: int = 0) -> Tensor:
  dt = zp.dtype if zp is not None else dtype_of(output_dtype) if output_dtype else dtypes.uint8
  s, zp = _qparams(s, zp, x, axis, block_size)
  # to fp8: no rounding to integers and no zero point (the spec requires it to be 0), a Cast with the saturate attribute
  if dt in dtypes.fp8s: return _cast_to(x.cast(dtypes.float32) / s.cast(dtypes.float32), dt, saturate)
  y = (x.cast(dtypes.float32) / s.cast(dtypes.float32)).round()
  if zp is not None: y = y + zp.cast(dtypes.float32)
  return _saturate(y, dt)
def _dequantize(ctx: _Ctx, x: Tensor, s: Tensor, zp: Tensor | None = None, axis: int = 1, block_size: int = 0, output_dtype: int = 0) -> Tensor:
  s, zp = _qparams(s, zp, x, axis, block_size)
  # (an fp8 x has a zero point of 0 by the spec: it is not subtracted; onnx's reference multiplies in float32 and rounds once to the output)
  y = x.cast(dtypes.int32) - zp.cast(dtypes.int32) if zp is not None and x.dtype not in dtypes.fp8s else x
  ft = dtypes.float64 if s.dtype == dtypes.float64 else dtypes.float32
  return (y.cast(ft) * s.cast(ft)).cast(dtype_of(output_dtype) if output_dtype else s.dtype)
def _dyn_quantize(ctx: _Ctx, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  lo, hi = x.min().minimum(0), x.max().maximum(0)
  s = (hi - lo) / 255
  zp = (-lo / s).round().clip(0, 255).cast(dtypes.uint8)
  return _saturate((x / s).round() + zp.cast(x.dtype), dtypes.uint8), s, zp
def _zp_sub(x: Tensor, zp: Tensor | None, axis: int) -> Tensor:
  y = x.cast(dtypes.int32)
  return y - _reshape_to(zp.cast(dtypes.int32), axis, x.ndim) if zp is not None else y
def _matmul_int(ctx: _Ctx, a: Tensor, b: Tensor, azp: Tensor | None = None, bzp: Tensor | None = None) -> Tensor:
  ai = a.cast(dtypes.int32) - (azp.cast(dtypes.int32).reshape(-1, 1) if azp is not None and azp.ndim == 1 and azp.numel() > 1 else azp.cast(dtypes.int32)
                               if azp is not None else 0)
  return ai @ _zp_sub(b, bzp, b.ndim - 1)
def _conv_int(ctx: _Ctx, x: Tensor, w: Tensor, xzp: Tensor | None = None, wzp: Tensor | None = None, **attrs: Any) -> Tensor:
  xi = x.cast(dtypes.int32) - (xzp.cast(dtypes.int32) if xzp is not None else 0)
  # (ONNX's output is int32; a tinygrad int conv, a sum, gives int64)
  return _conv(ctx, xi, _zp_sub(w, wzp, 0), None, **attrs).cast(dtypes.int32)
def _qlinear_matmul(ctx: _Ctx, a: Tensor, a_s: Tensor, azp: Tensor, b: Tensor, b_s: Tensor, bzp: Tensor, y_s: Tensor, yzp: Tensor) -> Tensor:
  af = (a.cast(dtypes.int32) - azp.cast(dtypes.int32)).cast(dtypes.float32) * a_s
  bf = (b.cast(dtypes.int32) - _reshape_to(bzp, b.ndim - 1, b.ndim).cast(dtypes.int32)).cast(dtypes.float32) * _reshape_to(b_s, b.ndim - 1, b.ndim)
  return _saturate(((af @ bf) / y_s).round() + yzp.cast(dtypes.float32), yzp.dtype)
def _qlinear_conv(ctx: _Ctx, x: Tensor, x_s: Tensor, xzp: Tensor, w: Tensor, w_s: Tensor, wzp: Tensor, y_s: Tensor, yzp: Tensor, b: Tensor | None = None,
                  **attrs: Any) -> Tensor:
  xf = (x.cast(dtypes.int32) - xzp.cast(dtypes.int32)).cast(dtypes.float32) * x_s
  wf = _zp_sub(w, wzp, 0).cast(dtypes.float32) * _reshape_to(w_s, 0, w.ndim)
  y = _conv(ctx, xf, wf, None, **attrs)
  if b is not None: y = y + (b.cast(dtypes.float32) * x_s * w_s).reshape(1, -1, *[1] * (x.ndim - 2))
  return _saturate((y / y_s).round() + yzp.cast(dtypes.float32), yzp.dtype)
QUANT: dict[str, Callable[..., Any]] = {
  "QuantizeLinear": _quantize, "DequantizeLinear": _dequantize, "DynamicQuantizeLinear": _dyn_quantize, "MatMulInteger": _matmul_int,
  "ConvInteger": _conv_int, "QLinearMatMul": _qlinear_matmul, "QLinearConv": _qlinear_conv,
}

# ---- control flow (static conditions only) ----
def _if(ctx: _Ctx, cond: Tensor, then_branch: Any = None, else_branch: Any = None, _runner: OnnxRunner | None = None, _scope: Any = None) -> Any:
  assert _runner is not None and _scope is not None
  g = then_branch if bool(ctx.val(cond).reshape(-1)[0]) else else_branch
  outs = _runner._run_graph(g, dict(_scope), ctx)
  return tuple(outs[o.name] for o in g.output)

onnx_ops: dict[str, Callable[..., Any]] = {**ELEMENTWISE, **REDUCE, **MOVEMENT, **LINALG, **NORM, **QUANT, "If": _if}

# ---- other domains: the numeric ops of ai.onnx.ml and the optimizer steps of ai.onnx.preview.training (as onnx's reference computes them) ----
def _array_feature_extractor(ctx: _Ctx, x: Tensor, idx: Tensor) -> Tensor:
  # x[..., idx.flatten()]; a 1-d x gives one row (onnxruntime's shape, which the reference follows)
  y = x._take_along(x.ndim - 1, idx.reshape(-1).cast(dtypes.int64))
  return y.reshape(1, -1) if x.ndim == 1 else y
def _adagrad(ctx: _Ctx, r: Tensor, t: Tensor, *xgh: Tensor, decay_factor: float = 0.0, epsilon: float = 1e-6, norm_coefficient: float = 0.0) -> tuple:
  n = len(xgh) // 3   # X1..Xn, G1..Gn, H1..Hn -> X1_new..Xn_new, H1_new..Hn_new
  lr = r / (1 + t.cast(r.dtype) * decay_factor)
  steps = [(x, norm_coefficient * x + g, h) for x, g, h in zip(xgh[:n], xgh[n:2 * n], xgh[2 * n:])]
  hs = [h + g * g for _, g, h in steps]
  return tuple([(x - lr * g / (hn.sqrt() + epsilon)).cast(x.dtype) for (x, g, _), hn in zip(steps, hs)] + [hn.cast(h.dtype) for (_, _, h), hn in zip(steps, hs)])
def _momentum(ctx: _Ctx, r: Tensor, t: Tensor, *xgv: Tensor, alpha: float = 0.0, beta: float = 0.0, mode: str = "standard", norm_coefficient: float = 0.0) -> tuple:
  n = len(xgv) // 3
  b = (t > 0).where(beta, 1.0)   # the first step (t == 0) takes the whole gradient
  xs, vs = [], []
  for x, g, v in zip(xgv[:n], xgv[n:2 * n], xgv[2 * n:]):
    gr = norm_coefficient * x + g
    vn = alpha * v + b * gr
    xs.append((x - r * (vn if mode == "standard" else gr + alpha * vn)).cast(x.dtype))
    vs.append(vn.cast(v.dtype))
  return tuple(xs + vs)
def _adam(ctx: _Ctx, r: Tensor, t: Tensor, *xgvh: Tensor, alpha: float = 0.9, beta: float = 0.999, epsilon: float = 1e-6, norm_coefficient: float = 0.0,
          norm_coefficient_post: float = 0.0) -> tuple:
  n = len(xgvh) // 4
  tf = t.cast(dtypes.float32)
  lr = (t > 0).where(r * (1 - beta ** tf).sqrt() / (1 - alpha ** tf), r)   # bias correction from the first step on
  xs, vs, hs = [], [], []
  for x, g, v, h in zip(xgvh[:n], xgvh[n:2 * n], xgvh[2 * n:3 * n], xgvh[3 * n:]):
    gr = norm_coefficient * x + g
    vn, hn = alpha * v + (1 - alpha) * gr, beta * h + (1 - beta) * gr * gr
    xs.append(((1 - norm_coefficient_post) * (x - lr * vn / (hn.sqrt() + epsilon))).cast(x.dtype))
    vs.append(vn.cast(v.dtype))
    hs.append(hn.cast(h.dtype))
  return tuple(xs + vs + hs)
# ---- recurrent layers: a python loop over the time steps (the sequence length is static), each step a few lazy Tensor ops ----
# name -> (the defaults of its alpha[, beta] (None: the spec gives none), f(x, *params)): the ONNX RNN spec's activation list; the
# defaults are those of the ops of the same name (Affine's 1, 0: onnxruntime takes 0, 0), ThresholdedRelu keeps x >= alpha as the
# RNN spec writes it (the ThresholdedRelu op and onnxruntime's RNN: x > alpha; they differ only at x == alpha)
_RNN_ACTS: dict[str, tuple[tuple[float | None, ...], Callable[..., Tensor]]] = {
  "Tanh": ((), Tensor.tanh), "Sigmoid": ((), Tensor.sigmoid), "Relu": ((), Tensor.relu), "Softsign": ((), Tensor.softsign), "Softplus": ((), Tensor.softplus),
  "Affine": ((1.0, 0.0), lambda x, a, b: a * x + b), "LeakyRelu": ((0.01,), lambda x, a: (x >= 0).where(x, a * x)),
  "ThresholdedRelu": ((1.0,), lambda x, a: (x >= a).where(x, 0)), "ScaledTanh": ((None, None), lambda x, a, b: a * (b * x).tanh()),
  "HardSigmoid": ((0.2, 0.5), lambda x, a, b: (a * x + b).clip(0, 1)), "Elu": ((1.0,), lambda x, a: (x >= 0).where(x, a * (x.exp() - 1))),
}
def _bound(fn: Callable[..., Tensor], ps: tuple[float, ...]) -> Callable[[Tensor], Tensor]: return lambda x: fn(x, *ps)
def _rnn_acts(kind: str, names: list[str], alpha: list[float], beta: list[float]) -> list[Callable[[Tensor], Tensor]]:
  # activation_alpha/beta are consumed in the order of the activations, each by the ones that take it (onnxruntime's reading of
  # the spec: [Tanh, LeakyRelu] with alpha [0.3] gives LeakyRelu 0.3); past their end the op's default
  if (bad := [a for a in names if a not in _RNN_ACTS]): raise NotImplementedError(f"{kind}: activations {bad} are not supported; supported: {list(_RNN_ACTS)}")
  out: list[Callable[[Tensor], Tensor]] = []
  ia, ib = 0, 0
  for n in names:
    defaults, fn = _RNN_ACTS[n]
    ps = []
    for j, dflt in enumerate(defaults):
      vals, i = (alpha, ia) if j == 0 else (beta, ib)
      v = vals[i] if i < len(vals) else dflt
      if v is None: raise ValueError(f"{kind}: activation {n} needs activation_{'alpha' if j == 0 else 'beta'} (it has no default); got {vals}")
      ps.append(v)
      if j == 0: ia += 1
      else: ib += 1
    out.append(_bound(fn, tuple(ps)))
  return out
def _recurrent(kind: str, ctx: _Ctx, X: Tensor, W: Tensor, R: Tensor, B: Tensor | None = None, seq_lens: Tensor | None = None, h0: Tensor | None = None,
               c0: Tensor | None = None, P: Tensor | None = None, activations: list[str] | None = None, activation_alpha: list[float] | None = None,
               activation_beta: list[float] | None = None, clip: float | None = None, direction: str = "forward", hidden_size: int = 0, layout: int = 0,
               linear_before_reset: int = 0, input_forget: int = 0, _nout: int = 1) -> tuple[Tensor, ...]:
  if direction not in ("forward", "reverse", "bidirectional"): raise ValueError(f"{kind}: direction {direction!r} is not forward, reverse or bidirectional")
  if layout == 1:   # batch first -> [seq, batch, input], initial states [dirs, batch, hidden]
    X, h0, c0 = X.transpose(0, 1), h0.transpose(0, 1) if h0 is not None else None, c0.transpose(0, 1) if c0 is not None else None
  T, N, H, D = X.shape[0], X.shape[1], R.shape[-1], W.shape[0]
  # sequence_lens: batch entry b runs its first L[b] steps (a reverse direction starts at step L[b]-1); past them its state
  # stays and Y is 0, so Y_h (Y_c) is the state after its last step (0 for a length of 0), as onnxruntime's
  lens = ctx.ints(seq_lens) if seq_lens is not None else []
  if any(not 0 <= n <= T for n in lens): raise ValueError(f"{kind}: sequence_lens {lens} must lie in 0..{T} (the sequence length)")
  live = Tensor(lens, dtype=dtypes.int32, device=X.device).reshape(N, 1) if lens and any(n != T for n in lens) else None
  nact = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
  names = activations or {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind] * D
  all_acts = _rnn_acts(kind, names, list(activation_alpha or []), list(activation_beta or []))
  cl = (lambda v: v.clip(-clip, clip)) if clip is not None else (lambda v: v)
  G = W.shape[1] // H   # gates: RNN 1, GRU 3 (z r h), LSTM 4 (i o f c)
  ys, hs, cs = [], [], []
  for d in range(D):
    acts = all_acts[d * nact:(d + 1) * nact]   # this direction's f (and g, h): RNN uses f, GRU f g, LSTM f g h
    f, g, hact = acts[0], acts[min(1, nact - 1)], acts[nact - 1]
    w, r = W[d], R[d]
    b = B[d] if B is not None else Tensor.zeros(2 * G * H, dtype=X.dtype, device=X.device)
    wb, rb = b[:G * H], b[G * H:]
    h = h0[d] if h0 is not None else Tensor.zeros(N, H, dtype=X.dtype, device=X.device)
    c = c0[d] if c0 is not None else Tensor.zeros(N, H, dtype=X.dtype, device=X.device)
    p = P[d] if P is not None else Tensor.zeros(3 * H, dtype=X.dtype, device=X.device)
    xw = X @ w.T + wb   # [seq, batch, G*H]: the input's part of every step at once
    out = []
    for t in (range(T) if direction == "forward" or (direction == "bidirectional" and d == 0) else range(T - 1, -1, -1)):
      cn = c
      if kind == "RNN": hn = f(cl(xw[t] + h @ r.T + rb))
      elif kind == "GRU":
        hr = h @ r.T
        z, rg = f(cl(xw[t, :, :H] + hr[:, :H] + rb[:H])), f(cl(xw[t, :, H:2 * H] + hr[:, H:2 * H] + rb[H:2 * H]))
        hh = xw[t, :, 2 * H:] + (rg * (hr[:, 2 * H:] + rb[2 * H:]) if linear_before_reset else (rg * h) @ r[2 * H:].T + rb[2 * H:])
        hn = (1 - z) * g(cl(hh)) + z * h
      else:
        gt = xw[t] + h @ r.T + rb
        i = f(cl(gt[:, :H] + p[:H] * c))
        fg = 1 - i if input_forget else f(cl(gt[:, 2 * H:3 * H] + p[2 * H:] * c))
        cn = fg * c + i * g(cl(gt[:, 3 * H:]))
        hn = f(cl(gt[:, H:2 * H] + p[H:2 * H] * cn)) * hact(cn)
      if live is None: h, c = hn, cn
      else:
        run = live > t
        h, c, hn = run.where(hn, h), run.where(cn, c), run.where(hn, 0)
      out.append(hn)
    if direction == "reverse" or (direction == "bidirectional" and d == 1): out = out[::-1]
    if live is not None: h, c = (live > 0).where(h, 0), (live > 0).where(c, 0)   # (a length of 0: zero states, as onnxruntime's)
    ys.append(Tensor.stack(*out))
    hs.append(h)
    cs.append(c)
  Y, Yh, Yc = Tensor.stack(*ys, dim=1), Tensor.stack(*hs), Tensor.stack(*cs)   # [seq, dirs, batch, hidden], [dirs, batch, hidden]
  if layout == 1: Y, Yh, Yc = Y.permute(2, 0, 1, 3), Yh.transpose(0, 1), Yc.transpose(0, 1)
  return (Y, Yh, Yc) if kind == "LSTM" else (Y, Yh)
onnx_ops.update({k: functools.partial(_recurrent, k) for k in ("RNN", "GRU", "LSTM")})

# ---- signal processing: DFT as a matmul with a twiddle matrix built in float64 on the host (exact angles: 2*pi*((j*k) mod n)/n) ----
def _dft_core(x: Tensor, n: int, ax: int, inverse: bool, onesided: bool) -> Tensor:
  # x [..., 1|2] (real, or real and imaginary parts in the last dim), transformed along ax: forward [..., K, 2] (K = n, or n//2+1
  # when onesided); inverse [..., n, 2] scaled by 1/n, or with onesided numpy's irfft (the first n//2+1 bins of a Hermitian
  # spectrum -> n real values [..., n, 1]). The input is cropped or zero-padded to the bins used, as numpy's fft(x, n) does
  if x.shape[-1] not in (1, 2): raise ValueError(f"DFT: the last dim is {x.shape[-1]}, not 1 (real) or 2 (complex)")
  if not 0 <= ax < x.ndim - 1: raise ValueError(f"DFT: axis {ax} is not a signal axis of a {x.ndim}-d input (the last dim holds real, imag)")
  if n < 1: raise ValueError(f"DFT: dft_length {n} must be >= 1")
  cplx, d = x.shape[-1] == 2, x.ndim
  cdt = x.dtype if x.dtype in (dtypes.float32, dtypes.float64) else dtypes.float32   # (half types and ints accumulate in float32)
  perm = [i for i in range(d - 1) if i != ax] + [d - 1, ax]   # the signal axis last, the (re, im) dim before it
  xm = x.cast(cdt).permute(perm)
  m = min(x.shape[ax], n // 2 + 1 if inverse and onesided else n)
  xm = xm.shrink(tuple((0, m) if i == d - 1 else None for i in range(d)))
  K = n // 2 + 1 if onesided and not inverse else n
  th = 2 * np.pi * ((np.arange(m)[:, None] * np.arange(K)[None, :]) % n) / n
  c, s = np.cos(th), np.sin(th) * (1 if inverse else -1)
  if inverse:
    c, s = c / n, s / n
    if onesided:   # irfft: bins 1..ceil(n/2)-1 stand for themselves and their mirror; DC's and (even n) Nyquist's imaginary parts drop out
      w = np.where((np.arange(m) == 0) | (2 * np.arange(m) == n), 1.0, 2.0)[:, None]
      c, s = c * w, s * w
  # [re | im] @ [[c, s], [-s, c]] = [re c - im s | im c + re s]; irfft keeps the real half
  mat = np.concatenate([np.concatenate([c, s], 1), np.concatenate([-s, c], 1)], 0) if cplx else np.concatenate([c, s], 1)
  if inverse and onesided: mat = mat[:, :K]
  out = xm.flatten(-2) @ Tensor(mat.astype(np.dtype(cdt.fmt)), device=x.device)
  out = out.reshape(*out.shape[:-1], -1, K).transpose(-1, -2)   # [..., K, 2 | 1]
  now = perm[:-2] + [ax, d - 1]   # the input dim each output dim stands for
  return out.permute([now.index(i) for i in range(d)]).cast(x.dtype)
def _dft(ctx: _Ctx, x: Tensor, dft_length: Tensor | None = None, axis_in: Tensor | None = None, axis: int = 1, inverse: int = 0, onesided: int = 0) -> Tensor:
  # opset 17 and 19 take the axis as an attribute (default 1), opset 20 as an input (default -2)
  ax = (ctx.ints(axis_in)[0] if axis_in is not None else -2) if ctx.opset >= 20 else axis
  ax = _axis(ax, x.ndim)
  n = ctx.ints(dft_length)[0] if dft_length is not None else 2 * (x.shape[ax] - 1) if inverse and onesided else x.shape[ax]
  return _dft_core(x, n, ax, bool(inverse), bool(onesided))
def _stft(ctx: _Ctx, x: Tensor, frame_step: Tensor, window: Tensor | None = None, frame_length: Tensor | None = None, onesided: int = 1) -> Tensor:
  # signal [batch, length, 1|2] -> [batch, frames, bins, 2]: frames of frame_length every frame_step (the last partial one dropped), windowed
  step = ctx.ints(frame_step)[0]
  fl = ctx.ints(frame_length)[0] if frame_length is not None else window.shape[0] if window is not None else x.shape[1]
  if window is not None and window.shape[0] != fl: raise ValueError(f"STFT: the window has {window.shape[0]} values, frame_length is {fl}")
  if not 0 < fl <= x.shape[1]: raise ValueError(f"STFT: frame_length {fl} must be in 1..{x.shape[1]} (the signal's length)")
  frames = x.unfold(1, fl, step).transpose(-1, -2)   # [batch, frames, frame_length, 1|2]
  if window is not None: frames = frames * window.cast(x.dtype).reshape(fl, 1)
  return _dft_core(frames, fl, 2, False, bool(onesided))
def _mel_weight_matrix(ctx: _Ctx, num_mel_bins: Tensor, dft_length: Tensor, sample_rate: Tensor, lower_edge_hertz: Tensor, upper_edge_hertz: Tensor,
                       output_datatype: int = 1) -> Tensor:
  """Triangular filters [dft_length//2+1, num_mel_bins] from mel-spaced edges; computed on the host from the scalar inputs (a constant)."""
  nmel, n, sr = int(ctx.ints(num_mel_bins)[0]), int(ctx.ints(dft_length)[0]), ctx.val(sample_rate).reshape(())
  lo, hi = ctx.val(lower_edge_hertz).reshape(()), ctx.val(upper_edge_hertz).reshape(())
  mel = lambda hz: 2595 * np.log1p(hz / 700) / np.log(10)
  lo_mel = mel(lo)
  edges = np.arange(nmel + 2) * ((mel(hi) - lo_mel) / (nmel + 2)) + lo_mel   # (the reference's step: the range over nmel+2, not nmel+1)
  edges = (((n + 1) * (700 * np.expm1(edges / 2595 * np.log(10)))) // sr).astype(np.int64)   # mel -> Hz -> the spectrogram bin below
  j = np.arange(n // 2 + 1)[:, None]
  l, c, h = edges[None, :-2], edges[None, 1:-1], edges[None, 2:]
  up = np.where(c > l, (j - l) / np.maximum(c - l, 1), 1.0)
  out = np.where((j >= l) & (j <= c), up, 0.0)
  out = np.where((j >= c) & (j < h), (h - j) / np.maximum(h - c, 1), out)
  return ctx.const(out.astype(np.float32 if dtype_of(output_datatype) == dtypes.bfloat16 else np.dtype(dtype_of(output_datatype).fmt)))
onnx_ops.update({"DFT": _dft, "STFT": _stft, "MelWeightMatrix": _mel_weight_matrix})

# ---- detection ----
def _nms(ctx: _Ctx, boxes: Tensor, scores: Tensor, max_output_boxes_per_class: Tensor | None = None, iou_threshold: Tensor | None = None,
         score_threshold: Tensor | None = None, center_point_box: int = 0) -> Tensor:
  """NonMaxSuppression: selected_indices [num_selected, 3] (batch, class, box), per batch and class the boxes by falling score (ties: the
  lower index first) that overlap no box already kept by IoU > iou_threshold, at most max_output_boxes_per_class (absent: 0, none).
  How many are kept depends on the values, so the inputs are realized and the selection runs on the host in numpy, in the boxes'
  own dtype (onnx's reference's arithmetic, which decides IoUs that land exactly on the threshold); the result is a constant."""
  if center_point_box not in (0, 1): raise ValueError(f"NonMaxSuppression: center_point_box {center_point_box} is not 0 ([y1, x1, y2, x2]) or 1 ([xc, yc, w, h])")
  b, s = ctx.val(boxes), ctx.val(scores)
  keep_max = max(int(ctx.val(max_output_boxes_per_class).reshape(-1)[0]), 0) if max_output_boxes_per_class is not None else 0
  iou_thr = ctx.val(iou_threshold).reshape(-1)[0] if iou_threshold is not None else 0
  score_thr = ctx.val(score_threshold).reshape(-1)[0] if score_threshold is not None else None
  if center_point_box:
    hw, hh = b[..., 2] / 2, b[..., 3] / 2
    x0, x1, y0, y1 = b[..., 0] - hw, b[..., 0] + hw, b[..., 1] - hh, b[..., 1] + hh
  else:   # corners in either order
    x0, x1, y0, y1 = np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3]), np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2])
  area = (x1 - x0) * (y1 - y0)
  out = []
  for n, c in itertools.product(range(s.shape[0]), range(s.shape[1])):
    cand = np.arange(s.shape[2]) if score_thr is None else np.nonzero(s[n, c] > score_thr)[0]
    kept: list[int] = []
    for i in cand[np.argsort(-s[n, c, cand], kind="stable")]:   # (stable: equal scores keep the lower index first)
      if len(kept) >= keep_max: break
      k = np.array(kept, dtype=np.int64)
      ix0, ix1, iy0, iy1 = np.maximum(x0[n, i], x0[n, k]), np.minimum(x1[n, i], x1[n, k]), np.maximum(y0[n, i], y0[n, k]), np.minimum(y1[n, i], y1[n, k])
      inter = (ix1 - ix0) * (iy1 - iy0)
      union = area[n, i] + area[n, k] - inter
      ok = (ix1 > ix0) & (iy1 > iy0) & (inter > 0) & (area[n, i] > 0) & (area[n, k] > 0) & (union > 0)   # (degenerate boxes suppress nothing)
      with np.errstate(divide="ignore", invalid="ignore"):
        if not (ok & (inter / np.where(ok, union, 1) > iou_thr)).any(): kept.append(int(i))
    out += [(n, c, i) for i in kept]
  return ctx.const(np.array(out, dtype=np.int64).reshape(-1, 3))
onnx_ops.update({"NonMaxSuppression": _nms})
def _roi_axis(start: np.generic, bin_sz: np.generic, grid: int, out: int, size: int) -> tuple[np.ndarray, ...]:
  # one axis of RoiAlign's sample points [out, grid] (bin p, sample i at start + p*bin + (i+0.5)*bin/grid), in the rois' dtype as onnx's
  # reference: in-range mask, low and high pixel and their weights, the coordinate clamped at 0 and held at the last pixel
  dt = start.dtype
  v = start + np.arange(out, dtype=dt)[:, None] * bin_sz + (np.arange(grid, dtype=dt)[None, :] + dt.type(0.5)) * bin_sz / dt.type(grid)
  ok = (v >= -1.0) & (v <= size)
  v = np.maximum(v, dt.type(0))
  lo = v.astype(np.int64)
  last = lo >= size - 1
  lo, v = np.where(last, size - 1, lo), np.where(last, dt.type(size - 1), v)
  frac = (v - lo.astype(dt)).astype(dt)
  return ok, lo, np.where(last, size - 1, lo + 1), dt.type(1) - frac, frac
def _roi_align(ctx: _Ctx, x: Tensor, rois: Tensor, batch_indices: Tensor, coordinate_transformation_mode: str | None = None, mode: str = "avg",
               output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0, spatial_scale: float = 1.0) -> Tensor:
  """RoiAlign: [num_rois, C, output_height, output_width], each bin the average (or max) of bilinear samples of x on a grid inside it.
  rois and batch_indices are read on the host: with sampling_ratio 0 each roi's sample grid is ceil(its size / the output size), a
  shape that depends on the values; the sample pixels and weights are computed there (onnx's reference's float32 arithmetic) and x is
  gathered and weighted on the device. Max mode is onnx's (and onnxruntime's): the max over samples of the max of the 4 weighted corners."""
  ctm = coordinate_transformation_mode or ("half_pixel" if ctx.opset >= 16 else "output_half_pixel")   # (opset 10 had only the latter)
  if ctm not in ("half_pixel", "output_half_pixel"): raise ValueError(f"RoiAlign: coordinate_transformation_mode {ctm!r} is not half_pixel or output_half_pixel")
  if mode not in ("avg", "max"): raise ValueError(f"RoiAlign: mode {mode!r} is not avg or max")
  N, C, H, W = x.shape
  r = ctx.val(rois)
  r = r.astype(np.float32) if r.dtype.kind != "f" or r.dtype.itemsize < 4 else r
  f = r.dtype.type   # (the reference's arithmetic: numpy scalars of the rois' dtype, python numbers taken as that dtype)
  bidx = ctx.ints(batch_indices)
  if any(not 0 <= b < N for b in bidx): raise ValueError(f"RoiAlign: batch_indices {bidx} must be in 0..{N - 1}")
  PH, PW, R = output_height, output_width, len(bidx)
  samples = []
  for k in range(R):
    x0, y0, x1, y1 = r[k] * f(spatial_scale) - f(0.5 if ctm == "half_pixel" else 0)
    rw, rh = x1 - x0, y1 - y0
    if ctm == "output_half_pixel": rw, rh = np.maximum(rw, f(1)), np.maximum(rh, f(1))   # (malformed rois become 1x1)
    bh, bw = rh / f(PH), rw / f(PW)
    gh, gw = (sampling_ratio, sampling_ratio) if sampling_ratio > 0 else (max(int(np.ceil(bh)), 0), max(int(np.ceil(bw)), 0))
    oky, ylo, yhi, hy, ly = _roi_axis(y0, bh, gh, PH, H)
    okx, xlo, xhi, hx, lx = _roi_axis(x0, bw, gw, PW, W)
    # [PH, gh, PW, gw, 4 corners]: pixel index (this roi's image) and weight; samples outside the map weigh 0
    ok = oky[:, :, None, None] & okx[None, None]
    pos = np.stack([ys[:, :, None, None] * W + xs[None, None] for ys, xs in ((ylo, xlo), (ylo, xhi), (yhi, xlo), (yhi, xhi))], -1)
    wt = np.stack([a[:, :, None, None] * b[None, None] for a, b in ((hy, hx), (hy, lx), (ly, hx), (ly, lx))], -1) * ok[..., None]
    pos = (pos * ok[..., None] + bidx[k] * H * W).transpose(0, 2, 1, 3, 4).reshape(PH, PW, gh * gw, 4)
    samples.append((pos, wt.transpose(0, 2, 1, 3, 4).reshape(PH, PW, gh * gw, 4), max(gh * gw, 1)))
  S = max([p.shape[2] for p, _, _ in samples] + [1])   # rois with fewer samples are padded with weight-0, masked-out ones
  pad = lambda a, v: np.concatenate([a, np.full((PH, PW, S - a.shape[2], 4), v, a.dtype)], 2)
  idx = np.stack([pad(p, 0) for p, _, _ in samples]) if R else np.zeros((0, PH, PW, S, 4), np.int64)
  cdt = x.dtype if x.dtype == dtypes.float64 else dtypes.float32
  wts = np.stack([pad(w, 0) for _, w, _ in samples]).astype(np.dtype(cdt.fmt)) if R else np.zeros((0, PH, PW, S, 4), np.dtype(cdt.fmt))
  xf = x.cast(cdt).reshape(N, C, H * W).permute(1, 0, 2).reshape(C, N * H * W)
  vals = xf.gather(1, Tensor(idx.reshape(1, -1), device=x.device).expand(C, -1)).reshape(C, R, PH, PW, S, 4).permute(1, 0, 2, 3, 4, 5)
  wv = vals * Tensor(wts, device=x.device).unsqueeze(1)
  if mode == "avg": out = wv.sum((4, 5)) / Tensor(np.array([n for _, _, n in samples], np.dtype(cdt.fmt)).reshape(R, 1, 1, 1), device=x.device)
  else:
    have = np.stack([np.arange(S) < p.shape[2] for p, _, _ in samples]).reshape(R, 1, 1, 1, S) if R else np.zeros((0, 1, 1, 1, S), bool)
    out = Tensor(have, device=x.device).where(wv.max(5), -math.inf).max(4)
    out = Tensor(have.any(-1), device=x.device).where(out, 0)   # (a roi with no samples is 0)
  return out.cast(x.dtype)
onnx_ops.update({"RoiAlign": _roi_align})

domain_ops: dict[str, dict[str, Callable[..., Any]]] = {
  "ai.onnx.ml": {"Binarizer": lambda ctx, x, threshold=0.0: (x > threshold).cast(x.dtype), "ArrayFeatureExtractor": _array_feature_extractor},
  "ai.onnx.preview.training": {"Adagrad": _adagrad, "Momentum": _momentum, "Adam": _adam},
}
def _op(n: Any) -> Callable[..., Any] | None:
  # the default domain's table, or another domain's
  return onnx_ops.get(n.op_type) if n.domain in ("", "ai.onnx") else domain_ops.get(n.domain, {}).get(n.op_type)
# ops that take their host-side settings as attributes before an opset and as inputs from it (names the op's optional inputs)
_MULTI_OUT = {"Split", "MaxPool", "BatchNormalization", "LayerNormalization", "Dropout", "SoftmaxCrossEntropyLoss", "Attention"}

def _attr(a: Any) -> Any:
  onnx = _onnx()
  v = onnx.helper.get_attribute_value(a)
  if a.type == onnx.AttributeProto.TENSOR: return _to_numpy(v)
  if isinstance(v, bytes): return v.decode()
  if a.type == onnx.AttributeProto.STRINGS: return [s.decode() for s in v]
  return v

class OnnxRunner:
  """Runs an ONNX model: `OnnxRunner(model)(inputs) -> {output name: Tensor}`. `model` is a path, the file's bytes, an
  onnx.ModelProto, or a Tensor of the file's bytes. Inputs are Tensors or numpy arrays by graph input name; the outputs
  are lazy Tensors (nothing runs until they are realized), so a call can be wrapped in TinyJit."""
  def __init__(self, model: Any, device: str | None = None, debug: int | bool = False):
    onnx = _onnx()
    if isinstance(model, Tensor): model = bytes(model.numpy().tobytes())
    from google.protobuf.message import DecodeError
    name = "<ONNX model bytes>" if isinstance(model, (bytes, bytearray)) else str(model)
    try:
      if isinstance(model, (bytes, bytearray)): model = onnx.load_from_string(bytes(model))
      elif not isinstance(model, onnx.ModelProto): model = onnx.load(str(model))
    except DecodeError as e: raise ValueError(f"{name}: not an ONNX model (protobuf: {e})") from None   # (protobuf's error names no file)
    self.model, self.device, self.debug = model, device, int(debug)
    self.opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    self.opset = self.opsets.get("", 1)
    self._check(model.graph)
    _check_edges(model.graph, set())
    self.initializers = {t.name: self._init_tensor(t) for t in model.graph.initializer}
    self.host = {n: v for n, (t, v) in self.initializers.items() if v is not None}
    inits = set(self.initializers)
    self.inputs = {i.name: i for i in model.graph.input if i.name not in inits}
    self.outputs = [o.name for o in model.graph.output]
    # public tinygrad's names: each input's declared type (examples' get_example_inputs builds inputs from it), the outputs
    self.graph_inputs = {name: _value_of(i.type) for name, i in self.inputs.items()}
    self.graph_outputs = tuple(self.outputs)

  def _init_tensor(self, t: Any) -> tuple[Tensor, np.ndarray | None]:
    arr = _to_numpy(t)
    ten = _tensor(arr, self.device, dtype_of(t.data_type)).realize()
    # small integer initializers (shapes, axes, pads) stay readable on the host without a device round trip
    return ten, (arr if arr.dtype.kind in "iub" and arr.size <= 4096 else None)

  def _check(self, g: Any) -> None:
    bad = []
    for n in g.node:
      if _op(n) is None:
        bad.append(f"{n.op_type} (node {n.name or '<unnamed>'}{', domain ' + n.domain if n.domain else ''})")
      for a in n.attribute:
        if a.type == _onnx().AttributeProto.GRAPH: self._check(a.g)
    if bad: raise NotImplementedError(f"ONNX model (opset {self.opset}) uses operators tinygrad.nn.onnx does not support: {', '.join(bad)}; the supported ones are "
                                      "the keys of tinygrad.nn.onnx.onnx_ops (and of domain_ops)")

  def _input(self, name: str, v: Any) -> Tensor | None:
    spec = self.inputs[name].type
    if spec.HasField("optional_type") and spec.optional_type.elem_type.HasField("tensor_type"):   # an optional tensor: the tensor or None
      if v is None: return None
      spec = spec.optional_type.elem_type
    if not spec.HasField("tensor_type"): raise NotImplementedError(f"input {name!r}: only tensor inputs are supported (not sequences, maps or optionals)")
    dt = dtype_of(spec.tensor_type.elem_type)
    t = v if isinstance(v, Tensor) else _tensor(np.asarray(v), self.device)
    if t.dtype != dt: t = t.cast(dt)
    if spec.tensor_type.HasField("shape"):
      dims = spec.tensor_type.shape.dim
      want = [d.dim_value if d.HasField("dim_value") else None for d in dims]
      if len(want) != t.ndim or any(w is not None and w != s for w, s in zip(want, t.shape)):
        raise ValueError(f"input {name!r} has shape {t.shape}, the model declares {tuple(w if w is not None else d.dim_param or '?' for w, d in zip(want, dims))}")
    return t

  def __call__(self, inputs: dict[str, Any], debug: int | bool | None = None) -> dict[str, Tensor]:
    if missing := [n for n in self.inputs if n not in inputs]: raise ValueError(f"OnnxRunner: missing inputs {missing}; the model's inputs: {list(self.inputs)}")
    if extra := [n for n in inputs if n not in self.inputs]: raise ValueError(f"OnnxRunner: unknown inputs {extra}; the model's inputs: {list(self.inputs)}")
    ctx = _Ctx(self.opset, self.device)
    values: dict[str, Tensor] = {}
    for n, (t, v) in self.initializers.items():
      values[n] = t
      if v is not None: ctx.set(t, v)
    for n, v in inputs.items():
      if (inp := self._input(n, v)) is not None: values[n] = inp   # (an empty optional is absent, as an omitted input: None to its ops)
    dbg = self.debug if debug is None else int(debug)
    self._run_graph(self.model.graph, values, ctx, dbg)
    return {o: values[o] for o in self.outputs}

  def _run_graph(self, g: Any, values: dict[str, Tensor], ctx: _Ctx, debug: int = 0) -> dict[str, Tensor]:
    for t in g.initializer:
      arr = _to_numpy(t)
      values[t.name] = ctx.set(_tensor(arr, self.device, dtype_of(t.data_type)), arr)
    for num, n in enumerate(g.node):
      args = [values.get(i) if i else None for i in n.input]
      attrs = {a.name: _attr(a) for a in n.attribute}
      if n.op_type in _MULTI_OUT: attrs["_nout"] = len(n.output)
      if n.op_type == "If": attrs.update(_runner=self, _scope=values)
      fn = _op(n)
      assert fn is not None   # (_check rejected the model otherwise)
      try: ret = fn(ctx, *_positional(n.op_type, ctx.opset, args), **attrs)
      except Exception as e:
        raise type(e)(f"ONNX node {num} {n.op_type} ({n.name or '<unnamed>'}, opset {ctx.opset}): {e}") if type(e).__init__ is BaseException.__init__ \
          or isinstance(e, (ValueError, TypeError, NotImplementedError, RuntimeError)) else e
      outs = ret if isinstance(ret, tuple) else (ret,)
      for name, t in zip(n.output, outs):
        if name: values[name] = t
      if debug: print(f"{num:4d} {n.op_type:24s} {[a.shape if a is not None else None for a in args]} -> {[o.shape for o in outs]}")
    return values

def _check_edges(g: Any, outer: set[str]) -> None:
  """Every node input is a graph input, an initializer, an outer graph's value or an earlier node's output, and every graph
  output is produced: a ValueError naming the node and the edge (a bare KeyError in the middle of a run before)."""
  avail = outer | {i.name for i in g.input} | {t.name for t in g.initializer}
  later = {o: (k, n) for k, n in enumerate(g.node) for o in n.output if o}
  where = lambda k, n: f"ONNX node {k} {n.op_type} ({n.name or '<unnamed>'})"
  for num, n in enumerate(g.node):
    for i in n.input:
      if not i or i in avail: continue
      if i in later:
        k, m = later[i]
        why = "its own output" if k == num else f"the output of {where(k, m)}, which comes after it"
        raise ValueError(f"{where(num, n)}: input {i!r} is {why}: the graph has a cycle or is not in topological order, as ONNX requires")
      raise ValueError(f"{where(num, n)}: input {i!r} is not a graph input, an initializer or any node's output (a missing edge)")
    for a in n.attribute:
      if a.type == _onnx().AttributeProto.GRAPH: _check_edges(a.g, avail)
    avail |= {o for o in n.output if o}
  if lost := [o.name for o in g.output if o.name not in avail]:
    raise ValueError(f"ONNX graph {g.name or '<unnamed>'}: outputs {lost} are produced by no node and are no input or initializer (dangling edges)")

def _positional(op: str, opset: int, args: list[Tensor | None]) -> list[Tensor | None]:
  # inputs that became optional: pass them positionally as they are; trailing missing inputs are simply absent
  while args and args[-1] is None: args = args[:-1]
  return args

# ---- the command line: python -m tinygrad.nn.onnx MODEL.onnx ----
def _random_input(spec: Any, dims: dict[str, int], rng: np.random.Generator) -> np.ndarray:
  tt = spec.type.tensor_type
  shape = []
  for d in tt.shape.dim:
    if d.HasField("dim_value"): shape.append(d.dim_value)
    elif d.dim_param in dims: shape.append(dims[d.dim_param])
    else: raise ValueError(f"input {spec.name!r}: dim {d.dim_param or '?'!r} is symbolic; give it with --dim {d.dim_param or 'NAME'}=VALUE")
  dt = dtype_of(tt.elem_type)
  if dtypes.is_float(dt): return rng.standard_normal(shape).astype(np.float32 if dt == dtypes.bfloat16 else np.dtype(dt.fmt or "f"))
  if dt == dtypes.bool: return rng.integers(0, 2, shape).astype(bool)
  return rng.integers(0, 10, shape).astype(np.dtype(dt.fmt))

def _times(fn: Callable[[], Any], n: int) -> list[float]:
  out = []
  for _ in range(n):
    st = time.perf_counter()
    fn()
    out.append(time.perf_counter() - st)
  return out

def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(prog="python -m tinygrad.nn.onnx", description="Run an ONNX model on random inputs of its declared shapes.")
  p.add_argument("model", help="the .onnx file")
  p.add_argument("--device", default=None, help="device to run on (default: Device.DEFAULT)")
  p.add_argument("--benchmark", type=int, default=0, metavar="N", help="run N jitted steps and print the steady-state ms per run")
  p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE", help="a value for a symbolic input dim (repeatable)")
  p.add_argument("--compare-onnxruntime", action="store_true", help="check the outputs against onnxruntime")
  p.add_argument("--seed", type=int, default=0)
  a = p.parse_args(argv)
  dims = {}
  for d in a.dim:
    k, _, v = d.partition("=")
    if not v.isdigit(): p.error(f"--dim {d!r}: expected NAME=INT, the INT 0 or more")
    dims[k] = int(v)
  runner = OnnxRunner(a.model, device=a.device)
  rng = np.random.default_rng(a.seed)
  feeds = {n: _random_input(s, dims, rng) for n, s in runner.inputs.items()}
  outs = {k: v.numpy() for k, v in runner(feeds).items()}
  same = True
  for k, v in outs.items(): print(f"{k}: shape {v.shape} dtype {v.dtype}")
  if a.benchmark:
    from tinygrad.engine.jit import TinyJit
    # a jitted call replays the captured kernels through the device's graph runner (one native call on the CPU)
    jf = TinyJit(lambda **kw: {k: v.realize() for k, v in runner(kw).items()})
    tins = {n: Tensor(v, device=a.device).realize() for n, v in feeds.items()}
    last: dict[str, np.ndarray] = {}
    def ours() -> None:
      for k, v in jf(**tins).items(): last[k] = v.numpy()
    times = _times(ours, max(a.benchmark, 3))[2:]   # past the JIT's run and capture calls
    # the replays compute what the plain run did (a fast wrong answer is no figure)
    same = all(np.allclose(last[k], v, rtol=1e-5, atol=1e-6, equal_nan=True) for k, v in outs.items())
    print(f"steady-state: {min(times)*1e3:.3f} ms per run (min of {len(times)} jitted runs, median {statistics.median(times)*1e3:.3f}); "
          f"replays' outputs {'match' if same else 'DIFFER from'} the plain run's; load average {os.getloadavg()[0]:.2f}")
    try: import onnxruntime as ort
    except ImportError: ort = None
    if ort is not None:   # the same runs through onnxruntime, for the ratio
      sess = ort.InferenceSession(runner.model.SerializeToString(), providers=["CPUExecutionProvider"])
      rt = _times(lambda: sess.run(None, feeds), max(a.benchmark, 3))[2:]
      print(f"onnxruntime: {min(rt)*1e3:.3f} ms per run (median {statistics.median(rt)*1e3:.3f}); tinygrad/onnxruntime "
            f"{min(times)/min(rt):.2f}x (medians {statistics.median(times)/statistics.median(rt):.2f}x)")
  if a.compare_onnxruntime:
    try: import onnxruntime as ort
    except ImportError:
      print("onnxruntime is not installed: pip install onnxruntime", file=sys.stderr)
      return 2
    sess = ort.InferenceSession(runner.model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    bad = 0
    for k, v in outs.items():
      # the dtype and shape first: allclose alone broadcasts shapes and ignores dtypes (an int32 output computed as float32 "matched")
      if v.dtype != ref[k].dtype or v.shape != ref[k].shape:
        print(f"{k}: DIFFERS from onnxruntime (ours {v.dtype}{list(v.shape)}, onnxruntime {ref[k].dtype}{list(ref[k].shape)})")
        bad += 1
        continue
      ok = np.allclose(v, ref[k], rtol=1e-3, atol=1e-4)
      err = float(np.max(np.abs(v.astype(np.float64) - ref[k].astype(np.float64)))) if v.size else 0.0
      print(f"{k}: {'matches' if ok else 'DIFFERS from'} onnxruntime (max abs diff {err:.3g})")
      bad += not ok
    return 1 if bad or not same else 0
  return 0 if same else 1

if __name__ == "__main__": sys.exit(main())
