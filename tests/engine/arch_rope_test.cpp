// RoPE frequencies of every variant against a float64 reimplementation written here from the
// formulas (transformers' modeling_rope_utils), and the tables' longrope choice and attention factor.
#include <cmath>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/model/rope.h"

namespace hipstudio {
namespace {

constexpr int64_t kHeadDim = 16;

std::vector<double> base_frequencies(double theta, int64_t d) {
  std::vector<double> f;
  for (int64_t p = 0; p < d / 2; ++p) f.push_back(std::pow(theta, -2.0 * static_cast<double>(p) / static_cast<double>(d)));
  return f;
}

// Llama 3.1: wavelengths past original/low_freq_factor slowed by factor, short ones kept, blended between.
std::vector<double> llama3_reference(const RopeParams& r, int64_t d) {
  std::vector<double> f = base_frequencies(r.theta, d);
  const double old_len = static_cast<double>(r.original_max_position_embeddings);
  for (double& x : f) {
    const double wavelen = 2 * M_PI / x;
    if (wavelen > old_len / r.low_freq_factor) {
      x /= r.factor;
    } else if (wavelen >= old_len / r.high_freq_factor) {
      const double s = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      x = (1 - s) * x / r.factor + s * x;
    }
  }
  return f;
}

void expect_close(const at::Tensor& got, const std::vector<double>& want) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t p = 0; p < want.size(); ++p)
    EXPECT_NEAR(got[static_cast<int64_t>(p)].item<double>(), want[p], 2e-6 * want[p]) << "frequency " << p;
}

TEST(ArchRope, DefaultKeepsItsFloat32Bits) {
  RopeParams r;
  r.theta = 500000.0;
  const at::Tensor f = rope_inverse_frequencies(r, 128, 0);
  for (int64_t p = 0; p < 64; ++p)
    EXPECT_EQ(f[p].item<float>(), 1.0f / std::pow(500000.0f, static_cast<float>(2 * p) / 128.0f));
  expect_close(f, base_frequencies(500000.0, 128));
}

TEST(ArchRope, LinearDividesByFactor) {
  RopeParams r;
  r.type = "linear";
  r.theta = 1e6;
  r.factor = 8.0;
  std::vector<double> want = base_frequencies(1e6, kHeadDim);
  for (double& x : want) x /= 8.0;
  expect_close(rope_inverse_frequencies(r, kHeadDim, 100), want);
}

TEST(ArchRope, Llama3MatchesTheFormula) {
  for (double factor : {8.0, 32.0}) {
    RopeParams r;
    r.type = "llama3";
    r.theta = 500000.0;
    r.factor = factor;
    r.original_max_position_embeddings = 64;
    expect_close(rope_inverse_frequencies(r, kHeadDim, 100), llama3_reference(r, kHeadDim));
    r.original_max_position_embeddings = 8192;
    expect_close(rope_inverse_frequencies(r, 128, 100), llama3_reference(r, 128));
  }
}

TEST(ArchRope, LongropePicksLongFactorsPastTheOriginalContext) {
  RopeParams r;
  r.type = "longrope";
  r.theta = 10000.0;
  r.original_max_position_embeddings = 64;
  r.factor = 8.0;
  r.attention_factor = std::sqrt(1.0 + std::log(8.0) / std::log(64.0));
  for (int64_t p = 0; p < kHeadDim / 2; ++p) {
    r.long_factor.push_back(1.0 + 0.5 * static_cast<double>(p));
    r.short_factor.push_back(1.0 + 0.05 * static_cast<double>(p));
  }
  for (int64_t length : {64, 65}) {
    const std::vector<double>& ext = length > 64 ? r.long_factor : r.short_factor;
    std::vector<double> want = base_frequencies(r.theta, kHeadDim);
    for (size_t p = 0; p < want.size(); ++p) want[p] /= ext[p];
    expect_close(rope_inverse_frequencies(r, kHeadDim, length), want);
    // Tables for `length` positions use the same choice, with cos and sin times the attention factor.
    const at::Tensor table = make_rope_tables(r, kHeadDim, length, at::kFloat).table;  // [positions, 2, head_dim]
    EXPECT_NEAR(table[0][0][0].item<double>(), r.attention_factor, 1e-6);
    const double angle = 5.0 * want[3];
    EXPECT_NEAR(table[5][0][3].item<double>(), r.attention_factor * std::cos(angle), 2e-6);
    EXPECT_NEAR(table[5][1][3 + kHeadDim / 2].item<double>(), r.attention_factor * std::sin(angle), 2e-6);
  }
}

}  // namespace
}  // namespace hipstudio
