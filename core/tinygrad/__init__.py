"""tinygrad: a small tensor compiler core; device backends are separately installed plugins."""
from typing import Any
from tinygrad.helpers import Context, getenv, DEBUG, GlobalCounters
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.tensor import Tensor

def __getattr__(name: str) -> Any:
  # Device comes from the plugin registry: imported on first use so `import tinygrad` stays cheap
  if name == "Device":
    from tinygrad.device import Device
    return Device
  if name in ("TinyJit", "JitError"):
    from tinygrad.engine import jit
    return getattr(jit, name)
  if name == "nn":
    import tinygrad.nn as nn
    return nn
  raise AttributeError(f"module 'tinygrad' has no attribute {name!r}")

__all__ = ["Tensor", "Device", "dtypes", "Context", "getenv", "DEBUG", "TinyJit", "nn", "UOp", "GlobalCounters"]
