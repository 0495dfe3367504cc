// Dense n-dimensional tensors.
//
// A Tensor is a handle: copying one shares its memory (like torch.Tensor); clone() copies the data.
// New tensors are contiguous and row-major; reshape() and slice() return views that share memory
// and carry their own strides and offset. Kernels read and write through data<T>(), which insists on
// a contiguous tensor of that element type, so a strided view is never misread as a dense one:
// call contiguous() first (a no-op for a tensor that already is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/DType.h"
#include "runtime/core/Device.h"
#include "runtime/core/Shape.h"

namespace scanforge {

// One allocation on one device, 64-byte aligned.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;

  std::byte *data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  std::byte *data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage, no shape

  static Tensor empty(const Shape &shape, DType dtype, Device device = Device::cpu());  // uninitialised
  static Tensor zeros(const Shape &shape, DType dtype, Device device = Device::cpu());
  static Tensor full(const Shape &shape, double value, DType dtype, Device device = Device::cpu());
  // Copies `values` (row-major) into a new tensor of T's dtype.
  template <class T>
  static Tensor fromData(const Shape &shape, std::span<const T> values);
  template <class T>
  static Tensor fromData(const Shape &shape, std::initializer_list<T> values) {
    return fromData(shape, std::span<const T>(values.begin(), values.size()));
  }

  bool defined() const { return storage_ != nullptr; }
  const Shape &shape() const { return shape_; }
  const Shape &strides() const { return strides_; }
  int64_t offset() const { return offset_; }  // in elements, from the start of the storage
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;  // d < 0 counts from the end
  int64_t numel() const;
  DType dtype() const { return dtype_; }
  Device device() const;
  bool isContiguous() const;
  // "f32 [2, 3]", or "undefined": what error messages print for an operand.
  std::string describe() const;

  // Pointer to the first element. Throws unless the tensor is defined, contiguous and of T's dtype.
  // A handle's constness does not cover its data (as with torch.Tensor).
  template <class T>
  T *data() const;
  // The first element's bytes, for code that moves bytes without interpreting them (I/O, copies);
  // the same checks as data<T>() except for the element type.
  std::byte *rawData() const;

  // Views (shared memory).
  Tensor reshape(const Shape &shape) const;  // one size may be -1; copies first if not contiguous
  Tensor slice(int64_t dim, int64_t start, int64_t length) const;

  // Copies.
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;       // always a new contiguous tensor
  Tensor to(DType dtype) const;  // *this when already `dtype`; floats never convert to i64
  // Overwrites this tensor's elements with `src`'s (same shape; converts the element type).
  void copyFrom(const Tensor &src) const;
  void fill(double value) const;

  // Every element as double, in row-major order (tests, metrics, small tensors).
  std::vector<double> toDoubles() const;
  double item() const;  // the value of a one-element tensor

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_, strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::F32;
};

}  // namespace scanforge
