// Times the NaN scan that sparsegrid::evaluate() (src/Backend.cxx) runs over all point
// coordinates on the calling thread before dispatching to a backend, with the core's compiler
// flags (-O3 -march=native): it is part of every end-to-end evaluation time. Prints one JSON
// line per size. Build: g++ -O3 -march=native -std=c++17 nanscan.cxx -o nanscan
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

template<typename T>
__attribute__((noinline)) long scan(const T* points, std::size_t total)
{
  // The loop of src/Backend.cxx: the first NaN ends it.
  for (std::size_t k = 0; k < total; ++k)
  {
    if (std::isnan(points[k]))
    {
      return static_cast<long>(k);
    }
  }
  return -1;
}

template<typename T>
void run(const char* precision, int D, std::size_t n)
{
  std::vector<T> points(n * static_cast<std::size_t>(D));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (T& v : points)
  {
    v = static_cast<T>(u(rng));
  }
  std::vector<double> t;
  long found = 0;
  for (int r = 0; r < 5; ++r)
  {
    const auto t0 = std::chrono::steady_clock::now();
    found += scan(points.data(), points.size());
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  std::printf(
    "{\"op\":\"nan-scan\",\"precision\":\"%s\",\"dims\":%d,\"points\":%zu,\"median_s\":%.6f,"
    "\"GBps\":%.2f,\"found\":%ld}\n",
    precision,
    D,
    n,
    t[2],
    static_cast<double>(points.size() * sizeof(T)) * 1e-9 / t[2],
    found);
}

int main()
{
  run<float>("float", 5, 10000000);
  run<float>("float", 10, 10000000);
  run<float>("float", 3, 100000000);
  run<double>("double", 3, 10000000);
  return 0;
}
