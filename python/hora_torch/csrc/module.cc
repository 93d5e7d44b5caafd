// The Python module hora_torch._C: the process group class, a subclass of
// torch's own (so torch.distributed accepts it), and a creator function in
// the shape Backend.register_backend expects.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.h"

namespace py = pybind11;

namespace {

c10::intrusive_ptr<hora_torch::ProcessGroupHora> create(const c10::intrusive_ptr<c10d::Store>& store,
                                                        int rank, int size,
                                                        std::chrono::milliseconds timeout) {
  // Init waits on peers for up to `timeout`: let other Python threads run.
  py::gil_scoped_release release;
  return c10::make_intrusive<hora_torch::ProcessGroupHora>(store, rank, size, timeout);
}

}  // namespace

PYBIND11_MODULE(_C, module) {
  module.doc() = "hora as a torch.distributed backend (CPU tensors)";
  // The base class must be known to pybind11 before a subclass is declared.
  py::module::import("torch.distributed");
  py::class_<hora_torch::ProcessGroupHora, hora_torch::BackendBase,
             c10::intrusive_ptr<hora_torch::ProcessGroupHora>>(module, "ProcessGroupHora")
      .def(py::init(&create), py::arg("store"), py::arg("rank"), py::arg("size"),
           py::arg("timeout"));
  module.def("create_process_group", &create, py::arg("store"), py::arg("rank"), py::arg("size"),
             py::arg("timeout"),
             "Creates hora's process group; the creator function of Backend.register_backend.");
  module.attr("torch_version_major") = HORA_TORCH_VERSION_MAJOR;
}
