"""tinygrad-template: the TEMPLATE device, a starting point for a new tinygrad device plugin (see docs/plugins.md)."""
# the prefix of every environment variable the plugin reads (TEMPLATE_CC, TEMPLATE_C, TEMPLATE_CC_PATH): change it here when
# the device's name is another tool's namespace (a device named OMP would read OMP_CC among OpenMP's OMP_* variables)
ENV_PREFIX = "TEMPLATE"
