#include "captures/mask_png.h"

#include <algorithm>

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

// The rect's cells pooled into (height, width) pixels: viz pools to at most one texel per cell, and
// a larger image repeats texels (nearest neighbour), so any size comes out exact.
RgbImage render_rect(const MaskExport& m, const viz::PoolRect& cells, int64_t width, int64_t height) {
  viz::PoolRect pool = cells;
  pool.width = static_cast<int>(std::min(width, cells.col1 - cells.col0));
  pool.height = static_cast<int>(std::min(height, cells.row1 - cells.row0));
  std::vector<uint32_t> rgba;
  viz::colorize_mask(viz::pool_mask_flags(m.picture, pool), m.palette, rgba);
  RgbImage im;
  im.width = width, im.height = height;
  im.rgb.resize(static_cast<size_t>(width * height * 3));
  for (int64_t y = 0; y < height; ++y) {
    const uint32_t* line = rgba.data() + (y * pool.height / height) * pool.width;
    for (int64_t x = 0; x < width; ++x) {
      const uint32_t c = line[x * pool.width / width];  // packed as viz::pack_rgba8: R in the low byte
      uint8_t* out = &im.rgb[static_cast<size_t>((y * width + x) * 3)];
      out[0] = c & 0xff, out[1] = (c >> 8) & 0xff, out[2] = (c >> 16) & 0xff;
    }
  }
  return im;
}

}  // namespace

MaskExport mask_export(const LayerMaskViews& m, const hip::HipParams& p, int64_t tokens, int64_t head, const viz::FigureStyle& style) {
  MaskExport e;
  e.picture = viz::make_mask_picture(m.hip, &m.oracle, &m.random, head, tokens, tokens, p);
  e.palette = export_mask_palette(!m.oracle.blocks.empty(), style.mask);
  return e;
}

viz::MaskPalette export_mask_palette(bool has_oracle, const viz::MaskPalette& base) {
  viz::MaskPalette p = base;
  p.show_oracle = has_oracle;
  p.show_random = false;
  p.show_sink_dense = true;
  return p;
}

std::vector<std::pair<std::string, uint32_t>> mask_legend(const viz::MaskPalette& p) {
  return {{"hit (HiP and oracle)", p.hit}, {"false pick (HiP only)", p.false_pick}, {"miss (oracle only)", p.miss},
          {"sink", p.sink},                {"dense tail", p.dense},                 {"not attended", p.empty},
          {"future", p.future}};
}

RgbImage render_mask(const MaskExport& m, int64_t longest_side) {
  const int64_t tq = m.picture.tq, tk = m.picture.tk;
  if (tq <= 0 || tk <= 0) return {};
  const int64_t side = std::max<int64_t>(longest_side, 1), longest = std::max(tq, tk);
  if (side > (1 << 16))  // encode_png's limit, checked before the pixels are allocated
    throw InputError("a mask image's longest side must be 1..65536 px, not " + std::to_string(side) + " (export in tiles)");
  // The shorter side keeps the picture's aspect (square for a prompt: tq == tk).
  const int64_t width = std::max<int64_t>(1, (tk * side + longest / 2) / longest);
  const int64_t height = std::max<int64_t>(1, (tq * side + longest / 2) / longest);
  return render_rect(m, viz::PoolRect{0, tq, 0, tk, 0, 0}, width, height);
}

std::vector<RgbImage> render_mask_tiles(const MaskExport& m, int64_t tile) {
  std::vector<RgbImage> tiles;
  tile = std::max<int64_t>(tile, 1);
  const int64_t b = m.picture.b_k;
  for (int64_t y0 = 0; y0 < m.full_height(); y0 += tile)
    for (int64_t x0 = 0; x0 < m.full_width(); x0 += tile) {
      const int64_t h = std::min(tile, m.full_height() - y0), w = std::min(tile, m.full_width() - x0);
      const viz::PoolRect cells{y0 * b, std::min(m.picture.tq, (y0 + h) * b), x0 * b, std::min(m.picture.tk, (x0 + w) * b), 0, 0};
      tiles.push_back(render_rect(m, cells, w, h));
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
