"""The conformance suite (tinygrad.conformance) collected here, so `pytest tests` runs it once on every installed device."""
import importlib
from tinygrad.conformance import MODULES

for _name in MODULES:
  for _k, _v in vars(importlib.import_module(f"tinygrad.conformance.{_name}")).items():
    if _k.startswith("Test") and isinstance(_v, type):
      assert _k not in globals(), f"two conformance modules define {_k}"
      globals()[_k] = _v
