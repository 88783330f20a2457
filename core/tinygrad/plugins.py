"""Plugins: the hook contract every backend implements, and discovery through the `tinygrad.plugins` entry points.

A plugin is a small module (conventionally `<package>/plugin.py`) named by an entry point in the group
`tinygrad.plugins` of its distribution's pyproject.toml:

    [project.entry-points."tinygrad.plugins"]
    foo = "tinygrad_foo.plugin"

and implementing the hooks of `TinygradHooks` with the `hookimpl` marker from this module. The core registers its own
PYTHON and NULL devices the same way (`tinygrad.runtime.builtin`). Discovery is explicit (`registry()`), cached and
resettable (`reset()`); it imports only each plugin's small module, never a device's toolchain.

Control variables, read when discovery runs:
  TINYGRAD_PLUGIN_AUTOLOAD=0            load no entry points, only the core's built-ins (also false/no/off, as every switch)
  TINYGRAD_PLUGINS_DISABLE=a,b          skip these plugins (entry point name or distribution name)
  TINYGRAD_DEVICE_PROVIDER_<DEV>=dist   when several plugins provide <DEV>, use this one (default: highest priority)
"""
from __future__ import annotations
import os, re, sys, importlib, warnings, dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar, TYPE_CHECKING
import pluggy
from tinygrad.helpers import env_switch
if TYPE_CHECKING:
  from tinygrad.device import CompilerPair

T = TypeVar("T")

API_VERSION = 1       # the version of this contract the core implements
MIN_API_VERSION = 1   # the oldest plugin API version the core still accepts
ENTRY_POINT_GROUP = "tinygrad.plugins"
BUILTIN_MODULE = "tinygrad.runtime.builtin"
# Host devices (CPU, PYTHON, NULL) are virtual: CPU:1 is a second instance on the same host, for multi-device code on one
# machine. They declare this many instances, so a typo (CPU:99999) is an error rather than a phantom device.
VIRTUAL_INSTANCES = 64

def guarded(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T | None, BaseException | None]:
  """Call plugin code: (result, None), or (None, what it raised). Anything a plugin raises is its fault and is caught,
  SystemExit included (a plugin exiting must not end the user's program); KeyboardInterrupt is the user stopping the
  program and always propagates."""
  try: return fn(*args, **kwargs), None
  except KeyboardInterrupt: raise
  except BaseException as e: return None, e

class PluginError(Exception):
  """A plugin broke the contract (a hook raised, or returned the wrong thing); the message names the hook and what it did."""

def _what(e: BaseException) -> str: return f"{type(e).__name__}: {e}"

def _hook_ref(x: Any) -> bool: return x is None or callable(x) or (isinstance(x, str) and ":" in x)

hookspec = pluggy.HookspecMarker("tinygrad")
hookimpl = pluggy.HookimplMarker("tinygrad")

@dataclass(frozen=True)
class DeviceSpec:
  """What a plugin tells the core about one device; nothing here imports the device's code.

  name: the device name users type (`DEV=FOO`): ASCII letters, digits and _, stored upper-case.
  priority: an int, order for choosing `Device.DEFAULT` (higher first); a negative priority is never chosen as the default.
  import_path: "module:Class" of the `Compiled` subclass, imported only when the device is opened.
  probe: None, a callable, or "module:function"; called with no arguments it returns (ok, reason) cheaply (check a
    driver file exists, never initialise hardware); reason says why the device is unusable when ok is False.
  compilers: None, a callable, or "module:function"; called with no arguments it returns the device's CompilerSet for
    compile-only use (a default target, no hardware opened), so `python -m tinygrad` can list and check the compilers of
    a device that is unavailable on this machine.
  instances: None, or how many instances exist (indices 0..instances-1), when that is known without opening the device
    (host devices declare VIRTUAL_INSTANCES); the core refuses a larger index. None: the device class checks its index.
  Every field is checked on construction (TypeError/ValueError naming the field and the value).
  """
  name: str
  priority: int
  import_path: str
  probe: str | Callable[[], tuple[bool, str]] | None = None
  compilers: str | Callable[[], Any] | None = None
  instances: int | None = None
  def __post_init__(self) -> None:
    def bad(field: str, want: str, exc: type[Exception] = TypeError) -> Exception:
      return exc(f"DeviceSpec.{field} must be {want}, got {getattr(self, field)!r}")
    if not isinstance(self.name, str): raise bad("name", "a str")
    if not re.fullmatch(r"[A-Za-z0-9_]+", self.name): raise bad("name", "ASCII letters, digits and _ (users type DEV=NAME)", ValueError)
    object.__setattr__(self, "name", self.name.upper())   # device names are case-insensitive: one spelling everywhere
    if not isinstance(self.priority, int) or isinstance(self.priority, bool): raise bad("priority", "an int")
    if not isinstance(self.import_path, str): raise bad("import_path", "a str 'module:Name'")
    if not re.fullmatch(r"[\w.]+:[\w.]+", self.import_path):
      raise ValueError(f"DeviceSpec.import_path must look like 'module:Name', got {self.import_path!r}")
    for f in ("probe", "compilers"):
      if not _hook_ref(getattr(self, f)): raise bad(f, "None, a callable or a 'module:function' string")
    if self.instances is not None and (not isinstance(self.instances, int) or isinstance(self.instances, bool) or self.instances < 1):
      raise bad("instances", "None or an int >= 1")

class TinygradHooks:
  """The plugin contract. Implement any of these as module-level functions decorated with `tinygrad.plugins.hookimpl`."""

  @hookspec
  def tinygrad_api_version(self) -> int:  # type: ignore[empty-body]
    """The plugin API version this plugin was written for. Required.

    Return `tinygrad.plugins.API_VERSION` as of the core you developed against. Called once at discovery, before any
    other hook; a plugin whose version is outside [MIN_API_VERSION, API_VERSION] is refused (reported by
    `python -m tinygrad`, and raised when its device is asked for).
    """

  @hookspec
  def tinygrad_devices(self) -> list[DeviceSpec]:  # type: ignore[empty-body]
    """The devices this plugin provides.

    Returns a list of `DeviceSpec`. Called once at discovery (so it must be cheap: no driver or toolchain imports).
    When the user opens a device (`Device["FOO:1"]`), the core runs its probe, imports `import_path` and calls
    `Class(device)` with the canonical device name including a non-zero index ("FOO", "FOO:1"). The class subclasses
    `tinygrad.device.Compiled` and passes its `CompilerSet` to `Compiled.__init__`, which picks the compiler pair: the
    compiler part of the device string ("FOO:1:LLVM") reaches `Compiled.__init__` through the registry (the
    `tinygrad.device.compiler_choice()` context variable, set while the class is constructed), so the class never
    parses it. Several plugins may provide the same name: the highest priority wins unless
    TINYGRAD_DEVICE_PROVIDER_<NAME>=<distribution> picks one.
    """

  @hookspec
  def tinygrad_compilers(self, device: str) -> list[CompilerPair]:  # type: ignore[empty-body]
    """Extra compiler pairs for `device`, which may belong to another plugin.

    device: the device's base name, upper-case, without index or compiler ("CPU", "NV").
    Returns a list of `tinygrad.device.CompilerPair` (an empty list when this plugin adds nothing for `device`).
    Called each time a device is opened, after its own pairs are known; the returned pairs are appended after the
    device's own pairs (in plugin load order), and are selectable by name through the device's control variable
    (`FOO_CC=NAME`), the device string (`DEV=FOO:NAME`) or the pair's own ctrl_var (`FOO_NAME=1`).
    """

@dataclass
class PluginInfo:
  """One discovered plugin, as shown by `python -m tinygrad`."""
  name: str                   # entry point name ("builtin" for the core's own)
  module: str                 # what the entry point names
  dist: str = ""              # distribution that declares it
  version: str = ""           # that distribution's version
  status: str = "ok"          # ok | failed | incompatible | disabled | not loaded
  error: str = ""             # why it is not ok
  api_version: int | None = None
  devices: list[str] = field(default_factory=list)
  exc: BaseException | None = field(default=None, repr=False)
  obj: Any = field(default=None, repr=False)

@dataclass
class DeviceEntry:
  spec: DeviceSpec
  plugin: PluginInfo

def _norm(s: str) -> str: return re.sub(r"[-_.]+", "-", s).lower()

def load_object(path: str) -> Any:
  """Import "module:attr.attr" and return the attribute."""
  mod, sep, attr = path.partition(":")
  if not sep or not mod or not attr: raise ValueError(f"import path must look like 'module:Name', got {path!r}")
  obj: Any = importlib.import_module(mod)
  for part in attr.split("."): obj = getattr(obj, part)
  return obj

class Registry:
  """The result of discovery: plugins (loaded or not, with why), and who provides each device."""
  def __init__(self) -> None:
    self.pm = pluggy.PluginManager("tinygrad")
    self.pm.add_hookspecs(TinygradHooks)
    self.plugins: list[PluginInfo] = []
    self.candidates: dict[str, list[DeviceEntry]] = {}   # device name -> providers, in load order
    self.warned: set[str] = set()   # tinygrad_compilers faults already warned about: once each, not at every open of the device

  def _impls(self, hook: str, obj: Any) -> list[Any]:
    return [i for i in getattr(self.pm.hook, hook).get_hookimpls() if i.plugin is obj]

  def _fail(self, info: PluginInfo, status: str, error: str, exc: BaseException | None = None) -> None:
    info.status, info.error, info.exc = status, error, exc
    warnings.warn(f"tinygrad plugin {info.name!r} (distribution {info.dist or '?'}) {error}; skipped", RuntimeWarning, stacklevel=4)

  def info_of(self, obj: Any) -> PluginInfo | None:
    """The PluginInfo of a registered hooks object (to blame its distribution by name)."""
    return next((p for p in self.plugins if p.obj is obj), None)

  def _specs(self, obj: Any) -> list[DeviceSpec]:
    out: list[DeviceSpec] = []
    for impl in self._impls("tinygrad_devices", obj):
      got, err = guarded(impl.function)
      if err is not None: raise PluginError(f"tinygrad_devices() raised {_what(err)}") from err
      if got is None: continue
      if not isinstance(got, (list, tuple)): raise PluginError(f"tinygrad_devices() must return a list of DeviceSpec, got {got!r}")
      for s in got:
        if not isinstance(s, DeviceSpec): raise PluginError(f"tinygrad_devices() must return DeviceSpec objects, got {s!r}")
      out.extend(got)
    return out

  def add(self, info: PluginInfo, loader: Callable[[], Any]) -> PluginInfo:
    """Load one plugin through `loader`, check its API version and hooks, and record its devices; never raises (but
    KeyboardInterrupt), whatever the plugin's module or hooks raise or return."""
    self.plugins.append(info)
    obj, err = guarded(loader)
    if err is not None:
      self._fail(info, "failed", f"failed to import {info.module}: {_what(err)}", err)
      return info
    info.obj = obj
    _, err = guarded(self.pm.register, obj, name=f"{info.name}#{len(self.plugins)}")
    if err is not None:
      self._fail(info, "failed", f"hooks do not match the contract: {err}", err)
      return info
    version: list[Any] = []
    for impl in self._impls("tinygrad_api_version", obj):
      v, err = guarded(impl.function)
      why = f"raised {_what(err)}" if err is not None else "" if isinstance(v, int) and not isinstance(v, bool) else f"returned {v!r}, not an int"
      if why:
        self.pm.unregister(obj)
        self._fail(info, "failed", f"tinygrad_api_version() {why}", err)
        return info
      version.append(v)
    if not version or not MIN_API_VERSION <= version[0] <= API_VERSION:
      specs, _ = guarded(self._specs, obj)   # only to name its devices in errors; it is refused either way
      info.devices = [s.name for s in specs or []]
      self.pm.unregister(obj)
      info.api_version = version[0] if version else None
      what = f"declares plugin API version {version[0]}" if version else "does not implement tinygrad_api_version()"
      supported = str(API_VERSION) if MIN_API_VERSION == API_VERSION else f"{MIN_API_VERSION}..{API_VERSION}"
      self._fail(info, "incompatible", f"{what}, but this tinygrad-core supports API version {supported}; "
                 f"install a release of {info.dist or info.name} made for API {API_VERSION}")
      return info
    def check() -> list[DeviceSpec]:
      self.pm.check_pending()   # a misspelt hook name is an error, not a silently ignored function
      return self._specs(obj)
    specs, err = guarded(check)
    if err is not None or specs is None:
      self.pm.unregister(obj)
      self._fail(info, "failed", str(err) if isinstance(err, PluginError) else f"hook check failed: {_what(err) if err else 'no result'}", err)
      return info
    info.devices = [s.name for s in specs]
    info.api_version = version[0]
    for s in specs:
      if info.module != BUILTIN_MODULE and any(e.plugin.module == BUILTIN_MODULE for e in self.candidates.get(s.name, [])):
        # the core's PYTHON (the reference), NULL and DISK (safe_load's files) are not replaced by priority: only on request
        self._warn_once(f"tinygrad plugin {info.name!r} (distribution {info.dist or '?'}) declares device {s.name}, a device built "
                        f"into tinygrad-core: the core's is used unless TINYGRAD_DEVICE_PROVIDER_{s.name}={info.dist or info.name}; "
                        "give your device a name of its own", stacklevel=5)
      self.candidates.setdefault(s.name, []).append(DeviceEntry(s, info))
    return info

  def devices(self) -> list[DeviceEntry]:
    """The chosen provider of every installed device, highest priority first."""
    out = []
    for name in self.candidates:
      try: out.append(self.provider(name))
      except RuntimeError:   # a wrong TINYGRAD_DEVICE_PROVIDER_: list the default provider, opening it reports the error
        out.append(max(self.candidates[name], key=lambda e: e.spec.priority))
    return sorted(out, key=lambda e: -e.spec.priority)

  def provider(self, name: str) -> DeviceEntry:
    """The entry that provides device `name` (base name); raises DeviceError if none or TINYGRAD_DEVICE_PROVIDER_ is wrong."""
    from tinygrad.device import DeviceError   # discovery itself never needs device.py (nor the renderer it imports)
    cands = self.candidates.get(name.upper(), [])
    if not cands: raise DeviceError(f"no plugin provides device {name!r}")
    var = f"TINYGRAD_DEVICE_PROVIDER_{name.upper()}"
    want = os.environ.get(var, "").strip()
    if want:
      pick = [e for e in cands if _norm(want) in (_norm(e.plugin.dist), _norm(e.plugin.name))]
      if not pick:
        raise DeviceError(f"{var}={want!r} names no provider of {name.upper()}; providers: "
                          + ", ".join(f"{e.plugin.dist or e.plugin.name}" for e in cands))
      return pick[0]
    core = [e for e in cands if e.plugin.module == BUILTIN_MODULE]
    if core: return core[0]   # a built-in device is the core's unless the variable picks another provider (add() warned)
    return max(cands, key=lambda e: e.spec.priority)   # ties: the first loaded

  def failed_for(self, name: str) -> list[PluginInfo]:
    """Plugins that did not load and (as far as can be told) would have provided device `name`."""
    n = name.lower()
    return [p for p in self.plugins if p.status != "ok" and (name.upper() in p.devices or _norm(p.name) == n or
            _norm(p.dist) in (n, f"tinygrad-{n}") or _norm(p.dist).endswith(f"-{n}"))]

  def extra_compilers(self, device: str, taken: Iterable[str] = ()) -> list[CompilerPair]:
    """Pairs that plugins add to `device` through tinygrad_compilers, in load order, each with `origin` naming its plugin.
    A hook that raises or returns anything but a list of CompilerPair is skipped with a warning naming its plugin and
    distribution (never the device's); so is a pair whose name the device (`taken`) or an earlier plugin already uses."""
    from tinygrad.device import CompilerPair
    out: list[CompilerPair] = []
    names = {n.upper() for n in taken}
    for impl in self.pm.hook.tinygrad_compilers.get_hookimpls():
      got, err = guarded(impl.function, device=device)
      info = self.info_of(impl.plugin)
      who = f"{info.name!r} (distribution {info.dist or '?'})" if info is not None else repr(impl.plugin_name)
      if err is not None: why = f"raised {_what(err)}"
      elif got is None: continue
      elif not isinstance(got, (list, tuple)): why = f"must return a list of CompilerPair, got {got!r}"
      elif (bad := [p for p in got if not isinstance(p, CompilerPair) or not isinstance(p.name, str) or not p.name]):
        why = f"returned {bad[0]!r}, not a CompilerPair" if not isinstance(bad[0], CompilerPair) else f"returned a pair named {bad[0].name!r}"
      else:
        for p in got:   # a second pair of one name could never be selected (CPU_CC=LLVM picks the first), and the listing
          if p.name.upper() in names:   # would show two defaults: refuse it, loudly
            self._warn_once(f"tinygrad plugin {who}: tinygrad_compilers({device!r}) returned a pair named {p.name!r}, a name {device} "
                            f"already has ({', '.join(sorted(names))}); that pair is skipped: rename it")
            continue
          names.add(p.name.upper())
          out.append(dataclasses.replace(p, origin=f"plugin {who}"))
        continue
      self._warn_once(f"tinygrad plugin {who}: tinygrad_compilers({device!r}) {why}; its pairs are skipped")
    return out

  def _warn_once(self, msg: str, stacklevel: int = 4) -> None:
    if msg in self.warned: return
    self.warned.add(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=stacklevel)

def _call_ref(ref: str | Callable[[], Any]) -> tuple[Any, BaseException | None]:
  return guarded(lambda: (load_object(ref) if isinstance(ref, str) else ref)())

def probe(entry: DeviceEntry) -> tuple[bool, str]:
  """Run a device's cheap availability probe: (ok, reason). A probe that raises, or returns anything but a pair, is not ok."""
  if entry.spec.probe is None: return True, ""
  got, err = _call_ref(entry.spec.probe)
  if err is not None: return False, f"probe raised {_what(err)}"
  if not isinstance(got, (tuple, list)) or len(got) != 2: return False, f"probe returned {got!r}; expected (ok: bool, reason: str)"
  return bool(got[0]), str(got[1])

def compile_only_pairs(entry: DeviceEntry) -> tuple[Any, str | None]:
  """(CompilerSet or None, error) from the spec's `compilers` hook: the pairs of a device that cannot be opened here."""
  from tinygrad.device import CompilerSet, CompilerPair
  if entry.spec.compilers is None: return None, None
  got, err = _call_ref(entry.spec.compilers)
  if err is not None: return None, _what(err)
  if not isinstance(got, CompilerSet) or not all(isinstance(p, CompilerPair) for p in got.cset):
    return None, f"compilers hook returned {got!r}, not a CompilerSet of CompilerPairs"
  return got, None

@dataclass(frozen=True)
class EntryPoint:
  name: str
  value: str
  dist: str
  version: str
  def load(self) -> Any: return load_object(self.value) if ":" in self.value else importlib.import_module(self.value)

def _header(path: str) -> dict[str, str]:
  # the Name/Version fields of a METADATA (or PKG-INFO) file: RFC 822 headers up to the first blank line
  out: dict[str, str] = {}
  try:
    with open(path, encoding="utf-8", errors="replace") as f:
      for line in f:
        if not line.strip(): break
        key, sep, val = line.partition(":")
        if sep and key in ("Name", "Version"): out.setdefault(key, val.strip())
  except OSError: pass
  return out

def entry_points(group: str = ENTRY_POINT_GROUP) -> list[EntryPoint]:
  """The entry points of `group` of every distribution on sys.path (the first of each name wins, as importlib.metadata does).

  Reads the *.dist-info / *.egg-info directories directly: importing importlib.metadata alone (email, zipfile, csv ...)
  costs more than `import tinygrad`, and discovery must stay a small fraction of it. Zipped distributions are not seen.
  """
  seen: set[str] = set()
  out: list[EntryPoint] = []
  for base in sys.path:
    try: names = sorted(os.listdir(base or "."))
    except OSError: continue
    for n in names:
      if not n.endswith((".dist-info", ".egg-info")): continue
      key = _norm(n.rsplit(".", 1)[0].split("-")[0])
      if key in seen: continue
      seen.add(key)
      d = os.path.join(base or ".", n)
      try:
        with open(os.path.join(d, "entry_points.txt"), encoding="utf-8") as f: text = f.read()
      except OSError: continue
      section, found = None, []
      for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"): section = line[1:-1].strip()
        elif section == group and "=" in line and not line.startswith(("#", ";")):
          name, _, value = line.partition("=")
          found.append((name.strip(), value.split("[")[0].strip()))   # drop "[extras]"
      if found:
        meta = _header(os.path.join(d, "METADATA" if n.endswith(".dist-info") else "PKG-INFO"))
        out += [EntryPoint(name, value, meta.get("Name", key), meta.get("Version", "")) for name, value in found]
  return out

def _discover() -> Registry:
  reg = Registry()
  try: eps = entry_points()
  except Exception as e:   # a broken dist-info elsewhere on sys.path must not take the core down
    warnings.warn(f"tinygrad: reading entry points failed ({type(e).__name__}: {e}); only built-in devices", RuntimeWarning)
    eps = []
  # the core's own plugin loads first and always, even from a source tree (PYTHONPATH=core, no entry points visible)
  core = [ep for ep in eps if ep.value == BUILTIN_MODULE]
  reg.add(PluginInfo(core[0].name if core else "builtin", BUILTIN_MODULE, core[0].dist if core else "tinygrad-core",
                     (core[0].version if core else "") or "(source tree)"), lambda: importlib.import_module(BUILTIN_MODULE))
  autoload = env_switch("TINYGRAD_PLUGIN_AUTOLOAD") != 0   # 0 (or false, no, off): load no plugins but the built-ins (PYTHON, NULL)
  disabled = {_norm(x.strip()) for x in os.environ.get("TINYGRAD_PLUGINS_DISABLE", "").split(",") if x.strip()}
  for ep in sorted((ep for ep in eps if ep.value != BUILTIN_MODULE), key=lambda ep: (ep.name, ep.dist)):
    if not autoload: reg.plugins.append(PluginInfo(ep.name, ep.value, ep.dist, ep.version, "not loaded",
                                                    f"TINYGRAD_PLUGIN_AUTOLOAD={os.environ['TINYGRAD_PLUGIN_AUTOLOAD'].strip()}"))
    elif _norm(ep.name) in disabled or _norm(ep.dist) in disabled:
      reg.plugins.append(PluginInfo(ep.name, ep.value, ep.dist, ep.version, "disabled", "listed in TINYGRAD_PLUGINS_DISABLE"))
    else: reg.add(PluginInfo(ep.name, ep.value, ep.dist, ep.version), ep.load)
  return reg

_registry: Registry | None = None

def registry() -> Registry:
  """Discover plugins (once; cached until `reset()`) and return the registry."""
  global _registry
  if _registry is None: _registry = _discover()
  return _registry

def register(plugin: Any, name: str, dist: str = "") -> PluginInfo:
  """Register a plugin object in this process (tests, notebooks), with the same checks as an installed one."""
  return registry().add(PluginInfo(name, getattr(plugin, "__name__", type(plugin).__name__), dist), lambda: plugin)

def reset() -> None:
  """Forget discovery; the next `registry()` rediscovers (reading the control variables again)."""
  global _registry
  _registry = None
