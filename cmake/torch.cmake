# LibTorch from the PyPI torch wheel inside the project's virtual environment (made by
# scripts/install_deps.sh). Nothing is found from the system by accident: find_package(Torch)
# looks only under the environment's torch.utils.cmake_prefix_path.
# Sets TB_TORCH_VERSION, TB_TORCH_CUDA (the CUDA version the wheel was built for, "" for a CPU
# build), TB_WITH_CUDA, TB_WITH_GLOO (+ TB_GLOO_INCLUDE_DIR), TB_WITH_NCCL (+ TB_NCCL_INCLUDE_DIR).
set(TB_VENV "${PROJECT_SOURCE_DIR}/.venv" CACHE PATH "Virtual environment that holds torch")
# The interpreter whose torch is used; a machine with a system-wide torch (the GPU machine)
# passes its python here instead of a venv.
set(TB_PYTHON "${TB_VENV}/bin/python" CACHE FILEPATH "Python whose torch wheel is LibTorch")
set(TB_TORCH_MIN_VERSION 2.11)
set(TB_FIX "run scripts/install_deps.sh (or set -DTB_PYTHON=...)")

if(NOT EXISTS "${TB_PYTHON}")
  message(FATAL_ERROR "trainbench: no virtual environment at ${TB_VENV} (${TB_PYTHON} is "
                      "missing); ${TB_FIX}")
endif()
execute_process(
  COMMAND "${TB_PYTHON}" -c
    "import torch, torch.distributed as d; print(torch.__version__); \
print(torch.utils.cmake_prefix_path); print(torch.version.cuda or ''); \
print(int(d.is_available() and d.is_gloo_available()))"
  OUTPUT_VARIABLE tb_out ERROR_VARIABLE tb_err RESULT_VARIABLE tb_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT tb_rc EQUAL 0)
  message(FATAL_ERROR "trainbench: ${TB_PYTHON} cannot import torch; ${TB_FIX}")
endif()
string(REPLACE "\n" ";" tb_out "${tb_out}")
list(GET tb_out 0 TB_TORCH_VERSION)
list(GET tb_out 1 tb_prefix)
list(GET tb_out 2 TB_TORCH_CUDA)
list(GET tb_out 3 tb_torch_gloo)
string(REGEX MATCH "^[0-9]+\\.[0-9]+" tb_torch_mm "${TB_TORCH_VERSION}")
if(tb_torch_mm VERSION_LESS TB_TORCH_MIN_VERSION)
  message(FATAL_ERROR "trainbench: torch ${TB_TORCH_VERSION} found by ${TB_PYTHON}; supported: "
                      "${TB_TORCH_MIN_VERSION} and later (pinned torch==2.11.*); ${TB_FIX}")
endif()

# A CUDA wheel's TorchConfig needs the CUDA toolkit of the same major.minor: the wheel's
# libraries and the code nvcc compiles here must agree on one runtime.
if(TB_TORCH_CUDA)
  find_program(TB_NVCC nvcc HINTS ENV CUDA_HOME PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
  if(NOT TB_NVCC)
    message(FATAL_ERROR "trainbench: torch ${TB_TORCH_VERSION} is a CUDA ${TB_TORCH_CUDA} build "
                        "and needs the CUDA ${TB_TORCH_CUDA} toolkit (nvcc), none found; install "
                        "it or put its bin/ on PATH")
  endif()
  execute_process(COMMAND "${TB_NVCC}" --version OUTPUT_VARIABLE tb_nvcc_out)
  string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" tb_nvcc_rel "${tb_nvcc_out}")
  if(NOT CMAKE_MATCH_1 VERSION_EQUAL TB_TORCH_CUDA)
    message(FATAL_ERROR "trainbench: torch ${TB_TORCH_VERSION} is a CUDA ${TB_TORCH_CUDA} build "
                        "but ${TB_NVCC} is CUDA ${CMAKE_MATCH_1}; put the CUDA ${TB_TORCH_CUDA} "
                        "toolkit first on PATH (or set CUDA_HOME)")
  endif()
  set(CMAKE_CUDA_COMPILER "${TB_NVCC}" CACHE FILEPATH "nvcc matching the torch wheel")
  get_filename_component(tb_cuda_root "${TB_NVCC}" DIRECTORY)
  get_filename_component(tb_cuda_root "${tb_cuda_root}" DIRECTORY)
  set(CUDAToolkit_ROOT "${tb_cuda_root}")
  # The wheel's TorchConfig asks for the architectures of its own build when none is given;
  # ours: sm_90 (H100, H200) with PTX for newer GPUs, plus the architecture of each GPU this
  # machine has (nvidia-smi's compute capability, as CMake's "native" reads it), so that an
  # A100 or an RTX 4090 builds for itself; without a GPU, 9.0+PTX alone, at no cost.
  if(NOT TORCH_CUDA_ARCH_LIST)
    set(tb_archs "")
    find_program(TB_NVIDIA_SMI nvidia-smi)
    if(TB_NVIDIA_SMI)
      execute_process(COMMAND "${TB_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                      OUTPUT_VARIABLE tb_caps RESULT_VARIABLE tb_smi_rc ERROR_QUIET TIMEOUT 20)
      if(tb_smi_rc EQUAL 0)
        string(REGEX MATCHALL "[0-9]+\\.[0-9]+" tb_caps "${tb_caps}")
        foreach(cap ${tb_caps})
          # CUDA 13 compiles for sm_75 and newer; 9.0 is in the list already.
          if(cap VERSION_GREATER_EQUAL 7.5 AND NOT cap VERSION_EQUAL 9.0)
            list(APPEND tb_archs "${cap}")
          endif()
        endforeach()
        list(REMOVE_DUPLICATES tb_archs)
      endif()
    endif()
    list(APPEND tb_archs "9.0+PTX")
    set(TORCH_CUDA_ARCH_LIST "${tb_archs}" CACHE STRING "CUDA architectures for our kernels")
  endif()
  message(STATUS "trainbench: CUDA kernels for TORCH_CUDA_ARCH_LIST ${TORCH_CUDA_ARCH_LIST}")
endif()

if(TB_TORCH_CUDA)
  # Caffe2's cuda.cmake warns when CMake's own architecture list is set and then ignores it
  # (TORCH_CUDA_ARCH_LIST above rules); enable CUDA first and drop CMake's default list.
  enable_language(CUDA)
  unset(CMAKE_CUDA_ARCHITECTURES)
  unset(CMAKE_CUDA_ARCHITECTURES CACHE)
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()
# The wheel has no libkineto (the profiler is inside libtorch_cpu); give TorchConfig's lookup a
# library it already links so it does not warn about the missing one.
set(kineto_LIBRARY "${tb_prefix}/../../lib/libtorch_cpu.so" CACHE FILEPATH "")
# TorchConfig finds its Caffe2 package with PATHS, which CMake searches only after the system's
# prefixes: with Debian's libtorch-dev installed (/usr/lib/x86_64-linux-gnu/cmake/Caffe2, as
# python3-torch pulls in) that one won, and bench linked LibTorch 1.13 beside the wheel's. Every
# package TorchConfig pulls in comes from the venv.
set(Caffe2_DIR "${tb_prefix}/Caffe2" CACHE PATH "Caffe2 package of the venv's torch" FORCE)
# The same for the libraries: TorchConfig.cmake finds TORCH_LIBRARY, c10_LIBRARY,
# C10_CUDA_LIBRARY (and Caffe2's lookups theirs) with find_library(... PATHS torch/lib), and
# find_library searches CMAKE_PREFIX_PATH and the system's library folders first: with Debian's
# libtorch-dev installed, /usr/lib/x86_64-linux-gnu/libtorch.so and libc10.so won and bench
# linked LibTorch 1.13 beside 2.11. Each is set to the venv's file before the lookup (FORCE:
# a cache from before the fix holds the system's), and checked after it.
get_filename_component(tb_torch_lib "${tb_prefix}/../../lib" REALPATH)
set(tb_torch_lib_vars TORCH_LIBRARY c10_LIBRARY C10_CUDA_LIBRARY TORCH_CPU_LIBRARY
    TORCH_CUDA_LIBRARY CAFFE2_NVRTC_LIBRARY)
set(tb_torch_lib_names torch c10 c10_cuda torch_cpu torch_cuda caffe2_nvrtc)
foreach(tb_var tb_name IN ZIP_LISTS tb_torch_lib_vars tb_torch_lib_names)
  if(EXISTS "${tb_torch_lib}/lib${tb_name}.so")
    set(${tb_var} "${tb_torch_lib}/lib${tb_name}.so" CACHE FILEPATH
        "lib${tb_name}.so of the venv's torch" FORCE)
  endif()
endforeach()
find_package(Torch REQUIRED CONFIG PATHS "${tb_prefix}/Torch" NO_DEFAULT_PATH)
# Any LibTorch library that still resolved elsewhere (a name the venv lacks, found in the
# system's folders) stops the configure, naming it.
foreach(tb_var ${tb_torch_lib_vars} kineto_LIBRARY)
  if(${tb_var} AND NOT "${${tb_var}}" MATCHES "NOTFOUND$")
    get_filename_component(tb_real "${${tb_var}}" REALPATH)
    string(FIND "${tb_real}" "${tb_torch_lib}/" tb_at)
    if(NOT tb_at EQUAL 0)
      message(FATAL_ERROR "trainbench: ${tb_var} is ${${tb_var}}, not a library of the venv's "
                          "torch (${tb_torch_lib}); remove the other LibTorch (e.g. apt remove "
                          "libtorch-dev) or take it off CMAKE_PREFIX_PATH")
    endif()
  endif()
endforeach()
foreach(tb_pkg Torch Caffe2)
  get_filename_component(tb_pkg_dir "${${tb_pkg}_DIR}" REALPATH)
  get_filename_component(tb_want "${tb_prefix}" REALPATH)
  string(FIND "${tb_pkg_dir}" "${tb_want}" tb_at)
  if(NOT tb_at EQUAL 0)
    message(FATAL_ERROR "trainbench: ${tb_pkg} came from ${tb_pkg_dir}, not from the venv's "
                        "torch (${tb_want}); remove the other LibTorch from CMAKE_PREFIX_PATH")
  endif()
endforeach()

set(TB_WITH_CUDA OFF)
if(TB_TORCH_CUDA AND TARGET torch_cuda)
  set(TB_WITH_CUDA ON)
endif()

# Gloo: the wheel links Gloo into libtorch_cpu but ships no Gloo headers, and c10d's
# ProcessGroupGloo.hpp includes five of them. Debian's libgloo-dev (2022) gives the declarations;
# that header guards the newer Store methods behind GLOO_STORE_HAS_STORE_V2, and our code only
# holds Gloo objects through pointers made inside libtorch, so no Gloo layout crosses the
# boundary. Debian's libgloo itself is never linked (libtorch_cpu has its own copy);
# tests/dist/test_gloo_abi checks that our binaries define no gloo symbol.
set(TB_WITH_GLOO OFF)
find_path(TB_GLOO_INCLUDE_DIR gloo/rendezvous/store.h HINTS ENV TB_GLOO_INCLUDE_DIR
          PATHS /usr/include NO_CMAKE_PATH)
if(tb_torch_gloo AND TB_GLOO_INCLUDE_DIR)
  set(TB_WITH_GLOO ON)
endif()

# NCCL: the header of the NCCL wheel that libtorch_cuda loads, not the toolkit's copy.
set(TB_WITH_NCCL OFF)
if(TB_WITH_CUDA)
  file(GLOB tb_nccl_dirs "${tb_prefix}/../../../nvidia/nccl/include")
  find_path(TB_NCCL_INCLUDE_DIR nccl.h PATHS ${tb_nccl_dirs} NO_DEFAULT_PATH)
  if(TB_NCCL_INCLUDE_DIR)
    set(TB_WITH_NCCL ON)
  endif()
endif()
message(STATUS "trainbench: LibTorch ${TB_TORCH_VERSION} (${TB_PYTHON}), CUDA code: "
               "${TB_WITH_CUDA}, Gloo: ${TB_WITH_GLOO}, NCCL: ${TB_WITH_NCCL}")
