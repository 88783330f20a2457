"""The backend author's kit (re-exported by tinygrad.plugin_api): render a Tensor expression or a kernel AST for a renderer
with given optimizer actions, without its hardware, and a corpus of representative kernels to render, compile or run.

Stable under the plugin API's policy (plugin_api.py): `kernels`, `render`, `corpus` and their documented behaviour.
"""
from __future__ import annotations
from typing import Any, Callable, Iterator, Sequence, TYPE_CHECKING
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes
from tinygrad.renderer import Renderer, ProgramSpec
from tinygrad.codegen.opt import Opt, OptOps
if TYPE_CHECKING:
  from tinygrad.tensor import Tensor

def kernels(*tensors: Tensor) -> list[UOp]:
  """The kernel ASTs (SINKs, docs/ir.md) that realizing `tensors` would run, in order; nothing is run or allocated, and
  copies between devices are left out. An already realized tensor has none."""
  from tinygrad.tensor import Tensor
  if not tensors or not all(isinstance(t, Tensor) for t in tensors): raise TypeError(f"kernels() takes Tensors, got {tensors!r}")
  return [ei.ast for ei in tensors[0].schedule(*tensors[1:]) if ei.ast.op is Ops.SINK]

def _opt(o: Opt | tuple[str, int, int]) -> Opt:
  if isinstance(o, Opt): return o
  if isinstance(o, tuple) and len(o) == 3 and isinstance(o[0], str) and o[0].upper() in OptOps.__members__:
    return Opt(OptOps[o[0].upper()], int(o[1]), int(o[2]))
  raise ValueError(f"bad optimizer action {o!r}: expected Opt(OptOps.X, axis, arg) or (name, axis, arg) with name one of "
                   f"{', '.join(OptOps.__members__)}")

def render(x: Tensor | UOp, renderer: Renderer | type[Renderer], opts: Sequence[Opt | tuple[str, int, int]] | None = None,
           compile: bool = False) -> ProgramSpec:
  """Render one kernel for `renderer` (an instance, or a class constructed with no arguments) and return its ProgramSpec
  (`src`, `global_size`/`local_size`, `uops`, `globals`/`ins`/`outs`, `vars`, `estimates`); no device is opened.

  x: a kernel AST (a SINK from `kernels()` or `corpus()`), or a Tensor whose realization is exactly one kernel (for
    more, render each of `kernels(t)`).
  opts: the optimizer actions to apply, as `Opt(OptOps.UPCAST, 0, 4)` or `("UPCAST", 0, 4)`; None: the core's
    heuristics choose (what a device runs by default); []: none at all. An action that does not apply raises.
  compile: also run `renderer.compiler` (when it has one) and fill `lib`.
  """
  from tinygrad.tensor import Tensor
  from tinygrad.codegen import get_program
  ren = renderer() if isinstance(renderer, type) else renderer
  if not isinstance(ren, Renderer): raise TypeError(f"render() needs a Renderer (instance or class), got {renderer!r}")
  if isinstance(x, Tensor):
    ks = kernels(x)
    if len(ks) != 1: raise ValueError(f"this Tensor realizes as {len(ks)} kernels, not 1: render each of plugin_api.kernels(tensor)")
    x = ks[0]
  if not isinstance(x, UOp) or x.op is not Ops.SINK: raise TypeError(f"render() needs a Tensor or a kernel AST (a SINK UOp), got {x!r}")
  return get_program(x, ren, None if opts is None else [_opt(o) for o in opts], compile=compile)

# ---- the corpus: small kernels that cover what a renderer must handle ----
def _cases() -> list[tuple[str, Callable[[], Any]]]:
  from tinygrad.tensor import Tensor
  from tinygrad.uop.ops import Variable
  def e(*shape: int, dtype: DType = dtypes.float32) -> Tensor: return Tensor.empty(*shape, dtype=dtype, device="PYTHON")
  return [
    ("add", lambda: e(16) + e(16)),                                             # elementwise, two loads and a store
    ("broadcast_mul", lambda: e(4, 1) * e(1, 8)),                               # strides of zero
    ("sum_rows", lambda: e(32, 64).sum(1)),                                     # a reduce loop with an accumulator
    ("max_all", lambda: e(256).max()),                                          # a full reduce to one value
    ("matmul", lambda: e(16, 16) @ e(16, 16)),                                  # the kernel optimizers care about most
    ("conv2d", lambda: e(1, 2, 8, 8).conv2d(e(4, 2, 3, 3), padding=1)),          # gated (padded) loads in a reduce
    ("pad", lambda: e(8).pad((2, 3)) + 1),                                      # gated loads reading 0
    ("where", lambda: (e(16) < e(16)).where(e(16), 2.5)),                       # bool, CMPLT, WHERE, a float constant
    ("transcendental", lambda: e(16).exp2() + e(16).log2() + e(16).sin() + e(16).sqrt()),   # EXP2/LOG2/SIN/SQRT or their decompositions
    ("int_div_mod", lambda: (e(16, dtype=dtypes.int32) // 3) + (e(16, dtype=dtypes.int32) % 5)),   # integer IDIV/MOD
    ("cast", lambda: e(16, dtype=dtypes.int32).cast(dtypes.float32) * 0.5),    # int -> float conversion
    ("uint8", lambda: e(16, dtype=dtypes.uint8) + e(16, dtype=dtypes.uint8)),   # narrow ints that wrap
    ("int64", lambda: e(16, dtype=dtypes.int64) * (1 << 40)),                   # 64-bit literals (suffixes)
    ("float16", lambda: e(16, dtype=dtypes.float16) * e(16, dtype=dtypes.float16)),   # half precision
    ("bitcast", lambda: e(16).bitcast(dtypes.uint32) >> 1),                     # BITCAST and a shift
    ("symbolic", lambda: e(32)[:Variable("n", 1, 32).bind(8)] * 2),            # a DEFINE_VAR argument and a symbolic loop
  ]

def corpus(renderer: Renderer | type[Renderer] | None = None) -> Iterator[tuple[str, UOp]]:
  """Yield (name, kernel AST) for a fixed set of small representative kernels (elementwise, broadcast, reduces, matmul,
  conv, gated loads, comparisons, transcendentals, integer division, casts, narrow and 64-bit ints, half, bitcast, a
  symbolic size); a case that needs several kernels yields `name`, `name_1`, ... With `renderer`, kernels using a dtype
  outside its `supported_dtypes` are left out. The set only grows (new names) within one API version."""
  ren = renderer() if isinstance(renderer, type) else renderer
  sup = ren.supported_dtypes if ren is not None else None
  for name, build in _cases():
    for i, k in enumerate(kernels(build())):
      used = {u.dtype.base.scalar() if hasattr(u.dtype, "base") else u.dtype.scalar() for u in k.toposort()} - {dtypes.void, dtypes.index}
      if sup is not None and not used <= sup: continue
      yield (name if i == 0 else f"{name}_{i}"), k
