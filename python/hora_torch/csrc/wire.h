// How a torch tensor travels through hora: the element type hora moves and
// reduces, the reduction that gives torch's meaning for that type, and a
// contiguous staging tensor when the user's tensor cannot be handed to hora
// as it is (strided, or of a type hora has no wire type for).
//
// Types hora has no element type for are carried in a wider or equivalent
// one, which gives the same result as reducing in the original type:
//   bool     as uint8, with sum -> max (logical or) and product -> min
//            (logical and), as torch's NCCL backend does;
//   int16    as int32 (sums and products wrap back to int16 on the copy
//            back exactly as they would in int16);
//   complex  as pairs of its real type (sum and average only).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

#include "hora/types.h"

namespace hora_torch {

// The wire type for a tensor's dtype; throws (a Python error) naming the
// dtype when torch's type has no way through hora.
hora::DataType wireType(at::ScalarType type);

// The hora reduction for torch's op on a tensor of `type`; throws for ops
// that have no meaning on that type, or that hora lacks (bitwise ops,
// pre-multiplied sums).
hora::RedOp wireOp(const c10d::ReduceOp& op, at::ScalarType type);

// A tensor as hora sees it. `wire` is contiguous and of a wire type; when
// it is not the user's own tensor, finish() copies the result back.
class Staged {
 public:
  // What the call does with the tensor: only reads it (nothing is copied
  // back), only writes it (nothing is copied in), or both.
  enum class Use { Read, Write, ReadWrite };
  explicit Staged(const at::Tensor& user, Use use = Use::ReadWrite);

  void* data() const { return wire_.data_ptr(); }
  std::size_t count() const { return static_cast<std::size_t>(wire_.numel()); }
  hora::DataType type() const { return type_; }
  const at::Tensor& wire() const { return wire_; }
  // Copies the wire tensor back into the user's tensor, if they differ.
  void finish();

 private:
  at::Tensor user_;
  at::Tensor wire_;
  hora::DataType type_;
  bool copyBack_;
};

// All tensors of a call must agree on dtype and (CPU) device; `what` names
// the argument in the error.
void checkTensors(const std::vector<at::Tensor>& tensors, const char* what);
void checkSingle(const std::vector<at::Tensor>& tensors, const char* what);

// One contiguous tensor of the tensors' dtype holding all of them one after
// the other (flattened; at least one tensor), and the copy of such a
// tensor's slices back into them.
at::Tensor flatten(const std::vector<at::Tensor>& tensors);
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

// Wire elements per tensor element: 2 for complex types (real, imaginary).
std::int64_t wireWidth(at::ScalarType type);

}  // namespace hora_torch
