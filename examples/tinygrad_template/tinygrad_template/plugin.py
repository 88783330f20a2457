"""The hooks: the only module the core imports at discovery, so it imports nothing heavy."""
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION, VIRTUAL_INSTANCES

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # priority 10: above the built-in PYTHON (0), below real backends; the probe says whether a C compiler is on PATH;
  # host memory: TEMPLATE:1 is a second instance on the same machine (multi-device code), up to VIRTUAL_INSTANCES
  return [DeviceSpec("TEMPLATE", 10, "tinygrad_template.device:TemplateDevice", "tinygrad_template.compiler:probe",
                     instances=VIRTUAL_INSTANCES)]
