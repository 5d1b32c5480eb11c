/**
 * @class vtkStencilLaplacian
 * @brief Laplacian, Laplacian of the Laplacian (laplap) and hyperdiffusion of a point or cell
 * array, on image data and on column meshes, on the CPU or a CUDA GPU.
 *
 * Image data uses the regular-grid stencil with the image spacing. Any other dataset must be a
 * column mesh: cells (or points) numbered layer by layer, each layer the same horizontal mesh
 * (the layout of weather and climate model output: a triangle or polygon mesh extruded into
 * wedges or prisms). The filter recognises the layers (constant count per layer, the entity
 * above entity i is i + layer size) and the horizontal neighbours (cells sharing a side face,
 * points sharing a horizontal edge), and reports a clear error when the mesh is not columnar.
 *
 * The output is the input with one more array of the input array's association, named
 * ResultArrayName (default "<array>_<operator>"); with HyperdiffusionIterations > 0 a second
 * array "<array>_hyperdiffused" holds the smoothed input. Field data Stencil.Backend and
 * Stencil.BackendNote record where it ran.
 */
#ifndef vtkStencilLaplacian_h
#define vtkStencilLaplacian_h

#include "SparseGridStencilModule.h" // for export macro
#include "vtkCoreExecutionMacros.h"  // for vtkCoreExecutionMacro
#include "vtkDataSetAlgorithm.h"

#include <string>

class SPARSEGRIDSTENCIL_EXPORT vtkStencilLaplacian : public vtkDataSetAlgorithm
{
public:
  static vtkStencilLaplacian* New();
  vtkTypeMacro(vtkStencilLaplacian, vtkDataSetAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  enum OperatorType
  {
    LAPLACIAN = 0,
    LAPLAP = 1,
    HORIZONTAL_LAPLACIAN = 2,
    HORIZONTAL_LAPLAP = 3
  };
  enum BoundaryType
  {
    BOUNDARY_NAN = 0,       ///< NaN where the stencil is incomplete
    BOUNDARY_ZERO_FLUX = 1, ///< missing neighbours take the value itself
    BOUNDARY_FILL_VALUE = 2 ///< FillValue where the stencil is incomplete
  };
  enum WeightType
  {
    WEIGHTS_GEOMETRY = 0, ///< image spacing; mesh distances and layer spacing
    WEIGHTS_UNIT = 1      ///< spacing 1, every neighbour weight 1
  };

  ///@{
  /// Which operator (OperatorType). Default LAPLACIAN.
  vtkSetMacro(Operator, int);
  vtkGetMacro(Operator, int);
  ///@}

  ///@{
  /// Where the stencil leaves the data (BoundaryType). Default BOUNDARY_NAN; FillValue (default
  /// 0) is used by BOUNDARY_FILL_VALUE.
  vtkSetMacro(Boundary, int);
  vtkGetMacro(Boundary, int);
  vtkSetMacro(FillValue, double);
  vtkGetMacro(FillValue, double);
  ///@}

  ///@{
  /// Geometry-based (default) or unit weights (WeightType).
  vtkSetMacro(Weights, int);
  vtkGetMacro(Weights, int);
  ///@}

  ///@{
  /// Name of the result array; empty: "<input array>_<operator>".
  vtkSetStdStringFromCharMacro(ResultArrayName);
  vtkGetCharFromStdStringMacro(ResultArrayName);
  ///@}

  ///@{
  /// Hyperdiffusion smoothing of the input array (0: off; at most 1000 iterations, more is
  /// refused), with a step equal to HyperdiffusionCoefficient times the largest stable step
  /// (in (0, 1]).
  vtkSetMacro(HyperdiffusionIterations, int);
  vtkGetMacro(HyperdiffusionIterations, int);
  vtkSetMacro(HyperdiffusionCoefficient, double);
  vtkGetMacro(HyperdiffusionCoefficient, double);
  ///@}

  /// Backend and NumberOfThreads (vtkCoreExecutionMacros.h).
  vtkCoreExecutionMacro();

  ///@{
  /// The column-mesh access strategy (0 naive, 1 idxvar, 2 shared, 3 z-loop, 4 sliced z-loop,
  /// 5 staged z-loop) and its slice size; the neighbour-table layout.
  vtkSetMacro(AccessStrategy, int);
  vtkGetMacro(AccessStrategy, int);
  vtkSetMacro(SliceSize, int);
  vtkGetMacro(SliceSize, int);
  vtkSetMacro(ChasingTable, bool);
  vtkGetMacro(ChasingTable, bool);
  vtkBooleanMacro(ChasingTable, bool);
  vtkSetMacro(CompressedTable, bool);
  vtkGetMacro(CompressedTable, bool);
  vtkBooleanMacro(CompressedTable, bool);
  ///@}

protected:
  vtkStencilLaplacian();
  ~vtkStencilLaplacian() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  vtkCoreErrorOnceMacro();

  int Operator = LAPLACIAN;
  int Boundary = BOUNDARY_NAN;
  double FillValue = 0;
  int Weights = WEIGHTS_GEOMETRY;
  std::string ResultArrayName;
  int HyperdiffusionIterations = 0;
  double HyperdiffusionCoefficient = 0.5;
  int AccessStrategy = 3; // z-loop: the fastest measured on the GPU and the CPU
  int SliceSize = 8;
  bool ChasingTable = true;
  bool CompressedTable = true;

private:
  vtkStencilLaplacian(const vtkStencilLaplacian&) = delete;
  void operator=(const vtkStencilLaplacian&) = delete;
};

#endif
