/**
 * @class SparseGridCatalystAdaptor
 * @brief The few calls a simulation adds to hand an image to ParaView Catalyst (legacy API).
 *
 * What a simulation code writes:
 *
 * @code
 * SparseGridCatalystAdaptor catalyst;
 * catalyst.Initialize(MPI_COMM_WORLD, { "sparsegrid_catalyst.py" }, pluginDirectory); // once
 * for (long step = 0; ...; ++step)
 * {
 *   ... advance the simulation ...
 *   SparseGridCatalystAdaptor::ImagePiece piece;   // this rank's part of the global image
 *   piece.WholeExtent = ...; piece.Extent = ...; piece.Origin = ...; piece.Spacing = ...;
 *   piece.PointArrays = { { "temperature", values } };   // used in place, not copied
 *   catalyst.CoProcess(piece, time, step);
 * }
 * catalyst.Finalize();                                                             // once
 * @endcode
 *
 * Every call is collective over the communicator given to Initialize(): Catalyst's set-up and
 * its pipelines talk to all ranks, and a rank that skips a call leaves the others waiting.
 *
 * The Catalyst scripts are Python scripts of version 2 (`catalyst_execute`); the one of this
 * example, sparsegrid_catalyst.py, compresses the image with Sparse Grid Hierarchize and writes
 * one .sgrid file per step. The SparseGrid plugin is found through PV_PLUGIN_PATH, which
 * Initialize() extends with the given plugin directory before ParaView reads it.
 */
#ifndef SparseGridCatalystAdaptor_h
#define SparseGridCatalystAdaptor_h

#include <mpi.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

class SparseGridCatalystAdaptor
{
public:
  /// One rank's piece of a global image (VTK conventions: point extents, inclusive bounds;
  /// neighbouring pieces share their boundary planes).
  struct ImagePiece
  {
    std::string Channel = "grid"; ///< the name the Catalyst script looks the data up by
    std::array<int, 6> WholeExtent{ { 0, -1, 0, -1, 0, -1 } };
    std::array<int, 6> Extent{ { 0, -1, 0, -1, 0, -1 } };
    std::array<double, 3> Origin{ { 0, 0, 0 } };
    std::array<double, 3> Spacing{ { 1, 1, 1 } };
    /// Point arrays (name, values x fastest over Extent). Catalyst reads them in place during
    /// CoProcess(), so they must stay valid and unchanged until it returns.
    std::vector<std::pair<std::string, double*>> PointArrays;
  };

  SparseGridCatalystAdaptor();
  ~SparseGridCatalystAdaptor();

  /**
   * Starts Catalyst on comm and adds one pipeline per script. pluginDirectory (may be empty) is
   * put in front of PV_PLUGIN_PATH. Returns false, on every rank, when a script could not be
   * loaded; error tells why.
   */
  bool Initialize(MPI_Comm comm,
    const std::vector<std::string>& scripts,
    const std::string& pluginDirectory,
    std::string* error = nullptr);

  /**
   * Offers this step to Catalyst. Returns true when a pipeline ran for it, false when none
   * wanted it (then nothing was built) or Catalyst is not initialized.
   */
  bool CoProcess(const ImagePiece& piece, double time, long step);

  /// Lets the pipelines finish (catalyst_finalize) and shuts Catalyst down.
  void Finalize();

  SparseGridCatalystAdaptor(const SparseGridCatalystAdaptor&) = delete;
  SparseGridCatalystAdaptor& operator=(const SparseGridCatalystAdaptor&) = delete;

private:
  struct vtkInternals;
  std::unique_ptr<vtkInternals> Internals;
};

#endif
