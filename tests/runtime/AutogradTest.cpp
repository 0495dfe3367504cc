// The tape: accumulation, no-grad mode, graph release, and custom ops (the scan kernels' entry).
#include <gtest/gtest.h>

#include "runtime/core/Error.h"
#include "runtime/core/Ops.h"
#include "tests/runtime/GradCheck.h"
#include "tests/runtime/ErrorOf.h"

namespace scanforge::test {
namespace {

Variable param(std::initializer_list<double> values) {
  return Variable(Tensor::fromData<double>({static_cast<int64_t>(values.size())}, values), true);
}

TEST(Autograd, GradientsAccumulateUntilZeroGrad) {
  Variable x = param({1, 2, 3});
  backward(sum(scale(x, 2)));
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{2, 2, 2}));
  backward(sum(scale(x, 3)));
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{5, 5, 5}));
  x.zeroGrad();
  EXPECT_FALSE(x.grad().defined());
  backward(sum(x));
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{1, 1, 1}));
}

TEST(Autograd, SharedGradientsAreNotAliased) {
  // add passes one gradient tensor to both operands; each leaf must own its copy.
  Variable a = param({1, 2}), b = param({3, 4});
  backward(sum(add(a, b)));
  backward(sum(scale(a, 10)));
  EXPECT_EQ(a.grad().toDoubles(), (std::vector<double>{11, 11}));
  EXPECT_EQ(b.grad().toDoubles(), (std::vector<double>{1, 1}));
}

TEST(Autograd, OnlyVariablesThatRequireGradientsGetThem) {
  Variable x = param({1, 2}), data(Tensor::fromData<double>({2}, {3, 4}));
  Variable y = mul(x, data);
  EXPECT_TRUE(y.requiresGrad());
  EXPECT_FALSE(y.isLeaf());
  EXPECT_EQ(y.opName(), "mul");
  backward(sum(y));
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{3, 4}));
  EXPECT_FALSE(data.grad().defined());
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Variable x = param({1, 2});
  {
    NoGradGuard guard;
    EXPECT_FALSE(gradEnabled());
    Variable y = sum(mul(x, x));
    EXPECT_FALSE(y.requiresGrad());
    EXPECT_TRUE(y.isLeaf());
    EXPECT_NE(errorOf([&] { backward(y); }).find("does not require gradients"), std::string::npos);
  }
  EXPECT_TRUE(gradEnabled());
  EXPECT_TRUE(sum(x).requiresGrad());
}

TEST(Autograd, BackwardNeedsAScalarOrAnOutputGradient) {
  Variable x = param({1, 2});
  Variable y = scale(x, 3);
  EXPECT_NE(errorOf([&] { backward(y); }).find("one-element loss, got f64 [2]"), std::string::npos);
  EXPECT_NE(errorOf([&] { backward(y, Tensor::zeros({3}, DType::F64)); }).find("must match its value, f64 [2]"),
            std::string::npos);
  backward(y, Tensor::fromData<double>({2}, {1, -1}));
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{3, -3}));
}

TEST(Autograd, ASecondBackwardNeedsRetainGraph) {
  Variable x = param({1, 2});
  Variable loss = sum(mul(x, x));
  backward(loss, /*retainGraph=*/true);
  backward(loss);
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{4, 8}));
  std::string message = errorOf([&] { backward(loss); });
  EXPECT_NE(message.find("already differentiated"), std::string::npos) << message;
  EXPECT_NE(message.find("'sum'"), std::string::npos) << message;
}

TEST(Autograd, LeavesAreTheOnlyVariablesWithSettableState) {
  Variable x = param({1, 2});
  Variable y = scale(x, 2);
  EXPECT_NE(errorOf([&] { y.setRequiresGrad(false); }).find("use detach()"), std::string::npos);
  EXPECT_NE(errorOf([&] { y.setGrad(Tensor::zeros({2}, DType::F64)); }).find("only leaves"), std::string::npos);
  EXPECT_NE(errorOf([&] { Variable(Tensor::zeros({2}, DType::I64), true); }).find("gradients need an f32 or f64 value"),
            std::string::npos);
  Variable d = y.detach();
  EXPECT_TRUE(d.isLeaf());
  EXPECT_FALSE(d.requiresGrad());
  EXPECT_EQ(d.value().toDoubles(), (std::vector<double>{2, 4}));
}

// The linear recurrence h_t = a_t * h_{t-1} + b_t (h_{-1} = 0) over [B, T, D] buffers, written as a
// custom op the way the compiled scan kernels are plugged in: raw pointers in, a backward closure
// that captures what it needs. Its backward is the reverse scan g_t = dh_t + a_{t+1} g_{t+1},
// da_t = g_t h_{t-1}, db_t = g_t.
CustomOp linearScan("linear_scan", [](const OpInputs &in) {
  const Shape &shape = in[0].shape();  // [B, T, D]
  int64_t batch = shape[0], steps = shape[1], dims = shape[2];
  Tensor h = Tensor::empty(shape, DType::F64);
  const double *a = in[0].data<double>(), *b = in[1].data<double>();
  double *ph = h.data<double>();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t d = 0; d < dims; ++d) {
        int64_t i = (n * steps + t) * dims + d;
        ph[i] = (t ? a[i] * ph[i - dims] : 0.0) + b[i];
      }
  BackwardFn backward = [in, h, batch, steps, dims](const std::vector<Tensor> &dh) {
    Tensor da = Tensor::empty(in[0].shape(), DType::F64), db = Tensor::empty(in[1].shape(), DType::F64);
    const double *a = in[0].data<double>(), *ph = h.data<double>(), *g = dh[0].data<double>();
    double *pda = da.data<double>(), *pdb = db.data<double>();
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t d = 0; d < dims; ++d) {
        double carry = 0;  // a_{t+1} g_{t+1}
        for (int64_t t = steps - 1; t >= 0; --t) {
          int64_t i = (n * steps + t) * dims + d;
          double gt = g[i] + carry;
          pdb[i] = gt;
          pda[i] = t ? gt * ph[i - dims] : 0.0;
          carry = a[i] * gt;
        }
      }
    return std::vector<Tensor>{da, db};
  };
  return OpOutputs{{h}, in.recording() ? backward : BackwardFn()};
});

TEST(CustomOp, ScanKernelPlugsIntoTheTape) {
  Generator gen(1);
  Tensor a = randomTensor({2, 5, 3}, DType::F64, gen), b = randomTensor({2, 5, 3}, DType::F64, gen);
  std::vector<double> h = linearScan({Variable(a), Variable(b)})[0].value().toDoubles();
  EXPECT_DOUBLE_EQ(h[3], a.toDoubles()[3] * b.toDoubles()[0] + b.toDoubles()[3]);  // h_1 = a_1 h_0 + b_1
  // Composed with built-in ops before and after it, the tape differentiates through it.
  expectGradientsMatchFiniteDifferences(
      [](const std::vector<Variable> &v) { return tanh(linearScan({sigmoid(v[0]), v[1]})[0]); }, {a, b});
}

TEST(CustomOp, UnusedOutputsReceiveZeroGradientsAndUnneededInputsNone) {
  std::vector<bool> requested;
  CustomOp twoOutputs("two_outputs", [&](const OpInputs &in) {
    requested = in.needsGrad;
    return OpOutputs{{in[0].clone(), in[0].clone()}, [](const std::vector<Tensor> &g) {
                       EXPECT_EQ(g[1].toDoubles(), (std::vector<double>{0, 0})) << "an unused output gets zeros";
                       return std::vector<Tensor>{g[0], Tensor()};
                     }};
  });
  Variable x = param({1, 2}), data(Tensor::fromData<double>({2}, {5, 6}));
  backward(sum(twoOutputs({x, data})[0]));
  EXPECT_EQ(requested, (std::vector<bool>{true, false}));
  EXPECT_EQ(x.grad().toDoubles(), (std::vector<double>{1, 1}));
}

TEST(CustomOp, MistakesInClosuresAreReportedWithTheOpName) {
  Variable x = param({1, 2});
  CustomOp wrongShape("wrong_shape", [](const OpInputs &in) {
    return OpOutputs{{in[0].clone()}, [](const std::vector<Tensor> &) {
                       return std::vector<Tensor>{Tensor::zeros({3}, DType::F64)};
                     }};
  });
  std::string message = errorOf([&] { backward(sum(wrongShape({x})[0])); });
  EXPECT_EQ(message.rfind("wrong_shape: ", 0), 0u) << message;
  EXPECT_NE(message.find("gradient of input 0 is f64 [3]"), std::string::npos) << message;

  CustomOp wrongCount("wrong_count", [](const OpInputs &in) {
    return OpOutputs{{in[0].clone()}, [](const std::vector<Tensor> &) { return std::vector<Tensor>{}; }};
  });
  message = errorOf([&] { backward(sum(wrongCount({x})[0])); });
  EXPECT_NE(message.find("wrong_count: the backward returned 0 gradients for 1 inputs"), std::string::npos) << message;

  CustomOp noBackward("no_backward", [](const OpInputs &in) { return OpOutputs{{in[0].clone()}, {}}; });
  message = errorOf([&] { noBackward({x}); });
  EXPECT_NE(message.find("no_backward: inputs require gradients but the forward returned no backward"),
            std::string::npos) << message;
  {
    NoGradGuard guard;  // without gradients, no closure is needed
    EXPECT_EQ(noBackward({x})[0].value().toDoubles(), (std::vector<double>{1, 2}));
  }
  EXPECT_NE(errorOf([] { CustomOp("", [](const OpInputs &) { return OpOutputs{}; }); }).find("needs a name"),
            std::string::npos);
  CustomOp noOutputs("no_outputs", [](const OpInputs &) { return OpOutputs{}; });
  EXPECT_NE(errorOf([&] { noOutputs({x}); }).find("no_outputs: the forward returned no outputs"), std::string::npos);
}

}  // namespace
}  // namespace scanforge::test
