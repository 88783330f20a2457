"""tinygrad-webgpu: the WEBGPU device plugin (WGSL through wgpu-py). Importing this package imports nothing heavy."""
