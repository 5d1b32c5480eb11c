// Writes the valid seed files of the fuzz corpus (fuzz/corpus/valid-*.sgrid): small files that
// cover 1-, 2- and 3-D grids, both precisions, several steps and arrays, with and without
// boundary points and times. fuzz/run.sh --seeds rebuilds them; the regression test requires
// them to read.
#include "SparseGridFile.h"

#include "../Testing/IO/SparseGridFileTestUtilities.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace sgf = sparsegrid::file;

namespace
{

sgf::GridDescription Grid(int d,
  int level,
  std::vector<int> caps,
  bool boundary,
  std::vector<int> axes,
  std::array<int, 3> dims,
  sparsegrid::Precision p)
{
  sgf::GridDescription g;
  g.dimensions = d;
  g.level = level;
  g.levelCaps = caps;
  g.boundary = boundary;
  g.axisMap = axes;
  g.imageDimensions = dims;
  for (int a = 0; a < 3; ++a)
  {
    g.imageSpacing[a] = 0.5;
    g.bounds[2 * a + 1] = (dims[a] - 1) * 0.5;
  }
  g.precision = p;
  return g;
}

template<typename T>
std::vector<T> Ramp(std::size_t n, double phase)
{
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    v[i] = static_cast<T>(std::sin(0.37 * i + phase));
  }
  return v;
}

int Write(const std::string& path,
  sgf::GridDescription g,
  const std::vector<sgf::ArrayDescription>& arrays,
  int steps,
  bool times)
{
  std::uint64_t points = 0;
  std::string error = sgf::validateGrid(g, points);
  if (!error.empty())
  {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
    return 1;
  }
  std::vector<std::vector<float>> f;
  std::vector<std::vector<double>> d;
  std::vector<sgf::StepInput> input(static_cast<std::size_t>(steps));
  f.reserve(64);
  d.reserve(64);
  for (int s = 0; s < steps; ++s)
  {
    if (times)
    {
      input[s].time = 0.5 + s;
    }
    input[s].metrics.compressionRatio = 2.5;
    input[s].metrics.backend = "CPU";
    for (const sgf::ArrayDescription& a : arrays)
    {
      const std::size_t n = static_cast<std::size_t>(points) * a.components;
      const void* data = nullptr;
      if (g.precision == sparsegrid::Precision::Float)
      {
        f.push_back(Ramp<float>(n, s));
        data = f.back().data();
      }
      else
      {
        d.push_back(Ramp<double>(n, s));
        data = d.back().data();
      }
      input[s].arrays.push_back({ a.name, a.components, data, { 0.1, 0.01, 40.0 } });
    }
  }
  error = sgf::writeFile(path, g, arrays, input);
  if (!error.empty())
  {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::printf("wrote %s (%llu points)\n", path.c_str(), static_cast<unsigned long long>(points));
  return 0;
}

} // namespace

int main(int argc, char* argv[])
{
  const std::string folder = argc > 1 ? argv[1] : ".";
  using P = sparsegrid::Precision;
  int failures = 0;
  failures += Write(folder + "/valid-1d-float.sgrid",
    Grid(1, 4, { 4 }, true, { 0 }, { { 17, 1, 1 } }, P::Float),
    { { "f", 1 } },
    1,
    false);
  failures += Write(folder + "/valid-2d-double-2steps.sgrid",
    Grid(2, 3, { 3, 2 }, true, { 0, 2 }, { { 9, 1, 5 } }, P::Double),
    { { "p", 1 }, { "uv", 2 } },
    2,
    true);
  failures += Write(folder + "/valid-3d-float-noboundary.sgrid",
    Grid(3, 3, { 2, 2, 2 }, false, { 0, 1, 2 }, { { 5, 5, 5 } }, P::Float),
    { { "v", 3 } },
    1,
    true);
  // Error-bounded files: two pieces of float streams, one of double.
  for (const auto& [name, error] :
    { std::make_pair("valid-coded-2d-float-2pieces.sgrid",
        sgtest::WriteCodedSample(folder + "/valid-coded-2d-float-2pieces.sgrid")),
      std::make_pair("valid-coded-3d-double.sgrid",
        sgtest::WriteCodedFile<double>(folder + "/valid-coded-3d-double.sgrid",
          { { 9, 9, 9 } },
          { 0, 8, 0, 8, 0, 8 },
          { { "d", 1 } },
          1,
          1e-2)) })
  {
    std::printf("%s %s\n", name, error.empty() ? "written" : error.c_str());
    failures += error.empty() ? 0 : 1;
  }
  return failures == 0 ? 0 : 1;
}
