/**
 * The in-situ example: a heat-equation simulation (HeatEquation) distributed over MPI ranks in
 * z slabs, coupled to ParaView Catalyst through SparseGridCatalystAdaptor; the Catalyst script
 * (sparsegrid_catalyst.py by default) compresses the temperature with Sparse Grid Hierarchize
 * and writes .sgrid files. Run with --help for the options.
 *
 * Besides the simulation, this driver measures what the coupling costs (simulation and Catalyst
 * wall time per step, the slowest rank's) and, with --dump, writes the exact field of every step
 * Catalyst ran for, so that tests can check the files against it.
 */
#include "HeatEquation.h"
#include "SparseGridCatalystAdaptor.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#ifndef SPARSEGRID_CATALYST_SCRIPT
#define SPARSEGRID_CATALYST_SCRIPT ""
#endif
#ifndef SPARSEGRID_PLUGIN_DIR
#define SPARSEGRID_PLUGIN_DIR ""
#endif

namespace
{
struct Options
{
  std::array<int, 3> Dims{ { 65, 65, 33 } };
  long Steps = 10;
  int SubSteps = 10;
  std::vector<std::string> Scripts;
  bool Catalyst = true;
  std::string Channel = "grid";
  std::string PluginDirectory = SPARSEGRID_PLUGIN_DIR;
  std::string DumpDirectory;
};

void Usage(std::ostream& os)
{
  os << "usage: SparseGridHeatExample [options]\n"
        "  --dims NX NY NZ    global grid points (default 65 65 33)\n"
        "  --steps N          coupling steps: Catalyst is offered each one (default 10)\n"
        "  --substeps K       simulation sweeps per step (default 10)\n"
        "  --script FILE      Catalyst script, version 2 (repeatable; default: "
     << SPARSEGRID_CATALYST_SCRIPT
     << ")\n"
        "  --no-catalyst      run the simulation alone (the baseline for timings)\n"
        "  --channel NAME     Catalyst channel name of the image (default grid)\n"
        "  --plugin-dir DIR   folder of SparseGrid.so, put in front of PV_PLUGIN_PATH\n"
        "                     (default: the build's)\n"
        "  --output DIR       .sgrid folder (sets SPARSEGRID_CATALYST_OUTPUT)\n"
        "  --every K          compress every K-th step (sets SPARSEGRID_CATALYST_EVERY)\n"
        "  --level L          sparse-grid level, 0 automatic (sets SPARSEGRID_CATALYST_LEVEL)\n"
        "  --precision P      Float or Double (sets SPARSEGRID_CATALYST_PRECISION)\n"
        "  --dump DIR         also write the exact field of each step Catalyst ran for:\n"
        "                     DIR/exact_NNNNNN.raw (float64, x fastest) + .json\n";
}

/// Parses the command line; returns 0 to go on, otherwise the exit code.
int Parse(int argc, char* argv[], Options& options, int rank)
{
  auto fail = [&](const std::string& message)
  {
    if (rank == 0)
    {
      std::cerr << "SparseGridHeatExample: " << message << "\n";
      Usage(std::cerr);
    }
    return 2;
  };
  for (int i = 1; i < argc; ++i)
  {
    const std::string arg = argv[i];
    auto value = [&](int n) { return i + n < argc; };
    if (arg == "--help" || arg == "-h")
    {
      if (rank == 0)
      {
        Usage(std::cout);
      }
      return 1;
    }
    else if (arg == "--dims" && value(3))
    {
      for (int a = 0; a < 3; ++a)
      {
        options.Dims[a] = std::atoi(argv[++i]);
      }
    }
    else if (arg == "--steps" && value(1))
    {
      options.Steps = std::atol(argv[++i]);
    }
    else if (arg == "--substeps" && value(1))
    {
      options.SubSteps = std::atoi(argv[++i]);
    }
    else if (arg == "--script" && value(1))
    {
      options.Scripts.emplace_back(argv[++i]);
    }
    else if (arg == "--no-catalyst")
    {
      options.Catalyst = false;
    }
    else if (arg == "--channel" && value(1))
    {
      options.Channel = argv[++i];
    }
    else if (arg == "--plugin-dir" && value(1))
    {
      options.PluginDirectory = argv[++i];
    }
    else if (arg == "--dump" && value(1))
    {
      options.DumpDirectory = argv[++i];
    }
    else if ((arg == "--output" || arg == "--every" || arg == "--level" || arg == "--precision") &&
      value(1))
    {
      // The Catalyst script reads its settings from the environment: a legacy adaptor has no
      // other way to pass arguments to it, and the same script runs under pvbatch's mini-app.
      std::string name = arg.substr(2);
      std::transform(name.begin(), name.end(), name.begin(), ::toupper);
      setenv(("SPARSEGRID_CATALYST_" + name).c_str(), argv[++i], 1);
    }
    else
    {
      return fail("unknown or incomplete option " + arg);
    }
  }
  if (options.Steps < 1 || options.SubSteps < 1)
  {
    return fail("--steps and --substeps must be at least 1");
  }
  if (options.Scripts.empty() && *SPARSEGRID_CATALYST_SCRIPT)
  {
    options.Scripts.emplace_back(SPARSEGRID_CATALYST_SCRIPT);
  }
  if (options.Catalyst && options.Scripts.empty())
  {
    return fail("no Catalyst script given (--script FILE)");
  }
  return 0;
}

/// Writes the global field, as the simulation has it, with MPI-IO: each rank its own planes.
bool DumpExact(MPI_Comm comm, const std::string& directory, const HeatEquation& heat, long step)
{
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::ostringstream base;
  base << directory << "/exact_" << std::setw(6) << std::setfill('0') << step;
  const std::string raw = base.str() + ".raw";
  const auto& dims = heat.GetGlobalDimensions();
  const MPI_Offset plane = static_cast<MPI_Offset>(dims[0]) * dims[1];
  MPI_File file;
  if (MPI_File_open(comm, raw.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file) !=
    MPI_SUCCESS)
  {
    return false;
  }
  // Drops whatever an earlier, larger run left in the file.
  MPI_File_set_size(file, plane * dims[2] * static_cast<MPI_Offset>(sizeof(double)));
  const MPI_Offset offset = plane * heat.GetFirstOwnedPlane() * sizeof(double);
  const int count = static_cast<int>(plane * heat.GetNumberOfOwnedPlanes());
  const int status = MPI_File_write_at_all(
    file, offset, heat.GetOwnedValues(), count, MPI_DOUBLE, MPI_STATUS_IGNORE);
  MPI_File_close(&file);
  if (rank == 0)
  {
    const auto& h = heat.GetSpacing();
    std::ofstream json(base.str() + ".json");
    json << std::setprecision(17) << "{\"step\": " << step << ", \"time\": " << heat.GetTime()
         << ", \"array\": \"temperature\", \"dtype\": \"float64\", \"order\": \"x fastest\""
         << ", \"dims\": [" << dims[0] << ", " << dims[1] << ", " << dims[2] << "]"
         << ", \"origin\": [0, 0, 0], \"spacing\": [" << h[0] << ", " << h[1] << ", " << h[2]
         << "], \"raw\": \"" << raw.substr(raw.find_last_of('/') + 1) << "\"}\n";
  }
  return status == MPI_SUCCESS;
}

double Median(std::vector<double> values)
{
  if (values.empty())
  {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// The slowest rank's time: the one the whole run waits for.
double Slowest(MPI_Comm comm, double seconds)
{
  double result = 0;
  MPI_Allreduce(&seconds, &result, 1, MPI_DOUBLE, MPI_MAX, comm);
  return result;
}
}

int main(int argc, char* argv[])
{
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  Options options;
  if (int code = Parse(argc, argv, options, rank))
  {
    MPI_Finalize();
    return code == 1 ? 0 : code;
  }

  HeatEquation heat(comm, options.Dims);
  if (!heat.Valid())
  {
    if (rank == 0)
    {
      std::cerr << "SparseGridHeatExample: " << heat.Error() << "\n";
    }
    MPI_Finalize();
    return 2;
  }

  SparseGridCatalystAdaptor catalyst;
  if (options.Catalyst)
  {
    std::string error;
    if (!catalyst.Initialize(comm, options.Scripts, options.PluginDirectory, &error))
    {
      if (rank == 0)
      {
        std::cerr << "SparseGridHeatExample: " << error << "\n";
      }
      MPI_Finalize();
      return 1;
    }
  }

  const auto& dims = heat.GetGlobalDimensions();
  if (rank == 0)
  {
    std::cout << "[heat] grid " << dims[0] << " x " << dims[1] << " x " << dims[2] << " on " << size
              << " rank(s), " << options.Steps << " steps of " << options.SubSteps << " sweeps, dt "
              << heat.GetTimeStepSize() << std::endl;
  }

  std::vector<double> simulationTimes;
  std::vector<double> catalystTimes;
  int failed = 0;
  for (long step = 0; step < options.Steps; ++step)
  {
    // Step 0 is the initial condition; every later step first advances the simulation.
    double start = MPI_Wtime();
    if (step > 0)
    {
      for (int s = 0; s < options.SubSteps; ++s)
      {
        heat.Sweep();
      }
    }
    const double simulation = Slowest(comm, MPI_Wtime() - start);
    if (step > 0)
    {
      simulationTimes.push_back(simulation);
    }

    bool ran = false;
    double coupling = 0;
    if (options.Catalyst)
    {
      start = MPI_Wtime();
      SparseGridCatalystAdaptor::ImagePiece piece;
      piece.Channel = options.Channel;
      piece.WholeExtent = { 0, dims[0] - 1, 0, dims[1] - 1, 0, dims[2] - 1 };
      const int z0 = heat.GetFirstOwnedPlane();
      piece.Extent = { 0, dims[0] - 1, 0, dims[1] - 1, z0, z0 + heat.GetNumberOfPiecePlanes() - 1 };
      piece.Spacing = heat.GetSpacing();
      piece.PointArrays = { { "temperature", heat.GetPieceValues() } };
      ran = catalyst.CoProcess(piece, heat.GetTime(), step);
      coupling = Slowest(comm, MPI_Wtime() - start);
      if (ran)
      {
        catalystTimes.push_back(coupling);
      }
    }
    if (ran && !options.DumpDirectory.empty() &&
      !DumpExact(comm, options.DumpDirectory, heat, step))
    {
      failed = 1;
      if (rank == 0)
      {
        std::cerr << "SparseGridHeatExample: cannot write the exact field to "
                  << options.DumpDirectory << "\n";
      }
    }
    if (rank == 0)
    {
      std::cout << "[heat] step=" << step << " time=" << heat.GetTime()
                << " sweeps=" << heat.GetNumberOfSweeps() << " sim_s=" << simulation
                << " catalyst_s=" << coupling << " catalyst_ran=" << (ran ? 1 : 0) << std::endl;
    }
  }

  catalyst.Finalize();
  if (rank == 0)
  {
    const double sweep = Median(simulationTimes) / options.SubSteps;
    std::cout << "[heat] summary: median sim_s per step " << Median(simulationTimes)
              << " (per sweep " << sweep << "), median catalyst_s per coupled step "
              << Median(catalystTimes) << " over " << catalystTimes.size() << " step(s)"
              << std::endl;
  }
  MPI_Finalize();
  return failed;
}
