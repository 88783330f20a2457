"""Compiler selection for the CPU device: CPU_CC names, per-pair switches, and a missing clang."""
import shutil
import pytest
from tinygrad.device import select_compiler, DeviceError
from tinygrad_cpu import compiler
from tinygrad_cpu.device import CPU_PAIRS

def test_unknown_name_lists_valid(monkeypatch):
  monkeypatch.setenv("CPU_CC", "FOO")
  with pytest.raises(DeviceError, match="unknown compiler 'FOO' for device CPU.*valid: LLVM, CLANG, GCC"): select_compiler("CPU", CPU_PAIRS, "CPU_CC")

def _no_clang(monkeypatch):
  real = shutil.which
  monkeypatch.setattr(compiler.shutil, "which", lambda tool, *a, **k: None if tool == "clang" else real(tool, *a, **k))

def test_missing_clang_clear_error_others_work(monkeypatch):
  _no_clang(monkeypatch)
  monkeypatch.setenv("CPU_CC", "CLANG")
  with pytest.raises(DeviceError, match=r"clang not found; install it with `apt-get install clang`"): select_compiler("CPU", CPU_PAIRS, "CPU_CC")
  if shutil.which("gcc") is None: pytest.skip("gcc not found on PATH")
  monkeypatch.setenv("CPU_CC", "GCC")
  pair, renderer, comp, _ = select_compiler("CPU", CPU_PAIRS, "CPU_CC")
  assert pair.name == "GCC" and isinstance(comp, compiler.GCCCompiler)
  # with LLVM switched off, the default order skips the missing clang and lands on gcc, recording why
  monkeypatch.delenv("CPU_CC")
  monkeypatch.setenv("CPU_LLVM", "0")
  pair, _, _, errors = select_compiler("CPU", CPU_PAIRS, "CPU_CC")
  assert pair.name == "GCC" and "clang not found" in errors["CLANG"]

def test_default_prefers_llvm(monkeypatch):
  pytest.importorskip("llvmlite")
  for v in ("CPU_CC", "CPU_LLVM", "CPU_CLANG", "CPU_GCC"): monkeypatch.delenv(v, raising=False)
  assert select_compiler("CPU", CPU_PAIRS, "CPU_CC")[0].name == "LLVM"

def test_pair_switch(monkeypatch):
  if shutil.which("gcc") is None: pytest.skip("gcc not found on PATH")
  monkeypatch.delenv("CPU_CC", raising=False)
  monkeypatch.setenv("CPU_GCC", "1")
  assert select_compiler("CPU", CPU_PAIRS, "CPU_CC")[0].name == "GCC"

def test_plugin_module_is_light():
  import subprocess, sys, os
  code = "import sys, tinygrad_cpu.plugin as p; print(p.tinygrad_devices()[0]); print('llvmlite' in sys.modules, 'tinygrad_cpu.renderer' in sys.modules)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  assert out.returncode == 0, out.stderr
  assert "name='CPU', priority=50" in out.stdout and out.stdout.strip().endswith("False False")
