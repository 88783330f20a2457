"""The TEMPLATE device: one compiler pair (C via the system compiler), host-memory allocator, ctypes runtime."""
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair
from tinygrad_template.renderer import TemplateRenderer
from tinygrad_template.compiler import TemplateCompiler
from tinygrad_template.allocator import TemplateAllocator
from tinygrad_template.runtime import TemplateProgram

class TemplateDevice(Compiled):
  def __init__(self, device: str = "TEMPLATE"):
    pairs = [CompilerPair(TemplateRenderer, TemplateCompiler, ctrl_var="TEMPLATE_CC_C", name="C")]
    super().__init__(device, TemplateAllocator(device), CompilerSet(pairs, ctrl_var="TEMPLATE_CC"), TemplateProgram)
