/**
 * @file vtkMeshValidation.h
 * @brief The checks every mesh filter runs before it touches a dataset's memory: cell
 * connectivity (offsets and point ids), polyhedron face streams, and the lengths of point and
 * cell arrays.
 *
 * VTK trusts connectivity: vtkDataSet::GetPoint, vtkUnstructuredGrid::GetFaceStream and the
 * filters' own tables read wherever an id points. A cell naming point 10^7 of a 10-point mesh,
 * a face stream that runs past its array or a cell array with more tuples than cells would read
 * or write out of bounds. These functions refuse such input with one message that names the
 * first offending cell and value (ids print as 64-bit integers).
 */
#ifndef vtkMeshValidation_h
#define vtkMeshValidation_h

#include <string>

class vtkDataSet;

namespace vtkMeshValidation
{
/**
 * Checks the explicit connectivity of a vtkUnstructuredGrid or vtkPolyData (other datasets
 * have implicit, always valid connectivity): offsets start at 0, never decrease and end at the
 * connectivity's size; every point id lies in [0, number of points); an unstructured grid has
 * one cell type per cell, and each polyhedron's face stream (number of faces, then per face its
 * size and point ids) lies inside the faces array and names valid points. False with `error`.
 */
bool CheckConnectivity(vtkDataSet* input, std::string& error);

/**
 * Checks that every array of the point data has as many tuples as the dataset has points, and
 * every array of the cell data as many as it has cells. False with `error` naming the array.
 */
bool CheckArrayLengths(vtkDataSet* input, std::string& error);
}

#endif
// VTK-HeaderTest-Exclude: vtkMeshValidation.h
