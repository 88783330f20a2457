"""AMD compilers, each to an HSACO (the ELF code object hipModuleLoadData takes) for one gfx target:
- AMDLLVMCompiler: our AMDGPU LLVM IR -> object with llvmlite (in process, ~6 ms a kernel) -> HSACO with lld;
- HIPRTCCompiler: HIP C with ROCm's hiprtc (ROCm machines; it links the code object itself);
- ComgrCompiler: HIP C with ROCm's comgr library (ctypes, in a worker process; Debian's libamd-comgr2 knows targets up to
  gfx1036/gfx90a);
- HIPClangCompiler: HIP C with clang (`-x hip --cuda-device-only -nogpulib -nogpuinc`; clang calls lld).

The target is checked against renderer.AMD_ARCHS in every constructor, before any tool sees it (hiprtc given a target it
does not know kills the process). Every compiler keeps a*b+c unfused (-ffp-contract=off; the IR carries no `contract`
flags), so results match numpy, as on the CPU and NV devices. Tool versions and the target are in every cache key.
"""
from __future__ import annotations
import ctypes, ctypes.util, functools, glob, json, os, re, shutil, tempfile
from typing import Any, Callable
from tinygrad.plugin_api import Compiler, CompileError, CompilerWorker, UOp, run_tool
from tinygrad_amd.renderer import check_arch

class AMDCompiler(Compiler):
  """Base of the AMD compilers. `rendered` (the renderer's source -> uops record) and `kernels` (binary -> uops) are set
  by the mock driver only: it cannot run an HSACO, so it looks up the uops the binary was rendered from."""
  rendered: dict[str, list[UOp]] | None = None
  kernels: dict[bytes, list[UOp]] | None = None
  def __init__(self, arch: str, cachekey: str):
    check_arch(arch)
    self.arch = arch.split(":")[0]
    super().__init__(cachekey)
  def compile_cached(self, src: str, refresh: bool = False) -> bytes:
    lib = super().compile_cached(src, refresh)
    if self.kernels is not None and self.rendered is not None and src in self.rendered: self.kernels[lib] = self.rendered[src]
    return lib
  def disassemble(self, lib: bytes) -> str:
    tool = next((t for t in ("llvm-objdump", "llvm-objdump-19", "llvm-objdump-16", "llvm-objdump-14") if shutil.which(t)), None)
    if tool is None: raise RuntimeError("llvm-objdump not found (apt-get install llvm)")
    with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
      f.write(lib)
      f.flush()
      return run_tool([tool, "-d", f"--mcpu={self.arch}", f.name], text=True).stdout

# ---- lld: object -> HSACO ----

LLD_NAMES = ["ld.lld", "ld.lld-19", "ld.lld-18", "ld.lld-17", "ld.lld-16", "ld.lld-15", "ld.lld-14", "/opt/rocm/llvm/bin/ld.lld"]

@functools.cache
def find_lld() -> tuple[str, int]:
  """(path, major version) of an lld that links AMDGPU objects; RuntimeError naming the fix when there is none."""
  for name in LLD_NAMES:
    path = shutil.which(name) or (name if os.path.isabs(name) and os.path.exists(name) else None)
    if path is None: continue
    out = run_tool([path, "--version"], text=True).stdout
    m = re.search(r"LLD (\d+)", out)
    if m: return path, int(m.group(1))
  raise RuntimeError(f"lld not found (tried {', '.join(LLD_NAMES)}); install it: apt-get install lld")

def code_object_version(lld_major: int) -> int:
  """The code-object version the linker understands: lld 14/15 know v4 at most, 16+ know v5 (ROCm 6's default)."""
  return 400 if lld_major < 16 else 500

def link_hsaco(obj: bytes, src: str) -> bytes:
  path, _ = find_lld()
  with tempfile.TemporaryDirectory(prefix="tinygrad_amd_") as tmp:
    o, out = os.path.join(tmp, "kernel.o"), os.path.join(tmp, "kernel.hsaco")
    with open(o, "wb") as f: f.write(obj)
    r = run_tool([path, "-shared", "--no-undefined", o, "-o", out], text=True)   # (its own session: a terminal's Ctrl-C reaches only us)
    if r.returncode != 0: raise CompileError(f"{path} failed (exit {r.returncode}):\n{(r.stderr + r.stdout).strip()}", src)
    with open(out, "rb") as f: return f.read()

# LLVM 22's optimizing AMDGPU codegen runs for minutes on gfx11 (seconds on gfx9) for a straight-line kernel of ~10k
# instructions (a long elementwise chain in the conformance suite); kernels longer than this many lines of IR get the
# O0 instruction selector and register allocator (their IR is still optimized at O2)
BIG_KERNEL_LINES = 5000

class AMDLLVMCompiler(AMDCompiler):
  """AMDGPU LLVM IR -> HSACO: llvmlite parses, optimizes (O2) and emits the object for `arch`; lld links it."""
  def __init__(self, arch: str = "gfx1100", opt: int = 2):
    check_arch(arch)
    import llvmlite.binding as llvm
    self.llvm, self.opt = llvm, opt
    self.lld, lld_major = find_lld()
    self.cov = code_object_version(lld_major)
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    super().__init__(arch, f"compile_amd_llvm_O{opt}_{arch}_cov{self.cov}")
    target = llvm.Target.from_triple("amdgcn-amd-amdhsa")
    self.tm, self.tm_big = (target.create_target_machine(cpu=self.arch, features="", opt=o, reloc="pic") for o in (opt, 0))
    self.lld_version = f"lld {lld_major}"
  def version(self) -> str: return f"llvm {'.'.join(map(str, self.llvm.llvm_version_info))}, {self.lld_version}"
  def to_object(self, src: str) -> bytes:
    """The relocatable object (before lld) for `src`."""
    return bytes(self._emit(src, "emit_object"))
  def to_assembly(self, src: str) -> str:
    """The assembly LLVM makes for `src` (what to_object assembles; Debian's llvm-objdump 14 cannot read gfx11 code)."""
    return str(self._emit(src, "emit_assembly"))
  def _emit(self, src: str, how: str) -> Any:
    llvm = self.llvm
    flags = f'!llvm.module.flags = !{{!0}}\n!0 = !{{i32 1, !"amdhsa_code_object_version", i32 {self.cov}}}\n'
    try:
      mod = llvm.parse_assembly(src + flags)
      mod.verify()
    except RuntimeError as e: raise CompileError(f"LLVM IR for {self.arch} does not parse: {e}", src) from e
    mod.data_layout = str(self.tm.target_data)
    pb = llvm.create_pass_builder(self.tm, llvm.create_pipeline_tuning_options(speed_level=self.opt))
    pb.getModulePassManager().run(mod, pb)
    try: return getattr(self.tm_big if src.count("\n") > BIG_KERNEL_LINES else self.tm, how)(mod)
    except RuntimeError as e: raise CompileError(f"LLVM cannot compile for {self.arch}: {e}", src) from e
  def compile(self, src: str) -> bytes: return link_hsaco(self.to_object(src), src)

# ---- HIP C ----

_HIP_FLAGS = ["-O3", "-ffp-contract=off", "-nogpulib", "-nogpuinc", "-fno-gpu-rdc", "--no-gpu-bundle-output"]
CLANG_NAMES = ["clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14", "/opt/rocm/llvm/bin/clang"]

@functools.cache
def tool_version(path: str) -> str:
  r = run_tool([path, "--version"], text=True)
  return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else "unknown"

@functools.cache
def clang_targets(path: str) -> tuple[str, ...]:
  """The gfx targets this clang knows (`--print-supported-cpus` for amdgcn); empty when it cannot tell."""
  r = run_tool([path, "-target", "amdgcn-amd-amdhsa", "-nogpulib", "--print-supported-cpus"], text=True)
  return tuple(ln.strip() for ln in (r.stdout + r.stderr).splitlines() if re.fullmatch(r"gfx\w+", ln.strip()))

class HIPClangCompiler(AMDCompiler):
  """HIP C -> HSACO with clang (no ROCm needed: our HIP C includes no header and calls no device library)."""
  def __init__(self, arch: str = "gfx1100"):
    check_arch(arch)
    clang = next((p for p in (shutil.which(n) or (n if os.path.isabs(n) and os.path.exists(n) else None) for n in CLANG_NAMES) if p), None)
    if clang is None: raise RuntimeError(f"clang not found (tried {', '.join(CLANG_NAMES[:3])} ...); install it: apt-get install clang lld")
    self.clang: str = clang
    known = clang_targets(clang)
    if known and arch.split(":")[0] not in known:
      raise RuntimeError(f"{tool_version(clang)} does not know {arch.split(':')[0]} (it knows {', '.join(k for k in known if k.startswith(('gfx9', 'gfx1')))}); "
                         "a newer clang does, or AMD_CC=LLVM")
    find_lld()   # clang links the device code with lld
    super().__init__(arch, f"compile_amd_hipclang_{arch}")
  def version(self) -> str: return tool_version(self.clang)
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tinygrad_amd_") as tmp:
      inp, out = os.path.join(tmp, "kernel.hip"), os.path.join(tmp, "kernel.hsaco")
      with open(inp, "w") as f: f.write(src)
      cmd = [self.clang, "-x", "hip", "--cuda-device-only", f"--offload-arch={self.arch}", *_HIP_FLAGS, inp, "-o", out]
      env = {**os.environ, "PATH": f"{os.path.dirname(find_lld()[0])}:{os.environ.get('PATH', '')}"}
      r = run_tool(cmd, text=True, env=env)
      if r.returncode != 0: raise CompileError(f"clang ({self.version()}) for {self.arch} failed (exit {r.returncode}):\n{(r.stderr + r.stdout).strip()}", src)
      with open(out, "rb") as f: return f.read()

def library_candidates(name: str) -> list[str]:
  """Where lib<name>.so may be: $ROCM_PATH/lib (newest version first), then the system's library path."""
  from tinygrad_amd.runtime import rocm_path
  out = sorted(glob.glob(os.path.join(rocm_path(), "lib", f"lib{name}.so*")), reverse=True)
  if (sysl := ctypes.util.find_library(name)): out.append(sysl)
  return out

def open_library(name: str, fix: str) -> tuple[Any, str]:
  """(the first lib<name>.so that loads, its path); RuntimeError naming what was tried and `fix`."""
  tried = []
  for path in dict.fromkeys(library_candidates(name)):
    try: return ctypes.CDLL(path), path
    except OSError: tried.append(path)
  raise RuntimeError(f"{name} not found ({', '.join(tried) or f'no lib{name}.so in $ROCM_PATH/lib or the system'}); {fix}")

@functools.cache
def load_hiprtc() -> Any:
  """The hiprtc library (ctypes); RuntimeError naming what was tried and the fix."""
  lib, _ = open_library("hiprtc", "install ROCm (hip-runtime-amd)")
  lib.hiprtcGetErrorString.restype = ctypes.c_char_p
  return lib

class HIPRTCCompiler(AMDCompiler):
  """HIP C -> HSACO with ROCm's hiprtc."""
  def __init__(self, arch: str = "gfx1100"):
    check_arch(arch)   # before hiprtc is even loaded
    self.lib = load_hiprtc()
    v = ctypes.c_int()
    w = ctypes.c_int()
    self._check(self.lib.hiprtcVersion(ctypes.byref(v), ctypes.byref(w)), "hiprtcVersion")
    self.hiprtc_version = f"{v.value}.{w.value}"
    self.options = [f"--offload-arch={arch.split(':')[0]}", "-O3", "-ffp-contract=off", "-nogpuinc"]
    super().__init__(arch, f"compile_amd_hiprtc_{arch}")
  def version(self) -> str: return f"hiprtc {self.hiprtc_version}"
  def _check(self, status: int, what: str, src: str | None = None, log: str = "") -> None:
    if status != 0:
      raise CompileError(f"hiprtc {what} failed: {self.lib.hiprtcGetErrorString(status).decode()}" + (f"\n{log}" if log else ""), src)
  def compile(self, src: str) -> bytes:
    prog = ctypes.c_void_p()
    self._check(self.lib.hiprtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.hip", 0, None, None), "hiprtcCreateProgram", src)
    try:
      opts = (ctypes.c_char_p * len(self.options))(*[o.encode() for o in self.options])
      status = self.lib.hiprtcCompileProgram(prog, len(self.options), opts)
      size = ctypes.c_size_t()
      self.lib.hiprtcGetProgramLogSize(prog, ctypes.byref(size))
      log = ctypes.create_string_buffer(size.value + 1)
      self.lib.hiprtcGetProgramLog(prog, log)
      self._check(status, f"compile for {self.arch} ({self.version()})", src, log.value.decode(errors="replace").strip())
      self._check(self.lib.hiprtcGetCodeSize(prog, ctypes.byref(size)), "hiprtcGetCodeSize", src)
      out = ctypes.create_string_buffer(size.value)
      self._check(self.lib.hiprtcGetCode(prog, out), "hiprtcGetCode", src)
      return out.raw
    finally: self.lib.hiprtcDestroyProgram(ctypes.byref(prog))

# ---- comgr: ROCm's code-object manager library (Debian: libamd-comgr2), driven through its C API with ctypes ----
# It runs in a worker process (core's CompilerWorker), never in this one: a crash in it fails one compile; its clang,
# which registers its options into its LLVM, never meets POCL's libclang-cpp (the CL device) in one process ("registered
# more than once" aborts); and it reads the environment as this process sets it. Loaded into a dlmopen namespace here,
# as it was, it kept a second libc whose `environ` still pointed at the array a later os.environ[...] = ... had freed: its
# getenv("AMD_COMGR_REDIRECT_LOGS") in amd_comgr_do_action then segfaulted (make test's comgr crash).

class _Handle(ctypes.Structure): _fields_ = [("handle", ctypes.c_uint64)]   # amd_comgr_data_t, _data_set_t, _action_info_t
# the enum values comgr's header gives (stable since comgr 2.0)
COMGR_LANGUAGE_HIP, COMGR_DATA_SOURCE, COMGR_DATA_LOG, COMGR_DATA_EXECUTABLE = 4, 1, 5, 8
COMGR_COMPILE_SOURCE_TO_BC, COMGR_CODEGEN_BC_TO_RELOCATABLE, COMGR_LINK_RELOCATABLE_TO_EXECUTABLE = 2, 6, 9

@functools.cache
def load_comgr() -> tuple[Any, str, str, tuple[str, ...]]:
  """(library, its path, "comgr MAJOR.MINOR", the gfx targets it knows); RuntimeError naming what was tried and the fix.
  Called in the comgr worker process (ComgrLibrary), not in a process that renders and runs kernels."""
  lib, path = open_library("amd_comgr", "install it: apt-get install libamd-comgr2 (Debian/Ubuntu), or ROCm")
  major, minor, count = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
  lib.amd_comgr_get_version(ctypes.byref(major), ctypes.byref(minor))
  if lib.amd_comgr_get_isa_count(ctypes.byref(count)) != 0: raise RuntimeError(f"comgr ({path}): amd_comgr_get_isa_count failed")
  isas = []
  for i in range(count.value):
    name = ctypes.c_char_p()
    if lib.amd_comgr_get_isa_name(ctypes.c_size_t(i), ctypes.byref(name)) == 0 and name.value: isas.append(name.value.decode().split("--")[-1])
  return lib, path, f"comgr {major.value}.{minor.value}", tuple(isas)

class ComgrLibrary:
  """comgr as its worker process holds it: `worker_info` says what it is, `worker_compile(b"arch\\nsource")` compiles."""
  options = ["-O3", "-ffp-contract=off", "-nogpulib", "-nogpuinc"]
  def __init__(self) -> None:
    self.lib, self.path, self.comgr_version, self.isas = load_comgr()
  def worker_info(self) -> bytes: return json.dumps({"path": self.path, "version": self.comgr_version, "isas": self.isas}).encode()
  def worker_compile(self, payload: bytes) -> bytes:
    arch, _, src = payload.decode().partition("\n")
    self.arch = arch
    return self.compile(src)
  def _check(self, status: int, what: str, src: str | None = None, log: str = "") -> None:
    if status == 0: return
    msg = ctypes.c_char_p()
    self.lib.amd_comgr_status_string(status, ctypes.byref(msg))
    raise CompileError(f"{self.comgr_version} {what} for {self.arch} failed: {(msg.value or b'').decode()}" + (f"\n{log}" if log else ""), src)
  def _data(self, dset: _Handle, kind: int) -> list[bytes]:
    n = ctypes.c_size_t()
    self._check(self.lib.amd_comgr_action_data_count(dset, kind, ctypes.byref(n)), "amd_comgr_action_data_count")
    out = []
    for i in range(n.value):
      data, size = _Handle(), ctypes.c_size_t()
      self._check(self.lib.amd_comgr_action_data_get_data(dset, kind, ctypes.c_size_t(i), ctypes.byref(data)), "amd_comgr_action_data_get_data")
      try:
        self._check(self.lib.amd_comgr_get_data(data, ctypes.byref(size), None), "amd_comgr_get_data")
        buf = ctypes.create_string_buffer(size.value)
        self._check(self.lib.amd_comgr_get_data(data, ctypes.byref(size), buf), "amd_comgr_get_data")
        out.append(buf.raw[:size.value])
      finally: self.lib.amd_comgr_release_data(data)
    return out
  def compile(self, src: str) -> bytes:
    lib, sets, info, data = self.lib, [_Handle() for _ in range(4)], _Handle(), _Handle()
    made: list[_Handle] = []
    try:
      for d in sets:
        self._check(lib.amd_comgr_create_data_set(ctypes.byref(d)), "amd_comgr_create_data_set")
        made.append(d)
      self._check(lib.amd_comgr_create_data(COMGR_DATA_SOURCE, ctypes.byref(data)), "amd_comgr_create_data")
      code = src.encode()
      self._check(lib.amd_comgr_set_data(data, ctypes.c_size_t(len(code)), code), "amd_comgr_set_data")
      self._check(lib.amd_comgr_set_data_name(data, b"kernel.hip"), "amd_comgr_set_data_name")
      self._check(lib.amd_comgr_data_set_add(sets[0], data), "amd_comgr_data_set_add")
      self._check(lib.amd_comgr_create_action_info(ctypes.byref(info)), "amd_comgr_create_action_info")
      self._check(lib.amd_comgr_action_info_set_language(info, COMGR_LANGUAGE_HIP), "amd_comgr_action_info_set_language")
      self._check(lib.amd_comgr_action_info_set_isa_name(info, f"amdgcn-amd-amdhsa--{self.arch}".encode()), "amd_comgr_action_info_set_isa_name")
      self._check(lib.amd_comgr_action_info_set_logging(info, True), "amd_comgr_action_info_set_logging")
      opts = (ctypes.c_char_p * len(self.options))(*[o.encode() for o in self.options])
      self._check(lib.amd_comgr_action_info_set_option_list(info, opts, ctypes.c_size_t(len(self.options))), "amd_comgr_action_info_set_option_list")
      for i, (action, what) in enumerate([(COMGR_COMPILE_SOURCE_TO_BC, "compile"), (COMGR_CODEGEN_BC_TO_RELOCATABLE, "codegen"),
                                          (COMGR_LINK_RELOCATABLE_TO_EXECUTABLE, "link")]):
        status = lib.amd_comgr_do_action(action, info, sets[i], sets[i+1])
        if status != 0: self._check(status, what, src, b"\n".join(self._data(sets[i+1], COMGR_DATA_LOG)).decode(errors="replace").strip())
      exe = self._data(sets[3], COMGR_DATA_EXECUTABLE)
      if len(exe) != 1: raise CompileError(f"{self.comgr_version} link for {self.arch} made {len(exe)} code objects, expected 1", src)
      return exe[0]
    finally:
      if data.handle: lib.amd_comgr_release_data(data)
      if info.handle: lib.amd_comgr_destroy_action_info(info)
      for d in made: lib.amd_comgr_destroy_data_set(d)

@functools.cache
def comgr_worker() -> CompilerWorker:
  """The one comgr worker process of this process (started on first use; every ComgrCompiler's calls queue on it)."""
  return CompilerWorker("tinygrad_amd.compiler:ComgrLibrary", name="comgr")

class ComgrCompiler(AMDCompiler):
  """HIP C -> HSACO with comgr: source -> bitcode -> relocatable -> executable, no device library linked (our HIP C
  needs none), in comgr's worker process (see above). The target is checked against the targets this comgr reports before
  any action runs (Debian's ROCm 5.2 comgr knows gfx600 to gfx1036 and gfx90a: no gfx942, no RDNA3)."""
  def __init__(self, arch: str = "gfx90a"):
    check_arch(arch)
    self.worker = comgr_worker()
    info = json.loads(self.worker.info)
    self.path, self.comgr_version, isas = info["path"], info["version"], info["isas"]
    base = arch.split(":")[0]
    if base not in isas:
      raise RuntimeError(f"{self.comgr_version} ({self.path}) does not know {base}; it knows {', '.join(i for i in isas if i.startswith('gfx9') or i.startswith('gfx1'))}"
                         " (AMD_HIPCC=clang, or AMD_CC=LLVM)")
    super().__init__(arch, f"compile_amd_comgr_{base}")
  def version(self) -> str: return self.comgr_version
  def compile(self, src: str) -> bytes: return self.worker.call("compile", f"{self.arch}\n{src}".encode(), src)

# the HIP pair's compilers, in order of preference (AMD_HIPCC=<name> forces one)
HIP_COMPILERS: dict[str, Callable[[str], AMDCompiler]] = {"hiprtc": HIPRTCCompiler, "comgr": ComgrCompiler, "clang": HIPClangCompiler}

def HIPCompiler(arch: str = "gfx1100") -> AMDCompiler:
  """The HIP C compiler this machine has for `arch`: hiprtc where ROCm is installed, else comgr where it knows the target,
  else clang. AMD_HIPCC=hiprtc|comgr|clang forces one (its error is then the error)."""
  choice = os.environ.get("AMD_HIPCC", "").lower()
  if choice and choice not in HIP_COMPILERS: raise ValueError(f"AMD_HIPCC={choice!r}: valid values are {', '.join(HIP_COMPILERS)}")
  if choice: return HIP_COMPILERS[choice](arch)
  errors = []
  for name, make in HIP_COMPILERS.items():
    try: return make(arch)
    except RuntimeError as e: errors.append(f"{name}: {e}")
  raise RuntimeError(f"no HIP C compiler for {arch}: {'; '.join(errors)}")
