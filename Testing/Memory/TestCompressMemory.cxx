// The peak memory of error-bounded compression (Sparse Grid Hierarchize, one process) above the
// input image, against the kernel's own account: the resident set's high-water mark (VmHWM of
// /proc/self/status) is reset (/proc/self/clear_refs, "5") once the image exists, and read
// again after the filter ran. Bricks are coded one after the other from the image in place,
// the check of the bound decodes into one brick-sized buffer, so the growth is about one
// brick's buffers plus the streams:
//
//     growth <= 0.5 x the input image
//
// The default case is a 256^3 float image (64 MiB) in the default bricks of 128^3, about 3 s of
// CPU time; `--size N --brick B` measures other sizes.
//
// Exits 77 (skipped) where the high-water mark cannot be reset (kernels before 4.0, or a
// /proc that refuses the write).
#include "vtkSparseGridHierarchize.h"

#include "vtkExecutive.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"

#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace
{
constexpr double Allowed = 0.5; // growth <= Allowed x input bytes

long StatusKiB(const char* field)
{
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line))
  {
    if (line.compare(0, n, field) == 0)
    {
      return std::atol(line.c_str() + n + 1);
    }
  }
  return -1;
}

/// Resets VmHWM to the current resident size; false where the kernel does not allow it.
bool ResetPeak()
{
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.close();
  return static_cast<bool>(clear) && StatusKiB("VmHWM:") <= StatusKiB("VmRSS:") + 256;
}

/// A smooth float field that the codec compresses well, as real simulation data do.
vtkSmartPointer<vtkImageData> MakeImage(int n)
{
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(n, n, n);
  image->SetSpacing(1.0 / (n - 1), 1.0 / (n - 1), 1.0 / (n - 1));
  vtkNew<vtkFloatArray> values;
  values->SetName("f");
  values->SetNumberOfTuples(static_cast<vtkIdType>(n) * n * n);
  float* v = values->GetPointer(0);
  for (int k = 0, id = 0; k < n; ++k)
  {
    for (int j = 0; j < n; ++j)
    {
      for (int i = 0; i < n; ++i, ++id)
      {
        const double x = double(i) / (n - 1), y = double(j) / (n - 1), z = double(k) / (n - 1);
        v[id] = static_cast<float>(std::sin(3 * x) * std::cos(2 * y) + 0.5 * z * z + x * y);
      }
    }
  }
  image->GetPointData()->SetScalars(values);
  return image;
}

/// Compresses `image` (relative bound 1e-3, the default) in bricks of `brick`; the stored
/// bytes, or -1 on failure.
double Compress(vtkImageData* image, int brick)
{
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetInputData(image);
  hierarchize->SetBrickSize(brick);
  if (!hierarchize->GetExecutive() || hierarchize->GetExecutive()->Update() != 1)
  {
    return -1;
  }
  vtkDataArray* stored = vtkDataArray::SafeDownCast(
    hierarchize->GetOutput()->GetFieldData()->GetAbstractArray("SparseGrid.StoredBytes"));
  return stored ? stored->GetTuple1(0) : -1;
}
} // namespace

int main(int argc, char* argv[])
{
  int size = 256, brick = 128;
  for (int i = 1; i + 1 < argc; ++i)
  {
    if (std::strcmp(argv[i], "--size") == 0)
    {
      size = std::atoi(argv[i + 1]);
    }
    else if (std::strcmp(argv[i], "--brick") == 0)
    {
      brick = std::atoi(argv[i + 1]);
    }
  }
  if (size < 8 || brick < 8)
  {
    std::printf("usage: %s [--size N (>= 8)] [--brick B (>= 8)]\n", argv[0]);
    return 2;
  }
  // Warm up: the code, the thread pool and the codec's first buffers, outside the measurement.
  if (Compress(MakeImage(17), 8) <= 0)
  {
    std::printf("FAILED: the warm-up compression failed\n");
    return 1;
  }
  auto image = MakeImage(size);
  const double inputBytes = 4.0 * size * size * size;
  malloc_trim(0);
  if (!ResetPeak())
  {
    std::printf("SKIPPED: the resident high-water mark cannot be reset (/proc/self/clear_refs)\n");
    return 77;
  }
  const long baseline = StatusKiB("VmRSS:");
  const double stored = Compress(image, brick);
  const long peak = StatusKiB("VmHWM:");
  const double growth = (peak - baseline) * 1024.0;
  std::printf("%d^3 float (%.1f MiB) in bricks of %d^3: stored %.2f MiB, peak growth %.1f MiB "
              "= %.3f x the input\n",
    size,
    inputBytes / 1048576.0,
    brick,
    stored / 1048576.0,
    growth / 1048576.0,
    growth / inputBytes);
  if (stored <= 0)
  {
    std::printf("FAILED: the compression failed\n");
    return 1;
  }
  if (!(growth <= Allowed * inputBytes))
  {
    std::printf(
      "FAILED: compressing grew the resident size by more than %.2f x the input\n", Allowed);
    return 1;
  }
  std::printf("passed: growth <= %.2f x the input\n", Allowed);
  return 0;
}
