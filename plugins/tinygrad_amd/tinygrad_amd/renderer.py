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
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import PatternMatcher
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes
from tinygrad.renderer import TensorCore
from tinygrad.renderer.cstyle import CStyleLanguage, base_code_for_op, safe_div
from tinygrad.renderer.llvmir import LLVMIRRenderer
from tinygrad.renderer.gpu import pm_split_launch, pm_devectorize_alu, launch_threads

# ---------------------------------------------------------------- targets ----------------------------------------------------------------

@dataclass(frozen=True)
class Arch:
  """One gfx target: its family (CDNA for Instinct, RDNA for Radeon), wavefront width and matrix-core kind."""
  family: str
  wave: int
  matrix: str = ""   # "mfma" (CDNA), "wmma" (RDNA3), "wmma_gfx12" (RDNA4), "" (none)

AMD_ARCHS: dict[str, Arch] = {
  "gfx908": Arch("CDNA1", 64, "mfma"), "gfx90a": Arch("CDNA2", 64, "mfma"), "gfx942": Arch("CDNA3", 64, "mfma"),
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

# Matrix cores by kind, as data for the optimizer's tensor-core action (not wired into `tensor_cores` until the renderers
# emit WMMA/MFMA): dims (N, M, K), threads in the wave that cooperate, elements per thread of (A, B, C/D)
_f16, _bf16, _f32 = dtypes.float16, dtypes.bfloat16, dtypes.float32
AMD_TENSOR_CORES: dict[str, list[TensorCore]] = {
  "wmma": [TensorCore((16, 16, 16), 32, di, do, (16, 16, 8)) for di, do in [(_f16, _f32), (_bf16, _f32), (_f16, _f16)]],
  "wmma_gfx12": [TensorCore((16, 16, 16), 32, di, do, (8, 8, 8)) for di, do in [(_f16, _f32), (_bf16, _f32), (_f16, _f16)]],
  "mfma": [TensorCore((16, 16, 16), 64, di, _f32, (4, 4, 4)) for di in (_f16, _bf16)],
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
    if local_max is not None: self.local_max = local_max
    if shared_max is not None: self.shared_max = shared_max
    if global_max is not None: self.global_max = global_max
    launch = pm_split_launch(launch_target(self.wave), self.local_max or (1024,))
    self.extra_matcher = launch + self.launch_extra if self.launch_extra is not None else launch
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
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""
_xyz = "xyz"
# workgroup size of axis a, from the dispatch packet (u16 fields at byte 4, 6, 8)
_group_size = "((const unsigned short*)__builtin_amdgcn_dispatch_ptr())[{}]"

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
    return ret + [f"typedef {self.render_dtype(dt.scalar())} {self._vec_name(dt)} __attribute__((ext_vector_type({dt.count}),aligned({dt.scalar().itemsize})));"
                  for dt in sorted(d for d in vecs if d.count > 1)]
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
