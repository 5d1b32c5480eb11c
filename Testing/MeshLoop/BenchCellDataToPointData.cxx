// meshloop-vtk-bench: VTK's vtkCellDataToPointData beside Cell Data To Point Data (Accelerated)
// on the CPU, on a generated hexahedral mesh with shuffled numbering (the mesh meshloop-bench
// uses), with VTK's SMP tools on the STDThread backend. Prints a table and one JSON line per row.
//   meshloop-vtk-bench CELLS THREADS REPS
#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkCellDataToPointData.h"
#include "vtkCellDataToPointDataAccelerated.h"
#include "vtkCellType.h"
#include "vtkDoubleArray.h"
#include "vtkIdTypeArray.h"
#include "vtkNew.h"
#include "vtkPoints.h"
#include "vtkSMPTools.h"
#include "vtkUnstructuredGrid.h"

#include <meshloop/meshloop.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace
{
template<typename F>
double MedianSeconds(int reps, F&& f)
{
  std::vector<double> t;
  for (int r = 0; r < reps; ++r)
  {
    const auto s = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}

int main(int argc, char* argv[])
{
  const long long cells = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  const int side = std::max(1, static_cast<int>(std::lround(std::cbrt(double(cells)))));
  const meshloop::Mapping m = meshloop::generate::hexahedra(side, side, side, true, 1);

  vtkNew<vtkUnstructuredGrid> grid;
  vtkNew<vtkPoints> points;
  points->SetNumberOfPoints(m.toCount);
  for (vtkIdType i = 0; i < m.toCount; ++i)
  {
    points->SetPoint(i, 0, 0, 0); // geometry does not enter the averaging
  }
  grid->SetPoints(points);
  vtkNew<vtkIdTypeArray> offsets, connectivity;
  offsets->SetNumberOfTuples(static_cast<vtkIdType>(m.offsets.size()));
  std::copy(m.offsets.begin(), m.offsets.end(), offsets->GetPointer(0));
  connectivity->SetNumberOfTuples(static_cast<vtkIdType>(m.targets.size()));
  std::copy(m.targets.begin(), m.targets.end(), connectivity->GetPointer(0));
  vtkNew<vtkCellArray> cellArray;
  cellArray->SetData(offsets, connectivity);
  grid->SetCells(VTK_HEXAHEDRON, cellArray);
  vtkNew<vtkDoubleArray> values;
  values->SetName("q");
  values->SetNumberOfComponents(4);
  values->SetNumberOfTuples(m.fromCount());
  std::mt19937 random(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (vtkIdType i = 0; i < 4 * m.fromCount(); ++i)
  {
    values->SetValue(i, dist(random));
  }
  grid->GetCellData()->AddArray(values);

  std::printf("# %d^3 shuffled hexahedra, one 4-component double array, %d threads, median of %d\n",
    side,
    threads,
    reps);
  const vtkSMPTools::Config config(threads, "STDThread", false);
  vtkSMPTools::LocalScope(config,
    [&]()
    {
      vtkNew<vtkCellDataToPointData> vtk;
      vtk->SetInputData(grid);
      const double tv = MedianSeconds(reps,
        [&]()
        {
          vtk->Modified();
          vtk->Update();
        });
      std::printf("vtkCellDataToPointData               %10.1f ms\n", tv * 1e3);
      std::printf(
        "{\"filter\":\"vtkCellDataToPointData\",\"cells\":%lld,\"threads\":%d,\"ms\":%g}\n",
        static_cast<long long>(m.fromCount()),
        threads,
        tv * 1e3);
      for (int reorder = 0; reorder < 2; ++reorder)
      {
        for (int strategy = 0; strategy < 3; ++strategy)
        {
          vtkNew<vtkCellDataToPointDataAccelerated> ours;
          ours->SetInputData(grid);
          ours->SetBackend(1);
          ours->SetNumberOfThreads(threads);
          ours->SetStrategy(strategy);
          ours->SetReordering(reorder);
          ours->Update(); // builds the cached mesh (reordering, plan)
          const double to = MedianSeconds(reps,
            [&]()
            {
              ours->Modified();
              ours->Update();
            });
          std::printf(
            "Accelerated CPU strategy %d reorder %d %10.1f ms\n", strategy, reorder, to * 1e3);
          std::printf(
            "{\"filter\":\"CellDataToPointDataAccelerated\",\"backend\":\"CPU\",\"strategy\":%d,"
            "\"reordering\":%d,\"cells\":%lld,\"threads\":%d,\"ms\":%g}\n",
            strategy,
            reorder,
            static_cast<long long>(m.fromCount()),
            threads,
            to * 1e3);
        }
      }
    });
  return 0;
}
