"""Run the conformance suite (core/tinygrad/conformance) from `pytest tests`: register its pytest plugin here unless the
`pytest11` entry point (an installed tinygrad-core) or `-p tinygrad.conformance.plugin` already did.

`pytest_plugins` is not allowed in a non-root conftest, and registering twice would parametrize every test twice, hence
the check. pytest calls a late plugin's pytest_configure (and pytest_addoption) on registration; options it adds are
parsed already, so here the suite is steered by TEST_DEVICES / REQUIRE_DEVICES (see tinygrad/conformance/plugin.py).
"""
import importlib

def pytest_configure(config):
  plugin = importlib.import_module("tinygrad.conformance.plugin")
  if not config.pluginmanager.is_registered(plugin): config.pluginmanager.register(plugin, "tinygrad.conformance.plugin")
