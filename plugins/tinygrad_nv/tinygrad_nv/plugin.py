"""The plugin's hooks: tell the core about the NV device. Imports nothing heavy (no libcuda, no NVRTC)."""
from __future__ import annotations
import os
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION

def probe() -> tuple[bool, str]:
  """Cheap: is there a driver library to load (or is the mock driver asked for)? Never initialises the GPU."""
  if os.environ.get("NV_MOCK", "0") == "1": return True, "mock driver (NV_MOCK=1)"
  # no kernel driver, no GPU: said without looking for the library (ctypes.util.find_library runs ldconfig and gcc, ~100 ms
  # of every process's first result on a machine without one); /dev/dxg is WSL's GPU
  if not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")):
    return False, "no libcuda / no NVIDIA driver (/dev/nvidiactl does not exist); NV_MOCK=1 runs the mock driver"
  from tinygrad_nv.runtime import find_libcuda
  if find_libcuda() is None:
    return False, "no libcuda / no NVIDIA driver (libcuda.so.1 not found on LD_LIBRARY_PATH or the system library paths); NV_MOCK=1 runs the mock driver"
  return True, ""

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # above CPU (50): a GPU, when present, is what users want by default
  return [DeviceSpec("NV", 100, "tinygrad_nv.device:NVDevice", "tinygrad_nv.plugin:probe", "tinygrad_nv.device:compile_only")]
