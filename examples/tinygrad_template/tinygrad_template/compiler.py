"""C source -> a shared object, with the system C compiler (`cc`, or TEMPLATE_CC_PATH)."""
import os, shutil, subprocess, tempfile, functools
from tinygrad.plugin_api import Compiler, CompileError
from tinygrad_template import ENV_PREFIX

def cc_path() -> str | None: return shutil.which(os.environ.get(f"{ENV_PREFIX}_CC_PATH", "cc"))

def probe() -> tuple[bool, str]:
  """Cheap availability check for the device: is there a C compiler?"""
  return (True, "") if cc_path() else (False, f"no C compiler: install gcc or clang, or set {ENV_PREFIX}_CC_PATH")

class TemplateCompiler(Compiler):
  # -fwrapv: signed ints wrap, as the IR says; -ffp-contract=off: no fused multiply-add, so results match numpy
  args = ("-O1", "-shared", "-fPIC", "-fwrapv", "-ffp-contract=off", "-lm")
  def __init__(self) -> None:
    path = cc_path()
    if path is None: raise RuntimeError(f"no C compiler found: install gcc or clang, or set {ENV_PREFIX}_CC_PATH")
    self.path = path
    # the cache key names the plugin (the rename recipe renames it) and every flag that changes the binary
    super().__init__(cachekey=f"tinygrad_template {' '.join(self.args)}")
  @functools.cache
  def version(self) -> str:
    return subprocess.run([self.path, "--version"], capture_output=True, text=True, start_new_session=True).stdout.split("\n", 1)[0]
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
      out = os.path.join(tmp, "kernel.so")
      # a session of its own: a terminal's Ctrl-C goes to the Python process alone (which kills the compile when it raises),
      # so a program whose SIGINT handler goes on is not left with a compiler killed mid-compile
      r = subprocess.run([self.path, "-x", "c", "-", *self.args, "-o", out], input=src.encode(), capture_output=True, start_new_session=True)
      if r.returncode != 0: raise CompileError(f"{self.path} failed:\n{r.stderr.decode(errors='replace')}", src)
      with open(out, "rb") as f: return f.read()
