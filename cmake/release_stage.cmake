# `release_stage`: what the release stage of .ci/test builds. Every test runs under the
# sanitizers first; the release stage then runs the tests whose figures or bounds hold on
# release binaries only — labels vm, bench, bpf (not built sanitized), reliability and proxy
# (memory bounds the sanitizer's shadow and quarantine would break), and release (the rest
# of such tests: the DaemonSet's memory limit (e2e.daemonset_production_limits), the full-scale exit records,
# the allocator trimmer). Building only their executables (and what those depend on) leaves
# out ~250 test binaries that the sanitized stage has already run. .ci/check_stages.py fails
# the stage if a test with one of those labels has no executable here.

add_custom_target(release_stage)
add_dependencies(release_stage statlet)

# Every executable defined in `dir` and the directories under it.
function(_statlet_executables_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(found)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _statlet_executables_under(${sub} more)
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

set(_stage_dirs)
get_property(_test_dirs DIRECTORY ${CMAKE_SOURCE_DIR}/tests PROPERTY SUBDIRECTORIES)
foreach(d ${_test_dirs})
  get_filename_component(_name ${d} NAME)
  if(_name MATCHES "^(vm|reliability|proxy)$")
    list(APPEND _stage_dirs ${d})
  endif()
endforeach()
if(NOT STATLET_SANITIZE)
  list(APPEND _stage_dirs ${CMAKE_SOURCE_DIR}/bench)
endif()
foreach(d ${_stage_dirs})
  _statlet_executables_under(${d} _exes)
  if(_exes)
    add_dependencies(release_stage ${_exes})
  endif()
endforeach()
# Single binaries of other areas' tests that carry a release-stage label (the bpf and e2e
# directories also hold unit tests and a stage of their own that the sanitized stage runs).
foreach(t statlet_bpf_live_test statlet_e2e_test prometheus_bpf_serving_test collector_live_exit_test
          base_memory_trimmer_test)
  if(TARGET ${t})
    add_dependencies(release_stage ${t})
  endif()
endforeach()
