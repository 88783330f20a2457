"""AMD renderers: HIPRenderer (header-less HIP C for hiprtc / clang, on the core's CStyleLanguage) and AMDLLVMRenderer
(AMDGPU LLVM IR for llvmlite + lld, on the core's LLVMIRRenderer).

Both need no ROCm headers and no device library (-nogpuinc -nogpulib): launch indices, barriers and fences are clang
builtins / LLVM intrinsics, half is native (`_Float16` / `half`), bfloat16 lives as its 16 bits in memory and as float in
registers. exp2, log2 and sin are decomposed by codegen (the AMDGPU backend has no float64 ones and its float32 sin is
the hardware's approximation), so every kernel compiles without libm.

The supported targets are data (`AMD_ARCHS`): every compiler checks its target against it before any tool runs, since
hiprtc given an unknown target kills the process.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
from tinygrad.plugin_api import (Ops, UOp, UPat, PatternMatcher, DType, PtrDType, AddrSpace, dtypes, TensorCore, CStyleLanguage,
  base_code_for_op, safe_div, base_rewrite, LLVMIRRenderer, pm_split_launch, pm_devectorize_alu, launch_threads)
from tinygrad.codegen.tc import AMD_WMMA_TENSOR_CORES, AMD_MFMA_TENSOR_CORES

# ---------------------------------------------------------------- targets ----------------------------------------------------------------

@dataclass(frozen=True)
class Arch:
  """One gfx target: its family (CDNA for Instinct, RDNA for Radeon), wavefront width and matrix-core kind."""
  family: str
  wave: int
  matrix: str = ""   # "mfma" (CDNA2+), "mfma_cdna1", "wmma" (RDNA3), "wmma_gfx12" (RDNA4), "" (none)

AMD_ARCHS: dict[str, Arch] = {
  "gfx908": Arch("CDNA1", 64, "mfma_cdna1"), "gfx90a": Arch("CDNA2", 64, "mfma"), "gfx942": Arch("CDNA3", 64, "mfma"),
  "gfx950": Arch("CDNA4", 64, "mfma"),
  "gfx1030": Arch("RDNA2", 32), "gfx1100": Arch("RDNA3", 32, "wmma"), "gfx1101": Arch("RDNA3", 32, "wmma"),
  "gfx1102": Arch("RDNA3", 32, "wmma"), "gfx1151": Arch("RDNA3.5", 32, "wmma"),
  "gfx1200": Arch("RDNA4", 32, "wmma_gfx12"), "gfx1201": Arch("RDNA4", 32, "wmma_gfx12"),
}

def check_arch(arch: str) -> Arch:
  """The target's description; ValueError naming the supported ones for anything else (before any tool sees it)."""
  base = arch.split(":")[0]   # "gfx90a:sramecc+:xnack-" -> "gfx90a"
  if base not in AMD_ARCHS:
    raise ValueError(f"AMD: unsupported gfx target {arch!r}; supported: {', '.join(AMD_ARCHS)} (AMD_ARCH=<gfx> overrides the device's)")
  return AMD_ARCHS[base]

# The optimizer's tensor cores by matrix-core kind (layouts in the core's codegen/tc.py, so EMULATE=AMD runs them too):
# RDNA3 WMMA (wave32) and CDNA MFMA 16x16x16 (wave64), fp16/bf16 in, fp32 out. CDNA1 has no 16x16x16 bf16 MFMA (its
# bf16 one takes K=8); RDNA4 changed the WMMA register layout (no duplicated lanes) and gets none until it is added.
AMD_TENSOR_CORES: dict[str, list[TensorCore]] = {"wmma": AMD_WMMA_TENSOR_CORES, "mfma": AMD_MFMA_TENSOR_CORES,
                                                 "mfma_cdna1": AMD_MFMA_TENSOR_CORES[:1], "wmma_gfx12": []}

# Each tensor core's instruction (by codegen/tc.wmma_name): LLVM intrinsic, HIP builtin, and how many zero immediates
# follow A, B, C (MFMA's cbsz, abid, blgp: no broadcast). The intrinsic names are the unsuffixed ones LLVM 16+ accepts.
# A and B go in as vectors of half, or of bfloat16's 16 bits (i16 / short).
AMD_MMA: dict[str, tuple[str, str, int]] = {
  "wmma16x16x16_f16_f32": ("llvm.amdgcn.wmma.f32.16x16x16.f16", "__builtin_amdgcn_wmma_f32_16x16x16_f16_w32", 0),
  "wmma16x16x16_bf16_f32": ("llvm.amdgcn.wmma.f32.16x16x16.bf16", "__builtin_amdgcn_wmma_f32_16x16x16_bf16_w32", 0),
  "mfma16x16x16_f16_f32": ("llvm.amdgcn.mfma.f32.16x16x16f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", 3),
  "mfma16x16x16_bf16_f32": ("llvm.amdgcn.mfma.f32.16x16x16bf16.1k", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", 3),
}

# ---------------------------------------------------------------- shared rules ----------------------------------------------------------------

def launch_target(wave: int) -> int: return 4 * wave   # threads per workgroup the launch rule aims for: four waves

# HIP C's ext_vector_type compares to int masks and has no vector ?:, so vector ALU is lane-wise there
pm_hip_devectorize = pm_devectorize_alu

class AMDAbilities:
  """What an AMD GPU offers both renderers: the gfx target (checked), wave width, launch limits (overridable from the
  device's attributes), workgroups chosen by the extra matcher, and the source -> uops record the mock driver reads."""
  device = "AMD"
  has_local = True
  has_shared = True
  global_max: tuple[int, ...] | None = (2**31 - 1, 65535, 65535)
  local_max: tuple[int, ...] | None = (1024, 1024, 1024)
  shared_max = 65536
  launch_extra: PatternMatcher | None = None   # rewrites after the launch split (HIP C: lane-wise vector ALU)
  def __init__(self, arch: str = "gfx1100", local_max: tuple[int, ...] | None = None, shared_max: int | None = None,
               global_max: tuple[int, ...] | None = None):
    self.target = check_arch(arch)
    self.arch = arch.split(":")[0]
    self.wave = self.target.wave
    self.tensor_cores = AMD_TENSOR_CORES.get(self.target.matrix, [])   # none: the TC action raises KernelOptError
    if local_max is not None: self.local_max = local_max
    if shared_max is not None: self.shared_max = shared_max
    if global_max is not None: self.global_max = global_max
    launch = pm_split_launch(launch_target(self.wave), self.local_max or (1024,))
    self.extra_matcher: PatternMatcher | None = launch + self.launch_extra if self.launch_extra is not None else launch
    self.record: dict[str, list[UOp]] | None = None   # source -> uops, kept when the mock driver needs them (see mock.py)
  def __reduce__(self): return type(self), (self.arch, self.local_max, self.shared_max, self.global_max)
  def __repr__(self) -> str: return f"{type(self).__name__}({self.arch!r})"
  def _recorded(self, uops: list[UOp], src: str) -> str:
    if self.record is not None: self.record[src] = uops
    return src

# ---------------------------------------------------------------- HIP C ----------------------------------------------------------------

def _builtin(fn: str) -> Callable[..., str]:
  # clang builtins lower to LLVM intrinsics the AMDGPU backend selects natively (no device library)
  return lambda x, dtype: f"__builtin_{fn}{'' if dtype.scalar() == dtypes.float64 else 'f'}({x})"

hip_code_for_op: dict[Ops, Callable[..., str]] = {**base_code_for_op, Ops.IDIV: safe_div("/"), Ops.MOD: safe_div("%"),
  Ops.SQRT: _builtin("sqrt"), Ops.TRUNC: _builtin("trunc")}

# hiprtc predefines these; clang with -nogpuinc does not
_hip_prelude = """#ifndef __HIPCC_RTC__
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __device__ __attribute__((device))
#endif"""
_hip_bf16 = """__device__ static inline float __b2f(unsigned short b) { return __builtin_bit_cast(float, (unsigned int)b << 16); }
__device__ static inline unsigned short __f2b(float f) {
  unsigned int u = __builtin_bit_cast(unsigned int, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(0x7fc0u | ((u >> 16) & 0x8000u));
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""
_xyz = "xyz"
# workgroup size of axis a, from the dispatch packet (u16 fields at byte 4, 6, 8)
_group_size = "((const unsigned short*)__builtin_amdgcn_dispatch_ptr())[{}]"

def hip_mma_function(name: str, ea: int, eb: int, ec: int) -> str:
  """A device function running the WMMA uop `name` with its builtin: A, B elements (half, or bfloat16 held as float) and
  C floats in, the float vector D out."""
  builtin, imms = AMD_MMA[name][1], AMD_MMA[name][2]
  bf16 = name.split("_")[1] == "bf16"
  arg_ty, vec_ty = ("float", "short") if bf16 else ("_Float16", "_Float16")
  def ab(v: str, n: int) -> str: return ", ".join(f"(short)__f2b({v}{i})" if bf16 else f"{v}{i}" for i in range(n))
  args = [f"{arg_ty} a{i}" for i in range(ea)] + [f"{arg_ty} b{i}" for i in range(eb)] + [f"float c{i}" for i in range(ec)]
  return "\n".join([f"__device__ static inline tg_float{ec} __{name}({', '.join(args)}) {{",
                    f"  typedef {vec_ty} tg_ab __attribute__((ext_vector_type({ea})));",
                    f"  typedef float tg_cd __attribute__((ext_vector_type({ec})));",
                    f"  return {builtin}(tg_ab{{{ab('a', ea)}}}, tg_ab{{{ab('b', eb)}}}, tg_cd{{{', '.join(f'c{i}' for i in range(ec))}}}{', 0' * imms});",
                    "}"])

class HIPRenderer(AMDAbilities, CStyleLanguage):
  """Header-less HIP C: `extern "C" __global__` kernels with their flat workgroup size bound, amdgcn builtins for launch
  indices and barriers, `__shared__` memory, ext_vector_type vectors. `arch` ("gfx90a") is the target."""
  barrier = '__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");'
  smem_prefix = "__shared__ "
  smem_align = " __attribute__((aligned(16)))"
  infinity = "__builtin_inff()"
  nan = '__builtin_nanf("")'
  code_for_workitem = {"g": lambda a: f"((int)__builtin_amdgcn_workgroup_id_{_xyz[int(a)]}())",
                       "l": lambda a: f"((int)__builtin_amdgcn_workitem_id_{_xyz[int(a)]}())",
                       "i": lambda a: f"((int)(__builtin_amdgcn_workgroup_id_{_xyz[int(a)]}()*{_group_size.format(2 + int(a))}"
                                      f"+__builtin_amdgcn_workitem_id_{_xyz[int(a)]}()))"}
  type_map = {dtypes.bool: "bool", dtypes.float16: "_Float16", dtypes.int64: "long long", dtypes.uint64: "unsigned long long",
              dtypes.int8: "signed char"}
  emulated_floats = {dtypes.bfloat16: (dtypes.uint16, "__b2f({})", "__f2b({})", "__b2f(__f2b({}))")}
  code_for_op = hip_code_for_op   # EXP2, LOG2, SIN absent: decomposed by codegen (see the module docstring)
  launch_extra = pm_hip_devectorize
  unaligned_vectors = True   # the vector typedefs are aligned like their element (prelude)
  string_rewrite = PatternMatcher([
    (UPat(Ops.WMMA, name="x"), lambda ctx, x: f"__{x.arg[0]}({', '.join(ctx.r[s] for s in x.src)})"),   # tensor core: see prelude
  ]) + base_rewrite

  def _vec_name(self, dt: DType) -> str: return f"tg_{self.render_dtype(dt.scalar()).replace(' ', '_')}{dt.count}"
  def render_dtype(self, dt: DType, mutable: bool = True) -> str:
    if not isinstance(dt, PtrDType) and dt.count > 1: return self._vec_name(dt)
    return super().render_dtype(dt, mutable)
  def render_vectorize(self, elems: list[str], dt: DType) -> str: return f"{self._vec_name(dt)}{{{','.join(elems)}}}"
  def render_gep(self, vec: str, lane: int, dt: DType) -> str: return f"{vec}[{lane}]"
  def render_bitcast(self, to: str, frm: str, x: str) -> str: return f"__builtin_bit_cast({to}, {x})"
  def prelude(self, uops: list[UOp]) -> list[str]:
    used = {u.dtype.scalar() for u in uops} | {u.dtype.base.scalar() for u in uops if isinstance(u.dtype, PtrDType)}
    ret = [_hip_prelude] + ([_hip_bf16] if dtypes.bfloat16 in used else [])
    vecs = {self.storage_dtype(u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype) for u in uops}
    vecs |= {self.compute_dtype(d) for d in vecs}
    # vectors are aligned like their element: a vector load from a float buffer need not be 16-byte aligned
    ret += [f"typedef {self.render_dtype(dt.scalar())} {self._vec_name(dt)} __attribute__((ext_vector_type({dt.count}),aligned({dt.scalar().itemsize})));"
            for dt in sorted(d for d in vecs if d.count > 1)]
    return ret + [hip_mma_function(w.arg[0], w.arg[3][0], w.arg[3][1], w.dtype.count) for w in {u.arg: u for u in uops if u.op is Ops.WMMA}.values()]
  def render_kernel(self, name: str, body: list[str], args: list[str], uops: list[UOp], prelude: list[str]) -> str:
    head = f'extern "C" __global__ void __attribute__((amdgpu_flat_work_group_size(1, {launch_threads(uops)}))) {name}({", ".join(args)}) {{'
    return "\n".join(prelude + [head] + body + ["}"]) + "\n"
  def render(self, uops: list[UOp], name: str = "kernel") -> str: return self._recorded(uops, super().render(uops, name))

# ---------------------------------------------------------------- AMDGPU LLVM IR ----------------------------------------------------------------

class AMDLLVMRenderer(AMDAbilities, LLVMIRRenderer):
  """AMDGPU LLVM IR: `amdgpu_kernel` functions over global (1), LDS (3) and private (5) address spaces, workgroup/workitem
  id intrinsics, s_barrier between workgroup-scope fences, LDS arrays as module globals. The compiler adds the triple's
  code-object version (it depends on the linker)."""
  code_for_op = {op: fn for op, fn in LLVMIRRenderer.code_for_op.items() if op not in (Ops.EXP2, Ops.LOG2, Ops.SIN)}
  addrspaces = {AddrSpace.GLOBAL: 1, AddrSpace.LOCAL: 3, AddrSpace.REG: 5}

  def _intrinsic_call(self, decl: str, call: str) -> str:
    self.decls.add(decl)
    return self._ins("sp", call)
  def render_special(self, u: UOp) -> str:
    ax = _xyz[int(u.arg[-1])]
    def ids(kind: str) -> str:
      return self._intrinsic_call(f"declare i32 @llvm.amdgcn.{kind}.id.{ax}()", f"call i32 @llvm.amdgcn.{kind}.id.{ax}()")
    if u.arg[0] == "g": return ids("workgroup")
    if u.arg[0] == "l": return ids("workitem")
    grp, item = ids("workgroup"), ids("workitem")
    dp = self._intrinsic_call("declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()", "call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()")
    p = self._ins("sp", f"getelementptr inbounds i16, ptr addrspace(4) {dp}, i32 {2 + int(u.arg[-1])}")
    size = self._ins("sp", f"zext i16 {self._ins('sp', f'load i16, ptr addrspace(4) {p}, align 2')} to i32")
    return self._ins("sp", f"add i32 {self._ins('sp', f'mul i32 {grp}, {size}')}, {item}")
  def render_wmma(self, u: UOp) -> str:
    intrinsic, _, imms = AMD_MMA[u.arg[0]]
    ea, eb = u.arg[3]
    bf16 = u.src[0].dtype.scalar() == dtypes.bfloat16
    def vec(srcs: tuple[UOp, ...], ty: str) -> str:
      v = "poison"
      for i, s in enumerate(srcs):
        x = self._to_mem(self.r[s], s.dtype) if ty == "i16" else self.r[s]   # bfloat16: float register -> its 16 bits
        v = self._ins("mma", f"insertelement <{len(srcs)} x {ty}> {v}, {ty} {x}, i32 {i}")
      return v
    ab = "i16" if bf16 else "half"
    a, b, c = vec(u.src[:ea], ab), vec(u.src[ea:ea+eb], ab), vec(u.src[ea+eb:], "float")
    ta, tb, td = f"<{ea} x {ab}>", f"<{eb} x {ab}>", self.ty(u.dtype)
    self.decls.add(f"declare {td} @{intrinsic}({ta}, {tb}, {td}{', i32' * imms})")
    return self._ins("mma", f"call {td} @{intrinsic}({ta} {a}, {tb} {b}, {td} {c}{', i32 0' * imms})")
  def render_barrier(self) -> None:
    self.decls.add("declare void @llvm.amdgcn.s.barrier()")
    self._emit('fence syncscope("workgroup") release')
    self._emit("call void @llvm.amdgcn.s.barrier()")
    self._emit('fence syncscope("workgroup") acquire')
  def render_local(self, u: UOp, nm: str) -> None:
    assert isinstance(u.dtype, PtrDType)
    self.globals.append(f"{nm} = internal addrspace(3) global [{u.dtype.size} x {self.mty(u.dtype.base)}] undef, align 16")
  kernel_cc = "amdgpu_kernel "
  def fn_attrs(self, uops: list[UOp]) -> str: return "#0"
  def render_kernel(self, name: str, args: list[str], uops: list[UOp]) -> str:
    attrs = f'attributes #0 = {{ nounwind "amdgpu-flat-work-group-size"="1,{launch_threads(uops)}" }}'
    return f'target triple = "amdgcn-amd-amdhsa"\n{super().render_kernel(name, args, uops)}{attrs}\n'
  def render(self, uops: list[UOp], name: str = "kernel") -> str: return self._recorded(uops, super().render(uops, name))
