"""NV compilers: CUDA C -> CUBIN with NVRTC (the PyPI wheel) or nvcc; our PTX -> CUBIN with ptxas or the driver's JIT.

Why CUBIN and not PTX: PTX carries an ISA version that a newer toolchain raises (NVRTC 13.5 writes PTX 9.5) and that an
older driver or ptxas rejects; a CUBIN for the device's exact sm arch loads on any driver that supports the arch. The
tool's version and the arch are in every cache key, so an upgraded NVRTC never reuses another version's binaries.
Every compiler passes fmad=false (no fused a*b+c): results match numpy, as the CPU device's -ffp-contract=off does.
"""
from __future__ import annotations
import ctypes, ctypes.util, functools, glob, os, shutil, sys, tempfile
from typing import Any
from tinygrad.plugin_api import Compiler, CompileError, UOp, run_tool

class NVCompiler(Compiler):
  """Base of the NV compilers. `rendered` (the renderer's source -> uops record) and `kernels` (binary -> uops) are set
  by the mock driver only: its module loader cannot run a CUBIN, so it looks up the uops the binary was rendered from."""
  rendered: dict[str, list[UOp]] | None = None
  kernels: dict[bytes, list[UOp]] | None = None
  def __init__(self, arch: str, cachekey: str):
    self.arch = arch
    super().__init__(cachekey)
  def compile_cached(self, src: str, refresh: bool = False) -> bytes:
    lib = super().compile_cached(src, refresh)
    if self.kernels is not None and self.rendered is not None and src in self.rendered: self.kernels[lib] = self.rendered[src]
    return lib

# ---- NVRTC (ctypes on the library from the nvidia-cuda-nvrtc wheel, or the system's) ----

def site_dirs() -> list[str]:
  """The installed-package directories on sys.path: absolute site-/dist-packages entries only. The empty entry and
  relative ones mean the current directory, where anyone may have put a `nvidia/.../libnvrtc.so` to be loaded."""
  return [p for p in dict.fromkeys(sys.path) if os.path.isabs(p) and os.path.basename(os.path.normpath(p)) in ("site-packages", "dist-packages")]

def cuda_path() -> str:
  """$CUDA_PATH when it is an absolute path, else /usr/local/cuda (a relative one would load tools from the cwd)."""
  p = os.environ.get("CUDA_PATH", "/usr/local/cuda")
  return p if os.path.isabs(p) else "/usr/local/cuda"

def _nvrtc_candidates() -> list[str]:
  out: list[str] = []
  for base in site_dirs():   # the wheels: nvidia/cu13/lib (13.x) and nvidia/cuda_nvrtc/lib (12.x), newest first
    for pat in ("nvidia/cu13/lib/libnvrtc.so.*", "nvidia/cuda_nvrtc/lib/libnvrtc.so.*"):
      out += sorted((p for p in glob.glob(os.path.join(base, pat)) if "builtins" not in p and ".alt." not in p), reverse=True)
  if (sysl := ctypes.util.find_library("nvrtc")): out.append(sysl)
  return out + [os.path.join(cuda_path(), "lib64", "libnvrtc.so")]

@functools.cache
def load_nvrtc() -> Any:
  """The NVRTC library (ctypes); raises RuntimeError naming what was tried and the fix."""
  tried = []
  for path in dict.fromkeys(_nvrtc_candidates()):
    try: lib = ctypes.CDLL(path)
    except OSError:
      tried.append(path)
      continue
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib
  raise RuntimeError(f"NVRTC not found (tried {', '.join(tried[:4])}); install it with `pip install nvidia-cuda-nvrtc`")

class NVRTCCompiler(NVCompiler):
  """CUDA C -> CUBIN for `arch` with NVRTC."""
  def __init__(self, arch: str = "sm_80"):
    self.lib = load_nvrtc()
    major, minor = ctypes.c_int(), ctypes.c_int()
    self._check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    self.nvrtc_version = f"{major.value}.{minor.value}"
    self.options = [f"--gpu-architecture={arch}", "--fmad=false", "-default-device"]
    super().__init__(arch, f"compile_nv_nvrtc_{arch}")
  def version(self) -> str: return self.nvrtc_version
  def _check(self, status: int, what: str, src: str | None = None, log: str = "") -> None:
    if status != 0:
      raise CompileError(f"NVRTC {what} failed: {self.lib.nvrtcGetErrorString(status).decode()}" + (f"\n{log}" if log else ""), src)
  def compile(self, src: str) -> bytes:
    prog = ctypes.c_void_p()
    self._check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None), "nvrtcCreateProgram", src)
    try:
      opts = (ctypes.c_char_p * len(self.options))(*[o.encode() for o in self.options])
      status = self.lib.nvrtcCompileProgram(prog, len(self.options), opts)
      size = ctypes.c_size_t()
      self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
      log = ctypes.create_string_buffer(size.value)
      self.lib.nvrtcGetProgramLog(prog, log)
      self._check(status, f"compile for {self.arch} (NVRTC {self.nvrtc_version})", src, log.value.decode(errors="replace").strip())
      self._check(self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize", src)
      out = ctypes.create_string_buffer(size.value)
      self._check(self.lib.nvrtcGetCUBIN(prog, out), "nvrtcGetCUBIN", src)
      return out.raw
    finally: self.lib.nvrtcDestroyProgram(ctypes.byref(prog))
  def disassemble(self, lib: bytes) -> str: return cuobjdump(lib)

# ---- command-line tools ----

def _tool(name: str) -> str:
  path = shutil.which(name) or next((p for p in [os.path.join(cuda_path(), "bin", name)] if os.path.exists(p)), None)
  if path is None: raise RuntimeError(f"{name} not found on PATH or in $CUDA_PATH/bin; install the CUDA toolkit")
  return path

@functools.cache
def tool_version(path: str) -> str:
  r = run_tool([path, "--version"], text=True)
  return r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else "unknown"

def _run_tool(cmd: list[str], src: str, suffix: str, what: str) -> bytes:
  with tempfile.TemporaryDirectory(prefix="tinygrad_nv_") as tmp:
    inp, out = os.path.join(tmp, "kernel" + suffix), os.path.join(tmp, "kernel.cubin")
    with open(inp, "w") as f: f.write(src)
    r = run_tool([*cmd, inp, "-o", out], text=True)   # (its own session: a terminal's Ctrl-C reaches only this process)
    if r.returncode != 0: raise CompileError(f"{what} failed (exit {r.returncode}):\n{(r.stderr + r.stdout).strip()}", src)
    with open(out, "rb") as f: return f.read()

def cuobjdump(lib: bytes) -> str:
  with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
    f.write(lib)
    f.flush()
    return run_tool([_tool("cuobjdump"), "-sass", f.name], text=True).stdout

class NVCCCompiler(NVCompiler):
  """CUDA C -> CUBIN for `arch` with the toolkit's nvcc (about 200 ms a kernel: a process and a host compiler pass)."""
  def __init__(self, arch: str = "sm_80"):
    self.path = _tool("nvcc")
    self.args = ["-cubin", f"-arch={arch}", "--fmad=false", "-O3"]
    super().__init__(arch, f"compile_nv_nvcc_{arch}")
  def version(self) -> str: return tool_version(self.path)
  def compile(self, src: str) -> bytes: return _run_tool([self.path, *self.args], src, ".cu", f"nvcc ({self.version()}) for {self.arch}")
  def disassemble(self, lib: bytes) -> str: return cuobjdump(lib)

class PTXCompiler(NVCompiler):
  """Our PTX -> CUBIN with ptxas when it is installed (about 13 ms a kernel); else (or with NV_PTX_JIT=1) with the GPU
  driver's own JIT through `dev`, the NVDevice, which must be given then. Our PTX declares the lowest ISA version that
  knows the arch. Either way a bad kernel fails here with the tool's log, never later at module load."""
  def __init__(self, arch: str = "sm_80", dev: Any = None):
    self.ptxas = None if os.environ.get("NV_PTX_JIT", "0") == "1" else (shutil.which("ptxas") or None)
    self.dev = dev
    if self.ptxas is None and dev is None:
      raise RuntimeError("PTX needs ptxas (the CUDA toolkit) or a GPU whose driver JIT-compiles PTX (NV_PTX_JIT=1)")
    super().__init__(arch, f"compile_nv_ptx_{'ptxas' if self.ptxas else 'jit'}_{arch}")
  def version(self) -> str: return tool_version(self.ptxas) if self.ptxas else f"driver-jit-{self.dev.driver_version}"
  def compile(self, src: str) -> bytes:
    if self.ptxas is None:
      from tinygrad_nv.runtime import jit_link
      self.dev.make_current()
      return jit_link(self.dev.cu, src)
    return _run_tool([self.ptxas, f"-arch={self.arch}", "-O3"], src, ".ptx", f"ptxas ({self.version()}) for {self.arch}")
  def disassemble(self, lib: bytes) -> str: return cuobjdump(lib)
