// The grid description and the fastsg bijection: block table, ranking of level vectors,
// position <-> (level, index) conversions.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace sparsegrid
{
namespace
{

constexpr std::uint64_t Saturated = std::numeric_limits<std::uint64_t>::max();

std::uint64_t addSat(std::uint64_t a, std::uint64_t b)
{
  return (Saturated - a < b) ? Saturated : a + b;
}

std::uint64_t mulSat(std::uint64_t a, std::uint64_t b)
{
  if (a == 0 || b == 0)
  {
    return 0;
  }
  return (Saturated / a < b) ? Saturated : a * b;
}

// Metadata of a block: offset (8 bytes) + one level byte per axis.
std::uint64_t blockMetadataBytes(std::uint64_t blocks, int dims)
{
  return mulSat(blocks, 8 + static_cast<std::uint64_t>(dims));
}

Status validate(const GridSpec& spec, std::vector<int>& caps)
{
  if (spec.dimensions < 1 || spec.dimensions > MaxDimensions)
  {
    return Status(ErrorCode::InvalidArgument,
      "the number of dimensions must be between 1 and " + std::to_string(MaxDimensions) + " (got " +
        std::to_string(spec.dimensions) + ")");
  }
  // Beyond MaxAxisLevel * D no further level vector can be selected: such a level is a mistake.
  const int maxLevel = MaxAxisLevel * spec.dimensions;
  if (spec.level < 1 || spec.level > maxLevel)
  {
    return Status(ErrorCode::InvalidArgument,
      "the level must be between 1 and " + std::to_string(maxLevel) + " for " +
        std::to_string(spec.dimensions) + " dimensions (got " + std::to_string(spec.level) + ")");
  }
  if (!spec.caps.empty() && static_cast<int>(spec.caps.size()) != spec.dimensions)
  {
    return Status(ErrorCode::InvalidArgument,
      "expected " + std::to_string(spec.dimensions) + " level caps, got " +
        std::to_string(spec.caps.size()));
  }
  const int minCap = spec.boundary ? 0 : 1;
  caps.assign(static_cast<std::size_t>(spec.dimensions), std::min(spec.level, MaxAxisLevel));
  for (int t = 0; t < spec.dimensions && !spec.caps.empty(); ++t)
  {
    const int c = spec.caps[static_cast<std::size_t>(t)];
    if (c < minCap || c > MaxAxisLevel)
    {
      return Status(ErrorCode::InvalidArgument,
        "level cap " + std::to_string(c) + " on axis " + std::to_string(t) +
          " excludes every point or is too large: caps must be between " + std::to_string(minCap) +
          " and " + std::to_string(MaxAxisLevel) +
          (spec.boundary ? "" : " for a grid without boundary points"));
    }
    // One axis can never exceed the level (the others take at least 1 each): clamp.
    caps[static_cast<std::size_t>(t)] = std::min(c, spec.level);
  }
  return Status::Ok();
}

// Suffix tables: for axes t..D-1, the number of level vectors (counts) and of points (points)
// whose effective levels sum to exactly s.
void suffixTables(int dims,
  int budget,
  const std::vector<int>& caps,
  bool boundary,
  std::vector<std::uint64_t>& counts,
  std::vector<std::uint64_t>& points)
{
  const std::size_t width = static_cast<std::size_t>(budget) + 1;
  counts.assign((static_cast<std::size_t>(dims) + 1) * width, 0);
  points.assign(counts.size(), 0);
  counts[static_cast<std::size_t>(dims) * width] = 1;
  points[static_cast<std::size_t>(dims) * width] = 1;
  for (int t = dims - 1; t >= 0; --t)
  {
    for (int l = boundary ? 0 : 1; l <= caps[static_cast<std::size_t>(t)]; ++l)
    {
      const int e = detail::effectiveLevel(l);
      const std::uint64_t axisPoints = std::uint64_t(1) << Grid::axisLog2Size(l);
      for (int s = e; s <= budget; ++s)
      {
        const std::size_t next = (static_cast<std::size_t>(t) + 1) * width + (s - e);
        const std::size_t here = static_cast<std::size_t>(t) * width + s;
        counts[here] = addSat(counts[here], counts[next]);
        points[here] = addSat(points[here], mulSat(axisPoints, points[next]));
      }
    }
  }
}

} // namespace

std::string detail::formatBytes(double bytes)
{
  const char* units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
  int u = 0;
  while (bytes >= 1024.0 && u < 6)
  {
    bytes /= 1024.0;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof(text), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

namespace
{

// Contents of a small file (/proc and cgroup files: a few KiB at most), read with one open()
// and read() calls: this runs before every large allocation, so no iostreams.
bool readSmallFile(const std::string& path, std::string& text)
{
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
  {
    return false;
  }
  text.clear();
  char buffer[4096];
  ssize_t n = 0;
  while (text.size() < (1u << 16) && (n = ::read(fd, buffer, sizeof(buffer))) > 0)
  {
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return n >= 0;
}

// Value of `key` in a "key value" per line file such as /proc/meminfo ("MemAvailable: 123 kB")
// or memory.stat ("inactive_file 123").
bool readKeyedValue(const std::string& path, const std::string& key, std::uint64_t& value)
{
  std::string text;
  if (!readSmallFile(path, text))
  {
    return false;
  }
  std::size_t at = 0;
  while (at < text.size())
  {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    if (text.compare(at, key.size(), key) == 0)
    {
      std::size_t p = at + key.size();
      if (p < end && text[p] == ':')
      {
        ++p;
      }
      if (p < end && (text[p] == ' ' || text[p] == '\t'))
      {
        unsigned long long number = 0;
        if (std::sscanf(text.c_str() + p, "%llu", &number) == 1)
        {
          value = number;
          return true;
        }
      }
    }
    at = end + 1;
  }
  return false;
}

// First token of a one-line file; "max" (cgroup v2 for no limit) reads as Saturated.
bool readSingleValue(const std::string& path, std::uint64_t& value)
{
  std::string text;
  if (!readSmallFile(path, text))
  {
    return false;
  }
  if (text.compare(0, 3, "max") == 0)
  {
    value = Saturated;
    return true;
  }
  unsigned long long number = 0;
  if (std::sscanf(text.c_str(), "%llu", &number) != 1)
  {
    return false;
  }
  value = number;
  return true;
}

struct CgroupMount
{
  std::string mountPoint;
  std::string root; // the cgroup path the mount shows as its top
  bool v2 = false;
};

// The mounts that hold the memory controller, from /proc/self/mountinfo ("... root mountpoint
// options - fstype source superoptions").
std::vector<CgroupMount> memoryCgroupMounts()
{
  std::vector<CgroupMount> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line))
  {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos)
    {
      continue;
    }
    std::istringstream before(line.substr(0, dash));
    std::istringstream after(line.substr(dash + 3));
    std::string id, parent, device, root, mountPoint, fsType, source, superOptions;
    if (!(before >> id >> parent >> device >> root >> mountPoint) ||
      !(after >> fsType >> source >> superOptions))
    {
      continue;
    }
    if (fsType == "cgroup2")
    {
      // In hybrid set-ups the v2 hierarchy exists without the memory controller.
      std::ifstream controllers(mountPoint + "/cgroup.controllers");
      std::string controller;
      while (controllers >> controller)
      {
        if (controller == "memory")
        {
          mounts.push_back({ mountPoint, root, true });
          break;
        }
      }
    }
    else if (fsType == "cgroup" && ("," + superOptions + ",").find(",memory,") != std::string::npos)
    {
      mounts.push_back({ mountPoint, root, false });
    }
  }
  return mounts;
}

// This process's cgroup path in the v2 hierarchy ("0::/path") or the v1 memory hierarchy.
std::string ownCgroupPath(bool v2)
{
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
  {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
    {
      continue;
    }
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool match = v2 ? (line.compare(0, first, "0") == 0 && controllers.empty())
                          : ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (match)
    {
      return line.substr(second + 1);
    }
  }
  return "/";
}

/// A folder of the memory controller whose limit applies to this process.
struct CgroupFolder
{
  std::string path;
  bool v2 = false;
};

// This process's memory cgroup and its ancestors up to each hierarchy's mount: a parent's limit
// binds its children too. Found once per process (parsing mountinfo is most of the cost of a
// call); the limits and usages in them are read on every call.
const std::vector<CgroupFolder>& memoryCgroupFolders()
{
  static const std::vector<CgroupFolder> folders = []()
  {
    std::vector<CgroupFolder> result;
    for (const CgroupMount& mount : memoryCgroupMounts())
    {
      std::string path = ownCgroupPath(mount.v2);
      if (mount.root != "/" && path.compare(0, mount.root.size(), mount.root) == 0)
      {
        path = path.substr(mount.root.size());
      }
      std::string dir = mount.mountPoint + (path == "/" ? "" : path);
      if (access(dir.c_str(), R_OK) != 0)
      {
        dir = mount.mountPoint; // a cgroup namespace can hide our own folder
      }
      while (true)
      {
        result.push_back({ dir, mount.v2 });
        if (dir.size() <= mount.mountPoint.size())
        {
          break;
        }
        dir = dir.substr(0, dir.rfind('/'));
      }
    }
    return result;
  }();
  return folders;
}

// Smallest (limit - usage + reclaimable page cache) over the folders above. Page cache counts as
// usage in cgroups but the kernel reclaims it before failing an allocation, as MemAvailable
// assumes.
std::uint64_t cgroupAvailable(std::string& which)
{
  std::uint64_t best = Saturated;
  for (const CgroupFolder& folder : memoryCgroupFolders())
  {
    const char* limitFile = folder.v2 ? "/memory.max" : "/memory.limit_in_bytes";
    const char* usageFile = folder.v2 ? "/memory.current" : "/memory.usage_in_bytes";
    const char* cacheKey = folder.v2 ? "inactive_file" : "total_inactive_file";
    std::uint64_t limit = 0, usage = 0, cache = 0;
    // cgroup v1 writes "no limit" as a page-rounded 2^63 - 1.
    if (readSingleValue(folder.path + limitFile, limit) && limit < (std::uint64_t(1) << 62) &&
      readSingleValue(folder.path + usageFile, usage))
    {
      readKeyedValue(folder.path + "/memory.stat", cacheKey, cache);
      const std::uint64_t used = usage > cache ? usage - cache : 0;
      const std::uint64_t available = limit > used ? limit - used : 0;
      if (available < best)
      {
        best = available;
        which =
          std::string("the cgroup memory limit (") + (limitFile + 1) + " in " + folder.path + ")";
      }
    }
  }
  return best;
}

} // namespace

std::uint64_t availableMemoryBytes(std::string* limitedBy)
{
  std::string which;
  std::uint64_t best = Saturated;
  const long pageSize = sysconf(_SC_PAGESIZE);
  std::uint64_t kib = 0;
  if (readKeyedValue("/proc/meminfo", "MemAvailable", kib))
  {
    best = kib * 1024;
    which = "MemAvailable in /proc/meminfo";
  }
  else
  {
    // Kernels before 3.14 lack MemAvailable; free pages underestimate but never overestimate.
    const long pages = sysconf(_SC_AVPHYS_PAGES);
    if (pages > 0 && pageSize > 0)
    {
      best = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(pageSize);
      which = "free physical memory";
    }
  }
  std::string cgroupWhich;
  const std::uint64_t cgroup = cgroupAvailable(cgroupWhich);
  if (cgroup < best)
  {
    best = cgroup;
    which = cgroupWhich;
  }
  // RLIMIT_AS caps the address space, so what is already mapped (statm's first field, pages)
  // counts against it whether or not it is resident.
  rlimit addressSpace{};
  if (getrlimit(RLIMIT_AS, &addressSpace) == 0 && addressSpace.rlim_cur != RLIM_INFINITY)
  {
    std::uint64_t mappedPages = 0;
    readSingleValue("/proc/self/statm", mappedPages); // its first field: pages mapped
    const std::uint64_t mapped = mappedPages * static_cast<std::uint64_t>(std::max(pageSize, 1L));
    const std::uint64_t cap = static_cast<std::uint64_t>(addressSpace.rlim_cur);
    const std::uint64_t available = cap > mapped ? cap - mapped : 0;
    if (available < best)
    {
      best = available;
      which = "RLIMIT_AS (ulimit -v)";
    }
  }
  if (best == Saturated)
  {
    // Nothing could be read (no /proc): assume 16 GiB rather than refusing everything.
    best = std::uint64_t(1) << 34;
    which = "an assumed 16 GiB (no /proc to read)";
  }
  if (limitedBy)
  {
    *limitedBy = which;
  }
  return best;
}

Status checkAllocation(std::uint64_t bytes, const char* what, std::uint64_t memoryLimitBytes)
{
  std::string limitedBy = "the limit given by the caller";
  const std::uint64_t limit =
    memoryLimitBytes != 0 ? memoryLimitBytes : availableMemoryBytes(&limitedBy);
  if (bytes > limit)
  {
    return Status(ErrorCode::TooLarge,
      std::string(what) + " needs " +
        (bytes == Saturated ? std::string("more than 16 EiB")
                            : detail::formatBytes(static_cast<double>(bytes))) +
        ", more than the " + detail::formatBytes(static_cast<double>(limit)) +
        (memoryLimitBytes ? " allowed" : " this process may still use") + " (limited by " +
        limitedBy + ")");
  }
  return Status::Ok();
}

int levelForSamples(std::size_t n)
{
  int c = 0;
  while (c < MaxAxisLevel && (std::uint64_t(1) << c) + 1 < n)
  {
    ++c;
  }
  return c;
}

GridSpec imageGridSpec(const std::vector<std::size_t>& samples,
  bool boundary,
  int level,
  const std::vector<int>& capLimits)
{
  GridSpec spec;
  spec.dimensions = static_cast<int>(samples.size());
  spec.boundary = boundary;
  int largestCap = 1;
  int fullGridLevel = 1;
  for (std::size_t t = 0; t < samples.size(); ++t)
  {
    int cap = t < capLimits.size() && capLimits[t] > 0 ? capLimits[t] : levelForSamples(samples[t]);
    if (!boundary)
    {
      cap = std::max(cap, 1);
    }
    spec.caps.push_back(cap);
    largestCap = std::max(largestCap, cap);
    fullGridLevel += std::max(cap, 1) - 1;
  }
  spec.level = level > 0 ? level : std::min(largestCap + 2, fullGridLevel);
  return spec;
}

Status Grid::count(const GridSpec& spec, std::uint64_t& points, std::uint64_t& blocks)
{
  std::vector<int> caps;
  Status status = validate(spec, caps);
  if (!status)
  {
    return status;
  }
  const int budget = spec.level + spec.dimensions - 1;
  std::vector<std::uint64_t> counts, pointTable;
  suffixTables(spec.dimensions, budget, caps, spec.boundary, counts, pointTable);
  points = 0;
  blocks = 0;
  for (int s = spec.dimensions; s <= budget; ++s)
  {
    blocks = addSat(blocks, counts[static_cast<std::size_t>(s)]);
    points = addSat(points, pointTable[static_cast<std::size_t>(s)]);
  }
  return Status::Ok();
}

Status Grid::create(const GridSpec& spec, Grid& grid, std::uint64_t memoryLimitBytes)
{
  std::uint64_t points = 0, blocks = 0;
  Status status = Grid::count(spec, points, blocks);
  if (!status)
  {
    return status;
  }
  const std::string name = "a sparse grid of dimension " + std::to_string(spec.dimensions) +
    " and level " + std::to_string(spec.level) + " (" +
    (points == Saturated ? std::string("more than 2^64") : std::to_string(points)) + " points)";
  status = checkAllocation(
    mulSat(points, sizeof(double)), (name + " in double").c_str(), memoryLimitBytes);
  if (!status)
  {
    return status;
  }
  status = checkAllocation(blockMetadataBytes(blocks, spec.dimensions),
    ("the block table of " + name).c_str(),
    memoryLimitBytes);
  if (!status)
  {
    return status;
  }

  Grid g;
  status = validate(spec, g.Caps);
  if (!status)
  {
    return status;
  }
  g.Dims = spec.dimensions;
  g.Level = spec.level;
  g.Boundary = spec.boundary;
  g.Budget = spec.level + spec.dimensions - 1;
  std::vector<std::uint64_t> pointTable;
  suffixTables(g.Dims, g.Budget, g.Caps, g.Boundary, g.Suffix, pointTable);

  const std::size_t D = static_cast<std::size_t>(g.Dims);
  g.BlockOffsets.reserve(static_cast<std::size_t>(blocks) + 1);
  g.Levels.reserve(static_cast<std::size_t>(blocks) * D);
  g.GroupBegin.reserve(static_cast<std::size_t>(g.Level) + 1);
  g.BlockOffsets.push_back(0);

  // Enumerate the level vectors of each group in lexicographic order (axis 0 most significant):
  // the order blockIndex() ranks.
  std::vector<int> l(D, 0);
  const int lmin = g.Boundary ? 0 : 1;
  for (int group = 1; group <= g.Level; ++group)
  {
    g.GroupBegin.push_back(g.BlockOffsets.size() - 1);
    const int sum = group + g.Dims - 1;
    // Depth-first over axes; remaining[t] is the effective sum still to distribute at axis t.
    std::vector<int> remaining(D + 1, 0);
    remaining[0] = sum;
    int t = 0;
    l[0] = lmin - 1;
    while (t >= 0)
    {
      ++l[static_cast<std::size_t>(t)];
      const int lt = l[static_cast<std::size_t>(t)];
      if (lt > g.Caps[static_cast<std::size_t>(t)] ||
        detail::effectiveLevel(lt) > remaining[static_cast<std::size_t>(t)])
      {
        --t;
        continue;
      }
      const int rest = remaining[static_cast<std::size_t>(t)] - detail::effectiveLevel(lt);
      // Prune when the remaining axes cannot absorb exactly `rest`.
      const std::size_t width = static_cast<std::size_t>(g.Budget) + 1;
      if (g.Suffix[(static_cast<std::size_t>(t) + 1) * width + static_cast<std::size_t>(rest)] == 0)
      {
        continue;
      }
      if (t + 1 == g.Dims)
      {
        std::uint64_t size = 1;
        for (std::size_t a = 0; a < D; ++a)
        {
          g.Levels.push_back(static_cast<std::uint8_t>(l[a]));
          size <<= axisLog2Size(l[a]);
        }
        g.BlockOffsets.push_back(g.BlockOffsets.back() + size);
        continue;
      }
      remaining[static_cast<std::size_t>(t) + 1] = rest;
      ++t;
      l[static_cast<std::size_t>(t)] = lmin - 1;
    }
  }
  g.GroupBegin.push_back(g.BlockOffsets.size() - 1);
  g.Size = g.BlockOffsets.back();
  if (g.Size != points || g.numberOfBlocks() != blocks)
  {
    return Status(ErrorCode::Internal, "block enumeration disagrees with the counting tables");
  }
  grid = std::move(g);
  return Status::Ok();
}

GridSpec Grid::spec() const
{
  GridSpec s;
  s.dimensions = this->Dims;
  s.level = this->Level;
  s.caps = this->Caps;
  s.boundary = this->Boundary;
  return s;
}

std::size_t Grid::blockIndex(const int* levels) const
{
  const std::size_t none = this->numberOfBlocks();
  const int lmin = this->Boundary ? 0 : 1;
  int sum = 0;
  for (int t = 0; t < this->Dims; ++t)
  {
    if (levels[t] < lmin || levels[t] > this->Caps[static_cast<std::size_t>(t)])
    {
      return none;
    }
    sum += detail::effectiveLevel(levels[t]);
  }
  if (sum > this->Budget)
  {
    return none;
  }
  // Rank inside the group: count the vectors that come first lexicographically.
  const std::size_t width = static_cast<std::size_t>(this->Budget) + 1;
  std::uint64_t rank = 0;
  int remaining = sum;
  for (int t = 0; t < this->Dims; ++t)
  {
    for (int v = lmin; v < levels[t]; ++v)
    {
      const int rest = remaining - detail::effectiveLevel(v);
      if (rest >= 0)
      {
        rank +=
          this->Suffix[(static_cast<std::size_t>(t) + 1) * width + static_cast<std::size_t>(rest)];
      }
    }
    remaining -= detail::effectiveLevel(levels[t]);
  }
  const int group = sum - this->Dims + 1;
  return this->groupBegin(group) + static_cast<std::size_t>(rank);
}

std::uint64_t Grid::position(const int* levels, const std::uint32_t* indices) const
{
  const std::size_t b = this->blockIndex(levels);
  if (b == this->numberOfBlocks())
  {
    return this->Size;
  }
  std::uint64_t local = 0;
  for (int t = 0; t < this->Dims; ++t)
  {
    const int l = levels[t];
    const std::uint32_t i = indices[t];
    std::uint32_t k;
    if (l == 0)
    {
      if (i > 1)
      {
        return this->Size;
      }
      k = i;
    }
    else
    {
      if ((i & 1u) == 0 || (static_cast<std::uint64_t>(i) >> l) != 0)
      {
        return this->Size;
      }
      k = (i - 1) / 2;
    }
    local = (local << axisLog2Size(l)) | k;
  }
  return this->BlockOffsets[b] + local;
}

std::size_t Grid::blockOfPosition(std::uint64_t position) const
{
  auto it = std::upper_bound(this->BlockOffsets.begin(), this->BlockOffsets.end(), position);
  return static_cast<std::size_t>(it - this->BlockOffsets.begin()) - 1;
}

void Grid::pointAt(std::uint64_t position, int* levels, std::uint32_t* indices) const
{
  const std::size_t b = this->blockOfPosition(position);
  std::uint64_t local = position - this->BlockOffsets[b];
  const std::uint8_t* bl = this->blockLevels(b);
  for (int t = this->Dims - 1; t >= 0; --t)
  {
    const int l = bl[t];
    const int bits = axisLog2Size(l);
    const std::uint32_t k = static_cast<std::uint32_t>(local & ((std::uint64_t(1) << bits) - 1));
    local >>= bits;
    levels[t] = l;
    indices[t] = (l == 0) ? k : 2 * k + 1;
  }
}

void Grid::coordinates(std::uint64_t position, double* x) const
{
  int levels[MaxDimensions];
  std::uint32_t indices[MaxDimensions];
  this->pointAt(position, levels, indices);
  for (int t = 0; t < this->Dims; ++t)
  {
    x[t] = levels[t] == 0 ? static_cast<double>(indices[t])
                          : std::ldexp(static_cast<double>(indices[t]), -levels[t]);
  }
}

std::uint64_t compressedBytes(const Grid& grid, Precision precision, int components)
{
  const std::uint64_t bytes = precision == Precision::Float ? sizeof(float) : sizeof(double);
  return grid.size() * bytes * static_cast<std::uint64_t>(components < 0 ? 0 : components);
}

} // namespace sparsegrid
