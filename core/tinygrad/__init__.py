"""tinygrad: a small tensor compiler core; device backends are separately installed plugins."""
import os, re, sys
from typing import Any

def _other_tinygrad() -> str | None:
  """Where public tinygrad (distribution `tinygrad`, the same import name as ours) is installed on sys.path, else None.
  A scan of each path folder's names, not importlib.metadata (~10 ms to import): this runs at every import."""
  for p in sys.path:
    try: names = os.listdir(p or ".")
    except OSError: continue
    for n in names:
      if n.startswith("tinygrad") and _DIST_INFO.match(n): return os.path.join(p, n)
  return None
_DIST_INFO = re.compile(r"tinygrad-[^-]+\.(dist|egg)-info$|tinygrad\.egg-info$", re.I)

if (_other := _other_tinygrad()) is not None:
  import warnings
  warnings.warn(f"two distributions provide the import name 'tinygrad' here: tinygrad-core (this one) and public tinygrad ({_other}); "
                "whichever installed last owns the files. Fix: pip uninstall tinygrad (then pip install --force-reinstall tinygrad-core)",
                stacklevel=2)
from tinygrad.helpers import Context, getenv, DEBUG, GlobalCounters, fetch
from tinygrad.uop.ops import UOp, Variable
from tinygrad.dtype import dtypes
from tinygrad.tensor import Tensor
from tinygrad.function import function
from tinygrad.helpers import VIZ as _VIZ, PROFILE as _PROFILE
if _VIZ.value or _PROFILE.value:
  from tinygrad.viz import from_env as _viz_from_env
  _viz_from_env()

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

__all__ = ["Tensor", "Device", "dtypes", "Context", "getenv", "DEBUG", "TinyJit", "nn", "UOp", "GlobalCounters", "Variable", "fetch", "function"]
