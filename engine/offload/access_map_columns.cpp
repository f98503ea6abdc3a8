#include "engine/offload/access_map_columns.h"

#include <algorithm>
#include <stdexcept>

namespace hipstudio::offload {

AccessMap access_map_columns(const AccessMap& map, int64_t max_columns) {
  if (max_columns < 1) throw std::invalid_argument("access_map_columns: max_columns must be >= 1");
  if (map.tokens <= max_columns) return map;
  AccessMap out;
  out.steps = map.steps;
  out.tokens = max_columns;
  out.cells.assign(static_cast<size_t>(map.steps * max_columns), kAccessNone);
  for (int64_t s = 0; s < map.steps; ++s)
    for (int64_t c = 0; c < max_columns; ++c) {
      uint8_t worst = kAccessNone;  // outcomes are ordered none < hit < miss
      const int64_t end = column_first_token(c + 1, map.tokens, max_columns);
      for (int64_t t = column_first_token(c, map.tokens, max_columns); t < end; ++t) worst = std::max(worst, map.at(s, t));
      out.cells[static_cast<size_t>(s * max_columns + c)] = worst;
    }
  return out;
}

}  // namespace hipstudio::offload
