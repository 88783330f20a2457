"""Golden tests of the rendered MSL, and the clang++ syntax check of every conformance kernel (no Metal device needed)."""
import pytest
from tinygrad.codegen import get_program
from tinygrad_metal.renderer import MetalRenderer
from _metal_kernels import hand_kernels, conformance_asts, programs
import _msl_check

needs_clang = pytest.mark.skipif(_msl_check.CLANGXX is None, reason="clang++ is not installed (apt-get install clang)")

def render(name: str) -> str: return MetalRenderer().render(hand_kernels()[name], name)

@pytest.fixture(scope="module")
def conformance_srcs() -> dict[str, str]:
  r = MetalRenderer()
  return {label: get_program(ast, r).src for label, ast in conformance_asts().items()}

def test_add_exact():
  assert render("add") == """\
#include <metal_stdlib>
using namespace metal;
kernel void add(device float* data0 [[buffer(0)]], device float* data1 [[buffer(1)]], device float* data2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = (int)gid.x;
  float val0 = data1[gidx0];
  float val1 = data2[gidx0];
  data0[gidx0] = (val0+val1);
}
"""

def test_variables_bind_after_buffers_sorted_by_name():
  src = render("two_vars")
  assert "constant int& b [[buffer(3)]]" in src and "constant int& a [[buffer(2)]]" in src and "device float* data1 [[buffer(1)]]" in src

def test_threadgroup_memory_barrier_and_group_ids():
  src = render("local_sum")
  for frag in ["uint3 gid [[threadgroup_position_in_grid]], uint3 lid [[thread_position_in_threadgroup]])", "int lidx0 = (int)lid.x;",
               "threadgroup __attribute__((aligned(16))) float temp0[16];", "temp0[lidx0] = val0;",
               "threadgroup_barrier(mem_flags::mem_threadgroup);", "if ((lidx0<1)) data0[gidx0] = (((val1+val2)+val3)+val4);"]:
    assert frag in src, frag

def test_vector_pointers_keep_their_address_space():
  src = render("vec4")
  assert "float4 val0 = (*((device float4*)(data1+alu0)));" in src
  assert "((gidx0<8)?(*((device float4*)(data1+alu0))):float4(0.0f,0.0f,0.0f,0.0f))" in src
  assert "(*((device float4*)(data0+alu0))) = ((val0*float4(2.0f,2.0f,2.0f,2.0f))+val1);" in src

def test_wmma_simdgroup_helper():
  src = render("wmma_half_float")
  for frag in ["float2 __WMMA_8_8_8_half_float(half2 a, half2 b, float2 c) {", "simdgroup_half8x8 ma, mb;", "simdgroup_float8x8 mc;",
               "simdgroup_multiply_accumulate(mc, ma, mb, mc);", "return float2(mc.thread_elements()[0], mc.thread_elements()[1]);",
               "float2 wmma0 = __WMMA_8_8_8_half_float(half2(val0,val1), half2(val2,val3), float2(0.0f,0.0f));", "data0[alu1] = wmma0.y;"]:
    assert frag in src, frag
  assert "simdgroup_bfloat8x8 ma, mb;" in render("wmma_bf16")
  tcs = MetalRenderer.tensor_cores
  assert {(str(t.dtype_in), str(t.dtype_out)) for t in tcs} >= {("dtypes.half", "dtypes.float")} and all(t.dims == (8, 8, 8) and t.threads == 32 for t in tcs)

def test_types_and_literals():
  assert "device half* data0" in render("half_sqrt") and "sqrt((val0*val1))" in render("half_sqrt")
  assert "device bfloat* data0" in render("bfloat_add")
  assert "((val0*(-9223372036854775807l-1))+1000000000000l)" in render("int64")
  assert "as_type<float>((as_type<uint>(val0)>>3u))" in render("bitcast")
  assert "((char)((ushort)(((unsigned int)val0)*((unsigned int)val1))))" in render("narrow_ints") or "(char)" in render("narrow_ints")
  r = MetalRenderer()
  assert r.render_const(float("inf"), r.type_map and __import__("tinygrad").dtypes.float32) == "INFINITY"

def test_no_float64_and_transcendentals_are_decomposed():
  from tinygrad.dtype import dtypes
  from tinygrad.uop import Ops
  assert dtypes.float64 not in MetalRenderer.supported_dtypes
  assert Ops.SQRT in MetalRenderer.code_for_op and not {Ops.EXP2, Ops.LOG2, Ops.SIN} & set(MetalRenderer.code_for_op)

def test_conformance_kernels_cover_every_family(conformance_srcs):
  families = {k.split("/")[0] for k in conformance_srcs}
  assert families == {k.split("/")[0] for k in programs()} >= {"creation", "random", "binary", "unary", "reduce", "movement", "getitem",
                                                                "matmul", "nn", "conv", "dtype"}
  assert len(conformance_srcs) >= 50
  for label, src in conformance_srcs.items():
    assert src.startswith("#include <metal_stdlib>\nusing namespace metal;\nkernel void ") or "__WMMA" in src, label
    assert not _msl_check.lint(src), (label, _msl_check.lint(src))

@needs_clang
def test_conformance_kernels_pass_cxx_syntax_check(conformance_srcs):
  assert _msl_check.check(conformance_srcs) == []

@needs_clang
def test_hand_kernels_pass_cxx_syntax_check():
  srcs = {k: render(k) for k in hand_kernels()}
  assert _msl_check.check(srcs) == [] and not any(_msl_check.lint(s) for s in srcs.values())

@needs_clang
def test_syntax_check_catches_errors():
  good = render("add")
  bad = {"typo": good.replace("(val0+val1)", "(val0+val2)"), "no_fn": good.replace("(val0+val1)", "exp3(val0)"),
         "bitcast_size": good.replace("(val0+val1)", "as_type<float>(val0 > val1 ? 1l : 0l)"),
         "space": good.replace("float val0 = data1[gidx0];", "float* p = data1; float val0 = p[gidx0];")}
  errs = _msl_check.check(bad)
  for k in bad: assert any(e.startswith(f"{k}: error") or k == "bitcast_size" and "sizes differ" in e for e in errs), (k, errs)
  assert _msl_check.lint("x = *((float4*)(data0+1));") and _msl_check.lint("double x;")
