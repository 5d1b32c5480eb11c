// Column meshes: the generator (quads, triangles, hexagons), z-curve ordering, recognising columns
// in a cell list and horizontal neighbours from shared corners.
#include "stencil/Stencil.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <unordered_map>

namespace stencil
{
const char* toString(HorizontalShape shape)
{
  static const char* const names[] = { "quad", "triangle", "hexagon" };
  return execution::nameOf(shape, names);
}

namespace
{
std::uint64_t spreadBits(std::uint32_t v)
{
  std::uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  x = (x | (x << 1)) & 0x5555555555555555ull;
  return x;
}

/// Shares corner points between cells: the same (rounded) position gives the same id.
class PointPool
{
public:
  explicit PointPool(double scale)
    : Scale(scale)
  {
  }
  std::int32_t id(double x, double y, std::vector<double>& points)
  {
    const auto key =
      std::make_pair(std::llround(x / this->Scale * 1e6), std::llround(y / this->Scale * 1e6));
    auto found = this->Ids.find(key);
    if (found != this->Ids.end())
    {
      return found->second;
    }
    const std::int32_t id = static_cast<std::int32_t>(points.size() / 2);
    points.push_back(x);
    points.push_back(y);
    this->Ids.emplace(key, id);
    return id;
  }

private:
  double Scale;
  std::map<std::pair<long long, long long>, std::int32_t> Ids;
};
} // namespace

std::vector<std::int32_t> zCurveOrder(const std::vector<double>& xy)
{
  const std::size_t n = xy.size() / 2;
  std::vector<std::int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (n == 0)
  {
    return order;
  }
  double lo[2] = { xy[0], xy[1] };
  double hi[2] = { xy[0], xy[1] };
  for (std::size_t i = 0; i < n; ++i)
  {
    for (int d = 0; d < 2; ++d)
    {
      lo[d] = std::min(lo[d], xy[2 * i + d]);
      hi[d] = std::max(hi[d], xy[2 * i + d]);
    }
  }
  std::vector<std::uint64_t> code(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    std::uint32_t q[2];
    for (int d = 0; d < 2; ++d)
    {
      const double extent = hi[d] - lo[d];
      const double t = extent > 0 ? (xy[2 * i + d] - lo[d]) / extent : 0.0;
      q[d] = static_cast<std::uint32_t>(std::llround(t * 1048575.0));
    }
    code[i] = spreadBits(q[0]) | (spreadBits(q[1]) << 1);
  }
  std::stable_sort(
    order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return code[a] < code[b]; });
  return order;
}

Status generateColumns(const ColumnGrid& grid, GeneratedColumns& out)
{
  const HorizontalShape shape = grid.shape;
  const std::size_t nx = grid.nx;
  const std::size_t ny = grid.ny;
  const double spacing = grid.spacing;
  const double layerSpacing = grid.layerSpacing;
  if (nx < 2 || ny < 2 || grid.layers < 1)
  {
    return Status(ErrorCode::TooSmall, "column mesh generator: need nx, ny >= 2 and layers >= 1");
  }
  if (nx * ny >= static_cast<std::size_t>(INT32_MAX / 4))
  {
    return Status(ErrorCode::InvalidArgument, "column mesh generator: too many cells");
  }
  if (!(spacing > 0 && std::isfinite(spacing) && layerSpacing > 0 && std::isfinite(layerSpacing)))
  {
    return Status(ErrorCode::InvalidArgument, "column mesh generator: spacings must be positive");
  }
  const std::size_t cells = nx * ny;
  const int K = shape == HorizontalShape::Quad ? 4 : (shape == HorizontalShape::Triangle ? 3 : 6);
  std::vector<std::int32_t> table(cells * K, -1);
  out = GeneratedColumns();
  out.centres.resize(cells * 2);
  out.polygonOffsets.assign(1, 0);
  PointPool pool(spacing);
  auto id = [&](long long i, long long j) -> std::int32_t
  {
    if (i < 0 || j < 0 || i >= static_cast<long long>(nx) || j >= static_cast<long long>(ny))
    {
      return -1;
    }
    return static_cast<std::int32_t>(j * static_cast<long long>(nx) + i);
  };
  const double pi = std::acos(-1.0);
  for (std::size_t j = 0; j < ny; ++j)
  {
    for (std::size_t i = 0; i < nx; ++i)
    {
      const std::size_t c = j * nx + i;
      const long long I = static_cast<long long>(i);
      const long long J = static_cast<long long>(j);
      std::vector<std::pair<double, double>> corners;
      double cx = 0;
      double cy = 0;
      if (shape == HorizontalShape::Quad)
      {
        cx = i * spacing;
        cy = j * spacing;
        const std::int32_t nb[4] = { id(I - 1, J), id(I + 1, J), id(I, J - 1), id(I, J + 1) };
        std::copy(nb, nb + 4, table.begin() + c * 4);
        const double h = spacing / 2;
        corners = {
          { cx - h, cy - h }, { cx + h, cy - h }, { cx + h, cy + h }, { cx - h, cy + h }
        };
      }
      else if (shape == HorizontalShape::Triangle)
      {
        // Side a, row height a sqrt(3)/2; triangle (i, j) points up when i + j is even.
        const double a = spacing * std::sqrt(3.0);
        const double rowHeight = a * std::sqrt(3.0) / 2;
        const double y0 = j * rowHeight;
        const double y1 = y0 + rowHeight;
        const bool up = (i + j) % 2 == 0;
        cx = (i + 1) * a / 2;
        cy = up ? y0 + rowHeight / 3 : y0 + 2 * rowHeight / 3;
        const std::int32_t nb[3] = { id(I - 1, J), id(I + 1, J), up ? id(I, J - 1) : id(I, J + 1) };
        std::copy(nb, nb + 3, table.begin() + c * 3);
        if (up)
        {
          corners = { { i * a / 2, y0 }, { (i + 2) * a / 2, y0 }, { (i + 1) * a / 2, y1 } };
        }
        else
        {
          corners = { { (i + 1) * a / 2, y0 }, { (i + 2) * a / 2, y1 }, { i * a / 2, y1 } };
        }
      }
      else
      {
        // Pointy-top hexagons in offset rows: odd rows shifted right by half a cell.
        cx = spacing * (i + 0.5 * (j % 2));
        cy = j * spacing * std::sqrt(3.0) / 2;
        const long long shift = (j % 2 == 0) ? -1 : 0;
        const std::int32_t nb[6] = { id(I - 1, J),
          id(I + 1, J),
          id(I + shift, J - 1),
          id(I + shift + 1, J - 1),
          id(I + shift, J + 1),
          id(I + shift + 1, J + 1) };
        std::copy(nb, nb + 6, table.begin() + c * 6);
        const double radius = spacing / std::sqrt(3.0);
        for (int v = 0; v < 6; ++v)
        {
          const double angle = pi / 6 + v * pi / 3;
          corners.emplace_back(cx + radius * std::cos(angle), cy + radius * std::sin(angle));
        }
      }
      out.centres[2 * c] = cx;
      out.centres[2 * c + 1] = cy;
      for (const auto& corner : corners)
      {
        out.polygonPoints.push_back(pool.id(corner.first, corner.second, out.points));
      }
      out.polygonOffsets.push_back(static_cast<std::int32_t>(out.polygonPoints.size()));
    }
  }
  const double weight = 4.0 / (K * spacing * spacing);
  ColumnMesh mesh;
  Status status =
    ColumnMesh::create({ cells, grid.layers, K, std::move(table), {}, weight, layerSpacing }, mesh);
  if (!status)
  {
    return status;
  }
  if (grid.ordering == Ordering::RowMajor)
  {
    out.mesh = std::move(mesh);
    return Status::Ok();
  }
  // Z-curve: renumber cells (table, centres, polygons) along the Morton order of the centres.
  const std::vector<std::int32_t> order = zCurveOrder(out.centres);
  if (!(status = mesh.permuted(order, out.mesh)))
  {
    return status;
  }
  std::vector<double> centres(cells * 2);
  std::vector<std::int32_t> offsets(1, 0);
  std::vector<std::int32_t> corners;
  for (std::size_t i = 0; i < cells; ++i)
  {
    const std::size_t old = static_cast<std::size_t>(order[i]);
    centres[2 * i] = out.centres[2 * old];
    centres[2 * i + 1] = out.centres[2 * old + 1];
    corners.insert(corners.end(),
      out.polygonPoints.begin() + out.polygonOffsets[old],
      out.polygonPoints.begin() + out.polygonOffsets[old + 1]);
    offsets.push_back(static_cast<std::int32_t>(corners.size()));
  }
  out.centres = std::move(centres);
  out.polygonOffsets = std::move(offsets);
  out.polygonPoints = std::move(corners);
  return Status::Ok();
}

Status detectColumns(const std::vector<double>& xyz, ColumnLayout& layout)
{
  layout = ColumnLayout();
  const std::size_t n = xyz.size() / 3;
  if (n < 2 || xyz.size() % 3 != 0)
  {
    return Status(ErrorCode::NotColumnar, "columns: fewer than two cells");
  }
  double lo[3] = { xyz[0], xyz[1], xyz[2] };
  double hi[3] = { xyz[0], xyz[1], xyz[2] };
  for (std::size_t i = 0; i < n; ++i)
  {
    for (int d = 0; d < 3; ++d)
    {
      lo[d] = std::min(lo[d], xyz[3 * i + d]);
      hi[d] = std::max(hi[d], xyz[3 * i + d]);
    }
  }
  const double extent = std::max({ hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-300 });
  const double tol = 1e-7 * extent;
  auto sameColumn = [&](std::size_t a, std::size_t b)
  {
    return std::fabs(xyz[3 * a] - xyz[3 * b]) <= tol &&
      std::fabs(xyz[3 * a + 1] - xyz[3 * b + 1]) <= tol;
  };
  // The layer size is the first index above 0 that lies in cell 0's column.
  std::size_t layer = 0;
  for (std::size_t i = 1; i < n; ++i)
  {
    if (sameColumn(0, i))
    {
      layer = i;
      break;
    }
  }
  if (layer == 0)
  {
    // One layer: a horizontal mesh (all z equal) is a valid single-layer column mesh.
    if (hi[2] - lo[2] <= tol)
    {
      layout.cellsPerLayer = n;
      layout.layers = 1;
      layout.layerSpacing = 1;
      return Status::Ok();
    }
    return Status(ErrorCode::NotColumnar,
      "not a column mesh: no other cell lies above cell 0 and the cells do not share one z");
  }
  if (n % layer != 0)
  {
    std::ostringstream message;
    message << "not a column mesh: " << n << " cells is not a multiple of the layer size " << layer;
    return Status(ErrorCode::NotColumnar, message.str());
  }
  const std::size_t layers = n / layer;
  double first = 0;
  double minStep = 0;
  double maxStep = 0;
  for (std::size_t i = layer; i < n; ++i)
  {
    const std::size_t below = i - layer;
    const double step = xyz[3 * i + 2] - xyz[3 * below + 2];
    if (!sameColumn(i, below) || !(step > tol))
    {
      std::ostringstream message;
      message << "not a column mesh: cell " << i << " is not directly above cell " << below
              << " (cells must be numbered layer by layer with " << layer
              << " cells per layer, z increasing)";
      return Status(ErrorCode::NotColumnar, message.str());
    }
    if (i == layer)
    {
      first = minStep = maxStep = step;
    }
    minStep = std::min(minStep, step);
    maxStep = std::max(maxStep, step);
  }
  (void)first;
  for (std::size_t i = 1; i < layer; ++i)
  {
    if (std::fabs(xyz[3 * i + 2] - xyz[2]) > std::max(tol, 1e-3 * minStep))
    {
      std::ostringstream message;
      message << "not a column mesh: cell " << i << " of the first layer has another z than cell 0";
      return Status(ErrorCode::NotColumnar, message.str());
    }
  }
  layout.cellsPerLayer = layer;
  layout.layers = layers;
  layout.layerSpacing = (xyz[3 * (n - layer) + 2] - xyz[2]) / static_cast<double>(layers - 1);
  layout.uniformSpacing = (maxStep - minStep) <= 1e-6 * maxStep;
  return Status::Ok();
}

Status neighboursFromConnectivity(std::size_t n,
  const std::vector<std::int64_t>& offsets,
  const std::vector<std::int64_t>& ids,
  int minShared,
  std::vector<std::int32_t>& table,
  int& maxNeighbours)
{
  if (offsets.size() != n + 1 || minShared < 1)
  {
    return Status(ErrorCode::InvalidArgument, "neighbours: offsets must have n + 1 entries");
  }
  std::unordered_map<std::int64_t, std::vector<std::int32_t>> cellsOfPoint;
  for (std::size_t c = 0; c < n; ++c)
  {
    for (std::int64_t e = offsets[c]; e < offsets[c + 1]; ++e)
    {
      auto& list = cellsOfPoint[ids[static_cast<std::size_t>(e)]];
      if (list.empty() || list.back() != static_cast<std::int32_t>(c))
      {
        list.push_back(static_cast<std::int32_t>(c));
      }
    }
  }
  std::vector<std::vector<std::int32_t>> lists(n);
  std::map<std::int32_t, int> shared;
  maxNeighbours = 0;
  for (std::size_t c = 0; c < n; ++c)
  {
    shared.clear();
    for (std::int64_t e = offsets[c]; e < offsets[c + 1]; ++e)
    {
      for (std::int32_t other : cellsOfPoint[ids[static_cast<std::size_t>(e)]])
      {
        if (other != static_cast<std::int32_t>(c))
        {
          ++shared[other];
        }
      }
    }
    for (const auto& entry : shared)
    {
      if (entry.second >= minShared)
      {
        lists[c].push_back(entry.first);
      }
    }
    maxNeighbours = std::max(maxNeighbours, static_cast<int>(lists[c].size()));
  }
  if (maxNeighbours > 8)
  {
    return Status(ErrorCode::InvalidArgument,
      "neighbours: a cell has more than 8 horizontal neighbours (not supported)");
  }
  if (maxNeighbours == 0)
  {
    return Status(ErrorCode::NotColumnar, "neighbours: no two cells of a layer share a side");
  }
  table.assign(n * maxNeighbours, -1);
  for (std::size_t c = 0; c < n; ++c)
  {
    std::copy(lists[c].begin(), lists[c].end(), table.begin() + c * maxNeighbours);
  }
  return Status::Ok();
}

} // namespace stencil
