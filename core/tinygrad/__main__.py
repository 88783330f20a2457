"""`python -m tinygrad [doctor] [--json]`: plugins, devices, and every compiler pair with a health check.

Exit status 0 when the default device computes (Tensor([1,2,3])*2).tolist() == [2, 4, 6], else 1.
"""
from __future__ import annotations
import os, sys, json, argparse, platform, warnings
from typing import Any, TYPE_CHECKING
from tinygrad.helpers import CapturedStderr
if TYPE_CHECKING:
  from tinygrad.device import CompilerPair

EXPECTED = [2, 4, 6]

def _said(noise: CapturedStderr) -> str: return f" (stderr: {'; '.join(noise.lines()[:3])})" if noise.lines() else ""

def _version(dist: str) -> str:
  from importlib import metadata
  try: return metadata.version(dist)
  except Exception: return "(source tree)" if dist == "tinygrad-core" else "(not installed)"

def health_check(device: str) -> dict[str, Any]:
  """Run (Tensor([1,2,3])*2).tolist() on `device` with the disk cache off; never raises."""
  try:
    from tinygrad.helpers import Context
    from tinygrad.tensor import Tensor   # imported here: the CLI must work (and say why) without a working Tensor
    from tinygrad.device import Device
    if not Device[device].computes:
      return {"ok": True, "result": None, "error": None, "note": "runs no kernels: not checked"}
    with Context(CACHELEVEL=0):
      got = (Tensor([1, 2, 3], device=device) * 2).tolist()
    if got == EXPECTED: return {"ok": True, "result": got, "error": None}
    return {"ok": False, "result": got, "error": f"wrong result: expected {EXPECTED}, got {got}"}
  except KeyboardInterrupt: raise
  except BaseException as e:   # the device's code runs here: whatever it raises (SystemExit too) is its failure, not the CLI's
    from tinygrad.device import DeviceError
    return {"ok": False, "result": None, "error": str(e) if isinstance(e, DeviceError) else f"{type(e).__name__}: {e}"}

def compile_check(pair: CompilerPair) -> dict[str, Any]:
  """Render and compile a small kernel with `pair`, running nothing (for a device that cannot be opened); never raises."""
  try:
    from tinygrad.device import _init_pair
    from tinygrad.tensor import Tensor
    from tinygrad.codegen import get_program
    renderer, _ = _init_pair(pair)
    ast = (Tensor.empty(3, device="NULL") * 2 + 1).schedule()[-1].ast
    prg = get_program(ast, renderer)
    size = len(prg.lib) if prg.lib is not None else len(prg.src)
    return {"ok": True, "result": None, "error": None, "note": f"compiles ({size} bytes); not run: no device"}
  except KeyboardInterrupt: raise
  except BaseException as e: return {"ok": False, "result": None, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}

def _pair_entry(name: str, pair: CompilerPair | None, set_var: str | None, default: bool, error: str | None) -> dict[str, Any]:
  pname = pair.name if pair is not None else ""
  return {"name": pname or "(none)", "ctrl_var": pair.ctrl_var if pair else None, "default": default, "origin": pair.origin if pair else "",
          "select": ([f"{set_var}={pname}"] if set_var else []) + ([f"DEV={name}:{pname}"] if pname else [f"DEV={name}"]),
          "ok": False, "result": None, "error": error}

def collect(check: bool = True) -> dict[str, Any]:
  """Everything the listing shows, as plain data (the --json output)."""
  from tinygrad import plugins
  from tinygrad.device import Device, CompilerChoiceWarning
  reg = plugins.registry()
  report: dict[str, Any] = {"core": {"version": _version("tinygrad-core"), "api_version": plugins.API_VERSION}, "default_device": None,
                            "default_error": None, "default_ok": False, "plugins": [], "devices": []}
  try:
    with CapturedStderr() as noise: report["default_device"] = Device.DEFAULT
  except Exception as e: report["default_error"] = f"{type(e).__name__}: {e}{_said(noise)}"
  report["default_reason"] = list(Device.default_reason)
  dbase, _, dchoice = Device.parse(report["default_device"]) if report["default_device"] else (None, 0, None)
  for p in reg.plugins:
    report["plugins"].append({"name": p.name, "module": p.module, "distribution": p.dist, "version": p.version, "status": p.status,
                              "error": p.error or None, "api_version": p.api_version, "devices": p.devices})
  for entry in reg.devices():
    name = entry.spec.name
    d: dict[str, Any] = {"name": name, "priority": entry.spec.priority, "plugin": entry.plugin.name, "distribution": entry.plugin.dist,
                         "providers": [e.plugin.dist or e.plugin.name for e in reg.candidates[name]], "default": name == dbase,
                         "status": "ok", "reason": None, "select": f"DEV={name}", "compilers": []}
    report["devices"].append(d)
    try: entry = reg.provider(name)
    except Exception as e:
      d.update(status="failed", reason=str(e))
      continue
    # a probe or a device open may load C libraries that print to fd 2 (the Vulkan loader, drivers): kept out of the
    # listing's stderr, and shown in the listing's own text when it explains a failure
    with CapturedStderr() as noise: ok, why = plugins.probe(entry)
    if not ok:
      why += _said(noise)
      d.update(status="unavailable", reason=why)
      cset, err = plugins.compile_only_pairs(entry)
      if err is not None: d["compilers"].append(_pair_entry(name, None, None, False, f"cannot list compilers: {err}"))
      # the pair the user chose (DEV=NV:PTX, NV_CC=PTX) is the default one, as for a device that opens; else the first
      want = dchoice if name == dbase and dchoice else (os.environ.get(cset.ctrl_var, "").strip() if cset is not None and cset.ctrl_var else "")
      names = [p.name.upper() for p in (cset.cset if cset is not None else [])]
      for i, pair in enumerate(cset.cset if cset is not None else []):
        c = _pair_entry(name, pair, cset.ctrl_var, pair.name.upper() == want.upper() if want.upper() in names else i == 0, None)
        if check:
          with CapturedStderr(): c.update(compile_check(pair))
        d["compilers"].append(c)
      continue
    try:
      with CapturedStderr() as noise: dev = Device[name]
    except Exception as e:
      d.update(status="failed", reason=f"{type(e).__name__}: {e}{_said(noise)}")
      continue
    d["description"] = getattr(dev, "description", None)   # optional: what the device runs on (a WebGPU adapter's name)
    set_var = dev.compilers.ctrl_var if dev.compilers is not None else None
    default_pair = dchoice if (name == dbase and dchoice) else dev.compiler_name
    pairs: list[CompilerPair | None] = list(dev.compiler_pairs) or [None]
    for pair in pairs:
      pname = pair.name if pair is not None else ""
      c = _pair_entry(name, pair, set_var, pname == default_pair, dev.compiler_errors.get(pname))
      if check and c["error"] is None:
        # each pair is checked through its device string: that it disagrees with the user's CPU_CC is not news here
        with CapturedStderr() as noise, warnings.catch_warnings():
          warnings.simplefilter("ignore", CompilerChoiceWarning)
          c.update(health_check(name if pname == dev.compiler_name else f"{name}:{pname}"))
        if not c["ok"] and c["error"]: c["error"] += _said(noise)
      d["compilers"].append(c)
  report["default_check_error"], report["checked"] = None, check
  if report["default_device"] and check:
    dd = report["default_device"]
    with CapturedStderr(): hc = health_check(dd)
    report["default_ok"], report["default_check_error"] = hc["ok"], hc["error"]
  elif not check:   # not checked: neither works nor fails, unless it does not even open (DEV=NV here, DEV=CPU:BOGUS)
    report["default_ok"] = None
    if report["default_device"]:
      try:
        with CapturedStderr() as noise: Device[report["default_device"]]
      except Exception as e: report["default_ok"], report["default_check_error"] = False, f"{type(e).__name__}: {e}{_said(noise)}"
  # what opening the devices warned about (a plugin's tinygrad_compilers pair skipped): the listing captured the stderr
  report["plugin_warnings"] = sorted(reg.warned)
  return report

def doctor(report: dict[str, Any]) -> dict[str, Any]:
  """Versions, API compatibility and the cache, added to a report."""
  from tinygrad.diskcache import cache_info
  report["doctor"] = {
    "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
    "versions": {d: _version(d) for d in ("tinygrad-core", "numpy", "pluggy")} | {p["distribution"]: p["version"] for p in report["plugins"] if p["distribution"]},
    "api": {p["name"]: {"declared": p["api_version"], "compatible": p["status"] != "incompatible"} for p in report["plugins"]},
    "cache": cache_info()}
  return report

def _print(report: dict[str, Any]) -> None:
  core = report["core"]
  print(f"tinygrad-core {core['version']} (plugin API {core['api_version']})\n\nplugins:")
  for p in report["plugins"]:
    dist = f"{p['distribution'] or '?'} {p['version']}".strip()
    print(f"  {p['name']:<14} {dist:<32} {p['status']:<12} {(', '.join(p['devices']) or '(adds compilers)') if p['status'] == 'ok' else p['error']}")
  print("\ndevices (* default):")
  for d in report["devices"]:
    also = f", also from {', '.join(x for x in d['providers'] if x != (d['distribution'] or d['plugin']))}" if len(d["providers"]) > 1 else ""
    print(f"{'*' if d['default'] else ' '} {d['name']:<10} {d['status']:<12} priority {d['priority']}, {d['plugin']} ({d['distribution'] or '?'}{also})"
          + (f": {d['reason']}" if d["reason"] else "") + (f" [{d['description']}]" if d.get("description") else ""))
    for c in d["compilers"]:
      if c["ok"]: state = f"ok ({c['note']})" if c.get("note") else "ok"
      else: state = f"FAIL: {c['error']}" if c["error"] is not None else "not checked (--no-check)"
      how = "default" if c["default"] else f"{' or '.join(c['select'])} to select"
      origin = f" [added by {c['origin']}]" if c.get("origin") else ""
      print(f"    {'*' if c['default'] else ' '} {c['name']:<10} {how:<40} {state}{origin}")
  if report.get("plugin_warnings"): print("\nplugin warnings:\n" + "\n".join(f"  {w}" for w in report["plugin_warnings"]))
  if report["default_error"]: print(f"\ndefault device: none: {report['default_error']}")
  else:
    fail = "FAILS to open" if report.get("default_check_error") and not report["checked"] else "FAILS its health check"
    fail += f": {report['default_check_error']}" if report.get("default_check_error") else ""
    state = {True: "works", None: "not checked (--no-check)"}.get(report["default_ok"], fail)
    print(f"\ndefault device: {report['default_device']} ({state})")
  if "doctor" in report:
    doc = report["doctor"]
    print(f"\npython: {doc['python']}")
    for k, v in doc["versions"].items(): print(f"  {k}: {v}")
    print("plugin API:", ", ".join(f"{k}={v['declared']}{'' if v['compatible'] else ' (incompatible)'}" for k, v in doc["api"].items()))
    cache = doc["cache"]
    print(f"cache: {cache['path']} ({cache['bytes']} bytes{'' if cache['enabled'] else ', disabled by CACHELEVEL=0'})")
    print("why this default:", "; ".join(report["default_reason"]) or "-")

def main(argv: list[str] | None = None) -> int:
  """Entry point of `python -m tinygrad` and the `tinygrad` console script."""
  ap = argparse.ArgumentParser(prog="tinygrad", description="List tinygrad plugins, devices and compilers, with a health check of each.")
  ap.add_argument("command", nargs="?", choices=["list", "doctor"], default="list")
  ap.add_argument("--json", action="store_true", help="machine-readable output")
  ap.add_argument("--no-check", action="store_true", help="skip the health checks (no kernels run)")
  args = ap.parse_args(argv)
  report = collect(check=not args.no_check)
  try:
    if args.command == "doctor": doctor(report)
    if args.json: print(json.dumps(report, indent=2, default=str))
    else: _print(report)
    sys.stdout.flush()
  except BrokenPipeError:   # the reader went away (`python -m tinygrad | head`): no traceback, and a quiet flush at exit
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1
  return 0 if report["default_ok"] or (args.no_check and report["default_device"] and report["default_ok"] is None) else 1

if __name__ == "__main__": sys.exit(main())
