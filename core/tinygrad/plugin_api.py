"""The plugin API surface: every name a device plugin may import from the core, in one place.

A plugin imports from here (`from tinygrad.plugin_api import Compiled, CStyleLanguage, hookimpl`), never from the core's
other modules, which may change between releases. Importing this module is as cheap as discovery needs: the hook names
(`hookimpl`, `DeviceSpec`, `API_VERSION`, ...) come from tinygrad.plugins; every other name is imported on first use, so
a plugin's `plugin.py` may import from here without pulling in the renderer or device code.

Stability policy (versioned by `API_VERSION`, declared by each plugin through the `tinygrad_api_version` hook):
- Every name in `__all__`, with its documented signature and behaviour, is the API of version `API_VERSION`.
- Adding a name, an optional parameter, a Renderer attribute with a default, or a hook is compatible: no bump.
- Removing or renaming a name, changing a signature or a hook's meaning, or changing what a plugin must implement is
  a breaking change: `API_VERSION` is bumped, and `MIN_API_VERSION` says which older versions the core still accepts
  (the core refuses a plugin declaring a version outside [MIN_API_VERSION, API_VERSION], with a message).
- tests/core/test_author_kit.py pins `__all__` per version, so a change to this list cannot land unnoticed.
"""
from __future__ import annotations
import importlib
from typing import Any, TYPE_CHECKING
from tinygrad.plugins import API_VERSION, MIN_API_VERSION, hookimpl, hookspec, DeviceSpec, TinygradHooks, VIRTUAL_INSTANCES

# name -> module it lives in (imported on first access)
_LAZY: dict[str, str] = {
  # devices, compilers, memory
  "Compiled": "tinygrad.device", "CompilerSet": "tinygrad.device", "CompilerPair": "tinygrad.device", "Compiler": "tinygrad.device",
  "CompileError": "tinygrad.device", "DeviceError": "tinygrad.device", "Allocator": "tinygrad.device", "LRUAllocator": "tinygrad.device",
  "Buffer": "tinygrad.device", "Device": "tinygrad.device", "compiler_choice": "tinygrad.device", "CompilerWorker": "tinygrad.device",
  "run_tool": "tinygrad.device",
  "GraphRunner": "tinygrad.engine.graph", "GraphCall": "tinygrad.engine.graph", "GraphError": "tinygrad.engine.graph",
  "MemoryManager": "tinygrad.memory", "TLSFAllocator": "tinygrad.memory", "SubBuffer": "tinygrad.memory", "Arena": "tinygrad.memory",
  # renderers
  "Renderer": "tinygrad.renderer", "ProgramSpec": "tinygrad.renderer", "TensorCore": "tinygrad.renderer",
  "CStyleLanguage": "tinygrad.renderer.cstyle", "base_code_for_op": "tinygrad.renderer.cstyle", "base_rewrite": "tinygrad.renderer.cstyle",
  "thread_work": "tinygrad.renderer.cstyle", "safe_div": "tinygrad.renderer.cstyle", "MemAccess": "tinygrad.renderer", "mem_access": "tinygrad.renderer",
  "split_range": "tinygrad.renderer", "LLVMIRRenderer": "tinygrad.renderer.llvmir", "Loop": "tinygrad.renderer.cstyle",
  # what every GPU-style renderer shares: thread blocks for a launch, lane-wise vector ALU (renderer/gpu.py)
  "launch_threads": "tinygrad.renderer.gpu", "launch_threads_ok": "tinygrad.renderer.gpu", "pm_split_launch": "tinygrad.renderer.gpu",
  "pm_devectorize_alu": "tinygrad.renderer.gpu",
  # rendering without hardware: a Tensor's kernels, one kernel for a renderer with given actions, the corpus
  "kernels": "tinygrad.codegen.kit", "render": "tinygrad.codegen.kit", "corpus": "tinygrad.codegen.kit",
  "Opt": "tinygrad.codegen.opt", "OptOps": "tinygrad.codegen.opt",
  # the IR a renderer reads
  "Ops": "tinygrad.uop", "GroupOp": "tinygrad.uop", "UOp": "tinygrad.uop.ops", "UPat": "tinygrad.uop.upat",
  "PatternMatcher": "tinygrad.uop.upat", "DType": "tinygrad.dtype", "PtrDType": "tinygrad.dtype", "AddrSpace": "tinygrad.dtype",
  "dtypes": "tinygrad.dtype",
  # helpers
  "getenv": "tinygrad.helpers", "prod": "tinygrad.helpers", "DEBUG": "tinygrad.helpers",
}

__all__ = ["API_VERSION", "MIN_API_VERSION", "hookimpl", "hookspec", "DeviceSpec", "TinygradHooks", "VIRTUAL_INSTANCES", *_LAZY]

def __getattr__(name: str) -> Any:
  if name not in _LAZY: raise AttributeError(f"tinygrad.plugin_api has no {name!r}; the plugin API (version {API_VERSION}) is: {', '.join(__all__)}")
  value = getattr(importlib.import_module(_LAZY[name]), name)
  globals()[name] = value
  return value

def __dir__() -> list[str]: return list(__all__)

if TYPE_CHECKING:
  from tinygrad.device import (Compiled, CompilerSet, CompilerPair, Compiler, CompileError, DeviceError, Allocator, LRUAllocator, Buffer,
                               Device, compiler_choice, CompilerWorker)
  from tinygrad.engine.graph import GraphRunner, GraphCall, GraphError
  from tinygrad.memory import MemoryManager, TLSFAllocator, SubBuffer, Arena
  from tinygrad.renderer import Renderer, ProgramSpec, TensorCore, MemAccess, mem_access, split_range
  from tinygrad.renderer.llvmir import LLVMIRRenderer
  from tinygrad.renderer.gpu import launch_threads, launch_threads_ok, pm_split_launch, pm_devectorize_alu
  from tinygrad.codegen.kit import kernels, render, corpus
  from tinygrad.codegen.opt import Opt, OptOps
  from tinygrad.renderer.cstyle import CStyleLanguage, Loop, base_code_for_op, base_rewrite, thread_work, safe_div
  from tinygrad.uop import Ops, GroupOp
  from tinygrad.uop.ops import UOp
  from tinygrad.uop.upat import UPat, PatternMatcher
  from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes
  from tinygrad.helpers import getenv, prod, DEBUG
