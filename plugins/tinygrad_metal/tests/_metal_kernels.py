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
    "random/rand": Tensor.rand(16, device="PYTHON"), "random/randn": Tensor.randn(8, device="PYTHON"),
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
