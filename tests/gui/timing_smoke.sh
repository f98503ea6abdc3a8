#!/bin/sh
# ctest gui_timing_smoke: one short run of the GUI self-test's scale script (--timing-log) on the CPU
# with the default model, then checks that the log has every timing line with a value, and a
# screenshot of the mask panel.
# Usage: timing_smoke.sh OUTDIR COMMAND... (the hipstudio command line up to its options, e.g.
# xvfb-run -a -s "-screen 0 1600x1000x24" build/hipstudio).
set -u
out=$1
shift
mkdir -p "$out"
log="$out/timing.log"
rm -f "$log" "$out"/timing*.png
"$@" --self-test --gui-device cpu --timing-log "$log" --screenshot "$out/timing.png"
status=$?
fail=0
[ "$status" -eq 0 ] || { echo "timing_smoke: hipstudio exited $status"; fail=1; }
for key in launch_to_first_mask k_change_to_viewed_layer k_change_to_mask b_q_change_to_mask b_k_change_to_mask layer_change_to_mask \
           head_change_to_mask head_change_to_views r_m_change_to_decode idle_frame_median idle_frame_p99 \
           zoom_frame_median zoom_frame_p99 sweep_4_k_to_result add_random_to_mask add_streaming_to_mask add_quest_to_mask \
           add_vslash_to_mask switch_method_to_mask; do
  grep -Eq "^timing: $key [0-9]+\.[0-9]+ m?s \(target <= " "$log" || { echo "timing_smoke: no timing line for $key"; fail=1; }
done
for key in launch_to_first_latency launch_to_all_layers l_d_change_to_mask layer_change_during_background background_settled; do  # timed, with no target
  grep -Eq "^timing: $key [0-9]+\.[0-9]+ s$" "$log" || { echo "timing_smoke: no timing line for $key"; fail=1; }
done
for key in device dtype model prompt_tokens knobs; do
  grep -q "^$key: " "$log" || { echo "timing_smoke: no '$key:' line"; fail=1; }
done
if grep -q "changed NO" "$log"; then echo "timing_smoke: a step's result did not change"; fail=1; fi
grep -q "^result: 24 of 24 measurements produced their result" "$log" || { echo "timing_smoke: not every measurement produced its result"; fail=1; }
[ -s "$out/timing-mask.png" ] || { echo "timing_smoke: no screenshot of the mask panel"; fail=1; }
[ "$fail" -eq 0 ] || { echo "--- $log"; cat "$log"; }
exit "$fail"
