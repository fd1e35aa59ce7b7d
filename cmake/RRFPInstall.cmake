# Install rules of the package: one export set per library, so that
# find_package(RRFP COMPONENTS core) needs neither StarPU, MPI, cairo nor
# LibTorch. Only public headers are installed (include/rrfp/<layer>/...);
# the others are internals of their library.
include(CMakePackageConfigHelpers)

set(RRFP_PUBLIC_HEADERS_core
  graph/pipeline_spec.hpp graph/task_graph.hpp
  hints/csv.hpp hints/generators.hpp hints/hint.hpp hints/list_sched.hpp hints/replay.hpp hints/validate.hpp
  sched/arbiter.hpp
  sched/memory_budget.hpp
  sim/compare.hpp sim/decision_check.hpp sim/formulas.hpp sim/scenario.hpp sim/sim_timeline.hpp sim/simulator.hpp sim/sweep.hpp
  codelets/cost_model.hpp codelets/duration_trace.hpp
  comm/edge_order.hpp
  plot/timeline.hpp)
set(RRFP_PUBLIC_HEADERS_plot plot/render.hpp plot/line_chart.hpp)
set(RRFP_PUBLIC_HEADERS_runtime
  runtime/executor.hpp runtime/bench.hpp runtime/run_stats.hpp runtime/session.hpp runtime/tp_comm.hpp
  sched/policy_registry.hpp sched/rrfp_policy.hpp sched/rrfp_sched.h)
set(RRFP_PUBLIC_HEADERS_mpi mpi/mpi_executor.hpp mpi/mpi_session.hpp mpi/mpi_tp_comm.hpp)
set(RRFP_PUBLIC_HEADERS_train train/trainer.hpp train/config.hpp train/lr_schedule.hpp)

set(RRFP_COMPONENTS core plot runtime mpi train)
foreach(c ${RRFP_COMPONENTS})
  install(TARGETS rrfp_${c} EXPORT RRFP-${c}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  foreach(h ${RRFP_PUBLIC_HEADERS_${c}})
    get_filename_component(dir ${h} DIRECTORY)
    install(FILES ${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rrfp/${dir})
  endforeach()
  install(EXPORT RRFP-${c}-targets NAMESPACE RRFP:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/RRFP)
endforeach()
# RRFP::rrfp: everything but training.
install(TARGETS rrfp EXPORT RRFP-all-targets)
install(EXPORT RRFP-all-targets NAMESPACE RRFP:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/RRFP)
install(TARGETS rrfp_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

configure_package_config_file(cmake/RRFPConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/RRFPConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/RRFP)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/RRFPConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/RRFPConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/RRFPConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/RRFP)
