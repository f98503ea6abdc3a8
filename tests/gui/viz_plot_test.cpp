// Colour maps, heat-map pooling, plot helpers and the iteration stepper's steps.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/mask_reference.h"
#include "kernels/oracle.h"
#include "viz/colormap.h"
#include "viz/heat_image.h"
#include "viz/plot_data.h"

namespace hipstudio::viz {
namespace {

float luminance(Rgb c) { return 0.2126f * c.r + 0.7152f * c.g + 0.0722f * c.b; }

TEST(ColorMap, EndpointsClampAndMonotoneLightness) {
  for (ColorMapKind kind : {ColorMapKind::Viridis, ColorMapKind::Magma}) {
    const Rgb lo = colormap(kind, 0.0), hi = colormap(kind, 1.0);
    EXPECT_EQ(pack_rgba(colormap(kind, -3.0)), pack_rgba(lo));
    EXPECT_EQ(pack_rgba(colormap(kind, 7.0)), pack_rgba(hi));
    float last = -1;
    for (int i = 0; i <= 100; ++i) {
      const float l = luminance(colormap(kind, i / 100.0));
      EXPECT_GE(l, last - 1e-4f) << i;  // darker always means smaller
      last = l;
    }
  }
  const Rgb nan = colormap(ColorMapKind::Viridis, std::nan(""));
  EXPECT_FLOAT_EQ(nan.r, 0.5f);
}

TEST(ColorMap, PackUnpackAndDiverging) {
  const uint32_t c = pack_rgba8(10, 20, 30, 255);
  EXPECT_EQ(c, 0xFF1E140Au);  // IM_COL32 layout: A B G R from the high byte
  const Rgb u = unpack_rgb(c);
  EXPECT_EQ(pack_rgba(u), c);
  const Rgb white{1, 1, 1};
  EXPECT_EQ(pack_rgba(diverging(0, 1, white)), pack_rgba(white));
  const Rgb neg = diverging(-1, 1, white), pos = diverging(1, 1, white);
  EXPECT_GT(neg.b, neg.r);  // negative is blue
  EXPECT_GT(pos.r, pos.b);  // positive is red
  EXPECT_EQ(pack_rgba(diverging(-5, 1, white)), pack_rgba(neg));  // clamped
}

TEST(HeatImage, PoolMaxEqualsBruteForce) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (int trial = 0; trial < 30; ++trial) {
    HeatGrid g;
    g.rows = 1 + static_cast<int64_t>(rng() % 90);
    g.cols = 1 + static_cast<int64_t>(rng() % 90);
    for (int64_t i = 0; i < g.rows * g.cols; ++i) g.values.push_back(u(rng) < 0.2f ? std::nanf("") : u(rng));
    const int w = 1 + static_cast<int>(rng() % static_cast<uint64_t>(g.cols));
    const int h = 1 + static_cast<int>(rng() % static_cast<uint64_t>(g.rows));
    const HeatGrid p = pool_max(g, w, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        float best = std::nanf("");
        for (int64_t r = 0; r < g.rows; ++r)
          for (int64_t c = 0; c < g.cols; ++c)
            if (r * h / g.rows == y && c * w / g.cols == x && !std::isnan(g.at(r, c)) && (std::isnan(best) || g.at(r, c) > best))
              best = g.at(r, c);
        const float got = p.at(y, x);
        if (std::isnan(best)) {
          EXPECT_TRUE(std::isnan(got));
        } else {
          EXPECT_EQ(got, best);
        }
      }
  }
}

TEST(PlotData, TicksAndBytes) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(-1, 1, 2), (std::vector<double>{-1, 0, 1}));
  EXPECT_TRUE(nice_ticks(1, 1, 4).empty());
  // Token axes tick whole tokens only, at least two of them.
  for (double hi : {1.0, 4.0, 9.0, 39.0, 4095.0}) {
    const std::vector<double> t = cell_ticks(0, hi, 4);
    EXPECT_GE(t.size(), 2u) << hi;
    for (double v : t) EXPECT_TRUE(v == std::floor(v) && v >= 0 && v <= hi) << v;
  }
  // The locality histogram's case: a range around 0 with two ticks wanted got "0" alone.
  for (auto [lo, hi] : {std::pair{-5.0, 6.0}, std::pair{-3.2, 2.9}, std::pair{-0.07, 0.09}, std::pair{4.0, 9.0}}) {
    const std::vector<double> t = nice_ticks(lo, hi, 2);
    EXPECT_GE(t.size(), 2u) << lo << " " << hi;
    for (double v : t) EXPECT_TRUE(v >= lo && v <= hi) << v;
  }
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
}

TEST(PlotData, LogTicksAndLabels) {
  EXPECT_EQ(log_ticks(1, 512), (std::vector<double>{1, 10, 100}));
  EXPECT_EQ(log_ticks(2, 9), (std::vector<double>{}));
  EXPECT_TRUE(log_ticks(0, 10).empty());
  EXPECT_EQ(tick_label(25000), "25k");
  EXPECT_EQ(tick_label(150), "150");
  EXPECT_EQ(tick_label(3), "3");
  EXPECT_EQ(tick_label(2.5), "2.5");
  EXPECT_EQ(tick_label(0.25), "0.25");
}

TEST(PlotData, RasterizeBarsPaintsInOrder) {
  const std::vector<ImageBar> bars = {{0, 10, 0, 1, 1u}, {5, 6, 0, 0.5, 2u}};
  const std::vector<uint32_t> img = rasterize_bars(bars, 0, 10, 0, 1, 10, 4, 0u);
  EXPECT_EQ(img[0 * 10 + 0], 1u);  // top row, full-height bar
  EXPECT_EQ(img[3 * 10 + 5], 2u);  // bottom row: the later, lower bar wins
  EXPECT_EQ(img[0 * 10 + 5], 1u);  // top row: only the tall bar reaches it
}

TEST(TraceSteps, FinalStepIsTheMaskAndCoverageIsTheRecall) {
  const int64_t T = 256, d = 16;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> q(T * d), k(T * d);
  for (float& x : q) x = n(rng);
  for (float& x : k) x = n(rng);
  hip::AttentionInputs in;
  in.q = q.data();
  in.k = k.data();
  in.hq = in.hkv = 1;
  in.tq = in.tk = T;
  in.d = d;
  hip::HipParams p;
  p.k = 16;
  p.b_q = 8;
  p.b_k = 2;
  const hip::MaskResult oracle = hip::oracle_masks(in, p);
  const hip::MaskResult mask = hip::estimate_masks_reference(in, p).mask;
  const std::vector<double> recall = hip::mask_recall(mask, oracle);
  for (int64_t qb : {0, 5, 20, 31}) {
    const hip::MaskTrace t = hip::trace_block_mask(in, p, 0, qb);
    std::vector<int32_t> ob(oracle.row(0, qb), oracle.row(0, qb) + oracle.count(0, qb));
    const std::vector<TraceStep> steps = trace_steps(t, ob);
    ASSERT_EQ(steps.size(), t.iterations.size() + 1);
    std::vector<int32_t> starts;
    for (const auto& nd : steps.back().nodes) starts.push_back(nd.first);
    EXPECT_EQ(starts, t.blocks) << qb;
    EXPECT_NEAR(steps.back().oracle_coverage, recall[static_cast<size_t>(qb)], 1e-12) << qb;
    for (size_t s = 1; s < steps.size(); ++s) EXPECT_LE(steps[s].alive_blocks, steps[s - 1].alive_blocks);
    EXPECT_DOUBLE_EQ(steps.front().oracle_coverage, 1.0);
  }
}

}  // namespace
}  // namespace hipstudio::viz
