"""OpenCLRenderer: OpenCL C on the core's C-style base. Everything OpenCL-specific is a table or attribute here: address
space qualifiers (the core writes them into every pointer, vector loads and stores included), work-item functions,
`__local` memory and barriers, `as_T` bitcasts, `(float4)(...)` vectors, and the limits of the device it renders for.
float16 is native half where the device has cl_khr_fp16, else (as bfloat16 always) float in registers, 16 bits in memory.

Launch model (the runtime follows it): a kernel with local (lidx) indices reads gidx as get_group_id and lidx as
get_local_id and is launched with global = groups*local work-items; one without reads gidx as get_global_id and is
launched with the driver choosing the work-group (local NULL).
Numerics: FP_CONTRACT OFF (no fused a*b+c, so results match numpy), and the program is built with
-cl-fp32-correctly-rounded-divide-sqrt; exp2/log2/sin are left to the core's decompositions (OpenCL's promise only 3-4 ulp).
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
from tinygrad.plugin_api import CStyleLanguage, base_code_for_op, base_rewrite, safe_div, mem_access, Ops, UOp, DType, PtrDType, AddrSpace, dtypes, \
  UPat, PatternMatcher

@dataclass(frozen=True)
class CLLimits:
  """What one OpenCL device allows, read from its device info (device.py); the defaults are the spec's minimums."""
  local_max: tuple[int, int, int] = (256, 256, 256)   # CL_DEVICE_MAX_WORK_ITEM_SIZES, each capped by the work-group size
  local_total: int = 256                              # CL_DEVICE_MAX_WORK_GROUP_SIZE
  shared_max: int = 16384                             # CL_DEVICE_LOCAL_MEM_SIZE
  fp16: bool = False                                  # cl_khr_fp16: native half arithmetic (else emulated in float)
  fp64: bool = False                                  # cl_khr_fp64 (or the __opencl_c_fp64 feature)

_BASE_DTYPES = frozenset({dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
                          dtypes.int64, dtypes.uint64, dtypes.float32})

cl_code_for_op: dict[Ops, Callable[..., str]] = {**base_code_for_op,
  Ops.IDIV: safe_div("/"), Ops.MOD: safe_div("%"),         # x/0 is undefined in OpenCL C (a trap on CPU drivers): 0, as the IR says
  Ops.SQRT: lambda x, dtype: f"sqrt({x})",                  # correctly rounded with -cl-fp32-correctly-rounded-divide-sqrt
  Ops.TRUNC: lambda x, dtype: f"trunc({x})"}

# half without cl_khr_fp16 and bfloat16 everywhere live as their 16 bits (ushort) in memory and as float in registers. The
# half conversions are OpenCL's own vload_half/vstore_half_rte (core functions: a `half*` is allowed without the extension),
# but a NaN as numpy makes it (sign, quiet, the top payload bits): POCL's vstore_half gave 0x7fff for every NaN, numpy 0x7e00
_h16 = """float __h2f(ushort h) { return vload_half(0, (const __private half*)&h); }
ushort __f2h(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)(((u >> 16) & 0x8000u) | 0x7c00u | max((u >> 13) & 0x3ffu, 1u));
  ushort h; vstore_half_rte(f, 0, (__private half*)&h); return h;
}"""
_bf16 = """float __b2f(ushort b) { return as_float((uint)b << 16); }
ushort __f2b(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)(0x7fc0u | ((u >> 16) & 0x8000u));
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""
_EMULATED = {dtypes.float16: (dtypes.uint16, "__h2f({})", "__f2h({})", "__h2f(__f2h({}))"),
             dtypes.bfloat16: (dtypes.uint16, "__b2f({})", "__f2b({})", "__b2f(__f2b({}))")}   # rounded to width after each op

# vector loads and stores through vloadN/vstoreN, which need only the element's alignment (a `float4*` dereference needs 16
# bytes, and OpenCL's `aligned` attribute may only raise alignment): an upcast's lanes start at any element
def _vec_addr(ctx, x: UOp) -> str:
  m = mem_access(x)
  return ctx.r[m.ptr.src[0] if m.vector is not None else m.ptr]   # the INDEX's text: (buf+idx), in the buffer's space
# (a buffer whose elements are the vectors, a `float4 acc[1]` accumulator, is read and written by plain dereference:
# vloadN takes an element pointer, and newer POCL refuses a `float4*`: "call to '_cl_vload4' is ambiguous")
def _whole_elements(x: UOp, n: int) -> bool:
  m = mem_access(x)
  return m.vector is None and getattr(m.ptr.dtype, "base", m.ptr.dtype).count == n
def _vload(ctx, x: UOp) -> str | None:
  if x.dtype.count == 1 or x.dtype.scalar() in ctx.emulated_floats or _whole_elements(x, x.dtype.count): return None
  val, gate = f"vload{x.dtype.count}(0, {_vec_addr(ctx, x)})", mem_access(x).gate
  return val if gate is None else f"({ctx.r[gate]}?{val}:{ctx.render_const(0, x.dtype)})"
def _vstore(ctx, x: UOp) -> str | None:
  m = mem_access(x)
  if m.value is None or m.value.dtype.count == 1 or m.value.dtype.scalar() in ctx.emulated_floats or _whole_elements(x, m.value.dtype.count): return None
  st = f"vstore{m.value.dtype.count}({ctx.r[m.value]}, 0, {_vec_addr(ctx, x)});"
  return st if m.gate is None else f"if ({ctx.r[m.gate]}) {st}"
cl_rewrite = PatternMatcher([(UPat(Ops.LOAD, name="x"), _vload), (UPat(Ops.STORE, name="x"), _vstore)]) + base_rewrite

class OpenCLRenderer(CStyleLanguage):
  """OpenCL C 1.2 for the device whose limits are `limits`."""
  device = "CL"
  has_local = True
  has_shared = True
  global_max = (2**31 - 1, 2**31 - 1, 2**31 - 1)   # OpenCL sizes are size_t; the launch indices are int
  # SIMD lanes of an upcast: arithmetic on float4/int4 (OpenCL's vector compares give -1 and its ?: selects by sign bit,
  # vector casts need convert_T: those stay scalar)
  vector_bytes = 16
  vector_ops = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.NEG, Ops.MULACC})
  vector_dtypes = frozenset({dtypes.float32, dtypes.int32, dtypes.uint32})
  unaligned_vectors = True   # vloadN/vstoreN
  string_rewrite = cl_rewrite
  kernel_prefix = "__kernel "
  addrspace_qualifier = {AddrSpace.GLOBAL: "__global ", AddrSpace.LOCAL: "__local "}
  smem_prefix = "__local "
  smem_align = " __attribute__((aligned(16)))"
  barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
  infinity = "INFINITY"
  nan = "NAN"
  type_map = {dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.int16: "short", dtypes.uint16: "ushort",
              dtypes.uint32: "uint", dtypes.int64: "long", dtypes.uint64: "ulong", dtypes.float16: "half"}
  code_for_op = cl_code_for_op

  def __init__(self, limits: CLLimits = CLLimits()):
    self.limits = limits
    self.local_max = limits.local_max
    self.shared_max = limits.shared_max
    self.supported_dtypes = _BASE_DTYPES | {dtypes.float16, dtypes.bfloat16} | ({dtypes.float64} if limits.fp64 else set())
    self.emulated_floats = {d: v for d, v in _EMULATED.items() if d != dtypes.float16 or not limits.fp16}
  def __reduce__(self): return type(self), (self.limits,)
  def __repr__(self) -> str: return f"OpenCLRenderer({self.limits})"

  def render_vectorize(self, elems: list[str], dt: DType) -> str: return f"(({self.render_dtype(dt)})({','.join(elems)}))"
  def render_gep(self, vec: str, lane: int, dt: DType) -> str: return f"{vec}.s{lane:x}"
  def render_bitcast(self, to: str, frm: str, x: str) -> str: return f"as_{to}({x})"
  def render_const(self, v, dt: DType) -> str:
    # OpenCL C has no `long long`: 64-bit literals take l/ul
    if dt.count == 1 and dt in (dtypes.int64, dtypes.uint64):
      v, suffix = int(v), "l" if dt == dtypes.int64 else "ul"
      return f"({v+1}{suffix}-1)" if v == dtypes.min(dt) and v < 0 else f"{v}{suffix}"
    return super().render_const(v, dt)

  def prelude(self, uops: list[UOp]) -> list[str]:
    used = {u.dtype.scalar() for u in uops} | {u.dtype.base.scalar() for u in uops if isinstance(u.dtype, PtrDType)}
    ret = ["#pragma OPENCL FP_CONTRACT OFF"]
    if dtypes.float16 in used: ret.append(_h16 if dtypes.float16 in self.emulated_floats else "#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    if dtypes.bfloat16 in used: ret.append(_bf16)
    if dtypes.float64 in used: ret.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    return ret

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    # gidx is the work-group id when the kernel has local threads, else the global id (the driver picks the work-group)
    grid = any(u.op is Ops.SPECIAL and u.arg[0] == "l" for u in uops)
    self.code_for_workitem = {"g": (lambda a: f"((int)get_group_id({a}))") if grid else (lambda a: f"((int)get_global_id({a}))"),
                              "l": lambda a: f"((int)get_local_id({a}))"}
    return super().render(uops, name)
