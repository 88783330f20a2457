"""CPU compilers: C -> shared object with clang or gcc, and LLVM IR -> optimized bitcode with llvmlite (JIT-loaded by the runtime)."""
from __future__ import annotations
import os, shutil, subprocess, tempfile, functools, hashlib
from typing import Any
from tinygrad.device import Compiler, CompileError

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
    r = subprocess.run([self.path, "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else "unknown"
  def compile(self, src: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tinygrad_cpu_") as tmp:
      out = os.path.join(tmp, "kernel.so")
      r = subprocess.run([self.path, "-x", "c", "-", *self.args, "-o", out], input=src.encode(), capture_output=True)
      if r.returncode != 0: raise CompileError(f"{self.tool} failed (exit {r.returncode}):\n{r.stderr.decode(errors='replace').strip()}", src)
      with open(out, "rb") as f: return f.read()
  def disassemble(self, lib: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
      f.write(lib)
      f.flush()
      return subprocess.run(["objdump", "-d", f.name], capture_output=True, text=True).stdout

class ClangCompiler(CCompiler):
  tool = "clang"
  install_hint = "apt-get install clang"

class GCCCompiler(CCompiler):
  tool = "gcc"
  install_hint = "apt-get install gcc"

def llvm_target_machine() -> Any:
  """A new TargetMachine for the host (llvmlite is imported here, on first use, never at plugin load). Not shared: an MCJIT
  engine takes ownership of the one it is given and frees it with itself."""
  import llvmlite.binding as llvm
  llvm.initialize_native_target()
  llvm.initialize_native_asmprinter()
  target = llvm.Target.from_triple(llvm.get_process_triple())
  return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2,
                                      reloc="pic", codemodel="jitdefault")

class LLVMCompiler(Compiler):
  """LLVM IR -> verified, O2-optimized LLVM bitcode for the host CPU; the runtime JIT-compiles it with MCJIT.

  Why bitcode and not an object or shared object: llvmlite can emit an object file, but loading one needs either the
  system linker (the dependency this pair exists to avoid) or our own ELF relocation loader. Bitcode keeps the
  optimization pipeline cacheable on disk; machine code is generated when the runtime loads it (MCJIT). Measured for a
  1024-element add on a loaded 16-core host (tests/bench_cpu_compile.py): compile ~35 ms + load ~50 ms (codegen), vs
  clang ~400 ms and gcc ~200 ms (process start + link) whose load is ~0.2 ms. So LLVM wins cold; C wins once cached.
  """
  def __init__(self, opt: int = 2) -> None:
    import llvmlite.binding as llvm
    self.llvm, self.opt = llvm, opt
    self.tm = llvm_target_machine()
    super().__init__(cachekey=f"compile_cpu_llvm_O{opt}_{self.tm.triple}_{_host_cpu()}")
  def version(self) -> str: return ".".join(map(str, self.llvm.llvm_version_info))
  def compile(self, src: str) -> bytes:
    llvm = self.llvm
    try:
      mod = llvm.parse_assembly(src)
      mod.verify()
    except RuntimeError as e: raise CompileError(f"LLVM rejected the IR: {e}", src) from e
    mod.triple, mod.data_layout = self.tm.triple, str(self.tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=self.opt)
    pb = llvm.create_pass_builder(self.tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod.as_bitcode()
  def disassemble(self, lib: bytes) -> str:
    return str(self.tm.emit_assembly(self.llvm.parse_bitcode(lib)))
