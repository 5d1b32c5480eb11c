/**
 * @class vtkStencilColumnMeshSource
 * @brief Generates a column mesh: a horizontal mesh of quads, equilateral triangles or regular
 * hexagons extruded into layers of hexahedra, wedges or hexagonal prisms.
 *
 * Cells and points are numbered layer by layer (cell id = layer * cells per layer + horizontal
 * cell), the layout the Laplacian filter recognises; the horizontal numbering is row-major or
 * along a z-curve. A "Field" array (cell and point data) holds
 * sin(2 pi x / Lx) cos(2 pi y / Ly) + (z / Lz)^2 for demos and tests.
 */
#ifndef vtkStencilColumnMeshSource_h
#define vtkStencilColumnMeshSource_h

#include "SparseGridStencilModule.h" // for export macro
#include "vtkCoreExecutionMacros.h"  // for vtkCoreErrorOnceMacro
#include "vtkUnstructuredGridAlgorithm.h"

class SPARSEGRIDSTENCIL_EXPORT vtkStencilColumnMeshSource : public vtkUnstructuredGridAlgorithm
{
public:
  static vtkStencilColumnMeshSource* New();
  vtkTypeMacro(vtkStencilColumnMeshSource, vtkUnstructuredGridAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  enum ShapeType
  {
    QUAD = 0,
    TRIANGLE = 1,
    HEXAGON = 2
  };

  ///@{
  /// Horizontal cell shape (ShapeType). Default TRIANGLE.
  vtkSetMacro(Shape, int);
  vtkGetMacro(Shape, int);
  ///@}

  ///@{
  /// Horizontal cells along x and y (2 to 8192 each) and the number of layers (1 to 4096).
  /// Values outside these ranges, and sizes whose EstimatedPeakBytes exceed what this process
  /// may still allocate, are refused with an error when the source executes.
  vtkSetVector2Macro(Resolution, int);
  vtkGetVector2Macro(Resolution, int);
  vtkSetMacro(Layers, int);
  vtkGetMacro(Layers, int);
  ///@}

  ///@{
  /// Distance between neighbouring cell centres, and layer thickness.
  vtkSetMacro(Spacing, double);
  vtkGetMacro(Spacing, double);
  vtkSetMacro(LayerSpacing, double);
  vtkGetMacro(LayerSpacing, double);
  ///@}

  ///@{
  /// Horizontal numbering: 0 row-major, 1 z-curve.
  vtkSetMacro(Ordering, int);
  vtkGetMacro(Ordering, int);
  ///@}

  /// The peak memory generating the mesh of the current settings needs, in bytes (an upper
  /// estimate: the generator's tables and the output's points, cells and fields).
  double EstimatedPeakBytes() const;

protected:
  vtkStencilColumnMeshSource();
  ~vtkStencilColumnMeshSource() override;
  vtkCoreErrorOnceMacro();

  int Shape = TRIANGLE;
  int Resolution[2] = { 32, 32 };
  int Layers = 8;
  double Spacing = 1.0;
  double LayerSpacing = 1.0;
  int Ordering = 0;

private:
  vtkStencilColumnMeshSource(const vtkStencilColumnMeshSource&) = delete;
  void operator=(const vtkStencilColumnMeshSource&) = delete;
};

#endif
