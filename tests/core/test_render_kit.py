"""plugin_api's rendering without hardware: `kernels` (a Tensor's kernel ASTs), `render` (one kernel for a renderer with
given actions -> ProgramSpec) and `corpus` (representative kernels). Golden files pin what a backend author's golden test
sees; regenerate them with UPDATE_GOLDEN=1 when a codegen change is meant to change the source."""
import os
from pathlib import Path
import pytest
from tinygrad import Tensor
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops
from tinygrad.plugin_api import CStyleLanguage, base_code_for_op, kernels, render, corpus, Opt, OptOps, ProgramSpec
from tinygrad.runtime.python import PythonRenderer

GOLDEN = Path(__file__).resolve().parent / "golden" / "render_kit"

class GoldenC(CStyleLanguage):
  """A plain C renderer defined here, so the golden sources change only when the core's codegen does."""
  device = "GOLDEN"
  global_max = None
  local_max = None
  type_map = {dtypes.bool: "_Bool"}
  code_for_op = {**base_code_for_op, Ops.SQRT: lambda x, dtype: f"sqrtf({x})"}
  supported_dtypes = frozenset([dtypes.bool, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint8, dtypes.float32])

def named() -> dict[str, object]: return dict(corpus())

@pytest.mark.parametrize("name", ["add", "sum_rows", "pad", "int64", "symbolic"])
def test_golden_source(name):
  p = render(named()[name], GoldenC, opts=[])
  path = GOLDEN / f"{name}.c"
  if os.environ.get("UPDATE_GOLDEN"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(p.src)
  assert path.exists(), f"{path} missing: run with UPDATE_GOLDEN=1 to create it"
  assert p.src == path.read_text(), f"render of corpus kernel {name!r} changed; if intended, regenerate with UPDATE_GOLDEN=1"

def test_render_returns_a_program_spec():
  x = Tensor.empty(64, device="PYTHON") * 3
  p = render(x, PythonRenderer)
  assert isinstance(p, ProgramSpec) and p.device == "PYTHON" and p.lib is None and p.outs == [0] and p.ins == [1]
  assert p.uops and p.uops[-1].op is not Ops.SINK and p.estimates.ops == 64

def test_actions_given_as_opts_shape_the_program():
  ast = named()["add"]
  plain = render(ast, GoldenC, opts=[])
  up = render(ast, GoldenC, opts=[("UPCAST", 0, 4)])
  assert plain.src.count("data0[") == 1 and up.src.count("data0[") == 4, up.src
  assert render(ast, GoldenC, opts=[Opt(OptOps.UPCAST, 0, 4)]).src == up.src, "an Opt and its (name, axis, arg) tuple are the same action"
  assert render(ast, PythonRenderer, opts=[("LOCAL", 0, 4)]).local_size == [4, 1, 1]

def test_render_errors_name_the_fix():
  x = Tensor.empty(64, device="PYTHON")
  with pytest.raises(ValueError, match="realizes as 2 kernels.*kernels"): render(x - x.max(), GoldenC)
  with pytest.raises(ValueError, match="bad optimizer action.*UPCAST"): render(named()["add"], GoldenC, opts=[("UPCASTT", 0, 4)])
  with pytest.raises(TypeError, match="needs a Renderer"): render(named()["add"], object())
  with pytest.raises(TypeError, match="Tensor or a kernel AST"): render(Tensor.empty(4).uop, GoldenC)

def test_corpus_is_stable_and_renders_everywhere():
  names = [n for n, _ in corpus()]
  assert len(names) == len(set(names))
  for must in ("add", "broadcast_mul", "sum_rows", "max_all", "matmul", "conv2d", "pad", "where", "transcendental",
               "int_div_mod", "cast", "uint8", "int64", "float16", "bitcast", "symbolic"):
    assert must in names, f"corpus lost {must!r}: the set only grows within an API version"
  for name, ast in corpus(GoldenC):
    assert ast.op is Ops.SINK
    assert render(ast, GoldenC, opts=[]).src, name
    render(ast, PythonRenderer)   # the heuristics' actions on a GPU-style renderer
  assert "float16" not in dict(corpus(GoldenC)), "corpus(renderer) leaves out kernels with dtypes it does not declare"
