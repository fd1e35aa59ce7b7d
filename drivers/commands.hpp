// Each subcommand lives in its own file and registers itself here.
#pragma once

#include <CLI/CLI.hpp>

namespace rrfp::cli {

void add_hints_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_sim_command(CLI::App& app);
void add_topo_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_tune_command(CLI::App& app);

}  // namespace rrfp::cli
