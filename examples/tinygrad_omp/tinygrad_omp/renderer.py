"""C with an OpenMP pragma on the loop whose iterations write disjoint outputs (render_loop's `parallel` one)."""
from tinygrad.plugin_api import CStyleLanguage, Loop, base_code_for_op, Ops, dtypes

def _math(fn: str):
  return lambda x, dtype: f"__builtin_{fn}{'' if dtype.scalar() == dtypes.float64 else 'f'}({x})"

class OMPRenderer(CStyleLanguage):
  device = "OMP"
  has_local = False                 # loops, no launch grid; has_threads stays False: OpenMP makes the threads
  global_max = None
  local_max = None
  infinity = "__builtin_inff()"
  nan = '__builtin_nanf("")'
  type_map = {dtypes.bool: "_Bool"}
  code_for_op = {**base_code_for_op, Ops.SQRT: _math("sqrt"), Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"),
                 Ops.SIN: _math("sin"), Ops.TRUNC: _math("trunc")}
  supported_dtypes = frozenset([dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
                                dtypes.int64, dtypes.uint64, dtypes.float32, dtypes.float64])
  def render_loop(self, loop: Loop) -> list[str]:
    if not loop.parallel: return super().render_loop(loop)
    # the accumulators are declared before the loop: each thread needs its own; `if`: small loops stay on one thread
    private = f" private({', '.join(loop.private)})" if loop.private else ""
    return [f"#pragma omp parallel for if({loop.end} >= 64){private}"] + super().render_loop(loop)
