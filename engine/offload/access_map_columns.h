#pragma once
// An access map narrowed to at most `max_columns` columns for drawing: at 32k tokens and more one
// texel a token passes what a GL texture may hold (GL_MAX_TEXTURE_SIZE: 16384 on Mesa's llvmpipe,
// 32768 on NVIDIA), and the upload then fails and the map draws black. Column c covers tokens
// [column_first_token(c), column_first_token(c + 1)) and holds their worst outcome (miss > hit >
// none), the rule the map already folds layers and heads by, so a miss anywhere in a column shows.
#include <cstdint>

#include "engine/offload/offload_result.h"

namespace hipstudio::offload {

// The map itself when it has at most max_columns tokens (max_columns >= 1).
AccessMap access_map_columns(const AccessMap& map, int64_t max_columns);

// First token of column c of a map of `tokens` tokens narrowed to `columns` columns (c in [0, columns]).
inline int64_t column_first_token(int64_t c, int64_t tokens, int64_t columns) { return c * tokens / columns; }

}  // namespace hipstudio::offload
