"""Data types: scalar, vector and pointer dtypes, the promotion lattice, and numpy conversion."""
from __future__ import annotations
import builtins, math, struct, functools
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any, Callable, Final
from tinygrad.helpers import DEFAULT_FLOAT, DEFAULT_INT

ConstType = float | int | bool

class AddrSpace(Enum):
  GLOBAL = auto()
  LOCAL = auto()
  REG = auto()

@dataclass(frozen=True, eq=False)
class DType:
  priority: int     # order in the promotion lattice
  itemsize: int     # bytes of one element (the whole vector for vector dtypes)
  name: str
  fmt: str | None   # struct format character, None for types struct lacks
  count: int        # vector width, 1 for scalars
  _scalar: DType | None = None

  @staticmethod
  def new(priority: int, itemsize: int, name: str, fmt: str | None) -> DType: return _intern(DType, priority, itemsize, name, fmt, 1, None)
  def __reduce__(self): return _intern, (type(self),) + tuple(getattr(self, f) for f in self.__dataclass_fields__)
  def __repr__(self) -> str:
    # valid Python that evaluates back to the dtype: the short attribute name (dtypes.char, dtypes.bfloat16), not the C name
    if self.count == 1: return f"dtypes.{VEC_NAMES.get(self.name, self.name)}"
    return f"{self.scalar()!r}.vec({self.count})"
  def __lt__(self, o: DType) -> bool: return (self.priority, self.itemsize, self.name, self.fmt, self.count) < (o.priority, o.itemsize, o.name, o.fmt, o.count)
  # dtypes are interned (_intern: every one is made there, unpickled ones too, through __reduce__), so equal dtypes are one
  # object and eq=False's identity __eq__ and __hash__ are right. They stay C: a Python __hash__ ran for every key of the
  # UOp cache (each node built or freed hashes its dtype), ~0.1 us of a ~0.9 us node lookup and ~1 of ~3 us for a new one
  @property
  def base(self) -> DType: return self
  @property
  def vcount(self) -> int: return self.count
  @property
  def bitsize(self) -> int: return self.itemsize * 8   # (public tinygrad's: the bits of one element, the whole vector for a vector)
  @property
  def min(self) -> ConstType:
    """The smallest value of this dtype (public tinygrad's `dtypes.int8.min`; -inf for floats, False for bool)."""
    return dtypes.min(self)
  @property
  def max(self) -> ConstType:
    """The largest value of this dtype (`dtypes.uint8.max` is 255; inf for floats, True for bool)."""
    return dtypes.max(self)
  def vec(self, sz: int) -> DType:
    """The vector dtype of `sz` lanes of this scalar dtype."""
    if self.count != 1 and sz != 1: raise ValueError(f"cannot vectorize {self} (already a vector)")
    if sz == 1 or self == dtypes.void: return self
    return _intern(DType, self.priority, self.itemsize*sz, f"{VEC_NAMES[self.name]}{sz}", None, sz, self)
  def ptr(self, size: int = -1, addrspace: AddrSpace = AddrSpace.GLOBAL) -> PtrDType:
    """A pointer to `size` elements of this dtype in `addrspace`."""
    return _intern(PtrDType, self.priority, self.itemsize, self.name, self.fmt, self.count, None, self, addrspace, 1, size)
  def scalar(self) -> DType: return self._scalar if self._scalar is not None else self

@dataclass(frozen=True, eq=False)
class PtrDType(DType):
  _base: DType = None  # type: ignore[assignment]
  addrspace: AddrSpace = AddrSpace.GLOBAL
  v: int = 1
  size: int = -1       # number of elements pointed to, -1 when unknown

  @property
  def base(self) -> DType: return self._base
  def vec(self, sz: int) -> PtrDType:
    if self.v != 1 or sz == 1: return self
    return _intern(PtrDType, self.priority, self.itemsize, self.name, self.fmt, self.count, None, self._base, self.addrspace, sz, self.size)
  def ptr(self, size: int = -1, addrspace: AddrSpace = AddrSpace.GLOBAL) -> PtrDType: raise TypeError("cannot make a pointer to a pointer")
  def scalar(self) -> PtrDType:
    if self.v == 1: return self
    return _intern(PtrDType, self.priority, self.itemsize, self.name, self.fmt, self.count, None, self._base, self.addrspace, 1, self.size)
  @property
  def vcount(self) -> int: return self.v
  def __repr__(self) -> str:
    return f"{self._base!r}.ptr({self.size}{', '+str(self.addrspace) if self.addrspace != AddrSpace.GLOBAL else ''})" + (f".vec({self.v})" if self.v != 1 else "")

DTypeLike = str | DType   # what a dtype= argument accepts: a DType or its name ("float32", "half")

_interned: dict[tuple, DType] = {}
def _intern(cls: type, *args: Any) -> Any:
  """The one DType object for these fields."""
  key = (cls,) + args
  ret = _interned.get(key)
  if ret is None: _interned[key] = ret = cls(*args)
  return ret

class _DTypesMeta(type):
  # dtypes.default_float / default_int follow the DEFAULT_FLOAT / DEFAULT_INT flags (environment, Context), as public
  # tinygrad's; assigning them (dtypes.default_float = dtypes.half) sets the flag
  @property
  def default_float(cls) -> DType: return _flag_dtype(DEFAULT_FLOAT, dtypes.is_float, "a float")
  @default_float.setter
  def default_float(cls, v: DType | str) -> None: DEFAULT_FLOAT.value = v
  @property
  def default_int(cls) -> DType: return _flag_dtype(DEFAULT_INT, dtypes.is_int, "an int")
  @default_int.setter
  def default_int(cls, v: DType | str) -> None: DEFAULT_INT.value = v

def _flag_dtype(var: Any, ok: Callable[[DType], bool], kind: str) -> DType:
  v = var.value
  dt = v if isinstance(v, DType) else getattr(dtypes, v.lower(), None) if isinstance(v, str) and v.isidentifier() else None   # "HALF", "float16"
  if not isinstance(dt, DType) or not ok(dt): raise ValueError(f"{var.key}={v!r} is not {kind} dtype; valid: {', '.join(k for k in _NAMES if ok(DTYPES_DICT[k]))}")
  return dt

class dtypes(metaclass=_DTypesMeta):
  """The dtype namespace: `dtypes.float32`, `dtypes.is_float(dt)`, `dtypes.from_py(x)` ..."""
  void: Final[DType] = DType.new(-1, 0, "void", None)
  bool: Final[DType] = DType.new(0, 1, "bool", "?")
  int8: Final[DType] = DType.new(1, 1, "signed char", "b")
  uint8: Final[DType] = DType.new(2, 1, "unsigned char", "B")
  int16: Final[DType] = DType.new(3, 2, "short", "h")
  uint16: Final[DType] = DType.new(4, 2, "unsigned short", "H")
  int32: Final[DType] = DType.new(5, 4, "int", "i")
  uint32: Final[DType] = DType.new(6, 4, "unsigned int", "I")
  int64: Final[DType] = DType.new(7, 8, "long", "q")
  uint64: Final[DType] = DType.new(8, 8, "unsigned long", "Q")
  # fp8 (OCP e4m3fn / e5m2, and AMD's fnuz variants: no -0, no inf, NaN is 0x80, exponent bias one more): stored as bytes,
  # no struct format; no renderer computes them: codegen/decompositions.py lowers their loads, stores and casts to byte and
  # float32 ops (a renderer may take some over natively: Renderer.native_fp8)
  fp8e4m3: Final[DType] = DType.new(10, 1, "float8_e4m3", None)
  fp8e5m2: Final[DType] = DType.new(11, 1, "float8_e5m2", None)
  fp8e4m3fnuz: Final[DType] = DType.new(10, 1, "float8_e4m3fnuz", None)
  fp8e5m2fnuz: Final[DType] = DType.new(11, 1, "float8_e5m2fnuz", None)
  float16: Final[DType] = DType.new(11, 2, "half", "e")
  bfloat16: Final[DType] = DType.new(12, 2, "__bf16", None)
  float32: Final[DType] = DType.new(13, 4, "float", "f")
  float64: Final[DType] = DType.new(14, 8, "double", "d")
  # the weak int (public tinygrad's): a bound Variable as a tensor, Tensor(v). It takes the other operand's dtype in an op
  # (Tensor(v) + int8 tensor is int8, + 3 stays weak) and commits to default_int when computed; it never has a buffer
  weakint: Final[DType] = DType.new(0, 4, "weakint", "i")
  # aliases
  half = float16; float = float32; double = float64
  uchar = uint8; ushort = uint16; uint = uint32; ulong = uint64
  char = int8; short = int16; int = int32; long = int64
  index: DType = int32  # dtype of index arithmetic

  fp8_ocp: tuple[DType, ...] = (fp8e4m3, fp8e5m2)
  fp8_fnuz: tuple[DType, ...] = (fp8e4m3fnuz, fp8e5m2fnuz)
  fp8s: tuple[DType, ...] = fp8_ocp + fp8_fnuz
  floats: tuple[DType, ...] = fp8s + (float16, bfloat16, float32, float64)
  uints: tuple[DType, ...] = (uint8, uint16, uint32, uint64)
  sints: tuple[DType, ...] = (int8, int16, int32, int64)
  ints: tuple[DType, ...] = uints + sints
  all: tuple[DType, ...] = (bool,) + ints + floats

  @staticmethod
  def is_float(x: DType) -> builtins.bool: return x.scalar() in _FLOATS or isinstance(x, PtrDType) and x.base.scalar() in _FLOATS
  @staticmethod
  def is_int(x: DType) -> builtins.bool: return x.scalar() in _INTS
  @staticmethod
  def is_unsigned(x: DType) -> builtins.bool: return x.scalar() in _UINTS
  @staticmethod
  def is_bool(x: DType) -> builtins.bool: return x.scalar() == dtypes.bool
  @staticmethod
  def from_py(x: Any) -> DType:
    """The dtype a Python value (or nested list of them) becomes."""
    if x.__class__ is float: return dtypes.default_float
    if x.__class__ is int:  # int32 unless the value needs more, as torch and public tinygrad do for lists
      if dtypes.min(dtypes.default_int) <= x <= dtypes.max(dtypes.default_int): return dtypes.default_int
      if -2**63 <= x < 2**63: return dtypes.int64
      if 0 <= x < 2**64: return dtypes.uint64
      raise OverflowError(f"Python int {x} does not fit int64 or uint64 (the widest int dtypes); use a float dtype for it")
    if x.__class__ is bool: return dtypes.bool
    if isinstance(x, (list, tuple)):
      return max((dtypes.from_py(xi) for xi in x), default=dtypes.default_float)
    if hasattr(x, "dtype") and hasattr(x, "item"): return from_numpy(x.dtype)
    raise DTypeInferError(f"cannot infer a dtype from {type(x).__name__} {x!r}")
  @staticmethod
  def as_const(val: Any, dtype: DType) -> ConstType:
    """`val` converted to the Python type that holds a `dtype` value, with the device's wraparound for ints."""
    if isinstance(val, tuple): return tuple(dtypes.as_const(v, dtype) for v in val)  # type: ignore[return-value]
    s = dtype.scalar()
    if dtypes.is_int(s) and isinstance(val, float): return saturate_int(val, s)
    if dtypes.is_int(s): return truncate_int(int(val), s)
    if dtypes.is_float(s): return truncate_float(as_float(val, s), s)
    return bool(val)
  @staticmethod
  def min(dtype: DType) -> ConstType:
    s = dtype.scalar()
    if dtypes.is_int(s): return 0 if dtypes.is_unsigned(s) else -2**(s.itemsize*8-1)
    if s in _FP8: return -fp8_to_float(_FP8[s].maxcode, s) if _FP8[s].inf is None else -math.inf  # (no inf: the finite extreme)
    return -math.inf if dtypes.is_float(s) else False
  @staticmethod
  def max(dtype: DType) -> ConstType:
    s = dtype.scalar()
    if dtypes.is_int(s): return 2**(s.itemsize*8)-1 + (dtypes.min(s) if not dtypes.is_unsigned(s) else 0)  # type: ignore[operator]
    if s in _FP8: return fp8_to_float(_FP8[s].maxcode, s) if _FP8[s].inf is None else math.inf
    return math.inf if dtypes.is_float(s) else True
  @staticmethod
  def fields() -> dict[str, DType]: return DTYPES_DICT
  @staticmethod
  def finfo(dtype: DType) -> tuple[builtins.int, builtins.int]:
    """(exponent bits, mantissa bits) of a float dtype."""
    if dtype.scalar() not in _FINFO: raise TypeError(f"finfo needs a float dtype, got {dtype}; valid: {list(_FINFO)}")
    return _FINFO[dtype.scalar()]

_FINFO: dict[DType, tuple[int, int]] = {dtypes.fp8e4m3: (4, 3), dtypes.fp8e5m2: (5, 2), dtypes.fp8e4m3fnuz: (4, 3), dtypes.fp8e5m2fnuz: (5, 2),
  dtypes.float16: (5, 10), dtypes.bfloat16: (8, 7), dtypes.float32: (8, 23), dtypes.float64: (11, 52)}
_FLOATS, _INTS, _UINTS = frozenset(dtypes.floats), frozenset(dtypes.ints + (dtypes.weakint,)), frozenset(dtypes.uints)  # fast membership
def uint_of_size(itemsize: int) -> DType:
  """The unsigned int dtype of `itemsize` bytes (a value's bits read as an integer: bitcasts, exponent fields)."""
  return next(u for u in dtypes.uints if u.itemsize == itemsize)
def int_of_size(itemsize: int) -> DType:
  """The signed int dtype of `itemsize` bytes (a value's bits read as an integer whose sign is the sign bit)."""
  return next(i for i in dtypes.sints if i.itemsize == itemsize)
# floats narrower than float32: ops on them compute in float32 and round once, as torch's opmath does
OPMATH_F32: frozenset[DType] = frozenset((dtypes.float16, dtypes.bfloat16, *dtypes.fp8s))
# the dtypes numpy has no type for: numpy() gives their values as float32, files and numpy arrays hold their bits
NO_NUMPY: frozenset[DType] = frozenset((dtypes.bfloat16, *dtypes.fp8s))

DTYPES_DICT: dict[str, DType] = {"bool": dtypes.bool, "int8": dtypes.int8, "uint8": dtypes.uint8, "int16": dtypes.int16, "uint16": dtypes.uint16,
  "int32": dtypes.int32, "uint32": dtypes.uint32, "int64": dtypes.int64, "uint64": dtypes.uint64, "float16": dtypes.float16,
  "bfloat16": dtypes.bfloat16, "float32": dtypes.float32, "float64": dtypes.float64, "fp8e4m3": dtypes.fp8e4m3, "fp8e5m2": dtypes.fp8e5m2,
  "fp8e4m3fnuz": dtypes.fp8e4m3fnuz, "fp8e5m2fnuz": dtypes.fp8e5m2fnuz}
_NAMES: tuple[str, ...] = tuple(DTYPES_DICT)   # the canonical names (float16, not half)
INVERSE_DTYPES_DICT: dict[str, str] = {**{v.name: k for k, v in DTYPES_DICT.items()}, "void": "void"}
# as public tinygrad's: every dtype a tensor can hold by each of its names (the aliases too), no void
DTYPES_DICT.update({k: getattr(dtypes, k) for k in ("half", "float", "double", "uchar", "ushort", "uint", "ulong", "char", "short", "int", "long")})
# the short C-vector spelling of each scalar: float4, uchar4, half2
VEC_NAMES: dict[str, str] = {"bool": "bool", "signed char": "char", "unsigned char": "uchar", "short": "short", "unsigned short": "ushort",
  "int": "int", "unsigned int": "uint", "long": "long", "unsigned long": "ulong", "half": "half", "__bf16": "bfloat16", "float": "float",
  "double": "double", "weakint": "weakint", "float8_e4m3": "fp8e4m3", "float8_e5m2": "fp8e5m2", "float8_e4m3fnuz": "fp8e4m3fnuz",
  "float8_e5m2fnuz": "fp8e5m2fnuz"}

class DTypeNameError(ValueError, AttributeError):
  """An unknown dtype name (public tinygrad raises AttributeError from `getattr(dtypes, name)`; a ValueError too)."""

class DTypeInferError(TypeError, RuntimeError):
  """A Python value with no dtype (None, a dict): public tinygrad raises RuntimeError, a TypeError too."""

class DTypeArgError(TypeError, AttributeError):
  """A dtype that is neither a DType nor a name (public tinygrad raises AttributeError from `x.lower()`; a TypeError too)."""

def to_dtype(x: DType | str) -> DType:
  if isinstance(x, DType): return x
  if not isinstance(x, str): raise DTypeArgError(f"dtype must be a DType or its name, got {type(x).__name__} {x!r}; e.g. dtypes.float32 or 'float32'")
  if x in DTYPES_DICT: return DTYPES_DICT[x]
  alias = getattr(dtypes, x, None)
  if isinstance(alias, DType): return alias
  raise DTypeNameError(f"unknown dtype {x!r}; valid: {', '.join(_NAMES)}")

# ---- wraparound and rounding as a device computes them ----
def saturate_int(v: float, dt: DType) -> int:
  """A float converted to int dtype `dt` as every device does it (docs/guide.md, Numerics): truncated toward zero, clamped to
  the dtype's range (+-inf too), NaN -> 0."""
  if math.isnan(v): return 0
  lo, hi = dtypes.min(dt), dtypes.max(dt)
  return lo if v <= lo else hi if v >= hi else int(v)  # type: ignore[return-value]
def truncate_int(v: int, dt: DType) -> int:
  bits = dt.itemsize*8
  v &= (1 << bits) - 1
  return v - (1 << bits) if not dtypes.is_unsigned(dt) and v >= 1 << (bits-1) else v

def as_float(x: Any, dt: DType) -> float:
  """x as the Python float that float dtype `dt` rounds to x's nearest `dt` value: an int past 2**53 is the float64 rounded to
  odd for a dtype narrower than float64 (float(x) rounded it to nearest first, twice in all: 2**62 + 2**38 + 1 to 2**62 + 2**38,
  then float32's tie to even gave 2**62, not 2**62 + 2**39)."""
  if type(x) is not int or -2**53 <= x <= 2**53 or dt.itemsize >= 8: return float(x)
  f = float(x)
  if int(f) == x: return f
  if abs(int(f)) > abs(x): f = math.nextafter(f, 0.0)
  return struct.unpack("d", struct.pack("Q", struct.unpack("Q", struct.pack("d", f))[0] | 1))[0]

def truncate_float(v: float, dt: DType) -> float:
  if dt in _FP8: return fp8_to_float(float_to_fp8(v, dt), dt)   # (inf and NaN too: e4m3 has no inf)
  if dt == dtypes.float64 or math.isnan(v) or math.isinf(v): return v
  if dt == dtypes.float32:
    try: return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError: return math.copysign(math.inf, v)
  if dt == dtypes.float16:
    try: return struct.unpack("e", struct.pack("e", v))[0]
    except OverflowError: return math.copysign(math.inf, v)
  if dt == dtypes.bfloat16: return bf16_to_float(float_to_bf16_bits(v))
  if dt in _FP8: return fp8_to_float(float_to_fp8(v, dt), dt)
  raise TypeError(f"not a float dtype: {dt}")

def _f32_odd_bits(x: float) -> int:
  """The bits of float32(x) rounded to odd (toward 0, the last bit set where inexact; past float32's range FLT_MAX): a
  narrower float rounded from it is x rounded once (as codegen/decompositions.py to_f32_odd, which kernels use)."""
  try: u = struct.unpack("I", struct.pack("f", x))[0]
  except OverflowError: return 0x7f7fffff | (0x80000000 if x < 0 else 0)
  back = struct.unpack("f", struct.pack("I", u))[0]
  if back == x or math.isnan(x): return u
  return (u - 1 if abs(back) > abs(x) else u) | 1

def float_to_bf16_bits(x: float) -> int:
  """Round-to-nearest-even bfloat16 bits of x (rounded once, also from a float64 value)."""
  u = _f32_odd_bits(x)
  if (u & 0x7f800000) == 0x7f800000 and u & 0x7fffff: return 0x7fc0 | (u >> 16 & 0x8000)   # a quiet NaN, of x's sign (as ml_dtypes')
  u = u + (0x7fff + ((u >> 16) & 1))
  return (u >> 16) & 0xffff

def bf16_to_float(b: int) -> float: return struct.unpack("f", struct.pack("I", (b & 0xffff) << 16))[0]
# public tinygrad's names: the value a Python float becomes as a half / bfloat16 (a float, not bits)
def float_to_bf16(x: float) -> float: return bf16_to_float(float_to_bf16_bits(as_float(x, dtypes.bfloat16)))
def float_to_fp16(x: float) -> float: return truncate_float(float(x), dtypes.float16)

# ---- fp8: the formats and their conversions (the same integer algorithm the kernels run: codegen/decompositions.py) ----
@dataclass(frozen=True)
class FP8Format:
  mbits: int            # explicit mantissa bits
  bias: int             # exponent bias
  maxcode: int          # the largest finite magnitude's bits
  nan: int              # the NaN bits (OCP: | the sign; fnuz: 0x80, unsigned)
  inf: int | None       # the inf bits (| the sign), None: no inf
  overflow: int         # the bits a too-large magnitude rounds to (| the sign unless fnuz): e4m3 saturates, e5m2 is inf, fnuz NaN
  fnuz: bool            # no -0, NaN is 0x80
_FP8: dict[DType, FP8Format] = {dtypes.fp8e4m3: FP8Format(3, 7, 0x7e, 0x7f, None, 0x7e, False),
  dtypes.fp8e5m2: FP8Format(2, 15, 0x7b, 0x7f, 0x7c, 0x7c, False), dtypes.fp8e4m3fnuz: FP8Format(3, 8, 0x7f, 0x80, None, 0x80, True),
  dtypes.fp8e5m2fnuz: FP8Format(2, 16, 0x7f, 0x80, None, 0x80, True)}

def float_to_fp8(x: float, dt: DType) -> int:
  """The fp8 bits of x, rounded to nearest even (once, also from a float64 value); too large (inf too): e4m3 saturates to
  +-448, e5m2 is +-inf, the fnuz dtypes NaN (as torch's casts). NaN -> NaN; fnuz has no -0."""
  f = _FP8[dt]
  u = _f32_odd_bits(x)
  sign, a = (u >> 24) & 0x80, u & 0x7fffffff
  if a > 0x7f800000: return f.nan if f.fnuz else f.nan | sign
  sh = 23 - f.mbits
  if (a >> 23) > 127 - f.bias: code = (a + (1 << (sh-1)) - 1 + ((a >> sh) & 1) >> sh) - ((127 - f.bias) << f.mbits)   # normal: round the low bits
  else:   # an fp8 subnormal (or 0): the mantissa with its implicit bit, shifted right by the exponent gap, rounded to even
    s = min(sh + 128 - f.bias - (a >> 23), 25)
    m = (a & 0x7fffff) | (0x800000 if a >> 23 else 0)
    rem, half = m & ((1 << s) - 1), 1 << (s-1)
    code = (m >> s) + (1 if rem > half or rem == half and (m >> s) & 1 else 0)
  if code > f.maxcode: return f.overflow if f.fnuz else f.overflow | sign
  return code if f.fnuz and code == 0 else code | sign

def fp8_to_float(b: int, dt: DType) -> float:
  """The value of fp8 bits `b` (exact in float32)."""
  f = _FP8[dt]
  mag, neg = b & 0x7f, -1.0 if b & 0x80 else 1.0
  if f.inf is not None and mag == f.inf: return neg * math.inf
  if b == f.nan or not f.fnuz and mag > f.maxcode: return math.nan   # (e5m2: every code above inf)
  e, m = mag >> f.mbits, mag & ((1 << f.mbits) - 1)
  return neg * (math.ldexp(m, 1 - f.bias - f.mbits) if e == 0 else math.ldexp((1 << f.mbits) | m, e - f.bias - f.mbits))

# ---- promotion lattice (tinygrad's): an edge a -> b means a promotes to b ----
# uint64 with a signed int: no int holds both. Public tinygrad (0.14 and since, "like JAX") joins them at its weak float,
# which becomes the default float (int64(-5) + uint64(3) is -2.0); uint64 made it 2**64-2, float16 made 10**12 inf. The
# weak float is a node of the lattice only (below float16 and bfloat16, so int64 + float16 stays float16), never a dtype.
_WEAKFLOAT = DType.new(9, 4, "weakfloat", None)
PROMO_LATTICE: dict[DType, list[DType]] = {
  dtypes.bool: [dtypes.weakint], dtypes.weakint: [dtypes.int8, dtypes.uint8], dtypes.int8: [dtypes.int16], dtypes.int16: [dtypes.int32], dtypes.int32: [dtypes.int64],
  dtypes.int64: [_WEAKFLOAT], dtypes.uint8: [dtypes.int16, dtypes.uint16], dtypes.uint16: [dtypes.int32, dtypes.uint32],
  dtypes.uint32: [dtypes.int64, dtypes.uint64], dtypes.uint64: [_WEAKFLOAT], _WEAKFLOAT: list(dtypes.fp8s),
  **{d: [dtypes.float16, dtypes.bfloat16] for d in dtypes.fp8s},
  dtypes.float16: [dtypes.float32], dtypes.bfloat16: [dtypes.float32], dtypes.float32: [dtypes.float64]}

@functools.cache
def _get_recursive_parents(dtype: DType) -> frozenset[DType]:
  if dtype == dtypes.float64: return frozenset([dtypes.float64])
  return frozenset([dtype]).union(*(_get_recursive_parents(d) for d in PROMO_LATTICE[dtype]))

@functools.cache
def least_upper_dtype(*ds: DType) -> DType:
  """The smallest dtype every one of `ds` promotes to (int32 + float16 -> float16, int8 + uint8 -> int16)."""
  common = frozenset.intersection(*(_get_recursive_parents(d.scalar()) for d in ds))
  ret = min(common) if common else dtypes.float32
  return dtypes.default_float if ret is _WEAKFLOAT else ret
def least_upper_float(dt: DType) -> DType: return dt if dtypes.is_float(dt) else least_upper_dtype(dt, dtypes.default_float)
def strong_dtype(dt: DType) -> DType:
  """The dtype a weak dtype commits to when computed (the weak int: default_int); any other dtype is itself."""
  return dtypes.default_int if dt == dtypes.weakint else dt

# every value of the key is exactly a value of each dtype listed (numpy's can_cast "safe" less its int->float rounding:
# a float holds an int dtype only where its mantissa covers every value); bool goes anywhere, a dtype to itself. As public
# tinygrad's, no cast to bfloat16 is listed (int8 and the fp8s would fit): False only means "not known to be lossless"
_LOSSLESS: dict[DType, frozenset[DType]] = {
  dtypes.int8: frozenset({dtypes.int16, dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32, dtypes.float64}),
  dtypes.uint8: frozenset({dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float16,
                           dtypes.float32, dtypes.float64}),
  dtypes.int16: frozenset({dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64}),
  dtypes.uint16: frozenset({dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float32, dtypes.float64}),
  dtypes.int32: frozenset({dtypes.int64, dtypes.float64}), dtypes.uint32: frozenset({dtypes.int64, dtypes.uint64, dtypes.float64}),
  dtypes.int64: frozenset(), dtypes.uint64: frozenset(),
  **{d: frozenset({dtypes.float16, dtypes.float32, dtypes.float64}) for d in dtypes.fp8s},
  dtypes.float16: frozenset({dtypes.float32, dtypes.float64}), dtypes.bfloat16: frozenset({dtypes.float32, dtypes.float64}),
  dtypes.float32: frozenset({dtypes.float64}), dtypes.float64: frozenset()}
def can_lossless_cast(dt0: DType, dt1: DType) -> bool:
  """Whether casting dt0 to dt1 keeps every value of dt0 (int8 -> float16 does, int32 -> float32 and int8 -> uint64 do not)."""
  if dt0 == dt1 or dt0 == dtypes.bool: return True
  if dt1 == dtypes.weakint: return dt0 in dtypes.ints
  return dt1 in _LOSSLESS.get(dt0, frozenset())

def sum_acc_dtype(dt: DType, int64: bool = True) -> DType:
  """The dtype a sum (cumsum, integer prod) accumulates in and returns: ints and bools in int64 as torch (uint64 stays
  uint64), floats in at least float32. int64=False (a device without 64-bit ints): the widest 32-bit kind instead."""
  if not int64 and (dtypes.is_int(dt) or dt == dtypes.bool):
    return least_upper_dtype(dt, dtypes.uint32 if dtypes.is_unsigned(dt) else dtypes.int32)
  if dt == dtypes.uint64: return dt
  if dtypes.is_int(dt) or dt == dtypes.bool: return dtypes.int64
  return least_upper_dtype(dt, dtypes.float32)

# ---- numpy conversion (numpy imported lazily: keeps `import tinygrad` fast) ----
_NP_NAMES = {"bool": dtypes.bool, "int8": dtypes.int8, "uint8": dtypes.uint8, "int16": dtypes.int16, "uint16": dtypes.uint16,
  "int32": dtypes.int32, "uint32": dtypes.uint32, "int64": dtypes.int64, "uint64": dtypes.uint64, "float16": dtypes.float16,
  "float32": dtypes.float32, "float64": dtypes.float64}
# numpy dtypes that packages add (ml_dtypes', which jax, onnx and torch's numpy() of them give), known by name and item
# size, so the core needs no import of them: their bits are ours
_NP_EXTRA = {"bfloat16": dtypes.bfloat16, "float8_e4m3fn": dtypes.fp8e4m3, "float8_e5m2": dtypes.fp8e5m2, "float8_e4m3fnuz": dtypes.fp8e4m3fnuz,
  "float8_e5m2fnuz": dtypes.fp8e5m2fnuz}

def from_numpy(npdtype: Any) -> DType:
  """The tinygrad dtype of a numpy dtype (or type); ml_dtypes' bfloat16 and float8 types are bfloat16 and the fp8 dtypes."""
  import numpy as np
  name, size = np.dtype(npdtype).name, np.dtype(npdtype).itemsize
  if name in _NP_EXTRA and _NP_EXTRA[name].itemsize == size: return _NP_EXTRA[name]
  if name not in _NP_NAMES: raise TypeError(f"numpy dtype {name} has no tinygrad dtype; supported: {', '.join(_NP_NAMES)}")
  return _NP_NAMES[name]

def to_numpy(dtype: DType) -> Any:
  """The numpy dtype of a scalar tinygrad dtype (bfloat16 has none: it is returned as float32 by Tensor.numpy)."""
  import numpy as np
  if dtype.scalar() in NO_NUMPY: raise TypeError(f"numpy has no {INVERSE_DTYPES_DICT[dtype.scalar().name]}")
  if dtype.scalar() == dtypes.weakint: dtype = dtypes.default_int   # what a weak int commits to when computed
  return np.dtype(INVERSE_DTYPES_DICT[dtype.scalar().name])

# ---- public tinygrad's names for the same conversions (programs import them) ----
# truncate[dtype](x): the Python value x as `dtype` stores it (ints wrap around, floats round)
truncate: dict[DType, Callable[[Any], Any]] = {dtypes.bool: bool, **{d: functools.partial(lambda d, x: truncate_int(int(x), d), d) for d in dtypes.ints},
                                               **{d: functools.partial(lambda d, x: truncate_float(as_float(x, d), d), d) for d in dtypes.floats}}
def to_storage_scalar(x: Any, dtype: DType) -> Any:
  """The Python value a buffer of `dtype` stores for `x`: bfloat16 and fp8 values as their bits (ints), others rounded as stored."""
  if dtype == dtypes.bfloat16: return float_to_bf16_bits(as_float(x, dtype))
  if dtype in _FP8: return float_to_fp8(as_float(x, dtype), dtype)
  return truncate[dtype](x)
def from_storage_scalar(x: Any, dtype: DType) -> Any:
  """The value of a stored scalar: bfloat16 and fp8 bits to their float value; other dtypes' values as they are."""
  if dtype == dtypes.bfloat16: return bf16_to_float(int(x))
  if dtype in _FP8: return fp8_to_float(int(x), dtype)
  return x
def _to_np_dtype(dtype: DType) -> Any:
  """The numpy scalar type of `dtype` (np.float32 for bfloat16, which numpy lacks), or None for void."""
  import numpy as np
  if dtype == dtypes.void: return None
  return np.float32 if dtype.scalar() in NO_NUMPY else to_numpy(dtype).type
_from_np_dtype = from_numpy
def _to_torch_dtype(dtype: DType) -> Any:
  """The torch dtype of `dtype`'s storage (torch is imported here: it is never a dependency), or None for void. As public
  tinygrad's, fp8 is torch.uint8, its bytes (`_from_torch_dtype` also reads torch's own float8 dtypes as fp8)."""
  import torch
  if dtype == dtypes.void: return None
  if dtype.scalar() in _FP8: return torch.uint8
  return torch.bfloat16 if dtype.scalar() == dtypes.bfloat16 else getattr(torch, INVERSE_DTYPES_DICT[dtype.scalar().name])
def _from_torch_dtype(torchdtype: Any) -> DType:
  """The tinygrad dtype of a torch dtype; TypeError naming the supported ones for the others (complex, fp8 ...)."""
  name = {"float8_e4m3fn": "fp8e4m3", "float8_e5m2": "fp8e5m2", "float8_e4m3fnuz": "fp8e4m3fnuz", "float8_e5m2fnuz": "fp8e5m2fnuz"}.get(
    n := str(torchdtype).removeprefix("torch."), n)
  if name not in _NAMES: raise TypeError(f"torch dtype {torchdtype} has no tinygrad dtype; supported: {', '.join(_NAMES)}")
  return DTYPES_DICT[name]
