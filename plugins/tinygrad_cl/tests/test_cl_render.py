"""Golden tests of the rendered OpenCL C (no OpenCL device needed): launch indices, address spaces on every pointer,
vector loads/stores at any element (vload/vstore), local memory and barriers, literals, and the dtypes a device's limits allow."""
from tinygrad import Tensor, dtypes
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad_cl.renderer import OpenCLRenderer, CLLimits

def src_of(t: Tensor, opts=None, ren: OpenCLRenderer | None = None) -> str:
  return get_program(t.schedule()[-1].ast, ren or OpenCLRenderer(), opts).src

def test_add_exact():
  a, b = Tensor.empty(16, device="NULL"), Tensor.empty(16, device="NULL")
  src = src_of(a + b, [])
  assert src.split("\n", 1)[1] == """\
__kernel void E_16(__global float* data0, __global float* data1, __global float* data2) {
  int gidx0 = ((int)get_global_id(0));
  float val0 = data1[gidx0];
  float val1 = data2[gidx0];
  data0[gidx0] = (val0+val1);
}
""", src
  assert src.startswith("#pragma OPENCL FP_CONTRACT OFF\n")   # no fused a*b+c: results match numpy

def test_vector_access_keeps_global_space_and_element_alignment():
  x = Tensor.empty(33, device="NULL")
  src = src_of(x[1:] * 2, [Opt(OptOps.UPCAST, 0, 4)])   # lanes start at element 1: a float4 load off 16-byte alignment
  # vload4/vstore4 need only the element's alignment (a float4* dereference needs 16 bytes)
  assert "vload4(0, (data1+" in src and "vstore4(" in src and ", 0, (data0+" in src and "float4*" not in src
  assert "((float4)(2.0f,2.0f,2.0f,2.0f))" in src

def test_local_memory_barrier_and_group_ids():
  x = Tensor.empty(8, 64, device="NULL")
  src = src_of(x.sum(axis=1), [Opt(OptOps.GROUPTOP, 0, 16)])
  for frag in ["((int)get_group_id(0))", "((int)get_local_id(0))", "__local float temp0[16] __attribute__((aligned(16)));",
               "barrier(CLK_LOCAL_MEM_FENCE);"]:
    assert frag in src, (frag, src)
  assert "get_global_id" not in src   # with work-groups, gidx is the group

def test_literals_types_and_bitcast():
  i = Tensor.empty(4, dtype=dtypes.int64, device="NULL")
  src = src_of(i * 3000000000 + 1)
  assert "__global long* data0" in src and "3000000000l" in src and "ll" not in src.replace("__global", "")
  f = Tensor.empty(4, device="NULL")
  src = src_of(f.bitcast(dtypes.uint32) + 1)
  assert "as_uint(" in src and "__global uint* data0" in src

def test_double_nan_and_inf_literals_are_double():
  # NAN and INFINITY are float in OpenCL C: as_ulong(NAN) of a double NaN (floor's split of a float64) failed to build
  ren = OpenCLRenderer(CLLimits(fp64=True))
  assert ren.render_const(float("nan"), dtypes.float64) == "((double)NAN)" and ren.render_const(float("-inf"), dtypes.float64) == "((double)(-INFINITY))"
  assert ren.render_const(float("nan"), dtypes.float32) == "NAN" and ren.render_const(2.5, dtypes.float64) == "2.5"

def test_integer_division_is_guarded():
  a, b = Tensor.empty(4, dtype=dtypes.int32, device="NULL"), Tensor.empty(4, dtype=dtypes.int32, device="NULL")
  src = src_of(a // b)
  assert "==0?0:" in src   # x/0 is undefined in OpenCL C (SIGFPE on CPU drivers); the IR says 0

def test_limits_feed_the_renderer():
  small = OpenCLRenderer(CLLimits(local_max=(64, 32, 16), local_total=64, shared_max=4096))
  assert small.local_max == (64, 32, 16) and small.shared_max == 4096
  assert dtypes.float64 not in small.supported_dtypes and {dtypes.float16, dtypes.bfloat16} <= small.supported_dtypes
  both = OpenCLRenderer(CLLimits(fp16=True, fp64=True))
  assert {dtypes.float16, dtypes.float64} <= both.supported_dtypes
  h = Tensor.empty(4, dtype=dtypes.float16, device="NULL")
  src = src_of(h * 2, ren=both)   # cl_khr_fp16: native half
  assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in src and "__global half* data0" in src and "__h2f" not in src
  src = src_of(h * 2, ren=small)  # without it: 16 bits in memory, float in registers, OpenCL's own conversions
  assert "cl_khr_fp16" not in src and "__global ushort* data0" in src and "vstore_half_rte" in src and "__f2h(" in src
  b = Tensor.empty(4, dtype=dtypes.bfloat16, device="NULL")
  assert "__global ushort* data0" in (src := src_of(b * 2, ren=both)) and "__b2f(" in src and "__f2b(" in src
  d = Tensor.empty(4, dtype=dtypes.float64, device="NULL")
  assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in src_of(d * 2, ren=both)
  # a renderer travels to compile workers by pickling: the limits go with it
  import pickle
  assert pickle.loads(pickle.dumps(small)).limits == small.limits

def test_a_vector_accumulator_is_dereferenced_not_vloaded():
  # a float4 register array (an unrolled sum's accumulator) holds whole vectors: vload4 takes an element pointer, and
  # newer POCL refuses a float4* ("call to '_cl_vload4' is ambiguous"); the global reads stay vload4
  x = Tensor.empty(2, 4, device="NULL")
  src = src_of(x.sum(0), [Opt(OptOps.UPCAST, 0, 4)])
  assert "float4 acc0[1];" in src and "vload4(0, (acc0" not in src and "vstore4(" not in src.split("for")[0], src
  assert "vload4(0, (data1+" in src, src
