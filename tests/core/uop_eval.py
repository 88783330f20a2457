"""A numpy-vectorized evaluator for kernel-level ALU graphs: every node computed at its dtype's width, C semantics."""
from __future__ import annotations
import numpy as np
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes, to_numpy

def _c_idiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  # C division truncates toward zero; numpy's // floors. Division by zero gives 0 (like exec_alu).
  safe = np.where(b == 0, np.ones_like(b), b)
  q = a // safe
  q = q + ((q * safe != a) & ((a < 0) != (safe < 0))).astype(a.dtype)
  return np.where(b == 0, np.zeros_like(a), q)

def _shift_amount(a: np.ndarray, b: np.ndarray) -> np.ndarray: return b.astype(a.dtype)

def _alu(op: Ops, dt: DType, s: list[np.ndarray]) -> np.ndarray:
  isf, isb = dtypes.is_float(dt), dtypes.is_bool(dt)
  if op is Ops.ADD: return s[0] + s[1]
  if op is Ops.SUB: return s[0] - s[1]
  if op is Ops.MUL: return (s[0] & s[1]) if isb else s[0] * s[1]
  if op is Ops.NEG: return np.logical_not(s[0]) if isb else -s[0]
  if op is Ops.FDIV: return s[0] / s[1]
  if op is Ops.RECIPROCAL: return np.ones_like(s[0]) / s[0]
  if op is Ops.IDIV: return _c_idiv(s[0], s[1])
  if op is Ops.MOD: return s[0] - _c_idiv(s[0], s[1]) * s[1]
  if op is Ops.MAX: return np.maximum(s[0], s[1])
  if op is Ops.CMPLT: return s[0] < s[1]
  if op is Ops.CMPNE: return s[0] != s[1]
  if op is Ops.CMPEQ: return s[0] == s[1]
  if op is Ops.AND: return np.logical_and(s[0], s[1]) if isb else s[0] & s[1]
  if op is Ops.OR: return np.logical_or(s[0], s[1]) if isb else s[0] | s[1]
  if op is Ops.XOR: return np.logical_xor(s[0], s[1]) if isb else s[0] ^ s[1]
  if op is Ops.SHL: return np.left_shift(s[0], _shift_amount(s[0], s[1]))
  if op is Ops.SHR: return np.right_shift(s[0], _shift_amount(s[0], s[1]))  # arithmetic on signed, logical on unsigned
  if op is Ops.WHERE: return np.where(s[0], s[1], s[2])
  if op is Ops.MULACC: return s[0] * s[1] + s[2]
  if op is Ops.EXP2: return np.exp2(s[0])
  if op is Ops.LOG2: return np.log2(s[0])
  if op is Ops.SIN: return np.sin(s[0])
  if op is Ops.SQRT: return np.sqrt(s[0])
  if op is Ops.TRUNC: return np.trunc(s[0])
  if op is Ops.POW: return np.power(s[0], s[1])
  if op is Ops.LDEXP: return np.ldexp(s[0], s[1])
  raise NotImplementedError(f"uop_eval: no numpy rule for {op} on {dt} (float={isf})")

def _cast(x: np.ndarray, dt: DType) -> np.ndarray:
  npdt = to_numpy(dt)
  if dtypes.is_bool(dt): return x != 0
  if dtypes.is_int(dt) and x.dtype.kind == "f":
    # C truncates; out-of-range values are undefined in C: give 0 so the result is at least deterministic
    t = np.trunc(x)
    ok = np.isfinite(t) & (t >= float(dtypes.min(dt))) & (t <= float(dtypes.max(dt)))
    return np.where(ok, t, 0).astype(npdt)
  return x.astype(npdt)

def uop_eval(out: UOp, inputs: dict[UOp, np.ndarray]) -> np.ndarray:
  """Evaluate the graph under `out` on arrays: `inputs` maps leaf UOps (DEFINE_VAR or any other leaf) to arrays."""
  vals: dict[UOp, np.ndarray] = {}
  shape = np.broadcast_shapes(*(np.shape(v) for v in inputs.values())) if inputs else ()
  with np.errstate(all="ignore"):
    for n in out.toposort():
      if n in inputs: vals[n] = np.asarray(inputs[n], dtype=to_numpy(n.dtype))
      elif n.op is Ops.CONST: vals[n] = np.full(shape, n.arg, dtype=to_numpy(n.dtype))
      elif n.op is Ops.CAST: vals[n] = _cast(vals[n.src[0]], n.dtype)
      elif n.op is Ops.BITCAST: vals[n] = vals[n.src[0]].view(to_numpy(n.dtype))
      else:
        r = _alu(n.op, n.dtype, [vals[s] for s in n.src])
        vals[n] = np.asarray(r).astype(to_numpy(n.dtype), copy=False)
  return vals[out]
