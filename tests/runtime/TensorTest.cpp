// Tensors: shapes, strides, views, copies, dtype conversions (bf16 rounding) and their errors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "runtime/core/CpuAllocator.h"
#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"
#include "tests/runtime/ErrorOf.h"

namespace scanforge::test {
namespace {

Tensor iota(const Shape &shape) {
  Tensor t = Tensor::empty(shape, DType::F64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = static_cast<double>(i);
  return t;
}

TEST(Tensor, NewTensorsAreContiguousRowMajor) {
  Tensor t = Tensor::zeros({2, 3, 4}, DType::F32);
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.isContiguous());
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.describe(), "f32 [2, 3, 4]");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data<float>()) % 64, 0u);
  EXPECT_EQ(t.toDoubles(), std::vector<double>(24, 0.0));
}

TEST(Tensor, ScalarsHaveNoDimensions) {
  Tensor s = Tensor::full({}, 2.5, DType::F64);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_NE(errorOf([] { Tensor::zeros({2}, DType::F32).item(); }).find("exactly one element"), std::string::npos);
}

TEST(Tensor, ReshapeIsAViewAndInfersOneSize) {
  Tensor t = iota({2, 6});
  Tensor v = t.reshape({-1, 4});
  EXPECT_EQ(v.shape(), (Shape{3, 4}));
  v.data<double>()[5] = -1;
  EXPECT_EQ(t.toDoubles()[5], -1) << "a reshape shares memory";
  EXPECT_NE(errorOf([&] { t.reshape({5, 3}); }).find("cannot view f64 [2, 6] (12 elements) as [5, 3]"), std::string::npos);
  EXPECT_NE(errorOf([&] { t.reshape({-1, -1}); }).find("more than one -1"), std::string::npos);
  EXPECT_NE(errorOf([&] { t.reshape({-1, 5}); }).find("cannot infer"), std::string::npos);
}

TEST(Tensor, SliceIsAStridedViewThatDataRefuses) {
  Tensor t = iota({2, 3, 4});
  Tensor s = t.slice(2, 1, 2);  // [2, 3, 2]
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.strides(), (Shape{12, 4, 1}));
  EXPECT_FALSE(s.isContiguous());
  std::string message = errorOf([&] { s.data<double>(); });
  EXPECT_NE(message.find("not contiguous; call contiguous() first"), std::string::npos) << message;
  EXPECT_EQ(s.toDoubles(), (std::vector<double>{1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}));
  Tensor c = s.contiguous();
  EXPECT_TRUE(c.isContiguous());
  EXPECT_EQ(c.toDoubles(), s.toDoubles());
  // A slice of the first dimension stays contiguous: no copy.
  Tensor rows = t.slice(0, 1, 1);
  EXPECT_TRUE(rows.isContiguous());
  EXPECT_EQ(rows.data<double>()[0], 12);
  EXPECT_NE(errorOf([&] { t.slice(1, 2, 2); }).find("elements [2, 4) of dimension 1"), std::string::npos);
}

TEST(Tensor, WritesThroughAStridedView) {
  Tensor t = Tensor::zeros({2, 3}, DType::F32);
  t.slice(1, 1, 1).fill(7);
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{0, 7, 0, 0, 7, 0}));
  t.slice(1, 0, 2).copyFrom(Tensor::fromData<double>({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{1, 2, 0, 3, 4, 0}));
}

TEST(Tensor, CloneCopiesAndCopyFromConverts) {
  Tensor a = iota({3});
  Tensor b = a.clone();
  b.data<double>()[0] = 5;
  EXPECT_EQ(a.toDoubles()[0], 0);
  Tensor f = Tensor::empty({3}, DType::F32);
  f.copyFrom(Tensor::fromData<double>({3}, {0.1, 2, 3}));
  EXPECT_EQ(f.data<float>()[0], 0.1f);
  EXPECT_NE(errorOf([&] { f.copyFrom(iota({4})); }).find("shapes differ"), std::string::npos);
  EXPECT_NE(errorOf([&] { Tensor::zeros({3}, DType::I64).copyFrom(f); }).find("will not truncate"), std::string::npos);
  EXPECT_EQ(Tensor::fromData<int64_t>({2}, {3, -4}).to(DType::F32).toDoubles(), (std::vector<double>{3, -4}));
  EXPECT_EQ(Tensor::full({2}, -100, DType::I64).data<int64_t>()[1], -100);
}

TEST(Tensor, ErrorsNameTheProblem) {
  EXPECT_NE(errorOf([] { Tensor::empty({2, -1}, DType::F32); }).find("negative size in shape [2, -1]"), std::string::npos);
  EXPECT_NE(errorOf([] { Tensor::empty({int64_t{1} << 62, 4}, DType::F32); }).find("more than 2^63"), std::string::npos);
  EXPECT_NE(errorOf([] { Tensor::zeros({2}, DType::F32).data<double>(); }).find("asked for f64 elements of a f32 [2]"),
            std::string::npos);
  EXPECT_NE(errorOf([] { Tensor().data<float>(); }).find("undefined"), std::string::npos);
  EXPECT_NE(errorOf([] { Tensor::zeros({2}, DType::I64).fill(0.5); }).find("not an integer"), std::string::npos);
  EXPECT_NE(errorOf([] { Tensor::fromData<float>({3}, {1, 2}); }).find("2 values for shape [3]"), std::string::npos);
  try {
    Tensor::zeros({2}, DType::F32).size(2);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.op(), "Tensor::size");
  }
}

TEST(CpuAllocator, RecyclesLargeBlocksOfTheSameSize) {
  emptyCpuCache();
  const int64_t n = 3 << 18;  // 3 MiB of f32
  const void *first;
  {
    Tensor t = Tensor::empty({n}, DType::F32);
    first = t.data<float>();
  }
  EXPECT_EQ(cachedCpuBytes(), size_t{3} << 20);
  Tensor again = Tensor::empty({n}, DType::F32);
  EXPECT_EQ(again.data<float>(), first) << "the freed block is reused";
  EXPECT_EQ(cachedCpuBytes(), 0u);
  { Tensor dirty = Tensor::full({n}, 5.0, DType::F32); }
  Tensor recycled = Tensor::zeros({n}, DType::F32);
  EXPECT_EQ(recycled.toDoubles(), std::vector<double>(static_cast<size_t>(n), 0.0)) << "zeros() clears a reused block";
  emptyCpuCache();
  { Tensor small = Tensor::empty({16}, DType::F32); }
  EXPECT_EQ(cachedCpuBytes(), 0u) << "small blocks are not cached";
}

uint16_t bf16Bits(uint32_t floatBits) { return toBFloat16(std::bit_cast<float>(floatBits)).bits; }

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(bf16Bits(0x3F800000), 0x3F80);  // 1.0 exactly
  EXPECT_EQ(bf16Bits(0x3F807FFF), 0x3F80);  // just below half an ulp: down
  EXPECT_EQ(bf16Bits(0x3F808001), 0x3F81);  // just above half: up
  EXPECT_EQ(bf16Bits(0x3F808000), 0x3F80);  // a tie with an even kept part: stays
  EXPECT_EQ(bf16Bits(0x3F818000), 0x3F82);  // a tie with an odd kept part: up to even
  EXPECT_EQ(bf16Bits(0xBF818000), 0xBF82);  // the same for negatives
  EXPECT_EQ(bf16Bits(0x7F7FFFFF), 0x7F80);  // the largest float rounds to infinity
  EXPECT_EQ(bf16Bits(0x7F800000), 0x7F80);  // infinity stays infinite
  EXPECT_EQ(bf16Bits(0x00000001), 0x0000);  // the smallest subnormal rounds to zero
  EXPECT_EQ(bf16Bits(0x80000000), 0x8000);  // -0 keeps its sign
  BFloat16 nan = toBFloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(toFloat(nan)));
  EXPECT_TRUE(std::isnan(toFloat(toBFloat16(std::bit_cast<float>(0x7F800001u))))) << "a signalling NaN must not become inf";
  EXPECT_EQ(toFloat(BFloat16{0x4049}), 3.140625f);
}

TEST(BFloat16, TensorConversionRoundTrips) {
  Tensor f = Tensor::fromData<float>({4}, {1.0f, -2.5f, 3.14159f, 1e30f});
  Tensor b = f.to(DType::BF16);
  EXPECT_EQ(b.dtype(), DType::BF16);
  EXPECT_EQ(b.data<BFloat16>()[2].bits, toBFloat16(3.14159f).bits);
  std::vector<double> back = b.to(DType::F32).toDoubles();
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[1], -2.5);
  EXPECT_EQ(back[2], 3.140625);
  EXPECT_NEAR(back[3], 1e30, 1e30 * 1.0 / 256);  // 8 significant bits
}

}  // namespace
}  // namespace scanforge::test
