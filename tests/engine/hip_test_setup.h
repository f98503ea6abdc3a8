#pragma once
// What the HiP-in-the-model tests (CPU and GPU) run: a TinyStories-style prompt and a HiP budget
// small enough that stories15M's 256-token context really searches.
#include <string>

#include "engine/analysis/hip_model_params.h"

namespace hipstudio::testing {

// Four sentences (about 95 tokens); kStory continues it to about 150.
inline const std::string kStoryOpening =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
    "One day, she saw a big red ball in the park. She ran to the ball and kicked it high into the sky. "
    "The ball flew over the trees and landed in a pond. Lily was sad because she could not swim. "
    "Her friend Ben came and saw her crying. He said, \"Don't worry, Lily, I will help you.\"";
inline const std::string kStory =
    kStoryOpening +
    " Ben found a long stick and pulled the ball out of the water. Lily was so happy that she hugged Ben. "
    "They played with the ball all day long and became best friends.";

// k = 16 tokens (8 blocks of 2), query blocks of 8, sink 2, window 4, l_d 1, r_m 4.
inline HipModelParams small_hip_params() {
  HipModelParams p;
  p.hip.k = 16;
  p.hip.b_q = 8;
  p.hip.b_k = 2;
  p.hip.sink = 2;
  p.hip.window = 4;
  p.dense_layers = 1;
  p.refresh_every = 4;
  return p;
}

}  // namespace hipstudio::testing
