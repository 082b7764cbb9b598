// The executor from Python: a device's runtime, a worker's communicators,
// scopes, and executors that run a program's block step by step with NumPy
// arrays as feeds and fetches (docs/python.md). As in `ctp run` and the
// sample trainer, the startup program's ring set-up ops (c_gen_nccl_id,
// c_comm_init) join the other workers of the job through the communicators.
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "executor/executor.h"
#include "executor/runtime/communicator.h"
#include "executor/runtime/device_runtime.h"
#include "executor/worker_env.h"
#include "python/src/bindings.h"

namespace py = pybind11;
using namespace py::literals;

namespace ctp::python {
namespace {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device{};
  for (const std::string prefix : {"gpu", "cuda"}) {
    if (name == prefix) return Device{DeviceKind::CUDA, 0};
    if (name.rfind(prefix + ":", 0) == 0) {
      const std::string index = name.substr(prefix.size() + 1);
      if (!index.empty() && index.find_first_not_of("0123456789") == std::string::npos &&
          index.size() < 6)
        return Device{DeviceKind::CUDA, std::stoi(index)};
    }
  }
  throw py::value_error("device must be 'cpu', 'gpu' or 'gpu:N', not '" + name + "'");
}

DataType dtype_of(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'f' && size == 4) return DataType::FP32;
  if (kind == 'f' && size == 8) return DataType::FP64;
  if (kind == 'f' && size == 2) return DataType::FP16;
  if (kind == 'i' && size == 8) return DataType::INT64;
  if (kind == 'i' && size == 4) return DataType::INT32;
  if (kind == 'i' && size == 2) return DataType::INT16;
  if (kind == 'i' && size == 1) return DataType::INT8;
  if (kind == 'u' && size == 1) return DataType::UINT8;
  if (kind == 'b' && size == 1) return DataType::BOOL;
  throw py::type_error("no ctp dtype for NumPy dtype " + d.attr("name").cast<std::string>());
}

py::dtype numpy_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::FP32: return py::dtype("float32");
    case DataType::FP64: return py::dtype("float64");
    case DataType::FP16: return py::dtype("float16");
    case DataType::INT64: return py::dtype("int64");
    case DataType::INT32: return py::dtype("int32");
    case DataType::INT16: return py::dtype("int16");
    case DataType::INT8: return py::dtype("int8");
    case DataType::UINT8: return py::dtype("uint8");
    case DataType::BOOL: return py::dtype("bool");
    default:
      throw py::type_error("no NumPy dtype for ctp dtype " + std::string(to_string(dtype)));
  }
}

// A host tensor holding a copy of the array (C order).
Tensor tensor_from_numpy(const DeviceRuntime& runtime, const py::array& given) {
  const py::array array = py::array::ensure(given, py::array::c_style);
  if (!array) throw py::type_error("feeds must be NumPy arrays (or convertible to one)");
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  Tensor t = runtime.host_tensor(dtype_of(array.dtype()), shape);
  std::memcpy(t.raw_data(), array.data(), t.bytes());
  return t;
}

// A NumPy copy of a host tensor.
py::array numpy_from_tensor(const Tensor& host) {
  py::array out(numpy_dtype(host.dtype()), host.shape());
  std::memcpy(out.mutable_data(), host.raw_data(), host.bytes());
  return out;
}

// The communicators of one worker (CommunicatorManager). Rings on a GPU use
// the runtime's streams, so it keeps the runtime alive (python side).
struct Communicators {
  explicit Communicators(CommOptions options) : manager(options) {}
  CommunicatorManager manager;
};

CommOptions comm_options(std::optional<double> timeout_s, const std::string& job_id) {
  CommOptions o;
  if (timeout_s) o.timeout = timeout_from_seconds(*timeout_s, "timeout");
  o.job_id = job_id;
  return o;
}

// One block of a program prepared for a device, with its feed ops' columns.
class PyExecutor {
 public:
  PyExecutor(const Program& program, DeviceRuntime& runtime, Communicators* comms,
             int32_t block, uint64_t seed, bool check_finite, bool batch_ops, bool keep_all_vars)
      : runtime_(runtime), comms_(comms ? &comms->manager : nullptr),
        executor_(program, services(runtime, comms_, seed, check_finite, batch_ops), block) {
    executor_.set_release_dead_vars(!keep_all_vars);
    for (const Op& op : executor_.block().ops()) {
      const auto* out = op.output("Out");
      const Attribute* col = op.attr("col");
      if (op.type == "feed" && out && out->size() == 1)
        feed_columns_[(*out)[0]] = col ? col->as_int64() : 0;
    }
  }

  py::object run(Scope& scope, const std::map<std::string, py::array>& feed,
                 const std::optional<std::vector<std::string>>& fetch) {
    std::vector<Tensor> feed_list;
    std::vector<std::pair<std::string, Tensor>> direct;
    for (const auto& [name, array] : feed) {
      Tensor t = tensor_from_numpy(runtime_, array);
      auto column = feed_columns_.find(name);
      if (column == feed_columns_.end()) {
        direct.emplace_back(name, std::move(t));
        continue;
      }
      const auto col = static_cast<std::size_t>(column->second);
      if (feed_list.size() <= col) feed_list.resize(col + 1);
      feed_list[col] = std::move(t);
    }
    std::vector<Tensor> fetched;
    if (fetch) executor_.keep_vars(*fetch);  // read after the step: not freed
    {
      py::gil_scoped_release unlocked;
      for (auto& [name, t] : direct) runtime_.bind(scope, name, t);
      std::vector<Tensor> by_ops = executor_.run(scope, std::move(feed_list));
      runtime_.synchronize(comms_);
      if (fetch) {
        for (const std::string& name : *fetch)
          fetched.push_back(runtime_.to_host(scope.get(name), comms_));
      } else {
        for (const Tensor& t : by_ops)
          fetched.push_back(t.initialized() ? runtime_.to_host(t, comms_) : t);
      }
    }
    py::list out;
    for (const Tensor& t : fetched)
      out.append(t.initialized() ? py::object(numpy_from_tensor(t)) : py::none());
    return out;
  }

  Executor& executor() { return executor_; }

 private:
  static RunServices services(DeviceRuntime& runtime, CommunicatorManager* comms, uint64_t seed,
                              bool check_finite, bool batch_ops) {
    RunServices s;
    s.device = runtime.device();
    s.comms = comms;
    s.device_context = runtime.context();
    s.device_session = runtime.session();
    s.seed = seed;
    s.check_finite = check_finite;
    s.batch_ops = batch_ops;
    return s;
  }

  DeviceRuntime& runtime_;
  CommunicatorManager* comms_;
  Executor executor_;
  std::map<std::string, int64_t> feed_columns_;
};

void bind_runtime(py::module_& m) {
  py::class_<DeviceRuntime>(m, "DeviceRuntime",
                            "One device's runtime: 'cpu', or 'gpu:N' when ctp was built with "
                            "CUDA (its backend is loaded on first use)")
      .def(py::init([](const std::string& device) {
             return std::make_unique<DeviceRuntime>(parse_device(device));
           }), "device"_a = "cpu", py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("device", [](const DeviceRuntime& r) {
        return r.device().to_string();
      })
      .def("bind", [](DeviceRuntime& r, Scope& scope, const std::string& name,
                      const py::array& value) {
             r.bind(scope, name, tensor_from_numpy(r, value));
           }, "scope"_a, "name"_a, "value"_a, "Sets a var of the scope to a copy of the array")
      .def("fetch", [](DeviceRuntime& r, Scope& scope, const std::string& name,
                       Communicators* comms) {
             Tensor host;
             {
               py::gil_scoped_release unlocked;
               r.synchronize(comms ? &comms->manager : nullptr);
               host = r.to_host(scope.get(name), comms ? &comms->manager : nullptr);
             }
             return numpy_from_tensor(host);
           }, "scope"_a, "name"_a, "comms"_a = py::none(),
           "A NumPy copy of a var of the scope, once the device is idle");
  py::class_<Communicators>(m, "Communicators",
                            "The communicators (rings) of one worker; the startup program's "
                            "ring set-up ops fill it. Keeps its runtime alive.")
      .def(py::init([](DeviceRuntime&, std::optional<double> timeout, const std::string& job) {
             return std::make_unique<Communicators>(comm_options(timeout, job));
           }), "runtime"_a, "timeout"_a = py::none(), "job_id"_a = "", py::keep_alive<1, 2>(),
           "timeout: seconds to wait for a peer (default 300); job_id: the job's identity at "
           "rendezvous (WorkerIdentity.job_id)")
      .def_property_readonly("rings", [](const Communicators& c) {
        return c.manager.ring_ids();
      });
}

void bind_executor_class(py::module_& m) {
  py::class_<Scope>(m, "Scope", "The tensors of a running program, by var name")
      .def(py::init<>())
      .def("names", &Scope::names)
      .def("has", &Scope::has, "name"_a)
      .def("get", [](const Scope& s, const std::string& name) {
             const Tensor& t = s.get(name);
             if (t.device().kind != DeviceKind::CPU)
               throw py::value_error("'" + name + "' is on " + t.device().to_string() +
                                     ": read it with DeviceRuntime.fetch");
             return numpy_from_tensor(t);
           }, "name"_a, "A NumPy copy of a CPU var");
  py::class_<PyExecutor>(m, "Executor",
                         "One block of a program prepared for a device (every op's kernel "
                         "found up front); run() runs it once")
      .def(py::init<const Program&, DeviceRuntime&, Communicators*, int32_t, uint64_t, bool,
                    bool, bool>(),
           "program"_a, "runtime"_a, "comms"_a = py::none(), "block"_a = 0, "seed"_a = 0,
           "check_finite"_a = false, "batch_ops"_a = true, "keep_all_vars"_a = false,
           py::keep_alive<1, 2>(),
           py::keep_alive<1, 3>(), py::keep_alive<1, 4>(),
           "seed: of random initializers whose seed attribute is 0 (give ranks different "
           "seeds to initialise them differently); check_finite: stop at the first op that "
           "writes NaN or Inf (slow); keep_all_vars: keep every intermediate var in the "
           "scope after a step (by default each is freed after its last use, except the "
           "vars run() fetches and those read before written)")
      .def("run", &PyExecutor::run, "scope"_a, "feed"_a = std::map<std::string, py::array>{},
           "fetch"_a = py::none(),
           "Runs every op once. feed: var name -> array (a feed op's var goes to its column, "
           "any other var is set in the scope); fetch: var names to return, as NumPy arrays "
           "(default: what the fetch ops wrote)")
      .def_property_readonly("op_count", [](PyExecutor& e) { return e.executor().op_count(); });
}

void bind_worker_identity(py::module_& m) {
  py::class_<WorkerIdentity>(m, "WorkerIdentity",
                             "Who this worker is, from its launcher's variables")
      .def_readonly("rank", &WorkerIdentity::rank)
      .def_readonly("world_size", &WorkerIdentity::world_size)
      .def_readonly("local_rank", &WorkerIdentity::local_rank)
      .def_readonly("endpoints", &WorkerIdentity::endpoints)
      .def_readonly("current_endpoint", &WorkerIdentity::current_endpoint)
      .def_readonly("selected_gpus", &WorkerIdentity::selected_gpus)
      .def_readonly("job_id", &WorkerIdentity::job_id)
      .def_property_readonly("comm_timeout", [](const WorkerIdentity& w) -> std::optional<double> {
        if (!w.comm_timeout) return std::nullopt;
        return std::chrono::duration<double>(*w.comm_timeout).count();
      }, "CTP_COMM_TIMEOUT in seconds, or None")
      .def_readonly("sources", &WorkerIdentity::sources);
  m.def("worker_identity", &worker_identity, "environ"_a,
        "This worker's rank, world size, endpoints and job from a mapping of environment "
        "variables (pass dict(os.environ)): Paddle's, torchrun's, Open MPI's or Slurm's, as "
        "`ctp launch` sets them. ctp itself reads no environment.");
}

}  // namespace

void bind_executor(py::module_& m) {
  bind_runtime(m);
  bind_executor_class(m);
  bind_worker_identity(m);
}

}  // namespace ctp::python
