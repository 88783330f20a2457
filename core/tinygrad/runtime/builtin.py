"""The core's own plugin: registers the built-in PYTHON and NULL devices through the same hooks a third party uses."""
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION, VIRTUAL_INSTANCES

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # PYTHON runs everything (slowly, exactly): the fallback default. NULL and DISK run nothing (negative priority: never the default).
  return [DeviceSpec("PYTHON", 0, "tinygrad.runtime.python:PythonDevice", instances=VIRTUAL_INSTANCES),
          DeviceSpec("NULL", -1, "tinygrad.runtime.null:NullDevice", instances=VIRTUAL_INSTANCES),
          DeviceSpec("DISK", -2, "tinygrad.runtime.disk:DiskDevice", instances=1)]   # a file: "disk:/path" (runs nothing)
