"""Golden tests of the rendered HIP C and AMDGPU LLVM IR (no GPU, no compiler), and the target check."""
import pytest
from tinygrad.dtype import dtypes
from tinygrad_amd.renderer import HIPRenderer, AMDLLVMRenderer, AMD_ARCHS, AMD_TENSOR_CORES, check_arch
from _cpu_kernels import add_kernel, gated_kernel, divmod_kernel, elementwise
from _amd_kernels import lds_reverse_kernel, global_index_kernel

HIP_HEAD = """#ifndef __HIPCC_RTC__
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __device__ __attribute__((device))
#endif
"""

def test_hip_add_exact():
  assert HIPRenderer("gfx90a").render(add_kernel(16), "E_16") == HIP_HEAD + """\
extern "C" __global__ void __attribute__((amdgpu_flat_work_group_size(1, 1))) E_16(float* data0, float* data1, float* data2) {
  for (int ridx0 = 0; ridx0 < 16; ridx0++) {
    float val0 = data1[ridx0];
    float val1 = data2[ridx0];
    data0[ridx0] = (val0+val1);
  }
}
"""

def test_hip_lds_barrier_exact():
  assert HIPRenderer("gfx1100").render(lds_reverse_kernel(), "lds") == HIP_HEAD + """\
extern "C" __global__ void __attribute__((amdgpu_flat_work_group_size(1, 4))) lds(float* data0, float* data1) {
  int gidx0 = ((int)__builtin_amdgcn_workgroup_id_x());
  int lidx0 = ((int)__builtin_amdgcn_workitem_id_x());
  __shared__ float temp0[4] __attribute__((aligned(16)));
  int alu0 = ((gidx0*4)+lidx0);
  float val0 = data1[alu0];
  temp0[lidx0] = val0;
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
  float val1 = temp0[(3-lidx0)];
  data0[alu0] = val1;
}
"""

def test_hip_half_bf16_gates_divmod():
  src = HIPRenderer().render(elementwise(lambda a, b: a + b, [dtypes.float16]*2, dtypes.float16, 4), "k")
  assert "k(_Float16* data0, _Float16* data1, _Float16* data2)" in src and "data0[ridx0] = (val0+val1);" in src   # native half
  src = HIPRenderer().render(elementwise(lambda a: a * a, [dtypes.bfloat16], dtypes.bfloat16, 4), "k")
  assert "__b2f(" in src and "data0[ridx0] = __f2b(__b2f(__f2b((val0*val0))));" in src
  assert "float val0 = ((ridx0<10)?data1[ridx0]:0.0f);" in HIPRenderer().render(gated_kernel(16, 10), "k")
  assert "((val1)==0?0:(val1)==-1?(-val0):(val0/val1))" in HIPRenderer().render(divmod_kernel(16), "k")
  assert "__builtin_amdgcn_dispatch_ptr())[2]+__builtin_amdgcn_workitem_id_x()" in HIPRenderer().render(global_index_kernel(), "k")

def test_llvm_add_exact():
  assert AMDLLVMRenderer("gfx1100").render(add_kernel(16), "E_16") == """\
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @E_16(ptr addrspace(1) noalias %data0, ptr addrspace(1) noalias %data1, ptr addrspace(1) noalias %data2) #0 {
entry:
  %ridx0.addr = alloca i32, addrspace(5)
  store i32 0, ptr addrspace(5) %ridx0.addr
  br label %ridx0.head
ridx0.head:
  %ridx0 = load i32, ptr addrspace(5) %ridx0.addr
  %ridx0.go = icmp slt i32 %ridx0, 16
  br i1 %ridx0.go, label %ridx0.body, label %ridx0.exit
ridx0.body:
  %idx0 = getelementptr inbounds float, ptr addrspace(1) %data0, i32 %ridx0
  %idx1 = getelementptr inbounds float, ptr addrspace(1) %data1, i32 %ridx0
  %val0 = load float, ptr addrspace(1) %idx1, align 4
  %idx2 = getelementptr inbounds float, ptr addrspace(1) %data2, i32 %ridx0
  %val1 = load float, ptr addrspace(1) %idx2, align 4
  %alu0 = fadd float %val0, %val1
  store float %alu0, ptr addrspace(1) %idx0, align 4
  %ridx0.inc = add nsw i32 %ridx0, 1
  store i32 %ridx0.inc, ptr addrspace(5) %ridx0.addr
  br label %ridx0.head
ridx0.exit:
  ret void
}
attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,1" }
"""

def test_llvm_lds_barrier_exact():
  assert AMDLLVMRenderer("gfx90a").render(lds_reverse_kernel(), "lds") == """\
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
@temp0 = internal addrspace(3) global [4 x float] undef, align 16
define amdgpu_kernel void @lds(ptr addrspace(1) noalias %data0, ptr addrspace(1) noalias %data1) #0 {
entry:
  %sp0 = call i32 @llvm.amdgcn.workgroup.id.x()
  %sp1 = call i32 @llvm.amdgcn.workitem.id.x()
  %idx0 = getelementptr inbounds float, ptr addrspace(3) @temp0, i32 %sp1
  %alu0 = mul nsw i32 %sp0, 4
  %alu1 = add nsw i32 %alu0, %sp1
  %idx1 = getelementptr inbounds float, ptr addrspace(1) %data1, i32 %alu1
  %val0 = load float, ptr addrspace(1) %idx1, align 4
  store float %val0, ptr addrspace(3) %idx0, align 4
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %idx2 = getelementptr inbounds float, ptr addrspace(1) %data0, i32 %alu1
  %alu2 = sub nsw i32 3, %sp1
  %idx3 = getelementptr inbounds float, ptr addrspace(3) @temp0, i32 %alu2
  %val1 = load float, ptr addrspace(3) %idx3, align 4
  store float %val1, ptr addrspace(1) %idx2, align 4
  ret void
}
attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,4" }
"""

def test_llvm_launch_index_half_bf16():
  src = AMDLLVMRenderer().render(global_index_kernel(), "k")
  assert "call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()" in src and "getelementptr inbounds i16, ptr addrspace(4) %sp2, i32 2" in src
  src = AMDLLVMRenderer().render(elementwise(lambda a, b: a + b, [dtypes.float16]*2, dtypes.float16, 4), "k")
  assert "fadd half %val0, %val1" in src and "load half, ptr addrspace(1)" in src
  src = AMDLLVMRenderer().render(elementwise(lambda a: a * a, [dtypes.bfloat16], dtypes.bfloat16, 4), "k")
  assert "define internal i16 @__f2b(float %f)" in src and "load i16, ptr addrspace(1)" in src

def test_renderers_decompose_libm_ops():
  # no device library: exp2/log2/sin are decomposed by codegen for both renderers
  from tinygrad.uop import Ops
  for r in (HIPRenderer(), AMDLLVMRenderer()): assert not {Ops.EXP2, Ops.LOG2, Ops.SIN} & set(r.code_for_op)

def test_wave_and_targets():
  assert HIPRenderer("gfx90a").wave == 64 and AMDLLVMRenderer("gfx1100").wave == 32 and AMDLLVMRenderer("gfx942:sramecc+:xnack-").arch == "gfx942"
  assert {a.matrix for a in AMD_ARCHS.values()} - {""} <= set(AMD_TENSOR_CORES)
  assert check_arch("gfx950").family == "CDNA4"

# ---- tensor cores: RDNA3 WMMA (wave32), CDNA MFMA (wave64); none elsewhere ----

def _tc_program(ren, dt=dtypes.half, tc: int = 0):
  from tinygrad import Tensor
  from tinygrad.codegen import get_program
  from tinygrad.codegen.opt import Opt, OptOps
  ast = (Tensor.empty(16, 16, dtype=dt, device="NULL") @ Tensor.empty(16, 16, dtype=dt, device="NULL")).schedule()[-1].ast
  return get_program(ast, ren, [Opt(OptOps.TC, 0, tc)])

@pytest.mark.parametrize("arch,names", [("gfx1100", ["wmma16x16x16_f16_f32", "wmma16x16x16_bf16_f32"]), ("gfx1151", ["wmma16x16x16_f16_f32", "wmma16x16x16_bf16_f32"]),
                                        ("gfx90a", ["mfma16x16x16_f16_f32", "mfma16x16x16_bf16_f32"]), ("gfx942", ["mfma16x16x16_f16_f32", "mfma16x16x16_bf16_f32"]),
                                        ("gfx908", ["mfma16x16x16_f16_f32"]), ("gfx1030", []), ("gfx1201", [])])
def test_tensor_cores_by_arch(arch, names):
  from tinygrad.codegen.tc import wmma_name
  from tinygrad.codegen.opt import KernelOptError
  for ren in (HIPRenderer(arch), AMDLLVMRenderer(arch)):
    assert [wmma_name(tc) for tc in ren.tensor_cores] == names
    assert all(tc.threads == ren.wave for tc in ren.tensor_cores)   # one WMMA/MFMA is one wavefront's instruction
    if not names:
      with pytest.raises(KernelOptError, match="this renderer has 0 tensor cores"): _tc_program(ren)

def test_hip_wmma_exact():
  src = _tc_program(HIPRenderer("gfx1100")).src
  args = ", ".join([f"_Float16 a{i}" for i in range(16)] + [f"_Float16 b{i}" for i in range(16)] + [f"float c{i}" for i in range(8)])
  assert f"""typedef float tg_float8 __attribute__((ext_vector_type(8),aligned(4)));
__device__ static inline tg_float8 __wmma16x16x16_f16_f32({args}) {{
  typedef _Float16 tg_ab __attribute__((ext_vector_type(16)));
  typedef float tg_cd __attribute__((ext_vector_type(8)));
  return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(tg_ab{{{", ".join(f"a{i}" for i in range(16))}}}, tg_ab{{{", ".join(f"b{i}" for i in range(16))}}}, tg_cd{{c0, c1, c2, c3, c4, c5, c6, c7}});
}}
extern "C" __global__ void __attribute__((amdgpu_flat_work_group_size(1, 32))) r_16_16_16(""" in src
  vals = ", ".join(f"val{i}" for i in range(32))
  assert f"  tg_float8 wmma0 = __wmma16x16x16_f16_f32({vals}, {', '.join(['0.0f'] * 8)});" in src
  # A: lane l loads row l%16, all K in order; B: column l%16; D element i goes to row 2i + l//16, column l%16
  assert "int alu0 = (lidx0%16);\n  int alu1 = (alu0*16);\n  _Float16 val0 = data1[alu1];" in src and "_Float16 val31 = data2[(alu0+240)];" in src
  assert "data0[lidx0] = ((_Float16)wmma0[0]);" in src and "data0[(lidx0+224)] = ((_Float16)wmma0[7]);" in src  # (the size-1 K loop folds)

def test_hip_mfma_bf16_exact():
  src = _tc_program(HIPRenderer("gfx90a"), dtypes.bfloat16, 1).src
  assert """__device__ static inline tg_float4 __mfma16x16x16_bf16_f32(float a0, float a1, float a2, float a3, float b0, float b1, float b2, float b3, float c0, float c1, float c2, float c3) {
  typedef short tg_ab __attribute__((ext_vector_type(4)));
  typedef float tg_cd __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(tg_ab{(short)__f2b(a0), (short)__f2b(a1), (short)__f2b(a2), (short)__f2b(a3)}, tg_ab{(short)__f2b(b0), (short)__f2b(b1), (short)__f2b(b2), (short)__f2b(b3)}, tg_cd{c0, c1, c2, c3}, 0, 0, 0);
}""" in src and "amdgpu_flat_work_group_size(1, 64)" in src

def test_llvm_wmma_and_mfma_exact():
  src = _tc_program(AMDLLVMRenderer("gfx1100")).src
  assert "declare <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(<16 x half>, <16 x half>, <8 x float>)" in src
  assert "  %mma0 = insertelement <16 x half> poison, half %val0, i32 0\n  %mma1 = insertelement <16 x half> %mma0, half %val1, i32 1\n" in src
  assert "  %mma40 = call <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(<16 x half> %mma15, <16 x half> %mma31, <8 x float> %mma39)\n  %gep0 = extractelement <8 x float> %mma40, i32 0" in src
  src = _tc_program(AMDLLVMRenderer("gfx942"), dtypes.bfloat16, 1).src
  assert "declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>, i32, i32, i32)" in src
  assert "  %cast8 = call i16 @__f2b(float %cast0)\n  %mma0 = insertelement <4 x i16> poison, i16 %cast8, i32 0" in src   # bfloat16: its 16 bits
  assert "@llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16> %mma3, <4 x i16> %mma7, <4 x float> %mma11, i32 0, i32 0, i32 0)" in src

@pytest.mark.parametrize("arch", ["gfx9999", "sm_90", ""])
def test_unsupported_target_is_refused(arch):
  with pytest.raises(ValueError, match="unsupported gfx target.*supported: gfx908, gfx90a"): check_arch(arch)
  with pytest.raises(ValueError, match="supported: "): AMDLLVMRenderer(arch)
