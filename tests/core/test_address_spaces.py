"""Address spaces as data (CStyleLanguage.addrspace_qualifier): every pointer the C-style base writes -- kernel arguments,
pointer casts, vector loads and stores from global and local memory -- carries its space's qualifier, so an OpenCL- or
Metal-style renderer needs no load/store rule of its own."""
from tinygrad.plugin_api import CStyleLanguage, Ops, UOp, AddrSpace, dtypes

class SpacedRenderer(CStyleLanguage):
  addrspace_qualifier = {AddrSpace.GLOBAL: "__global ", AddrSpace.LOCAL: "__local "}
  smem_prefix = "__local "
  def render_vectorize(self, elems, dt): return f"(({self.render_dtype(dt)})({','.join(elems)}))"

def vector_kernel(gate: bool = False) -> list[UOp]:
  """out[4:8] = local[4:8] where local[4:8] = inp[4:8], each a float4 access: a LOAD of a vector through an INDEX of a
  scalar buffer (global -> local), and a LOAD/STORE through an INDEX CAST to a vector pointer (local -> global)."""
  f4 = dtypes.float32.vec(4)
  out, inp = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), (), 0), UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), (), 1)
  loc = UOp(Ops.DEFINE_LOCAL, dtypes.float32.ptr(16, AddrSpace.LOCAL), (), "smem")
  four = UOp.const(dtypes.int32, 4)
  g = UOp(Ops.DEFINE_VAR, dtypes.int32, (), ("n", 0, 10)) if gate else None
  cond = (g < 5) if g is not None else None
  ld = UOp(Ops.LOAD, f4, (inp.index(four, cond) if cond is not None else inp.index(four),))
  st = UOp(Ops.STORE, dtypes.void, (loc.index(four), ld))
  lcast = UOp(Ops.CAST, f4.ptr(4, AddrSpace.LOCAL), (loc.index(four),))
  ld2 = UOp(Ops.LOAD, f4, (lcast,))
  gcast = UOp(Ops.CAST, f4.ptr(4), (out.index(four),))
  st2 = UOp(Ops.STORE, dtypes.void, (gcast, ld2))
  return list(UOp(Ops.SINK, dtypes.void, (st, st2)).toposort())   # dependencies first: the first store before the second

def test_vector_loads_and_stores_keep_global_and_local_qualifiers():
  src = SpacedRenderer().render(vector_kernel(), "k")
  assert "void k(__global float* data1, __global float* data0)" in src      # kernel arguments
  assert "float4 val0 = (*((__global float4*)(data1+4)));" in src             # vector load from a scalar global buffer
  assert "(*((__local float4*)(temp0+4))) = val0;" in src                     # vector store into local memory
  assert "float4 val1 = (*((__local float4*)(temp0+4)));" in src           # load through a pointer CAST to local float4
  assert "(*((__global float4*)(data0+4))) = val1;" in src                 # store through a pointer CAST to global float4
  for line in src.splitlines():
    assert "float4*)" not in line.replace("__global float4*)", "").replace("__local float4*)", ""), f"unqualified vector pointer: {line}"

def test_gated_vector_load_keeps_its_qualifier():
  src = SpacedRenderer().render(vector_kernel(gate=True), "k")
  assert "((var_n<5)?(*((__global float4*)(data1+4))):((float4)(0.0f,0.0f,0.0f,0.0f)))" in src

def test_buffer_prefix_is_the_global_default():
  class Prefixed(CStyleLanguage): buffer_prefix = "device "
  r = Prefixed()
  assert r.space_qualifier(AddrSpace.GLOBAL) == "device " and r.space_qualifier(AddrSpace.LOCAL) == ""
  assert r.render_ptr(dtypes.float32.vec(4), AddrSpace.GLOBAL) == "device float4*"
  assert SpacedRenderer().render_ptr(dtypes.float32, AddrSpace.LOCAL) == "__local float*"
