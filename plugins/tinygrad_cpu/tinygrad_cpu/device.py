"""The CPU device: its compiler pairs (CPU_CC=LLVM|CLANG|GCC), allocator and runtime."""
from __future__ import annotations
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair
from tinygrad_cpu.renderer import ClangRenderer, LLVMRenderer
from tinygrad_cpu.compiler import ClangCompiler, GCCCompiler, LLVMCompiler
from tinygrad_cpu.allocator import CPUAllocator
from tinygrad_cpu.runtime import CPUProgram

# preference order: LLVM (in process, no toolchain) when llvmlite imports, else clang, else gcc; each pair raises a
# clear error when its tool is missing, and selection moves on to the next
CPU_PAIRS = [CompilerPair(LLVMRenderer, LLVMCompiler, "CPU_LLVM", "LLVM"),
             CompilerPair(ClangRenderer, ClangCompiler, "CPU_CLANG", "CLANG"),
             CompilerPair(ClangRenderer, GCCCompiler, "CPU_GCC", "GCC")]

class CPUDevice(Compiled):
  def __init__(self, device: str = "CPU"):
    from tinygrad_cpu.graph import CPUGraph
    super().__init__(device, CPUAllocator(device), CompilerSet(CPU_PAIRS, "CPU_CC"), CPUProgram, graph=CPUGraph)
