#include "wire.h"

#include <c10/util/Exception.h>

#include <cstdint>

namespace hora_torch {

namespace {

// The torch type whose memory hora reads for a tensor of `type` (complex
// types are handled apart, as views of their real parts).
at::ScalarType wireScalar(at::ScalarType type) {
  return type == at::kShort ? at::kInt : type;
}

const char* opName(c10d::ReduceOp::RedOpType kind) {
  static const char* const kNames[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX",
                                       "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  const auto index = static_cast<std::size_t>(kind);
  return index < sizeof kNames / sizeof kNames[0] ? kNames[index] : "(unknown)";
}

}  // namespace

hora::DataType wireType(at::ScalarType type) {
  switch (type) {
    case at::kByte: return hora::DataType::Uint8;
    case at::kChar: return hora::DataType::Int8;
    case at::kBool: return hora::DataType::Uint8;
    case at::kShort: return hora::DataType::Int32;
    case at::kInt: return hora::DataType::Int32;
    case at::kLong: return hora::DataType::Int64;
    case at::kHalf: return hora::DataType::Float16;
    case at::kBFloat16: return hora::DataType::Bfloat16;
    case at::kFloat: return hora::DataType::Float32;
    case at::kDouble: return hora::DataType::Float64;
    case at::kComplexHalf: return hora::DataType::Float16;
    case at::kComplexFloat: return hora::DataType::Float32;
    case at::kComplexDouble: return hora::DataType::Float64;
    default: break;
  }
  TORCH_CHECK(false, "hora: tensors of dtype ", type, " are not supported");
}

hora::RedOp wireOp(const c10d::ReduceOp& op, at::ScalarType type) {
  using Torch = c10d::ReduceOp;
  const auto kind = static_cast<Torch::RedOpType>(op);
  if (type == at::kBool) {
    switch (kind) {
      case Torch::SUM:
      case Torch::MAX: return hora::RedOp::Max;
      case Torch::PRODUCT:
      case Torch::MIN: return hora::RedOp::Min;
      default:
        TORCH_CHECK(false, "hora: ReduceOp.", opName(kind), " has no meaning on boolean tensors (use SUM, PRODUCT, MIN or MAX)");
    }
  }
  if (at::isComplexType(type)) {
    TORCH_CHECK(kind == Torch::SUM || kind == Torch::AVG,
                "hora: complex tensors can only be summed or averaged");
  }
  switch (kind) {
    case Torch::SUM: return hora::RedOp::Sum;
    case Torch::AVG: return hora::RedOp::Avg;
    case Torch::PRODUCT: return hora::RedOp::Prod;
    case Torch::MIN: return hora::RedOp::Min;
    case Torch::MAX: return hora::RedOp::Max;
    default: break;
  }
  TORCH_CHECK(false, "hora: ReduceOp.", opName(kind), " is not supported (hora has SUM, AVG, PRODUCT, MIN and MAX)");
}

namespace {
// hora's collectives take buffers that start on an element (as NCCL's
// kernels need them); torch lets a tensor start anywhere (a view at an odd
// byte offset of a buffer, torch.frombuffer with an offset). Such a tensor
// is staged like a strided one.
bool startsOnAnElement(const at::Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % static_cast<std::uintptr_t>(t.element_size()) == 0;
}
}  // namespace

Staged::Staged(const at::Tensor& user, Use use) : user_(user), type_(wireType(user.scalar_type())) {
  const bool read = use != Use::Write;
  const bool write = use != Use::Read;
  if (at::isComplexType(user.scalar_type())) {
    at::Tensor dense = user;
    if (!user.is_contiguous() || user.is_conj() || !startsOnAnElement(user))
      dense = at::empty(user.sizes(), user.options().memory_format(at::MemoryFormat::Contiguous))
                  .copy_(user.resolve_conj());
    wire_ = at::view_as_real(dense);
    copyBack_ = write && !dense.is_same(user);
    return;
  }
  const at::ScalarType scalar = wireScalar(user.scalar_type());
  if (user.is_contiguous() && scalar == user.scalar_type() && startsOnAnElement(user)) {
    wire_ = user;
    copyBack_ = false;
    return;
  }
  wire_ = at::empty(user.sizes(), user.options().dtype(scalar).memory_format(at::MemoryFormat::Contiguous));
  if (read) wire_.copy_(user);
  copyBack_ = write;
}

void Staged::finish() {
  if (!copyBack_) return;
  if (at::isComplexType(user_.scalar_type()))
    user_.copy_(at::view_as_complex(wire_));
  else
    user_.copy_(wire_);
}

void checkTensors(const std::vector<at::Tensor>& tensors, const char* what) {
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.defined(), "hora: ", what, " holds an undefined tensor");
    TORCH_CHECK(t.device().is_cpu(), "hora: ", what, " must be CPU tensors, got one on ", t.device());
    TORCH_CHECK(t.layout() == at::kStrided, "hora: ", what, " must be dense tensors");
    TORCH_CHECK(t.scalar_type() == tensors.front().scalar_type(), "hora: ", what,
                " mixes dtypes ", tensors.front().scalar_type(), " and ", t.scalar_type());
    wireType(t.scalar_type());
  }
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "hora: ", what, " takes exactly one tensor, got ",
              tensors.size());
  checkTensors(tensors, what);
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

std::int64_t wireWidth(at::ScalarType type) { return at::isComplexType(type) ? 2 : 1; }

}  // namespace hora_torch
