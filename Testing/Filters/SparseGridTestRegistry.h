// A minimal test registry: SG_TEST(Name) { ... } defines a test that main() can run by name.
#ifndef SparseGridTestRegistry_h
#define SparseGridTestRegistry_h

#include "SparseGridTestUtilities.h"

#include <map>
#include <string>

namespace sgtest
{
using TestFunction = void (*)();
std::map<std::string, TestFunction>& Registry();
struct Registration
{
  Registration(const char* name, TestFunction function) { Registry()[name] = function; }
};
}

#define SG_TEST(name)                                                                              \
  static void name();                                                                              \
  static const sgtest::Registration name##Registration(#name, name);                               \
  static void name()

#endif
