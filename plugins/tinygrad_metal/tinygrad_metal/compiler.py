"""The offline Metal compiler: MSL -> .metallib with Xcode's toolchain (`xcrun -sdk macosx metal`, then `metallib`).

The default METAL pair has no compiler: the runtime hands the source to the Metal framework, which compiles it when the
kernel is loaded. This pair (METAL_CC=XCRUN) compiles ahead of time, so the disk cache holds binaries and a shader error
shows up at compile time with the toolchain's full diagnostics.
"""
from __future__ import annotations
import os, shutil, tempfile, functools
from tinygrad.plugin_api import Compiler, CompileError, run_tool

class MetalXcrunCompiler(Compiler):
  """MSL source -> the bytes of a .metallib, through `xcrun metal` (fast math off, as in the framework pair)."""
  args: tuple[str, ...] = ("-fno-fast-math",)
  def __init__(self) -> None:
    xcrun = shutil.which("xcrun")
    if xcrun is None: raise RuntimeError("xcrun not found: the offline Metal compiler needs Xcode or its command line tools (xcode-select --install)")
    r = run_tool([xcrun, "-sdk", "macosx", "--find", "metal"], text=True)
    if r.returncode != 0: raise RuntimeError(f"xcrun cannot find the metal compiler ({r.stderr.strip() or 'exit ' + str(r.returncode)}); install Xcode")
    self.xcrun = xcrun
    super().__init__(cachekey=f"compile_metal_xcrun_{' '.join(self.args)}")
  @functools.cache
  def version(self) -> str:
    r = run_tool([self.xcrun, "-sdk", "macosx", "metal", "--version"], text=True)
    return r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else "unknown"
  def _run(self, argv: list[str], src: str) -> None:
    r = run_tool([self.xcrun, "-sdk", "macosx", *argv], text=True)   # (its own session: a terminal's Ctrl-C reaches only this process)
    if r.returncode != 0: raise CompileError(f"xcrun {argv[0]} failed (exit {r.returncode}):\n{r.stderr.strip()}", src)
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tinygrad_metal_") as tmp:
      msl, air, lib = (os.path.join(tmp, f"kernel.{ext}") for ext in ("metal", "air", "metallib"))
      with open(msl, "w") as f: f.write(src)
      self._run(["metal", *self.args, "-c", msl, "-o", air], src)
      self._run(["metallib", air, "-o", lib], src)
      with open(lib, "rb") as f: return f.read()
