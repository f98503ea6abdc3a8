# GUI tests (included from tests/CMakeLists.txt): the viz library's GoogleTest suite, and the
# scripted self-test of the real GUI under a virtual X server. Nothing without HIPSTUDIO_GUI.
if(NOT HIPSTUDIO_GUI)
  return()
endif()
# The GUI's torch-free logic (knob validation, stage keys, worker views) through the library the app
# links (app/gui/CMakeLists.txt).
hipstudio_add_suite(test_gui gui LIBS hipstudio_gui_logic hipstudio_viz hipstudio_kernels hipstudio_engine_io hipstudio_captures LABEL gui)
# The worker's stage table (worker_stages.cpp, which the stage keys live in) names the engine jobs:
# the LibTorch-free stand-ins satisfy them here as in test_gui_worker.
target_sources(test_gui PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gui/worker/fake_engine_jobs.cpp)
find_program(XVFB_RUN xvfb-run)
# Under AddressSanitizer, Mesa's software GL driver (swrast_dri.so, dlopen'ed by libGLX_mesa) is
# unloaded at exit while its global state still points at a few heap blocks (240 bytes); LeakSanitizer
# then sees them unreachable from an "<unknown module>". Preloading the driver keeps it mapped, so its
# globals stay roots and nothing is reported; a leak of ours is still reported (checked by hand:
# without the preload exactly those 3 blocks appear, with it none). libasan must come first.
set(HIPSTUDIO_GUI_TEST_ENV "")
if(HIPSTUDIO_SANITIZE MATCHES "address")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE HIPSTUDIO_LIBASAN
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  find_file(HIPSTUDIO_MESA_SWRAST swrast_dri.so PATHS /usr/lib/x86_64-linux-gnu/dri /usr/lib64/dri /usr/lib/dri NO_DEFAULT_PATH)
  if(HIPSTUDIO_MESA_SWRAST AND EXISTS "${HIPSTUDIO_LIBASAN}")
    set(HIPSTUDIO_GUI_TEST_ENV env "LD_PRELOAD=${HIPSTUDIO_LIBASAN} ${HIPSTUDIO_MESA_SWRAST}")
  endif()
endif()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gui)  # the self-test's screenshots: shot.png, shot-token.png, ...
if(XVFB_RUN)
  add_test(NAME gui_self_test
           COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${HIPSTUDIO_GUI_TEST_ENV} $<TARGET_FILE:hipstudio> --self-test
                   --screenshot ${CMAKE_BINARY_DIR}/tests/gui/shot.png)
  set_tests_properties(gui_self_test PROPERTIES LABELS gui TIMEOUT 900)
  # A short soak (app/gui/harness/soak.cpp): five loops of reload, parameter changes, random
  # cancels, generation, export, capture save / reopen / close; fails on a wrong result, on RSS growth
  # the last two loops both keep (app/gui/harness/soak_growth.h), or on thread growth.
  add_test(NAME gui_soak
           COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${HIPSTUDIO_GUI_TEST_ENV} $<TARGET_FILE:hipstudio> --self-test --soak 5)
  set_tests_properties(gui_soak PROPERTIES LABELS gui TIMEOUT 900)  # ~75 s; ~280 s under the sanitizers
  # The scale script (--timing-log, app/gui/harness/self_test_scale.cpp) once on the CPU with the
  # default model: every timing line is in the log (the numbers are benchmarks, not checked).
  add_test(NAME gui_timing_smoke
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gui/timing_smoke.sh ${CMAKE_BINARY_DIR}/tests/gui
                   ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${HIPSTUDIO_GUI_TEST_ENV} $<TARGET_FILE:hipstudio>)
  set_tests_properties(gui_timing_smoke PROPERTIES LABELS gui TIMEOUT 300)
endif()
# The real worker (app/gui/worker.cpp) with fake engine jobs instead of LibTorch: cancels at
# random moments (tests/gui/worker/); and the --soak flag's input errors (runs the hipstudio binary).
hipstudio_add_suite(test_gui_worker gui/worker LIBS hipstudio_gui_logic hipstudio_viz hipstudio_kernels hipstudio_engine_io hipstudio_captures
  LABEL gui)
add_dependencies(test_gui_worker hipstudio)
# The GUI's Cancel inside the engine: the paired analysis honours it mid-prefill (LibTorch, the
# default model).
hipstudio_add_suite(test_gui_engine gui/engine LIBS hipstudio_engine LABEL gui)
