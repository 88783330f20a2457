"""WGSLRenderer: linearized uops -> one WGSL compute shader.

Why our own walk on top of CStyleLanguage: the expressions are C-like enough that the base's literal rendering,
`code_for_op` table and string_rewrite dispatch carry over, but every statement differs (`let x = ...;`,
`var acc: array<f32, 4>;`, no pointers, `select` for `?:`, module-scope bindings instead of arguments), and memory of
8/16-bit types is not addressable in WGSL at all. So `render` is our own and the statement shapes live here.

Memory (WGSL has 32-bit storage types only, f16 with the `shader-f16` feature, i64/u64 with wgpu-native's `shader-int64`):
- float32/int32/uint32 (and float16, int64, uint64 with their features) are plain `array<T>` bindings.
- bool, int8, uint8 (bytes) and int16, uint16, float16 without the feature (halves) are packed into `array<u32>` words in
  the host's little-endian layout, so copy-in/out need no conversion. Reads shift and mask the word. Stores are two
  atomics on an `array<atomic<u32>>` binding: `atomicAnd` clears the lane, `atomicOr` sets it. Each clears/sets only its
  own bits, so two invocations storing to different lanes of one word never lose each other's write (a plain
  read-modify-write would). Registers hold these types as i32/u32 (f32 for emulated float16), wrapped to their width
  after every op.
- bfloat16 (which WGSL lacks) is packed as halves too and held in f32 registers whose value is always a bfloat16 one: a
  load shifts the bits up, a store shifts them down, and every cast to bfloat16 and ALU op of bfloat16 rounds its f32
  result to nearest even (`bf16r`, a module function: NaN -> the quiet 0x7fc0 of its sign, as the host's conversion and ml_dtypes').
- float64 (and int64, uint64 without `shader-int64`) are not supported: `supported_dtypes` leaves them out and
  the core refuses them with "dtype ... is not supported on WEBGPU" before any kernel is built.

Launch: the core gives up to three SPECIAL gidxN indices. The shader is always dispatched 1-D in workgroups of
`workgroup_size` (from the adapter's limits), folded into x and y when there are more than `max_dispatch` groups; the
invocation's linear index is split back into gidx0..2 and invocations past the end return early (no barriers exist
without shared memory, so the early return is safe). A kernel with lidxN threads (the optimizer's LOCAL/GROUP) is one
workgroup per block instead: `@workgroup_size` is the product of its lidx sizes, gidx0..2 come from the workgroup's
linear index and lidx0..2 from `local_invocation_index`; workgroups past the end return early, a condition uniform across
the workgroup, so `workgroupBarrier()` stays in uniform control flow. DEFINE_LOCAL is a module-scope `var<workgroup>`.
The runtime passes the launch sizes and the DEFINE_VAR values in
one uniform buffer (binding after the data buffers): `launch[0] = (total, gx, gy, gz)`, `launch[1..]` = variables.
Buffer i of the kernel is binding i, also when the kernel no longer reads it (the optimizer can fold a load away; the
runtime still passes every buffer).

Loops: on llvmpipe an invocation may take only 65535 loop back-edges in all (see `plan_unroll`), so there the device sets
`loop_budget` and loops that would take more are unrolled: k copies of the body per trip, the innermost loops first.
"""
from __future__ import annotations
import math, re, struct
from collections import defaultdict
from typing import Any, Callable
from tinygrad.plugin_api import Ops, GroupOp, UOp, UPat, PatternMatcher, DType, PtrDType, AddrSpace, dtypes, CStyleLanguage

# dtype -> (register type, lanes per u32 word when packed in memory (0: a plain array<T>))
_PACKED = {dtypes.bool: 4, dtypes.int8: 4, dtypes.uint8: 4, dtypes.int16: 2, dtypes.uint16: 2, dtypes.bfloat16: 2}
_REG = {dtypes.bool: "bool", dtypes.int8: "i32", dtypes.uint8: "u32", dtypes.int16: "i32", dtypes.uint16: "u32",
        dtypes.int32: "i32", dtypes.uint32: "u32", dtypes.float32: "f32", dtypes.float16: "f16",
        dtypes.int64: "i64", dtypes.uint64: "u64",   # the 64-bit ints with wgpu-native's `shader-int64` feature only
        dtypes.bfloat16: "f32"}                      # (a value bfloat16 holds exactly: see bf16r)
_NARROW = {dtypes.int8: 8, dtypes.uint8: 8, dtypes.int16: 16, dtypes.uint16: 16}

def _wrap(x: str, dt: DType) -> str:
  """x (an i32/u32 expression) wrapped to dt's width: sign-extend or mask."""
  bits = _NARROW.get(dt.scalar())
  if bits is None: return x
  return f"(({x}<<{32-bits}u)>>{32-bits}u)" if not dtypes.is_unsigned(dt) else f"({x}&{(1 << bits) - 1}u)"

def _idiv(op: str) -> Callable[..., str]:
  # WGSL defines x/0 as x and x%0 as 0; the IR (like the PYTHON device) wants 0 for both. Literal divisors, the common
  # case in index math, stay a plain operator; INT_MIN/-1 already gives INT_MIN (= -a wrapped), as the IR wants
  def f(a: str, b: str, dtype: DType) -> str:
    if dtypes.is_float(dtype): return f"({a}{op}{b})"
    if re.fullmatch(r"-?\d+l?[iu]?", b) and int(b.rstrip("liu")) != 0: return f"({a}{op}{b})"
    return f"select(({a}{op}{b}), {_zero(dtype)}, ({b})=={_zero(dtype)})"
  return f

# f32 -> the nearest-even bfloat16, as an f32 (the bits' top half); NaN -> the quiet 0x7fc0 of its sign, as dtype.float_to_bf16_bits
_BF16R = ("fn bf16r(x: f32) -> f32 { let u = bitcast<u32>(x); "
          "return bitcast<f32>(select((u + 0x7fffu + ((u >> 16u) & 1u)) & 0xffff0000u, (u & 0x80000000u) | 0x7fc00000u, (u & 0x7fffffffu) > 0x7f800000u)); }")
def _bf16_round(v: float) -> float:   # the host's rounding of a literal (float32 first: a CONST's value already is one)
  try: u = struct.unpack("I", struct.pack("f", v))[0]
  except OverflowError: return math.copysign(math.inf, v)
  return struct.unpack("f", struct.pack("I", ((u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000) & 0xffffffff))[0]

def _zero(dt: DType) -> str:
  return {"bool": "false", "i32": "0i", "u32": "0u", "f32": "0.0f", "f16": "0.0h", "i64": "0li", "u64": "0lu"}[_REG[dt.scalar()]]
def _cmp_bool(op: str) -> Callable[..., str]:
  # WGSL orders numbers only: a<b on bools is !a&&b
  return lambda a, b, dtype: f"((!{a})&&{b})" if dtype == dtypes.bool else f"({a}{op}{b})"

def _isnan(x: str, dtype: DType) -> str:
  # WGSL lets the compiler assume floats are never NaN (llvmpipe folds x!=x to false): test the bits instead
  # (float16 via f32, which keeps NaN: WGSL has no bitcast of a lone f16, and naga rejects bitcast<u32>(vec2<f16>))
  return f"((bitcast<u32>({'f32(' + x + ')' if dtype.scalar() == dtypes.float16 else x})&0x7fffffffu)>0x7f800000u)"

def _cmpne(a: str, b: str, dtype: DType) -> str:
  # naga lowers a float != to an ordered compare (NaN != 1.0 is false): negate the == instead, which NaN fails as IEEE says
  if not dtypes.is_float(dtype): return f"({a}!={b})"
  return _isnan(a, dtype) if a == b else f"(!({a}=={b}))"

def _max(a: str, b: str, dtype: DType) -> str:
  # numpy.maximum propagates NaN from either side; WGSL's max() may return either operand
  if dtypes.is_float(dtype): return f"select({b}, {a}, (({a}>{b})||{_isnan(a, dtype)}))"
  return f"({a}||{b})" if dtype == dtypes.bool else f"max({a}, {b})"

def _times_inf(x: UOp, inf: float) -> UOp:
  # IEEE's x * +-inf by selects: NaN for 0 and NaN, else the infinity of the product's sign
  bad = x.eq(x.const_like(0.0)) | x.ne(x)
  return bad.where(x.const_like(math.nan), (x < x.const_like(0.0)).where(x.const_like(-inf), x.const_like(inf)))

def _nonfinite(x: UOp) -> UOp:
  # x is inf or NaN, by its exponent bits (float16 through float32, which keeps both): a compare with inf may be folded
  f = x if x.dtype.scalar() == dtypes.float32 else x.cast(dtypes.float32.vec(x.dtype.count))
  e = f.bitcast(dtypes.uint32.vec(x.dtype.count)) & UOp.const(dtypes.uint32.vec(x.dtype.count), 0x7f800000)
  return e.eq(e.const_like(0x7f800000))

def _signbit(x: UOp) -> UOp:
  # x's sign bit (float16 through float32, which keeps it): x < 0 is false for -0.0, whose product with +0.0 is -0.0
  f = x if x.dtype.scalar() == dtypes.float32 else x.cast(dtypes.float32.vec(x.dtype.count))
  s = f.bitcast(dtypes.uint32.vec(x.dtype.count)) & UOp.const(dtypes.uint32.vec(x.dtype.count), 0x80000000)
  return s.ne(s.const_like(0))

def _plus_zero(r: UOp) -> UOp:
  # a float sum starts from +0.0, so IEEE never gives -0.0 (+0 + -0 is +0); the compiler folds 0.0 + x to x (a sum of -0.0
  # was -0.0, torch 0.0): the result's -0.0 made +0.0 by its bits, which it keeps
  f = r if r.dtype.scalar() == dtypes.float32 else r.cast(dtypes.float32.vec(r.dtype.count))
  b = f.bitcast(dtypes.uint32.vec(r.dtype.count))
  ret = b.eq(b.const_like(0x80000000)).where(b.const_like(0), b).bitcast(f.dtype)
  return ret if ret.dtype == r.dtype else ret.cast(r.dtype)

def _float_const(c: UOp, want: Callable[[float], bool]) -> bool: return isinstance(c.arg, float) and dtypes.is_float(c.dtype) and want(c.arg)

# the shader compiler may assume no float is inf or NaN (llvmpipe does): it took a division by the literal 0.0 as
# undefined (it stored 0, or nothing: the output kept an old buffer's bytes) and folded x * 0 and x - x to 0, also for an
# inf or NaN x (torch's NaN: NaN * 0 was 0, var over one element 0 * inf = 0). These are written with selects of the
# bit-pattern constants and bit tests instead, which it keeps
pm_wgsl = PatternMatcher([
  (UPat(Ops.FDIV, src=(UPat.var("x"), UPat.cvar("c"))),
   lambda x, c: _times_inf(x, math.copysign(math.inf, c.arg)) if _float_const(c, lambda v: v == 0) else None),   # x / +-0.0 -> x * +-inf
  (UPat(Ops.MUL, src=[UPat.var("x"), UPat.cvar("c")]),
   lambda x, c: _times_inf(x, c.arg) if _float_const(c, math.isinf) else None),                                  # x * +-inf by selects
  (UPat(Ops.MUL, src=[UPat.var("x"), UPat.cvar("c")]), lambda x, c: _nonfinite(x).where(x.const_like(math.nan),
   _signbit(x).where(x.const_like(-c.arg), c)) if _float_const(c, lambda v: v == 0) else None),                 # x * +-0.0: NaN at inf, NaN; zero by sign bits
  (UPat(Ops.REDUCE, arg=Ops.ADD, name="r"), lambda r: _plus_zero(r.replace(tag="+0")) if dtypes.is_float(r.dtype) and r.tag is None else None),  # sum: -0.0 -> +0.0
  (UPat(Ops.ADD, src=[UPat.var("x"), UPat.cvar("c")]),
   lambda x, c: _plus_zero(x) if _float_const(c, lambda v: v == 0 and math.copysign(1.0, v) > 0) else None),   # x + 0.0 (folded to x): -0.0 -> +0.0
  (UPat(Ops.SUB, src=(UPat.var("x"), UPat.var("x"))),
   lambda x: _nonfinite(x).where(x.const_like(math.nan), x.const_like(0.0)) if dtypes.is_float(x.dtype) else None),   # x - x: NaN at inf, NaN
])

wgsl_code_for_op: dict[Ops, Callable[..., str]] = {
  Ops.ADD: lambda a, b, dtype: f"({a}||{b})" if dtype == dtypes.bool else f"({a}+{b})",
  Ops.SUB: lambda a, b, dtype: f"({a}-{b})", Ops.MUL: lambda a, b, dtype: f"({a}&&{b})" if dtype == dtypes.bool else f"({a}*{b})",
  Ops.IDIV: _idiv("/"), Ops.MOD: _idiv("%"), Ops.FDIV: lambda a, b, dtype: f"({a}/{b})",
  Ops.CMPLT: _cmp_bool("<"), Ops.CMPNE: _cmpne, Ops.CMPEQ: lambda a, b, dtype: f"({a}=={b})",
  Ops.AND: lambda a, b, dtype: f"({a}&{b})", Ops.OR: lambda a, b, dtype: f"({a}|{b})",
  Ops.XOR: lambda a, b, dtype: f"({a}!={b})" if dtype == dtypes.bool else f"({a}^{b})",
  Ops.SHL: lambda a, b, dtype: f"({a}<<u32({b}))", Ops.SHR: lambda a, b, dtype: f"({a}>>u32({b}))",   # WGSL shifts by u32
  Ops.NEG: lambda x, dtype: f"(!{x})" if dtype == dtypes.bool else f"(-({x}))",
  Ops.RECIPROCAL: lambda x, dtype: f"(1.0/{x})", Ops.MAX: _max,
  Ops.WHERE: lambda c, a, b, dtype: f"select({b}, {a}, {c})", Ops.MULACC: lambda a, b, c, dtype: f"(({a}*{b})+{c})",
  Ops.SQRT: lambda x, dtype: f"sqrt({x})",
  Ops.SIN: lambda x, dtype: f"sin({x})", Ops.TRUNC: lambda x, dtype: f"trunc({x})",   # LOG2, EXP2 decomposed (builtins: >2 ulp)
}

class WGSLRenderer(CStyleLanguage):
  """WGSL for wgpu. The device fills in the adapter's limits (`workgroup_size`, `max_dispatch`, `max_buffers`) and whether
  float16 is native (`native_f16`) after it opens; the class defaults are WebGPU's guaranteed minimums."""
  device = "WEBGPU"
  has_local = True              # global loops become launch indices
  has_shared = True             # var<workgroup> arrays and workgroupBarrier()
  global_max = (2**31 - 1, 2**31 - 1, 2**31 - 1)   # any size: the launch is re-folded (module docstring)
  local_max: tuple[int, ...] | None = (256, 256, 64)   # WebGPU's guaranteed minimums (256 invocations per workgroup)
  shared_max = 16384
  infinity = "bitcast<f32>(0x7f800000u)"
  nan = "bitcast<f32>(0x7fc00000u)"
  code_for_op = wgsl_code_for_op
  extra_matcher = pm_wgsl
  unaligned_vectors = False   # storage arrays hold vec4s only at 16-byte strides
  workgroup_size = 64
  max_dispatch = 65535
  max_buffers = 8
  native_f16 = False
  native_i64 = False
  loop_budget: int | None = None   # loop back-edges one invocation may take (llvmpipe's limiter, see plan_unroll); None: any
  max_unroll = 1024                # most copies of one loop body plan_unroll emits
  # WGSL's builtin sin reduces its argument in float32: measured on llvmpipe, <=2 ulp up to |x| ~ 3e4, 14+ ulp at 1e5.
  # The core's exact decomposition needs uint64, which WGSL lacks, so the accuracy domain is declared instead.
  approx_domain = {Ops.SIN: 16384.0}
  f16_bit_moves = False   # (16-bit values are packed in u32 words; f16 loads and stores are moves already)
  supported_dtypes = frozenset([dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
                                dtypes.float32, dtypes.bfloat16])

  def set_abilities(self, workgroup_size: int, max_dispatch: int, max_buffers: int, native_f16: bool, loop_budget: int | None = None,
                    native_i64: bool = False, local_max: tuple[int, ...] | None = None, shared_max: int | None = None) -> None:
    """Called by the device with its adapter's limits; float16 is supported only where the adapter has `shader-f16`, int64
    and uint64 only where it has wgpu-native's `shader-int64`. `local_max` ends with the invocations per workgroup."""
    self.workgroup_size, self.max_dispatch, self.max_buffers, self.native_f16 = workgroup_size, max_dispatch, max_buffers, native_f16
    if local_max is not None: self.local_max = local_max
    if shared_max is not None: self.shared_max = shared_max
    self.loop_budget, self.native_i64 = loop_budget, native_i64
    self.supported_dtypes = type(self).supported_dtypes | (frozenset([dtypes.float16]) if native_f16 else frozenset()) | \
      (frozenset([dtypes.int64, dtypes.uint64]) if native_i64 else frozenset())

  # ---- types and literals ----
  def reg(self, dt: DType) -> str:
    if dt.scalar() not in _REG: raise TypeError(f"dtype {dt.scalar()} is not supported on WEBGPU")
    t = "f32" if dt.scalar() == dtypes.float16 and not self.native_f16 else _REG[dt.scalar()]
    return t if dt.count == 1 else f"vec{dt.count}<{t}>"
  def render_dtype(self, dt: DType, mutable: bool = True) -> str: return self.reg(dt.base if isinstance(dt, PtrDType) else dt)
  def render_const(self, v: Any, dt: DType) -> str:
    if dt.count > 1: return f"{self.reg(dt)}({self.render_const(v, dt.scalar())})"
    t = self.reg(dt)
    if t == "bool": return "true" if v else "false"
    if t in ("f32", "f16"):
      if math.isnan(v): return self.nan if t == "f32" else f"f16({self.nan})"
      if math.isinf(v): return (self.infinity if v > 0 else f"(-{self.infinity})") if t == "f32" else f"f16({'' if v > 0 else '-'}{self.infinity})"
      f32 = _bf16_round(v) if dt.scalar() == dtypes.bfloat16 else struct.unpack("f", struct.pack("f", v))[0]
      if t == "f16": return f"{float(v)!r}h" if abs(v) < 65504 else f"f16({f32!r}f)"
      ret = (repr(f32) if float(repr(f32)) == f32 else f32.hex()) + "f"
      return ret if f32 >= 0 and not ret.startswith("-") else f"({ret})"
    v = int(v)
    if t == "u32": return f"{v & 0xffffffff}u"
    if t == "u64": return f"{v & 0xffffffffffffffff}lu"
    if t == "i64": return "(-9223372036854775807li-1li)" if v == -2**63 else f"{v}li" if v >= 0 else f"({v}li)"
    if v == -2**31: return "(-2147483647i-1i)"
    return f"{v}i" if v >= 0 else f"({v}i)"   # parenthesised: `a--1i` would not parse
  def render_vectorize(self, elems: list[str], dt: DType) -> str: return f"{self.reg(dt)}({','.join(elems)})"
  def render_gep(self, vec: str, lane: int, dt: DType) -> str: return f"{vec}[{lane}]"

  # ---- memory ----
  def lanes(self, dt: DType) -> int:
    """Elements per u32 word for a packed buffer of dt, 0 for a plain array<T>."""
    if dt.scalar() == dtypes.float16 and not self.native_f16: return 2
    return _PACKED.get(dt.scalar(), 0)
  def _load(self, x: UOp) -> str:
    idx = x.src[0]
    buf, i = idx.src[0], self.r[idx.src[1]]
    gate = self.r[idx.src[2]] if len(idx.src) > 2 else None
    # a gated-off index may be out of range, even a negative constant naga rejects (select() evaluates both arms): index 0
    if gate is not None: i = f"select({self.render_const(0, idx.src[1].dtype)}, {i}, {gate})"
    dt = x.dtype
    if not isinstance(buf.dtype, PtrDType) or buf.dtype.addrspace is not AddrSpace.GLOBAL or not (n := self.lanes(buf.dtype.base)):
      val = f"{self.r[buf]}[{i}]"
    else:
      word = f"{self.r[buf]}[u32({i})>>{n.bit_length()-1}u]"
      if buf in self.atomic: word = f"atomicLoad(&{word})"
      bits = 32 // n
      if dt.scalar() == dtypes.float16: val = f"unpack2x16float({word})[u32({i})&1u]"
      elif dt.scalar() == dtypes.bfloat16: val = f"bitcast<f32>((({word}>>((u32({i})&1u)*16u))&65535u)<<16u)"
      else:
        lane = f"(({word}>>((u32({i})&{n-1}u)*{bits}u))&{(1 << bits)-1}u)"
        if dt.scalar() == dtypes.bool: val = f"({lane}!=0u)"
        elif dtypes.is_unsigned(dt): val = lane
        else: val = _wrap(f"bitcast<i32>({lane})", dt)
    return val if gate is None else f"select({self.render_const(0, dt)}, {val}, {gate})"
  def _store(self, x: UOp) -> str:
    idx, v = x.src[0], self.r[x.src[1]]
    buf, i = idx.src[0], self.r[idx.src[1]]
    gate = self.r[idx.src[2]] if len(idx.src) > 2 else None
    # a gated-off index may be out of range, even a negative constant naga rejects (select() evaluates both arms): index 0
    if gate is not None: i = f"select({self.render_const(0, idx.src[1].dtype)}, {i}, {gate})"
    dt = x.src[1].dtype
    if not isinstance(buf.dtype, PtrDType) or buf.dtype.addrspace is not AddrSpace.GLOBAL or not (n := self.lanes(buf.dtype.base)):
      st = f"{self.r[buf]}[{i}] = {v};"
    else:
      bits, mask = 32 // n, (1 << (32 // n)) - 1
      if dt.scalar() == dtypes.bool: bitsv = f"select(0u, 1u, {v})"
      elif dt.scalar() == dtypes.float16: bitsv = f"(pack2x16float(vec2<f32>({v}, 0.0f))&{mask}u)"
      elif dt.scalar() == dtypes.bfloat16: bitsv = f"(bitcast<u32>({v})>>16u)"   # (the register holds a bfloat16 value)
      else: bitsv = f"(bitcast<u32>({v})&{mask}u)"
      w = f"&{self.r[buf]}[wi]"
      st = (f"{{ let wi = u32({i})>>{n.bit_length()-1}u; let sh = (u32({i})&{n-1}u)*{bits}u; "
            f"atomicAnd({w}, ~({mask}u<<sh)); atomicOr({w}, {bitsv}<<sh); }}")
    return st if gate is None else f"if ({gate}) {{ {st} }}"   # WGSL's if always takes a block

  def _alu(self, x: UOp) -> str:
    ops = [self.r[s] for s in x.src]
    if x.op in (Ops.SHL, Ops.SHR) and x.src[1].op is Ops.CONST: ops[1] = f"{int(x.src[1].arg)}"
    # C converts mixed operands implicitly (the decompositions rely on it, e.g. an int WHERE arm in float math); WGSL does not
    want = x.src[0].dtype if x.op in GroupOp.Comparison else x.dtype
    for i, src in enumerate(x.src):
      if (x.op is Ops.WHERE and i == 0) or (x.op in (Ops.SHL, Ops.SHR) and i == 1): continue
      if src.dtype.scalar() != want.scalar(): ops[i] = f"{self.reg(want)}({ops[i]})"
    # comparisons are chosen by their operands' dtype (a<b on bools differs), the rest by the result's
    ret = self.code_for_op[x.op](*ops, dtype=x.src[0].dtype if x.op in GroupOp.Comparison else x.dtype)
    if x.op not in GroupOp.Comparison: ret = _wrap(ret, x.dtype)
    # computed in f32, rounded once (torch's); a WHERE picks one of two bfloat16 values as it is (cat, pad and where move
    # NaN payloads bit for bit: bf16r would make them 0x7fc0)
    return self._bf16r(ret, x.dtype) if x.dtype.scalar() == dtypes.bfloat16 and x.op is not Ops.WHERE else ret
  def _cast(self, x: UOp) -> str:
    src, sdt, dt = self.r[x.src[0]], x.src[0].dtype.scalar(), x.dtype.scalar()
    # bool(NaN) is true: _cmpne, as naga's float != is an ordered compare (NaN != 0.0 false)
    if dt == dtypes.bool: return _cmpne(src, self.render_const(0, x.src[0].dtype), sdt)
    if sdt == dtypes.bool and (dt == dtypes.bfloat16 or (dt == dtypes.float16 and not self.native_f16)): return f"select(0.0f, 1.0f, {src})"
    # i64 of a signed 32-bit register compares wrong after naga and lavapipe (i64(3i) < 12li was false, and an index
    # cast to int64 read 0 for every element): sign-extend by hand through u64, whose compares hold
    if dt == dtypes.int64 and _REG.get(sdt) == "i32":
      u64, i32 = self.reg(dtypes.uint64.vec(x.dtype.count)), self.reg(dtypes.int32.vec(x.dtype.count))
      return f"bitcast<{self.reg(x.dtype)}>({u64}(bitcast<{self.reg(dtypes.uint32.vec(x.dtype.count))}>({src})) | " \
             f"select({u64}(0lu), {u64}(0xffffffff00000000lu), {src} < {i32}(0i)))"
    # naga widens a 32-bit int by the target's signedness (u64(-19i) zero-extended, i64(4294967295u) sign-extended):
    # widen in the source's own signedness, then reinterpret at 64 bits
    if dt in (dtypes.int64, dtypes.uint64) and _REG.get(sdt) in ("i32", "u32") and (_REG[sdt] == "i32") != (dt == dtypes.int64):
      src = f"{self.reg((dtypes.int64 if _REG[sdt] == 'i32' else dtypes.uint64).vec(x.dtype.count))}({src})"
    ret = f"{self.reg(x.dtype)}({src})"
    if dt == dtypes.float16 and not self.native_f16: ret = f"unpack2x16float(pack2x16float(vec2<f32>({src}, 0.0f)))[0]"
    if dt == dtypes.bfloat16: ret = self._bf16r(ret, x.dtype)
    return _wrap(ret, dt)
  def _bf16r(self, x: str, dt: DType) -> str:
    # (bf16r is scalar; WGSL has no overloads, and this renderer packs no bfloat16 vectors: never silently unrounded)
    if dt.count != 1: raise NotImplementedError(f"WEBGPU renders bfloat16 scalars only, not {dt}")
    return f"bf16r({x})"
  def _bitcast(self, x: UOp) -> str:
    sdt, dt = x.src[0].dtype, x.dtype
    if sdt.itemsize == dt.itemsize == 2 and dt.count == 1: return self._bitcast16(self.r[x.src[0]], sdt, dt)
    # int8 <-> uint8 live in i32/u32 registers: the same byte is the value wrapped to the other's range
    if {sdt, dt} == {dtypes.int8, dtypes.uint8}: return _wrap(f"{self.reg(dt)}({self.r[x.src[0]]})", dt)
    if sdt.itemsize != dt.itemsize or dt.itemsize not in (4, 8):
      raise NotImplementedError(f"WEBGPU cannot bitcast {sdt} to {dt}: only 32-bit and 64-bit ones, and scalar 16-bit ones")
    return f"bitcast<{self.reg(dt)}>({self.r[x.src[0]]})"
  def _bitcast16(self, src: str, sdt: DType, dt: DType) -> str:
    # WGSL has no 16-bit ints (int16/uint16 live in i32/u32 registers) and, without the feature, no f16 (an f32 register):
    # the 16 bits as the low half of a u32, then read as dt. float16 goes through pack2x16float/unpack2x16float, exact for
    # every half value (naga rejects bitcast<vec2<f16>>)
    half = f"f32({src})" if self.native_f16 else src
    bits = {dtypes.int16: f"(bitcast<u32>({src})&65535u)", dtypes.uint16: f"({src}&65535u)",
            dtypes.float16: f"(pack2x16float(vec2<f32>({half}, 0.0f))&65535u)", dtypes.bfloat16: f"(bitcast<u32>({src})>>16u)"}[sdt.scalar()]
    if dt.scalar() == dtypes.int16: return f"((bitcast<i32>({bits})<<16u)>>16u)"
    if dt.scalar() == dtypes.uint16: return bits
    if dt.scalar() == dtypes.bfloat16: return f"bitcast<f32>({bits}<<16u)"
    return f"f16(unpack2x16float({bits})[0])" if self.native_f16 else f"unpack2x16float({bits})[0]"

  def _special(self, x: UOp) -> str:
    # a launch index from the linear one it is part of: the invocation's (no lidx), the workgroup's (gidx) or the thread's
    # in its workgroup (lidx); the last axis takes the rest
    axis, local = int(x.arg[-1]), x.arg[0] == "l"
    sizes = self.lspecials if local else self.specials
    lin = "lli" if local else "wlin" if self.lspecials else "lin"
    below = [sizes[a] for a in range(axis) if a in sizes]
    div = "*".join(f"u32({s})" for s in below)
    v = f"({lin}/({div}))" if div else lin
    return f"i32({v}%u32({sizes[axis]}))" if axis < max(sizes) else f"i32({v})"

  # ---- the walk ----
  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """The WGSL module for the linearized `uops`: buffer i at binding i, the launch uniform after the last, entry point `name`."""
    self.r: dict[UOp, str] = {}
    stored = {u.src[0].src[0] for u in uops if u.op is Ops.STORE and u.src[0].op is Ops.INDEX}
    globs = sorted([u for u in uops if u.op is Ops.DEFINE_GLOBAL], key=lambda u: u.arg)
    dvars = sorted([u for u in uops if u.op is Ops.DEFINE_VAR], key=lambda u: u.arg)
    if len(globs) > self.max_buffers:
      raise RuntimeError(f"kernel {name} needs {len(globs)} storage buffers; this WEBGPU adapter allows {self.max_buffers} per shader")
    self.atomic = {g for g in globs if g in stored and self.lanes(g.dtype.base)}
    uses: dict[UOp, int] = defaultdict(int)
    for u in uops:
      for s in (u.src[:1] if u.op is Ops.LOAD else u.src[:2] if u.op is Ops.STORE else u.src): uses[s] += 1
    # launch sizes: constants inline, symbolic ones from the uniform (the runtime passes the concrete global size)
    self.specials: dict[int, str] = {}
    self.lspecials: dict[int, str] = {}   # lidx sizes (always constants: the workgroup size is part of the shader)
    for u in uops:
      if u.op is Ops.SPECIAL and u.arg[0] == "l": self.lspecials[int(u.arg[-1])] = str(u.src[0].arg)
      elif u.op is Ops.SPECIAL:
        ax = int(u.arg[-1])
        self.specials[ax] = str(u.src[0].arg) if u.src[0].op is Ops.CONST else f"launch[0].{'yzw'[ax]}"
    f16 = self.native_f16 and any(u.dtype.scalar() == dtypes.float16 or (isinstance(u.dtype, PtrDType) and u.dtype.base.scalar() == dtypes.float16)
                                  for u in uops)
    head = ["enable f16;"] if f16 else []
    if any((u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype).scalar() == dtypes.bfloat16 for u in uops): head.append(_BF16R)
    for g in globs:
      assert isinstance(g.dtype, PtrDType)
      self.r[g] = f"data{g.arg}"
      n = self.lanes(g.dtype.base)
      elem = ("atomic<u32>" if g in self.atomic else "u32") if n else self.reg(g.dtype.base)
      head.append(f"@group(0) @binding({g.arg}) var<storage, {'read_write' if g in stored else 'read'}> data{g.arg}: array<{elem}>;")
    head.append(f"@group(0) @binding({globs[-1].arg + 1 if globs else 0}) var<uniform> launch: array<vec4<u32>, {1 + (len(dvars) + 3) // 4}>;")
    wg = math.prod(int(v) for v in self.lspecials.values()) if self.lspecials else self.workgroup_size
    if self.lspecials: body = ["  let wlin = wid.x + wid.y*nwg.x;", "  if (wlin >= launch[0].x) { return; }"]   # launch[0].x: workgroups
    else: body = [f"  let lin = gid.x + gid.y*{self.workgroup_size}u*nwg.x;", "  if (lin >= launch[0].x) { return; }"]
    self.head = head
    for i, v in enumerate(dvars):
      self.r[v] = f"v_{v.arg[0]}"
      body.append(f"  let v_{v.arg[0]} = bitcast<i32>(launch[{1 + i // 4}].{'xyzw'[i % 4]});")
    self.uses = uses
    self.counters: defaultdict[str, int] = defaultdict(int)
    self.unroll = self.plan_unroll(uops, name)
    self._block(uops, 0, len(uops), 1, body)
    fname = re.sub(r"\W", "_", name)
    ids = "@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lli: u32" if self.lspecials else \
      "@builtin(global_invocation_id) gid: vec3<u32>"
    return "\n".join(head + [f"@compute @workgroup_size({wg})", f"fn {fname}({ids}, @builtin(num_workgroups) nwg: vec3<u32>) {{",
                             *body, "}"]) + "\n"

  def _block(self, uops: list[UOp], lo: int, hi: int, depth: int, body: list[str]) -> None:
    """Render uops[lo:hi] into `body` at indent `depth`; a RANGE renders its whole loop (to its END) and is skipped over."""
    counters, i = self.counters, lo
    while i < hi:
      u, pad = uops[i], "  " * depth
      i += 1
      if u.op in (Ops.DEFINE_GLOBAL, Ops.DEFINE_VAR, Ops.SINK, Ops.NOOP): continue
      if u.op is Ops.BARRIER: body.append(f"{pad}workgroupBarrier();")
      elif u.op is Ops.DEFINE_LOCAL:   # workgroup memory lives at module scope
        assert isinstance(u.dtype, PtrDType)
        self.r[u] = nm = f"temp{counters['temp']}"
        counters["temp"] += 1
        self.head.append(f"var<workgroup> {nm}: array<{self.reg(u.dtype.base)}, {u.dtype.size}>;")
      elif u.op is Ops.CONST: self.r[u] = self.render_const(u.arg, u.dtype)
      elif u.op is Ops.INDEX: self.r[u] = ""   # LOAD/STORE read the buffer and index from it
      elif u.op is Ops.DEFINE_REG:
        assert isinstance(u.dtype, PtrDType)
        self.r[u] = nm = f"acc{counters['acc']}"
        counters["acc"] += 1
        body.append(f"{pad}var {nm}: array<{self.reg(u.dtype.base)}, {u.dtype.size}>;")
      elif u.op is Ops.RANGE: i = self._loop(uops, i - 1, depth, body)
      elif u.op is Ops.ENDIF:
        depth -= 1
        body.append(f"{'  ' * depth}}}")
      elif u.op is Ops.IF:
        body.append(f"{pad}if ({self.r[u.src[0]]}) {{")
        depth += 1
      elif u.op is Ops.STORE: body.append(pad + self._store(u))
      else:
        if u.op is Ops.LOAD: txt = self._load(u)
        elif u.op is Ops.SPECIAL: txt = self._special(u)
        elif u.op is Ops.CAST: txt = self._cast(u)
        elif u.op is Ops.BITCAST: txt = self._bitcast(u)
        elif u.op is Ops.VECTORIZE: txt = self.render_vectorize([self.r[s] for s in u.src], u.dtype)
        elif u.op is Ops.GEP: txt = self.render_gep(self.r[u.src[0]], u.arg[0], u.src[0].dtype) if len(u.arg) == 1 else \
          self.render_vectorize([self.render_gep(self.r[u.src[0]], i, u.src[0].dtype) for i in u.arg], u.dtype)
        elif u.op in GroupOp.ALU: txt = self._alu(u)
        else: raise NotImplementedError(f"WGSLRenderer cannot render {u.op} with dtype {u.dtype} (arg={u.arg!r})")
        if u.op in GroupOp.ALU | {Ops.CAST, Ops.GEP} and self.uses[u] <= 1 and len(txt) <= self.inline_max_len:
          self.r[u] = txt
          continue
        prefix = u.arg if u.op is Ops.SPECIAL else {Ops.LOAD: "val", Ops.CAST: "cast", Ops.BITCAST: "cast"}.get(u.op, "alu")
        self.r[u] = nm = prefix if u.op is Ops.SPECIAL else f"{prefix}{counters[prefix]}"
        counters[prefix] += 1
        body.append(f"{pad}let {nm} = {txt};")

  def _loop(self, uops: list[UOp], at: int, depth: int, body: list[str]) -> int:
    """Render the loop whose RANGE is uops[at]; returns the index after its END. An unrolled loop (see plan_unroll) steps
    by k and repeats its body k times, each copy in its own scope with the index bound to base+j (guarded when k may not
    divide the trip count)."""
    rng, pad = uops[at], "  " * depth
    end = self._ends[at]
    nm = f"ridx{rng.arg[0]}" if isinstance(rng.arg, tuple) else f"ridx{self.counters['ridx']}"
    self.counters["ridx"] += 1
    bound, k = self.r[rng.src[0]], self.unroll.get(rng, 1)
    if k == 1:
      self.r[rng] = nm
      body.append(f"{pad}for (var {nm}: i32 = 0; {nm} < {bound}; {nm}++) {{")
      self._block(uops, at + 1, end, depth + 1, body)
      body.append(f"{pad}}}")
    elif rng.src[0].op is Ops.CONST and k >= rng.src[0].arg:   # every trip a copy: no loop left
      for j in range(k):
        self.r[rng] = nm
        body.append(f"{pad}{{ let {nm} = {j}i;")
        self._block(uops, at + 1, end, depth + 1, body)
        body.append(f"{pad}}}")
    else:
      exact = rng.src[0].op is Ops.CONST and int(rng.src[0].arg) % k == 0
      body.append(f"{pad}for (var {nm}b: i32 = 0; {nm}b < {bound}; {nm}b += {k}i) {{")
      for j in range(k):
        self.r[rng] = nm
        body.append(f"{pad}  {{ let {nm} = {nm}b + {j}i;" if j == 0 or exact else f"{pad}  {{ let {nm} = {nm}b + {j}i; if ({nm} < {bound}) {{")
        self._block(uops, at + 1, end, depth + 2, body)
        body.append(f"{pad}  }}" if j == 0 or exact else f"{pad}  }} }}")
      body.append(f"{pad}}}")
    return end + 1

  def plan_unroll(self, uops: list[UOp], name: str) -> dict[UOp, int]:
    """How many copies of each loop body to emit so that one invocation takes at most `loop_budget` loop back-edges.

    llvmpipe (Mesa's gallivm) gives every shader invocation one loop limiter: a counter, started at 65535, that every
    loop back-edge of every loop decrements, and a loop exits when it reaches 0 whatever its condition. So loops past
    65535 trips in total stop early, silently; nesting does not help (the inner trips still count), fewer back-edges
    do. Copies multiply code size, so the loops with the most back-edges (the innermost) are unrolled first, doubling."""
    self._ends: dict[int, int] = {}
    stack: list[int] = []
    for i, u in enumerate(uops):
      if u.op is Ops.RANGE: stack.append(i)
      elif u.op is Ops.END: self._ends[stack.pop()] = i
    if self.loop_budget is None: return {}
    trips: dict[UOp, int] = {}
    runs: dict[UOp, int] = {}    # how often the loop starts: the product of the enclosing loops' trips
    outer: list[UOp] = []
    for u in uops:
      if u.op is Ops.RANGE:
        trips[u] = max(int(u.src[0].vmax), 1)
        runs[u] = math.prod(trips[o] for o in outer)
        outer.append(u)
      elif u.op is Ops.END: outer.pop()
    k = {r: 1 for r in trips}
    def edges(r: UOp) -> int:   # a constant loop unrolled into every trip is no loop at all
      return 0 if k[r] >= trips[r] and r.src[0].op is Ops.CONST else runs[r] * -(-trips[r] // k[r])
    while sum(edges(r) for r in trips) > self.loop_budget:
      grow = [r for r in trips if k[r] < min(trips[r], self.max_unroll)]
      if not grow:
        raise RuntimeError(f"kernel {name} runs {sum(runs[r] * trips[r] for r in trips)} loop trips per invocation; this WEBGPU adapter "
                           f"stops loops after {self.loop_budget} in total and unrolling by up to {self.max_unroll} is not enough")
      r = max(grow, key=lambda r: (edges(r), -trips[r]))
      k[r] = min(k[r] * 2, trips[r], self.max_unroll)
    return {r: n for r, n in k.items() if n > 1}
