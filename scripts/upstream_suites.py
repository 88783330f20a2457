#!/usr/bin/env python3
"""Run public tinygrad's own test suites, unmodified, against this project's tinygrad, and count what passes.

  python scripts/upstream_suites.py --upstream DIR [--suites ops,variable,multi,user,jit,custom,extra,dtype,models,llm,user2]
         [--dev CPU] [-k EXPR] [--failures] [--slow]

DIR is a checkout of public tinygrad (its test/ folder is used; nothing of it is copied into this repository). Its test/
folder, with the examples/ and extra/ its tests import, is copied to a scratch directory (--workdir, default: a folder in
the temp dir) and pytest runs there with this project's `tinygrad` importable, once per suite (test_ops twice: FORWARD_ONLY=1, then with backward).
Upstream marks some tests slow (all of test_nn.py and test_optim.py): they are skipped unless --slow sets RUN_SLOW=1
(0.14 passes 200 of the user suite without them, 278 with them, on CPU).

Upstream's test files import some of upstream's compiler internals that this project does not have (another renderer,
the linearizer's module path, helpers of its realize engine). So that the files can be collected at all, the conftest.py
this script writes next to the copy installs a placeholder for each name in SHIMS that our package lacks: a class no
object is an instance of (isinstance checks are False), a flag that is 0, a marker no value is (an op of upstream's IR
this one never builds, `Ops.CUSTOM_FUNCTION`), or a function that raises NotImplementedError naming itself. A test that really uses one of them fails; it never passes through a shim. Every run prints the shims it
installed. Names a user program imports are not shimmed here: they belong in the package.

The dtype suite (casts, bitcasts, ALU per dtype, transcendental accuracy under TRANSCENDENTAL=2, promotion) fails where
this project differs on purpose (docs/guide.md): int sums are int64, a Python float with an int tensor gives the default
float (upstream: its weak float dtype, dtypes.weakfloat), fp8 casts of too-large values follow torch's (e4m3 saturates, e5m2
overflows to inf; test_truncate_fp8e4m3 fails only when hypothesis draws an inf, which saturates to 448 here: the dtype count
moves by one between runs), the min/max of an fp8 dtype without inf (e4m3, the fnuz ones) are its finite extremes, a `where` condition
that is not bool reads as cond != 0 (upstream raises); and where it tests upstream internals (test_transcendental_helpers'
decomposition helpers, the Invalid singleton, from_py(Invalid): the Invalid shim is 0, an int). EMULATED_DTYPES is accepted: the core's fp8
lowering is the only software form here, so TestEmulated* classes of half, bfloat16 and int64 run the native ops.

Counts on CPU (measured 2026-12-06, -n 2, no --slow unless named) with public tinygrad master a9069c177a, every failure one
of those listed here: ops 418 passed, 1 failed, 8 skipped (forward and backward alike); variable 43/4/0; multi 142/20/11; user
174/26/122 (--slow: 252/31/39); jit 89/15/9; custom 44/10/9; extra 148/14/10; dtype 314/23/36 (or 313/24); tensor 140/35/21
(179/58/25 on 2026-12-07, -n 1, with the three shims that let test_pickle, test_arange and test_const_folding collect);
models 8/13/10; llm 16/3/0; user2 75/78/5. Files in no suite, run by hand then: test/null/test_disk_cache.py 7 of 11 (the
rest the documented JSON cache format), test/unit/test_setitem_schedule.py 7 of 12 (the rest count kernels of lazy setitems
upstream folds into constants), test/testextra/test_fp8_linear.py 2 of 6 (its UOp.reduce kernel builds; its fp8*fp8
products round to fp8 per op here, documented, so the forward differs; upstream skips the file on CPU); test_tqdm fails
(helpers.tqdm is the tqdm package here), unit/ and null/test_helpers do not import (upstream's private helpers: polyN,
word_wrap ...), test_llm_tokenizer downloads.

The other suites' known failures (each a documented difference of docs/guide.md, upstream internals, or the network):
- ops: test_sigmoid_alt_extreme, `e / (1 + e)` for e = exp(300) = inf: NaN as torch (upstream rewrites it as 1 - 1/(1 + e),
  which loses small values: 0 for 2.1e-9 at x = -20).
- tensor: in test_pickle, test_arange and test_const_folding the tests of upstream's engine internals (deconstruct_function,
  pickling code objects, PatternMatchers and a TinyJit, sub-buffers, estimate_uop, USE_ATOMICS, Renderer.target, UOp-level
  threefry, kernel counts, a folded const copy); internals (`.uop.base.buffer` of a lazy tensor, deviceless
  constants, `Tensor.const`, UOp-level alu with an implicit broadcast, ops_disk, the disk device's reuse); the network
  (TestTorchLoad, the huggingface safetensors); documented: `randn` of int/bool raises (test_element_size), a Python int
  past the dtype raises OverflowError, `from_blob` copies, the max of an empty axis raises, `manual_seed` draws other
  numbers (test_randperm), a constant's gradient, a gradient through `detach()` is None, setitem into a tensor the
  graph still reads, strided and permuted DISK views read and write (upstream: "non-contiguous view"), and computing on
  DISK raises NotImplementedError (upstream returns the wrong values its own test expects); edge cases upstream marks
  expected failures pass here (NaN max and sort, x / x at 0).
- user: setitem casts another dtype and runs with other readers (documented), assigns that read each other are ordered
  instead of "cycle", int sums are int64 (assign of a sum into int32 needs a cast), writes into a bitcast to another
  item size and into an expanded view raise; internals (AFTER/STORE tensor graphs, `buf_uop`, CONTIGUOUS_BACKWARD, Ops.REDUCE,
  kernel counts); test_war_reader_already_depends_on_write gets z = 15 (upstream's TODO value) where it asserts 16. With
  --slow also: test_embedding_one_kernel_fused_noopt (an op count), test_assert_tensor_train (opt.step works whatever
  TRAINING is), and test_numpy_parity_and_backward_{2,3,4}d: their reference is a lazy arange, deviceless upstream and so
  given no .grad by backward(); here it is on the default device, gets the gradient through each clone, and the next
  clone() copies that .grad, so the clones' gradients add up.
- custom: a `fxn` returning a PROGRAM (C source and binary: test_simple_from_source*, documented; CPU's default compiler
  here is LLVM, so upstream's C source does not even compile), tensor-level AFTER over a STORE (Invalid stores, internals),
  a write into an expanded view raises (documented), kernel counts and schedule order where a shrunk input is copied first
  (documented), UOp.contiguous_view and the fragment-placeholder error text (internals).
- variable: a variable value past int32 raises at launch, a slice by a bound Variable past the axis raises (upstream reads
  past the buffer), a shrink by an unbound Variable must hold over its whole range (test_shrink_symbols).
- jit: what upstream's footgun tests pin as errors or frozen values works here (documented in docs/guide.md: one tensor
  passed twice, views at other offsets, a const or deviceless input, nothing realized, positional and keyword arguments
  mixed; a symbolic pad's size follows the call: 4 where upstream asserts its frozen 2) and a changed plain-value argument
  raises JitError; internals (graph batch splits, graph_class, beam search's module); free_intermediates keeps the
  buffer of an output the caller holds (upstream frees it too).
- extra: test_randomness's threefry internals and reference draws (`manual_seed` draws other numbers, documented), the
  gguf tests that download models, and upstream's private IQ lookup tables.
- multi: internals (UOp.allreduce, as_param, graph_rewrite(walk=), schedule structure and kernel counts, the RANGE under a
  shard); an axis that does not divide is split unevenly and a shrink across shards gathers (upstream raises RuntimeError).
- models (8 of 21 run pass on CPU, 10 skipped slow; 12 of 30 with --slow, test_stable_diffusion among them): the network
  (test_mnist and test_end2end download MNIST, test_onnx needs huggingface_hub and downloads models; with --slow
  test_train's resnet downloads weights); test_real_world's kernel counts (gpt2 640 where upstream allows 168, llama 487
  for 118, unet_resblock 40 for 37 (its memory, 0.000198 GB, is under the 0.0002); --slow: forward_cifar 36 for 27) and
  its memory figures, the test's own checks (each fails first; they check no values): --slow: train_cifar 0.134 GB for
  0.120 (17.5 MB of it the gradients .grad keeps, docs/guide.md; 0.14 uses 0.125), train_mnist 0.0136 and bert 0.232 are
  more than 20% under their 0.017 and 0.31 (0.14: 0.0116 for train_mnist). `tinygrad.engine.jit.memory_report(fn)`
  lists what a capture holds. null/test_winograd: WINO=1 has no Winograd path here (documented) and a kernel count.
- llm (16 of 19 pass): two tests count kernels (null/test_attention); test_kda_channel_decay pins KDA's decay along the state's
  value rows (upstream's and 0.14's), where this one decays its key channels as the model does (documented).
- user2 (75 of 153 pass): test_dtype_weak imports upstream's weak-dtype IR (dtype_from_uop, tinygrad.uop.weak);
  test_invalid_tensor its Invalid value and Buffer.copy_from; null/test_gradient differentiates deviceless UOp Variables
  (upstream's UOp-level gradient, internals); test_function the CALL's structure (`.uop.src[0].arg.name`), AFTER/STORE
  graphs, Invalid, grad_fxn, and @function's documented differences (an unread argument's gradient, `x += 1` in the body,
  in-place custom_kernel outputs); null/test_tensor upstream's to_program, a*2 twice realized into one buffer, deviceless
  constants, *_like(device=) of a sharded tensor, weakfloat, and constant operands on another device (all documented but
  the first two); test_realize_is_realize: is_realized of Tensor.empty, DISK and realized constants, and shard((d, d))
  (documented); test_gc: counts of live Tensor objects, Buffer.uop_refcount, a realized tensor keeping its inputs'
  buffers (documented); test_zero_copy and test_subbuffer: upstream's Buffer API (sub-buffers, as_memoryview; documented).

The GPU-style devices run the same suites with `--dev WEBGPU` (wgpu on Mesa's lavapipe) or `--dev CL` (pocl), nothing else
needed; on pocl every kernel is compiled by its LLVM, so the ops suite takes about an hour with -n 1 where lavapipe takes 3
minutes. Measured with -n 1 (DEV per device; user with --slow): ops 414 of 427 pass on WEBGPU, 418 on CL, the one failure
CPU's; dtype 297 (WEBGPU) and 314 (CL) pass, the 24 failures CPU's; tensor 139 on both; user 248 (WEBGPU) and 249 (CL).
What fails there and not on CPU: on WEBGPU test_tensor_index_overflow (one invocation would loop 2**31+3 times, past
llvmpipe's loop limiter: a RuntimeError naming it) and test_nn's test_load_state_dict_sharded_model* (WEBGPU:N is the
N-th adapter here, lavapipe has two; upstream opens every WEBGPU:N on the default adapter); on CL test_tiny's test_image
and test_beam_image (IMAGE=1: Qualcomm image dtypes are not here, documented). Upstream skips some tests on WEBGPU
(copysign_exact, pow at 0, exp2/log2 of 0, masked_select, setitem_big, int64 indices, midcast inf/NaN, exp near inf,
float16 log2 specials, softmax dtype): with those skips removed they pass here, but sin past |x| 16384 (WGSL's builtin,
the documented approx_domain).
"""
from __future__ import annotations
import argparse, os, shutil, subprocess, sys, tempfile, xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SUITES: dict[str, list[str]] = {
  "ops": ["test/backend/test_ops.py"],
  "variable": ["test/backend/test_tensor_variable.py", "test/null/test_symbolic_tensor.py", "test/unit/test_symbolic_tensor.py"],
  "multi": ["test/backend/test_multitensor.py", "test/unit/test_multitensor.py", "test/null/test_multitensor.py"],
  "user": ["test/test_tiny.py", "test/backend/test_nn.py", "test/backend/test_optim.py", "test/backend/test_setitem.py",
           "test/unit/test_indexing.py", "test/null/test_indexing.py", "test/unit/test_conv.py", "test/backend/test_to_numpy.py",
           "test/unit/test_assign.py"],
  "custom": ["test/backend/test_custom_kernel.py"],
  # semantics beyond the op suite: linalg, einops-style rearrange, tar/GGUF reading, getitem's cost, symbolic ops, randomness,
  # keccak and the tensor hash
  "extra": ["test/unit/test_hashing.py", "test/unit/test_linalg.py", "test/unit/test_rearrange_einops.py", "test/unit/test_tar.py", "test/unit/test_masked_tensor.py",
            "test/unit/test_getitem_ops.py", "test/backend/test_symbolic_ops.py", "test/unit/test_randomness.py", "test/backend/test_randomness.py",
            "test/backend/test_interop.py", "test/unit/test_gguf.py"],
  "jit": ["test/backend/test_jit.py", "test/backend/test_symbolic_jit.py", "test/unit/test_jit.py", "test/unit/test_jit_cases.py",
          "test/unit/test_jit_footguns.py"],
  # the Tensor API's own behaviour: creation, data access, edge cases (the long tail of silent wrong numbers), autograd,
  # disk tensors and file I/O, pickling
  "tensor": ["test/backend/test_tensor.py", "test/backend/test_edgecases.py", "test/unit/test_gradient.py", "test/unit/test_disk_tensor.py",
             "test/unit/test_tensor_data.py", "test/unit/test_tensor_io.py", "test/backend/test_pickle.py", "test/backend/test_arange.py",
             "test/backend/test_const_folding.py"],
  # casts, bitcasts, ALU per dtype, transcendental accuracy, promotion: where silent wrong numbers hide
  "dtype": ["test/backend/test_dtype.py", "test/backend/test_dtype_alu.py", "test/backend/test_transcendental.py", "test/unit/test_dtype_spec.py",
            "test/null/test_dtype.py", "test/null/test_dtype_spec.py", "test/null/test_transcendental_helpers.py"],
  # whole models as a user trains and runs them: MNIST, end-to-end training, the model zoo's train steps, ONNX, real-world
  # networks on NULL, winograd convolution
  "models": ["test/models/test_mnist.py", "test/models/test_end2end.py", "test/models/test_train.py", "test/models/test_onnx.py",
             "test/null/test_real_world.py", "test/unit/test_winograd.py", "test/null/test_winograd.py", "test/backend/test_stunning.py"],
  # the llm package's layers: attention, mixture of experts, multi-head latent attention
  "llm": ["test/unit/test_attention.py", "test/null/test_attention.py", "test/unit/test_llm_moe.py", "test/unit/test_llm_mla.py"],
  # more of the Tensor API: gradients, weak dtypes, Invalid, realize, functions, tensor basics and I/O, gc, zero-copy, subbuffers
  "user2": ["test/null/test_gradient.py", "test/unit/test_dtype_weak.py", "test/unit/test_invalid_tensor.py", "test/unit/test_realize_is_realize.py",
            "test/unit/test_function.py", "test/null/test_tensor.py", "test/null/test_tensor_io.py", "test/null/test_gc.py",
            "test/backend/test_zero_copy.py", "test/backend/test_subbuffer.py"],
}

# (module, name, kind): upstream-only machinery the test files import; kind: class | flag | function | module, or
# alias:MODULE: a name this package has, in MODULE, that upstream also exports from another module (the real one, no placeholder)
SHIMS: list[tuple[str, str, str]] = [
  ("tinygrad.renderer.nir", "NIRRenderer", "class"),               # Mesa NIR renderer: no device here uses it
  ("tinygrad.helpers", "IMAGE", "flag"),                            # image dtypes (Qualcomm): not supported here
  ("tinygrad.runtime.ops_python", "PythonRenderer", "class"),       # upstream's module path of its emulator's renderer
  ("tinygrad.codegen.late.linearizer", "linearize", "function"),    # upstream's linearizer entry point
  ("tinygrad.codegen", "to_program", "function"),
  ("tinygrad.codegen", "full_rewrite_to_sink", "function"),
  ("tinygrad.codegen", "line_rewrite", "function"),
  ("tinygrad.codegen", "pm_linearize_cleanups", "function"),
  ("tinygrad.engine.realize", "lower_and_compile", "function"),     # upstream's realize engine internals
  ("tinygrad.engine.realize", "pm_beam", "function"),
  ("tinygrad.engine.jit", "graph_class", "function"),             # the graph runner class of a device (upstream internals)
  ("tinygrad.uop", "Ops.CUSTOM_FUNCTION", "marker"),                # upstream's op of a graph runner's CALL in captured.linear (none here)
  ("tinygrad.helpers", "Target", "class"),
  ("tinygrad.renderer.ptx", "PTXRenderer", "class"),                # upstream's PTX renderer (ours is the NV plugin's)
  ("tinygrad.dtype", "Invalid", "flag"),                            # upstream's marker of an unwritten value (imported, unused)
  ("tinygrad.renderer.isa.x86", "X86Renderer", "class"),            # upstream's x86 assembly renderer
  ("tinygrad.llm.gguf", "_ggml_iq_grid", "function"),               # upstream's private IQ lookup tables (gguf_load decodes with the gguf package)
  ("tinygrad.runtime.autogen.ggml_common", "iq2s_grid", "flag"),    # upstream's generated ggml headers (the tables' source)
  ("tinygrad.helpers", "disable_gc", "function"),                   # upstream's gc switch (test_gguf's leak test; it downloads a model too)
  ("tinygrad.dtype", "InvalidType", "class"),                       # the class of Invalid (test_dtype's singleton tests)
  ("tinygrad.renderer.llvmir", "CPULLVMRenderer", "class"),         # upstream's LLVM renderer class (ours is the CPU plugin's)
  ("tinygrad.runtime.ops_python", "from_storage_scalar", "alias:tinygrad.dtype"),   # upstream re-exports the dtype helper there
  ("tinygrad.codegen.decomp.transcendental", "payne_hanek_reduction", "function"),  # upstream's transcendental decomposition helpers
  ("tinygrad.codegen.decomp.transcendental", "cody_waite_reduction", "function"),
  ("tinygrad.codegen.decomp.transcendental", "frexp", "function"),
  ("tinygrad.codegen.decomp.transcendental", "rintk", "function"),
  ("tinygrad.codegen.decomp.transcendental", "pow2if", "function"),
  ("tinygrad.uop.ops", "ProgramInfo", "class"),                     # upstream's metadata of a kernel given as a program (test_function)
  ("tinygrad.mixin.gradient", "compute_gradient", "alias:tinygrad.gradient"),   # upstream's module of the UOp-level gradient
  ("tinygrad.uop.ops", "deconstruct_function", "function"),         # upstream's pickling of a function's code (test_pickle)
  ("tinygrad.engine.realize", "estimate_uop", "function"),          # upstream's op-count estimate of a kernel (test_arange)
  ("tinygrad.codegen.decomp.op", "threefry2x32", "function"),       # upstream's UOp-level threefry (test_const_folding)
]

CONFTEST = '''# written by scripts/upstream_suites.py: placeholders for upstream-only internals (see SHIMS there)
import importlib, sys, types
SHIMS = {shims!r}
installed = []
def _placeholder(mod, name, kind):
  if kind.startswith("alias:"): return getattr(importlib.import_module(kind[6:]), name)   # our own implementation, at upstream's path
  if kind == "class": return type(name, (), {{"__doc__": f"placeholder for upstream-only {{mod}}.{{name}}"}})
  if kind == "flag": return 0
  if kind == "marker": return types.SimpleNamespace(name=name)   # a value nothing here is (`op is Ops.CUSTOM_FUNCTION`: False)
  def missing(*args, **kwargs): raise NotImplementedError(f"{{mod}}.{{name}} is upstream-only machinery (a shim of scripts/upstream_suites.py)")
  missing.__name__ = name
  return missing
for mod, name, kind in SHIMS:
  try: m = importlib.import_module(mod)
  except ImportError:
    parent = mod.rpartition(".")[0]
    m = types.ModuleType(mod)
    sys.modules[mod] = m
    # intermediate packages that do not exist either (tinygrad.codegen.late)
    while parent and parent not in sys.modules:
      try: importlib.import_module(parent)
      except ImportError: sys.modules[parent] = types.ModuleType(parent)
      parent = parent.rpartition(".")[0]
  *path, last = name.split(".")   # (a dotted name: an attribute of a class there, Ops.CUSTOM_FUNCTION)
  for part in path: m = getattr(m, part)
  if not hasattr(m, last):
    setattr(m, last, _placeholder(mod, name, kind))
    installed.append(f"{{mod}}.{{name}}")
def pytest_report_header(config): return "upstream_suites shims installed: " + (", ".join(installed) or "none")
'''

def prepare(upstream: Path, workdir: Path) -> None:
  # test/, and the examples/ and extra/ packages its tests import (extra.models.llama, examples.hlb_cifar10, extra.lr_scheduler)
  for d in ("test", "examples", "extra"):
    if (workdir / d).exists(): shutil.rmtree(workdir / d)
    if (upstream / d).is_dir(): shutil.copytree(upstream / d, workdir / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pkl"))
  (workdir / "conftest.py").write_text(CONFTEST.format(shims=SHIMS))
  # pytest's rootdir: keep upstream's own pytest config out (its addopts may need plugins we do not have)
  (workdir / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")

def run(workdir: Path, files: list[str], env: dict[str, str], jobs: int, kexpr: str | None, tag: str) -> ET.Element:
  xml = workdir / f"result-{tag}.xml"
  # (a file that fails to import is one failure: the suite's other files still run)
  cmd = [sys.executable, "-m", "pytest", "-q", "-rN", "--tb=line", "--continue-on-collection-errors", f"--junitxml={xml}", *files]
  if jobs > 1: cmd += ["-n", str(jobs)]
  if kexpr: cmd += ["-k", kexpr]
  subprocess.run(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  if not xml.exists(): raise SystemExit(f"pytest wrote no report for {tag} (run it by hand in {workdir})")
  return ET.parse(xml).getroot()

def tally(root: ET.Element) -> tuple[dict[str, dict[str, int]], list[tuple[str, str]]]:
  per_file: dict[str, dict[str, int]] = {}
  failures: list[tuple[str, str]] = []
  for tc in root.iter("testcase"):
    # a collection error has no class: its name is the module's dotted path
    cls = tc.get("classname") or ""
    f = tc.get("file") or (cls.rsplit(".", 1)[0] if cls else tc.get("name") or "?").replace(".", "/") + ".py"
    c = per_file.setdefault(f, {"passed": 0, "failed": 0, "skipped": 0})
    bad = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
    if bad is not None:
      c["failed"] += 1
      failures.append((f"{tc.get('classname')}::{tc.get('name')}", (bad.get("message") or "").splitlines()[0][:200] if bad.get("message") else ""))
    elif tc.find("skipped") is not None: c["skipped"] += 1
    else: c["passed"] += 1
  return per_file, failures

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--upstream", required=True, type=Path, help="a checkout of public tinygrad (its test/ is used)")
  ap.add_argument("--suites", default="ops,variable,multi,user", help=f"comma-separated, of {', '.join(SUITES)}")
  ap.add_argument("--dev", default="CPU", help="DEV for the run (the multi suite uses CPU:0.. CPU:N)")
  ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tinygrad-upstream-suites")
  ap.add_argument("-k", dest="kexpr", default=None, help="pytest -k expression")
  ap.add_argument("-n", dest="jobs", type=int, default=2, help="pytest-xdist workers")
  ap.add_argument("--failures", action="store_true", help="list every failing test with its message")
  ap.add_argument("--slow", action="store_true", help="RUN_SLOW=1: also upstream's tests marked slow (all of test_nn and test_optim)")
  args = ap.parse_args()
  if not (args.upstream / "test").is_dir(): ap.error(f"{args.upstream} has no test/ folder: pass a public tinygrad checkout")
  if args.workdir.resolve().is_relative_to(ROOT): ap.error("--workdir must be outside this repository (upstream's code is never put in it)")
  args.workdir.mkdir(parents=True, exist_ok=True)
  prepare(args.upstream, args.workdir)
  pypath = [str(ROOT / "core")] + [str(p) for p in sorted((ROOT / "plugins").glob("tinygrad_*"))]
  base_env = {**os.environ, "PYTHONPATH": os.pathsep.join(pypath + [str(args.workdir)]), "DEV": args.dev, **({"RUN_SLOW": "1"} if args.slow else {})}
  print(f"upstream {args.upstream} -> {args.workdir}; DEV={args.dev}; shims: {', '.join(f'{m}.{n}' for m, n, _ in SHIMS)}")
  rc = 0
  for suite in args.suites.split(","):
    if suite not in SUITES: ap.error(f"unknown suite {suite!r}; valid: {', '.join(SUITES)}")
    runs = [("forward", {"FORWARD_ONLY": "1"}), ("backward", {})] if suite == "ops" else [("all", {})]
    for label, extra in runs:
      per_file, failures = tally(run(args.workdir, SUITES[suite], {**base_env, **extra}, args.jobs, args.kexpr, f"{suite}-{label}"))
      tot = {k: sum(c[k] for c in per_file.values()) for k in ("passed", "failed", "skipped")}
      print(f"\n{suite} ({label}): {tot['passed']} passed, {tot['failed']} failed, {tot['skipped']} skipped")
      for f, c in sorted(per_file.items()): print(f"  {f}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped")
      if args.failures:
        for name, msg in failures: print(f"    FAIL {name}: {msg}")
      rc |= int(tot["failed"] > 0)
  return rc

if __name__ == "__main__": sys.exit(main())
