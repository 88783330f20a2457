"""CPU compilers: C -> shared object with clang or gcc, and LLVM IR -> a relocatable object with llvmlite (linked into memory by the runtime)."""
from __future__ import annotations
import os, shutil, tempfile, functools, hashlib, threading
from typing import Any
from tinygrad.plugin_api import Compiler, CompileError, run_tool

@functools.cache
def _host_cpu() -> str:
  # -march=native output depends on the machine: name it in the cache key so a shared cache never mixes hosts
  try:
    with open("/proc/cpuinfo") as f: info = f.read()
    flags = next((l for l in info.splitlines() if l.startswith(("flags", "Features"))), "")
    model = next((l for l in info.splitlines() if l.startswith("model name")), "")
    return hashlib.sha256((model + flags).encode()).hexdigest()[:16]
  except OSError: return os.uname().machine

class CCompiler(Compiler):
  """C source -> the bytes of a shared object, compiled by `tool` in a temporary directory that is always removed."""
  tool = "cc"
  install_hint = "apt-get install gcc"
  parallel_safe = True   # each compile is its own process in its own temporary directory
  # -fwrapv: signed ints wrap (the IR's semantics); -ffp-contract=off: no fused a*b+c, so results match numpy;
  # -fno-math-errno: __builtin_sqrtf becomes one instruction; -lm: exp2/log2/sin builtins may call libm
  args: tuple[str, ...] = ("-O2", "-march=native", "-fPIC", "-shared", "-fwrapv", "-ffp-contract=off", "-fno-math-errno", "-lm")
  def __init__(self) -> None:
    path = shutil.which(self.tool)
    if path is None: raise RuntimeError(f"{self.tool} not found; install it with `{self.install_hint}`")
    self.path = path
    super().__init__(cachekey=f"compile_cpu_{self.tool}_{' '.join(self.args)}_{_host_cpu()}")
  @functools.cache
  def version(self) -> str:
    r = run_tool([self.path, "--version"], text=True)
    return r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else "unknown"
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tinygrad_cpu_") as tmp:
      out = os.path.join(tmp, "kernel.so")
      # (run_tool: a session of its own, so a program whose SIGINT handler goes on keeps its compile; in the terminal's
      # process group clang died with the Ctrl-C and the realize failed)
      r = run_tool([self.path, "-x", "c", "-", *self.args, "-o", out], input=src.encode())
      if r.returncode != 0: raise CompileError(f"{self.tool} failed (exit {r.returncode}):\n{r.stderr.decode(errors='replace').strip()}", src)
      with open(out, "rb") as f: return f.read()
  def disassemble(self, lib: bytes) -> str: return _objdump(lib)

def _objdump(lib: bytes) -> str:
  if shutil.which("objdump") is None: raise RuntimeError("objdump not found; install it with `apt-get install binutils`")
  with tempfile.NamedTemporaryFile(suffix=".o") as f:
    f.write(lib)
    f.flush()
    return run_tool(["objdump", "-d", f.name], text=True).stdout

class ClangCompiler(CCompiler):
  tool = "clang"
  install_hint = "apt-get install clang"

class GCCCompiler(CCompiler):
  tool = "gcc"
  install_hint = "apt-get install gcc"

_llvm_init_lock = threading.Lock()
@functools.cache
def llvm_host() -> tuple[str, str, str]:
  """(triple, cpu name, cpu features) the host's machine code is built for (llvmlite imported here, on first use)."""
  import llvmlite.binding as llvm
  with _llvm_init_lock:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
  return llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()

def llvm_target_machine(opt: int = 2) -> Any:
  """A new TargetMachine for the host. Not shared: an MCJIT engine takes ownership of the one it is given and frees it with
  itself, and one compiling thread's machine is not another's."""
  import llvmlite.binding as llvm
  triple, cpu, features = llvm_host()
  return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features, opt=opt, reloc=llvm_reloc(), codemodel="jitdefault")

def llvm_reloc() -> str:
  """The relocation model of the kernels' objects. On x86-64, static with the JIT's (large) code model: a kernel addresses
  its constants and calls by absolute address (R_X86_64_64), which lets many kernels' objects share one engine
  (runtime._SharedEngine); position-independent code's GOT-relative relocations do not resolve right there. Elsewhere
  position-independent, each object in an engine of its own."""
  return "static" if llvm_host()[0].startswith("x86_64") else "pic"

# llvmlite holds one process-wide lock around every call into LLVM (binding/ffi.py), from the days of one global LLVMContext.
# A compile here owns everything it touches (its LLVMContext and module, a pass builder with its own instrumentation, the
# thread's TargetMachine), which LLVM allows on many threads at once ("Threads and LLVM": one context per thread), so the
# four heavy calls skip that lock on a thread inside LLVMCompiler.compile; every other call (the runtime's MCJIT loads on the
# global context, disposals run by the garbage collector on any thread) keeps it. Locked, compiles took turns and a kernel's
# load waited for the compile in progress: ViT-Ti's cold first call 2.61 -> 2.05 s, GPT-2 tiny decode's 1.97 -> 1.22 s (2 cores).
_UNLOCKED_CALLS = ("LLVMPY_ParseAssembly", "LLVMPY_VerifyModule", "LLVMPY_RunNewModulePassManager", "LLVMPY_TargetMachineEmitToMemory")
_compiling = threading.local()

class _OwnCallsUnlocked:
  """An llvmlite function wrapper that takes the lock unless this thread is compiling (`_compiling.on`)."""
  def __init__(self, wrapped: Any): self._wrapped, self._cfn = wrapped, wrapped._cfn
  def __getattr__(self, name: str) -> Any: return getattr(self._wrapped, name)
  def __call__(self, *args: Any) -> Any: return self._cfn(*args) if getattr(_compiling, "on", False) else self._wrapped(*args)

@functools.cache
def _unlock_own_calls() -> bool:
  """Install the wrappers (once); False when this llvmlite's internals differ (compiles then stay serialized: slower, same code)."""
  try:
    from llvmlite.binding import ffi
    fntab = ffi.lib._fntab
    for name in _UNLOCKED_CALLS:
      w = getattr(ffi.lib, name)   # (fills fntab)
      if not isinstance(w, _OwnCallsUnlocked): fntab[name] = _OwnCallsUnlocked(w) if hasattr(w, "_cfn") and fntab.get(name) is w else w
    return all(isinstance(fntab.get(n), _OwnCallsUnlocked) for n in _UNLOCKED_CALLS)
  except (ImportError, AttributeError): return False

class LLVMCompiler(Compiler):
  """LLVM IR -> verified, optimized machine code for the host CPU: a relocatable ELF object the runtime links into memory
  with MCJIT's loader (no codegen at load, no system linker), so a cached kernel loads in ~1 ms instead of running LLVM's
  backend again in every new process.

  Thread-safe: each call parses into its own LLVMContext and each thread has its own TargetMachine, so compiles run beside
  each other and beside the Python thread rendering the next kernels (ctypes releases the GIL; llvmlite's lock is skipped
  for a compile's own calls, _OwnCallsUnlocked).
  `opt` is the middle end's speed level (the pass pipeline), `codegen_opt` the backend's. Why O2/O2: measured on the 35
  kernels of bench/compile.py's two models (3.4 MB of IR, 2026-12-01, 2 cores): passes ~4.4 s + object emission ~2.4 s;
  O1, O3, backend O1/O3 and O2 without LLVM's loop/SLP vectorizers or unrolling all compile within +-10% of O2 (the time
  is spread over InstCombine, IndVarSimplify, unrolling, GVN), while without unrolling a 3x3 conv runs 34 -> 43 ms and a
  hand-picked list (sroa, instcombine, simplifycfg) 34 -> 49 ms; O0 compiles 3x faster but halves matmul GFLOPS (no
  mem2reg). The lever left is the IR's size (index arithmetic: ~200 sdiv/srem in a conv kernel), not the pipeline.
  """
  parallel_safe = True
  def __init__(self, opt: int = 2, codegen_opt: int = 2) -> None:
    import llvmlite.binding as llvm
    self.llvm, self.opt, self.codegen_opt = llvm, opt, codegen_opt
    self._local = threading.local()
    triple, cpu, features = llvm_host()
    # the code is built for this cpu and these features: a cache copied to another CPU misses instead of faulting
    host = hashlib.sha256(f"{triple}|{cpu}|{features}".encode()).hexdigest()[:16]
    super().__init__(cachekey=f"compile_cpu_llvm_obj{llvm_reloc()}_O{opt}_c{codegen_opt}_{triple}_{cpu}_{host}")
  @property
  def tm(self) -> Any:
    if (tm := getattr(self._local, "tm", None)) is None: tm = self._local.tm = llvm_target_machine(self.codegen_opt)
    return tm
  def version(self) -> str: return ".".join(map(str, self.llvm.llvm_version_info))
  def compile(self, src: str) -> bytes:
    llvm, tm = self.llvm, self.tm
    ctx = llvm.create_context()   # LLVM contexts are not thread-safe: one per compile
    _unlock_own_calls()
    _compiling.on = True
    try:
      try:
        mod = llvm.parse_assembly(src, context=ctx)
        mod.verify()
      except RuntimeError as e: raise CompileError(f"LLVM rejected the IR: {e}", src) from e
      mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
      pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=self.opt))
      pb.getModulePassManager().run(mod, pb)
      return bytes(tm.emit_object(mod))
    finally: _compiling.on = False
  def disassemble(self, lib: bytes) -> str: return _objdump(lib)
