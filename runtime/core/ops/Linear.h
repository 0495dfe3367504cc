// Matrix products on OpenBLAS (cblas_sgemm / cblas_dgemm).
#pragma once

#include "runtime/core/Autograd.h"

namespace scanforge {

// a [M, K] @ b [K, N] -> [M, N].
Variable matmul(const Variable &a, const Variable &b);

// y = x W^T + b for x [..., K], weight [N, K] (PyTorch's nn.Linear layout), optional bias [N];
// y is [..., N]. Leading dimensions are flattened into one GEMM.
Variable linear(const Variable &x, const Variable &weight, const Variable &bias = {});

}  // namespace scanforge
