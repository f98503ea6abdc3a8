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
endif()
