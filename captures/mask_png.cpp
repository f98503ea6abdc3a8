#include "captures/mask_png.h"

#include <algorithm>
#include <cstring>

#include "engine/formats/errors.h"

// stb_image_write (Debian libstb-dev) compresses; a machine without it (the GPU build machine
// carries only a few headers) gets uncompressed PNGs from the small encoder below instead.
#if __has_include(<stb/stb_image_write.h>)
#define HIPSTUDIO_HAVE_STB_WRITE 1
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
#define HIPSTUDIO_HAVE_STB_WRITE 0
#include "captures/zip_store.h"  // crc32
#endif

namespace hipstudio::captures {
namespace {

// Colours by MaskCell (the report's legend repeats them).
constexpr uint8_t kPalette[6][3] = {
    {255, 255, 255},  // hidden (causally masked)
    {232, 236, 243},  // visible, not selected
    {242, 142, 43},   // oracle only: a block HiP missed
    {225, 87, 89},    // HiP only
    {31, 78, 121},    // HiP and the oracle
    {150, 150, 150},  // sink or sliding window (always attended)
};

}  // namespace

MaskCells mask_cells(const LayerMasks& m, const hip::HipParams& p, int64_t tokens, int64_t head) {
  MaskCells c;
  c.rows = m.hip.query_blocks;
  c.cols = (tokens + p.b_k - 1) / p.b_k;
  c.row_repeat = std::max<int64_t>(1, p.b_q / p.b_k);
  c.cells.assign(static_cast<size_t>(c.rows * c.cols), kCellHidden);
  for (int64_t qb = 0; qb < c.rows; ++qb) {
    uint8_t* row = c.cells.data() + qb * c.cols;
    const int64_t last = std::min(tokens, (qb + 1) * p.b_q) - 1;  // the block's last query sees keys <= last
    for (int64_t kb = 0; kb <= last / p.b_k && kb < c.cols; ++kb) {
      const bool sink = kb * p.b_k < p.sink;
      const bool window = (kb + 1) * p.b_k - 1 >= m.hip.dense_from[qb];
      row[kb] = (sink || window) ? kCellDense : kCellVisible;
    }
    for (int pass = 0; pass < 2; ++pass) {
      const hip::MaskResult& r = pass == 0 ? m.oracle : m.hip;
      const int32_t* blocks = r.row(head, qb);
      for (int32_t i = 0; i < r.count(head, qb); ++i) {
        const int32_t kb = blocks[i];
        if (kb < 0 || kb >= c.cols || row[kb] == kCellDense) continue;
        uint8_t& cell = row[kb];
        cell = pass == 0 ? kCellOracleOnly : (cell == kCellOracleOnly ? kCellBoth : kCellHipOnly);
      }
    }
  }
  return c;
}

RgbImage render_mask(const MaskCells& c, int64_t max_side, int64_t scale) {
  RgbImage im;
  const int64_t image_rows = c.image_rows();
  if (image_rows == 0 || c.cols == 0) return im;
  max_side = std::max<int64_t>(max_side, 1);
  // Pooling factor: cells per pixel along each axis (the same on both so shapes stay square).
  const int64_t pool = std::max<int64_t>(1, (std::max(image_rows, c.cols) + max_side - 1) / max_side);
  const int64_t rows = (image_rows + pool - 1) / pool, cols = (c.cols + pool - 1) / pool;
  if (scale <= 0) scale = std::max<int64_t>(1, max_side / std::max(rows, cols));
  scale = std::min<int64_t>(scale, std::max<int64_t>(1, max_side / std::max(rows, cols)));
  im.width = cols * scale;
  im.height = rows * scale;
  im.rgb.assign(static_cast<size_t>(im.width * im.height * 3), 255);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      uint8_t v = 0;
      for (int64_t i = r * pool; i < std::min(image_rows, (r + 1) * pool); ++i)
        for (int64_t j = col * pool; j < std::min(c.cols, (col + 1) * pool); ++j) v = std::max(v, c.at_image(i, j));
      for (int64_t y = r * scale; y < (r + 1) * scale; ++y)
        for (int64_t x = col * scale; x < (col + 1) * scale; ++x) std::memcpy(&im.rgb[(y * im.width + x) * 3], kPalette[v], 3);
    }
  return im;
}

std::vector<RgbImage> render_mask_tiles(const MaskCells& c, int64_t tile) {
  std::vector<RgbImage> tiles;
  tile = std::max<int64_t>(tile, 1);
  for (int64_t y0 = 0; y0 < c.image_rows(); y0 += tile)
    for (int64_t x0 = 0; x0 < c.cols; x0 += tile) {
      RgbImage im;
      im.height = std::min(tile, c.image_rows() - y0);
      im.width = std::min(tile, c.cols - x0);
      im.rgb.resize(static_cast<size_t>(im.width * im.height * 3));
      for (int64_t y = 0; y < im.height; ++y)
        for (int64_t x = 0; x < im.width; ++x)
          std::memcpy(&im.rgb[(y * im.width + x) * 3], kPalette[c.at_image(y0 + y, x0 + x)], 3);
      tiles.push_back(std::move(im));
    }
  return tiles;
}

#if !HIPSTUDIO_HAVE_STB_WRITE
namespace {
void put_be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}
void chunk(std::string& out, const char* type, const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  out += body;
  put_be32(out, crc32(body));
}
// PNG with a zlib stream of stored (uncompressed) deflate blocks: valid, just not small.
std::string encode_png_stored(const RgbImage& im) {
  std::string raw;
  for (int64_t y = 0; y < im.height; ++y) {
    raw.push_back('\0');  // filter: none
    raw.append(reinterpret_cast<const char*>(im.rgb.data() + y * im.width * 3), static_cast<size_t>(im.width * 3));
  }
  std::string z = "\x78\x01";
  uint32_t a = 1, b = 0;
  for (unsigned char ch : raw) a = (a + ch) % 65521, b = (b + a) % 65521;
  for (size_t at = 0; at < raw.size() || at == 0; at += 65535) {
    const size_t n = std::min<size_t>(65535, raw.size() - at);
    z.push_back(at + n >= raw.size() ? 1 : 0);
    z.push_back(static_cast<char>(n & 0xff));
    z.push_back(static_cast<char>(n >> 8));
    z.push_back(static_cast<char>(~n & 0xff));
    z.push_back(static_cast<char>((~n >> 8) & 0xff));
    z.append(raw, at, n);
    if (raw.empty()) break;
  }
  put_be32(z, (b << 16) | a);
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(im.width));
  put_be32(ihdr, static_cast<uint32_t>(im.height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, deflate, no filter variants, no interlace
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", "");
  return out;
}
}  // namespace
#endif

std::string encode_png(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 || image.width > (1 << 16) || image.height > (1 << 16))
    throw InputError("cannot encode a " + std::to_string(image.width) + " x " + std::to_string(image.height) +
                     " PNG (sides must be 1..65536; export in tiles)");
#if HIPSTUDIO_HAVE_STB_WRITE
  std::string out;
  auto sink = [](void* ctx, void* data, int size) { static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), size); };
  if (!stbi_write_png_to_func(sink, &out, static_cast<int>(image.width), static_cast<int>(image.height), 3, image.rgb.data(),
                              static_cast<int>(image.width * 3)))
    throw InputError("PNG encoding failed");
  return out;
#else
  return encode_png_stored(image);
#endif
}

}  // namespace hipstudio::captures
