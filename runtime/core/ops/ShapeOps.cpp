#include "runtime/core/ops/ShapeOps.h"

#include <cstring>
#include <numeric>

#include "runtime/core/Error.h"
#include "runtime/core/ops/OpChecks.h"

namespace scanforge {

namespace {

// Copies columns [srcStart, srcStart + width) of every row of `src` into columns [dstStart, ...) of
// the same rows of `dst`; both contiguous, with the same number of rows and the same dtype.
void copyColumns(const Tensor &src, int64_t srcStart, const Tensor &dst, int64_t dstStart, int64_t width) {
  int64_t srcCols = src.shape().back(), dstCols = dst.shape().back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < src.shape().size(); ++i) rows *= src.shape()[i];
  if (rows == 0 || width == 0) return;
  size_t elem = sizeOf(src.dtype());
  const std::byte *from = src.rawData() + srcStart * static_cast<int64_t>(elem);
  std::byte *to = dst.rawData() + dstStart * static_cast<int64_t>(elem);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(to + r * dstCols * static_cast<int64_t>(elem), from + r * srcCols * static_cast<int64_t>(elem),
                static_cast<size_t>(width) * elem);
}

Shape withLastDim(Shape shape, int64_t last) {
  shape.back() = last;
  return shape;
}

// Cuts `whole` into new tensors of the given widths along the last dimension (the forward of split,
// the backward of concat).
std::vector<Tensor> cut(const Tensor &whole, const std::vector<int64_t> &sizes) {
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t size : sizes) {
    Tensor piece = Tensor::empty(withLastDim(whole.shape(), size), whole.dtype());
    copyColumns(whole, start, piece, 0, size);
    pieces.push_back(piece);
    start += size;
  }
  return pieces;
}

// Joins pieces along the last dimension (the forward of concat, the backward of split).
Tensor join(const std::vector<Tensor> &pieces, const Shape &shape) {
  Tensor whole = Tensor::empty(shape, pieces.front().dtype());
  int64_t start = 0;
  for (const Tensor &piece : pieces) {
    copyColumns(piece, 0, whole, start, piece.shape().back());
    start += piece.shape().back();
  }
  return whole;
}

}  // namespace

Variable reshape(const Variable &x, const Shape &shape) {
  return applyOp("reshape", {x}, [shape](const OpInputs &in) {
    Shape original = in[0].shape();
    return OpOutputs{{in[0].reshape(shape)}, [original](const std::vector<Tensor> &g) {
                       return std::vector<Tensor>{g[0].reshape(original)};
                     }};
  })[0];
}

Variable slice(const Variable &x, int64_t start, int64_t length) {
  const char *op = "slice";
  return applyOp(op, {x}, [=](const OpInputs &in) {
    int64_t cols = detail::lastDim(op, "input", in[0]);
    if (start < 0 || length < 0 || start + length > cols)
      throw RuntimeError(op, "columns [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                 ") lie outside the last dimension of " + in[0].describe());
    Tensor y = Tensor::empty(withLastDim(in[0].shape(), length), in[0].dtype());
    copyColumns(in[0], start, y, 0, length);
    Shape shape = in[0].shape();
    DType dtype = in[0].dtype();
    return OpOutputs{{y}, [=](const std::vector<Tensor> &g) {
                       Tensor dx = Tensor::zeros(shape, dtype);
                       copyColumns(g[0], 0, dx, start, length);
                       return std::vector<Tensor>{dx};
                     }};
  })[0];
}

std::vector<Variable> split(const Variable &x, const std::vector<int64_t> &sizes) {
  const char *op = "split";
  return applyOp(op, {x}, [=](const OpInputs &in) {
    int64_t cols = detail::lastDim(op, "input", in[0]);
    if (sizes.empty()) throw RuntimeError(op, "needs at least one piece size");
    for (int64_t size : sizes)
      if (size < 0) throw RuntimeError(op, "piece sizes must be >= 0, got " + shapeString(sizes));
    if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != cols)
      throw RuntimeError(op, "piece sizes " + shapeString(sizes) + " do not add up to the last dimension of " +
                                 in[0].describe());
    Shape shape = in[0].shape();
    return OpOutputs{cut(in[0], sizes), [shape](const std::vector<Tensor> &g) {
                       return std::vector<Tensor>{join(g, shape)};
                     }};
  });
}

Variable concat(const std::vector<Variable> &pieces) {
  const char *op = "concat";
  if (pieces.empty()) throw RuntimeError(op, "needs at least one piece");
  return applyOp(op, pieces, [=](const OpInputs &in) {
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < in.size(); ++i) {
      detail::lastDim(op, "every piece", in[i]);
      detail::requireSameDType(op, "a piece", in[i], "the first", in[0]);
      if (withLastDim(in[i].shape(), 0) != withLastDim(in[0].shape(), 0))
        throw RuntimeError(op, "piece " + std::to_string(i) + " is " + in[i].describe() + " but piece 0 is " +
                                   in[0].describe() + "; all dimensions but the last must agree");
      sizes.push_back(in[i].shape().back());
    }
    Shape shape = withLastDim(in[0].shape(), std::accumulate(sizes.begin(), sizes.end(), int64_t{0}));
    return OpOutputs{{join(in.tensors, shape)}, [sizes](const std::vector<Tensor> &g) { return cut(g[0], sizes); }};
  })[0];
}

}  // namespace scanforge
