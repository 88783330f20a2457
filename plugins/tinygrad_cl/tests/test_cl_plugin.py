"""The plugin's boundary: every module imports only tinygrad.plugin_api from the core (the kit's proof: a real backend
built on nothing a third party lacks), the entry point and distribution, and the probe's reasons."""
import ast, os, subprocess, sys, tomllib
from pathlib import Path
import pytest

PKG = Path(__file__).resolve().parents[1] / "tinygrad_cl"

def core_imports(path: Path) -> list[str]:
  """Every `tinygrad...` module a file imports (plugin-own `tinygrad_cl` modules excluded)."""
  out = []
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import): out += [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module: out.append(node.module)
  return [m for m in out if m == "tinygrad" or m.startswith("tinygrad.")]

def test_every_module_imports_only_plugin_api():
  files = sorted(PKG.glob("*.py"))
  assert {f.name for f in files} >= {"plugin.py", "device.py", "renderer.py", "compiler.py", "runtime.py", "allocator.py"}
  bad = {f.name: m for f in files for m in core_imports(f) if m != "tinygrad.plugin_api"}
  assert not bad, f"tinygrad_cl must import the core only through tinygrad.plugin_api: {bad}"

def test_import_check_catches_a_core_import(tmp_path):
  (tmp_path / "x.py").write_text("from tinygrad.plugin_api import Ops\nimport tinygrad.device\nfrom tinygrad.renderer.cstyle import safe_div\n")
  assert core_imports(tmp_path / "x.py") == ["tinygrad.plugin_api", "tinygrad.device", "tinygrad.renderer.cstyle"]

def test_entry_point_and_dependency():
  proj = tomllib.loads((PKG.parent / "pyproject.toml").read_text())["project"]
  assert proj["name"] == "tinygrad-cl" and "pyopencl" in proj["dependencies"]
  assert proj["entry-points"]["tinygrad.plugins"] == {"cl": "tinygrad_cl.plugin"}

def test_plugin_module_is_cheap():
  code = "import sys, tinygrad_cl.plugin as p; p.tinygrad_devices(); print(sorted(m for m in ('pyopencl', 'numpy', 'tinygrad.device') if m in sys.modules))"
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
  assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr

def test_probe_names_the_fix_without_a_driver(tmp_path, monkeypatch):
  from tinygrad_cl.plugin import probe
  monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
  monkeypatch.delenv("OCL_ICD_FILENAMES", raising=False)
  ok, why = probe()
  assert not ok and "pocl-opencl-icd" in why and str(tmp_path) in why
  (tmp_path / "x.icd").write_text("libx.so\n")
  assert probe() == (True, "")
