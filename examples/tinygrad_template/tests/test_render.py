"""Tests that need no TEMPLATE device: every kernel of the core's corpus renders, and the C compiler accepts them."""
import pytest
from tinygrad.plugin_api import corpus, render
from tinygrad_template.renderer import TemplateRenderer
from tinygrad_template.compiler import TemplateCompiler, cc_path

def test_corpus_renders():
  for name, ast in corpus(TemplateRenderer):
    spec = render(ast, TemplateRenderer, opts=[])   # no actions: what a golden file of this kernel would hold
    assert spec.src.count(f"void {spec.name}(") == 1, name

@pytest.mark.skipif(cc_path() is None, reason="no C compiler: install gcc or clang, or set TEMPLATE_CC_PATH")
def test_corpus_compiles():
  # one translation unit (one compiler run): each kernel renamed after its corpus entry
  srcs = [render(ast, TemplateRenderer).src.replace(f"void {ast.arg}(", f"void {name}(") for name, ast in corpus(TemplateRenderer)]
  assert len(srcs) >= 10 and TemplateCompiler().compile("\n".join(srcs))
