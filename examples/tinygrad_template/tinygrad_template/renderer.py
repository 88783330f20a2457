"""C for the system compiler: the core's CStyleLanguage does the walk; this class names types, math and abilities."""
from tinygrad.plugin_api import CStyleLanguage, base_code_for_op, Ops, dtypes

def _math(fn: str):
  return lambda x, dtype: f"__builtin_{fn}{'' if dtype.scalar() == dtypes.float64 else 'f'}({x})"

class TemplateRenderer(CStyleLanguage):
  device = "TEMPLATE"
  has_local = False                 # no launch grid: every global range is a loop in the kernel
  has_threads = True                # the outer loop is split across threads: kernels get core_id, core_count (runtime.py)
  global_max = None
  local_max = None
  infinity = "__builtin_inff()"
  nan = '__builtin_nanf("")'
  type_map = {dtypes.bool: "_Bool"}
  code_for_op = {**base_code_for_op, Ops.SQRT: _math("sqrt"), Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"),
                 Ops.SIN: _math("sin"), Ops.TRUNC: _math("trunc")}
  # what plain C holds natively; the core refuses the others (float16, bfloat16) with a clear error
  supported_dtypes = frozenset([dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
                                dtypes.int64, dtypes.uint64, dtypes.float32, dtypes.float64])
