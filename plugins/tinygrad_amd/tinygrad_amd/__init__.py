"""tinygrad-amd: the AMD device plugin (HIP C via hiprtc/clang, AMDGPU LLVM IR via llvmlite + lld, HIP runtime). Importing this package imports nothing heavy."""
