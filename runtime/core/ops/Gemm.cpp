#include "runtime/core/ops/Gemm.h"

#include <cblas.h>

#include <climits>
#include <string>

#include "runtime/core/Error.h"

namespace scanforge::detail {

template <class T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const T *a, const T *b, T beta, T *c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta C
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
    return;
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    throw RuntimeError("gemm", "dimensions " + std::to_string(m) + " x " + std::to_string(k) + " x " + std::to_string(n) +
                                   " exceed OpenBLAS's 32-bit sizes");
  int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans, tb = transB ? CblasTrans : CblasNoTrans;
  int lda = transA ? M : K, ldb = transB ? K : N;
  if constexpr (sizeof(T) == 4)
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, beta, c, N);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, a, lda, b, ldb, beta, c, N);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float *, const float *, float, float *);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double *, const double *, double, double *);

}  // namespace scanforge::detail
