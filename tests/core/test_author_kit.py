"""The backend author's kit: the guide (docs/plugins.md) holds the template verbatim, the template installs with pip and
passes the conformance suite through its pytest plugin, a broken variant fails naming the op and dtype, and the plugin
API surface (tinygrad.plugin_api) is pinned per API version."""
import os, re, sys, shutil, subprocess, tomllib
from pathlib import Path
import pytest
from plugin_isolation import hermetic_env

ROOT = Path(__file__).resolve().parents[2]
CORE, TEMPLATE, GUIDE = ROOT / "core", ROOT / "examples" / "tinygrad_template", ROOT / "docs" / "plugins.md"

# ---- the guide ----

def guide_files() -> dict[str, str]:
  """Path -> contents of every file the guide quotes under a "### `path`" heading."""
  text = GUIDE.read_text()
  return {m.group(1): m.group(2) for m in re.finditer(r"^### `([^`]+)`\n\n```\w*\n(.*?)^```$", text, re.S | re.M)}

def template_files() -> dict[str, str]:
  return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(TEMPLATE.rglob("*"))
          if p.is_file() and "__pycache__" not in p.parts and "build" not in p.parts and ".egg-info" not in str(p)}

def test_guide_quotes_every_template_file_verbatim():
  quoted, files = guide_files(), template_files()
  assert sorted(quoted) == sorted(files), "docs/plugins.md must quote exactly the files of examples/tinygrad_template"
  for path, text in files.items(): assert quoted[path] == text, f"docs/plugins.md's copy of {path} differs from the file: update the guide"

def test_guide_names_the_contract():
  text = GUIDE.read_text()
  for what in ("tinygrad_api_version", "tinygrad_devices", "tinygrad_compilers", "CompilerPair", "ctrl_var", "API_VERSION",
               "MIN_API_VERSION", "plugin_api", "--tinygrad-device", "MemoryManager", "supported_dtypes", "probe",
               "mem_access", "abilities=", "local_total_max", "exp_via_exp2", "corpus(", "global_size", "DEBUG", "DeviceSpec.compilers"):
    assert what in text, f"docs/plugins.md does not mention {what}"

# ---- the API surface ----

API_V1 = {"API_VERSION", "MIN_API_VERSION", "hookimpl", "hookspec", "DeviceSpec", "TinygradHooks", "GraphRunner", "GraphCall", "GraphError", "Compiled", "CompilerSet", "CompilerPair", "CompilerWorker",
          "Compiler", "CompileError", "DeviceError", "Allocator", "LRUAllocator", "Buffer", "Device", "compiler_choice", "MemoryManager",
          "TLSFAllocator", "SubBuffer", "Arena", "Renderer", "ProgramSpec", "TensorCore", "CStyleLanguage", "base_code_for_op", "base_rewrite",
          "thread_work", "safe_div", "Ops", "GroupOp", "UOp", "UPat", "PatternMatcher", "DType", "PtrDType", "AddrSpace", "dtypes", "getenv", "prod", "DEBUG",
          # added in version 1 (compatible): memory-access accessors, rendering without hardware
          "MemAccess", "mem_access", "kernels", "render", "corpus", "Opt", "OptOps",
          # host devices' instance count (DeviceSpec(instances=VIRTUAL_INSTANCES)), recommended by the guide
          "VIRTUAL_INSTANCES",
          # what the first-party plugins use, so they import the core only through plugin_api (test_plugin_contract.py)
          "split_range", "LLVMIRRenderer", "Loop", "launch_threads", "launch_threads_ok", "pm_split_launch", "pm_devectorize_alu",
          # external tools (compilers, linkers) in a session of their own, run again if a Ctrl-C killed them while starting
          "run_tool"}

def test_plugin_api_is_pinned_per_version():
  import tinygrad.plugin_api as api
  from tinygrad.plugins import API_VERSION
  # a breaking change to the surface bumps API_VERSION: add the new version's set here, keeping the old ones
  assert API_VERSION == 1 and set(api.__all__) == API_V1, (f"the plugin API changed ({sorted(set(api.__all__) ^ API_V1)}): "
                                                          "additions extend API_V1; removals and renames bump API_VERSION")
  for name in api.__all__: assert getattr(api, name) is not None
  with pytest.raises(AttributeError, match="plugin API"): getattr(api, "NoSuchName")

def test_plugin_api_import_is_cheap():
  code = "import sys, tinygrad.plugin_api; from tinygrad.plugin_api import hookimpl, DeviceSpec; print(sorted(m for m in sys.modules if m in ('tinygrad.device', 'tinygrad.renderer.cstyle')))"
  r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(CORE)}, capture_output=True, text=True)
  assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr

def test_conformance_extra_pulls_only_pytest_and_hypothesis():
  # a plugin author runs the suite with `pip install "tinygrad-core[conformance]"`: not onnx, pyopencl, selenium or mpi4py
  extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
  assert sorted(re.split(r"[<>=!~ \[]", r)[0] for r in extras["conformance"]) == ["hypothesis", "pytest"]
  assert 'tinygrad-core[conformance]' in GUIDE.read_text()

@pytest.mark.parametrize("missing", ["pytest", "hypothesis"])
def test_conformance_cli_names_the_missing_extra(missing):
  # pip install -e . of a plugin (the guide's recipe) brings neither: the CLI said ModuleNotFoundError (no pytest) or ran
  # pytest into 4 collection errors (no hypothesis); it names the extra to install instead
  code = f"import sys; sys.modules[{missing!r}] = None; from tinygrad.conformance.__main__ import main; sys.exit(main(['NOSUCHDEV', '--quick']))"
  r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(CORE)}, capture_output=True, text=True, timeout=120)
  assert r.returncode == 2 and 'pip install "tinygrad-core[conformance]"' in r.stderr and missing in r.stderr, r.stdout[-2000:] + r.stderr[-2000:]

def test_guide_states_the_compile_cache_key():
  from tinygrad.device import Compiler
  key = "(cachekey, version(), target, code, src)"
  assert key in (Compiler.compile_cached.__doc__ or "") and key in GUIDE.read_text(), f"docs/plugins.md must state the compile-cache key {key}"

def test_conformance_report_names_the_compiler_pair():
  from tinygrad.conformance.plugin import compiler_pair
  assert compiler_pair("PYTHON") == "PYTHON (PythonRenderer -> no compiler: the source is the binary)"
  assert compiler_pair("NOSUCHDEV") == ""

def test_pytest11_entry_point_declared():
  eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
  assert eps["pytest11"]["tinygrad.conformance.plugin"] == "tinygrad.conformance.plugin"

# ---- the template, installed and run through the conformance plugin ----

def recipe() -> list[tuple[str, str]]:
  """The substitutions of the guide's rename recipe (its `sed -i 's/A/B/g; ...'` line), for a device named FOO."""
  m = re.search(r"xargs sed -i '([^']+)'", GUIDE.read_text())
  assert m, "docs/plugins.md lost its rename recipe"
  return [tuple(part.strip().split("/")[1:3]) for part in m.group(1).split(";")]   # type: ignore[misc]

def rename(src: Path, dest: Path, name: str) -> Path:
  """A copy of the template for device NAME, made by the guide's own cp/mv/sed recipe (FOO, Foo, foo become NAME's)."""
  low = name.lower()
  shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
  (dest / "tinygrad_template").rename(dest / f"tinygrad_{low}")
  subs = [(a, b.replace("FOO", name).replace("Foo", name.capitalize()).replace("foo", low)) for a, b in recipe()]
  for p in dest.rglob("*"):
    if p.is_file() and "template" in (t := p.read_text()).lower():   # the recipe's `grep -rl -i template`
      for a, b in subs: t = t.replace(a, b)
      p.write_text(t)
  return dest

def test_rename_recipe_leaves_nothing_named_template(tmp_path):
  # the recipe once left the compile cache's key as compile_template_...: two renamed plugins shared cached binaries
  foo = rename(TEMPLATE, tmp_path / "tinygrad-foo", "FOO")
  left = {str(p.relative_to(foo)): [l for l in p.read_text().splitlines() if "template" in l.lower()] for p in foo.rglob("*") if p.is_file()}
  assert not {k: v for k, v in left.items() if v}, left
  assert not [p for p in foo.rglob("*") if "template" in p.name.lower()]
  assert 'ENV_PREFIX = "FOO"' in (foo / "tinygrad_foo" / "__init__.py").read_text()

def install(dists: list[Path], site: Path) -> None:
  """pip install --target, as a user would (setuptools < 70.1 without `wheel` cannot build: lay out what pip would)."""
  r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site),
                      *map(str, dists)], capture_output=True, text=True)
  if r.returncode == 0: return
  if "bdist_wheel" not in r.stdout + r.stderr: raise RuntimeError(f"pip install failed:\n{r.stdout}\n{r.stderr}")
  for d in dists:
    meta = tomllib.loads((d / "pyproject.toml").read_text())["project"]
    pkg = meta["name"].replace("-", "_")
    shutil.copytree(d / pkg, site / pkg)
    info = site / f"{pkg}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
    eps = "".join(f"{k} = {v}\n" for k, v in meta["entry-points"]["tinygrad.plugins"].items())
    (info / "entry_points.txt").write_text(f"[tinygrad.plugins]\n{eps}")

BREAK_MAX_INT32 = '''
# deliberately broken: maximum of int32 returns the minimum
from tinygrad.plugin_api import Ops as _Ops, dtypes as _dtypes
_max = TemplateRenderer.code_for_op[_Ops.MAX]
TemplateRenderer.code_for_op = {**TemplateRenderer.code_for_op,
  _Ops.MAX: lambda a, b, dtype: f"(({a}<{b})?{a}:{b})" if dtype == _dtypes.int32 else _max(a, b, dtype=dtype)}
'''

@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
  root = tmp_path_factory.mktemp("author_kit")
  template = root / "src" / "tinygrad-template"   # a copy: building in place would leave build/ in the checkout
  shutil.copytree(TEMPLATE, template, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
  broken = rename(TEMPLATE, root / "src" / "tinygrad-broken", "BROKEN")
  with open(broken / "tinygrad_broken" / "renderer.py", "a") as f: f.write(BREAK_MAX_INT32.replace("TemplateRenderer", "BrokenRenderer"))
  install([template, broken], root / "site")
  return root / "site"

def conformance(site: Path, device: str, *args: str) -> subprocess.CompletedProcess:
  """`python -m tinygrad.conformance DEVICE --quick` in a fresh process that sees the installed plugins and this core."""
  env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYGRAD_", "TEMPLATE_", "BROKEN_", "HYPOTHESIS")) and k not in ("DEV", "PYTHONPATH")}
  env.update(PYTHONPATH=os.pathsep.join([str(site), str(CORE)]), CACHEDB=str(site / "cache.db"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
  cmd = [sys.executable, "-m", "tinygrad.conformance", device, "--quick", "-q", "-p", "no:cacheprovider", *args]
  return subprocess.run(cmd, env=hermetic_env(env), capture_output=True, text=True, cwd=site, timeout=600)

def test_template_passes_the_conformance_suite(site):
  r = conformance(site, "TEMPLATE")
  assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
  assert "tinygrad conformance: TEMPLATE: all capabilities pass" in r.stdout, r.stdout[-3000:]
  assert "compiler pair: C (TemplateRenderer -> TemplateCompiler)" in r.stdout, r.stdout[-3000:]
  assert re.search(r"\d+ passed", r.stdout) and " failed" not in r.stdout.splitlines()[-1], r.stdout[-3000:]

def test_template_tests_render_the_corpus_without_its_device(site):
  env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYGRAD_", "TEMPLATE_", "HYPOTHESIS")) and k not in ("DEV", "PYTHONPATH")}
  env.update(PYTHONPATH=os.pathsep.join([str(site), str(CORE)]), CACHEDB=str(site / "cache.db"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
             PYTHONDONTWRITEBYTECODE="1")
  cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--rootdir", str(site), str(TEMPLATE / "tests")]
  r = subprocess.run(cmd, env=hermetic_env(env), capture_output=True, text=True, cwd=site, timeout=600)
  assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]

def test_omp_example_tests_pass():
  # examples/tinygrad_omp: a threaded (OpenMP) backend written from the guide; its full conformance run is `make test-examples`
  env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYGRAD_", "TG_OMP_", "HYPOTHESIS")) and k not in ("DEV", "PYTHONPATH")}
  env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "examples" / "tinygrad_omp"), str(CORE)]), PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
  r = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(ROOT / "examples" / "tinygrad_omp" / "tests")],
                     env=hermetic_env(env), capture_output=True, text=True, cwd=ROOT / "examples" / "tinygrad_omp", timeout=600)
  assert r.returncode == 0 and re.search(r"\b2 passed", r.stdout), r.stdout[-4000:] + r.stderr[-2000:]

def test_broken_variant_fails_naming_op_and_dtype(site):
  r = conformance(site, "BROKEN", "-k", "int32 and (TestBinary or TestDtypes)")
  assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-2000:]
  report = r.stdout[r.stdout.index("tinygrad conformance: BROKEN"):]
  assert "FAIL elementwise binary ops" in report and "op=maximum dtype=int32" in report, report
  assert "op=maximum dtype=float32" not in report, report   # only the broken dtype is named

def test_missing_device_fails_when_named(site):
  r = conformance(site, "NOSUCHDEV", "-k", "TestKernelCount")
  assert r.returncode == 1 and "required device" in r.stdout and "NOSUCHDEV is not installed" in r.stdout, r.stdout[-3000:]
