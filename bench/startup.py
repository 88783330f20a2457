"""Startup cost: `import tinygrad` and plugin discovery, each in a cold process, with 0 and with 5 installed plugins.

Prints medians of N runs and the ratio discovery/import. Figures, not assertions.
  python bench/startup.py [--runs N]
"""
import os, sys, json, shutil, argparse, statistics, subprocess, tempfile, textwrap
from pathlib import Path

CORE = str(Path(__file__).resolve().parents[1] / "core")

PLUGIN = """\
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION
@hookimpl
def tinygrad_api_version(): return API_VERSION
@hookimpl
def tinygrad_devices(): return [DeviceSpec("DUMMY{i}", 1, "dummy{i}.device:Dev")]
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "tinygrad-dummy{i}"
version = "0.1"
[project.entry-points."tinygrad.plugins"]
dummy{i} = "dummy{i}.plugin"
[tool.setuptools]
packages = ["dummy{i}"]
"""

# one cold process: time `import tinygrad`, then discovery (importing tinygrad.plugins and loading every plugin module)
PROBE = """\
import time, json
t0 = time.perf_counter()
import tinygrad
t1 = time.perf_counter()
from tinygrad import plugins
reg = plugins.registry()
t2 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1, sum(p.status == "ok" for p in reg.plugins)]))
"""

def install(root: Path, n: int) -> str:
  site, dirs = root / "site", []
  for i in range(n):
    d = root / "src" / f"dummy{i}"
    (d / f"dummy{i}").mkdir(parents=True)
    (d / "pyproject.toml").write_text(PYPROJECT.format(i=i))
    (d / f"dummy{i}" / "__init__.py").write_text("")
    (d / f"dummy{i}" / "plugin.py").write_text(PLUGIN.format(i=i))
    dirs.append(str(d))
  r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), *dirs],
                     capture_output=True, text=True)
  if r.returncode != 0:   # no `wheel` for old setuptools: lay out the same installed files by hand
    if "bdist_wheel" not in r.stdout + r.stderr: raise RuntimeError(r.stdout + r.stderr)
    for i in range(n):
      shutil.copytree(root / "src" / f"dummy{i}" / f"dummy{i}", site / f"dummy{i}")
      info = site / f"tinygrad_dummy{i}-0.1.dist-info"
      info.mkdir(parents=True)
      (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tinygrad-dummy{i}\nVersion: 0.1\n")
      (info / "entry_points.txt").write_text(f"[tinygrad.plugins]\ndummy{i} = dummy{i}.plugin\n")
  return str(site)

def measure(pythonpath: str, runs: int) -> tuple[float, float, int]:
  env = {k: v for k, v in os.environ.items() if not k.startswith("TINYGRAD_")}
  env["PYTHONPATH"] = pythonpath
  samples = []
  for _ in range(runs):
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout
    samples.append(json.loads(out.strip().splitlines()[-1]))
  return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples), samples[0][2]

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--runs", type=int, default=11)
  args = ap.parse_args()
  with tempfile.TemporaryDirectory() as tmp:
    site = install(Path(tmp), 5)
    print(f"cold-process medians of {args.runs} runs ({sys.executable}, python {sys.version.split()[0]})")
    print(f"{'installed plugins':<20}{'import tinygrad':>18}{'discovery':>14}{'loaded':>9}{'discovery/import':>19}")
    for label, path in (("0 (built-in only)", CORE), ("5 throwaway", os.pathsep.join([site, CORE]))):
      imp, disc, loaded = measure(path, args.runs)
      print(f"{label:<20}{imp*1e3:>15.1f} ms{disc*1e3:>11.1f} ms{loaded:>9}{disc/imp:>18.2f}x")

if __name__ == "__main__": main()
