"""tinygrad-cpu: the CPU device plugin (C via clang/gcc, LLVM IR via llvmlite). Importing this package imports nothing heavy."""
