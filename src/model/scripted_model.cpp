// TorchScript twin of the handcraft model: generated source + shared parameters.
#include "trainbench/model/scripted_model.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include "trainbench/core/atomic_file.h"
#include "trainbench/core/errors.h"

namespace torch::jit {
// Exported by libtorch but declared in a header Debian's package does not ship.
TORCH_API bool canFuseOnCPU();
TORCH_API bool canFuseOnGPU();
}  // namespace torch::jit

namespace trainbench {

std::string script_parameter_name(const std::string& eager_name) {
  std::string s = eager_name;
  for (char& c : s)
    if (c == '.') c = '_';
  return s;
}

namespace {

std::string literal_(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string handcraft_script_source(const ModelOptions& o) {
  const int64_t hd = o.d_model / o.num_heads;
  const std::string P = literal_(o.dropout), D = std::to_string(o.d_model);
  std::ostringstream s;
  // The block: the same ops, in the same order, as BlockImpl::forward in handcraft_model.cpp.
  s << "def block(self, x, mask, ln1_w, ln1_b, qkv_w, qkv_b, out_w, out_b, ln2_w, ln2_b, "
       "ff1_w, ff1_b, ff2_w, ff2_b):\n"
    << "    S = x.size(0)\n    B = x.size(1)\n"
    << "    a = torch.layer_norm(x, [" << D << "], ln1_w, ln1_b, 1e-05, True)\n"
    << "    qkv = torch.linear(a, qkv_w, qkv_b).view(S, B, 3, " << o.num_heads << ", " << hd
    << ").permute(2, 1, 3, 0, 4)\n"
    << "    q, k, v = qkv.unbind(0)\n";
  if (o.flash) {
    s << "    o = torch.scaled_dot_product_attention(q, k, v, None, 0.0, True)\n";
  } else {
    s << "    scores = torch.matmul(q, k.transpose(-2, -1)) * "
      << literal_(1.0 / std::sqrt(double(hd))) << "\n    w = torch.softmax(scores + mask, -1)\n"
      << "    o = torch.matmul(w.to(v.dtype), v)\n";
  }
  s << "    o = o.permute(2, 0, 1, 3).reshape(S, B, " << D << ")\n"
    << "    h = x + torch.dropout(torch.linear(o, out_w, out_b), " << P << ", self.training)\n"
    << "    f = torch.layer_norm(h, [" << D << "], ln2_w, ln2_b, 1e-05, True)\n"
    << "    f = torch.dropout(torch.relu(torch.linear(f, ff1_w, ff1_b)), " << P
    << ", self.training)\n"
    << "    return h + torch.dropout(torch.linear(f, ff2_w, ff2_b), " << P
    << ", self.training)\n\n";
  // forward: embedding, right shift, positions, dropout, the blocks, the output layer.
  s << "def forward(self, x):\n"
    << "    S = x.size(0)\n"
    << "    e = torch.embedding(self.embed_weight, x)\n"
    << "    e = torch.cat([torch.zeros_like(e[0:1]), e[0:S - 1]], 0)\n"
    << "    h = torch.dropout(e + self.pos[0:S].unsqueeze(1), " << P << ", self.training)\n"
    << "    mask = torch.triu(torch.full([S, S], float('-inf'), "
       "device=x.device), 1)\n";
  for (int64_t i = 0; i < o.num_layer; ++i) {
    const std::string b = "self.blocks_" + std::to_string(i) + "_";
    s << "    h = self.block(h, mask";
    for (const char* p :
         {"ln1_weight", "ln1_bias", "qkv_weight", "qkv_bias", "out_weight", "out_bias",
          "ln2_weight", "ln2_bias", "ff1_weight", "ff1_bias", "ff2_weight", "ff2_bias"}) {
      s << ", " << b << p;
    }
    s << ")\n";
  }
  s << "    return torch.linear(h, self.head_weight, self.head_bias)\n";
  return s.str();
}

torch::jit::Module script_handcraft(LanguageModel& eager) {
  if (!eager.named_parameters().contains("blocks.0.qkv.weight")) {
    throw ConfigError("only the handcraft model has a TorchScript form; use --model handcraft");
  }
  torch::jit::Module m("TrainbenchHandcraft");
  for (const auto& p : eager.named_parameters()) {
    m.register_parameter(script_parameter_name(p.key()), p.value(), /*is_buffer=*/false);
  }
  // Without this attribute `self.training` does not compile and train()/eval() do nothing.
  m.register_attribute("training", c10::BoolType::get(), eager.is_training());
  m.define(handcraft_script_source(eager.options()));
  return m;
}

namespace {

class ScriptedModel : public LanguageModel {
 public:
  explicit ScriptedModel(const ModelOptions& o) : eager_(make_handcraft_model(o)) {
    // Re-register the eager children and parameters under the same names, so that
    // parameters(), named_parameters(), to() and save()/load() see exactly the eager layout.
    for (const auto& child : eager_->named_children()) register_module(child.key(), child.value());
    for (const auto& p : eager_->named_parameters(/*recurse=*/false)) {
      register_parameter(p.key(), p.value());
    }
    script_ = script_handcraft(*eager_);
  }

  torch::Tensor forward(const torch::Tensor& bytes) override {
    return script_.forward({bytes}).toTensor();
  }
  void train(bool on) override {
    LanguageModel::train(on);
    eager_->train(on);
    script_.train(on);
  }
  const ModelOptions& options() const override { return eager_->options(); }
  torch::jit::Module& script() { return script_; }

 private:
  std::shared_ptr<LanguageModel> eager_;
  torch::jit::Module script_;
};

void count_fused_(const torch::jit::Block* block, int64_t& n) {
  for (const torch::jit::Node* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (kind == "prim::TensorExprGroup" || kind == "prim::FusionGroup" ||
        kind == "prim::CudaFusionGroup") {
      ++n;
    }
    for (const torch::jit::Block* sub : node->blocks()) count_fused_(sub, n);
    if (node->hasAttribute(torch::jit::attr::Subgraph)) {
      count_fused_(node->g(torch::jit::attr::Subgraph)->block(), n);
    }
  }
}

}  // namespace

std::shared_ptr<LanguageModel> make_scripted_model(const ModelOptions& options) {
  return std::make_shared<ScriptedModel>(options);
}

torch::jit::Module* script_module_of(LanguageModel& model) {
  auto* scripted = dynamic_cast<ScriptedModel*>(&model);
  return scripted ? &scripted->script() : nullptr;
}

std::string configure_script_executor(const torch::Device& device) {
  torch::jit::getProfilingMode() = true;
  torch::jit::getExecutorMode() = true;
  torch::jit::setTensorExprFuserEnabled(true);
  const bool can_fuse = device.is_cuda() ? torch::jit::canFuseOnGPU() : torch::jit::canFuseOnCPU();
  return can_fuse ? "torchscript+nnc" : "torchscript";
}

int64_t last_graph_fusion_groups() {
  const std::shared_ptr<torch::jit::Graph> graph = torch::jit::lastExecutedOptimizedGraph();
  int64_t n = 0;
  if (graph) count_fused_(graph->block(), n);
  return n;
}

void save_torchscript(LanguageModel& model, const std::string& path) {
  // Serialized in memory first and written here: LibTorch's own file writer throws a second
  // time from its destructor when a write fails (a full disk), which aborts the process.
  std::ostringstream bytes;
  if (torch::jit::Module* m = script_module_of(model)) {
    m->save(bytes);
  } else {
    script_handcraft(model).save(bytes);
  }
  write_file_atomic(path, [&](const std::string& tmp) { return write_bytes(tmp, bytes.str()); });
}

}  // namespace trainbench
