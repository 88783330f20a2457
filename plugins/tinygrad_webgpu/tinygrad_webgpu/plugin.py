"""The plugin's hooks: tell the core about the WEBGPU device. Imports nothing heavy (wgpu is imported when the device opens).

The probe does not ask wgpu for an adapter: that takes ~1.4 s on llvmpipe (measured), far over a probe's budget. It checks
that wgpu is importable and, on Linux, that a Vulkan driver (an ICD manifest) is installed; the adapter's name is shown
once the device opens (`python -m tinygrad`).
"""
from __future__ import annotations
import glob, importlib.util, os, sys
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION

ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")

def probe() -> tuple[bool, str]:
  """(ok, why not): wgpu importable and, on Linux, a Vulkan ICD present (VK_ICD_FILENAMES or the standard directories)."""
  if importlib.util.find_spec("wgpu") is None: return False, "wgpu is not installed (pip install wgpu)"
  if sys.platform.startswith("linux"):
    forced = [f for f in os.environ.get("VK_ICD_FILENAMES", "").split(os.pathsep) if f]
    if forced and not any(os.path.exists(f) for f in forced): return False, (f"no Vulkan driver: VK_ICD_FILENAMES={':'.join(forced)}: no such file "
                                                                              "(unset it for the installed ones; for a CPU one: apt-get install mesa-vulkan-drivers)")
    if not forced and not any(glob.glob(os.path.join(d, "*.json")) for d in ICD_DIRS):
      return False, "no Vulkan driver found (no ICD in /usr/share/vulkan/icd.d); for a CPU one: apt-get install mesa-vulkan-drivers"
  return True, ""

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # below CPU (50): on the machines CI runs it is a software rasterizer, never the better default
  return [DeviceSpec("WEBGPU", 30, "tinygrad_webgpu.device:WebGPUDevice", "tinygrad_webgpu.plugin:probe")]
