"""Golden tests of the rendered WGSL (no adapter needed: the renderer runs alone, at WebGPU's default limits)."""
import re
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.engine.schedule import create_schedule
from tinygrad.codegen import get_program
from tinygrad_webgpu.renderer import WGSLRenderer

def wgsl(t: Tensor, ren: WGSLRenderer | None = None, opts: list | None = None, heuristics: bool = False) -> str:
  """The WGSL of the last kernel computing `t` (built on the PYTHON device: the AST does not depend on it), with `opts`
  (default: none, the renderer's own output), or the heuristics' choice."""
  sched, _ = create_schedule([t.uop])
  return get_program([e for e in sched if e.ast.op.name == "SINK"][-1].ast, ren or WGSLRenderer(), None if heuristics else opts or []).src

def test_add_exact():
  a, b = Tensor.empty(16, device="PYTHON"), Tensor.empty(16, device="PYTHON")
  assert wgsl(a + b) == """\
@group(0) @binding(0) var<storage, read_write> data0: array<f32>;
@group(0) @binding(1) var<storage, read> data1: array<f32>;
@group(0) @binding(2) var<storage, read> data2: array<f32>;
@group(0) @binding(3) var<uniform> launch: array<vec4<u32>, 1>;
@compute @workgroup_size(64)
fn E_16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let lin = gid.x + gid.y*64u*nwg.x;
  if (lin >= launch[0].x) { return; }
  let gidx0 = i32(lin);
  let val0 = data1[gidx0];
  let val1 = data2[gidx0];
  data0[gidx0] = (val0+val1);
}
"""

def test_reduce_uses_a_register_array_and_a_loop():
  src = wgsl(Tensor.empty(4, 8, device="PYTHON").sum(axis=1))
  for frag in ["var acc0: array<f32, 1>;", "for (var ridx1: i32 = 0; ridx1 < 8i; ridx1++) {", "data0[gidx0] = "]: assert frag in src, src

def test_uint8_is_packed_and_stored_with_atomics():
  src = wgsl(Tensor.empty(8, dtype=dtypes.uint8, device="PYTHON") + 1)
  assert "var<storage, read_write> data0: array<atomic<u32>>;" in src and "var<storage, read> data1: array<u32>;" in src, src
  assert "atomicAnd(&data0[wi], ~(255u<<sh)); atomicOr(&data0[wi], " in src, src
  assert "&255u)" in src   # the sum wraps at 8 bits

def test_int8_sign_extends_and_int16_uses_halves():
  src = wgsl(Tensor.empty(8, dtype=dtypes.int8, device="PYTHON") * 3)
  assert "<<24u)>>24u)" in src, src
  src = wgsl(Tensor.empty(8, dtype=dtypes.int16, device="PYTHON") - 1)
  assert "(u32(gidx0)&1u)*16u" in src and "atomicAnd" in src, src

def test_bool_where_is_select():
  c, a = Tensor.empty(8, dtype=dtypes.bool, device="PYTHON"), Tensor.empty(8, device="PYTHON")
  src = wgsl(c.where(a, 0.0))
  assert "select(" in src and "!=0u)" in src, src

def test_symbolic_size_and_variables_come_from_the_uniform():
  ren = WGSLRenderer()
  src = wgsl(Tensor.empty(4, device="PYTHON") + 1, ren)
  assert "var<uniform> launch: array<vec4<u32>, 1>;" in src

def test_dtypes_refused_and_f16_only_with_the_feature():
  ren = WGSLRenderer()
  assert ren.supported_dtypes is not None
  for dt in (dtypes.int64, dtypes.uint64, dtypes.float64, dtypes.float16): assert dt not in ren.supported_dtypes
  ren.set_abilities(256, 65535, 8, native_f16=True)
  assert dtypes.float16 in ren.supported_dtypes and dtypes.int64 not in ren.supported_dtypes
  src = wgsl(Tensor.empty(8, dtype=dtypes.float16, device="PYTHON") * 2, ren)
  assert src.startswith("enable f16;\n") and "array<f16>" in src and "@workgroup_size(256)" in src, src
  ren.set_abilities(256, 65535, 8, native_f16=False, native_i64=True)   # wgpu-native's shader-int64
  assert dtypes.int64 in ren.supported_dtypes and dtypes.uint64 in ren.supported_dtypes and dtypes.float64 not in ren.supported_dtypes
  src = wgsl(Tensor.empty(8, dtype=dtypes.int64, device="PYTHON") * -3, ren)
  assert "array<i64>" in src and "(-3li)" in src, src

def test_too_many_buffers_is_a_clear_error():
  ren = WGSLRenderer()
  ren.set_abilities(64, 65535, 2, False)
  with pytest.raises(RuntimeError, match="needs 3 storage buffers; this WEBGPU adapter allows 2"):
    wgsl(Tensor.empty(4, device="PYTHON") + Tensor.empty(4, device="PYTHON"), ren)

def test_long_loops_are_unrolled_under_the_loop_budget():
  # llvmpipe stops an invocation's loops after 65535 back-edges in total; with a budget the renderer emits k copies per trip
  ren = WGSLRenderer()
  ren.set_abilities(64, 65535, 8, False, loop_budget=1000)
  src = wgsl(Tensor.empty(4000, device="PYTHON").sum(), ren)
  assert "for (var ridx0b: i32 = 0; ridx0b < 4000i; ridx0b += 4i) {" in src and "{ let ridx0 = ridx0b + 3i;\n" in src, src
  assert "if (ridx0 <" not in src, src   # 4 divides 4000: no guards
  src = wgsl(Tensor.empty(4001, device="PYTHON").sum(), ren)
  assert "ridx0b += 8i" in src and "{ let ridx0 = ridx0b + 7i; if (ridx0 < 4001i) {" in src, src
  # a short inner loop is unrolled whole (no loop, no back-edges) before the long outer one
  src = wgsl(Tensor.empty(1000, 3, device="PYTHON").sum(), ren)
  assert "for (var ridx0: i32 = 0; ridx0 < 1000i; ridx0++) {" in src and "{ let ridx1 = 2i;" in src and "ridx1b" not in src, src
  assert "for (var ridx0b" not in wgsl(Tensor.empty(4000, device="PYTHON").sum())   # no budget (not llvmpipe): plain loops

def test_a_loop_too_long_to_unroll_is_a_clear_error():
  ren = WGSLRenderer()
  ren.set_abilities(64, 65535, 8, False, loop_budget=1000)
  ren.max_unroll = 2
  with pytest.raises(RuntimeError, match="runs 4000 loop trips per invocation; this WEBGPU adapter stops loops after 1000"):
    wgsl(Tensor.empty(4000, device="PYTHON").sum(), ren)

def test_float16_nan_test_goes_through_f32():
  # naga rejects bitcast<u32>(vec2<f16>); f16 -> f32 keeps NaN, so maximum's NaN check tests the f32 bits
  ren = WGSLRenderer()
  ren.set_abilities(64, 65535, 8, native_f16=True)
  a, b = Tensor.empty(4, dtype=dtypes.float16, device="PYTHON"), Tensor.empty(4, dtype=dtypes.float16, device="PYTHON")
  src = wgsl(a.maximum(b), ren)
  assert "(bitcast<u32>(f32(val0))&0x7fffffffu)>0x7f800000u" in src and "vec2<f16>" not in src, src

def test_gated_load_indexes_zero_when_gated_off():
  # select() evaluates both arms, and naga rejects a constant negative index even under a false gate (an upcast
  # cat produced data2[(-1i)]): the index itself is selected
  src = wgsl(Tensor.empty(4, device="PYTHON").pad((1, 1)))
  assert "data1[select(0i, (gidx0+(-1i)), alu0)]" in src, src

def test_threads_in_a_block_use_workgroup_memory_and_a_barrier():
  # GROUP: the sum's partials go through a var<workgroup> array; the workgroup is the block, gidx from its index
  from tinygrad.codegen.opt import Opt, OptOps
  src = wgsl(Tensor.empty(8, 64, device="PYTHON").sum(1), opts=[Opt(OptOps.LOCAL, 0, 2), Opt(OptOps.GROUP, 0, 16)])
  assert "@compute @workgroup_size(32)" in src and "@builtin(local_invocation_index) lli: u32" in src
  assert "let wlin = wid.x + wid.y*nwg.x;" in src and "if (wlin >= launch[0].x) { return; }" in src
  assert "var<workgroup> temp0: array<f32, 32>;" in src and "workgroupBarrier();" in src
  assert "let lidx0 = i32(lli%u32(2));" in src and "let lidx1 = i32((lli/(u32(2))));" in src
  assert re.search(r"let (alu\d+) = \(lidx1<1i\);", src) and re.search(r"if \(alu\d+\) \{ data0\[", src)   # one thread of each group stores
  # the heuristics share a long sum among threads on a GPU adapter; on a CPU one (llvmpipe: has_threads) they are the CPU's
  big = Tensor.empty(1 << 16, device="PYTHON").sum()
  assert "workgroupBarrier();" in wgsl(big, heuristics=True)
  cpu = WGSLRenderer()
  cpu.has_threads = True
  assert "workgroupBarrier();" not in wgsl(big, cpu, heuristics=True)
