#include "runtime/core/Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/core/CpuAllocator.h"
#include "runtime/core/Error.h"

namespace scanforge {

namespace {

template <class F>
decltype(auto) visitDType(DType dtype, F &&f) {
  switch (dtype) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::BF16: return f.template operator()<BFloat16>();
    case DType::I64: return f.template operator()<int64_t>();
  }
  throw RuntimeError("Tensor", "invalid dtype");
}

template <class Dst, class Src>
Dst convert(Src value) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return value;
  } else if constexpr (std::is_same_v<Src, BFloat16>) {
    return convert<Dst>(toFloat(value));
  } else if constexpr (std::is_same_v<Dst, BFloat16>) {
    return toBFloat16(static_cast<float>(value));  // double -> float -> bf16, as PyTorch does
  } else {
    return static_cast<Dst>(value);
  }
}

}  // namespace

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  switch (device.kind) {
    case DeviceKind::Cpu: data_ = allocateCpu(bytes); break;
  }
}

Storage::~Storage() {
  switch (device_.kind) {
    case DeviceKind::Cpu: releaseCpu(data_, bytes_); break;
  }
}

Tensor Tensor::empty(const Shape &shape, DType dtype, Device device) {
  int64_t n = numelOf(shape, "Tensor::empty");
  if (n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeOf(dtype)))
    throw RuntimeError("Tensor::empty", "shape " + shapeString(shape) + " does not fit in memory");
  Tensor t;
  t.storage_ = std::make_shared<Storage>(static_cast<size_t>(n) * sizeOf(dtype), device);
  t.shape_ = shape;
  t.strides_ = contiguousStrides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape &shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  std::memset(t.storage_->data(), 0, t.storage_->bytes());  // all-zero bits are 0 in every dtype
  return t;
}

Tensor Tensor::full(const Shape &shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill(value);
  return t;
}

template <class T>
Tensor Tensor::fromData(const Shape &shape, std::span<const T> values) {
  Tensor t = empty(shape, dtypeOf<T>());
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw RuntimeError("Tensor::fromData", std::to_string(values.size()) + " values for shape " +
                                               shapeString(shape) + " (" + std::to_string(t.numel()) +
                                               " elements)");
  if (!values.empty()) std::memcpy(t.storage_->data(), values.data(), values.size() * sizeof(T));
  return t;
}

int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  if (d < -n || d >= n)
    throw RuntimeError("Tensor::size", "dimension " + std::to_string(d) + " of " + describe());
  return shape_[static_cast<size_t>(d < 0 ? d + n : d)];
}

int64_t Tensor::numel() const {
  if (!defined()) return 0;
  int64_t n = 1;
  for (int64_t s : shape_) n *= s;
  return n;
}

Device Tensor::device() const { return defined() ? storage_->device() : Device::cpu(); }

bool Tensor::isContiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  return std::string(nameOf(dtype_)) + " " + shapeString(shape_);
}

template <class T>
T *Tensor::data() const {
  if (defined() && dtype_ != dtypeOf<T>())
    throw RuntimeError("Tensor::data", "asked for " + std::string(nameOf(dtypeOf<T>())) + " elements of a " +
                                           describe() + " tensor");
  return reinterpret_cast<T *>(rawData());
}

std::byte *Tensor::rawData() const {
  const char *op = "Tensor::data";
  if (!defined()) throw RuntimeError(op, "the tensor is undefined");
  if (!isContiguous())
    throw RuntimeError(op, describe() + " with strides " + shapeString(strides_) +
                               " is not contiguous; call contiguous() first");
  return storage_->data() + offset_ * static_cast<int64_t>(sizeOf(dtype_));
}

Tensor Tensor::reshape(const Shape &shape) const {
  const char *op = "Tensor::reshape";
  if (!defined()) throw RuntimeError(op, "the tensor is undefined");
  Shape resolved = shape;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < resolved.size(); ++i) {
    if (resolved[i] == -1) {
      if (inferred >= 0) throw RuntimeError(op, "more than one -1 in " + shapeString(shape));
      inferred = static_cast<int>(i);
    } else {
      if (resolved[i] < 0) throw RuntimeError(op, "negative size in " + shapeString(shape));
      known *= resolved[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || numel() % known != 0)
      throw RuntimeError(op, "cannot infer the -1 in " + shapeString(shape) + " for " + describe());
    resolved[static_cast<size_t>(inferred)] = numel() / known;
  }
  if (numelOf(resolved, op) != numel())
    throw RuntimeError(op, "cannot view " + describe() + " (" + std::to_string(numel()) + " elements) as " +
                               shapeString(resolved));
  if (!isContiguous()) return contiguous().reshape(resolved);
  Tensor view = *this;
  view.shape_ = resolved;
  view.strides_ = contiguousStrides(resolved);
  return view;
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t length) const {
  int64_t n = size(d);
  if (start < 0 || length < 0 || start + length > n)
    throw RuntimeError("Tensor::slice", "elements [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                            ") of dimension " + std::to_string(d) + " of " + describe());
  size_t axis = static_cast<size_t>(d < 0 ? d + dim() : d);
  Tensor view = *this;
  view.offset_ += start * strides_[axis];
  view.shape_[axis] = length;
  return view;
}

Tensor Tensor::contiguous() const {
  if (!defined() || isContiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  if (!defined()) return *this;
  Tensor out = empty(shape_, dtype_, device());
  out.copyFrom(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (!defined() || dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype, device());
  out.copyFrom(*this);
  return out;
}

void Tensor::copyFrom(const Tensor &src) const {
  const char *op = "Tensor::copyFrom";
  if (!defined() || !src.defined()) throw RuntimeError(op, "copy from " + src.describe() + " to " + describe());
  if (src.shape_ != shape_) throw RuntimeError(op, "shapes differ: " + src.describe() + " into " + describe());
  if (isFloating(src.dtype_) && dtype_ == DType::I64)
    throw RuntimeError(op, "will not truncate " + src.describe() + " into " + describe());
  int64_t n = numel();
  if (n == 0) return;
  visitDType(dtype_, [&]<class Dst>() {
    visitDType(src.dtype_, [&]<class Src>() {
      Dst *dst = reinterpret_cast<Dst *>(storage_->data());
      const Src *from = reinterpret_cast<const Src *>(src.storage_->data());
      if (isContiguous() && src.isContiguous()) {
        dst += offset_;
        from += src.offset_;
        if constexpr (std::is_same_v<Dst, Src>) {
          std::memmove(dst, from, static_cast<size_t>(n) * sizeof(Dst));
        } else {
          for (int64_t i = 0; i < n; ++i) dst[i] = convert<Dst>(from[i]);
        }
        return;
      }
      // Strided: walk the rows of the last dimension with an index counter over the others.
      int64_t nd = dim();
      int64_t inner = nd ? shape_.back() : 1;
      int64_t dstStep = nd ? strides_.back() : 0, srcStep = nd ? src.strides_.back() : 0;
      std::vector<int64_t> index(static_cast<size_t>(nd > 1 ? nd - 1 : 0), 0);
      int64_t dstPos = offset_, srcPos = src.offset_;
      while (true) {
        for (int64_t i = 0; i < inner; ++i) dst[dstPos + i * dstStep] = convert<Dst>(from[srcPos + i * srcStep]);
        int64_t k = nd - 2;
        for (; k >= 0; --k) {
          size_t a = static_cast<size_t>(k);
          dstPos += strides_[a];
          srcPos += src.strides_[a];
          if (++index[a] < shape_[a]) break;
          dstPos -= shape_[a] * strides_[a];
          srcPos -= shape_[a] * src.strides_[a];
          index[a] = 0;
        }
        if (k < 0) break;
      }
    });
  });
}

void Tensor::fill(double value) const {
  const char *op = "Tensor::fill";
  if (!defined()) throw RuntimeError(op, "the tensor is undefined");
  if (dtype_ == DType::I64 && (std::trunc(value) != value || std::abs(value) > 9.007199254740992e15))
    throw RuntimeError(op, "value " + std::to_string(value) + " is not an integer that i64 holds exactly");
  // A one-element source seen through zero strides: the copy loop then broadcasts it.
  Tensor scalar = empty({}, dtype_ == DType::I64 ? DType::I64 : DType::F64, device());
  if (dtype_ == DType::I64) *reinterpret_cast<int64_t *>(scalar.storage_->data()) = static_cast<int64_t>(value);
  else *reinterpret_cast<double *>(scalar.storage_->data()) = value;
  scalar.shape_ = shape_;
  scalar.strides_.assign(shape_.size(), 0);
  copyFrom(scalar);
}

std::vector<double> Tensor::toDoubles() const {
  if (!defined()) throw RuntimeError("Tensor::toDoubles", "the tensor is undefined");
  Tensor f64 = empty(shape_, DType::F64);
  f64.copyFrom(*this);
  const double *p = f64.data<double>();
  return std::vector<double>(p, p + numel());
}

double Tensor::item() const {
  if (numel() != 1) throw RuntimeError("Tensor::item", "needs exactly one element, got " + describe());
  return toDoubles()[0];
}

template Tensor Tensor::fromData<float>(const Shape &, std::span<const float>);
template Tensor Tensor::fromData<double>(const Shape &, std::span<const double>);
template Tensor Tensor::fromData<BFloat16>(const Shape &, std::span<const BFloat16>);
template Tensor Tensor::fromData<int64_t>(const Shape &, std::span<const int64_t>);
template float *Tensor::data<float>() const;
template double *Tensor::data<double>() const;
template BFloat16 *Tensor::data<BFloat16>() const;
template int64_t *Tensor::data<int64_t>() const;

}  // namespace scanforge
