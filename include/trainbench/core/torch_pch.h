// The precompiled header of the LibTorch translation units (see CMakeLists.txt): the LibTorch
// headers they use, not torch/torch.h whole (no optim, data, serialize, jit, fft, linalg, ...).
// A file still includes what it uses; this only spares the parsing.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

#include <nlohmann/json.hpp>
