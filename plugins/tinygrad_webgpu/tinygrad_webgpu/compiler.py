"""WEBGPU has no compiler pair: WGSL source is the binary (the PROGRAM pipeline stops at SOURCE). The shader is validated when
the runtime creates it; this module turns wgpu's validation errors into the core's CompileError (message with line and
column, plus the numbered source) so a bad kernel is reported, never a crash."""
from __future__ import annotations
from typing import Any
from tinygrad.plugin_api import CompileError

def create_shader(device: Any, src: str, name: str) -> Any:
  """A GPUShaderModule for `src`, or CompileError with wgpu's diagnostics (which name the line and column) and the source."""
  try: return device.create_shader_module(label=name, code=src)
  except Exception as e: raise CompileError(f"WGSL rejected by wgpu for kernel {name}: {e}", src) from e

def create_pipeline(device: Any, module: Any, layout: Any, src: str, name: str) -> Any:
  try: return device.create_compute_pipeline(label=name, layout=layout, compute={"module": module, "entry_point": name})
  except Exception as e: raise CompileError(f"wgpu could not build the compute pipeline for kernel {name}: {e}", src) from e
