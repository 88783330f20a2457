"""The hooks: the only module the core imports at discovery, so it imports nothing heavy."""
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION, VIRTUAL_INSTANCES

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # priority 5: above PYTHON (0), below the template and real backends; host memory, so virtual instances
  return [DeviceSpec("OMP", 5, "tinygrad_omp.device:OMPDevice", "tinygrad_omp.compiler:probe", instances=VIRTUAL_INSTANCES)]
