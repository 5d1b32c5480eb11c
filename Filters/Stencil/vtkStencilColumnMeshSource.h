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
  vtkSetClampMacro(Shape, int, QUAD, HEXAGON);
  vtkGetMacro(Shape, int);
  ///@}

  ///@{
  /// Horizontal cells along x and y (at least 2 each) and the number of layers (at least 1).
  vtkSetVector2Macro(Resolution, int);
  vtkGetVector2Macro(Resolution, int);
  vtkSetClampMacro(Layers, int, 1, 100000);
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
  vtkSetClampMacro(Ordering, int, 0, 1);
  vtkGetMacro(Ordering, int);
  ///@}

protected:
  vtkStencilColumnMeshSource();
  ~vtkStencilColumnMeshSource() override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

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
