/**
 * A small time-dependent simulation for the in-situ example: the heat equation
 *
 *   du/dt = Alpha * laplace(u) + q(x, t)
 *
 * on the unit cube, explicit finite differences (7-point stencil, forward Euler), fixed
 * (Dirichlet) values on the boundary, and a Gaussian heater q that circles around the z axis so
 * that the field keeps changing. The grid is distributed over the ranks of an MPI communicator in
 * slabs along z; each rank keeps one ghost plane below and above its slab, exchanged after every
 * sweep.
 *
 * Every point's update reads the same neighbours in the same order however the grid is split, so
 * the field is bit for bit the same on any number of ranks (the in-situ tests rely on it).
 *
 * The class knows nothing of VTK or Catalyst: it plays the part of a simulation code that a
 * Catalyst adaptor is added to.
 */
#ifndef HeatEquation_h
#define HeatEquation_h

#include <mpi.h>

#include <array>
#include <string>
#include <vector>

class HeatEquation
{
public:
  /**
   * dims: global number of points along x, y and z (each >= 3; z >= the number of ranks).
   * On failure Valid() is false and Error() says why; every rank reaches the same verdict.
   */
  HeatEquation(MPI_Comm comm, const std::array<int, 3>& dims);

  bool Valid() const { return this->ErrorMessage.empty(); }
  const std::string& Error() const { return this->ErrorMessage; }

  /** One forward-Euler sweep followed by the ghost-plane exchange (collective). */
  void Sweep();

  double GetTime() const { return this->Time; }
  double GetTimeStepSize() const { return this->Dt; }
  long GetNumberOfSweeps() const { return this->Sweeps; }

  const std::array<int, 3>& GetGlobalDimensions() const { return this->Dims; }
  const std::array<double, 3>& GetSpacing() const { return this->Spacing; }

  /** First global z plane this rank updates, and how many it updates (its own planes). */
  int GetFirstOwnedPlane() const { return this->Z0; }
  int GetNumberOfOwnedPlanes() const { return this->Nz; }

  /**
   * The planes this rank hands to VTK: its own planes plus, except on the last rank, the first
   * plane of the next rank (its upper ghost plane). VTK's image pieces share their boundary
   * planes, so that the pieces cover the whole extent with no gap between them.
   */
  int GetNumberOfPiecePlanes() const;

  /**
   * The values of those planes, x fastest, then y, then z: one contiguous run of the current
   * buffer that stays valid until the next Sweep().
   */
  double* GetPieceValues();

  /** The values of this rank's own planes only (no ghost plane). */
  const double* GetOwnedValues() const;

private:
  double Initial(double x, double y, double z) const;
  double Heater(double x, double y, double z, double t) const;
  void ExchangeGhostPlanes();
  std::size_t PlaneSize() const { return static_cast<std::size_t>(this->Dims[0]) * this->Dims[1]; }

  MPI_Comm Comm;
  int Rank = 0;
  int Size = 1;
  std::array<int, 3> Dims;
  std::array<double, 3> Spacing;
  int Z0 = 0;
  int Nz = 0;
  double Alpha = 1.0;
  double Dt = 0.0;
  double Time = 0.0;
  long Sweeps = 0;
  // Local planes: index 0 is the lower ghost plane, 1..Nz the own planes, Nz + 1 the upper
  // ghost plane. Two buffers: the sweep reads one and writes the other.
  std::vector<double> Current;
  std::vector<double> Next;
  std::string ErrorMessage;
};

#endif
