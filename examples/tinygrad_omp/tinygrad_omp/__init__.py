"""tinygrad-omp: the OMP device, C kernels parallelized with OpenMP (written from docs/plugins.md and tinygrad.plugin_api only)."""
# OpenMP reads OMP_*: this plugin's variables are TG_OMP_CC, TG_OMP_C and TG_OMP_CC_PATH (docs/plugins.md section 5)
ENV_PREFIX = "TG_OMP"
