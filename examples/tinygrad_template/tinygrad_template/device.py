"""The TEMPLATE device: one compiler pair (C via the system compiler), host-memory allocator, threaded ctypes runtime."""
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair
from tinygrad_template import ENV_PREFIX
from tinygrad_template.renderer import TemplateRenderer
from tinygrad_template.compiler import TemplateCompiler
from tinygrad_template.allocator import TemplateAllocator
from tinygrad_template.runtime import TemplateProgram

class TemplateDevice(Compiled):
  def __init__(self, device: str = "TEMPLATE"):
    pairs = [CompilerPair(TemplateRenderer, TemplateCompiler, name="C")]
    # prefix: TEMPLATE_CC=C picks the pair by name, TEMPLATE_C=0 skips it (docs/plugins.md section 5)
    super().__init__(device, TemplateAllocator(device), CompilerSet(pairs, prefix=ENV_PREFIX), TemplateProgram)
