"""The plugin's hooks: tell the core about the METAL device. Imports nothing heavy (PyObjC loads when the device opens)."""
from __future__ import annotations
import os, sys, importlib.util
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION

METAL_FRAMEWORK = "/System/Library/Frameworks/Metal.framework"

def probe() -> tuple[bool, str]:
  """Cheap availability check: macOS, the Metal framework on disk, PyObjC's Metal bindings installed (nothing is opened)."""
  if sys.platform != "darwin": return False, f"Metal needs macOS (this machine runs {sys.platform})"
  if not os.path.isdir(METAL_FRAMEWORK): return False, f"the Metal framework is missing ({METAL_FRAMEWORK})"
  if importlib.util.find_spec("Metal") is None: return False, "PyObjC's Metal bindings are not installed: pip install pyobjc-framework-Metal"
  return True, ""

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # above CPU (50): on a Mac with Metal the GPU is the better default
  return [DeviceSpec("METAL", 70, "tinygrad_metal.device:MetalDevice", "tinygrad_metal.plugin:probe")]
