"""Keep discovery tests hermetic: the plugins this environment installed (CPU, NV, ...) are disabled for them."""
def environment_plugins() -> list[str]:
  """Entry-point names of the tinygrad plugins installed in this environment (CPU, NV, ...), not the core's built-in.
  Tests of discovery and selection disable these, so they see only the plugins they install themselves."""
  from importlib.metadata import entry_points
  return sorted({ep.name for ep in entry_points(group="tinygrad.plugins")} - {"builtin"})

def hermetic_env(env: dict[str, str]) -> dict[str, str]:
  """`env` with this environment's plugins added to TINYGRAD_PLUGINS_DISABLE (for a subprocess)."""
  extra = environment_plugins()
  if not extra: return env
  have = [x for x in env.get("TINYGRAD_PLUGINS_DISABLE", "").split(",") if x]
  return {**env, "TINYGRAD_PLUGINS_DISABLE": ",".join(have + extra)}

def without_environment_plugins(plugins: list[dict]) -> list[dict]:
  """A listing's plugin rows without the ones this environment installed (they show as disabled)."""
  env = set(environment_plugins())
  return [p for p in plugins if p["name"] not in env]
