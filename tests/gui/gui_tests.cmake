# GUI tests (included from tests/CMakeLists.txt): the viz library's GoogleTest suite, and the
# scripted self-test of the real GUI under a virtual X server. Nothing without HIPSTUDIO_GUI.
if(NOT HIPSTUDIO_GUI)
  return()
endif()
hipstudio_add_suite(test_gui gui LIBS hipstudio_viz hipstudio_kernels hipstudio_engine_io hipstudio_captures LABEL gui)
# The GUI's torch-free logic (knob validation, stage keys, worker views) is tested directly.
target_sources(test_gui PRIVATE ${PROJECT_SOURCE_DIR}/app/gui/app_state.cpp ${PROJECT_SOURCE_DIR}/app/gui/worker_views.cpp
  ${PROJECT_SOURCE_DIR}/app/gui/files.cpp ${PROJECT_SOURCE_DIR}/app/gui/capture_view.cpp)
find_program(XVFB_RUN xvfb-run)
if(XVFB_RUN)
  add_test(NAME gui_self_test
           COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" $<TARGET_FILE:hipstudio> --self-test
                   --screenshot ${CMAKE_BINARY_DIR}/tests/gui_self_test.png)
  set_tests_properties(gui_self_test PROPERTIES LABELS gui TIMEOUT 900)
  # A short soak (app/gui/soak.cpp): three loops of reload, parameter changes, random cancels,
  # generation, export, capture save / reopen / close; fails on a wrong result or RSS / thread growth.
  add_test(NAME gui_soak
           COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" $<TARGET_FILE:hipstudio> --self-test --soak 3)
  set_tests_properties(gui_soak PROPERTIES LABELS gui TIMEOUT 170)
endif()
# The real worker (app/gui/worker.cpp) with fake engine jobs instead of LibTorch: cancels at
# random moments (tests/gui/worker/); and the --soak flag's input errors (runs the hipstudio binary).
hipstudio_add_suite(test_gui_worker gui/worker LIBS hipstudio_viz hipstudio_kernels hipstudio_engine_io hipstudio_captures LABEL gui)
target_sources(test_gui_worker PRIVATE ${PROJECT_SOURCE_DIR}/app/gui/worker.cpp ${PROJECT_SOURCE_DIR}/app/gui/worker_views.cpp)
add_dependencies(test_gui_worker hipstudio)
# The GUI's Cancel inside the engine: the paired analysis honours it mid-prefill (LibTorch, the
# default model).
hipstudio_add_suite(test_gui_engine gui/engine LIBS hipstudio_engine LABEL gui)
