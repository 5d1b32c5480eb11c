// Runs every input of the fuzz corpus through the fuzz target's function (fuzz/sgrid_fuzz.cxx)
// in a normal build: regression inputs must fail cleanly (or read), never crash or abort.
// Files named valid-*.sgrid are well-formed seeds and must read completely, and there must be
// at least MinimumValidSeeds of them: a corpus emptied or replaced by invalid files would
// otherwise pass while the fuzzer no longer starts from inputs that reach the step reading.
#include "SparseGridFile.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dirent.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace
{
/// The seeds fuzz/run.sh --seeds writes: 1-D, 2-D and 3-D grids, float and double, one and two
/// steps, with and without boundary points.
constexpr int MinimumValidSeeds = 3;
}

int main(int argc, char* argv[])
{
  if (argc != 2)
  {
    std::fprintf(stderr, "usage: %s corpus-folder\n", argv[0]);
    return 2;
  }
  const std::string folder = argv[1];
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(folder.c_str()))
  {
    while (dirent* entry = ::readdir(dir))
    {
      const std::string name = entry->d_name;
      if (name != "." && name != ".." && name != "README.md")
      {
        names.push_back(name);
      }
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  if (names.empty())
  {
    std::fprintf(stderr, "no inputs in %s\n", folder.c_str());
    return 1;
  }
  int failures = 0, valid = 0, read = 0;
  for (const std::string& name : names)
  {
    const std::string path = folder + "/" + name;
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes(
      (std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    if (name.rfind("valid-", 0) == 0)
    {
      sparsegrid::file::Header header;
      std::vector<sparsegrid::file::StepData> steps;
      const std::string error = sparsegrid::file::readFile(path, header, steps);
      if (!error.empty())
      {
        std::fprintf(stderr, "valid seed %s does not read: %s\n", name.c_str(), error.c_str());
        ++failures;
      }
      else if (steps.size() == header.steps.size() && !steps.empty())
      {
        ++read;
      }
      ++valid;
    }
  }
  std::printf("%zu corpus inputs ran without a crash (%d of %d valid seeds read)\n",
    names.size(),
    read,
    valid);
  if (read < MinimumValidSeeds)
  {
    std::fprintf(stderr,
      "only %d valid seeds (valid-*.sgrid) read completely, at least %d expected: regenerate them "
      "with fuzz/run.sh --seeds\n",
      read,
      MinimumValidSeeds);
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
