"""CPU renderers: ClangRenderer (C for clang/gcc, on CStyleLanguage) and LLVMRenderer (the core's LLVM IR walk plus the CPU's thread split, for llvmlite)."""
from __future__ import annotations
import functools, platform
from typing import Callable
from tinygrad.plugin_api import (Ops, GroupOp, UOp, UPat, PatternMatcher, DType, PtrDType, dtypes, CStyleLanguage, base_code_for_op,
  safe_div, split_range, thread_work, LLVMIRRenderer)

# A kernel that splits (work > 0) also exports `<name>_task(ctx, core, n)`, the task the pool's parallel-for runs per part:
# ctx is {buffer pointers, int variables} (two arrays) and the task calls the kernel with them and (core, n). The runtime
# calls a split kernel through it, with no per-signature trampoline to compile at its first run (ViT-Ti's cold call
# compiled 11 of them on the main thread after the last kernel, ~45 ms).
def _counts(uops: list[UOp]) -> tuple[int, int]:
  return sum(u.op is Ops.DEFINE_GLOBAL for u in uops), sum(u.op is Ops.DEFINE_VAR for u in uops)

# It also exports `<name>_trips`, the split loop's trip count when it is a constant (0: it depends on a variable), so the
# runtime can cut the loop into parts that the threads finish together (runtime._part_count)
def split_trips(split: UOp | None) -> int:
  return int(split.src[0].arg) if split is not None and split.src[0].op is Ops.CONST else 0

# ------------------------------------------------------------------ C ------------------------------------------------------------------

def _math(fn: str) -> Callable[..., str]:
  return lambda x, dtype: f"__builtin_{fn}{'' if dtype.scalar() == dtypes.float64 else 'f'}({x})"

clang_code_for_op: dict[Ops, Callable[..., str]] = {**base_code_for_op,
  Ops.IDIV: safe_div("/"), Ops.MOD: safe_div("%"),
  Ops.SQRT: _math("sqrt"), Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"), Ops.SIN: _math("sin"), Ops.TRUNC: _math("trunc")}

# half and bfloat16 have no portable C type (clang 14 on x86 lacks both): they live as their bits (unsigned short) in
# memory and as float in registers; every result is rounded to its width, which is exact for + - * / sqrt (float has
# more than 2p+2 bits of half's and bfloat16's precision)
_fp16_helpers = """static inline float __h2f(unsigned short h) {
  unsigned int s = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) { float v = (float)m * 5.9604644775390625e-08f; return s ? -v : v; }
  u = e == 31 ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13));
  return ((union {unsigned int u; float f;}){.u = u}).f;
}
static inline unsigned short __f2h(float f) {
  unsigned int u = ((union {float f; unsigned int u;}){.f = f}).u, s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);
  if (a < 0x38800000u) {  /* subnormal: round |f|*2^24 to the nearest even integer */
    float v = ((union {unsigned int u; float f;}){.u = a}).f * 16777216.0f;
    return (unsigned short)(s | (unsigned int)((v + 8388608.0f) - 8388608.0f));
  }
  return (unsigned short)(s | ((a + 0x0fffu + ((a >> 13) & 1u) - (112u << 23)) >> 13));
}"""
_bf16_helpers = """static inline float __b2f(unsigned short b) { return ((union {unsigned int u; float f;}){.u = (unsigned int)b << 16}).f; }
static inline unsigned short __f2b(float f) {
  unsigned int u = ((union {float f; unsigned int u;}){.f = f}).u;
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(0x7fc0u | ((u >> 16) & 0x8000u));
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""

@functools.cache
def host_flags() -> frozenset[str]:
  """The host CPU's feature flags (/proc/cpuinfo's first `flags` or `Features` line; empty where there is none)."""
  try:
    with open("/proc/cpuinfo") as f: return frozenset(next((l for l in f if l.startswith(("flags", "Features"))), "").split())
  except OSError: return frozenset()

@functools.cache
def host_simd() -> tuple[int, int]:
  """(bytes, count) of the host's SIMD registers, from its CPU flags: AVX-512 32 x 64, AVX 16 x 32, NEON 32 x 16, else SSE's 16 x 16."""
  flags = host_flags()
  if "avx512f" in flags: return 64, 32
  if "avx" in flags: return 32, 16
  if "asimd" in flags or platform.machine() in ("arm64", "aarch64"): return 16, 32
  return 16, 16

class CPUAbilities:
  """What the host CPU offers both renderers: loops, not launch indices, an outer loop split across threads, and the
  host's SIMD registers (read when a renderer is made, for the register tile of codegen/opt.py)."""
  device = "CPU"
  has_local = False
  has_shared = False
  has_threads = True
  global_max: tuple[int, ...] | None = None
  local_max: tuple[int, ...] | None = None
  keeps_float_order = True   # C without -ffast-math, LLVM IR without fast-math flags
  matmul_pack = 64   # a cache line: Tensor.dot copies a big right operand into panels at least this wide (see Renderer)
  def __init__(self) -> None: self.register_bytes, self.registers = host_simd()

# SIMD for the vectorize pass: GNU C vector extensions take arithmetic (not comparisons, ?: or casts: those stay scalar)
_c_vector_ops = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.NEG, Ops.MULACC})
# LLVM takes every op on vectors but the trap-guarded integer division
_llvm_vector_ops = frozenset((GroupOp.ALU | {Ops.CAST, Ops.BITCAST}) - {Ops.IDIV, Ops.MOD})
_vector_dtypes = frozenset({dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint32, dtypes.int64})

class ClangRenderer(CPUAbilities, CStyleLanguage):
  """C for the host compiler (clang or gcc): restrict pointers, GNU vector extensions, `__builtin_` math, and an outer
  loop the runtime splits across threads (`core_id`/`core_count` arguments, work estimate exported as `<name>_work`)."""
  buffer_suffix = " restrict"
  infinity = "__builtin_inff()"
  nan = '__builtin_nanf("")'
  type_map = {dtypes.bool: "_Bool"}
  emulated_floats = {dtypes.float16: (dtypes.uint16, "__h2f({})", "__f2h({})", "__h2f(__f2h({}))"),
                     dtypes.bfloat16: (dtypes.uint16, "__b2f({})", "__f2b({})", "__b2f(__f2b({}))")}
  code_for_op = clang_code_for_op
  vector_bytes, vector_ops, vector_dtypes = 32, _c_vector_ops, _vector_dtypes
  unaligned_vectors = True   # the vector typedefs are aligned like their element (prelude)

  def render_vectorize(self, elems: list[str], dt: DType) -> str: return f"({self.render_dtype(dt)}){{{','.join(elems)}}}"
  def render_gep(self, vec: str, lane: int, dt: DType) -> str: return f"{vec}[{lane}]"
  def extra_args(self) -> list[str]: return ["int core_id", "int core_count"]
  def prelude(self, uops: list[UOp]) -> list[str]:
    dts = {self.storage_dtype(u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype) for u in uops}
    # vector types are aligned like their element, so a vector access may start at any element (see vector_align):
    # `aligned` must follow `vector_size`, GCC applies them in order and a vector_size last makes the type 32-byte aligned
    ret = [f"typedef {self.render_dtype(dt.scalar())} {self.render_dtype(dt)} __attribute__((vector_size({dt.itemsize}),aligned({dt.scalar().itemsize})));"
           for dt in sorted(d for d in dts if d.count > 1)]
    used = {u.dtype.scalar() for u in uops} | {u.dtype.base.scalar() for u in uops if isinstance(u.dtype, PtrDType)}
    if dtypes.float16 in used: ret.append(_fp16_helpers)
    if dtypes.bfloat16 in used: ret.append(_bf16_helpers)
    return ret
  def render_kernel(self, name: str, body: list[str], args: list[str], uops: list[UOp], prelude: list[str]) -> str:
    split = self.split_range(uops)
    work = thread_work(uops, split)
    src = super().render_kernel(name, body, args, uops, prelude) + f"const long long {name}_work = {work}LL;\n"
    if not work: return src
    src += f"const long long {name}_trips = {split_trips(split)}LL;\n"
    # the pool's task (see _task_args): through a volatile pointer, so the compiler never inlines the kernel into it
    nb, nv = _counts(uops)
    call = ", ".join([f"tg_c[0][{i}]" for i in range(nb)] + [f"((int*)tg_c[1])[{i}]" for i in range(nv)] + ["tg_core", "tg_n"])
    return src + f"void {name}_task(void **tg_c[2], int tg_core, int tg_n) {{ __typeof__({name}) *volatile tg_f = {name}; tg_f({call}); }}\n"

# ---------------------------------------------------------------- LLVM IR ----------------------------------------------------------------

class LLVMRenderer(CPUAbilities, LLVMIRRenderer):
  """LLVM IR for the host (llvmlite JIT): the core's LLVM IR walk plus the CPU's outer loop split by (core_id, core_count)
  as in C, and the work estimate exported as `@<name>_work`."""
  def split_range(self, uops: list[UOp]) -> UOp | None: return split_range(uops) if self.has_threads else None
  # llvm.exp2/log2 on vectors become one libm call per lane: the core's polynomial decompositions vectorize (1 ulp)
  code_for_op = {op: f for op, f in LLVMIRRenderer.code_for_op.items() if op not in (Ops.EXP2, Ops.LOG2)}
  vector_bytes, vector_ops, vector_dtypes = 64, _llvm_vector_ops, _vector_dtypes | {dtypes.bool}
  nontemporal_stores = True
  def __init__(self) -> None:
    super().__init__()
    # AVX-512's vscalefps is llvm.ldexp in one instruction: Tensor.exp's 2**n then costs 3 ops instead of 9 (elsewhere
    # llvm.ldexp is a libm call per lane: the pipeline's two-multiply form is faster)
    if "avx512f" in host_flags(): self.code_for_op = {**type(self).code_for_op, Ops.LDEXP: lambda *a, **k: ""}

  def extra_args(self) -> list[str]: return ["i32 %core_id", "i32 %core_count"]
  def loop_bounds(self, u: UOp, nm: str, end: str) -> tuple[str, str]:
    if u is not self.split: return "0", end
    t, bounds = self.ty(u.dtype), []
    for core in ("%core_id", f"%{nm}.next_core"):
      if core != "%core_id": self._emit(f"%{nm}.next_core = add i32 %core_id, 1")
      e64 = end if t == "i64" else self._ins("split", f"sext {t} {end} to i64")   # an int64 index loop (codegen/index64.py)
      c64 = self._ins("split", f"sext i32 {core} to i64")
      n64 = self._ins("split", "sext i32 %core_count to i64")
      q64 = self._ins("split", f"sdiv i64 {self._ins('split', f'mul i64 {e64}, {c64}')}, {n64}")
      bounds.append(q64 if t == "i64" else self._ins("split", f"trunc i64 {q64} to {t}"))
    # the start as max(start, 0), which it is: LLVM's loop analyses do not see through the division, and a start they know
    # is not negative spares them work (ViT-Ti's pack and transpose kernels compiled in 16-17 instead of 23-29 ms)
    self.decls.add(f"declare {t} @llvm.smax.{t}({t}, {t})")
    return self._ins("split", f"call {t} @llvm.smax.{t}({t} {bounds[0]}, {t} 0)"), bounds[1]
  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """LLVM IR: `define void @name(ptr bufs..., i32 vars..., i32 core_id, i32 core_count)` and `@name_work`."""
    self.split = self.split_range(uops)
    return super().render(uops, name)
  def render_kernel(self, name: str, args: list[str], uops: list[UOp]) -> str:
    work = thread_work(uops, self.split)
    self.globals.append(f"@{name}_work = constant i64 {work}")
    if work: self.globals.append(f"@{name}_trips = constant i64 {split_trips(self.split)}")
    src = super().render_kernel(name, args, uops)
    if not work: return src
    # the pool's task (see _task_args); noinline: the kernel stays one copy (an inlined one would compile twice)
    nb, nv = _counts(uops)
    body = ["  %a = load ptr, ptr %c", "  %vp = getelementptr ptr, ptr %c, i64 1", "  %v = load ptr, ptr %vp"]
    for i in range(nb): body += [f"  %a{i}p = getelementptr ptr, ptr %a, i64 {i}", f"  %a{i} = load ptr, ptr %a{i}p"]
    for i in range(nv): body += [f"  %v{i}p = getelementptr i32, ptr %v, i64 {i}", f"  %v{i} = load i32, ptr %v{i}p"]
    call = ", ".join([f"ptr %a{i}" for i in range(nb)] + [f"i32 %v{i}" for i in range(nv)] + ["i32 %core", "i32 %n"])
    return src + "\n".join([f"define void @{name}_task(ptr %c, i32 %core, i32 %n) nounwind {{", *body,
                             f"  call void @{name}({call}) noinline", "  ret void", "}"]) + "\n"
