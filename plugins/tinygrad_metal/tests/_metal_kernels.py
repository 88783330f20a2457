"""The conformance kernels without a Metal device: a representative Tensor program for every op family of
tests/conformance/test_ops.py, scheduled on the PYTHON device; each kernel AST is then rendered with MetalRenderer."""
from __future__ import annotations
import functools
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

def _f(*shape: int) -> Tensor: return Tensor(np.linspace(-3, 3, int(np.prod(shape)), dtype=np.float32).reshape(shape), device="PYTHON")
def _i(*shape: int) -> Tensor: return Tensor(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) - 5, device="PYTHON")

def programs() -> dict[str, Tensor]:
  """family/op -> a Tensor whose schedule holds that op's kernels."""
  a, b, i, j = _f(3, 4), _f(4), _i(3, 4), _i(4) + 7
  img, w = _f(1, 2, 6, 6), _f(4, 2, 3, 3)
  p: dict[str, Tensor] = {
    "creation/arange": Tensor.arange(2, 17, 3, device="PYTHON"), "creation/eye": Tensor.eye(4, 3, device="PYTHON"),
    "creation/full": Tensor.full((2, 3), 7.5, device="PYTHON"), "creation/linspace": Tensor.linspace(0, 1, 5, device="PYTHON"),
    "random/rand": Tensor.rand(16, device="PYTHON") * 2 - 1, "random/randn": Tensor.randn(8, device="PYTHON").abs(),  # host-drawn, then a kernel
    "binary/float": (a + b) * (a - b) / (b + 7.0), "binary/max_min": a.maximum(b).minimum(a * 2),
    "binary/cmp": (a < b).where(a, b) + (a == b).cast(dtypes.float32), "binary/int": (i + j) * (i - j) ^ (i & j | 3),
    "binary/int_divmod": (i // j) + (i % j), "binary/bool": ((a > 0) & (b < 1)) ^ (a != b), "binary/pow": a.abs() ** b,
    "binary/pow_int": i ** 2,
    "unary/neg_abs_sign": -a + a.abs() + a.sign(), "unary/exp_log": a.exp() + (a.abs() + 1).log() + a.exp2() + (a.abs() + 1).log2(),
    "unary/sqrt_rsqrt": a.abs().sqrt() + (a.abs() + 1).rsqrt(), "unary/trig": a.sin() + a.cos() + (a * 0.3).tan(),
    "unary/act": a.relu() + a.sigmoid() + a.tanh() + a.gelu() + a.silu() + a.softplus(),
    "unary/round": a.trunc() + a.floor() + a.ceil() + a.round(), "unary/int": -i + i.abs() + ~i,
    "unary/isnan_isinf": a.isnan() | a.isinf(), "unary/clip_where": a.clip(-1, 1) + (a > 0).where(a, 0.5),
    "reduce/sum_max": a.sum(axis=1) + a.max(axis=1) + a.min(axis=1), "reduce/prod_mean": a.prod(axis=0) * a.mean(axis=0),
    "reduce/int": i.sum(axis=0) + i.max(axis=0), "reduce/bool": (a > 0).any(axis=1) & (a > -5).all(axis=1),
    "reduce/var_std": a.var(axis=1) + a.std(axis=0).sum(), "reduce/argmax": a.argmax(axis=1) + a.argmin(axis=0).sum(),
    "reduce/full": a.sum(),
    "movement/reshape_permute": a.reshape(2, 6).permute(1, 0).contiguous(), "movement/expand": b.reshape(1, 4).expand(3, 4) + a,
    "movement/pad_shrink_flip": a.pad(((1, 0), (2, 1)), value=2.0).shrink(((0, 3), (1, 5))).flip(1),
    "movement/cat_stack": Tensor.cat(a, a * 2, dim=1) + 0, "movement/repeat": b.repeat(2, 3),
    "getitem/slice": a[1:, ::2] + 0, "getitem/tensor_index": a[Tensor([2, 0], device="PYTHON")],
    "matmul/float": a @ _f(4, 5), "matmul/batched": _f(2, 3, 4) @ _f(4, 2), "matmul/int": i @ _i(4, 2),
    "nn/softmax": a.softmax(1) + a.log_softmax(0), "nn/logsumexp": a.logsumexp(1), "nn/cumsum": a.cumsum(1),
    "nn/one_hot": Tensor([0, 2, 1], device="PYTHON").one_hot(4),
    "conv/conv2d": img.conv2d(w, padding=1, stride=1), "conv/conv2d_strided": img.conv2d(w, stride=2, dilation=1),
    "conv/max_pool": img.max_pool2d(2), "conv/avg_pool": img.avg_pool2d(3, stride=1),
    "dtype/half": (a.cast(dtypes.float16) * 3 + b.cast(dtypes.float16)).sqrt(), "dtype/bfloat16": a.cast(dtypes.bfloat16) + 1,
    "dtype/int8_uint8": i.cast(dtypes.int8) * 3 + i.cast(dtypes.uint8).cast(dtypes.int8), "dtype/int64": i.cast(dtypes.int64) * 1000000000,
    "dtype/uint32_bitcast": a.bitcast(dtypes.uint32) >> 3, "dtype/half_exp": a.cast(dtypes.float16).exp(),
  }
  return p

@functools.cache
def conformance_asts() -> dict[str, UOp]:
  """kernel label (family/op#n) -> kernel AST, deduplicated across programs."""
  from tinygrad.engine.schedule import create_schedule
  out: dict[str, UOp] = {}
  seen: set[UOp] = set()
  for name, t in programs().items():
    sched, _ = create_schedule([t.uop])
    for n, ei in enumerate(e for e in sched if e.ast.op is Ops.SINK):
      if ei.ast not in seen:
        seen.add(ei.ast)
        out[f"{name}#{n}"] = ei.ast
  return out

# ---- hand-built linearized kernels (docs/ir.md) for what the optimizer does not make yet: locals, vectors ----
from tinygrad.uop.ops import AxisType
from tinygrad.dtype import DType, AddrSpace

def glob(slot: int, dt: DType, n: int) -> UOp: return UOp(Ops.DEFINE_GLOBAL, dt.ptr(n), (), slot)
def special(name: str, n: int) -> UOp: return UOp(Ops.SPECIAL, dtypes.int32, (UOp.const(dtypes.int32, n),), name)
def end(r: UOp) -> UOp: return UOp(Ops.END, dtypes.void, (r,))
def linear(*roots: UOp) -> list[UOp]:
  out: dict[UOp, None] = {}
  for r in roots:
    for n in r.toposort():
      if n not in out: out[n] = None
  return list(out)

def _elementwise(fn, in_dts: list[DType], out_dt: DType, n: int = 16) -> list[UOp]:
  out, ins, g = glob(0, out_dt, n), [glob(i+1, dt, n) for i, dt in enumerate(in_dts)], special("gidx0", n)
  return linear(out, *ins, out.index(g).store(fn(*[b.index(g).load() for b in ins])))

def _two_vars() -> list[UOp]:
  out, inp, g = glob(0, dtypes.float32, 64), glob(1, dtypes.float32, 64), special("gidx0", 64)
  b, a = UOp.variable("b", 0, 8), UOp.variable("a", 0, 8)   # declared b first: binding is by name, not by position
  return linear(out, b, inp, a, out.index(g).store(inp.index(g + a - b).load()))

def _reduce(rows: int = 4, cols: int = 8) -> list[UOp]:
  out, inp, g = glob(0, dtypes.float32, rows), glob(1, dtypes.float32, rows*cols), special("gidx0", rows)
  r = UOp.range(cols, 1, AxisType.REDUCE)
  acc = UOp(Ops.DEFINE_REG, dtypes.float32.ptr(1, AddrSpace.REG), (), 0)
  ptr = acc.index(UOp.const(dtypes.int32, 0))
  init = UOp(Ops.STORE, dtypes.void, (ptr, UOp.const(dtypes.float32, 0.0)))
  upd = ptr.store(UOp(Ops.LOAD, dtypes.float32, (ptr, init, r)) + inp.index(g * cols + r).load())
  e = end(r)
  return linear(out, inp, g, acc, init, r, upd, e, out.index(g).store(UOp(Ops.LOAD, dtypes.float32, (ptr, e))))

def _local_sum(n: int = 16) -> list[UOp]:
  """Each group of n threads loads n values into threadgroup memory; thread 0 adds them after a barrier."""
  out, inp = glob(0, dtypes.float32, 4), glob(1, dtypes.float32, 4*n)
  g, l = special("gidx0", 4), special("lidx0", n)
  tmp = UOp(Ops.DEFINE_LOCAL, dtypes.float32.ptr(n, AddrSpace.LOCAL), (), "temp0")
  st = tmp.index(l).store(inp.index(g * n + l).load())
  bar = UOp(Ops.BARRIER, dtypes.void, (st,))
  total = UOp(Ops.LOAD, dtypes.float32, (tmp.index(UOp.const(dtypes.int32, 0)), bar))
  for i in range(1, 4): total = total + UOp(Ops.LOAD, dtypes.float32, (tmp.index(UOp.const(dtypes.int32, i)), bar))
  return linear(out, inp, g, l, tmp, st, bar, out.index(g, l < 1).store(total))

def _vec4(n: int = 64) -> list[UOp]:
  """out[4i:4i+4] = in[4i:4i+4] * 2 through float4 pointers, and a gated float4 load."""
  out, inp, g = glob(0, dtypes.float32, n), glob(1, dtypes.float32, n), special("gidx0", n // 4)
  v4 = dtypes.float32.vec(4)
  src = UOp(Ops.CAST, v4.ptr(n), (inp.index(g * 4),))
  dst = UOp(Ops.CAST, v4.ptr(n), (out.index(g * 4),))
  x = UOp(Ops.LOAD, v4, (src,))
  y = UOp(Ops.LOAD, v4, (UOp(Ops.CAST, v4.ptr(n), (inp.index(g * 4, g < 8),)),))
  return linear(out, inp, dst.store(x * UOp.const(v4, 2.0) + y))

def hand_kernels() -> dict[str, list[UOp]]:
  return {
    "add": _elementwise(lambda a, b: a + b, [dtypes.float32]*2, dtypes.float32), "two_vars": _two_vars(), "reduce": _reduce(),
    "gated": _elementwise(lambda a: a, [dtypes.float32], dtypes.float32),
    "local_sum": _local_sum(), "vec4": _vec4(),
    "half_sqrt": _elementwise(lambda a, b: (a * b).sqrt(), [dtypes.float16]*2, dtypes.float16),
    "bfloat_add": _elementwise(lambda a: a + a, [dtypes.bfloat16], dtypes.bfloat16),
    "int64": _elementwise(lambda a: a * UOp.const(dtypes.int64, -2**63) + UOp.const(dtypes.int64, 10**12), [dtypes.int64], dtypes.int64),
    "bitcast": _elementwise(lambda a: (a.bitcast(dtypes.uint32) >> UOp.const(dtypes.uint32, 3)).bitcast(dtypes.float32), [dtypes.float32], dtypes.float32),
    "narrow_ints": _elementwise(lambda a, b: (a * b).cast(dtypes.int8), [dtypes.uint16]*2, dtypes.int8),
  }
