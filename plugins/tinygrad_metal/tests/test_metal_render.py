"""Golden tests of the rendered MSL, and the clang++ syntax check of every conformance kernel (no Metal device needed)."""
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps
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
  assert "constant int& var_b [[buffer(3)]]" in src and "constant int& var_a [[buffer(2)]]" in src and "device float* data1 [[buffer(1)]]" in src

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

def tc_program(m: int, n: int, k: int, dt, opts=None):
  ast = (Tensor.empty(m, k, dtype=dt, device="NULL") @ Tensor.empty(k, n, dtype=dt, device="NULL")).schedule()[-1].ast
  return get_program(ast, MetalRenderer(), opts)

def test_wmma_simdgroup_helper_exact():
  # a half matmul takes the half->float tensor core (float accumulator): the helper fills thread_elements() of simdgroup
  # matrices in codegen/tc.py's simd8x8x8 layout, and the kernel sums the returned elements over K tiles
  src = tc_program(16, 8, 16, dtypes.half).src
  assert src.startswith("""\
#include <metal_stdlib>
using namespace metal;
float2 __simd8x8x8_f16_f32(half a0, half a1, half b0, half b1, float c0, float c1) {
  simdgroup_half8x8 a, b;
  simdgroup_float8x8 c;
  a.thread_elements()[0] = a0;
  a.thread_elements()[1] = a1;
  b.thread_elements()[0] = b0;
  b.thread_elements()[1] = b1;
  c.thread_elements()[0] = c0;
  c.thread_elements()[1] = c1;
  simdgroup_multiply_accumulate(c, a, b, c);
  return float2(c.thread_elements()[0], c.thread_elements()[1]);
}
kernel void r_16_8_16(""")
  for frag in ["int alu4 = (((lidx0%2)*2)+(((lidx0/8)%2)*4));", "float2 wmma0 = __simd8x8x8_f16_f32(val1, val2, val3, val4, 0.0f, 0.0f);",
               "acc0[0] = (val0+wmma0.x);", "acc1[0] = (val5+wmma0.y);", "uint3 lid [[thread_position_in_threadgroup]]"]:
    assert frag in src, frag
  p = tc_program(16, 8, 16, dtypes.half)
  assert p.local_size == [32, 1, 1] and src.count("simdgroup_multiply_accumulate") == 1

def test_wmma_float_and_half_accumulators():
  assert "float2 __simd8x8x8_f32_f32(float a0, float a1, float b0, float b1, float c0, float c1) {" in tc_program(8, 8, 8, dtypes.float).src
  half = tc_program(8, 8, 8, dtypes.half, [Opt(OptOps.TC, 0, 2)]).src   # half->half: only when asked for
  assert "half2 __simd8x8x8_f16_f16(half a0, half a1, half b0, half b1, half c0, half c1) {" in half and "simdgroup_half8x8 c;" in half
  assert [(t.dtype_in, t.dtype_out) for t in MetalRenderer.tensor_cores] == [(dtypes.float, dtypes.float), (dtypes.half, dtypes.float),
                                                                             (dtypes.half, dtypes.half)]
  assert "WMMA" not in {u.op.name for u in tc_program(8, 8, 8, dtypes.bfloat16).uops}   # no bfloat simdgroup matrices (MSL 3.1)

@needs_clang
def test_wmma_kernels_pass_cxx_syntax_check():
  srcs = {"f16_f32": tc_program(32, 16, 48, dtypes.half).src, "f32_f32": tc_program(16, 24, 8, dtypes.float).src,
          "f16_f16": tc_program(8, 8, 8, dtypes.half, [Opt(OptOps.TC, 0, 2)]).src}
  assert _msl_check.check(srcs) == [] and not any(_msl_check.lint(s) for s in srcs.values())

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
    assert src.startswith("#include <metal_stdlib>\nusing namespace metal;\nkernel void ") or "__simd8x8x8_" in src, label
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

def test_vector_accesses_only_at_aligned_offsets():
  # a device that turns vectors on (vector_bytes is a per-device ability) gets `device float4*` accesses only where the offset
  # is a multiple of 4 elements: MSL's float4 needs 16-byte alignment, and x[1:] starts 4 bytes past it
  from tinygrad.uop import Ops
  r = MetalRenderer(vector_bytes=16, vector_ops=frozenset({Ops.ADD, Ops.MUL}), vector_dtypes=frozenset({dtypes.float32}))
  x = Tensor.empty(40, device="NULL")
  src = get_program((x[1:33] * 2 + x[4:36]).schedule()[-1].ast, r, [Opt(OptOps.UPCAST, 0, 4)]).src
  for frag in ["float val0 = data1[(alu0+1)];", "float val3 = data1[(alu0+4)];", "float4 val4 = (*((device float4*)(data1+(alu0+4))));",
               "(*((device float4*)(data0+alu0))) = ((float4(val0,val1,val2,val3)*float4(2.0f,2.0f,2.0f,2.0f))+val4);"]:
    assert frag in src, (frag, src)
  assert "float4*)(data1+(alu0+1))" not in src
