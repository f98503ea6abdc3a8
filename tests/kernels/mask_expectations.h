#pragma once
// One mask equal to another in every field (shape, blocks, counts, dense_from), as a test expects.
#include <string>

#include <gtest/gtest.h>

#include "kernels/mask_reference.h"

namespace hipstudio::testing {

inline void expect_same_mask(const hip::MaskResult& got, const hip::MaskResult& want, const std::string& what) {
  ASSERT_EQ(got.heads, want.heads) << what;
  ASSERT_EQ(got.query_blocks, want.query_blocks) << what;
  ASSERT_EQ(got.kb, want.kb) << what;
  EXPECT_EQ(got.blocks, want.blocks) << what;
  EXPECT_EQ(got.counts, want.counts) << what;
  EXPECT_EQ(got.dense_from, want.dense_from) << what;
}

}  // namespace hipstudio::testing
