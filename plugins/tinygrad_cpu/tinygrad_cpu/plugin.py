"""The plugin's hooks: tell the core about the CPU device. Imports nothing heavy (no llvmlite, no ctypes loading)."""
from tinygrad.plugin_api import hookimpl, DeviceSpec, API_VERSION, VIRTUAL_INSTANCES

@hookimpl
def tinygrad_api_version() -> int: return API_VERSION

@hookimpl
def tinygrad_devices() -> list[DeviceSpec]:
  # above PYTHON (0): any host runs it, so no probe is needed; the compilers report their own absence when opened.
  # CPU:1 .. are virtual instances on the same host (multi-device code on one machine), as many as the core allows
  return [DeviceSpec("CPU", 50, "tinygrad_cpu.device:CPUDevice", instances=VIRTUAL_INSTANCES)]
