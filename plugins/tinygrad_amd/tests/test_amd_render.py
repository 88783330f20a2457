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
  %ridx0.inc = add i32 %ridx0, 1
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
  %alu0 = mul i32 %sp0, 4
  %alu1 = add i32 %alu0, %sp1
  %idx1 = getelementptr inbounds float, ptr addrspace(1) %data1, i32 %alu1
  %val0 = load float, ptr addrspace(1) %idx1, align 4
  store float %val0, ptr addrspace(3) %idx0, align 4
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %idx2 = getelementptr inbounds float, ptr addrspace(1) %data0, i32 %alu1
  %alu2 = sub i32 3, %sp1
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
  for kind in {a.matrix for a in AMD_ARCHS.values()} - {""}: assert AMD_TENSOR_CORES[kind]
  assert check_arch("gfx950").family == "CDNA4"

@pytest.mark.parametrize("arch", ["gfx9999", "sm_90", ""])
def test_unsupported_target_is_refused(arch):
  with pytest.raises(ValueError, match="unsupported gfx target.*supported: gfx908, gfx90a"): check_arch(arch)
  with pytest.raises(ValueError, match="supported: "): AMDLLVMRenderer(arch)
