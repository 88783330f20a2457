"""The plugin's hooks: tell the core about the CL device. Imports nothing heavy (pyopencl loads when the device opens)."""
from __future__ import annotations
import glob, importlib.util, os
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION

ICD_DIRS = ("/etc/OpenCL/vendors",)

def probe() -> tuple[bool, str]:
  """(ok, why not): pyopencl importable and an OpenCL driver registered (an ICD file; OCL_ICD_VENDORS or /etc/OpenCL/vendors).
  No platform is queried: that loads every driver."""
  if importlib.util.find_spec("pyopencl") is None: return False, "pyopencl is not installed (pip install pyopencl)"
  vendors = os.environ.get("OCL_ICD_VENDORS", "")       # the folder of OpenCL driver (*.icd) files (the ICD loader's own variable)
  forced = os.environ.get("OCL_ICD_FILENAMES", "")       # OpenCL driver libraries to load, besides the registered ones (the ICD loader's)
  dirs = [vendors] if vendors else list(ICD_DIRS)
  if forced or any(glob.glob(os.path.join(d, "*.icd")) for d in dirs): return True, ""
  return False, f"no OpenCL driver registered (no *.icd in {', '.join(dirs)}); for a CPU one: apt-get install pocl-opencl-icd"

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # below CPU (50): OpenCL is often a CPU driver (POCL) here, and an explicit DEV=CL on machines with a GPU one
  return [DeviceSpec("CL", 40, "tinygrad_cl.device:CLDevice", "tinygrad_cl.plugin:probe")]
