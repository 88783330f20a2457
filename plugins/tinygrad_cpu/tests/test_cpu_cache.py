"""The compile cache on the CPU device, end to end: it holds machine code that a new process loads without compiling,\nkeyed by the host CPU's features; a damaged cached program is recompiled, never loaded."""
import os, sys, shutil, sqlite3, subprocess
import numpy as np
import pytest

RUN = "from tinygrad import Tensor; print((Tensor.arange(1000).float()*3+1).sum().item())"
WANT = float((np.arange(1000, dtype=np.float32) * 3 + 1).sum())

def _run(db, cc, code=RUN):
  env = {**os.environ, "CACHEDB": str(db), "CPU_CC": cc, "DEV": "CPU", "CACHELEVEL": "1"}
  return subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env, timeout=300)

def _compile_rows(conn):
  from tinygrad.diskcache import TABLE
  return conn.execute(f"SELECT rowid, val FROM \"{TABLE}\" WHERE ns='compile'").fetchall()

@pytest.mark.parametrize("cc", ["LLVM", "CLANG", "GCC"])
def test_damaged_cached_program_is_recompiled(tmp_path, cc):
  _cc_available(cc)
  db = tmp_path / "cache.db"
  first = _run(db, cc)
  assert first.returncode == 0, first.stderr
  conn = sqlite3.connect(db)   # flip one byte in the middle of every cached program; the database itself stays intact
  from tinygrad.diskcache import TABLE
  rows = _compile_rows(conn)
  assert rows, "nothing was cached"
  for rowid, val in rows:
    conn.execute(f'UPDATE "{TABLE}" SET val=? WHERE rowid=?', (val[:len(val)//2] + bytes([val[len(val)//2] ^ 0xFF]) + val[len(val)//2+1:], rowid))
  conn.commit()
  conn.close()
  second = _run(db, cc)
  assert second.returncode == 0, second.stderr
  assert float(first.stdout.split()[-1]) == float(second.stdout.split()[-1]) == WANT
  assert "damaged" in second.stderr and str(db) in second.stderr

# the second process counts compiles, and any LLVM code generation (parsing bitcode, emitting an object) is an error
WARM = """
import llvmlite.binding as llvm
from tinygrad_cpu import compiler
calls = []
for cls in (compiler.LLVMCompiler, compiler.CCompiler):
  orig = cls.compile
  cls.compile = lambda self, src, orig=orig: calls.append(src) or orig(self, src)
def no_codegen(*a, **kw): raise AssertionError("LLVM generated code for a cached kernel")
llvm.parse_bitcode = no_codegen
llvm.TargetMachine.emit_object = no_codegen
""" + RUN + "\nprint('compiles', len(calls))"

def _cc_available(cc):
  if cc == "LLVM": pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install llvmlite)")
  elif shutil.which(cc.lower()) is None: pytest.skip(f"{cc.lower()} not found on PATH (apt-get install {cc.lower()})")

@pytest.mark.parametrize("cc", ["LLVM", "CLANG", "GCC"])
def test_cache_holds_machine_code(tmp_path, cc):
  _cc_available(cc)
  db = tmp_path / "cache.db"
  first = _run(db, cc)
  assert first.returncode == 0, first.stderr
  conn = sqlite3.connect(db)
  vals = [v for _, v in _compile_rows(conn)]
  conn.close()
  # ELF machine code for this host: a relocatable object (LLVM, loaded by MCJIT's linker) or a shared object (C)
  assert vals and all(v[:4] == b"\x7fELF" and int.from_bytes(v[16:18], "little") == (1 if cc == "LLVM" else 3) for v in vals)
  second = _run(db, cc, WARM)
  assert second.returncode == 0, second.stderr
  assert float(second.stdout.split()[-3]) == WANT and second.stdout.split()[-2:] == ["compiles", "0"]

def _counted(comp, calls):
  orig = comp.compile
  comp.compile = lambda src: calls.append(src) or orig(src)
  return comp

@pytest.mark.parametrize("cc", ["LLVM", "CLANG", "GCC"])
def test_other_cpu_features_miss_the_cache(tmp_path, monkeypatch, cc):
  # a cache copied to a CPU with other features must miss (its code could use instructions this CPU lacks)
  _cc_available(cc)
  from tinygrad import diskcache
  from tinygrad_cpu import compiler
  from tinygrad_cpu.renderer import ClangRenderer, LLVMRenderer
  from _cpu_kernels import add_kernel
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  diskcache.reset()
  make = {"LLVM": compiler.LLVMCompiler, "CLANG": compiler.ClangCompiler, "GCC": compiler.GCCCompiler}[cc]
  src = (LLVMRenderer() if cc == "LLVM" else ClangRenderer()).render(add_kernel(16), "k")
  calls: list[str] = []
  try:
    _counted(make(), calls).compile_cached(src)
    _counted(make(), calls).compile_cached(src)
    assert len(calls) == 1, "the second compiler on the same host should hit the cache"
    if cc == "LLVM":
      triple, cpu, features = compiler.llvm_host()
      monkeypatch.setattr(compiler, "llvm_host", lambda: (triple, cpu, features.replace("+sse2", "-sse2") + ",-avx512f"))
    else: monkeypatch.setattr(compiler, "_host_cpu", lambda: "another-cpu")
    _counted(make(), calls).compile_cached(src)
    assert len(calls) == 2, "a compiler for other CPU features reused this CPU's machine code"
  finally: diskcache.reset()
