"""docs/layout.md lists core/tinygrad's modules in layer order, from the base up; every import in core/tinygrad (function-level
ones too, type-checking-only ones aside) must point back up that list: to a module on the importer's own line or an earlier
one. The layers are read from the doc itself, so the doc and the code cannot drift apart."""
from __future__ import annotations
import ast, pathlib, re
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "core" / "tinygrad"

# (importer, imported): the arrows that point down the list on purpose, each with why
EXCEPTIONS: dict[tuple[str, str], str] = {
  ("tinygrad.codegen.search", "tinygrad.engine.realize"): "BEAM times each candidate kernel with the realize engine's CompiledRunner",
  ("tinygrad.codegen.kit", "tinygrad.tensor"): "the author's kit builds its corpus of kernels from small Tensor programs",
  ("tinygrad.mixin.hashing", "tinygrad.engine.jit"): "Tensor.keccak replays its 24-round permutation with a TinyJit when a row has "
                                                   "many blocks (public tinygrad's 1 MiB hash: 25), imported when first needed",
  ("tinygrad.helpers", "tinygrad.diskcache"): "public tinygrad's helpers.diskcache/diskcache_clear (programs import them from helpers) "
                                              "call the sqlite cache, imported when first called",
}

def module_name(path: pathlib.Path) -> str:
  parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

def layers() -> list[list[pathlib.Path]]:
  """Per bullet of docs/layout.md, the core/tinygrad paths it claims: `core/tinygrad/...` in backticks, and backticked
  `x.py` or `x/` relative to the folder of the bullet's first path."""
  bullets = re.split(r"\n- ", (ROOT / "docs" / "layout.md").read_text())[1:]
  out = []
  for b in bullets:
    paths: list[pathlib.Path] = []
    base = None
    for tok in re.findall(r"`([^`\s]+)`", b):
      if tok.startswith("core/tinygrad/"):
        p = ROOT / tok.rstrip("/")
        base = base or (p if p.is_dir() else p.parent)
      elif base is not None and re.fullmatch(r"[\w/]+(\.py|/)", tok): p = base / tok.rstrip("/")
      else: continue
      if p.exists(): paths.append(p)
    out.append(paths)
  return out

def layer_of() -> dict[str, int]:
  """Each module's line in layout.md (the most specific path that claims it)."""
  claims = [(p, i) for i, ps in enumerate(layers()) for p in ps]
  ret = {}
  for f in PKG.rglob("*.py"):
    best = max(((p, i) for p, i in claims if f == p or p in f.parents), key=lambda c: len(c[0].parts), default=None)
    if best is not None: ret[module_name(f)] = best[1]
    elif not f.read_text().strip(): ret[module_name(f)] = 0   # an empty package __init__ (engine/) is no layer of its own
  return ret

def _type_checking(node: ast.If) -> bool:
  t = node.test
  return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")

def imports(path: pathlib.Path, known: set[str], text: str | None = None) -> set[str]:
  """The core modules `path` (or `text` as that file) imports anywhere in it, except under `if TYPE_CHECKING:`."""
  me = module_name(path)
  pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
  def resolve(name: str) -> str | None:
    while name and name not in known: name = name.rpartition(".")[0]
    return name or None
  out: set[str] = set()
  def visit(node: ast.AST) -> None:
    if isinstance(node, ast.If) and _type_checking(node):
      for n in node.orelse: visit(n)
      return
    if isinstance(node, ast.Import): names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      mod = node.module or ""
      if node.level: mod = ".".join(pkg.split(".")[:len(pkg.split(".")) - node.level + 1] + ([mod] if mod else []))
      # `from pkg import sub` imports the submodule sub; `from mod import name` imports mod
      names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
    else: names = []
    for n in names:
      if n.split(".")[0] == "tinygrad" and (r := resolve(n)) is not None and r != me: out.add(r)
    for c in ast.iter_child_nodes(node): visit(c)
  visit(ast.parse(path.read_text() if text is None else text))
  return out

def test_every_core_module_has_a_line_in_layout_md():
  mods = {module_name(f) for f in PKG.rglob("*.py")}
  missing = sorted(mods - set(layer_of()))
  assert not missing, f"modules not listed in docs/layout.md (add each to the line of its layer): {missing}"

def test_every_import_points_back_up_the_layer_list():
  layer = layer_of()
  lines = [", ".join(str(p.relative_to(ROOT)) for p in ps) or "?" for ps in layers()]
  bad = []
  for f in sorted(PKG.rglob("*.py")):
    me = module_name(f)
    for dep in sorted(imports(f, set(layer))):
      if layer[dep] > layer[me] and (me, dep) not in EXCEPTIONS:
        bad.append(f"{me} (line {layer[me]+1}: {lines[layer[me]]}) imports {dep} (line {layer[dep]+1}: {lines[layer[dep]]})")
  assert not bad, "imports that point down docs/layout.md's layer list (move the code, or add a justified EXCEPTIONS entry):\n" + "\n".join(bad)

def test_exceptions_are_still_needed():
  layer = layer_of()
  for (me, dep), why in EXCEPTIONS.items():
    assert dep in imports(PKG.parent / (me.replace(".", "/") + ".py"), set(layer)), f"{me} no longer imports {dep}: drop the exception ({why})"
    assert layer[dep] > layer[me], f"{me} -> {dep} points up the list now: drop the exception"

@pytest.mark.parametrize("src, dep, upward", [
  ("from tinygrad.multi import lower", "tinygrad.multi", True),        # the edge this test was written for: the IR importing multi
  ("def f():\n  from tinygrad.tensor import Tensor", "tinygrad.tensor", True),  # function-level imports count
  ("from tinygrad import tensor", "tinygrad.tensor", True),             # a submodule imported from its package
  ("from typing import TYPE_CHECKING\nif TYPE_CHECKING: from tinygrad.tensor import Tensor", "tinygrad.tensor", False),
  ("from tinygrad.dtype import dtypes", "tinygrad.dtype", False),
  ("from . import symbolic", "tinygrad.uop.symbolic", False),
])
def test_the_checker_sees_an_upward_import(src, dep, upward):
  # the checker itself, on source text standing as a module beside uop/ops.py
  layer = layer_of()
  me = layer["tinygrad.uop.ops"]
  got = imports(PKG / "uop" / "_probe.py", set(layer), text=src)
  assert (dep in {d for d in got if layer[d] > me}) == upward
  assert upward or dep in got or "TYPE_CHECKING" in src
