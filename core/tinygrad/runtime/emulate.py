"""What the PYTHON device mimics under EMULATE=NV|AMD|METAL: the launch limits and memory of those GPUs."""
from __future__ import annotations
from typing import Any

_ABILITIES: dict[str, dict[str, Any]] = {
  "NV": {"has_local": True, "has_shared": True, "global_max": (2**31-1, 65535, 65535), "local_max": (1024, 1024, 64), "shared_max": 49152},
  "AMD": {"has_local": True, "has_shared": True, "global_max": (2**31-1, 65535, 65535), "local_max": (1024, 1024, 1024), "shared_max": 65536},
  "METAL": {"has_local": True, "has_shared": True, "global_max": (2**31-1, 65535, 65535), "local_max": (1024, 1024, 1024), "shared_max": 32768},
}

def abilities(name: str) -> dict[str, Any]:
  """The renderer attributes the PYTHON device takes when emulating `name` (with its tensor cores, run by tc.py's emulation)."""
  key = name.upper()
  if key not in _ABILITIES: raise ValueError(f"EMULATE={name!r} is not known; valid: {', '.join(_ABILITIES)}")
  from tinygrad.codegen import tc   # tensor cores: NV's mma.m16n8k16, AMD's RDNA3 WMMA (wave32), Apple's simdgroup 8x8
  cores = {"NV": tc.NV_TENSOR_CORES, "AMD": tc.AMD_WMMA_TENSOR_CORES, "METAL": tc.METAL_TENSOR_CORES}[key]
  return {**_ABILITIES[key], "tensor_cores": cores}
