"""Golden tests of the rendered CUDA C and PTX (no GPU, no compiler)."""
from tinygrad.dtype import dtypes
from tinygrad_nv.renderer import CUDARenderer, PTXRenderer, ptx_version
from _cpu_kernels import add_kernel, gated_kernel, divmod_kernel, elementwise

def test_cuda_add_exact():
  assert CUDARenderer("sm_90").render(add_kernel(16), "E_16") == """\
extern "C" __global__ void __launch_bounds__(1) E_16(float* data0, float* data1, float* data2) {
  for (int ridx0 = 0; ridx0 < 16; ridx0++) {
    float val0 = data1[ridx0];
    float val1 = data2[ridx0];
    data0[ridx0] = (val0+val1);
  }
}
"""

def test_cuda_half_bf16_gates_divmod():
  src = CUDARenderer().render(elementwise(lambda a, b: a + b, [dtypes.float16]*2, dtypes.float16, 4), "k")
  assert 'asm("cvt.rn.f16.f32 %0, %1;"' in src and "data0[ridx0] = __f2h(__h2f(__f2h((val0+val1))));" in src
  assert "__b2f(" in CUDARenderer().render(elementwise(lambda a: a * a, [dtypes.bfloat16], dtypes.bfloat16, 4), "k")
  assert "float val0 = ((ridx0<10)?data1[ridx0]:0.0f);" in CUDARenderer().render(gated_kernel(16, 10), "k")
  assert "((val1)==0?0:(val1)==-1?(-val0):(val0/val1))" in CUDARenderer().render(divmod_kernel(16), "k")

def test_ptx_header_and_ops():
  src = PTXRenderer("sm_90").render(add_kernel(16), "E_16")
  assert src.startswith("//") and ".version 7.8\n.target sm_90\n.address_size 64" in src
  assert ".visible .entry E_16(\n\t.param .u64 data0,\n\t.param .u64 data1,\n\t.param .u64 data2\n) .maxntid 1, 1, 1" in src
  assert "add.rn.f32" in src and "cvta.to.global.u64" in src and "@!%p" in src
  assert ptx_version("sm_75") == "6.4" and ptx_version("sm_120") == "8.7"
  src = PTXRenderer().render(gated_kernel(16, 10), "k")
  assert "setp.lt.s32" in src and "\t@%p" in src and "ld.global.f32" in src
