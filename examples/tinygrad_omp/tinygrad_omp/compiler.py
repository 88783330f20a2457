"""C source -> a shared object with the system C compiler and OpenMP (`cc -fopenmp`, or TG_OMP_CC_PATH)."""
import os, shutil, subprocess, tempfile, functools
from tinygrad.plugin_api import Compiler, CompileError
from tinygrad_omp import ENV_PREFIX

def cc_path() -> str | None: return shutil.which(os.environ.get(f"{ENV_PREFIX}_CC_PATH", "cc"))

def probe() -> tuple[bool, str]:
  """Cheap availability check: a C compiler on PATH (whether it has OpenMP is checked when the compiler is made)."""
  return (True, "") if cc_path() else (False, f"no C compiler: install gcc, or set {ENV_PREFIX}_CC_PATH")

class OMPCompiler(Compiler):
  # -fwrapv: signed ints wrap, as the IR says; -ffp-contract=off: no fused multiply-add, so results match numpy
  args = ("-O2", "-fopenmp", "-shared", "-fPIC", "-fwrapv", "-ffp-contract=off", "-lm")
  def __init__(self) -> None:
    path = cc_path()
    if path is None: raise RuntimeError(f"no C compiler found: install gcc, or set {ENV_PREFIX}_CC_PATH")
    self.path = path
    super().__init__(cachekey=f"tinygrad_omp {' '.join(self.args)}")
    try: self.compile("int tinygrad_omp_check(void) { int n = 0;\n#pragma omp parallel reduction(+:n)\n n += 1;\n return n; }")
    except CompileError as e: raise RuntimeError(f"{path} has no OpenMP (-fopenmp): install gcc with libgomp, or clang with libomp\n{e}") from None
  @functools.cache
  def version(self) -> str:
    return subprocess.run([self.path, "--version"], capture_output=True, text=True).stdout.split("\n", 1)[0]
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
      out = os.path.join(tmp, "kernel.so")
      r = subprocess.run([self.path, "-x", "c", "-", *self.args, "-o", out], input=src.encode(), capture_output=True)
      if r.returncode != 0: raise CompileError(f"{self.path} failed:\n{r.stderr.decode(errors='replace')}", src)
      with open(out, "rb") as f: return f.read()
