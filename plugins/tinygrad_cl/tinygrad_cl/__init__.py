"""tinygrad-cl: the CL device plugin (OpenCL C on the core's C-style base, pyopencl imported when the device opens), written
only against tinygrad.plugin_api."""
