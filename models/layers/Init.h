// Initialisers for the recurrences' parameters and for the biases of gate projections.
// Formulas: docs/training.md. Every draw comes from the model's seeded Generator.
#pragma once

#include <string>

#include "models/config/TrainConfig.h"
#include "runtime/core/Random.h"
#include "runtime/core/Tensor.h"

namespace scanforge::models {

// Fills a recurrence parameter (e.g. A[d, n] with "s4d_real"). `related` gives access to other
// parameters of the same layer already initialised (lru_gamma reads nu_log).
void initParameter(const Tensor &value, const config::InitSpec &spec, const std::string &what, Generator &gen,
                   const Tensor *related = nullptr);

// Fills the bias of a gate's projection (width = channels of the gate).
// standard: PyTorch's U(-1/sqrt(fanIn), 1/sqrt(fanIn)) plus `offset` (paper 003, D.4);
// chrono: sign * log(U(1, t_max - 1)); ugi: sign * logit(u); gumbel: sign * (alpha + logit(u)) / tau
// (paper 002, eq. 8-9), with u ~ U[1/width, 1 - 1/width].
void initGateBias(const Tensor &bias, const config::InitSpec &spec, int64_t fanIn, const std::string &what,
                  Generator &gen);

// The default initialiser of a recurrence parameter, chosen by its name (documented in
// docs/training.md): A -> s4d_real, D -> ones, lambda -> uniform(0.9, 0.999), nu_log -> lru_nu,
// gamma_log -> lru_gamma, anything else -> zeros.
config::InitSpec defaultParameterInit(const std::string &name);

}  // namespace scanforge::models
