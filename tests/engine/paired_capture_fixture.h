#pragma once
// A paired run and the capture of its mask views, set up once for the tests that compare what a run
// computed with what a capture of it reads back (views_agreement_test, windowed_analysis_test): the
// small HiP parameters of hip_test_setup.h, the "mask" view only, no images, one thread, the capture
// written to a file and read back.
#include <cstdint>
#include <string>
#include <utility>

#include "captures/capture.h"
#include "engine/analysis/paired_analysis.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio::testing {

inline AnalysisOptions paired_test_options(int64_t decode_steps) {
  AnalysisOptions o;
  o.hip = small_hip_params();
  o.decode_steps = decode_steps;
  return o;
}

struct PairedCapture {
  PairedAnalysis kept;               // the run the capture was built from
  captures::CaptureInfo info;        // model, architecture, device "cpu", the prompt, f32
  captures::CaptureRequest request;  // the mask view only, no images, one thread
  captures::Capture back;            // the capture, written to disk and read back
};

inline PairedCapture capture_mask_views(PairedAnalysis a, const std::string& model, const std::string& architecture,
                                        const std::string& prompt) {
  PairedCapture c;
  c.info.run = {"test", model, architecture, "cpu", prompt};
  c.info.dtype = "f32";
  c.request.views = {"mask"};
  c.request.render_images = false;
  c.request.threads = 1;
  c.kept = a;
  TempDir dir;
  captures::write_capture(dir.file("run.hipcap"), captures::build_capture(std::move(a), c.info, c.request, nullptr));
  c.back = captures::read_capture(dir.file("run.hipcap"));
  return c;
}

}  // namespace hipstudio::testing
