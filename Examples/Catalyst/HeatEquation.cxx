#include "HeatEquation.h"

#include <algorithm>
#include <cmath>

namespace
{
constexpr double Pi = 3.14159265358979323846;

/// Three warm blobs of different widths: features at several scales for the compression.
struct Blob
{
  double X, Y, Z, Width, Amplitude;
};
constexpr Blob Blobs[] = {
  { 0.30, 0.35, 0.40, 0.10, 1.0 },
  { 0.70, 0.60, 0.55, 0.06, 0.8 },
  { 0.45, 0.75, 0.30, 0.14, -0.6 },
};

/// The heater: a Gaussian of this width and strength on a circle of this radius around the
/// z axis through the middle of the cube, one turn per Period time units.
constexpr double HeaterWidth = 0.07;
constexpr double HeaterStrength = 60.0;
constexpr double HeaterRadius = 0.25;
constexpr double HeaterPeriod = 0.1;
}

//------------------------------------------------------------------------------------------------
HeatEquation::HeatEquation(MPI_Comm comm, const std::array<int, 3>& dims)
  : Comm(comm)
  , Dims(dims)
{
  MPI_Comm_rank(comm, &this->Rank);
  MPI_Comm_size(comm, &this->Size);
  if (dims[0] < 3 || dims[1] < 3 || dims[2] < 3)
  {
    this->ErrorMessage = "the grid needs at least 3 points along every axis";
    return;
  }
  if (dims[2] < this->Size)
  {
    this->ErrorMessage = "the grid has fewer z planes (" + std::to_string(dims[2]) +
      ") than there are ranks (" + std::to_string(this->Size) + ")";
    return;
  }
  // As even a split of the z planes as possible; the last ranks take one more. Any split would
  // do: Catalyst takes the pieces the simulation has.
  const int base = dims[2] / this->Size;
  const int extra = dims[2] % this->Size;
  const int plain = this->Size - extra; // ranks with base planes only
  this->Nz = base + (this->Rank >= plain ? 1 : 0);
  this->Z0 = this->Rank * base + std::max(0, this->Rank - plain);

  double inverseSquares = 0;
  for (int a = 0; a < 3; ++a)
  {
    this->Spacing[a] = 1.0 / (dims[a] - 1);
    inverseSquares += 1.0 / (this->Spacing[a] * this->Spacing[a]);
  }
  // Forward Euler is stable for Alpha * Dt * sum(1 / h^2) <= 1/2; stay below it.
  this->Dt = 0.8 / (2.0 * this->Alpha * inverseSquares);

  const std::size_t plane = this->PlaneSize();
  this->Current.assign(plane * (this->Nz + 2), 0.0);
  this->Next.assign(plane * (this->Nz + 2), 0.0);
  for (int k = 1; k <= this->Nz; ++k)
  {
    const double z = (this->Z0 + k - 1) * this->Spacing[2];
    for (int j = 0; j < dims[1]; ++j)
    {
      const double y = j * this->Spacing[1];
      for (int i = 0; i < dims[0]; ++i)
      {
        const double x = i * this->Spacing[0];
        this->Current[k * plane + j * dims[0] + i] = this->Initial(x, y, z);
      }
    }
  }
  // Boundary points are never updated: Next holds the same fixed values from the start.
  this->Next = this->Current;
  this->ExchangeGhostPlanes();
}

//------------------------------------------------------------------------------------------------
double HeatEquation::Initial(double x, double y, double z) const
{
  // A smooth background (it also sets the fixed boundary values) plus the blobs.
  double value = 0.2 * x + 0.1 * y * z;
  for (const Blob& b : Blobs)
  {
    const double r2 = (x - b.X) * (x - b.X) + (y - b.Y) * (y - b.Y) + (z - b.Z) * (z - b.Z);
    value += b.Amplitude * std::exp(-r2 / (2 * b.Width * b.Width));
  }
  return value;
}

//------------------------------------------------------------------------------------------------
double HeatEquation::Heater(double x, double y, double z, double t) const
{
  const double angle = 2 * Pi * t / HeaterPeriod;
  const double cx = 0.5 + HeaterRadius * std::cos(angle);
  const double cy = 0.5 + HeaterRadius * std::sin(angle);
  const double cz = 0.5;
  const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz);
  return HeaterStrength * std::exp(-r2 / (2 * HeaterWidth * HeaterWidth));
}

//------------------------------------------------------------------------------------------------
void HeatEquation::Sweep()
{
  const int nx = this->Dims[0];
  const int ny = this->Dims[1];
  const int nz = this->Dims[2];
  const std::size_t plane = this->PlaneSize();
  const double cx = 1.0 / (this->Spacing[0] * this->Spacing[0]);
  const double cy = 1.0 / (this->Spacing[1] * this->Spacing[1]);
  const double cz = 1.0 / (this->Spacing[2] * this->Spacing[2]);
  const double* u = this->Current.data();
  double* out = this->Next.data();
  for (int k = 1; k <= this->Nz; ++k)
  {
    const int gz = this->Z0 + k - 1;
    if (gz == 0 || gz == nz - 1)
    {
      continue; // a boundary plane: fixed values, already in both buffers
    }
    const double z = gz * this->Spacing[2];
    for (int j = 1; j < ny - 1; ++j)
    {
      const double y = j * this->Spacing[1];
      const std::size_t row = k * plane + static_cast<std::size_t>(j) * nx;
      for (int i = 1; i < nx - 1; ++i)
      {
        const std::size_t p = row + i;
        const double c = u[p];
        const double laplace = cx * (u[p - 1] - 2 * c + u[p + 1]) +
          cy * (u[p - nx] - 2 * c + u[p + nx]) + cz * (u[p - plane] - 2 * c + u[p + plane]);
        out[p] = c +
          this->Dt * (this->Alpha * laplace + this->Heater(i * this->Spacing[0], y, z, this->Time));
      }
    }
  }
  std::swap(this->Current, this->Next);
  this->Time = ++this->Sweeps * this->Dt;
  this->ExchangeGhostPlanes();
}

//------------------------------------------------------------------------------------------------
void HeatEquation::ExchangeGhostPlanes()
{
  const std::size_t plane = this->PlaneSize();
  const int below = this->Rank > 0 ? this->Rank - 1 : MPI_PROC_NULL;
  const int above = this->Rank + 1 < this->Size ? this->Rank + 1 : MPI_PROC_NULL;
  double* u = this->Current.data();
  const int count = static_cast<int>(plane);
  // First own plane down, upper ghost plane from above; then last own plane up, lower ghost
  // plane from below.
  MPI_Sendrecv(u + plane,
    count,
    MPI_DOUBLE,
    below,
    0,
    u + (this->Nz + 1) * plane,
    count,
    MPI_DOUBLE,
    above,
    0,
    this->Comm,
    MPI_STATUS_IGNORE);
  MPI_Sendrecv(u + this->Nz * plane,
    count,
    MPI_DOUBLE,
    above,
    1,
    u,
    count,
    MPI_DOUBLE,
    below,
    1,
    this->Comm,
    MPI_STATUS_IGNORE);
}

//------------------------------------------------------------------------------------------------
int HeatEquation::GetNumberOfPiecePlanes() const
{
  return this->Nz + (this->Rank + 1 < this->Size ? 1 : 0);
}

//------------------------------------------------------------------------------------------------
double* HeatEquation::GetPieceValues()
{
  return this->Current.data() + this->PlaneSize();
}

//------------------------------------------------------------------------------------------------
const double* HeatEquation::GetOwnedValues() const
{
  return this->Current.data() + this->PlaneSize();
}
