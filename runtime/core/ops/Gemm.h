// C = A' B' + beta C in row-major storage, where A' is A or its transpose (and B' likewise):
// A' is [M, K], B' is [K, N], C is [M, N]. One entry point over cblas_sgemm and cblas_dgemm that
// also handles empty operands (BLAS rejects a zero leading dimension).
#pragma once

#include <cstdint>

namespace scanforge::detail {

template <class T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const T *a, const T *b, T beta, T *c);

}  // namespace scanforge::detail
