"""The renderer contract written down: every override point of Renderer and CStyleLanguage has a docstring and a row in
docs/plugins.md's reference table, literal suffixes and the vector constructor are attributes, memory accesses have named
parts (mem_access), the dead `supports_float4` is deprecated loudly, docs/ir.md names every op, and ProgramSpec's launch
convention is the one documented."""
import ast, re, warnings
from pathlib import Path
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.renderer import Renderer, mem_access
from tinygrad.renderer.cstyle import CStyleLanguage

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"Renderer": ROOT / "core/tinygrad/renderer/__init__.py", "CStyleLanguage": ROOT / "core/tinygrad/renderer/cstyle.py"}

def override_points(cls: str) -> dict[str, bool]:
  """Public name -> whether it is documented (a def's docstring, or the string literal right after an attribute)."""
  tree = ast.parse(SOURCES[cls].read_text())
  body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
  out: dict[str, bool] = {}
  for i, n in enumerate(body):
    nxt = body[i+1] if i + 1 < len(body) else None
    doc_after = isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)
    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name): out[n.target.id] = doc_after
    elif isinstance(n, ast.Assign): out.update({t.id: doc_after for t in n.targets if isinstance(t, ast.Name)})
    elif isinstance(n, ast.FunctionDef): out[n.name] = bool(ast.get_docstring(n))
  return {k: v for k, v in out.items() if not k.startswith("_") or k == "__init__"}

@pytest.mark.parametrize("cls", list(SOURCES))
def test_every_override_point_has_a_docstring(cls):
  points = override_points(cls)
  assert len(points) > 10
  assert not [k for k, v in points.items() if not v], f"{cls} override points without a docstring: {[k for k, v in points.items() if not v]}"

def reference_table() -> dict[str, set[str]]:
  """class -> names in docs/plugins.md's override-point table (rows `| `name` | Class | ...`)."""
  text = (ROOT / "docs/plugins.md").read_text()
  rows: dict[str, set[str]] = {}
  for m in re.finditer(r"^\| `([A-Za-z_0-9]+)`(?:\(\))? \| (Renderer|CStyleLanguage) \|", text, re.M): rows.setdefault(m.group(2), set()).add(m.group(1))
  return rows

@pytest.mark.parametrize("cls", list(SOURCES))
def test_plugins_md_table_lists_every_override_point(cls):
  documented, points = reference_table().get(cls, set()), set(override_points(cls))
  assert points - documented == set(), f"docs/plugins.md's override-point table lacks {cls}: {sorted(points - documented)}"
  assert documented - points == set(), f"docs/plugins.md's table lists {cls} names that do not exist: {sorted(documented - points)}"

# ---- literals, vectors and accesses as data ----

def test_int_suffix_and_vector_ctor_are_attributes():
  class OpenCLish(CStyleLanguage):
    int_suffix = {dtypes.uint32: "u", dtypes.int64: "l", dtypes.uint64: "ul"}
    vector_ctor = "({type})({elems})"
  r, base = OpenCLish(), CStyleLanguage()
  assert (r.render_const(5, dtypes.int64), r.render_const(7, dtypes.uint64), r.render_const(-2**63, dtypes.int64)) == ("5l", "7ul", "(-9223372036854775807l-1)")
  assert (base.render_const(5, dtypes.int64), base.render_const(7, dtypes.uint64)) == ("5ll", "7ull")
  assert r.render_vectorize(["a", "b"], dtypes.float.vec(2)) == "(float2)(a,b)"
  assert base.render_vectorize(["a", "b"], dtypes.float.vec(2)) == "make_float2(a,b)"
  assert r.render_const(1.5, dtypes.float.vec(2)) == "(float2)(1.5f,1.5f)"

def test_mem_access_names_the_parts():
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0)
  i, g = UOp.const(dtypes.int, 3), UOp(Ops.DEFINE_VAR, dtypes.int, (), ("n", 0, 9)) < 5
  plain, gated = UOp(Ops.INDEX, buf.dtype, (buf, i)), UOp(Ops.INDEX, buf.dtype, (buf, i, g))
  ld = UOp(Ops.LOAD, dtypes.float, (gated,))
  st = UOp(Ops.STORE, dtypes.void, (plain, ld))
  vec = UOp(Ops.CAST, dtypes.float.vec(4).ptr(4), (plain,))
  assert (mem_access(ld).buf, mem_access(ld).idx, mem_access(ld).gate, mem_access(ld).value) == (buf, i, g, None)
  assert (mem_access(st).ptr, mem_access(st).gate, mem_access(st).value, mem_access(st).vector) == (plain, None, ld, None)
  assert (mem_access(vec).buf, mem_access(vec).idx, mem_access(vec).vector) == (buf, i, dtypes.float.vec(4).ptr(4))
  assert mem_access(UOp(Ops.LOAD, dtypes.float, (buf,))).idx is None
  assert buf.dtype.addrspace is AddrSpace.GLOBAL
  with pytest.raises(ValueError, match="mem_access needs a LOAD, STORE"): mem_access(i)

def test_cstyle_renders_a_gated_load_through_its_accessor():
  # the gate rendered is the INDEX's third source, whatever ordering dependencies the LOAD carries after it
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0)
  g = UOp(Ops.DEFINE_VAR, dtypes.int, (), ("n", 0, 9)) < 5
  ld = UOp(Ops.LOAD, dtypes.float, (UOp(Ops.INDEX, buf.dtype, (buf, UOp.const(dtypes.int, 2), g)), UOp(Ops.NOOP, dtypes.void)))
  r = CStyleLanguage()
  r.r = {buf: "data0", UOp.const(dtypes.int, 2): "2", g: "gate"}
  assert r.string_rewrite.rewrite(ld, ctx=r) == "(gate?data0[2]:0.0f)"

def test_supports_float4_is_deprecated_with_the_fix():
  with pytest.warns(DeprecationWarning, match="vector_bytes, vector_ops and vector_dtypes"):
    class Old(CStyleLanguage): supports_float4 = False   # noqa: F841
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    class New(CStyleLanguage): vector_bytes = 16   # noqa: F841

# ---- docs/ir.md and the launch convention ----

def test_ir_md_names_every_op():
  words = set(re.findall(r"[A-Z][A-Z0-9_]+", (ROOT / "docs/ir.md").read_text()))
  missing = [o.name for o in Ops if o.name not in words]
  assert not missing, f"docs/ir.md does not describe {missing}"

def test_global_size_counts_work_groups():
  from tinygrad.plugin_api import render
  from tinygrad import Tensor
  from tinygrad.runtime.python import PythonRenderer
  x = Tensor.empty(256, device="PYTHON") + 1
  p = render(x, PythonRenderer(), opts=[("LOCAL", 0, 16)])
  assert (p.global_size, p.local_size) == ([16, 1, 1], [16, 1, 1]), "256 threads: 16 work-groups of 16 threads"
  q = render(x, PythonRenderer(), opts=[])
  assert (q.global_size, q.local_size) == ([256, 1, 1], None), "no thread index in a work-group: one thread per work-group"
  assert "work-groups per axis" in (ROOT / "docs/plugins.md").read_text()
