#!/usr/bin/env bash
# The one set-up path for the system packages the backends use (run by `make system`, which `make test` and `make demo`
# depend on). Fast path: when every tool is present nothing runs (no apt). Else, as root with apt-get, it installs the
# missing packages and says which; otherwise it prints the backends that will be skipped and the one command that installs
# them. Never fails the build: a missing tool only turns its tests into skips (CI_STRICT=1 makes those failures).
#   TINYGRAD_NO_SYSTEM_SETUP=1   skip this step entirely
#   SETUP_DRY_RUN=1              say what would be installed, install nothing (tests use it)
#   SETUP_SYSROOT=DIR            look for the library/driver files under DIR (tests use it)
set -uo pipefail
[ "${TINYGRAD_NO_SYSTEM_SETUP:-0}" != "0" ] && { echo "system setup: skipped (TINYGRAD_NO_SYSTEM_SETUP=${TINYGRAD_NO_SYSTEM_SETUP})"; exit 0; }

# package | what uses it | the check that it is present (a command, or a file glob)
PACKAGES=(
  "clang|CPU:CLANG, AMD's HIP C (clang), Metal's syntax check (clang++)|cmd:clang"
  "lld|AMD:LLVM and AMD HIP C (links the GPU code objects)|cmd:ld.lld"
  "mesa-vulkan-drivers|WEBGPU on the CPU (lavapipe Vulkan driver)|glob:/usr/share/vulkan/icd.d/lvp_icd*.json"
  "libamd-comgr2|AMD:COMGR (AMD's HIP C compiler library, ROCm 5.2; a 13 MB download)|glob:/usr/lib/*/libamd_comgr.so.2"
  "pocl-opencl-icd|CL (the OpenCL plugin on POCL, the CPU's OpenCL driver)|glob:/etc/OpenCL/vendors/pocl.icd"
  "openmpi-bin|multi-process data parallelism (mpirun)|cmd:mpirun"
  "libopenmpi-dev|mpi4py's build (mpicc, MPI headers)|cmd:mpicc"
  "chromium|the VIZ page's browser tests (headless)|cmd:chromium"
  "chromium-driver|the VIZ page's browser tests (chromedriver)|cmd:chromedriver"
)

present() {   # present "cmd:NAME" | "glob:PATTERN"
  case "$1" in
    cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
    glob:*) compgen -G "${SETUP_SYSROOT:-}${1#glob:}" >/dev/null ;;
  esac
}

missing=() uses=() all=()
for row in "${PACKAGES[@]}"; do
  IFS='|' read -r pkg use check <<<"$row"
  all+=("$pkg")
  present "$check" || { missing+=("$pkg"); uses+=("$pkg: $use"); }
done
[ ${#missing[@]} -eq 0 ] && { echo "system setup: all present (${all[*]})"; exit 0; }

cmd="apt-get update && apt-get install -y ${missing[*]}"
can_install=0
[ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 && can_install=1
if [ "$can_install" = "1" ] && [ "${SETUP_DRY_RUN:-0}" != "0" ]; then echo "system setup: would install: ${missing[*]}"; exit 0; fi
if [ "$can_install" = "1" ]; then
  echo "system setup: installing ${missing[*]} (apt-get)"
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null); then
    echo "system setup: installed ${missing[*]}"; exit 0
  fi
  echo "system setup: apt-get failed; these backends will be skipped:"
else
  echo "system setup: not root or no apt-get: nothing installed; these backends' tests will be skipped:"
fi
printf '  %s\n' "${uses[@]}"
echo "to install them: ${cmd}   (as root; TINYGRAD_NO_SYSTEM_SETUP=1 silences this step)"
exit 0
