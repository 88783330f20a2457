"""Every conformance kernel (tests/data/conformance_kernels.pkl, made by tinygrad.conformance.collect) renders, and compiles to an
HSACO: our AMDGPU LLVM IR with llvmlite + lld for gfx90a, gfx942 (CDNA, wave64) and gfx1100 (RDNA3, wave32), one object
per kernel and one lld link per target; HIP C with clang for gfx90a (all kernels in one translation unit).
AMD_COMPILE_STRIDE=n takes every n-th kernel (default 1: all)."""
import functools, json, os, pickle, re, shutil, subprocess, sys, tempfile
import pytest
from tinygrad.codegen import get_program
from tinygrad_amd.renderer import HIPRenderer, AMDLLVMRenderer
from _amd_kernels import lds_reverse_kernel, global_index_kernel

LLVM_ARCHS = ["gfx90a", "gfx942", "gfx1100"]

@functools.cache
def kernels() -> list:
  sys.setrecursionlimit(max(sys.getrecursionlimit(), 200000))
  with open(os.path.join(os.path.dirname(__file__), "data", "conformance_kernels.pkl"), "rb") as f: asts = pickle.load(f)
  return asts[::int(os.environ.get("AMD_COMPILE_STRIDE", "1"))]

@functools.cache
def llvm_sources(wave: int) -> list[str]:
  """Every kernel's LLVM IR, renamed k<i> (the source depends on the target only through its wave width)."""
  ren = AMDLLVMRenderer("gfx90a" if wave == 64 else "gfx1100")
  srcs = [get_program(ast, ren).src for ast in kernels()] + [ren.render(k(), "hand") for k in (lds_reverse_kernel, global_index_kernel)]
  return [re.sub(r"@(\w+)\(ptr", f"@k{i}(ptr", s, count=1) for i, s in enumerate(srcs)]

@functools.cache
def hip_module() -> str:
  """One translation unit: the prelude and each distinct helper once, then every kernel renamed k<i>."""
  ren = HIPRenderer("gfx90a")
  blocks: dict[str, None] = {}
  bodies = []
  srcs = [get_program(ast, ren).src for ast in kernels()] + [ren.render(k(), "hand") for k in (lds_reverse_kernel, global_index_kernel)]
  for i, src in enumerate(srcs):
    j = src.index('extern "C"')
    for block in re.split(r"\n(?=__device__|typedef )", src[:j].strip()):
      if block: blocks[block] = None
    bodies.append(re.sub(r"\)\)\) (\w+)\(", f"))) k{i}(", src[j:], count=1))
  return "\n".join(list(blocks) + bodies)

def test_corpus_is_there(): assert len(kernels()) > 100 or os.environ.get("AMD_COMPILE_STRIDE")

@pytest.mark.parametrize("arch", LLVM_ARCHS)
def test_llvm_compiles_every_kernel(arch):
  pytest.importorskip("llvmlite")
  from tinygrad_amd.compiler import AMDLLVMCompiler, find_lld
  try: find_lld()
  except RuntimeError as e: pytest.skip(str(e))
  cc = AMDLLVMCompiler(arch)
  srcs = llvm_sources(64 if arch.startswith("gfx9") else 32)
  with tempfile.TemporaryDirectory() as tmp:
    objs = []
    for i, src in enumerate(srcs):
      objs.append(os.path.join(tmp, f"k{i}.o"))
      with open(objs[-1], "wb") as f: f.write(cc.to_object(src))
    r = subprocess.run([cc.lld, "-shared", "--no-undefined", *objs, "-o", os.path.join(tmp, "all.hsaco")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:3000]
    with open(os.path.join(tmp, "all.hsaco"), "rb") as f: lib = f.read()
  assert lib[:4] == b"\x7fELF" and all(f"k{i}.kd".encode() in lib for i in range(len(srcs)))   # a kernel descriptor each

def test_llvm_compile_one_kernel_end_to_end():
  pytest.importorskip("llvmlite")
  from tinygrad_amd.compiler import AMDLLVMCompiler, find_lld
  try: find_lld()
  except RuntimeError as e: pytest.skip(str(e))
  lib = AMDLLVMCompiler("gfx942").compile(AMDLLVMRenderer("gfx942").render(lds_reverse_kernel(), "lds"))
  assert lib[:4] == b"\x7fELF" and b"lds.kd" in lib and b"amdgcn-amd-amdhsa--gfx942" in lib

def test_hip_clang_compiles_every_kernel():
  from tinygrad_amd.compiler import HIPClangCompiler
  try: cc = HIPClangCompiler("gfx90a")
  except RuntimeError as e: pytest.skip(str(e))
  lib = cc.compile(hip_module())
  assert lib[:4] == b"\x7fELF" and b"k0.kd" in lib

def test_compile_errors_show_tool_message_and_source():
  from tinygrad.device import CompileError
  from tinygrad_amd.compiler import AMDLLVMCompiler, HIPClangCompiler
  pytest.importorskip("llvmlite")
  with pytest.raises(CompileError) as e: AMDLLVMCompiler("gfx90a").compile("define amdgpu_kernel void @k() { ret i32 %undefined_x }")
  assert "undefined_x" in str(e.value) and "---- source ----" in str(e.value)
  if shutil.which("clang") is None: return
  with pytest.raises(CompileError) as e: HIPClangCompiler("gfx90a").compile('extern "C" __attribute__((global)) void k() { undeclared_x = 1; }')
  assert "undeclared_x" in e.value.diagnostics

@pytest.mark.parametrize("make", ["AMDLLVMCompiler", "HIPClangCompiler", "HIPRTCCompiler", "ComgrCompiler", "HIPCompiler"])
def test_unsupported_target_refused_before_any_tool(make, monkeypatch):
  import tinygrad_amd.compiler as c
  def no_tools(*a, **k): raise AssertionError("a tool was called for an unsupported target")
  monkeypatch.setattr(c, "load_hiprtc", no_tools)
  monkeypatch.setattr(c, "load_comgr", no_tools)
  monkeypatch.setattr(c, "find_lld", no_tools)
  monkeypatch.setattr(c, "run_tool", no_tools)
  with pytest.raises(ValueError, match=r"unsupported gfx target 'gfx1999'; supported: gfx908, .*gfx1201"): getattr(c, make)("gfx1999")

# ---- tensor cores: a TC matmul kernel compiles to an HSACO and the matrix instruction is in the code ----

TC_INSTRUCTIONS = {("gfx1100", "half"): "v_wmma_f32_16x16x16_f16", ("gfx1100", "bf16"): "v_wmma_f32_16x16x16_bf16",
                   ("gfx90a", "half"): "v_mfma_f32_16x16x16f16", ("gfx90a", "bf16"): "v_mfma_f32_16x16x16bf16_1k",
                   ("gfx942", "half"): "v_mfma_f32_16x16x16_f16", ("gfx942", "bf16"): "v_mfma_f32_16x16x16_bf16",
                   ("gfx950", "bf16"): "v_mfma_f32_16x16x16_bf16", ("gfx908", "half"): "v_mfma_f32_16x16x16f16",
                   ("gfx1151", "half"): "v_wmma_f32_16x16x16_f16"}

def tc_matmul_src(ren, dt: str) -> str:
  """A batched matmul (2 x 32x48 @ 48x32) whose reduce the heuristics put on the renderer's tensor core."""
  from tinygrad import Tensor, dtypes
  from tinygrad.uop import Ops
  d = {"half": dtypes.half, "bf16": dtypes.bfloat16}[dt]
  ast = (Tensor.empty(2, 32, 48, dtype=d, device="NULL") @ Tensor.empty(2, 48, 32, dtype=d, device="NULL")).schedule()[-1].ast
  p = get_program(ast, ren)
  assert sum(u.op is Ops.WMMA for u in p.uops) >= 1, "the heuristics did not use the tensor core"
  return p.src

@pytest.mark.parametrize("arch,dt", list(TC_INSTRUCTIONS))
def test_llvm_tensor_core_compiles(arch, dt):
  pytest.importorskip("llvmlite")
  from tinygrad_amd.compiler import AMDLLVMCompiler, find_lld
  try: find_lld()
  except RuntimeError as e: pytest.skip(str(e))
  cc = AMDLLVMCompiler(arch)
  src = tc_matmul_src(AMDLLVMRenderer(arch), dt)
  lib = cc.compile(src)
  assert lib[:4] == b"\x7fELF" and f"amdgcn-amd-amdhsa--{arch}".encode() in lib
  # K = 48: three K tiles, run by the instruction in a loop or unrolled
  assert sum(ln.split()[0] == TC_INSTRUCTIONS[(arch, dt)] for ln in cc.to_assembly(src).splitlines() if ln.strip()) >= 1

@pytest.mark.parametrize("dt", ["half", "bf16"])
def test_hip_clang_mfma_compiles(dt):
  from tinygrad_amd.compiler import HIPClangCompiler
  try: cc = HIPClangCompiler("gfx90a")
  except RuntimeError as e: pytest.skip(str(e))
  lib = cc.compile(tc_matmul_src(HIPRenderer("gfx90a"), dt))
  try: dis = cc.disassemble(lib)
  except RuntimeError as e: pytest.skip(str(e))
  assert TC_INSTRUCTIONS[("gfx90a", dt)] in dis

def test_hip_clang_wmma_compiles():
  from tinygrad_amd.compiler import HIPClangCompiler
  try: cc = HIPClangCompiler("gfx1100")
  except RuntimeError as e: pytest.skip(str(e))   # Debian's clang 14 does not know gfx1100 (checked before compiling)
  lib = cc.compile(tc_matmul_src(HIPRenderer("gfx1100"), "half"))
  assert lib[:4] == b"\x7fELF" and b"gfx1100" in lib

# ---- comgr (Debian: libamd-comgr2, ROCm 5.2: targets up to gfx1036 and gfx90a) ----

def _comgr(arch: str = "gfx90a"):
  from tinygrad_amd.compiler import ComgrCompiler
  try: return ComgrCompiler(arch)
  except RuntimeError as e: pytest.skip(str(e))

def elf_code_object(lib: bytes) -> tuple[str, set[str]]:
  """(the AMDGPU target in its note, its kernel-descriptor symbols) of an HSACO; AssertionError when it is not a
  coherent 64-bit little-endian AMDGPU ELF (sections inside the file, a symbol table, kernel descriptors)."""
  import struct
  assert lib[:4] == b"\x7fELF" and lib[4] == 2 and lib[5] == 1, "not a 64-bit little-endian ELF"
  e_machine, = struct.unpack_from("<H", lib, 0x12)
  assert e_machine == 224, f"e_machine {e_machine}, not EM_AMDGPU (224)"
  shoff, = struct.unpack_from("<Q", lib, 0x28)
  shentsize, shnum, shstrndx = struct.unpack_from("<HHH", lib, 0x3A)
  secs = [struct.unpack_from("<IIQQQQIIQQ", lib, shoff + i * shentsize) for i in range(shnum)]
  for s in secs: assert s[1] == 8 or s[4] + s[5] <= len(lib), "a section lies outside the file"   # 8: SHT_NOBITS
  names = secs[shstrndx]
  def name(off: int, tab) -> str: return lib[tab[4] + off:lib.index(b"\0", tab[4] + off)].decode()
  by_name = {name(s[0], names): s for s in secs}
  symtab, strtab = by_name[".symtab"], by_name[".strtab"]
  syms = {name(struct.unpack_from("<I", lib, symtab[4] + i * 24)[0], strtab) for i in range(symtab[5] // 24)}
  target = re.search(rb"amdgcn-amd-amdhsa--(gfx\w+)", lib)
  assert target is not None, "no target in the code object's note"
  return target.group(1).decode(), {s for s in syms if s.endswith(".kd")}

def test_comgr_compiles_the_corpus_like_clang():
  from tinygrad_amd.compiler import HIPClangCompiler
  cc = _comgr("gfx90a")
  src = hip_module()
  got = elf_code_object(cc.compile(src))
  try: clang = HIPClangCompiler("gfx90a")
  except RuntimeError as e: pytest.skip(f"comgr compiled; no clang to compare with: {e}")
  want = elf_code_object(clang.compile(src))
  assert got[0] == want[0] == "gfx90a"
  assert got[1] == want[1] and len(got[1]) == len(kernels()) + 2   # the same kernels, each with its descriptor

def test_comgr_refuses_targets_it_does_not_know():
  from tinygrad_amd.compiler import ComgrCompiler, comgr_worker
  _comgr()
  if "gfx1100" in json.loads(comgr_worker().info)["isas"]: pytest.skip("this comgr knows gfx1100")
  with pytest.raises(RuntimeError, match=r"comgr \d+\.\d+ .* does not know gfx1100; it knows .*gfx90a"): ComgrCompiler("gfx1100")

def test_comgr_missing_library_is_named(monkeypatch):
  # what comgr's worker process reports (and ComgrCompiler raises) when the library is missing
  import tinygrad_amd.compiler as c
  monkeypatch.setattr(c, "library_candidates", lambda name: [f"/nonexistent/lib{name}.so.2"])
  c.load_comgr.cache_clear()
  try:
    with pytest.raises(RuntimeError, match=r"amd_comgr not found \(/nonexistent/libamd_comgr.so.2\); install it: apt-get install libamd-comgr2"): c.ComgrLibrary()
  finally: c.load_comgr.cache_clear()

def test_comgr_survives_environment_changes():
  # comgr read the environment through a second libc (a dlmopen namespace) whose `environ` still pointed at the array the
  # first os.environ[...] = ... after loading had freed: its getenv in amd_comgr_do_action segfaulted the process
  _comgr()
  code = """if 1:
    import os
    from tinygrad_amd.compiler import ComgrCompiler
    os.environ["TG_FIRST"] = "1"
    cc = ComgrCompiler("gfx90a")
    for i in range(50): os.environ[f"TG_VAR_{i}"] = "x" * 100
    lib = cc.compile('extern "C" __attribute__((global)) void k(float* a) { a[0] = 1.0f; }')
    print(lib[:4] == b"\\x7fELF")"""
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, "CACHELEVEL": "0"})
  assert r.returncode == 0 and r.stdout.strip() == "True", (r.returncode, r.stdout, r.stderr[-2000:])

def test_comgr_compile_error_shows_log_and_source():
  from tinygrad.device import CompileError
  with pytest.raises(CompileError) as e: _comgr().compile('extern "C" __attribute__((global)) void k() { undeclared_x = 1; }')
  assert "undeclared_x" in e.value.diagnostics and "comgr" in e.value.diagnostics and "---- source ----" in str(e.value)

def test_hip_compiler_order_and_override(monkeypatch):
  import tinygrad_amd.compiler as c
  made = []
  def fake(name: str, ok: bool):
    def make(arch: str):
      made.append(name)
      if not ok: raise RuntimeError(f"{name} is not here")
      return name
    return make
  monkeypatch.setattr(c, "HIP_COMPILERS", {"hiprtc": fake("hiprtc", False), "comgr": fake("comgr", True), "clang": fake("clang", True)})
  monkeypatch.delenv("AMD_HIPCC", raising=False)
  assert c.HIPCompiler("gfx90a") == "comgr" and made == ["hiprtc", "comgr"]   # hiprtc > comgr > clang
  monkeypatch.setenv("AMD_HIPCC", "clang")
  assert c.HIPCompiler("gfx90a") == "clang"
  monkeypatch.setenv("AMD_HIPCC", "hiprtc")
  with pytest.raises(RuntimeError, match="hiprtc is not here"): c.HIPCompiler("gfx90a")   # forced: its error is the error
  monkeypatch.setenv("AMD_HIPCC", "nvcc")
  with pytest.raises(ValueError, match="AMD_HIPCC='nvcc': valid values are hiprtc, comgr, clang"): c.HIPCompiler("gfx90a")
  monkeypatch.setattr(c, "HIP_COMPILERS", {n: fake(n, False) for n in ("hiprtc", "comgr", "clang")})
  monkeypatch.delenv("AMD_HIPCC")
  with pytest.raises(RuntimeError, match="no HIP C compiler for gfx90a: hiprtc: hiprtc is not here; comgr: comgr is not here; clang: clang is not here"):
    c.HIPCompiler("gfx90a")

def test_rocm_libraries_are_never_loaded_from_the_current_directory(tmp_path, monkeypatch):
  # a relative ROCM_PATH or LD_LIBRARY_PATH entry names the cwd: a library planted there must not be picked
  from tinygrad_amd.compiler import library_candidates
  from tinygrad_amd.runtime import find_libhip
  (tmp_path / "rocm" / "lib").mkdir(parents=True)
  (tmp_path / "rel").mkdir()
  for f in (tmp_path / "rocm" / "lib" / "libhiprtc.so.6", tmp_path / "rocm" / "lib" / "libamdhip64.so", tmp_path / "rel" / "libamdhip64.so"):
    f.write_bytes(b"not a library")
  monkeypatch.chdir(tmp_path)
  monkeypatch.setenv("ROCM_PATH", "rocm")
  monkeypatch.setenv("LD_LIBRARY_PATH", "rel::.")
  in_cwd = lambda p: p is not None and "/" in p and os.path.realpath(p).startswith(str(tmp_path))
  assert not [p for p in library_candidates("hiprtc") if in_cwd(p)]
  assert not in_cwd(find_libhip()), f"picked the cwd's {find_libhip()}"
  monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))   # an absolute ROCM_PATH is the user's explicit choice
  assert str(tmp_path / "rocm" / "lib" / "libhiprtc.so.6") in library_candidates("hiprtc")
  assert find_libhip() == str(tmp_path / "rocm" / "lib" / "libamdhip64.so")
