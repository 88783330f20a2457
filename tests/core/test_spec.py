"""Specs: valid graphs pass, each kind of invalid node raises SpecError naming the node and the rule."""
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.uop.spec import type_verify, verify_if_enabled, spec_kernel, spec_tensor, SpecError
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.helpers import Context

buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(64), arg=0)
out = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), arg=1)
r0, r1 = UOp.range(16, 0), UOp.range(4, 1, AxisType.REDUCE)
i32, f32 = UOp.const(dtypes.int32, 1), UOp.const(dtypes.float, 1.0)

def kernel() -> UOp:
  acc = UOp(Ops.REDUCE, dtypes.float, (buf.index(r0 * 4 + r1).load() * 2.0, r1), Ops.ADD)
  return out.index(r0, r0 < 15).store((r0 < 8).where(acc, acc.sqrt())).sink()

def test_valid_kernel():
  type_verify(kernel(), spec_kernel)

def test_valid_linearized_list():
  lds = UOp(Ops.DEFINE_LOCAL, dtypes.float.ptr(8, AddrSpace.LOCAL), arg="temp")
  reg = UOp(Ops.DEFINE_REG, dtypes.float.ptr(1, AddrSpace.REG), arg=0)
  v = UOp.variable("n", 1, 64)
  uops = [buf, lds, reg, v, r0, reg.index(UOp.const(dtypes.int32, 0)).store(f32), UOp(Ops.END, dtypes.void, (r0,)),
          UOp(Ops.SPECIAL, dtypes.int32, (UOp.const(dtypes.int32, 32),), "gidx0"), UOp(Ops.VECTORIZE, dtypes.float.vec(2), (f32, f32))]
  type_verify(uops, spec_kernel)

def test_valid_tensor_graph():
  dev = UOp(Ops.DEVICE, arg="CPU")
  b = UOp(Ops.BUFFER, dtypes.float, (UOp(Ops.UNIQUE, arg=0), dev), 12)
  x = b.reshape((3, 4)).permute((1, 0)).pad(((0, 1), (0, 0))).shrink(((0, 4), (1, 3)))
  y = (x + UOp(Ops.CONST, dtypes.float, (dev,), 2.0).reshape((1, 1)).expand((4, 2))).r(Ops.ADD, (1,))
  type_verify(UOp(Ops.CONTIGUOUS, y.dtype, (y,)).sink(), spec_tensor)

@pytest.mark.parametrize("bad,node,rule", [
  (UOp(Ops.ADD, dtypes.int32, (i32, f32)), "Ops.ADD", "_alu_binary"),
  (UOp(Ops.STORE, dtypes.int32, (buf.index(r0), f32)), "Ops.STORE", "_store"),
  (UOp(Ops.CMPLT, dtypes.int32, (i32, i32)), "Ops.CMPLT", "_cmp"),
  (UOp(Ops.WHERE, dtypes.int32, (i32, i32, i32)), "Ops.WHERE", "_where"),
  (UOp(Ops.RANGE, dtypes.float, (f32,), (0, AxisType.LOOP)), "Ops.RANGE", "_range"),
  (UOp(Ops.INDEX, dtypes.float.ptr(64), (UOp.const(dtypes.int32, 0), r0)), "Ops.INDEX", "_index"),
  (UOp(Ops.CONST, dtypes.int32, (), 1.5), "Ops.CONST", "_const_ok"),
  (UOp(Ops.CONST, dtypes.int8, (), 300), "Ops.CONST", "_const_ok"),
  (UOp(Ops.SQRT, dtypes.int32, (i32,)), "Ops.SQRT", "_unary"),
  (UOp(Ops.IDIV, dtypes.float, (f32, f32)), "Ops.IDIV", "_alu_binary"),
])
def test_invalid_node_names_node_and_rule(bad, node, rule):
  with pytest.raises(SpecError) as e: type_verify(bad.sink(), spec_kernel)
  msg = str(e.value)
  assert node in msg and f"({rule})" in msg and "spec.py:" in msg, msg

def test_op_no_rule_accepts():
  with pytest.raises(SpecError, match="no rule accepts Ops.RESHAPE"): type_verify(UOp(Ops.RESHAPE, dtypes.float, (f32,), (1,)), spec_kernel)
  with pytest.raises(SpecError, match="no rule accepts Ops.RANGE"): type_verify(r0, spec_tensor)

def test_tensor_level_invalid():
  dev = UOp(Ops.DEVICE, arg="CPU")
  b = UOp(Ops.BUFFER, dtypes.float, (UOp(Ops.UNIQUE, arg=0), dev), 12)
  with pytest.raises(SpecError, match="RESHAPE"): type_verify(UOp(Ops.RESHAPE, dtypes.float, (b,), (5, 2)), spec_tensor)
  with pytest.raises(SpecError, match="EXPAND"): type_verify(UOp(Ops.EXPAND, dtypes.float, (b,), (24,)), spec_tensor)

def test_verify_if_enabled():
  bad = UOp(Ops.ADD, dtypes.int32, (i32, f32))
  with Context(SPEC=0): assert verify_if_enabled(bad) is bad
  with Context(SPEC=1), pytest.raises(SpecError): verify_if_enabled(bad)
