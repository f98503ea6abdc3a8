#include "viz/mask_image.h"

#include <algorithm>
#include <stdexcept>

namespace hipstudio::viz {

namespace {

std::vector<std::vector<int32_t>> head_blocks(const hip::MaskResult& m, int64_t head) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(m.query_blocks));
  for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
    const int32_t* row = m.row(head, qb);
    out[static_cast<size_t>(qb)].assign(row, row + m.count(head, qb));
  }
  return out;
}

const std::vector<int32_t>& list_of(const std::vector<std::vector<int32_t>>& lists, int64_t qb) {
  static const std::vector<int32_t> kNone;
  return qb < static_cast<int64_t>(lists.size()) ? lists[static_cast<size_t>(qb)] : kNone;
}

bool contains(const std::vector<std::vector<int32_t>>& lists, int64_t qb, int32_t block) {
  if (qb >= static_cast<int64_t>(lists.size())) return false;
  const auto& l = lists[static_cast<size_t>(qb)];
  return std::binary_search(l.begin(), l.end(), block);
}

}  // namespace

MaskPicture make_mask_picture(const hip::MaskResult& hip, const hip::MaskResult* oracle, const hip::MaskResult* random,
                              int64_t head, int64_t tq, int64_t tk, const hip::HipParams& p) {
  MaskPicture m;
  m.tq = tq;
  m.tk = tk;
  m.b_q = p.b_q;
  m.b_k = p.b_k;
  m.sink = p.sink;
  m.dense_from = hip.dense_from;
  m.hip = head_blocks(hip, head);
  if (oracle) m.oracle = head_blocks(*oracle, head);
  if (random) m.random = head_blocks(*random, head);
  return m;
}

MaskPicture make_dense_picture(int64_t tq, int64_t tk, const hip::HipParams& p) {
  MaskPicture m;
  m.tq = tq;
  m.tk = tk;
  m.b_q = std::max<int64_t>(1, p.b_q);
  m.b_k = std::max<int64_t>(1, p.b_k);
  const int64_t blocks = (tq + m.b_q - 1) / m.b_q;
  m.dense_from.assign(static_cast<size_t>(blocks), 0);
  m.hip.resize(static_cast<size_t>(blocks));
  return m;
}

uint8_t mask_cell_flags(const MaskPicture& m, int64_t i, int64_t j) {
  const int64_t pos = m.position(i);
  if (j > pos) return 0;
  const int64_t qb = i / m.b_q;
  const auto block = static_cast<int32_t>(j / m.b_k);
  uint8_t f = kMaskVisible;
  if (j < m.sink) f |= kMaskSink;
  if (j >= m.dense_from[static_cast<size_t>(qb)]) f |= kMaskDense;
  const bool hip = contains(m.hip, qb, block), oracle = contains(m.oracle, qb, block);
  if (hip && oracle) f |= kMaskHit;
  if (hip && !oracle) f |= kMaskFalsePick;
  if (oracle && !hip) f |= kMaskMiss;
  if (contains(m.random, qb, block)) f |= kMaskRandom;
  return f;
}

std::vector<uint8_t> pool_mask_flags(const MaskPicture& m, const PoolRect& r) {
  const int64_t rows = r.row1 - r.row0, cols = r.col1 - r.col0;
  if (r.row0 < 0 || r.col0 < 0 || r.row1 > m.tq || r.col1 > m.tk || rows <= 0 || cols <= 0 || r.width <= 0 ||
      r.height <= 0 || r.width > cols || r.height > rows)
    throw std::invalid_argument("pool_mask_flags: rect outside the picture or more texels than cells");
  const int w = r.width;
  std::vector<uint8_t> out(static_cast<size_t>(w) * static_cast<size_t>(r.height), 0);
  auto texel_x = [&](int64_t j) { return static_cast<int>((j - r.col0) * w / cols); };
  // ORs `flag` into the texels of keys [a, b] (inclusive), clipped to the rect.
  auto paint = [&](uint8_t* line, int64_t a, int64_t b, uint8_t flag) {
    a = std::max(a, r.col0);
    b = std::min(b, r.col1 - 1);
    if (a > b) return;
    for (int x = texel_x(a), xe = texel_x(b); x <= xe; ++x) line[x] |= flag;
  };
  for (int y = 0; y < r.height; ++y) {
    // Rows whose texel row is y: ceil(y * rows / h) <= i - row0 < ceil((y + 1) * rows / h).
    const int64_t ra = r.row0 + (static_cast<int64_t>(y) * rows + r.height - 1) / r.height;
    const int64_t rb = r.row0 + ((static_cast<int64_t>(y) + 1) * rows + r.height - 1) / r.height;
    uint8_t* line = out.data() + static_cast<size_t>(y) * w;
    const int64_t last_pos = m.position(rb - 1);  // the widest row: visibility is "some row sees j"
    paint(line, 0, last_pos, kMaskVisible);
    paint(line, 0, std::min(m.sink - 1, last_pos), kMaskSink);
    for (int64_t qb = ra / m.b_q; qb * m.b_q < rb; ++qb) {
      const int64_t end_row = std::min(rb, (qb + 1) * m.b_q);  // last row of this block inside [ra, rb)
      const int64_t pos = m.position(end_row - 1);
      paint(line, m.dense_from[static_cast<size_t>(qb)], pos, kMaskDense);
      const std::vector<int32_t>& hip = list_of(m.hip, qb);
      const std::vector<int32_t>& oracle = list_of(m.oracle, qb);
      const int32_t first = static_cast<int32_t>(r.col0 / m.b_k);  // blocks before it miss the rect
      auto paint_block = [&](int32_t block, uint8_t flag) {
        paint(line, int64_t{block} * m.b_k, std::min<int64_t>(int64_t{block} * m.b_k + m.b_k - 1, pos), flag);
      };
      // Merge the two sorted lists: both -> hit, HiP only -> false pick, oracle only -> miss.
      auto h = std::lower_bound(hip.begin(), hip.end(), first);
      auto o = std::lower_bound(oracle.begin(), oracle.end(), first);
      while (h != hip.end() || o != oracle.end()) {
        if (o == oracle.end() || (h != hip.end() && *h < *o)) {
          paint_block(*h++, kMaskFalsePick);
        } else if (h == hip.end() || *o < *h) {
          paint_block(*o++, kMaskMiss);
        } else {
          paint_block(*h, kMaskHit);
          ++h, ++o;
        }
        if ((h == hip.end() || *h * m.b_k >= r.col1) && (o == oracle.end() || *o * m.b_k >= r.col1)) break;
      }
      const std::vector<int32_t>& rnd = list_of(m.random, qb);
      for (auto it = std::lower_bound(rnd.begin(), rnd.end(), first); it != rnd.end() && *it * m.b_k < r.col1; ++it)
        paint_block(*it, kMaskRandom);
    }
  }
  return out;
}

namespace {

// Okabe and Ito (2008), "Color Universal Design": distinguishable by the common colour-vision types.
void okabe_ito_outcomes(MaskPalette& p) {
  p.selected = p.hit = pack_rgba8(240, 228, 66);  // yellow
  p.false_pick = pack_rgba8(213, 94, 0);           // vermillion
  p.miss = pack_rgba8(0, 114, 178);                // blue
  p.random = pack_rgba8(204, 121, 167);            // reddish purple
  p.sink = pack_rgba8(86, 180, 233);               // sky blue
  p.dense = pack_rgba8(0, 158, 115);               // bluish green
}

}  // namespace

MaskPalette dark_mask_palette(MaskColors colors) {
  MaskPalette p;
  p.future = pack_rgba8(24, 26, 31);
  p.empty = pack_rgba8(44, 62, 80);          // visible, not attended
  p.selected = pack_rgba8(250, 214, 60);     // HiP (oracle hidden)
  p.hit = pack_rgba8(250, 214, 60);          // HiP and oracle agree
  p.false_pick = pack_rgba8(255, 138, 40);   // HiP picked, oracle did not
  p.miss = pack_rgba8(235, 64, 140);         // oracle picked, HiP missed
  p.random = pack_rgba8(120, 110, 210);      // random baseline
  p.sink = pack_rgba8(80, 200, 230);
  p.dense = pack_rgba8(110, 190, 120);
  if (colors == MaskColors::ColorBlindSafe) okabe_ito_outcomes(p);
  return p;
}

MaskPalette light_mask_palette(MaskColors colors) {
  MaskPalette p = dark_mask_palette(MaskColors::Classic);
  p.future = pack_rgba8(236, 236, 238);
  p.empty = pack_rgba8(196, 214, 228);
  p.selected = pack_rgba8(232, 180, 0);
  p.hit = pack_rgba8(232, 180, 0);
  p.false_pick = pack_rgba8(236, 110, 0);
  p.miss = pack_rgba8(210, 30, 110);
  p.random = pack_rgba8(100, 90, 200);
  p.sink = pack_rgba8(20, 150, 190);
  p.dense = pack_rgba8(60, 150, 70);
  if (colors == MaskColors::ColorBlindSafe) okabe_ito_outcomes(p);
  return p;
}

uint32_t mask_texel_color(uint8_t f, const MaskPalette& p) {
  if (!(f & kMaskVisible)) return p.future;
  if (p.show_sink_dense && (f & kMaskSink)) return p.sink;
  if (p.show_sink_dense && (f & kMaskDense)) return p.dense;
  if (p.show_oracle) {
    // A pooled texel can hold several outcomes: a miss is the news, so it wins over the others.
    if (f & kMaskMiss) return p.miss;
    if (f & kMaskFalsePick) return p.false_pick;
    if (f & kMaskHit) return p.hit;
  } else if (f & kMaskHip) {
    return p.selected;
  }
  if (p.show_random && (f & kMaskRandom)) return p.random;
  if (!p.show_sink_dense && (f & (kMaskSink | kMaskDense))) return p.selected;
  return p.empty;
}

void colorize_mask(const std::vector<uint8_t>& flags, const MaskPalette& palette, std::vector<uint32_t>& rgba) {
  rgba.resize(flags.size());
  for (size_t i = 0; i < flags.size(); ++i) rgba[i] = mask_texel_color(flags[i], palette);
}

}  // namespace hipstudio::viz
