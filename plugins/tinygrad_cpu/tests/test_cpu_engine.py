"""LLVM kernels' objects share MCJIT engines (runtime._SharedEngine): each kernel in a shared engine computes what it does
alone, kernels whose symbols clash or whose relocations would resolve wrong beside others get an engine of their own."""
import numpy as np
import pytest
llvm = pytest.importorskip("llvmlite.binding", reason="llvmlite is not installed (pip install llvmlite)")

def _ir(name: str, consts: tuple[float, ...]) -> str:
  # y = x * c + c with the constants in a constant pool (a vector of distinct values is not an immediate), and a `_task`
  # that calls the kernel (a position-independent object takes its address from a GOT entry, as the renderer's does)
  vec = ", ".join(f"float {c!r}" for c in consts)
  return f"""define void @{name}(ptr noalias %a, ptr noalias %b, i32 %core, i32 %n) nounwind {{
  %x = load <4 x float>, ptr %b
  %y = fmul <4 x float> %x, <{vec}>
  %z = fadd <4 x float> %y, <{vec}>
  store <4 x float> %z, ptr %a
  ret void
}}
define void @{name}_task(ptr %a, ptr %b) nounwind {{
  call void @{name}(ptr %a, ptr %b, i32 0, i32 1)
  ret void
}}
@{name}_work = constant i64 0
"""

def _object(name: str, consts: tuple[float, ...], reloc: str | None = None) -> bytes:
  from tinygrad_cpu.compiler import LLVMCompiler, llvm_host
  if reloc is None: return LLVMCompiler().compile(_ir(name, consts))
  triple, cpu, features = llvm_host()   # a position-independent object, as an older cache may hold
  tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features, reloc=reloc, codemodel="jitdefault")
  mod = llvm.parse_assembly(_ir(name, consts))
  mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
  return bytes(tm.emit_object(mod))

def _run(prg, consts):
  x = np.arange(1, 5, dtype=np.float32)
  out = np.zeros(4, np.float32)
  prg(out.ctypes.data, x.ctypes.data)
  np.testing.assert_array_equal(out, x * np.float32(consts) + np.float32(consts))

@pytest.fixture
def fresh(monkeypatch):
  from tinygrad_cpu.runtime import _SharedEngine
  monkeypatch.setattr(_SharedEngine, "_current", None)
  return _SharedEngine

def _consts(i: int) -> tuple[float, ...]: return (1.5 + i, 2.25 * i, -3.0 - i, 0.125 * (i + 1))

def test_kernels_in_one_engine_each_read_their_own_constants(fresh):
  from tinygrad_cpu.runtime import CPUProgram
  prgs = [CPUProgram(f"k{i}", _object(f"k{i}", _consts(i))) for i in range(6)]
  assert len({id(p.code._engine) for p in prgs}) == 1   # (static objects: all in one engine)
  for i, p in enumerate(prgs): _run(p, _consts(i))

def test_a_full_engine_or_a_clashing_name_starts_another(fresh, monkeypatch):
  from tinygrad_cpu.runtime import CPUProgram
  monkeypatch.setattr(fresh, "ENGINE_OBJECTS", 2)
  a, b, c = (CPUProgram(f"k{i}", _object(f"k{i}", _consts(i))) for i in range(3))
  assert a.code._engine is b.code._engine is not c.code._engine
  d = CPUProgram("k2", _object("k2", _consts(7)))   # a second kernel of that name: not where the first one is
  assert d.code._engine is not c.code._engine
  for p, i in ((a, 0), (b, 1), (c, 2), (d, 7)): _run(p, _consts(i))

@pytest.mark.parametrize("reloc", ["pic", "default"])
def test_objects_with_other_relocations_load_alone(fresh, reloc):
  from tinygrad_cpu.runtime import CPUProgram, elf_object_facts
  libs = [_object(f"p{i}", _consts(i), reloc) for i in range(3)]
  if all(elf_object_facts(lib)[1] for lib in libs): pytest.skip(f"reloc={reloc} gives only absolute relocations on this machine")
  prgs = [CPUProgram(f"p{i}", lib) for i, lib in enumerate(libs)]
  assert len({id(p.code._engine) for p in prgs}) == 3
  for i, p in enumerate(prgs): _run(p, _consts(i))

def test_object_facts():
  from tinygrad_cpu.runtime import elf_object_facts
  syms, shareable = elf_object_facts(_object("kname", _consts(1)))
  assert syms == {"kname", "kname_task", "kname_work"} and shareable
