# mypy: disable-error-code="misc"
"""Tensor methods, elementwise ops: arithmetic, bitwise, comparisons, Python operators, unary math and activations."""
from __future__ import annotations
import functools, math
from typing import TYPE_CHECKING, Any, Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes, ConstType, least_upper_dtype, least_upper_float, truncate, truncate_float, OPMATH_F32, uint_of_size, int_of_size
from tinygrad.mixin.common import _is_scalar, _is_np_scalar, _broadcast_shape, ArgumentError, IntDivisionByZeroError, OpDTypeError
if TYPE_CHECKING: from tinygrad.tensor import Tensor



def _renderer_of(device: str | tuple[str, ...]) -> Any:
  from tinygrad.device import Device, DeviceError
  try: return Device[device if isinstance(device, str) else device[0]].renderer
  except DeviceError: return None   # an unopenable device: the portable form (realizing it raises the reason)
def _exp_via_exp2(device: str | tuple[str, ...]) -> bool:
  """Whether exp on `device` uses its renderer's EXP2 (Renderer.exp_via_exp2, with EXP2 in code_for_op) over a polynomial."""
  return bool(getattr(ren := _renderer_of(device), "exp_via_exp2", False)) and Ops.EXP2 in ren.code_for_op
def _keeps_float_order(device: str | tuple[str, ...]) -> bool:
  """Whether `device`'s compiler evaluates float arithmetic as written (Renderer.keeps_float_order: no reassociation)."""
  return bool(getattr(_renderer_of(device), "keeps_float_order", False))
def _has_ldexp(device: str | tuple[str, ...]) -> bool:
  """Whether `device`'s renderer has LDEXP (x * 2**n in one instruction, AVX-512's vscalefps) for exp's 2**n."""
  return (ren := _renderer_of(device)) is not None and Ops.LDEXP in ren.code_for_op

@functools.cache
def _tanh_coeffs(n: int) -> list[float]:
  """tanh x = x * (1 + sum_k c_k x**2k): the first n of c_1.. (-1/3, 2/15, ...), 4**m (4**m - 1) B_2m / (2m)! with m = k+1."""
  from fractions import Fraction
  b = [Fraction(1)]   # Bernoulli numbers B_0.. by their recurrence
  for i in range(1, 2 * n + 3): b.append(-sum((math.comb(i + 1, j) * b[j] for j in range(i)), Fraction(0)) / (i + 1))
  return [float(4**m * (4**m - 1) * b[2 * m] / math.factorial(2 * m)) for m in range(2, n + 2)]

def _fma(a: Tensor, b: Tensor | float, c: Tensor | float) -> Tensor:
  # a*b + c as one MULACC: fused (one rounding) where the renderer has it, else a*b+c (decompositions.py)
  a, b = a._broadcasted(b)
  a, c = a._broadcasted(c)
  b = b._broadcast_to(a.shape)
  return Tensor(UOp(Ops.MULACC, a.dtype, (a.uop, b.uop, c.uop)))

def _opmath(fn: Callable) -> Callable:
  # float16/bfloat16 in, computed in float32 and rounded once, as torch's "opmath": a formula evaluated in 8 or 11 bits
  # loses its argument's digits (bfloat16 x/ln2 inside sigmoid(-12) was 4% off, gelu(-1) 2%)
  @functools.wraps(fn)
  def wrapper(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    if self.dtype in OPMATH_F32: return fn(self.float(), *args, **kwargs).cast(self.dtype)
    return fn(self, *args, **kwargs)
  return wrapper

def _rounds_scalar(t: Tensor, x: Any) -> bool:
  """Whether Python number `x` beside float16/bfloat16/fp8 tensor `t` is one its dtype holds only rounded (0.1; 1e5, past
  float16's 65504). t + x, t - x, t * x and t / x then compute in float32 and round once, as torch's "opmath" (x a float32):
  rounded to the dtype first, half(6e-5) * 1e5 was inf (torch 6.0) and -0.0 * 1e5 NaN. A number the dtype holds exactly
  gives the same bits either way (float32 has more than twice their digits), so x * 2 or x + 1 stays one float16 op."""
  if t.dtype not in OPMATH_F32 or not _is_scalar(x) or isinstance(x, bool): return False
  try: v = float(x)
  except OverflowError: return False   # (an int past float64: inf in both)
  return v == v and truncate_float(v, t.dtype) != v

class ElementwiseMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- elementwise binary ----
  def add(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self + x (with broadcasting and dtype promotion)."""
    if _rounds_scalar(self, x): return self.float().add(x, reverse).cast(self.dtype)
    a, b = self._broadcasted(x, reverse)
    return a._alu(Ops.ADD, b)
  def sub(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self - x (bool - bool is an error, as in numpy and torch)."""
    if _rounds_scalar(self, x): return self.float().sub(x, reverse).cast(self.dtype)
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_bool(a.dtype): raise TypeError("subtracting bool tensors is not supported; use ^ (xor) or logical_not() instead")
    return a._alu(Ops.SUB, b)
  def mul(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self * x."""
    if _rounds_scalar(self, x): return self.float().mul(x, reverse).cast(self.dtype)
    a, b = self._broadcasted(x, reverse)
    return a._alu(Ops.MUL, b)
  def div(self: Tensor, x: Tensor | ConstType, reverse: bool = False, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division (ints promote to float); rounding_mode "trunc" or "floor" rounds the quotient."""
    if rounding_mode == "floor": return self._floordiv(x, reverse)
    if rounding_mode == "trunc":
      a, b = self._broadcasted(x, reverse)
      return a._int_divmod(b, "div")[0] if dtypes.is_int(a.dtype) else (a.detach() / b.detach()).trunc()._zero_grad(a, b)
    if rounding_mode is not None: raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    if _rounds_scalar(self, x): return self.float().div(x, reverse).cast(self.dtype)
    # a true quotient is a float: an int beside an int/bool tensor is a float operand, as torch and numpy take it
    # (uint8_t / -3 is -2.0, int32_t / 2**40 is tiny), not an int that must fit the tensor's dtype
    if _is_scalar(x) and type(x) is int and not dtypes.is_float(self.dtype): x = float(x)
    a, b = self._broadcasted(x, reverse)
    fdt = least_upper_float(a.dtype)
    return a.cast(fdt)._alu(Ops.FDIV, b.cast(fdt))
  def _int_divmod(self: Tensor, y: Tensor, op: str) -> tuple[Tensor, Tensor]:
    """C (truncating) quotient and remainder of ints. A constant 0 divisor raises (as torch); a zero in a divisor tensor gives
    quotient and remainder 0 (numpy's answer) on every device, and MIN/-1 wraps: the device never divides by 0 (x86 traps)."""
    c, casts = y.uop, []
    while c.op in (Ops.RESHAPE, Ops.EXPAND, Ops.CAST):   # a constant divisor, broadcast and cast (bool // False: an int cast)
      if c.op is Ops.CAST: casts.append(c.dtype)
      c = c.src[0]
    cval = c.arg if c.op is Ops.CONST else None
    for dt in reversed(casts): cval = dtypes.as_const(cval, dt) if cval is not None else None
    if cval is not None and cval == 0 and self.numel() != 0:   # (an empty tensor's const 0 divides nothing)
      raise IntDivisionByZeroError(f"integer {op} by zero: a {self.dtype} tensor {op} a constant 0 (torch raises too; Python ints raise "
                                   "ZeroDivisionError); divide by a tensor for numpy's answer 0, or cast to float for inf/nan")
    if cval is not None and (cval != -1 or dtypes.is_unsigned(self.dtype)): return self._alu(Ops.IDIV, y), self._alu(Ops.MOD, y)
    zero, neg1 = y == 0, (y == -1) if not dtypes.is_unsigned(self.dtype) else None
    ys = (zero | neg1 if neg1 is not None else zero).where(1, y)
    q, r = self._alu(Ops.IDIV, ys), self._alu(Ops.MOD, ys)
    return zero.where(0, neg1.where(-self, q) if neg1 is not None else q), r
  def idiv(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Integer division rounding toward zero (C semantics)."""
    a, b = self._broadcasted(x, reverse)
    if not dtypes.is_int(a.dtype): raise TypeError(f"idiv needs int tensors, got {a.dtype}")
    return a._int_divmod(b, "//")[0]
  def _floordiv(self: Tensor, x: Any, reverse: bool = False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): return a._float_floordiv(b)
    if dtypes.is_bool(a.dtype): a, b = a.int(), b.int()
    q, r = a._int_divmod(b, "//")
    if dtypes.is_unsigned(a.dtype): return q
    # truncation rounds up when the remainder's sign differs from the divisor's: step down by one
    return ((r != 0) & ((r < 0) != (b < 0))).where(q - 1, q)
  def _zero_grad(self: Tensor, *srcs: Tensor) -> Tensor:
    # self (computed from detached srcs, same shape and dtype) as a function of srcs with gradient 0 to each, torch's for a
    # rounded quotient: a select whose condition is always True passes none to its other branch (the kernel folds it away).
    # (a/b's chain times trunc's 0 was NaN at b = 0 and a = +-inf)
    ret, cond = self, self._const(True, dtypes.bool)._broadcast_to(self.shape)
    for s in srcs: ret = Tensor(UOp(Ops.WHERE, ret.dtype, (cond.uop, ret.uop, s.cast(ret.dtype).uop)))
    return ret
  def _float_floordiv(self: Tensor, b: Tensor) -> Tensor:
    # torch's (and Python's) floor division, the true floor of a/b: floor(a/b) is one off where a/b rounds onto an integer
    # (1 // 0.1 is 9: 0.1 is 0.100000001) or underflows (1e-45 // -2.5 is -1, not -0.0). q = trunc(a/b) is the true
    # quotient truncated or one further from 0; the exact remainder a - b*q (as in fmod) tells: where its sign is not b's,
    # the floor is q - 1, else q. Up to 2**(mantissa_bits+1) every integer is a float, so that floor is exact (from 2**23 on
    # a/b rounded to nearest is an integer already, but can be the floor + 1); past it a/b is kept. b = 0 gives a/b, and a
    # finite a by +-inf 0 or -1, an infinite a NaN (torch's); a zero quotient has a/b's sign
    x, y = self, b
    a, b = self.detach()._f32up(), b.detach()._f32up()   # (gradient 0 to both, below: a/b's, where q0 is kept, was not)
    q0 = a / b
    q = q0.trunc()
    r = (b.isinf() & a.isfinite()).where(a, a._exact_rest(b, q))
    q = ((r != 0) & ((r < 0) != (b < 0))).where(q - 1, q)
    big = q0.abs() > (2.0 ** 53 if q0.dtype == dtypes.float64 else 2.0 ** 24)
    ret = ((b == 0) | (big & a.isfinite())).where(q0, (r != r).where(math.nan, q)).cast(self.dtype)   # (NaN r: a is +-inf or NaN)
    return ret._zero_grad(x, y)
  def _exact_rest(self: Tensor, b: Tensor, q: Tensor) -> Tensor:
    # self - b*q exactly, for an integer q within one of self/b: b*q as p + e by Dekker's product (b and q split into halves
    # whose products are exact), self - p is exact as p is near self, and so is (self - p) - e, as the result is representable
    p, bh, qh = b * q, b._high_half(), q._high_half()
    bl, ql = b - bh, q - qh
    return (self - p) - (((bh * qh - p) + bh * ql + bl * qh) + bl * ql)
  def mod(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise remainder with Python/numpy semantics (the result has the divisor's sign; a zero result has the
    dividend's, as torch)."""
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype):
      # torch's: fmod (exact where a - b * floor(a/b) rounds: 1 % 0.1 is 0.09999995, not 0), moved by b into b's sign; x mod
      # +-inf is x where the signs agree, else the divisor
      m = a.fmod(b)
      return ((m != 0) & ((b < 0) != (m < 0))).where(m + b, m)
    if dtypes.is_bool(a.dtype): a, b = a.int(), b.int()
    r = a._int_divmod(b, "%")[1]
    if dtypes.is_unsigned(a.dtype): return r
    return ((r != 0) & ((r < 0) != (b < 0))).where(r + b, r)
  def _bitwise(self: Tensor, op: Ops, x: Any, reverse: bool, name: str) -> Tensor:
    if isinstance(x, int) and not isinstance(x, bool) and dtypes.is_int(self.dtype):
      # a Python int mask is a bit pattern of the tensor's width: int32 | 0xFFFFFFFF is int32 | -1 (torch's and public
      # tinygrad's wrap); past the width's signed and unsigned ranges it is still an OverflowError
      bits = self.dtype.itemsize * 8
      if -(1 << (bits - 1)) <= x < (1 << bits): x = (x - dtypes.min(self.dtype)) % (1 << bits) + dtypes.min(self.dtype)
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): raise OpDTypeError(f"{name} needs int or bool tensors, got {a.dtype}; cast first, e.g. t.int()")
    return a._alu(op, b)
  def bitwise_and(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical and (ints and bools)."""
    return self._bitwise(Ops.AND, x, reverse, "bitwise and")
  def bitwise_or(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical or (ints and bools)."""
    return self._bitwise(Ops.OR, x, reverse, "bitwise or")
  def xor(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical xor (ints and bools)."""
    return self._bitwise(Ops.XOR, x, reverse, "bitwise xor")
  def bitwise_xor(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise bitwise/logical xor (torch's name for xor)."""
    return self.xor(x, reverse)
  def bitwise_not(self: Tensor) -> Tensor:
    """Elementwise ~x: bit inversion for ints, logical not for bools."""
    if dtypes.is_float(self.dtype): raise OpDTypeError(f"bitwise not needs int or bool tensors, got {self.dtype}; cast first, e.g. t.int()")
    return self.logical_not() if dtypes.is_bool(self.dtype) else self.xor(-1 if not dtypes.is_unsigned(self.dtype) else dtypes.max(self.dtype))
  def lshift(self: Tensor, x: Tensor | int, reverse: bool = False) -> Tensor:
    """Elementwise shift left (ints)."""
    a, b = self._broadcasted(x, reverse)
    if not dtypes.is_int(a.dtype): raise OpDTypeError(f"shift needs int tensors, got {a.dtype}; cast first, e.g. t.int()")
    return a._alu(Ops.SHL, b)
  def rshift(self: Tensor, x: Tensor | int, reverse: bool = False) -> Tensor:
    """Elementwise shift right (ints; arithmetic for signed)."""
    a, b = self._broadcasted(x, reverse)
    if not dtypes.is_int(a.dtype): raise OpDTypeError(f"shift needs int tensors, got {a.dtype}; cast first, e.g. t.int()")
    return a._alu(Ops.SHR, b)
  def _inverse(self: Tensor) -> Tensor:
    # an order-reversing map: min(x) = inverse(max(inverse(x)))
    if dtypes.is_float(self.dtype): return -self
    return self.logical_not() if dtypes.is_bool(self.dtype) else self.bitwise_not()
  def maximum(self: Tensor, x: Tensor | ConstType) -> Tensor:
    """Elementwise maximum."""
    a, b = self._broadcasted(x)
    return a._alu(Ops.MAX, b)
  def minimum(self: Tensor, x: Tensor | ConstType) -> Tensor:
    """Elementwise minimum."""
    a, b = self._broadcasted(x)
    return a._inverse().maximum(b._inverse())._inverse()
  def where(self: Tensor, x: Tensor | ConstType, y: Tensor | ConstType) -> Tensor:
    """Elementwise `x if self else y` (self is the condition; all three broadcast together)."""
    # a bound Variable (or an expression of them) is a weak int scalar, as in arithmetic: it raised DTypeInferError here
    x, y = (Tensor(v, device=self.device) if isinstance(v, UOp) else v for v in (x, y))
    if isinstance(x, Tensor): x_, y_ = x._broadcasted(y)
    elif isinstance(y, Tensor): y_, x_ = y._broadcasted(x)
    else:
      dt = least_upper_dtype(dtypes.from_py(x), dtypes.from_py(y))
      x_, y_ = self._const(x, dt), self._const(y, dt)
    # the condition joins the values' device as any operand does (it was never compared: a constant mask on another device,
    # (Tensor.arange(2) < 1).where(x, y), failed when realized, and a mask with data there made a result claiming its device)
    # (x_ and y_ are on one device already: y_ needs a look only when the condition's data moved x_, a constant, to it)
    cond, moved = self.cast(dtypes.bool)._same_device(x_)
    if moved is not x_: cond, y_ = cond._same_device(y_)
    x_ = moved
    shape = _broadcast_shape(cond.shape, x_.shape, y_.shape)
    cond, x_, y_ = cond._broadcast_to(shape), x_._broadcast_to(shape), y_._broadcast_to(shape)
    return Tensor(UOp(Ops.WHERE, x_.dtype, (cond.uop, x_.uop, y_.uop)))
  def masked_fill(self: Tensor, mask: Tensor, value: Tensor | ConstType) -> Tensor:
    """`value` where mask is True, else self. A value of another kind than self (a float into an int or bool tensor, a
    number into a bool one) raises: torch casts it to self's dtype (2.5 -> 2), public tinygrad promotes (2.5 stays)."""
    if isinstance(value, UOp): value = Tensor(value, device=self.device)   # a bound Variable: a weak int scalar
    vdt = value.dtype if isinstance(value, Tensor) else dtypes.from_py(value)
    if (dtypes.is_float(vdt) and not dtypes.is_float(self.dtype)) or (self.dtype == dtypes.bool and vdt != dtypes.bool):
      raise OpDTypeError(f"masked_fill: a {vdt} value into a {self.dtype} tensor (torch keeps {self.dtype}, casting the value; public "
                         f"tinygrad promotes to {least_upper_dtype(vdt, self.dtype)}); cast the value to {self.dtype} or the tensor to {vdt} first")
    return mask.where(value, self)

  # ---- comparisons (bool results) ----
  def _past_range(self: Tensor, x: Any) -> bool | None:
    # a Python int past this int dtype compares exactly, as numpy 2 does (t < 2**40 is True): every element lies on one side
    # of it (True: x is above them all), so no dtype needs to hold both (int64 vs 2**63 has none but a float, which rounds)
    if dtypes.is_int(self.dtype) and isinstance(x, int) and not isinstance(x, bool) and not dtypes.min(self.dtype) <= x <= dtypes.max(self.dtype):
      return x > dtypes.max(self.dtype)
    return None
  def _cmp(self: Tensor, op: Ops, x: Any, reverse: bool = False) -> Tensor:
    if (above := self._past_range(x)) is not None:
      return (self == self) if {Ops.CMPEQ: False, Ops.CMPNE: True}.get(op, above != reverse) else (self != self)
    a, b = self._broadcasted(x, reverse, match_dtype=False)
    if {a.dtype, b.dtype} & {dtypes.uint64} and {a.dtype, b.dtype} & set(dtypes.sints):
      # uint64 with a signed int promotes to a float (public tinygrad's rule), which rounds: compare exactly instead, a
      # negative value being below every uint64 (an index tensor of either kind against an int32 arange stays exact)
      sgn = a if a.dtype != dtypes.uint64 else b
      neg, au, bu = sgn < 0, a.cast(dtypes.uint64), b.cast(dtypes.uint64)
      if op is Ops.CMPLT: return neg | (au < bu) if sgn is a else neg.logical_not() & (au < bu)
      return neg.logical_not() & (au == bu) if op is Ops.CMPEQ else neg | (au != bu)
    if a.dtype != b.dtype:
      out = least_upper_dtype(a.dtype, b.dtype)
      a, b = a.cast(out), b.cast(out)
    return a._alu(op, b)
  def __lt__(self: Tensor, x: Any) -> Tensor: return self._cmp(Ops.CMPLT, x)
  def __gt__(self: Tensor, x: Any) -> Tensor: return self._cmp(Ops.CMPLT, x, True)
  def __le__(self: Tensor, x: Any) -> Tensor:
    if self._past_range(x) is not None: return self < x
    if dtypes.is_float(self._broadcasted(x)[0].dtype): return self._cmp(Ops.CMPLT, x) | self._cmp(Ops.CMPEQ, x)
    return self._cmp(Ops.CMPLT, x, True).logical_not()
  def __ge__(self: Tensor, x: Any) -> Tensor:
    if self._past_range(x) is not None: return self > x
    if dtypes.is_float(self._broadcasted(x)[0].dtype): return self._cmp(Ops.CMPLT, x, True) | self._cmp(Ops.CMPEQ, x)
    return self._cmp(Ops.CMPLT, x).logical_not()
  # None: Python's identity fallback, as torch (t == None is False; a tensor of None was an empty one that failed to broadcast)
  def __eq__(self: Tensor, x: Any) -> Tensor: return NotImplemented if x is None else self._cmp(Ops.CMPEQ, x)  # type: ignore[override]
  def __ne__(self: Tensor, x: Any) -> Tensor: return NotImplemented if x is None else self._cmp(Ops.CMPNE, x)  # type: ignore[override]
  def eq(self: Tensor, x: Tensor | ConstType) -> Tensor:
    """Elementwise ==."""
    return self._cmp(Ops.CMPEQ, x)
  def ne(self: Tensor, x: Tensor | ConstType) -> Tensor:
    """Elementwise !=."""
    return self._cmp(Ops.CMPNE, x)
  def logical_not(self: Tensor) -> Tensor:
    """Elementwise not (True where the value is zero/False)."""
    return self._alu(Ops.CMPNE, self._const(True, dtypes.bool, self.shape)) if dtypes.is_bool(self.dtype) else (self == 0)
  def isnan(self: Tensor) -> Tensor:
    """True where the value is NaN."""
    return self != self if dtypes.is_float(self.dtype) else self._const(False, dtypes.bool, self.shape)
  def isinf(self: Tensor, detect_positive: bool = True, detect_negative: bool = True) -> Tensor:
    """True where the value is +inf (detect_positive) or -inf (detect_negative)."""
    if not dtypes.is_float(self.dtype): return self._const(False, dtypes.bool, self.shape)
    pos, neg = self == math.inf, self == -math.inf
    if detect_positive and detect_negative: return pos | neg
    return pos if detect_positive else neg if detect_negative else self._const(False, dtypes.bool, self.shape)
  def isfinite(self: Tensor) -> Tensor:
    """True where the value is neither inf nor NaN."""
    return (self.isinf() | self.isnan()).logical_not()

  # ---- python operators ----
  def __add__(self: Tensor, x: Any) -> Tensor: return self.add(x)
  def __radd__(self: Tensor, x: Any) -> Tensor: return self.add(x, True)
  def __sub__(self: Tensor, x: Any) -> Tensor: return self.sub(x)
  def __rsub__(self: Tensor, x: Any) -> Tensor: return self.sub(x, True)
  def __mul__(self: Tensor, x: Any) -> Tensor: return self.mul(x)
  def __rmul__(self: Tensor, x: Any) -> Tensor: return self.mul(x, True)
  def __truediv__(self: Tensor, x: Any) -> Tensor: return self.div(x)
  def __rtruediv__(self: Tensor, x: Any) -> Tensor: return self.div(x, True)
  def __floordiv__(self: Tensor, x: Any) -> Tensor: return self._floordiv(x)
  def __rfloordiv__(self: Tensor, x: Any) -> Tensor: return self._floordiv(x, True)
  def __mod__(self: Tensor, x: Any) -> Tensor: return self.mod(x)
  def __rmod__(self: Tensor, x: Any) -> Tensor: return self.mod(x, True)
  def __pow__(self: Tensor, x: Any) -> Tensor: return self.pow(x)
  def __rpow__(self: Tensor, x: Any) -> Tensor: return self.pow(x, True)
  def __matmul__(self: Tensor, x: Tensor) -> Tensor: return self.matmul(x)
  def __rmatmul__(self: Tensor, x: Tensor) -> Tensor: return self._to_tensor(x).matmul(self)
  def __and__(self: Tensor, x: Any) -> Tensor: return self.bitwise_and(x)
  def __rand__(self: Tensor, x: Any) -> Tensor: return self.bitwise_and(x, True)
  def __or__(self: Tensor, x: Any) -> Tensor: return self.bitwise_or(x)
  def __ror__(self: Tensor, x: Any) -> Tensor: return self.bitwise_or(x, True)
  def __xor__(self: Tensor, x: Any) -> Tensor: return self.xor(x)
  def __rxor__(self: Tensor, x: Any) -> Tensor: return self.xor(x, True)
  def __lshift__(self: Tensor, x: Any) -> Tensor: return self.lshift(x)
  def __rlshift__(self: Tensor, x: Any) -> Tensor: return self.lshift(x, True)
  def __rshift__(self: Tensor, x: Any) -> Tensor: return self.rshift(x)
  def __rrshift__(self: Tensor, x: Any) -> Tensor: return self.rshift(x, True)
  def __invert__(self: Tensor) -> Tensor: return self.bitwise_not()
  # in-place operators are assigns (public tinygrad: `x += y` is `x.assign(x + y)`): they write the tensor's buffer, so a
  # jitted counter `s.c += 1` advances on every replay
  def __iadd__(self: Tensor, x: Any) -> Tensor: return self._inplace(self + x, "+=")
  def __isub__(self: Tensor, x: Any) -> Tensor: return self._inplace(self - x, "-=")
  def __imul__(self: Tensor, x: Any) -> Tensor: return self._inplace(self * x, "*=")
  def __itruediv__(self: Tensor, x: Any) -> Tensor: return self._inplace(self / x, "/=")
  def __ifloordiv__(self: Tensor, x: Any) -> Tensor: return self._inplace(self // x, "//=")
  def __imod__(self: Tensor, x: Any) -> Tensor: return self._inplace(self % x, "%=")
  def __imatmul__(self: Tensor, x: Tensor) -> Tensor: return self._inplace(self @ x, "@=")
  def __ipow__(self: Tensor, x: Any) -> Tensor: return self._inplace(self ** x, "**=")
  def __iand__(self: Tensor, x: Any) -> Tensor: return self._inplace(self & x, "&=")
  def __ior__(self: Tensor, x: Any) -> Tensor: return self._inplace(self | x, "|=")
  def __ixor__(self: Tensor, x: Any) -> Tensor: return self._inplace(self ^ x, "^=")
  def __ilshift__(self: Tensor, x: Any) -> Tensor: return self._inplace(self << x, "<<=")
  def __irshift__(self: Tensor, x: Any) -> Tensor: return self._inplace(self >> x, ">>=")
  def _inplace(self: Tensor, r: Tensor, op: str) -> Tensor:
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
  def __neg__(self: Tensor) -> Tensor: return self.neg()
  def __abs__(self: Tensor) -> Tensor: return self.abs()

  # ---- elementwise unary ----
  def neg(self: Tensor) -> Tensor:
    """Elementwise -x (logical not for bools)."""
    return self.logical_not() if dtypes.is_bool(self.dtype) else Tensor(UOp(Ops.NEG, self.dtype, (self.uop,)))
  def abs(self: Tensor) -> Tensor:
    """Elementwise |x|."""
    if dtypes.is_unsigned(self.dtype) or dtypes.is_bool(self.dtype): return self._own(self)   # a new tensor, as torch's
    if not dtypes.is_float(self.dtype): return (self < 0).where(-self, self)
    # zero (either sign) and NaN: d*d (+0 for -0.0, NaN for NaN) plus self*0, so the gradient there is g*0 as torch's g*sgn(x):
    # 0, but NaN where g is infinite (sqrt(|x|) at 0; a detached branch gave 0)
    d = self.detach()
    return (self > 0).where(self, (self < 0).where(0 - self, d * d + self * 0))
  def sign(self: Tensor) -> Tensor:
    """Elementwise -1, 0 or 1 (NaN stays NaN, as numpy; +-inf give +-1); the gradient is 0."""
    ret = (self != 0).where((self < 0).where(self._const(-1 if not dtypes.is_unsigned(self.dtype) else 0), self._const(1)), self._const(0))
    if not dtypes.is_float(self.dtype): return ret
    # NaN by a select (ret + 0*NaN lost it where the compiler folds y*0 to 0: WEBGPU's sign(nan) was 1); + 0*x (0 or NaN,
    # never inf*0) keeps x in the graph with a zero gradient
    nan = self.isnan()
    return nan.where(self.detach(), ret) + nan.where(self, 0) * 0
  def _unary(self: Tensor, op: Ops) -> Tensor:
    x = self._float()
    return Tensor(UOp(op, x.dtype, (x.uop,)))
  def _with_grad(self: Tensor, value: Tensor, rule: str, *args: float) -> Tensor:
    # `value` (computed from self, same dtype and shape) with gradient.py's GRAD_RULES[rule] (given `args` after g, y, x) as
    # its derivative w.r.t. self
    from tinygrad.gradient import CUSTOM_GRAD
    cond = self._const(True, dtypes.bool)._broadcast_to(self.shape)
    return Tensor(UOp(Ops.WHERE, value.dtype, (cond.uop, value.uop, self.uop), tag=(CUSTOM_GRAD, rule, *args)))
  def exp2(self: Tensor) -> Tensor:
    """Elementwise 2**x."""
    return self._unary(Ops.EXP2)
  def log2(self: Tensor) -> Tensor:
    """Elementwise base-2 logarithm."""
    return self._unary(Ops.LOG2)
  def exp(self: Tensor) -> Tensor:
    """Elementwise e**x: 2**(r/ln2) * 2**n with n = round(x/ln2) and r = x - n*ln2 in two parts (Cody-Waite), so the
    rounding of x/ln2 does not cost accuracy for large x. x/ln2 + 1.5 * 2**mb rounds n into the low bits of its mantissa,
    which a bitcast reads (no floor, no float -> int cast: every device guards that against NaN and overflow, ~10 ops);
    2**n is two exact powers 2**a * 2**b, a + b = n, each normal, so a subnormal or overflowing result rounds once, in the
    last multiply. The polynomial is fused multiply-adds (MULACC) where the renderer has them. float16/bfloat16 compute
    in float32."""
    x = self._float()
    if x.dtype in OPMATH_F32: return x.float().exp().cast(x.dtype)
    return x._exp()   # (a graph template: mixin/graphcache.py)
  def _exp(self: Tensor, nonpos: bool = False) -> Tensor:
    # nonpos: the caller knows x <= 0 or NaN (softmax's x - max(x)): the upper clamp is left out and 2**n is one power (17 ALU ops, not 25)
    x = self
    f64 = x.dtype == dtypes.float64
    # ln2 split so that n*hi is exact (n has at most 11 bits for float64, 8 for float32); past the clamp e**x rounds to 0
    # (below half the smallest subnormal) or overflows, as it does at the clamp itself
    (lo_lim, hi_lim), hi, lo = ((-746.0, 710.0), 0.6931471803691238, 1.9082149292705877e-10) if f64 else \
                                ((-104.0, 89.0), 0.693145751953125, 1.428606765330187e-06)
    xc = (x < lo_lim).where(lo_lim, x)   # keeps NaN; -inf ends at 0
    if not nonpos: xc = (x > hi_lim).where(hi_lim, xc)   # +inf at inf
    # n = round(x/ln2) + off >= 0 sits in t's mantissa (|n| << 2**(mb-1)); off (even) is -n at the low clamp
    (bias, mb, udt), off = ((1023, 52, dtypes.uint64), 1076) if f64 else ((127, 23, dtypes.uint32), 150)
    magic = 1.5 * 2.0**mb + off
    t = _fma(xc, 1 / math.log(2), magic)
    # unsigned: the bits of NaN's t wrap (defined in C) into some power whose product with NaN's polynomial is NaN
    m = t.bitcast(udt) - ((bias + mb) << mb | (1 << (mb - 1)))   # n + off, from t's bits (t = 2**mb * (1.5 + (n+off)/2**(mb+1)))
    # n as a float: t - magic is exact (both integers below 2**(mb+1)) and one op, but a shader compiler that reassociates
    # (WebGPU's) folds it back to x/ln2, unrounded (exp(1) = 2); there m is converted (int -> float and a subtract)
    n = (t - magic) if _keeps_float_order(x.device) else m.cast(dtypes.int32).cast(x.dtype) - off
    r = _fma(n, -lo, _fma(n, -hi, xc))
    if _exp_via_exp2(x.device):   # the renderer's own EXP2 on the reduced argument (|r/ln2| <= 1/2): one instruction on GPUs
      poly = (r * (1 / math.log(2))).exp2()
    else:   # e**r, |r| <= ln2/2, by Taylor to the degree whose remainder is below 1/16 ulp (7 for float32, 13 for float64)
      poly = _fma(r, 1 / math.factorial(13 if f64 else 7), 1 / math.factorial(12 if f64 else 6))
      for i in reversed(range(12 if f64 else 6)): poly = _fma(poly, r, 1 / math.factorial(i))
    if _has_ldexp(x.device):   # the same single rounding in one op
      ret = Tensor(UOp(Ops.LDEXP, x.dtype, (poly.uop, (m.cast(dtypes.int32) - off).uop)))
    elif nonpos:   # n in [-off, 0]: 2**(n+64) is normal, so poly * 2**(n+64) is exact and * 2**-64 rounds once (4 ops, not 8)
      ret = poly * ((m + (bias + 64 - off)) << mb).bitcast(x.dtype) * 2.0**-64
    else:
      ha = m >> 1
      ret = poly * ((ha + (bias - off // 2)) << mb).bitcast(x.dtype) * ((m - ha + (bias - off // 2)) << mb).bitcast(x.dtype)
    if not _keeps_float_order(x.device):
      # the overflow to inf and the rounding to 0 happen in the last multiply, which a reassociating compiler merges with
      # a multiply after exp (WebGPU: exp(100) * 1e-30 was 4.5e8, exp(-200) * -3.4e38 -2.3e-7): the two ends made selects
      # at the exact bounds (the largest x whose e**x is finite / rounds to 0)
      (zero_x, inf_x) = (-745.1332191019412, 709.7827128933841) if f64 else (-103.97208404541016, 88.72283935546875)
      ret = (x <= zero_x).where(0.0, ret)
      if not nonpos: ret = (x >= inf_x).where(math.inf, ret)
    return x._with_grad(ret, "exp")
  @_opmath
  def log(self: Tensor) -> Tensor:
    """Elementwise natural logarithm."""
    return self.log2() * math.log(2)
  def sqrt(self: Tensor) -> Tensor:
    """Elementwise square root."""
    return self._unary(Ops.SQRT)
  @_opmath
  def rsqrt(self: Tensor) -> Tensor:
    """Elementwise 1/sqrt(x)."""
    return self.sqrt().reciprocal()
  def reciprocal(self: Tensor) -> Tensor:
    """Elementwise 1/x."""
    return self._unary(Ops.RECIPROCAL)
  def sin(self: Tensor) -> Tensor:
    """Elementwise sine."""
    return self._unary(Ops.SIN)
  @_opmath
  def cos(self: Tensor) -> Tensor:
    """Elementwise cosine from SIN of exactly representable arguments (pi/2 - x would round away accuracy for large x):
    sin(2x) / (2 sin x) in general, 1 - 2 sin(x/2)**2 near 0 and where 2x overflows."""
    x = self._float()
    half = x * 0.5
    via_half = 1 - 2 * half.sin().square()
    via_double = (x * 2).sin() / (2 * x.sin())
    big = {dtypes.float16: 32752.0, dtypes.bfloat16: 1.69e38, dtypes.float32: 1.7e38}.get(x.dtype, 8.9e307)  # about max/2
    return x._with_grad(((x.abs() < 0.5) | (x.abs() > big)).where(via_half, via_double), "cos")
  @_opmath
  def tan(self: Tensor) -> Tensor:
    """Elementwise tangent."""
    x = self._float()
    return x._with_grad(x.sin() / x.cos(), "tan")
  def square(self: Tensor) -> Tensor:
    """Elementwise x*x."""
    return self * self
  def trunc(self: Tensor) -> Tensor:
    """Elementwise rounding toward zero."""
    return Tensor(UOp(Ops.TRUNC, self.dtype, (self.uop,))) if dtypes.is_float(self.dtype) else self._own(self)
  def floor(self: Tensor) -> Tensor:
    """Elementwise rounding down."""
    if not dtypes.is_float(self.dtype): return self._own(self)
    t = self.trunc()
    return (t > self).where(t - 1, t)
  def ceil(self: Tensor) -> Tensor:
    """Elementwise rounding up."""
    if not dtypes.is_float(self.dtype): return self._own(self)
    t = self.trunc()
    return (t < self).where(t + 1, t)
  def round(self: Tensor) -> Tensor:
    """Elementwise rounding to the nearest integer, halves to even (like numpy)."""
    if not dtypes.is_float(self.dtype): return self._own(self)
    t = self.trunc()
    frac = self - t                                       # exact, same sign as x
    odd = (t - (t * 0.5).trunc() * 2) != 0
    up = (frac.abs() > 0.5) | ((frac.abs() == 0.5) & odd)
    return up.where((self < 0).where(t - 1, t + 1), t)
  # Activations follow torch at the edges, forward and gradient (tests/core/test_activations.py): NaN stays NaN, +-inf and
  # +-300 give the limit with no NaN gradient (a `where` branch that is not taken is fed a harmless value, so its gradient
  # times 0 is 0, never inf*0), and at a kink the gradient is torch's one-sided choice.
  def relu(self: Tensor) -> Tensor:
    """max(x, 0); NaN stays NaN and -0.0 stays -0.0 (as torch); the gradient at 0 is 0 (torch's)."""
    ret = (self < 0).where(0, self)
    return self._with_grad(ret, "relu") if dtypes.is_float(self.dtype) else ret
  def relu6(self: Tensor) -> Tensor:
    """min(max(x, 0), 6) (hardtanh(0, 6))."""
    return self.hardtanh(0, 6)
  @_opmath
  def sigmoid(self: Tensor) -> Tensor:
    """1 / (1 + e**-x), as e**x / (1 + e**x) for x < 0: e**-|x| never overflows, so the gradient at +-300 or +-inf is 0."""
    x = self._float()
    # e**-|x| (the gradient passes at NaN, as torch's) by exp's exact reduction: exp2 of x/ln2 took that product's rounding
    # times |x| into the result (sigmoid(-30) was 10 ulp off in float32)
    e = (x < 0).where(x, -x)._exp(nonpos=True)
    return (x < 0).where(e, 1.0) / (1 + e)
  @_opmath
  def hardsigmoid(self: Tensor, alpha: float = 1/6, beta: float = 0.5) -> Tensor:
    """clip(alpha*x + beta, 0, 1): gradient alpha strictly inside, 0 outside and at NaN (torch's)."""
    # as (x + beta/alpha) * alpha: near the lower kink (x = -3 by default, where beta/alpha = 3.0 exactly) x + 3 is exact and
    # alpha*x + 0.5 cancels (hardsigmoid(-3 + 2**-20) was 1.49e-7, torch 1.589e-7; torch's relu6(x + 3) / 6)
    c = beta / alpha if alpha != 0 else math.inf
    y = (self + c) * alpha if math.isfinite(c) else alpha * self + beta
    return ((y > 0) & (y < 1)).where(y, (y > 0).where(1.0, (y != y).where(y.detach(), 0.0)))
  def _small_odd(self: Tensor, coeffs: list[float]) -> tuple[Tensor, Tensor, Tensor]:
    # (|x| < 1/2, x there else 0, x * (1 + x^2 * sum c_k x^2k)): an odd series where 2*sigmoid(2x) - 1 or e**x - e**-x
    # cancel (tanh(1e-20) was 0, tanh(1e-4) off in its 4th digit); the factored form keeps -0.0 and tiny x exact
    small = self * self < 0.25
    xs = small.where(self, 0.0)
    z = xs * xs
    return small, xs, xs * (1 + z * z._series(coeffs))
  @_opmath
  def tanh(self: Tensor) -> Tensor:
    """Hyperbolic tangent: its series for |x| < 1/2, 2*sigmoid(2x) - 1 beyond."""
    x = self._float()
    # (float64: the terms to x**35, below its last digit for |x| < 1/2; the first 8 left float64 tanh(0.5) 1e-11 off)
    small, _, series = x._small_odd(_tanh_coeffs(17 if x.dtype == dtypes.float64 else 8))
    return small.where(series, 2.0 * (2.0 * small.where(0.0, x)).sigmoid() - 1.0)
  def _half_exp(self: Tensor) -> Tensor:
    # e**|x| / 2 as e**(|x|/2) * (e**(|x|/2) / 2): no overflow short of cosh's own (e**89 is inf, cosh(89) is not)
    h = (self.abs() * 0.5).exp()
    return h * (h * 0.5)
  @_opmath
  def sinh(self: Tensor) -> Tensor:
    """Hyperbolic sine: its series for |x| < 1/2 (e**x - e**-x cancels there), (e**|x| - e**-|x|)/2 with x's sign beyond."""
    x = self._float()
    # (float64: the terms to x**19, below its last digit for |x| < 1/2; float32's five left float64 sinh(0.5) 4e-14 off)
    small, _, series = x._small_odd([1 / math.factorial(2 * k + 1) for k in range(1, 10 if x.dtype == dtypes.float64 else 6)])
    xb = small.where(1.0, x)
    big = xb._half_exp() - 0.5 * (-xb.abs()).exp()
    return x._with_grad(small.where(series, (xb < 0).where(-big, big)), "sinh")   # d/dx by the formula: cosh (sinh at 89 overflowed)
  @_opmath
  def cosh(self: Tensor) -> Tensor:
    """Hyperbolic cosine, finite up to where it passes the dtype's largest value."""
    x = self._float()
    return x._with_grad(x._half_exp() + 0.5 * (-x.abs()).exp(), "cosh")   # d/dx by the formula: sinh (the graph's cancels near 0)
  @_opmath
  def gelu(self: Tensor, approximate: str = "tanh") -> Tensor:
    """GELU: "tanh" (public tinygrad's default) the tanh approximation, "none" (torch's default) the exact x * Phi(x) by erf."""
    x = self._float()
    if approximate == "none": return 0.5 * x * (1 + (x * (1 / math.sqrt(2))).erf())
    if approximate != "tanh": raise RuntimeError(f"gelu: approximate {approximate!r} is not one of 'tanh', 'none'")   # torch: RuntimeError
    return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())
  @_opmath
  def quick_gelu(self: Tensor) -> Tensor:
    """x * sigmoid(1.702 x)."""
    return self * (self * 1.702).sigmoid()
  @_opmath
  def silu(self: Tensor) -> Tensor:
    """x * sigmoid(x) (swish)."""
    return self * self.sigmoid()
  def swish(self: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return self.silu()
  @_opmath
  def softplus(self: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + e**(beta x)) / beta, as max(bx, 0) + log1p(e**-|bx|): no overflow, and softplus(-20) keeps its digits; x itself
    where beta*x > threshold, as torch (softplus(3e38, beta=2) is 3e38: beta*x is inf)."""
    x = self._float()
    over = x * beta > threshold
    bx = over.where(0.0, x) * beta
    return x._with_grad(over.where(x, (bx.maximum(0) + (-bx.abs()).exp()._log1p()) * (1 / beta)), "softplus", beta, threshold)
  @_opmath
  def mish(self: Tensor) -> Tensor:
    """x * tanh(softplus(x)); the gradient by torch's formula (the graph's overflows at 3e38: inf * 0)."""
    x = self._float()
    return x._with_grad(x * x.softplus().tanh(), "mish")
  @_opmath
  def _elu(self: Tensor, alpha: float, inner: float, scale: float = 1.0) -> Tensor:
    # x for x > 0 (and NaN), alpha*(e**(x*inner) - 1) for x <= 0, the exp fed 0 where it is not taken (e**300 is inf);
    # expm1, as e**x - 1 cancels near 0 (elu(-1e-6) was 1.3% off, elu(-1e-8) 0); times selu's scale inside, so that a
    # float16 result is rounded once (float16 selu(-1.2e-7) was a subnormal step off)
    neg = self <= 0
    ret = neg.where(alpha * (neg.where(self, 0) * inner)._expm1(), self)
    # alpha * inner < 0 (elu(x, -0.5)) flips the sign of expm1(+-0.0): x itself there, as torch, with the left side's slope
    if alpha * inner < 0: ret = (self == 0).where((self * (alpha * inner))._with_grad(self, "same"), ret)
    return ret if scale == 1.0 else scale * ret
  def elu(self: Tensor, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha*(e**x - 1) otherwise."""
    return self._elu(alpha, 1.0)
  def celu(self: Tensor, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha*(e**(x/alpha) - 1))."""
    return self._elu(alpha, 1 / alpha)
  def selu(self: Tensor, alpha: float = 1.6732632423543772, gamma: float = 1.0507009873554805) -> Tensor:
    """gamma * (x if x > 0 else alpha*(e**x - 1)), with torch's constants (1.67326 and 1.0507 were 3e-6 off)."""
    return self._elu(alpha, 1.0, gamma)
  @_opmath
  def leaky_relu(self: Tensor, neg_slope: float = 0.01) -> Tensor:
    """x for x > 0, neg_slope*x otherwise (the gradient at 0 is neg_slope, as torch's)."""
    return (self > 0).where(self, self * neg_slope)
  def hardtanh(self: Tensor, min_val: float = -1, max_val: float = 1) -> Tensor:
    """clip(x, min_val, max_val); NaN stays NaN, x on a bound stays x (relu6(-0.0) is -0.0); the gradient is 0 at and past
    the bounds (torch's)."""
    ret = (self < min_val).where(min_val, (self > max_val).where(max_val, self))
    return self._with_grad(ret, "hardtanh", min_val, max_val) if dtypes.is_float(self.dtype) else ret
  @_opmath
  def hardswish(self: Tensor) -> Tensor:
    """x * relu6(x + 3) / 6: 0 up to -3, x from 3 (also +inf; -inf gives 0 where torch's formula gives NaN); the gradient is
    0 at -3 and 1 at 3 (torch's: the outer side of each kink)."""
    mid = (self > -3) & (self < 3)
    xm = mid.where(self, 0)
    return mid.where(xm * (xm + 3) * (1 / 6), (self <= -3).where(-0.0, self))   # x * 0 / 6 is -0.0 up to -3, as torch's
  def softsign(self: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    x = self._float()   # (1 + |x| of int8 127 wrapped to -128)
    return x / (1 + x.abs())
  @_opmath
  def erf(self: Tensor) -> Tensor:
    """The error function: its series for |x| < 1/2 (exact to the last digits, erf(1e-20) is 1.128e-20), Abramowitz-Stegun
    7.1.26 beyond (|error| < 1.5e-7); erf(+-inf) = +-1. float64: its series for |x| < 2 and 1 - erfc by erfc's continued
    fraction beyond, to a few ulp. The gradient is 2/sqrt(pi) e**-x**2 (torch's), not the approximation's slope."""
    x = self._float()
    return x._with_grad(x._erf64() if x.dtype == dtypes.float64 else x._erf32(), "erf")
  def _erf64(self: Tensor) -> Tensor:
    x, a = self, self.abs()
    small = a < 2
    xs = small.where(x, 0.0)
    # sum_k (-1)^k x^(2k+1) / (k! (2k+1)): 30 terms reach float64's last digit at |x| = 2 (the largest term there is ~2)
    series = xs * (xs * xs)._series([(-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(30)]) * (2 / math.sqrt(math.pi))
    ab = small.where(2.0, (a > 10).where(10.0, a))   # (erfc(10) is far below float64's half ulp of 1; NaN stays NaN)
    t = ab   # erfc x = e**-x**2 / sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))): 60 levels for 1e-16 at x = 2
    for k in range(60, 0, -1): t = ab + (k / 2) / t
    big = 1.0 - (-ab * ab).exp() / (math.sqrt(math.pi) * t)
    return small.where(series, (x < 0).where(-big, big))
  def _erf32(self: Tensor) -> Tensor:
    x = self
    small, _, series = x._small_odd([-1/3, 1/10, -1/42, 1/216, -1/1320, 1/9360, -1/75600])
    a = (x < 0).where(-x, x)   # |x| with slope 1 at 0 (the odd extension keeps erf'(0) = 2/sqrt(pi))
    a = (a > 10).where(10.0, small.where(1.0, a))  # erf is +-1 to every float's precision past 10 (and its gradient 0, not inf*0 at inf)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    r = 1.0 - poly * (-a * a).exp()
    return small.where((2 / math.sqrt(math.pi)) * series, (x < 0).where(-r, r))
  def clip(self: Tensor, min_: Tensor | ConstType | None = None, max_: Tensor | ConstType | None = None) -> Tensor:
    """Elementwise clamp into [min_, max_] (either bound may be None; max_ wins where min_ > max_). NaN stays NaN, a NaN
    bound gives NaN; the gradient is torch's: 1 inside and on the bounds, 0 outside and at NaN, to max_ where min_ > max_."""
    if min_ is None and max_ is None: raise ArgumentError("clip needs at least one of min_ and max_")
    def bound(x: Tensor, b: Tensor | ConstType, out: bool) -> Tensor:
      x, b = x._broadcasted(b)
      past = (x < b) if out else (x > b)
      return (past | (b != b) if dtypes.is_float(b.dtype) else past).where(b, x)
    ret = bound(self, min_, True) if min_ is not None else self
    ret = bound(ret, max_, False) if max_ is not None else ret
    if not dtypes.is_float(self.dtype): return ret
    # the gradient is torch's (clamp_backward_min_max), not the selects': self's where min_ <= x <= max_, min_'s where
    # x < min_ < max_, max_'s where x > max_ or max_ < min_. None at a NaN x or bound but for that last, and none where
    # x < min_ == max_ (the selects gave it to min_ there, and to a NaN bound)
    lo_lt_hi = (min_ < max_) if min_ is not None and max_ is not None else True
    keep = (self >= min_) if min_ is not None else self == self
    carrier = (keep & (self <= max_) if max_ is not None else keep).where(self, 0.0).cast(ret.dtype)
    if isinstance(min_, Tensor): carrier = carrier + ((self < min_) & lo_lt_hi).where(min_, 0.0).cast(ret.dtype)
    if isinstance(max_, Tensor): carrier = carrier + ((self > max_) | (max_ < min_ if min_ is not None else False)).where(max_, 0.0).cast(ret.dtype)
    return carrier._broadcast_to(ret.shape)._with_grad(ret, "same")
  def clamp(self: Tensor, min_: Tensor | ConstType | None = None, max_: Tensor | ConstType | None = None) -> Tensor:
    """Alias of clip."""
    return self.clip(min_, max_)
  def lerp(self: Tensor, end: Tensor | ConstType, weight: Tensor | ConstType) -> Tensor:
    """self + (end - self) * weight, from the nearer end as torch (|weight| >= 0.5: end - (end - self) * (1 - weight)), so
    weight 1 gives end exactly (`lerp(1e8, 1, 1)` is 1, not 0) and the infinities are torch's (`lerp(-inf, 1, 0.5)` is -inf)."""
    if self.dtype in OPMATH_F32 and all(not isinstance(v, Tensor) or v.dtype == self.dtype for v in (end, weight)):
      # in float32, rounded once (torch's opmath): end - self rounded to 8 or 11 bits put a lerp near 0 hundreds of ulp off
      def up(v): return v.float() if isinstance(v, Tensor) else v
      return self.float().lerp(up(end), up(weight)).cast(self.dtype)
    if not dtypes.is_float(self.dtype) and (isinstance(weight, float) or isinstance(weight, Tensor) and dtypes.is_float(weight.dtype)):
      # ints with a float weight in float from the start: end - self wrapped (int8 lerp(-128, 127, 0.25) was -128.25, not -64.25)
      return self._float().lerp(end._float() if isinstance(end, Tensor) else end, weight)
    diff = end - self
    if not isinstance(weight, Tensor): return self + diff * weight if abs(weight) < 0.5 else diff * (weight - 1) + end
    return (weight.abs() < 0.5).where(self + diff * weight, diff * (weight - 1) + end)
  def pow(self: Tensor, x: Tensor | ConstType, reverse: bool = False) -> Tensor:
    """Elementwise self ** x (reverse: x ** self). Int ** non-negative int stays int (wrapping like numpy); int ** a negative
    int constant is a ValueError, as in numpy. With an int tensor exponent a negative one gives torch's integer 1 / b**-e
    (1 for b = 1, +-1 for b = -1, else 0) rather than an error."""
    # (a numpy int too: np.int64(-1) became an int tensor exponent, whose rule gave 0 where numpy and torch raise)
    neg_int = (isinstance(x, int) and not isinstance(x, bool)) or (_is_np_scalar(x) and getattr(x, "dtype").kind in "iu")
    if not reverse and neg_int and x < 0 and (dtypes.is_int(self.dtype) or self.dtype == dtypes.bool):
      raise ArgumentError(f"integers to negative integer powers are not allowed: {self.dtype} tensor ** {x}; cast to float first, e.g. t.float() ** {x}")
    if not reverse and isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x == int(x):
      n = int(x)
      base = self if isinstance(x, int) or dtypes.is_float(self.dtype) else self._float()
      if dtypes.is_float(base.dtype) and -16 <= n <= 16:
        # float16/bfloat16 multiply in float32 and round once, as torch's pow: in the half type each product rounded and
        # overflowed (float16 53.5 ** -3 was 0 through 53.5**3 = inf; torch 6.6e-6), bfloat16 x ** 16 was 15 ulp off
        half = base.dtype in OPMATH_F32 and n not in (0, 1)
        f = base.float() if half else base
        # (x ** 1 is a new tensor, as torch's, not x itself: a later x += 1 showed in it)
        if n >= 0: return f._pow_int(n).cast(base.dtype)._own(self)
        # x**-n with torch's gradient n x**(n-1): 1/x**n's own chain multiplied 0 by inf at x = 0 and +-inf (NaN). From a half
        # type, (1/x)**n: float32's 1/x has digits to spare and the products leave float32's range only where the result
        # does (bfloat16 0.004 ** -16 = 2.3e38 went through 0.004**16, a float32 subnormal: 32 ulp off)
        return f._with_grad(f.reciprocal()._pow_int(-n) if half else f._pow_int(-n).reciprocal(), "pow_neg_int", n).cast(base.dtype)
      if n >= 0 and dtypes.is_int(base.dtype): return base._pow_int(n)._own(self)
      if dtypes.is_float(base.dtype) and n & 1 and truncate[base.dtype](float(n)) != n:
        # an odd exponent the dtype rounds to an even one (float32 past 2**24) lost x's sign: -1.0 ** 16777217 was 1.0.
        # x * x**(n-1) (x**(n+1) / x for n < 0) keeps it; n -+ 1 is even and stays even when rounded
        return base * base.pow(n - 1) if n > 0 else base.pow(n + 1) / base
    if not reverse and isinstance(x, float) and x == 0.5: return self.sqrt()
    b, e = self._broadcasted(x, reverse)
    if dtypes.is_int(b.dtype): return Tensor._pow_int_tensor(b, e)
    if not dtypes.is_float(b.dtype): return Tensor._pow_float(b._float(), e._float()).round().cast(b.dtype)
    return Tensor._pow_float(b, e)
  def _pow_int(self: Tensor, n: int) -> Tensor:
    ret, base = None, self
    while n:  # square-and-multiply
      if n & 1: ret = base if ret is None else ret * base
      n >>= 1
      if n: base = base * base
    # x**0 is 1 (nan and inf included); a where on a constant True keeps x in the graph: its gradient is 0, not missing
    return ret if ret is not None else Tensor.full(self.shape, True, dtype=dtypes.bool, device=self.device).where(self._const(1, self.dtype), self)
  @staticmethod
  def _pow_int_tensor(b: Tensor, e: Tensor) -> Tensor:
    # square-and-multiply over every bit of the exponent: exact and wrapping, as torch and numpy (through float it lost
    # the digits past 2**24, 3**19, and saturated where the power wraps, int8 3**5)
    ret, sq = b._const(1).expand(b.shape), b
    for i in range(e.dtype.itemsize * 8 - (0 if dtypes.is_unsigned(e.dtype) else 1)):
      ret = ((e >> i) & 1).cast(dtypes.bool).where(ret * sq, ret)
      sq = sq * sq
    if dtypes.is_unsigned(e.dtype): return ret
    # a negative exponent: torch's integer 1 / b**-e
    return (e < 0).where((b == 1).where(1, (b == -1).where(1 - 2 * (e & 1), 0)), ret)
  @staticmethod
  def _pow_float(b: Tensor, e: Tensor) -> Tensor:
    # one POW (C's pow; lowered to exp2/log2 where a renderer has none): its gradient is y*x**(y-1), finite where the
    # exp2(y*log2|x|) graph's was nan (x = 0 or -inf: 0 * inf), as torch's
    return Tensor(UOp(Ops.POW, b.dtype, (b.uop, e.uop)))

  # ---- inverse trigonometric and hyperbolic, logs, remainders ----
  # Each reduces its argument to a range where a short series is exact to the dtype (float16/bfloat16 compute in float32),
  # and every branch that `where` does not pick is fed a harmless value, so its gradient (times 0) cannot be NaN.
  def _f32up(self: Tensor) -> Tensor:
    x = self._float()
    return x.float() if x.dtype in OPMATH_F32 else x
  def _series(self: Tensor, coeffs: list[float]) -> Tensor:
    # sum c_k z^k by Horner (z = self)
    ret = self * 0 + coeffs[-1]
    for c in reversed(coeffs[:-1]): ret = ret * self + c
    return ret
  def _expm1(self: Tensor) -> Tensor:
    # e**y - 1 without losing y's digits near 0: the series for |y| < 1/2 (fed 0 elsewhere), e**y - 1 beyond
    small = self * self < 0.25
    ys = small.where(self, 0.0)
    # (float64: the terms to y**17, below its last digit for |y| < 1/2; the first 9 left float64 elu(-0.5) 6e-10 off)
    n = 17 if self.dtype == dtypes.float64 else 9
    return small.where(ys * (1 + ys * ys._series([1 / math.factorial(k) for k in range(2, n + 1)])), self.exp() - 1)
  def _log1p(self: Tensor) -> Tensor:
    # log(1+y) without losing y's digits near 0: log(u) * y/(u-1) with u = 1+y rounded (Goldberg), y itself where u is 1
    u = 1 + self
    one = u == 1
    us = one.where(2.0, u)
    ret = one.where(self, us.log() * (self / (us - 1)))
    return (self == math.inf).where(self, ret)
  def _atan01(self: Tensor) -> Tensor:
    # atan on [0, inf]: three ranges meeting at tan(pi/8) and tan(3pi/8), each mapped into |t| <= tan(pi/8), then the series
    a, f64 = self, self.dtype == dtypes.float64
    big, mid = a > 2.414213562373095, a > 0.41421356237309503
    t = big.where(-1 / big.where(a, 1.0), mid.where((a - 1) / (a + 1), a))
    n = 20 if f64 else 9   # 0.172**n / (2n+1) below half an ulp
    r = t * (1 + (t * t)._series([(-1) ** k / (2 * k + 1) for k in range(1, n + 1)]) * (t * t))   # (factored: atan(-0.0) is -0.0)
    return big.where(r + math.pi / 2, mid.where(r + math.pi / 4, r))
  def atan(self: Tensor) -> Tensor:
    """Elementwise arctangent, accurate to about an ulp over the whole line (argument reduction at tan(pi/8), tan(3pi/8))."""
    x = self._f32up()
    r = x._odd_abs()._atan01()
    return self._float()._with_grad((x < 0).where(-r, r).cast(self._float().dtype), "atan")
  def _odd_abs(self: Tensor) -> Tensor:
    # |x| for an odd function f(x) = sign(x) f(|x|), but x itself at +-0.0, so f(-0.0) is -0.0 as torch's
    return (self < 0).where(-self, self)
  def _asin01(self: Tensor) -> Tensor:
    # asin on [0, 1]: the series for a <= 1/2, else pi/2 - 2 asin(sqrt((1-a)/2)) (no cancellation near 1); NaN past 1
    a, f64 = self, self.dtype == dtypes.float64
    coeffs = [math.comb(2 * k, k) / (4 ** k * (2 * k + 1)) for k in range(1, (25 if f64 else 11) + 1)]
    def small(s: Tensor) -> Tensor: return s + s * (s * s)._series(coeffs) * (s * s)
    hi = a > 0.5
    s = hi.where((1 - a) * 0.5, 0.0).sqrt()
    return hi.where(math.pi / 2 - 2 * small(s), small(hi.where(0.0, a)))
  def asin(self: Tensor) -> Tensor:
    """Elementwise arcsine on [-1, 1] (NaN outside, as torch); accurate to about an ulp, also near +-1."""
    x = self._f32up()
    r = x._odd_abs()._asin01()
    return self._float()._with_grad((x < 0).where(-r, r).cast(self._float().dtype), "asin")
  def acos(self: Tensor) -> Tensor:
    """Elementwise arccosine on [-1, 1] (NaN outside): 2 asin(sqrt((1-x)/2)) near 1 and pi - that near -1, so small results
    keep their digits."""
    x = self._f32up()
    hi, lo = x > 0.5, x < -0.5
    s = hi.where((1 - x) * 0.5, lo.where((1 + x) * 0.5, 0.0)).sqrt()._asin01() * 2
    mid = math.pi / 2 - (hi | lo).where(0.0, x).abs()._asin01() * (hi | lo).where(1.0, x.sign())
    return self._float()._with_grad(hi.where(s, lo.where(math.pi - s, mid)).cast(self._float().dtype), "acos")
  def _big(self: Tensor) -> float:
    # above this, x**2 + 1 rounds to x**2 and sqrt(x**2 +- 1) is x: asinh/acosh are log(2x)
    return {dtypes.float64: 2.0 ** 28}.get(self.dtype, 2.0 ** 13)
  def asinh(self: Tensor) -> Tensor:
    """Elementwise inverse hyperbolic sine: log1p(a + a^2/(1 + sqrt(1 + a^2))) with a = |x| (exact near 0), log(a) + ln 2
    for large a (no overflow)."""
    x = self._f32up()
    a = x._odd_abs()
    big = a > x._big()
    s = big.where(1.0, a)
    r = big.where(big.where(a, 1.0).log() + math.log(2), (s * (1 + s / (1 + (s * s + 1).sqrt())))._log1p())
    return self._float()._with_grad((x < 0).where(-r, r).cast(self._float().dtype), "asinh")
  def acosh(self: Tensor) -> Tensor:
    """Elementwise inverse hyperbolic cosine on [1, inf) (NaN below 1): log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact
    near 1), log(x) + ln 2 for large x."""
    x = self._f32up()
    big = x > x._big()
    t = big.where(0.0, x - 1)
    r = big.where(big.where(x, 1.0).log() + math.log(2), (t + (t * (t + 2)).sqrt())._log1p())
    return self._float()._with_grad((x < 1).where(math.nan, r).cast(self._float().dtype), "acosh")   # t (t+2) > 0 again below -1
  def atanh(self: Tensor) -> Tensor:
    """Elementwise inverse hyperbolic tangent on [-1, 1] (+-inf at +-1, NaN outside): log1p(2a/(1-a))/2 with a = |x|."""
    x = self._f32up()
    a = x._odd_abs()
    r = (2 * a / (1 - a))._log1p() * 0.5
    return self._float()._with_grad((x < 0).where(-r, r).cast(self._float().dtype), "atanh")
  @_opmath
  def log10(self: Tensor) -> Tensor:
    """Elementwise base-10 logarithm."""
    return self.log2() * math.log10(2)
  def fmod(self: Tensor, x: Tensor | ConstType) -> Tensor:
    """Elementwise C remainder (torch.fmod): the result has the dividend's sign (Tensor.mod, %, has the divisor's). Ints use
    the truncating remainder (x fmod 0 is 0, as for %); floats give NaN for y = 0 or infinite x, and x for infinite y."""
    a, b = self._broadcasted(x)
    if not dtypes.is_float(a.dtype):
      if dtypes.is_bool(a.dtype): a, b = a.int(), b.int()
      return a._int_divmod(b, "fmod")[1]
    odt = a.dtype
    a, b = a._f32up(), b._f32up()
    # the rest is taken of finite a and b != 0 only, fed 1 fmod 1 elsewhere: its chain at b = 0 or +-inf gave NaN gradients
    # (torch's are 1 and -trunc(a/b): -0.0 for 1 fmod inf, -inf for 1 fmod 0)
    ok = a.isfinite() & b.isfinite() & (b != 0)
    af, bf = ok.where(a, 1.0), ok.where(b, 1.0)
    # a - b*q exactly (C's fmod; with b*q rounded 1 fmod 0.1 was 0, C's 0.09999999). q = trunc(a/b) is off by up to
    # a/b * 2**-mantissa_bits, so a second step reduces that rest: exact for quotients below 2**(2*mantissa_bits) (2**48
    # for float32), NaN past them
    r = af
    for _ in range(2): r = r._exact_rest(bf, (r / bf).trunc())
    # the rounded quotient can be one off: bring r back into [0, |b|) with a's sign
    ab, sa = bf.abs(), (af < 0).where(-af.ones_like(), 1.0)
    r = (r * sa < 0).where(r + sa * ab, r)
    r = ((r.abs() >= ab) & (r.abs() != 0)).where(r - sa * ab, r)
    # a zero result has a's sign (a * 0: a is finite there); NaN where a/b overflowed (1 fmod 1e-45: r was -inf), as torch;
    # a for infinite b, NaN for b = 0 or a infinite or NaN
    val = ok.where((r.abs() < ab).where((r == 0).where(a * 0, r), math.nan), (b.isinf() & a.isfinite()).where(a, math.nan))
    # the gradient is r's (1 and minus the exact quotient) where r is taken, torch's 1 and -trunc(a/b) elsewhere
    q = ok.where(0.0, a / b).trunc().detach()
    ret = ok.where(r, a - b * q)._with_grad(val, "same")
    return ret.cast(odt) if ret.dtype != odt else ret
  def _high_half(self: Tensor) -> Tensor:
    # the float with the low half of its mantissa cleared (x - that is exact, and a product of two such halves is too; for
    # float64's 53 bits the two low halves' product has 54: the last bit of an fmod may round)
    udt, bits = (dtypes.uint64, 27) if self.dtype == dtypes.float64 else (dtypes.uint32, 12)
    return (self.bitcast(udt) & ((1 << udt.itemsize * 8) - (1 << bits))).bitcast(self.dtype)
  def copysign(self: Tensor, other: Tensor | ConstType) -> Tensor:
    """Elementwise |self| with the sign of `other` (-0.0 counts as negative); the result dtype follows broadcasting, as in
    tinygrad (torch always returns a float)."""
    a, b = self._broadcasted(other)
    if not dtypes.is_float(b.dtype): return (b < 0).where(-a.abs(), a.abs())
    # b's sign bit, as C's copysign: -0.0 and a NaN with the bit set (x86's 0/0) are negative (b < 0 gave +|a| for -NaN)
    neg = b.bitcast(int_of_size(b.dtype.itemsize)) < 0
    # |a| with torch's gradient sign(a): NaN at a NaN a (abs's select gave 0), 0 at 0
    mag = (a * a.sign().detach())._with_grad(a.abs(), "same")
    ret = neg.where(-mag, mag)
    # minus a +0 made from `other`: it stays in the graph (a zero gradient, as torch) and a -0.0 result keeps its sign
    return ret - (b.isinf() | b.isnan()).where(0.0, b * 0).abs()
  def logaddexp(self: Tensor, other: Tensor | ConstType) -> Tensor:
    """Elementwise log(exp(self) + exp(other)), stable for large inputs: max + log1p(exp(min - max)); infinities of one sign
    give that infinity, and ties split the gradient evenly (a tie of infinities: NaN, as torch)."""
    # (a float result: an int beside an int tensor is a float operand, as in div)
    if _is_scalar(other) and type(other) is int and not dtypes.is_float(self.dtype): other = float(other)
    a, b = self._broadcasted(other)
    a, b = a._f32up(), b._f32up()
    hi, lo = a.maximum(b), a.minimum(b)
    # (a tie of infinities takes hi with a NaN gradient: torch's e**(a - out) there is e**(inf - inf))
    ret = (hi == lo).where(hi._with_grad(hi, "nan_at_inf"), hi) + (hi == lo).where(0.0, lo - hi).exp()._log1p()
    return (a.isnan() | b.isnan()).where(math.nan, ret).cast(self._broadcasted(other)[0]._float().dtype)
  def isclose(self: Tensor, other: Tensor | ConstType, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """True where |self - other| <= atol + rtol * |other| (torch.isclose); infinities are close only to themselves, NaN only
    to NaN with equal_nan."""
    a, b = self._broadcasted(other)
    if dtypes.is_int(a.dtype):
      # ints exactly (float32 of 2**40 and 2**40 + 1 is one value: they were close at rtol = atol = 0): |a - b| taken in
      # their width and read unsigned, then compared with the tolerance in float
      err = (a.maximum(b) - a.minimum(b)).bitcast(uint_of_size(a.dtype.itemsize))
      return (a == b) | (err._float() <= atol + rtol * b._float().abs())
    if not dtypes.is_float(a.dtype): a, b = a._float(), b._float()
    close = a.isfinite() & b.isfinite() & ((a - b).abs() <= atol + rtol * b.abs())
    close = close | ((a.isinf() | b.isinf()) & (a == b))
    return close | (a.isnan() & b.isnan()) if equal_nan else close
  def allclose(self: Tensor, other: Tensor | ConstType, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """A scalar bool Tensor, True when every element is close (isclose), as public tinygrad's (`.item()` reads it)."""
    return self.isclose(other, rtol, atol, equal_nan).all()
