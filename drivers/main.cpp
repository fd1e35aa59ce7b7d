// rrfp: the command-line entry point. Subcommands register in commands.hpp.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "drivers/commands.hpp"
#include "drivers/env_config.hpp"
#include "drivers/fatal.hpp"
#include "graph/pipeline_spec.hpp"
#include "runtime/executor.hpp"
#ifdef RRFP_HAVE_CUDA
#include "gpu/nccl_wire.hpp"
#include "mpi/gpu_channels.hpp"
#endif

namespace {

// Every floating-point flag of every subcommand takes finite numbers only:
// CLI11 parses "nan" and "inf" as doubles, and range checks (x >= 0) let
// them through (inf) or are easy to forget.
// Unsigned flags (--seed) take no sign: CLI11 would wrap -1 to 2^64 - 1.
// Text flags take no empty value: "" would read as "not given" (--json "").
void require_sane_values(CLI::App* app) {
  static const CLI::Validator finite(
      [](std::string& v) {
        double x = 0;
        return CLI::detail::lexical_cast(v, x) && !std::isfinite(x) ? "'" + v + "' is not a finite number"
                                                                     : std::string();
      },
      "", "finite");
  static const CLI::Validator unsigned_value(
      [](std::string& v) {
        if (v.rfind('-', 0) == 0) return "'" + v + "' is negative";
        errno = 0;  // CLI11 would clamp 2^64 and beyond to 2^64 - 1
        std::strtoull(v.c_str(), nullptr, 10);
        return errno == ERANGE ? "'" + v + "' is too large (at most 18446744073709551615)" : std::string();
      },
      "", "unsigned");
  static const CLI::Validator nonempty(
      [](std::string& v) { return v.empty() ? std::string("an empty value") : std::string(); }, "", "nonempty");
  for (CLI::Option* o : app->get_options()) {
    const std::string type = o->get_type_name();
    if (type.rfind("FLOAT", 0) == 0) o->check(finite);
    if (type.rfind("UINT", 0) == 0) o->check(unsigned_value);
    if (type.rfind("TEXT", 0) == 0) o->check(nonempty);
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) require_sane_values(sub);
}

// The command words of argv ("rrfp sim sweep"), for messages. CLI11
// answers `rrfp foo` and `rrfp hints foo` with "A subcommand is required":
// name the word it did not know, and what it knows there.
std::string command_words(CLI::App* app, int argc, char** argv) {
  std::string path = "rrfp";
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    std::vector<std::string> known;
    CLI::App* next = nullptr;
    for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
      known.push_back(sub->get_name());
      if (sub->check_name(argv[i])) next = sub;
    }
    if (!next) {
      if (app->get_require_subcommand_min() > 0)
        throw rrfp::SpecError("unknown command '" + std::string(argv[i]) + "' (known here: " +
                              CLI::detail::join(known, ", ") + ")");
      break;
    }
    path += " " + next->get_name();
    app = next;
  }
  return path;
}

// LibTorch's allocator says "[enforce fail at alloc_cpu.cpp:75] err == 0.
// DefaultCPUAllocator: can't allocate memory: you tried to allocate N
// bytes. Error code 12 (...)": say what it means and what to change.
std::string plain_out_of_memory(const std::string& line) {
  if (line == "std::bad_alloc") return "out of memory (std::bad_alloc)";
  // No std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized under ASan.
  const std::string tried = "DefaultCPUAllocator: can't allocate memory: you tried to allocate ";
  const size_t t = line.find(tried);
  if (t == std::string::npos) return line;
  const size_t digits = t + tried.size(), end = line.find_first_not_of("0123456789", digits);
  if (end == std::string::npos || end == digits || line.compare(end, 6, " bytes") != 0) return line;
  const std::string n = line.substr(digits, end - digits);
  return line.substr(0, std::min(t, line.find("[enforce fail at "))) +
         fmt::format("out of memory: a tensor of {:.2f} GiB ({} bytes) does not fit in this machine's memory "
                     "(a smaller --d-model, --seq-len, --micro-batch-size or --layers would)",
                     std::stod(n) / (1024.0 * 1024 * 1024), n);
}

// LibTorch's errors (an allocation that failed, for one) carry the C++
// stack they were raised from, one "frame #N:" line each: the rest of the
// message, every joined error included, is what a user can act on.
std::string without_cpp_stack(const std::string& what) {
  std::string out;
  size_t begin = 0;
  while (begin < what.size()) {
    size_t end = what.find('\n', begin);
    if (end == std::string::npos) end = what.size();
    const std::string line = what.substr(begin, end - begin);
    if (line.rfind("frame #", 0) != 0 && line.rfind("Exception raised from ", 0) != 0)
      out += (out.empty() ? "" : "\n") + plain_out_of_memory(line);
    begin = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"RRFP: readiness-first pipeline-parallel runtime on StarPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rrfp 0.1.0");
  rrfp::cli::add_hints_command(app);
  rrfp::cli::add_bench_command(app);
  rrfp::cli::add_train_command(app);
  rrfp::cli::add_plot_command(app);
  rrfp::cli::add_sim_command(app);
  rrfp::cli::add_topo_command(app);
  rrfp::cli::add_profile_command(app);
  rrfp::cli::add_tune_command(app);
  require_sane_values(&app);
#ifdef RRFP_HAVE_CUDA
  rrfp::set_gpu_channel_wire(rrfp::gpu::nccl_wire);  // --cuda --rank-transport ordered under mpirun
#endif
  std::string command = "rrfp";  // the command words, once read
  try {
    if (rrfp::cli::launched_under_mpi()) rrfp::cli::note_sigterm_from_launcher(rrfp::cli::launcher_rank());
    command = command_words(&app, argc, argv);
    rrfp::cli::check_starpu_worker_counts();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Bad input: the one form and exit code of every refusal (README).
    std::fprintf(stderr, "rrfp: error: %s (%s --help lists the flags)\n", e.what(), command.c_str());
    return 2;
  } catch (const rrfp::UnrecoverableError& e) {
    // StarPU holds tasks that will never finish (or other ranks wait for
    // this one): no clean shutdown is possible. Under mpirun every rank stops.
    rrfp::cli::abort_all_ranks(without_cpp_stack(e.what()));
  } catch (const rrfp::SpecError& e) {
    return rrfp::cli::stop_with_error(e.what(), 2);  // under mpirun: every rank stops
  } catch (const std::exception& e) {
    return rrfp::cli::stop_with_error(without_cpp_stack(e.what()), 1);
  }
  // A report on stdout that did not reach its file (a full disk, a closed
  // pipe) is a failed command, as a failed --json write is.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "rrfp: error: cannot write standard output: %s\n",
                 errno ? std::strerror(errno) : "write error");
    return 1;
  }
  return 0;
}
