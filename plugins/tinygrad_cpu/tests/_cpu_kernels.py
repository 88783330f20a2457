"""Hand-built linearized kernels (docs/ir.md, linearized form) shared by the CPU plugin's tests."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.dtype import DType, AddrSpace, dtypes

def glob(slot: int, dt: DType, n: int) -> UOp: return UOp(Ops.DEFINE_GLOBAL, dt.ptr(n), (), slot)
def rng(n: int | UOp, axis: int = 0, kind: AxisType = AxisType.GLOBAL) -> UOp: return UOp.range(n, axis, kind)
def end(r: UOp) -> UOp: return UOp(Ops.END, dtypes.void, (r,))
def linear(*roots: UOp) -> list[UOp]:
  """Every node reachable from `roots`, in order (each root's new nodes after the previous root's)."""
  out: dict[UOp, None] = {}
  for r in roots:
    for n in r.toposort():
      if n not in out: out[n] = None
  return list(out)

def elementwise(fn, in_dts: list[DType], out_dt: DType, n: int) -> list[UOp]:
  """out[i] = fn(in0[i], in1[i], ...) over a GLOBAL range of n."""
  out = glob(0, out_dt, n)
  ins = [glob(i+1, dt, n) for i, dt in enumerate(in_dts)]
  r = rng(n)
  st = out.index(r).store(fn(*[b.index(r).load() for b in ins]))
  return linear(out, *ins, st, end(r))

def add_kernel(n: int = 16) -> list[UOp]: return elementwise(lambda a, b: a + b, [dtypes.float32]*2, dtypes.float32, n)

def reduce_kernel(rows: int = 4, cols: int = 8) -> list[UOp]:
  """out[i] = sum_j in[i*cols+j], with a register accumulator."""
  out, inp = glob(0, dtypes.float32, rows), glob(1, dtypes.float32, rows*cols)
  r0, r1 = rng(rows, 0), rng(cols, 1, AxisType.REDUCE)
  acc = UOp(Ops.DEFINE_REG, dtypes.float32.ptr(1, AddrSpace.REG), (), 0)
  ptr = acc.index(UOp.const(dtypes.index, 0))
  init = UOp(Ops.STORE, dtypes.void, (ptr, UOp.const(dtypes.float32, 0.0), r0))
  cur = UOp(Ops.LOAD, dtypes.float32, (ptr, init, r1))
  upd = ptr.store(cur + inp.index(r0 * cols + r1).load())
  res = UOp(Ops.LOAD, dtypes.float32, (ptr, upd))
  e1 = end(r1)
  st = out.index(r0).store(res)
  return [out, inp, r0.src[0], r0, acc, ptr.src[1], ptr, UOp.const(dtypes.float32, 0.0), init, r1.src[0], r1, cur,
          *[n for n in linear(upd) if n not in (out, inp, r0, r1, acc, ptr, cur, init, ptr.src[1], r0.src[0], r1.src[0], UOp.const(dtypes.float32, 0.0))],
          e1, res, out.index(r0), st, end(r0)]

def gated_kernel(n: int = 16, k: int = 10) -> list[UOp]:
  """out[i] = i < k ? in[i] : 0 (the load is gated, so in[] has only k elements)."""
  out, inp = glob(0, dtypes.float32, n), glob(1, dtypes.float32, k)
  r = rng(n)
  st = out.index(r).store(inp.index(r, r < k).load())
  return linear(out, inp, st, end(r))

def gated_store_kernel(n: int = 16, k: int = 10) -> list[UOp]:
  """out[i] = in[i] only where i < k (out keeps its old value elsewhere)."""
  out, inp = glob(0, dtypes.float32, n), glob(1, dtypes.float32, n)
  r = rng(n)
  st = out.index(r, r < k).store(inp.index(r).load())
  return linear(out, inp, st, end(r))

def divmod_kernel(n: int = 16, dt: DType = dtypes.int32) -> list[UOp]:
  """q[i] = a[i] // b[i], m[i] = a[i] % b[i] with C (truncating) semantics."""
  q, m, a, b = glob(0, dt, n), glob(1, dt, n), glob(2, dt, n), glob(3, dt, n)
  r = rng(n)
  la, lb = a.index(r).load(), b.index(r).load()
  return linear(q, m, a, b, q.index(r).store(la // lb), m.index(r).store(la % lb), end(r))

def cast_kernel(n: int = 16, src: DType = dtypes.float32, dst: DType = dtypes.int32) -> list[UOp]:
  return elementwise(lambda a: a.cast(dst), [src], dst, n)

def var_kernel(maxn: int = 64) -> list[UOp]:
  """out[i] = in[i] * 2 for i < n, n a DEFINE_VAR argument."""
  out, inp = glob(0, dtypes.float32, maxn), glob(1, dtypes.float32, maxn)
  nv = UOp.variable("n", 1, maxn)
  r = rng(nv)
  return linear(out, inp, nv, out.index(r).store(inp.index(r).load() * 2.0), end(r))
