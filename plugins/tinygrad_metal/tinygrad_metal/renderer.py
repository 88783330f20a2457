"""MetalRenderer: Metal Shading Language on the core's C-style base (threadgroup memory, barriers, half/bfloat, simdgroup WMMA).

Launch model (the runtime follows it): buffers and scalar arguments are bound at [[buffer(i)]] in the order the runtime
receives them (global slots sorted, then variables sorted by name). A kernel with no local (lidx) index reads `gid` as
[[thread_position_in_grid]] and is dispatched with dispatchThreads (the runtime picks the threadgroup, Metal trims the
edges); a kernel with lidx reads `gid` as [[threadgroup_position_in_grid]] and `lid` as [[thread_position_in_threadgroup]]
and is dispatched with dispatchThreadgroups(global_size, local_size).
"""
from __future__ import annotations
from typing import Callable
from tinygrad.plugin_api import (Ops, UOp, UPat, PatternMatcher, DType, PtrDType, AddrSpace, dtypes, TensorCore, CStyleLanguage,
  base_code_for_op, base_rewrite)
from tinygrad.codegen.tc import METAL_TENSOR_CORES

# exp2/log2/sin are left out on purpose: the core decomposes them into arithmetic with measured 1-ulp accuracy, while
# Metal's own versions promise only a few ulps (and less under fast math); sqrt and trunc are exact in Metal's precise mode
metal_code_for_op: dict[Ops, Callable[..., str]] = {**base_code_for_op,
  Ops.SQRT: lambda x, dtype: f"sqrt({x})", Ops.TRUNC: lambda x, dtype: f"trunc({x})"}

def _wmma(ctx: MetalRenderer, x: UOp) -> str:
  return f"__{x.arg[0]}({', '.join(ctx.r[s] for s in x.src)})"

metal_rewrite = PatternMatcher([
  (UPat(Ops.WMMA, name="x"), _wmma),                                                                 # a call to the simdgroup helper
]) + base_rewrite

def wmma_helper(w: UOp, ctx: MetalRenderer) -> str:
  """The MSL function a WMMA uop (codegen/tc.py, layout simd8x8x8) calls: it puts each thread's ea/eb/ec scalars into the
  thread_elements() of three simdgroup 8x8 matrices, runs D = A @ B + C on the simdgroup, and returns D's elements."""
  ea, eb = w.arg[3]
  ec = w.dtype.count
  ti, to = ctx.render_dtype(w.src[0].dtype), ctx.render_dtype(w.dtype.scalar())
  params = [f"{ti} a{i}" for i in range(ea)] + [f"{ti} b{i}" for i in range(eb)] + [f"{to} c{i}" for i in range(ec)]
  fill = [f"  {m}.thread_elements()[{i}] = {m}{i};" for m, n in (("a", ea), ("b", eb), ("c", ec)) for i in range(n)]
  return "\n".join([f"{to}{ec} __{w.arg[0]}({', '.join(params)}) {{", f"  simdgroup_{ti}8x8 a, b;", f"  simdgroup_{to}8x8 c;", *fill,
                    "  simdgroup_multiply_accumulate(c, a, b, c);",
                    f"  return {to}{ec}({', '.join(f'c.thread_elements()[{i}]' for i in range(ec))});", "}"])

class MetalRenderer(CStyleLanguage):
  """Metal Shading Language for Apple GPUs (compiled by the Metal framework at load, or offline by `xcrun metal`)."""
  device = "METAL"
  has_local = True
  has_shared = True
  global_max = (2**31 - 1, 65535, 65535)
  local_max = (1024, 1024, 1024)
  shared_max = 32768
  # Metal has no 64-bit float
  supported_dtypes = frozenset({dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
                                dtypes.int64, dtypes.uint64, dtypes.float16, dtypes.bfloat16, dtypes.float32})
  # simdgroup_matrix 8x8x8 (codegen/tc.py); the device clears this on GPUs without it (before Apple7, other than Mac2)
  tensor_cores: list[TensorCore] = METAL_TENSOR_CORES
  kernel_prefix = "kernel "
  # MSL has no generic pointers: a bare `(float4*)` cast is a thread-space pointer and reads the wrong memory, or fails
  # to compile; the core writes these into every pointer (arguments, casts, vector loads and stores)
  addrspace_qualifier = {AddrSpace.GLOBAL: "device ", AddrSpace.LOCAL: "threadgroup ", AddrSpace.REG: "thread "}
  arg_int_prefix = "constant int&"
  smem_prefix = "threadgroup __attribute__((aligned(16))) "
  barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
  code_for_workitem = {"g": lambda a: f"(int)gid.{'xyz'[int(a)]}", "i": lambda a: f"(int)gid.{'xyz'[int(a)]}",
                       "l": lambda a: f"(int)lid.{'xyz'[int(a)]}"}
  infinity = "INFINITY"
  nan = "NAN"
  type_map = {dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.int16: "short", dtypes.uint16: "ushort",
              dtypes.int32: "int", dtypes.uint32: "uint", dtypes.int64: "long", dtypes.uint64: "ulong", dtypes.float16: "half",
              dtypes.bfloat16: "bfloat", dtypes.float32: "float"}
  code_for_op = metal_code_for_op
  string_rewrite = metal_rewrite
  unaligned_vectors = False   # a `device float4*` dereference needs 16-byte alignment

  int_suffix = {dtypes.uint32: "u", dtypes.int64: "l", dtypes.uint64: "ul"}   # MSL has no `long long`
  vector_ctor = "{type}({elems})"
  def render_bitcast(self, to: str, frm: str, x: str) -> str: return f"as_type<{to}>({x})"

  def prelude(self, uops: list[UOp]) -> list[str]:
    wmma = {u.arg[0]: wmma_helper(u, self) for u in uops if u.op is Ops.WMMA}
    return ["#include <metal_stdlib>", "using namespace metal;", *wmma.values()]

  def render_kernel(self, name: str, body: list[str], args: list[str], uops: list[UOp], prelude: list[str]) -> str:
    # bind arguments in the runtime's order: global slots sorted, then variables sorted by name
    params = [u for u in uops if u.op in (Ops.DEFINE_GLOBAL, Ops.DEFINE_VAR)]
    order = sorted(params, key=lambda u: (u.op is Ops.DEFINE_VAR, u.arg))
    bound = [f"{a} [[buffer({order.index(u)})]]" for u, a in zip(params, args)]
    specials = {u.arg[0] for u in uops if u.op is Ops.SPECIAL}
    has_lid = "l" in specials
    if specials: bound.append(f"uint3 gid [[{'threadgroup_position_in_grid' if has_lid else 'thread_position_in_grid'}]]")
    if has_lid: bound.append("uint3 lid [[thread_position_in_threadgroup]]")
    return super().render_kernel(name, body, bound, uops, prelude)
