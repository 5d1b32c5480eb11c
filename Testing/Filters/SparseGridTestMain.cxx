// Runs one named filter test (CTest runs each as its own test) or, without argument, all.
#include "SparseGridTestRegistry.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sgtest
{
std::map<std::string, TestFunction>& Registry()
{
  static std::map<std::string, TestFunction> registry;
  return registry;
}
}

int main(int argc, char* argv[])
{
  auto& registry = sgtest::Registry();
  if (argc > 1)
  {
    auto it = registry.find(argv[1]);
    if (it == registry.end())
    {
      std::printf("unknown test %s; known:", argv[1]);
      for (const auto& entry : registry)
      {
        std::printf(" %s", entry.first.c_str());
      }
      std::printf("\n");
      return EXIT_FAILURE;
    }
    it->second();
  }
  else
  {
    for (const auto& entry : registry)
    {
      std::printf("-- %s\n", entry.first.c_str());
      entry.second();
    }
  }
  std::printf("%d failed check(s)\n", sgtest::Failures());
  return sgtest::Failures() == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
