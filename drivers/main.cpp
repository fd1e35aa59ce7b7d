// rrfp: the command-line entry point. Subcommands register in commands.hpp.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "drivers/commands.hpp"
#include "graph/pipeline_spec.hpp"
#include "runtime/executor.hpp"
#include "runtime/mpi_session.hpp"

int main(int argc, char** argv) {
  CLI::App app{"RRFP: readiness-first pipeline-parallel runtime on StarPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rrfp 0.1.0");
  rrfp::cli::add_hints_command(app);
  rrfp::cli::add_bench_command(app);
  rrfp::cli::add_train_command(app);
  rrfp::cli::add_plot_command(app);
  rrfp::cli::add_sim_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const rrfp::UnrecoverableError& e) {
    // StarPU holds tasks that will never finish (or other ranks wait for
    // this one): no clean shutdown is possible. Under mpirun every rank stops.
    if (rrfp::mpi_launched()) rrfp::mpi_abort(e.what());
    std::fprintf(stderr, "rrfp: error: %s\n", e.what());
    std::fflush(stdout);
    std::_Exit(3);
  } catch (const rrfp::SpecError& e) {
    std::fprintf(stderr, "rrfp: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rrfp: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
