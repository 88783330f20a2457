"""Golden tests of the rendered C and LLVM IR (no compiler needed)."""
from tinygrad.dtype import dtypes
from tinygrad_cpu.renderer import ClangRenderer, LLVMRenderer
from tinygrad.uop.ops import UOp
from _cpu_kernels import glob, linear, add_kernel, reduce_kernel, gated_kernel, gated_store_kernel, divmod_kernel, cast_kernel, var_kernel, elementwise

def test_c_add_exact():
  assert ClangRenderer().render(add_kernel(16), "E_16") == """\
void E_16(float* restrict data0, float* restrict data1, float* restrict data2, int core_id, int core_count) {
  for (int ridx0 = (int)(((long long)(16)*(core_id))/core_count); ridx0 < (int)(((long long)(16)*(core_id+1))/core_count); ridx0++) {
    float val0 = data1[ridx0];
    float val1 = data2[ridx0];
    data0[ridx0] = (val0+val1);
  }
}
const long long E_16_work = 116LL;
const long long E_16_trips = 16LL;
void E_16_task(void **tg_c[2], int tg_core, int tg_n) { __typeof__(E_16) *volatile tg_f = E_16; tg_f(tg_c[0][0], tg_c[0][1], tg_c[0][2], tg_core, tg_n); }
"""

def test_c_reduce_accumulator():
  src = ClangRenderer().render(reduce_kernel(4, 8), "r_4_8")
  for frag in ["float acc0[1];", "acc0[0] = 0.0f;", "for (int ridx1 = 0; ridx1 < 8; ridx1++) {", "float val1 = data1[((ridx0*8)+ridx1)];",
               "acc0[0] = (val0+val1);", "data0[ridx0] = val2;"]:
    assert frag in src, frag
  # the reduce loop is never split; the outer global loop is
  assert "ridx1 = (int)" not in src and "ridx0 = (int)(((long long)(4)*(core_id))/core_count)" in src

def test_c_gates():
  assert "float val0 = ((ridx0<10)?data1[ridx0]:0.0f);" in ClangRenderer().render(gated_kernel(16, 10), "k")
  assert "if ((ridx0<10)) data0[ridx0] = val0;" in ClangRenderer().render(gated_store_kernel(16, 10), "k")

def test_c_int_division_guarded_only_for_variable_divisors():
  src = ClangRenderer().render(divmod_kernel(16), "k")
  assert "data0[ridx0] = ((val1)==0?0:(val1)==-1?(-val0):(val0/val1));" in src
  assert "data1[ridx0] = ((val1)==0?0:(val1)==-1?0:(val0%val1));" in src
  assert "data0[ridx0] = (val0/3);" in ClangRenderer().render(elementwise(lambda a: a // 3, [dtypes.int32], dtypes.int32, 4), "k")

def test_c_casts_and_narrow_ints():
  assert "data0[ridx0] = ((int)val0);" in ClangRenderer().render(cast_kernel(16), "k")
  src = ClangRenderer().render(elementwise(lambda a, b: (a + b) < a, [dtypes.int8]*2, dtypes.bool, 4), "k")
  assert "_Bool* restrict data0" in src and "(((signed char)(val0+val1))<val0)" in src
  src = ClangRenderer().render(elementwise(lambda a, b: a * b, [dtypes.uint16]*2, dtypes.uint16, 4), "k")
  assert "((unsigned short)(((unsigned int)val0)*((unsigned int)val1)))" in src

def test_c_float_constants():
  r = ClangRenderer()
  assert r.render_const(0.1, dtypes.float32) == "0.10000000149011612f" or r.render_const(0.1, dtypes.float32).startswith("0x")
  assert r.render_const(0.5, dtypes.float32) == "0.5f"
  assert r.render_const(float("inf"), dtypes.float32) == "__builtin_inff()" and r.render_const(float("-inf"), dtypes.float32) == "(-__builtin_inff())"
  assert r.render_const(float("nan"), dtypes.float32) == '__builtin_nanf("")'
  assert r.render_const(0.1, dtypes.float64) == "0.1"
  assert r.render_const(-2**31, dtypes.int32) == "(-2147483647-1)" and r.render_const(7, dtypes.uint64) == "7ull"

def test_c_half_is_emulated():
  src = ClangRenderer().render(elementwise(lambda a, b: a + b, [dtypes.float16]*2, dtypes.float16, 4), "k")
  assert "static inline float __h2f(unsigned short h)" in src and "unsigned short* restrict data0" in src
  assert "data0[ridx0] = __f2h(__h2f(__f2h((val0+val1))));" in src and "float val0 = __h2f(data1[ridx0]);" in src

def test_c_define_var_argument():
  src = ClangRenderer().render(var_kernel(64), "k")
  # a Variable's name behind var_: one called data0, idx0 or int would clash with the kernel's own names otherwise
  assert "(float* restrict data0, float* restrict data1, const int var_n, int core_id, int core_count)" in src
  assert "(long long)(var_n)" in src

def test_llvm_add_and_split():
  src = LLVMRenderer().render(add_kernel(16), "E_16")
  assert "define void @E_16(ptr noalias %data0, ptr noalias %data1, ptr noalias %data2, i32 %core_id, i32 %core_count) nounwind {" in src
  assert "@E_16_work = constant i64 116" in src
  # the pool's task: buffers from ctx's first array, variables from its second, then (core, n); never inlined
  assert "define void @E_16_task(ptr %c, i32 %core, i32 %n) nounwind {" in src and "%a2 = load ptr, ptr %a2p" in src
  assert "call void @E_16(ptr %a0, ptr %a1, ptr %a2, i32 %core, i32 %n) noinline" in src
  var = LLVMRenderer().render(var_kernel(64), "k")
  assert "%v0p = getelementptr i32, ptr %v, i64 0" in var and "call void @k(ptr %a0, ptr %a1, i32 %v0, i32 %core, i32 %n) noinline" in var
  # a kernel that does not split has no task
  out = glob(0, dtypes.float32, 1)
  one = linear(out, out.index(UOp.const(dtypes.index, 0)).store(UOp.const(dtypes.float32, 1.0)))
  c = ClangRenderer().render(one, "k")
  assert "_work = 0" in c and "_task" not in c and "_task" not in LLVMRenderer().render(one, "k")
  for frag in ["%ridx0.addr = alloca i32", "%ridx0 = load i32, ptr %ridx0.addr", "fadd float %val0, %val1", "sdiv i64", "br label %ridx0.head"]:
    assert frag in src, frag
  # the split loop's start is max(start, 0): LLVM's analyses then know it is not negative (values are the same: runs below)
  assert "declare i32 @llvm.smax.i32(i32, i32)" in src and "%split12 = call i32 @llvm.smax.i32(i32 %split5, i32 0)" in src
  assert "store i32 %split12, ptr %ridx0.addr" in src

def test_llvm_reduce_gates_divmod_cast():
  assert "%acc0 = alloca [1 x float], align 16" in LLVMRenderer().render(reduce_kernel(4, 8), "k")
  src = LLVMRenderer().render(gated_kernel(16, 10), "k")
  assert "br i1 %alu0, label %gl0.t, label %gl0.e" in src and "phi float [%val0, %gl0.t], [0x0000000000000000, %ridx0.body]" in src
  src = LLVMRenderer().render(divmod_kernel(16), "k")
  assert "sdiv i32 %val0, %alu" in src and "srem i32 %val0, %alu" in src
  assert "fptosi float %val0 to i32" in LLVMRenderer().render(cast_kernel(16), "k")
  assert "udiv i32 %val0, 3" in LLVMRenderer().render(elementwise(lambda a: a // 3, [dtypes.uint32], dtypes.uint32, 4), "k")

def test_llvm_max_is_nan_aware():
  src = LLVMRenderer().render(elementwise(lambda a, b: a.maximum(b), [dtypes.float32]*2, dtypes.float32, 4), "k")
  assert "fcmp ogt float %val0, %val1" in src and "fcmp uno float %val0, %val0" in src

def test_vector_accesses_carry_the_elements_alignment():
  # an upcast's lanes start at any element (x[1:]): LLVM must not assume the vector's 32 bytes, C's typedef neither
  from tinygrad import Tensor
  from tinygrad.codegen import get_program
  from tinygrad.codegen.opt import Opt, OptOps
  x = Tensor.empty(40, device="NULL")
  ast = (x[1:33] * 2).schedule()[-1].ast
  ir = get_program(ast, LLVMRenderer(), [Opt(OptOps.UPCAST, 0, 8)], compile=False).src
  assert "= load <8 x float>, ptr %idx1, align 4" in ir and "store <8 x float> %alu2, ptr %idx0, align 4" in ir, ir
  c = get_program(ast, ClangRenderer(), [Opt(OptOps.UPCAST, 0, 8)], compile=False).src
  assert "typedef float float8 __attribute__((vector_size(32),aligned(4)));" in c, c

def test_llvm_broadcasts_are_splats_and_zeros_constants():
  # LLVM's compile time goes by the IR's length: a scalar broadcast to an upcast's lanes is two instructions (not one
  # insertelement per lane) and a zero vector is zeroinitializer; the values are checked by running it (test_cpu_run)
  from tinygrad import Tensor
  from tinygrad.codegen import get_program
  from tinygrad.codegen.opt import Opt, OptOps
  x, y = Tensor.empty(40, device="NULL"), Tensor.empty(4, 32, device="NULL")
  ir = get_program((x[1:33] * 2 + x[0:32].sum()).schedule()[-1].ast, LLVMRenderer(), [Opt(OptOps.UPCAST, 0, 8)], compile=False).src
  assert ir.count("insertelement") == 2 and ir.count("shufflevector <8 x float> %vec") == 2, ir
  assert "insertelement <8 x float> poison, float 0x4000000000000000, i32 0" in ir, ir
  ir = get_program(y.sum(1).schedule()[-1].ast, LLVMRenderer(), [Opt(OptOps.UPCAST, 0, 4)], compile=False).src
  assert "store <4 x float> zeroinitializer" in ir, ir

def test_llvm_short_loops_skip_the_loop_vectorizer():
  # a loop of < 16 iterations (LLVM's own minimum trip count, hidden by the split across cores) is marked not to vectorize
  src = LLVMRenderer().render(reduce_kernel(5, 8), "k")
  assert src.count("!llvm.loop") == 2 and '!{!"llvm.loop.vectorize.enable", i1 false}' in src, src
  assert "!llvm.loop" not in LLVMRenderer().render(add_kernel(16), "k")

def test_llvm_nsw_only_where_bounds_prove_no_wrap():
  # index math whose bounds fit is nsw (LLVM then widens and folds it cheaply); a sum of loaded values may wrap: never nsw
  src = LLVMRenderer().render(reduce_kernel(4, 8), "k")
  assert "mul nsw i32 %ridx0, 8" in src and "add nsw i32 %ridx1, 1" in src, src
  src = LLVMRenderer().render(elementwise(lambda a, b: a + b * 3, [dtypes.int32]*2, dtypes.int32, 4), "k")
  assert "= add i32 %val0, %alu" in src and "= mul i32 %val1, 3" in src and "nsw i32 %val" not in src, src
  src = LLVMRenderer().render(elementwise(lambda a: (a & 255) * 4 + 1, [dtypes.int32], dtypes.int32, 4), "k")
  assert "mul nsw i32" in src and "add nsw i32" in src, src   # [0, 255]*4+1 cannot wrap
  src = LLVMRenderer().render(elementwise(lambda a: (a & 255) + 1, [dtypes.uint32], dtypes.uint32, 4), "k")
  assert "nsw" not in src.split("ridx0.body:")[1].split(".inc")[0], src   # unsigned: never nsw (it means signed)
