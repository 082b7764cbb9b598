#include "executor/program_runner.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <unordered_set>

#include "executor/finite_check.h"
#include "executor/runtime/float16.h"
#include "program_ir/op_role.h"

namespace ctp {
namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

int64_t declared_dim(const Block& block, const std::vector<std::string>* names, int64_t axis) {
  if (!names || names->empty()) return -1;
  const Var* v = block.find_var((*names)[0]);
  if (!v || v->shape.empty()) return -1;
  const auto rank = static_cast<int64_t>(v->shape.size());
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank ? v->shape[static_cast<std::size_t>(axis)] : -1;
}

bool reads(const Op& op, const char* slot, const std::string& var) {
  const auto* args = op.input(slot);
  return args && std::find(args->begin(), args->end(), var) != args->end();
}

// The exclusive upper bound of an integer input's values, from its consumer.
int64_t integer_range(const Block& block, const std::string& var) {
  for (const Op& op : block.ops()) {
    int64_t k = -1;
    if ((op.type == "softmax_with_cross_entropy" || op.type == "cross_entropy" ||
         op.type == "cross_entropy2") && reads(op, "Label", var)) {
      const Attribute* axis = op.attr("axis");
      k = declared_dim(block, op.input(op.type == "softmax_with_cross_entropy" ? "Logits" : "X"),
                       axis ? axis->as_int64() : -1);
    } else if ((op.type == "lookup_table" || op.type == "lookup_table_v2") &&
               reads(op, "Ids", var)) {
      k = declared_dim(block, op.input("W"), 0);
    } else if ((op.type == "one_hot" || op.type == "one_hot_v2") && reads(op, "X", var)) {
      const Attribute* depth = op.attr("depth");
      k = depth ? depth->as_int64() : -1;
    }
    if (k > 0) return k;
  }
  return 2;
}

std::string dims_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// `given` checked against `var`'s declared shape, or the declared shape with
// -1 as `batch`.
std::vector<int64_t> synthetic_shape(const Var& var, int64_t batch,
                                     const std::vector<int64_t>* given) {
  std::vector<int64_t> shape = var.shape;
  if (!given) {
    for (int64_t& d : shape)
      if (d < 0) d = batch;
    return shape;
  }
  const std::string where = "input '" + var.name + "' is declared " + dims_text(var.shape) +
                            "; the shape given for it, " + dims_text(*given) + ",";
  if (given->size() != shape.size())
    throw Error(where + " has " + std::to_string(given->size()) + " dims, not " +
                std::to_string(shape.size()));
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if ((*given)[i] < 0)
      throw Error(where + " has a negative dim " + std::to_string(i));
    if (shape[i] >= 0 && shape[i] != (*given)[i])
      throw Error(where + " differs at dim " + std::to_string(i) + ", which is fixed");
  }
  return *given;
}

template <typename T, typename F>
void generate(Tensor& t, F&& next) {
  T* p = static_cast<T*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = next();
}

}  // namespace

Tensor synthetic_tensor(const Block& block, const std::string& name, int64_t batch,
                        uint64_t seed, const std::vector<int64_t>* given) {
  const Var* var = block.find_var(name);
  if (!var)
    throw Error("input '" + name + "' of block " + std::to_string(block.idx) +
                " is read before it is written but not declared, so no synthetic data can "
                "be made for it; feed it (--feed " + name + "=FILE.npy)");
  const std::vector<int64_t> shape = synthetic_shape(*var, batch, given);
  Tensor t;
  try {
    t = Tensor(var->dtype, shape);
  } catch (const Error& e) {
    throw Error("input '" + name + "' of block " + std::to_string(block.idx) + ": " + e.what());
  }
  std::mt19937_64 engine(seed);
  const auto uniform = [&] { return -1.0 + 2.0 * static_cast<double>(engine() >> 11) * 0x1.0p-53; };
  switch (var->dtype) {
    case DataType::FP32: generate<float>(t, [&] { return static_cast<float>(uniform()); }); break;
    case DataType::FP64: generate<double>(t, uniform); break;
    case DataType::INT32: case DataType::INT64: {
      const auto k = static_cast<uint64_t>(integer_range(block, name));
      if (var->dtype == DataType::INT32)
        generate<int32_t>(t, [&] { return static_cast<int32_t>(engine() % k); });
      else
        generate<int64_t>(t, [&] { return static_cast<int64_t>(engine() % k); });
      break;
    }
    case DataType::BOOL: generate<bool>(t, [&] { return (engine() & 1) != 0; }); break;
    default:
      throw Error("input '" + name + "' has dtype " + std::string(to_string(var->dtype)) +
                  ", for which no synthetic data is made; feed it (--feed " + name + "=FILE.npy)");
  }
  return t;
}

ProgramRunner::ProgramRunner(const Program& startup, const Program& main,
                             ProgramRunOptions options)
    : main_block_(main.global_block()),
      options_(std::move(options)),
      startup_(startup, services_for(options_)),
      main_(main, services_for(options_)) {
  main_.services().profile = options_.profile;
  std::unordered_set<std::string> inputs;
  for (const std::string& name : unbound_inputs(main_block_)) {
    direct_inputs_.push_back(name);
    inputs.insert(name);
  }
  int64_t feed_ops = 0;
  for (const Op& op : main_block_.ops()) feed_ops += op.type == "feed";
  for (const Op& op : main_block_.ops()) {
    if (op.type == "feed") {
      const auto* out = op.output("Out");
      if (!out || out->size() != 1) throw Error("block 0: a feed op has no single Out var");
      const Attribute* col = op.attr("col");
      const int64_t column = col ? col->as_int64() : 0;
      // The feed list holds one tensor per feed op; a column beyond it would
      // make each step allocate a list as long as the column says.
      if (column < 0 || column >= feed_ops)
        throw Error("block 0: the feed op of '" + (*out)[0] + "' has col " +
                    std::to_string(column) + ", outside [0, " + std::to_string(feed_ops) +
                    ") (one column per feed op)");
      fed_.emplace_back(column, (*out)[0]);
      inputs.insert((*out)[0]);
    } else if (op.type == "fetch" && options_.fetch.empty()) {
      const auto* in = op.input("X");
      if (in && in->size() == 1) fetch_.push_back((*in)[0]);
      fetch_from_ops_ = true;
    }
  }
  for (const auto& [name, tensor] : options_.feeds)
    if (!inputs.count(name)) {
      std::string known;
      for (const std::string& n : direct_inputs_) known += " " + n;
      for (const auto& [col, n] : fed_) known += " " + n;
      throw Error("--feed " + name + ": the main program does not read '" + name +
                  "' before writing it; its inputs are:" + (known.empty() ? " (none)" : known));
    }
  for (const std::string& name : direct_inputs_)
    if (!options_.feeds.count(name)) synthetic_.push_back(name);
  for (const auto& [col, name] : fed_)
    if (!options_.feeds.count(name)) synthetic_.push_back(name);
  for (const auto& [name, shape] : options_.input_shapes) {
    if (options_.feeds.count(name))
      throw Error("input '" + name + "' is fed (--feed) and also given a shape (--input-shape); "
                  "a fed input has its array's shape");
    if (std::find(synthetic_.begin(), synthetic_.end(), name) == synthetic_.end()) {
      std::string known;
      for (const std::string& n : synthetic_) known += " " + n;
      throw Error("--input-shape " + name + ": '" + name + "' is not an input of the main "
                  "program that gets synthetic data; those are:" +
                  (known.empty() ? " (none)" : known));
    }
  }
  // Synthetic inputs need declared vars (and given shapes that fit them):
  // check them all now, not at step 1.
  for (const std::string& name : synthetic_) synthetic_for(name, 0);

  if (!options_.fetch.empty()) {
    fetch_ = options_.fetch;
  } else if (!fetch_from_ops_) {
    for (const Op& op : main_block_.ops()) {
      const int64_t role = get_op_role(op).value_or(0);
      if ((role & op_role::kLoss) && !(role & op_role::kBackward))
        for (const std::string& name : op.output_arg_names()) fetch_.push_back(name);
    }
  }
  // The main program frees its intermediates after their last use, except
  // what is read after the step and its inputs. The startup program keeps everything: it
  // runs once, and the main program may read what it leaves in
  // non-persistable vars.
  main_.keep_vars(fetch_);
  // The inputs a step was given stay readable after it, as the direct ones
  // (read before written) do anyway.
  for (const auto& [col, name] : fed_) main_.keep_vars({name});
  main_.set_release_dead_vars(!options_.keep_all_vars);
}

RunServices ProgramRunner::services_for(const ProgramRunOptions& options) {
  if (options.device.kind != DeviceKind::CPU &&
      (!options.runtime || options.runtime->device() != options.device))
    throw Error("a run on " + options.device.to_string() +
                " needs that device's DeviceRuntime (ProgramRunOptions::runtime)");
  RunServices services;
  services.device = options.device;
  services.comms = options.comms;
  services.device_context = options.runtime ? options.runtime->context() : nullptr;
  services.device_session = options.runtime ? options.runtime->session() : nullptr;
  services.seed = options.seed;
  services.batch_ops = options.batch_ops;
  services.check_finite = options.check_finite;
  return services;
}

void ProgramRunner::run_startup() { startup_.run(scope_); }

Tensor ProgramRunner::input_for(const std::string& name) {
  auto it = options_.feeds.find(name);
  if (it != options_.feeds.end()) return it->second;
  const uint64_t seed = mix(mix(mix(options_.seed, name_hash(name)), static_cast<uint64_t>(steps_)),
                            static_cast<uint64_t>(options_.rank));
  return synthetic_for(name, seed);
}

Tensor ProgramRunner::synthetic_for(const std::string& name, uint64_t seed) const {
  const auto shape = options_.input_shapes.find(name);
  return synthetic_tensor(main_block_, name, options_.batch, seed,
                          shape == options_.input_shapes.end() ? nullptr : &shape->second);
}

Fetched ProgramRunner::run_step() {
  for (const std::string& name : direct_inputs_) {
    if (options_.runtime)
      options_.runtime->bind(scope_, name, input_for(name));
    else
      scope_.var(name) = input_for(name);
  }
  std::vector<Tensor> feed_list;
  for (const auto& [col, name] : fed_) {
    if (feed_list.size() <= static_cast<std::size_t>(col))
      feed_list.resize(static_cast<std::size_t>(col) + 1);
    feed_list[static_cast<std::size_t>(col)] = input_for(name);
  }
  std::vector<Tensor> fetched_by_ops = main_.run(scope_, std::move(feed_list));
  ++steps_;
  // A step on a GPU ends when its streams are idle: its errors (and a dead
  // peer, after the comm timeout) surface here, not a step later.
  if (options_.runtime) options_.runtime->synchronize(options_.comms);
  Fetched out;
  for (std::size_t i = 0; i < fetch_.size(); ++i) {
    if (fetch_from_ops_) {
      if (i < fetched_by_ops.size() && fetched_by_ops[i].initialized())
        out.emplace_back(fetch_[i], fetched_by_ops[i]);
      continue;
    }
    const Tensor* t = scope_.find(fetch_[i]);
    if (!t || !t->initialized())
      throw Error("fetch '" + fetch_[i] + "': the main program left no value in it");
    out.emplace_back(fetch_[i],
                     options_.runtime ? options_.runtime->to_host(*t, options_.comms) : *t);
  }
  if (options_.stop_when_not_finite)
    for (const auto& [name, value] : out)
      if (auto bad = non_finite_value(value)) {
        // Freed intermediates cannot say which op made it: only with every
        // var kept is the first op whose output holds one worth naming.
        std::string source = "; intermediates were freed after their last use "
                             "(--keep-all-vars keeps them to name the op whose output holds one)";
        if (options_.keep_all_vars) {
          const auto op = first_non_finite_op(main_block_, scope_, main_.services().device_session);
          source = op ? "; the first op whose output holds a non-finite value: " + *op : "";
        }
        throw Error("step " + std::to_string(steps_) + ": fetched '" + name + "' " + *bad +
                    source +
                    " (with check_nan_inf the run stops at the op that produces the first one)");
      }
  return out;
}

std::string describe_tensor(const Tensor& t, std::size_t max_values) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  s += "] " + std::string(to_string(t.dtype())) + " = [";
  const auto n = static_cast<std::size_t>(t.numel());
  char buf[32];
  for (std::size_t i = 0; i < n && i < max_values; ++i) {
    const void* p = static_cast<const char*>(t.raw_data()) + i * element_size(t.dtype());
    switch (t.dtype()) {
      case DataType::FP32: std::snprintf(buf, sizeof buf, "%.7g", *static_cast<const float*>(p)); break;
      case DataType::FP64: std::snprintf(buf, sizeof buf, "%.10g", *static_cast<const double*>(p)); break;
      case DataType::INT32: std::snprintf(buf, sizeof buf, "%d", *static_cast<const int32_t*>(p)); break;
      case DataType::INT64:
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(*static_cast<const int64_t*>(p)));
        break;
      case DataType::BOOL: std::snprintf(buf, sizeof buf, "%s", *static_cast<const bool*>(p) ? "true" : "false"); break;
      case DataType::FP16:
        std::snprintf(buf, sizeof buf, "%.4g", float16::to_float(*static_cast<const uint16_t*>(p)));
        break;
      case DataType::BF16:
        std::snprintf(buf, sizeof buf, "%.3g", bfloat16::to_float(*static_cast<const uint16_t*>(p)));
        break;
      default: std::snprintf(buf, sizeof buf, "?"); break;
    }
    s += (i ? ", " : "") + std::string(buf);
  }
  if (n > max_values) s += ", ... (" + std::to_string(n) + " values)";
  return s + "]";
}

}  // namespace ctp
