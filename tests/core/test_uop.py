"""UOp: hash-consing, the weak cache, graph helpers (toposort, substitute, render) and value bounds (vmin/vmax)."""
import gc, itertools, math, pickle
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UOpMetaClass, exec_alu, resolve, substitute_all
from tinygrad.dtype import dtypes

def var(name: str, lo: int, hi: int) -> UOp: return UOp.variable(name, lo, hi)

class TestHashConsing:
  def test_equal_construction_is_same_object(self):
    a, b = var("a", 0, 10), var("b", 0, 10)
    assert (a + b) * 3 is (a + b) * 3
    assert UOp(Ops.ADD, dtypes.int32, (a, b)) is UOp(Ops.ADD, dtypes.int32, (a, b))
    assert UOp.const(dtypes.float32.vec(4), 1.0) is UOp.const(dtypes.float32.vec(4), 1.0)
  def test_any_field_difference_is_a_new_node(self):
    a, b = var("a", 0, 10), var("b", 0, 10)
    base = UOp(Ops.ADD, dtypes.int32, (a, b))
    assert UOp(Ops.MUL, dtypes.int32, (a, b)) is not base
    assert UOp(Ops.ADD, dtypes.int64, (a, b)) is not base
    assert UOp(Ops.ADD, dtypes.int32, (b, a)) is not base
    assert UOp(Ops.ADD, dtypes.int32, (a, b), arg=1) is not base
    assert UOp(Ops.ADD, dtypes.int32, (a, b), tag="t") is not base
  def test_signed_zero_consts_are_distinct(self):
    pz, nz = UOp.const(dtypes.float32, 0.0), UOp.const(dtypes.float32, -0.0)
    assert pz is not nz and math.copysign(1, nz.arg) == -1 and math.copysign(1, pz.arg) == 1
  def test_int_float_bool_consts_are_distinct(self):
    nodes = [UOp(Ops.CONST, dtypes.int32, arg=v) for v in (1, 1.0, True)]
    assert len({id(n) for n in nodes}) == 3 and [type(n.arg) for n in nodes] == [int, float, bool]
  def test_nan_consts_are_one_node(self):
    assert UOp.const(dtypes.float32, float("nan")) is UOp.const(dtypes.float32, float("nan"))
  def test_immutable(self):
    with pytest.raises(AttributeError): var("a", 0, 1).arg = 3
  def test_unhashable_arg_is_a_clear_error(self):
    with pytest.raises(TypeError, match="hashable"): UOp(Ops.NOOP, arg=[1, 2])
  def test_replace_and_pickle(self):
    a = var("a", 0, 10)
    x = a + 1
    assert x.replace(op=Ops.MUL) is a * 1 and x.replace() is x
    assert pickle.loads(pickle.dumps(x)) is x
  def test_bool_is_ambiguous(self):
    with pytest.raises(TypeError, match="ambiguous"): bool(var("a", 0, 1) < 1)

class TestWeakCache:
  def test_dropped_nodes_are_freed(self):
    gc.collect()
    gc.disable()   # (a collection while building would free other tests' garbage nodes and shrink the count under us)
    try:
      before = len(UOpMetaClass.ucache)
      nodes = [UOp(Ops.NOOP, dtypes.int32, arg=("weak_cache_test", i)) for i in range(1_000_000)]
      assert len(UOpMetaClass.ucache) >= before + 1_000_000
    finally: gc.enable()
    del nodes
    gc.collect()
    assert len(UOpMetaClass.ucache) <= before + 10
  def test_threads_building_the_same_nodes_get_one_object(self):
    import sys, threading
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # threads switch inside the cache's insert
    try:
      for rnd in range(3):
        got: list[list] = [[] for _ in range(4)]
        def build(i):
          for k in range(3000): got[i].append(UOp(Ops.NOOP, dtypes.int32, arg=("thread_cache_test", rnd, k)))
        ts = [threading.Thread(target=build, args=(i,)) for i in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert all(a is b is c is d for a, b, c, d in zip(*got))
        del got
    finally: sys.setswitchinterval(old)
    assert UOp(Ops.NOOP, dtypes.int32, arg=("thread_cache_test", 0, 1)) is UOp(Ops.NOOP, dtypes.int32, arg=("thread_cache_test", 0, 1))
  def test_chain_keeps_its_sources_alive(self):
    x = UOp(Ops.NOOP, dtypes.int32, arg="keep_alive_leaf")
    for _ in range(100): x = x + 1
    gc.collect()
    leaf = UOp(Ops.NOOP, dtypes.int32, arg="keep_alive_leaf")
    assert leaf in x.toposort()

def chain(n: int) -> UOp:
  x = var("chain_x", 0, 10)
  for _ in range(n): x = UOp(Ops.ADD, dtypes.int32, (x, UOp.const(dtypes.int32, 1)))
  return x

class TestGraph:
  def test_toposort_order(self):
    a, b = var("a", 0, 10), var("b", 0, 10)
    s = (a + b) * a
    order = list(s.toposort())
    for n in order:
      for src in n.src: assert order.index(src) < order.index(n)
    assert order[-1] is s and len(order) == len(set(order)) == 4  # a, b, a+b, s
  def test_toposort_gate(self):
    a, b = var("a", 0, 10), var("b", 0, 10)
    s = (a + b) * 2
    got = s.toposort(gate=lambda x: x.op is not Ops.ADD)
    assert a + b in got and a not in got and b not in got
  def test_toposort_deep_chain_is_iterative(self):
    x = chain(100_000)
    assert len(x.toposort()) == 100_000 + 2
    assert x.vmin == 100_000 and x.vmax == 100_010
  def test_substitute(self):
    a, b, c = var("a", 0, 10), var("b", 0, 10), var("c", 0, 10)
    s = (a + b) * a
    assert s.substitute({a: c}) is (c + b) * c
    assert s.substitute({a + b: c}) is c * a
    assert s.substitute({}) is s
    assert s.substitute({var("z", 0, 1): c}) is s
  def test_substitute_deep(self):
    x = chain(50_000)
    y = x.substitute({var("chain_x", 0, 10): var("chain_y", 0, 10)})
    assert y is not x and var("chain_y", 0, 10) in y.toposort() and var("chain_x", 0, 10) not in y.toposort()
  @given(st.lists(st.tuples(st.sampled_from([Ops.ADD, Ops.MUL, Ops.MAX]), st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=30),
         st.integers(0, 30))
  @settings(max_examples=60)
  def test_substitute_each_is_substitute_per_value(self, ops, pick):
    # a random DAG over two variables: substitute_each(x, vals) is one substitute({x: v}) per value, node for node
    nodes = [var("a", 0, 10), var("b", 0, 10)]
    for op, i, j in ops: nodes.append(nodes[i % len(nodes)].alu(op, nodes[j % len(nodes)]))
    g, x = UOp.sink(nodes[-1], nodes[len(nodes) // 2]), nodes[pick % len(nodes)]
    vals = [var("c", 0, 10), UOp.const(dtypes.index, 3), x + 1]
    assert g.substitute_each(x, vals) == [g.substitute({x: v}) for v in vals]
  @given(st.lists(st.tuples(st.sampled_from([Ops.ADD, Ops.MUL, Ops.MAX]), st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=30),
         st.lists(st.integers(0, 40), max_size=4), st.lists(st.integers(0, 40), min_size=1, max_size=6))
  @settings(max_examples=80)
  def test_substitute_all_is_substitute_per_root(self, ops, keys, roots):
    # several roots of one random DAG (sharing nodes, some equal, some replaced, some below a replaced node): one walk with
    # one memo gives each what a walk of its own graph gives (a realize rewrites every live tensor's graph so)
    nodes = [var("a", 0, 10), var("b", 0, 10)]
    for op, i, j in ops: nodes.append(nodes[i % len(nodes)].alu(op, nodes[j % len(nodes)]))
    dvars = {nodes[k % len(nodes)]: var(f"r{i}", 0, 10) for i, k in enumerate(keys)}
    rs = [nodes[r % len(nodes)] for r in roots]
    memo: dict = {}
    def ref(n: UOp) -> UOp:   # the definition, recursive (the graphs are small)
      if n not in memo: memo[n] = dvars[n] if n in dvars else UOp(n.op, n.dtype, tuple(ref(x) for x in n.src), n.arg, n.tag)
      return memo[n]
    got = substitute_all(rs, dvars)
    assert all(g is ref(r) for g, r in zip(got, rs)) and len(got) == len(rs)
    assert [r.substitute(dvars) for r in rs] == got
  def test_substitute_each_of_an_absent_node_keeps_the_graph(self):
    a, b = var("a", 0, 10), var("b", 0, 10)
    assert (a + 1).substitute_each(b, [a, b * 2]) == [a + 1, a + 1]
  def test_render(self):
    x, y = var("x", 0, 10), var("y", 0, 10)
    assert ((x * 4 + y) // 4).render() == "(((x*4)+y)//4)"
    assert (x % 3 < 2).render() == "((x%3)<2)"
    assert x.maximum(y).render() == "max(x, y)"
    assert (x < 3).where(x, y).render() == "(x if (x<3) else y)"
    assert (-x).render() == "(-x)"
    assert x.cast(dtypes.float32).render() == "float(x)"
  def test_sink(self):
    a, b = var("a", 0, 1), var("b", 0, 1)
    s = a.sink(b)
    assert s.op is Ops.SINK and s.src == (a, b)

class TestDevice:
  def test_device_of_sources_and_copy_target(self):
    c = UOp.const(dtypes.float32, 1.0, src=(UOp(Ops.DEVICE, arg="PYTHON"),))
    assert (c + c).device == "PYTHON"
    assert UOp(Ops.COPY, dtypes.float32, (c + c, UOp(Ops.DEVICE, arg="CPU"))).device == "CPU"
    with pytest.raises(ValueError, match="no device"): var("a", 0, 1).device
  def test_device_on_a_growing_graph_is_cached(self, monkeypatch):
    # a Tensor op asks for its operand's device each step: the total walk must stay linear in the graph size
    visited = [0]
    orig = UOp.toposort
    def counting(self, gate=None):
      ret = orig(self, gate)
      visited[0] += len(ret)
      return ret
    monkeypatch.setattr(UOp, "toposort", counting)
    x = UOp.const(dtypes.float32, 0.0, src=(UOp(Ops.DEVICE, arg="PYTHON"),))
    one = UOp.const(dtypes.float32, 1.0)
    for _ in range(2000):
      x = x + one
      assert x.device == "PYTHON"
    assert visited[0] < 10 * 2000, visited[0]

class TestConstructors:
  def test_const_wraps(self): assert UOp.const(dtypes.uint8, 256 + 7).arg == 7
  def test_vec_const(self):
    v = UOp.const(dtypes.float32.vec(3), 2.0)
    assert v.op is Ops.VECTORIZE and len(v.src) == 3 and v.src[0].arg == 2.0
  def test_comparison_dtype(self):
    a = var("a", 0, 10)
    assert (a < 3).dtype == dtypes.bool and a.ne(3).dtype == dtypes.bool
  def test_variable_bad_bounds(self):
    with pytest.raises(ValueError, match="min 5 > max 1"): var("bad", 5, 1)
  def test_exec_alu_c_semantics(self):
    assert exec_alu(Ops.IDIV, dtypes.int32, [-7, 2]) == -3 and exec_alu(Ops.MOD, dtypes.int32, [-7, 2]) == -1
    assert exec_alu(Ops.MOD, dtypes.int32, [7, -2]) == 1
    assert exec_alu(Ops.ADD, dtypes.int32, [2**31-1, 1]) == -2**31
    assert exec_alu(Ops.MUL, dtypes.uint8, [16, 16]) == 0
    assert math.isnan(exec_alu(Ops.MAX, dtypes.float32, [math.nan, 1.0]))
    assert exec_alu(Ops.FDIV, dtypes.float32, [1.0, 0.0]) == math.inf and math.isnan(exec_alu(Ops.FDIV, dtypes.float32, [0.0, 0.0]))

# ---- value bounds: every value the expression takes lies in [vmin, vmax] ----
BIN = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR]
small = st.integers(-12, 12)

def brute(op: Ops, ra: tuple[int, int], rb: tuple[int, int], dt=dtypes.int32) -> list:
  return [exec_alu(op, dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt, [a, b])
          for a in range(ra[0], ra[1]+1) for b in range(rb[0], rb[1]+1) if not (op in (Ops.IDIV, Ops.MOD) and b == 0)]

class TestBounds:
  @given(st.sampled_from(BIN), small, small, small, small)
  @settings(max_examples=400, deadline=None)
  def test_binary_bounds_contain_every_value(self, op, a0, a1, b0, b1):
    a0, a1 = sorted((a0, a1))
    b0, b1 = sorted((b0, b1))
    a, b = var("a", a0, a1), var("b", b0, b1)
    u = a.alu(op, b)
    for v in brute(op, (a0, a1), (b0, b1)): assert u.vmin <= v <= u.vmax, (op, (a0, a1), (b0, b1), v, u.vmin, u.vmax)

  @given(st.just(Ops.IDIV), small, small, st.integers(1, 8), st.booleans())
  @settings(max_examples=200, deadline=None)
  def test_idiv_bounds_are_tight_by_a_const(self, op, a0, a1, c, neg):
    # dividing by a constant (the case index math relies on): bounds are exact, not just safe
    a0, a1 = sorted((a0, a1))
    c = -c if neg else c
    u = var("a", a0, a1).alu(op, UOp.const(dtypes.int32, c))
    vals = brute(op, (a0, a1), (c, c))
    assert (u.vmin, u.vmax) == (min(vals), max(vals))

  def test_c_semantics_with_negative_ranges(self):
    a = var("a", -7, -1)
    assert ((a // 2).vmin, (a // 2).vmax) == (-3, 0)    # truncation toward zero, not floor (-4)
    assert ((a % 3).vmin, (a % 3).vmax) == (-2, 0)      # remainder takes the dividend's sign
    assert ((var("p", 0, 7) % -3).vmin, (var("p", 0, 7) % -3).vmax) == (0, 2)
    assert ((a // -2).vmin, (a // -2).vmax) == (0, 3)

  def test_divisor_range_with_zero_gives_full_range(self):
    u = var("a", 0, 10) // var("b", -1, 1)
    assert (u.vmin, u.vmax) == (dtypes.min(dtypes.int32), dtypes.max(dtypes.int32))

  @given(st.sampled_from([Ops.NEG, "cast_bool", "cast_int8", "cast_float", "shl", "shr"]), small, small)
  @settings(max_examples=200, deadline=None)
  def test_unary_bounds_contain_every_value(self, kind, a0, a1):
    a0, a1 = sorted((a0, a1))
    a = var("a", a0, a1)
    if kind is Ops.NEG: u, f = -a, (lambda v: -v)
    elif kind == "cast_bool": u, f = a.cast(dtypes.bool), (lambda v: v != 0)
    elif kind == "cast_int8": u, f = (a * 20).cast(dtypes.int8), (lambda v: dtypes.as_const(v * 20, dtypes.int8))
    elif kind == "cast_float": u, f = a.cast(dtypes.float32), float
    elif kind == "shl": u, f = a << 2, (lambda v: v << 2)
    else: u, f = a >> 1, (lambda v: v >> 1)
    for v in range(a0, a1+1): assert u.vmin <= f(v) <= u.vmax, (kind, (a0, a1), v, u.vmin, u.vmax)

  def test_cast_bool_of_a_range_with_zero_can_be_false(self):
    u = var("a", -1, 1).cast(dtypes.bool)
    assert (u.vmin, u.vmax) == (False, True)
    assert (var("b", 1, 5).cast(dtypes.bool).vmin, var("z", 0, 0).cast(dtypes.bool).vmax) == (True, False)

  def test_where_and_range_special(self):
    a = var("a", 0, 10)
    w = (a < 5).where(a, a + 100)
    assert (w.vmin, w.vmax) == (0, 110)
    assert (UOp.const(dtypes.bool, True).where(a, a + 100).vmax) == 10
    r = UOp.range(16, 0)
    assert (r.vmin, r.vmax) == (0, 15)
    sp = UOp(Ops.SPECIAL, dtypes.int32, (UOp.const(dtypes.int32, 8),), "gidx0")
    assert (sp.vmin, sp.vmax) == (0, 7)

  def test_overflow_gives_full_range(self):
    big = var("big", 0, 2**30)
    assert ((big * 4).vmin, (big * 4).vmax) == (dtypes.min(dtypes.int32), dtypes.max(dtypes.int32))

  def test_floats_are_unbounded_except_consts(self):
    f = UOp.const(dtypes.float32, 2.0)
    assert (f.vmin, f.vmax) == (2.0, 2.0)
    assert (f + f).vmax == math.inf

  def test_resolve(self):
    a = var("a", 0, 10)
    assert resolve(a < 11) is True and resolve(a < 0) is False
    assert resolve(a < 5) is True and resolve(a < 5, False) is False
    with pytest.raises(TypeError): resolve(a)
    assert resolve(3 > 2) is True

@pytest.mark.parametrize("op", BIN)
def test_each_binary_op_bounds_on_mixed_sign_ranges(op):
  for (a0, a1), (b0, b1) in itertools.product([(-5, 3), (2, 9), (-9, -2)], [(-4, -1), (1, 4), (-3, 3)]):
    u = var("a", a0, a1).alu(op, var("b", b0, b1))
    for v in brute(op, (a0, a1), (b0, b1)): assert u.vmin <= v <= u.vmax, (op, (a0, a1), (b0, b1), v)

def test_tensor_level_uop_arithmetic_with_a_constant_first_keeps_the_shape():
  # a Python constant becomes a 0-d CONST: `1 - u`, `2 * u`, `c.where(u, 0)` and `c.where(1, 0)` took the constant's
  # shape, so the tensor made from them was one number (public tinygrad's TestUOpWhere)
  import numpy as np
  from tinygrad import Tensor
  a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
  u = Tensor(a).uop
  cases = {"1-u": (1 - u, 1 - a), "2*u": (2 * u, 2 * a), "1/u": (1 / u, 1 / a), "where(u,0)": ((u < 2).where(u, 0), np.where(a < 2, a, 0)),
           "where(0,u)": ((u < 2).where(0, u), np.where(a < 2, 0, a)), "where(1.5,0)": ((u < 2).where(1.5, 0), np.where(a < 2, 1.5, 0))}
  for name, (got, want) in cases.items():
    assert got.shape == (3,), name
    np.testing.assert_allclose(Tensor(got).numpy(), want, rtol=1e-6, err_msg=name)
  assert Tensor(Tensor([True, False, True]).uop.where(1, 0)).tolist() == [1, 0, 1]

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_built_nodes_shape_and_device_are_their_rules(data):
  # movement ops and reduces store their node's shape and device as they build it (ops._view), and Tensor.dot's UOp form
  # its product's: every node of a random chain of Tensor ops has the shape and device the rules give from its sources
  from tinygrad import Tensor
  from tinygrad.uop.ops import _shape, _device
  shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape")
  t = Tensor.empty(*shape, device="PYTHON")
  for _ in range(data.draw(st.integers(1, 8), label="ops")):
    op = data.draw(st.sampled_from(["permute", "reshape", "expand", "sum", "max", "matmul", "add", "pad", "shrink", "flip"]), label="op")
    if op == "permute": t = t.permute(data.draw(st.permutations(range(t.ndim))))
    elif op == "reshape": t = t.reshape(-1) if t.ndim > 1 else t.reshape(1, *t.shape)
    elif op == "expand": t = t.reshape(1, *t.shape).expand(data.draw(st.integers(1, 3)), *t.shape)
    elif op in ("sum", "max") and t.ndim > 1: t = getattr(t, op)(data.draw(st.integers(0, t.ndim - 1)))
    elif op == "matmul": t = t @ Tensor.empty(t.shape[-1], data.draw(st.integers(1, 5)), device="PYTHON")
    elif op == "add": t = t + 1
    elif op == "pad": t = t.pad(((1, 0),) + ((0, 0),) * (t.ndim - 1))
    elif op == "shrink" and t.shape[0] > 1: t = t[1:]
    elif op == "flip": t = t.flip(0)
  for n in t.uop.toposort():
    if "_shape" in n.__dict__: assert n.__dict__["_shape"] == _shape(n), (n.op, n.arg)
    if "_device" in n.__dict__ and all("_device" in s.__dict__ for s in n.src): assert n.__dict__["_device"] == _device(n), n.op
  assert t.uop.shape == t.shape and t.device == "PYTHON"
