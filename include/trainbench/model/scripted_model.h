// --compile 1: the handcraft network as a TorchScript module run by the graph executor (with the
// tensor-expression fuser where the build can fuse), over the very same parameter tensors as
// the eager modules, so both share names, shapes, checkpoints and the optimizer.
#pragma once

#include <string>

#include <torch/csrc/jit/api/module.h>

#include "trainbench/model/model.h"

namespace trainbench {

// TorchScript name of an eager parameter: '.' becomes '_' (blocks.0.qkv.weight →
// blocks_0_qkv_weight), since script attribute names are identifiers.
std::string script_parameter_name(const std::string& eager_name);

// The generated TorchScript source of the handcraft forward for these options (attention: naive,
// or torch.scaled_dot_product_attention with --flash 1).
std::string handcraft_script_source(const ModelOptions& options);

// A script module whose parameters are the handcraft model's tensors (shared, not copied),
// with a `training` attribute that train()/eval() switch. Throws ConfigError for a model
// that has no script form (the torch model).
torch::jit::Module script_handcraft(LanguageModel& eager);

// The compiled model: an eager handcraft model's parameters (same names) behind a scripted
// forward. train()/eval() reach the script module too.
std::shared_ptr<LanguageModel> make_scripted_model(const ModelOptions& options);

// The script module behind a compiled model, or nullptr for an eager one.
torch::jit::Module* script_module_of(LanguageModel& model);

// Turns on the graph executor's profiling mode and the tensor-expression fuser where the build
// can use it. Returns the backend name for summary.json: "torchscript+nnc" when kernels can be
// fused for this device (CUDA, or a CPU build with LLVM), else "torchscript".
std::string configure_script_executor(const torch::Device& device);

// Kernels the fuser made in the graph that ran last (prim::TensorExprGroup, prim::FusionGroup
// and prim::CudaFusionGroup nodes, counted inside differentiable subgraphs too).
int64_t last_graph_fusion_groups();

// Writes the trained network (eager or compiled handcraft) as a TorchScript file that
// torch.jit.load opens in Python and C++. Atomic: temp file + rename.
void save_torchscript(LanguageModel& model, const std::string& path);

}  // namespace trainbench
