"""The plugin's hooks: tell the core about the AMD device. Imports nothing heavy (no libamdhip64, no llvmlite)."""
from __future__ import annotations
import os
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION

def probe() -> tuple[bool, str]:
  """Cheap: is there a HIP runtime to load (or is the mock driver asked for)? Never initialises the GPU."""
  if os.environ.get("AMD_MOCK", "0") == "1": return True, "mock driver (AMD_MOCK=1)"
  # no kernel driver, no GPU: said without looking for the library (ctypes.util.find_library runs ldconfig and gcc, ~100 ms
  # of every process's first result on a machine without one)
  if not os.path.exists("/dev/kfd"): return False, "no HIP runtime usable: no AMD GPU driver (/dev/kfd does not exist); AMD_MOCK=1 runs the mock driver"
  from tinygrad_amd.runtime import find_libhip
  if find_libhip() is None:
    return False, "no HIP runtime (libamdhip64.so not found in $ROCM_PATH/lib, LD_LIBRARY_PATH, /opt/rocm*); AMD_MOCK=1 runs the mock driver"
  return True, ""

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # above CPU (50), next to NV (100): a GPU, when present, is what users want by default
  return [DeviceSpec("AMD", 100, "tinygrad_amd.device:AMDDevice", "tinygrad_amd.plugin:probe", "tinygrad_amd.device:compile_only")]
