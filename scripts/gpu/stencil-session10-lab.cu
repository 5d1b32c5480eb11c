// Session 10 laboratory for issue 15's float column-mesh bar (best column variant <= 1.45x the
// regular laplap): variants of the staged horizontal laplap on a 512 x 512 x 64 quad column mesh
// in z-curve order (float), written stand-alone (no StencilCore code) so that each idea compiles
// in a minute. Every variant is checked against a CPU reference in double on every value (fill
// where a neighbourhood is incomplete) before it is timed. Timing as stencil-bench: CUDA events
// around each launch, median of 20; 6 repeats in rotating order, median of the medians.
//
// Variants (template flags):
//   TC    cells per tile (threads per block): 256 or 512
//   GW    ring staging: 1 = one gathered value per ring cell and layer (StencilCore's staged
//         z-loop), 4 = aligned groups of 4 consecutive cell ids (16-byte loads, a quarter of the
//         load instructions, fewer sectors)
//   Fast  uniform-weight Laplacian as w * (sum of neighbours - K u) instead of sum w (n - u)
//   Own   the own cell's raw values and first Laplacians kept in registers (false: read back from
//         shared memory like StencilCore's synchronous staged kernel)
// Build (repository root): nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v
//   scripts/gpu/stencil-session10-lab.cu -o /tmp/lab10
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(x)                                                                                   \
  do                                                                                               \
  {                                                                                                \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess)                                                                         \
    {                                                                                              \
      std::printf("CUDA error %s at line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));         \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

constexpr int K = 4;

struct Mesh
{
  int n = 0;
  int cells = 0;
  std::vector<int> nb; // cells x K, -1 where missing
};

static int morton(int x, int y)
{
  int id = 0;
  for (int b = 0; b < 15; ++b)
  {
    id |= ((x >> b) & 1) << (2 * b);
    id |= ((y >> b) & 1) << (2 * b + 1);
  }
  return id;
}

static Mesh zCurveQuads(int n)
{
  Mesh m;
  m.n = n;
  m.cells = n * n;
  m.nb.assign(static_cast<std::size_t>(m.cells) * K, -1);
  for (int y = 0; y < n; ++y)
  {
    for (int x = 0; x < n; ++x)
    {
      const int c = morton(x, y);
      const int xs[K] = { x + 1, x - 1, x, x };
      const int ys[K] = { y, y, y + 1, y - 1 };
      for (int q = 0; q < K; ++q)
      {
        if (xs[q] >= 0 && xs[q] < n && ys[q] >= 0 && ys[q] < n)
        {
          m.nb[c * K + q] = morton(xs[q], ys[q]);
        }
      }
    }
  }
  return m;
}

/// Host-built tile lists: what each block stages and the resolved shared-memory slots.
struct Tiles
{
  int tc = 0;
  int gw = 1;
  int maxItems = 0; ///< staged ring items per tile (cells or groups)
  int maxRing1 = 0;
  int maxSlots = 0; ///< tile cells + ring slots
  std::vector<int> itemStart, items;
  std::vector<int> ring1Start;
  std::vector<int4> ring1Nb; ///< neighbour slots of ring-1 cells
  std::vector<int> ring1Self;
  std::vector<int4> ownNb;
  std::vector<int> complete;
};

static Tiles buildTiles(const Mesh& m, int tc, int gw)
{
  Tiles T;
  T.tc = tc;
  T.gw = gw;
  const int tiles = m.cells / tc;
  std::vector<int> slotOf(m.cells, -1);
  std::vector<int> stamp(m.cells, -1);
  auto valid = [&](int c)
  {
    for (int q = 0; q < K; ++q)
    {
      if (m.nb[c * K + q] < 0)
      {
        return false;
      }
    }
    return true;
  };
  T.itemStart.push_back(0);
  T.ring1Start.push_back(0);
  T.ownNb.resize(m.cells);
  T.complete.resize(m.cells);
  for (int b = 0; b < tiles; ++b)
  {
    const int first = b * tc;
    auto inTile = [&](int c) { return c >= first && c < first + tc; };
    std::vector<int> r1, r2;
    for (int c = first; c < first + tc; ++c)
    {
      for (int q = 0; q < K; ++q)
      {
        const int n = m.nb[c * K + q];
        if (n >= 0 && !inTile(n) && stamp[n] != b)
        {
          stamp[n] = b;
          r1.push_back(n);
        }
      }
    }
    std::sort(r1.begin(), r1.end());
    for (int c : r1)
    {
      for (int q = 0; q < K; ++q)
      {
        const int n = m.nb[c * K + q];
        if (n >= 0 && !inTile(n) && stamp[n] != b)
        {
          stamp[n] = b;
          r2.push_back(n);
        }
      }
    }
    std::sort(r2.begin(), r2.end());
    for (int c = first; c < first + tc; ++c)
    {
      slotOf[c] = c - first;
    }
    std::vector<int> ring = r1;
    ring.insert(ring.end(), r2.begin(), r2.end());
    int ringSlots = 0;
    if (gw == 1)
    {
      for (std::size_t h = 0; h < ring.size(); ++h)
      {
        slotOf[ring[h]] = tc + static_cast<int>(h);
        T.items.push_back(ring[h]);
      }
      ringSlots = static_cast<int>(ring.size());
      T.maxItems = std::max(T.maxItems, static_cast<int>(ring.size()));
    }
    else
    {
      std::vector<int> groups;
      for (int c : ring)
      {
        groups.push_back(c / gw);
      }
      std::sort(groups.begin(), groups.end());
      groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
      for (std::size_t g = 0; g < groups.size(); ++g)
      {
        T.items.push_back(groups[g]);
        for (int i = 0; i < gw; ++i)
        {
          slotOf[groups[g] * gw + i] = tc + gw * static_cast<int>(g) + i;
        }
      }
      ringSlots = gw * static_cast<int>(groups.size());
      T.maxItems = std::max(T.maxItems, static_cast<int>(groups.size()));
    }
    T.itemStart.push_back(static_cast<int>(T.items.size()));
    T.maxSlots = std::max(T.maxSlots, tc + ringSlots);
    for (int c = first; c < first + tc; ++c)
    {
      int s[K];
      bool ok = valid(c);
      for (int q = 0; q < K; ++q)
      {
        const int n = m.nb[c * K + q];
        s[q] = n < 0 ? c - first : slotOf[n];
        if (n >= 0)
        {
          ok = ok && valid(n);
        }
      }
      T.ownNb[c] = make_int4(s[0], s[1], s[2], s[3]);
      T.complete[c] = ok ? 1 : 0;
    }
    for (int c : r1)
    {
      const int self = slotOf[c];
      int s[K];
      for (int q = 0; q < K; ++q)
      {
        const int n = m.nb[c * K + q];
        s[q] = n < 0 ? self : slotOf[n];
        if (s[q] < 0)
        {
          std::printf("ring cell %d of tile %d: neighbour %d not staged\n", c, b, n);
          std::exit(1);
        }
      }
      T.ring1Nb.push_back(make_int4(s[0], s[1], s[2], s[3]));
      T.ring1Self.push_back(self);
    }
    T.ring1Start.push_back(static_cast<int>(T.ring1Self.size()));
    T.maxRing1 = std::max(T.maxRing1, static_cast<int>(r1.size()));
    for (int c : ring)
    {
      slotOf[c] = -1;
    }
    for (int c = first; c < first + tc; ++c)
    {
      slotOf[c] = -1;
    }
  }
  return T;
}

struct DeviceTiles
{
  const int* itemStart;
  const int* items;
  const int* ring1Start;
  const int4* ring1Nb;
  const int* ring1Self;
  const int4* ownNb;
  const int* complete;
  int maxItems;
  int maxRing1;
  int maxSlots;
};

template<typename V>
static V* upload(const std::vector<V>& v)
{
  V* p = nullptr;
  CHECK(cudaMalloc(&p, std::max<std::size_t>(1, v.size()) * sizeof(V)));
  CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice));
  return p;
}

static DeviceTiles toDevice(const Tiles& T)
{
  DeviceTiles d;
  d.itemStart = upload(T.itemStart);
  d.items = upload(T.items);
  d.ring1Start = upload(T.ring1Start);
  d.ring1Nb = upload(T.ring1Nb);
  d.ring1Self = upload(T.ring1Self);
  d.ownNb = upload(T.ownNb);
  d.complete = upload(T.complete);
  d.maxItems = T.maxItems;
  d.maxRing1 = T.maxRing1;
  d.maxSlots = T.maxSlots;
  return d;
}

/// Laplacians of 4 layers at slot pointer base[] from the neighbours' slots (accumulated one
/// neighbour at a time, so that at most one neighbour's float4 is live).
template<bool Fast>
__device__ __forceinline__ float4 laplacianOf(float4 u, const float4* base, int4 s, float w)
{
  const int q[4] = { s.x, s.y, s.z, s.w };
  float4 r = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int j = 0; j < 4; ++j)
  {
    const float4 a = base[q[j]];
    if constexpr (Fast)
    {
      r.x += a.x;
      r.y += a.y;
      r.z += a.z;
      r.w += a.w;
    }
    else
    {
      r.x += w * (a.x - u.x);
      r.y += w * (a.y - u.y);
      r.z += w * (a.z - u.z);
      r.w += w * (a.w - u.w);
    }
  }
  if constexpr (Fast)
  {
    r.x = w * (r.x - 4.f * u.x);
    r.y = w * (r.y - 4.f * u.y);
    r.z = w * (r.z - 4.f * u.z);
    r.w = w * (r.w - 4.f * u.w);
  }
  return r;
}

/// 4 x 4 transpose within each quad of lanes: lane i of the quad has row i (v[0..3]) and ends
/// with column i.
__device__ __forceinline__ float4 transposeQuad(float4 v, int lane)
{
  const bool p = (lane & 2) != 0;
  float s0 = __shfl_xor_sync(0xffffffffu, p ? v.x : v.z, 2);
  float s1 = __shfl_xor_sync(0xffffffffu, p ? v.y : v.w, 2);
  if (p)
  {
    v.x = s0;
    v.y = s1;
  }
  else
  {
    v.z = s0;
    v.w = s1;
  }
  const bool q = (lane & 1) != 0;
  s0 = __shfl_xor_sync(0xffffffffu, q ? v.x : v.y, 1);
  s1 = __shfl_xor_sync(0xffffffffu, q ? v.z : v.w, 1);
  if (q)
  {
    v.x = s0;
    v.z = s1;
  }
  else
  {
    v.y = s0;
    v.w = s1;
  }
  return v;
}

/// Thread t's place in the ring-item loop: Spread gives each warp an equal share of the first
/// items (item h -> warp h % warps), so that the gathers do not all sit in the first warps.
template<int TC, bool Spread>
__device__ __forceinline__ int ringLane(int t)
{
  if constexpr (Spread)
  {
    return (t % 32) * (TC / 32) + t / 32;
  }
  return t;
}

template<int TC, int GW, bool Fast, bool Own, bool Spread, int MinBlocks>
__global__ void __launch_bounds__(TC, MinBlocks) stagedKernel(const float* __restrict__ u,
  float* __restrict__ out,
  int cells,
  int layers,
  DeviceTiles d,
  float w,
  float fill)
{
  extern __shared__ __align__(16) unsigned char smem[];
  float4* raw = reinterpret_cast<float4*>(smem);
  float4* lap = raw + d.maxSlots;
  int* items = reinterpret_cast<int*>(lap + d.maxSlots);
  int4* ringNb = reinterpret_cast<int4*>(items + (d.maxItems + 3) / 4 * 4);
  int* ringSelf = reinterpret_cast<int*>(ringNb + d.maxRing1);
  const int b = blockIdx.x;
  const int t = threadIdx.x;
  const int first = b * TC;
  const int itemBegin = d.itemStart[b];
  const int itemCount = d.itemStart[b + 1] - itemBegin;
  const int ringBegin = d.ring1Start[b];
  const int ringCount = d.ring1Start[b + 1] - ringBegin;
  for (int h = t; h < itemCount; h += TC)
  {
    items[h] = d.items[itemBegin + h];
  }
  for (int h = t; h < ringCount; h += TC)
  {
    ringNb[h] = d.ring1Nb[ringBegin + h];
    ringSelf[h] = d.ring1Self[ringBegin + h];
  }
  const int4 my = d.ownNb[first + t];
  const bool complete = d.complete[first + t] != 0;
  __syncthreads();
  const int stride = cells;
  const int lane = ringLane<TC, Spread>(t);
  for (int k0 = 0; k0 < layers; k0 += 4)
  {
    const float* src = u + k0 * stride;
    float4 v;
    v.x = src[first + t];
    v.y = src[stride + first + t];
    v.z = src[2 * stride + first + t];
    v.w = src[3 * stride + first + t];
    if constexpr (GW == 1)
    {
      for (int h = lane; h < itemCount; h += TC)
      {
        const int id = items[h];
        float4 r;
        r.x = src[id];
        r.y = src[stride + id];
        r.z = src[2 * stride + id];
        r.w = src[3 * stride + id];
        raw[TC + h] = r;
      }
    }
    else
    {
      // Lane j of a warp's pass: group j / 4, layer j % 4 (one 16-byte load), then a transpose
      // within the quad so that lane i holds cell i's 4 layers (one 16-byte store).
      const int l = t & 31;
      for (int j = t - l; j < 4 * itemCount; j += TC)
      {
        const int h = (j + l) >> 2;
        float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
        if (j + l < 4 * itemCount)
        {
          a = reinterpret_cast<const float4*>(src + (l & 3) * stride)[items[h]];
        }
        a = transposeQuad(a, l);
        if (j + l < 4 * itemCount)
        {
          raw[TC + 4 * h + (l & 3)] = a;
        }
      }
    }
    raw[t] = v;
    __syncthreads();
    if constexpr (!Own)
    {
      v = raw[t];
    }
    float4 l = laplacianOf<Fast>(v, raw, my, w);
    lap[t] = l;
    for (int h = t; h < ringCount; h += TC)
    {
      const int4 r = ringNb[h];
      const int s = ringSelf[h];
      lap[s] = laplacianOf<Fast>(raw[s], raw, r, w);
    }
    __syncthreads();
    if constexpr (!Own)
    {
      l = lap[t];
    }
    float4 o = laplacianOf<Fast>(l, lap, my, w);
    if (!complete)
    {
      o = make_float4(fill, fill, fill, fill);
    }
    float* dst = out + k0 * stride + first + t;
    dst[0] = o.x;
    dst[stride] = o.y;
    dst[2 * stride] = o.z;
    dst[3 * stride] = o.w;
  }
}

/// Groups of 4, uniform weights, P planes of 4 layers per step (8 layers for P = 2: fewer
/// barriers and set-up per value); plane p of the raw and Laplacian slots at p x maxSlots, so
/// that every 16-byte load stays conflict-free as with one plane. Own: the own cell's raw values
/// kept in registers across the first barrier (false: read back).
template<int TC, int P, bool Own, int MinBlocks>
__global__ void __launch_bounds__(TC, MinBlocks) planeKernel(const float* __restrict__ u,
  float* __restrict__ out,
  int cells,
  int layers,
  DeviceTiles d,
  float w,
  float fill)
{
  extern __shared__ __align__(16) unsigned char smem[];
  const int S = d.maxSlots;
  float4* raw = reinterpret_cast<float4*>(smem);
  float4* lap = raw + P * S;
  int* items = reinterpret_cast<int*>(lap + P * S);
  int4* ringNb = reinterpret_cast<int4*>(items + (d.maxItems + 3) / 4 * 4);
  int* ringSelf = reinterpret_cast<int*>(ringNb + d.maxRing1);
  const int b = blockIdx.x;
  const int t = threadIdx.x;
  const int first = b * TC;
  const int itemBegin = d.itemStart[b];
  const int itemCount = d.itemStart[b + 1] - itemBegin;
  const int ringBegin = d.ring1Start[b];
  const int ringCount = d.ring1Start[b + 1] - ringBegin;
  for (int h = t; h < itemCount; h += TC)
  {
    items[h] = d.items[itemBegin + h];
  }
  for (int h = t; h < ringCount; h += TC)
  {
    ringNb[h] = d.ring1Nb[ringBegin + h];
    ringSelf[h] = d.ring1Self[ringBegin + h];
  }
  const int4 my = d.ownNb[first + t];
  const bool complete = d.complete[first + t] != 0;
  __syncthreads();
  const int stride = cells;
  const int l = t & 31;
  for (int k0 = 0; k0 < layers; k0 += 4 * P)
  {
    float4 v[P];
#pragma unroll
    for (int p = 0; p < P; ++p)
    {
      const float* src = u + (k0 + 4 * p) * stride + first + t;
      v[p].x = src[0];
      v[p].y = src[stride];
      v[p].z = src[2 * stride];
      v[p].w = src[3 * stride];
    }
#pragma unroll
    for (int p = 0; p < P; ++p)
    {
      const float* src = u + (k0 + 4 * p) * stride;
      for (int j = t - l; j < 4 * itemCount; j += TC)
      {
        const int h = (j + l) >> 2;
        float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
        if (j + l < 4 * itemCount)
        {
          a = reinterpret_cast<const float4*>(src + (l & 3) * stride)[items[h]];
        }
        a = transposeQuad(a, l);
        if (j + l < 4 * itemCount)
        {
          raw[p * S + TC + 4 * h + (l & 3)] = a;
        }
      }
      raw[p * S + t] = v[p];
    }
    __syncthreads();
    float4 lv[P];
#pragma unroll
    for (int p = 0; p < P; ++p)
    {
      if constexpr (!Own)
      {
        v[p] = raw[p * S + t];
      }
      lv[p] = laplacianOf<true>(v[p], raw + p * S, my, w);
      lap[p * S + t] = lv[p];
    }
    for (int h = t; h < ringCount; h += TC)
    {
      const int4 r = ringNb[h];
      const int s = ringSelf[h];
#pragma unroll
      for (int p = 0; p < P; ++p)
      {
        lap[p * S + s] = laplacianOf<true>(raw[p * S + s], raw + p * S, r, w);
      }
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < P; ++p)
    {
      float4 o = laplacianOf<true>(lv[p], lap + p * S, my, w);
      if (!complete)
      {
        o = make_float4(fill, fill, fill, fill);
      }
      float* dst = out + (k0 + 4 * p) * stride + first + t;
      dst[0] = o.x;
      dst[stride] = o.y;
      dst[2 * stride] = o.z;
      dst[3 * stride] = o.w;
    }
  }
}

struct Variant
{
  std::string name;
  void (*kernel)(const float*, float*, int, int, DeviceTiles, float, float);
  int tc;
  int gw;
  int planes = 1;
};

template<int TC, int GW, bool Fast, bool Own, bool Spread, int MinBlocks>
Variant variant(const char* name)
{
  return Variant{ name, stagedKernel<TC, GW, Fast, Own, Spread, MinBlocks>, TC, GW };
}

template<int TC, int P, bool Own, int MinBlocks>
Variant planes(const char* name)
{
  return Variant{ name, planeKernel<TC, P, Own, MinBlocks>, TC, 4, P };
}

static std::size_t sharedBytes(const DeviceTiles& d, int planes = 1)
{
  return 2 * planes * sizeof(float4) * d.maxSlots + sizeof(int) * ((d.maxItems + 3) / 4 * 4) +
    sizeof(int4) * d.maxRing1 + sizeof(int) * d.maxRing1;
}

int main(int argc, char** argv)
{
  const int n = 512;
  const int layers = 64;
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 6;
  const int only = argc > 2 ? std::atoi(argv[2]) : -1; // check (and profile) one variant
  const Mesh m = zCurveQuads(n);
  const std::size_t values = static_cast<std::size_t>(m.cells) * layers;
  std::vector<float> u(values);
  std::uint32_t seed = 12345;
  for (auto& x : u)
  {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>((seed >> 8) & 0xffff) / 65536.0f * 2.f - 1.f;
  }
  const float w = 0.25f;
  const float fill = NAN;
  // Reference in double.
  std::vector<double> lap1(values), ref(values);
  for (int k = 0; k < layers; ++k)
  {
    for (int c = 0; c < m.cells; ++c)
    {
      double s = 0;
      const double uc = u[k * static_cast<std::size_t>(m.cells) + c];
      for (int q = 0; q < K; ++q)
      {
        const int nn = m.nb[c * K + q];
        s += nn < 0 ? 0.0 : w * (u[k * static_cast<std::size_t>(m.cells) + nn] - uc);
      }
      lap1[k * static_cast<std::size_t>(m.cells) + c] = s;
    }
  }
  std::vector<char> ok(m.cells);
  for (int c = 0; c < m.cells; ++c)
  {
    bool good = true;
    for (int q = 0; q < K && good; ++q)
    {
      const int nn = m.nb[c * K + q];
      good = nn >= 0;
      for (int r = 0; r < K && good; ++r)
      {
        good = m.nb[nn * K + r] >= 0;
      }
    }
    ok[c] = good;
  }
  for (int k = 0; k < layers; ++k)
  {
    for (int c = 0; c < m.cells; ++c)
    {
      const std::size_t i = k * static_cast<std::size_t>(m.cells) + c;
      double s = 0;
      for (int q = 0; q < K && ok[c]; ++q)
      {
        s += w * (lap1[k * static_cast<std::size_t>(m.cells) + m.nb[c * K + q]] - lap1[i]);
      }
      ref[i] = ok[c] ? s : NAN;
    }
  }
  float *du = nullptr, *dout = nullptr;
  CHECK(cudaMalloc(&du, values * sizeof(float)));
  CHECK(cudaMalloc(&dout, values * sizeof(float)));
  CHECK(cudaMemcpy(du, u.data(), values * sizeof(float), cudaMemcpyHostToDevice));

  std::vector<Variant> variants = {
    variant<256, 1, false, false, false, 8>("tc256 gw1 exact regs-off 8 (StencilCore-like)"),
    variant<256, 1, false, true, false, 6>("tc256 gw1 exact own-regs 6"),
    variant<256, 1, true, true, false, 8>("tc256 gw1 fast own-regs 8"),
    variant<256, 1, true, true, true, 8>("tc256 gw1 fast own-regs spread 8"),
    variant<256, 4, false, true, false, 6>("tc256 gw4 exact own-regs 6"),
    variant<256, 4, true, true, false, 8>("tc256 gw4 fast own-regs 8"),
    variant<256, 4, true, false, false, 8>("tc256 gw4 fast regs-off 8"),
    variant<512, 1, true, true, true, 4>("tc512 gw1 fast own-regs spread 4"),
    variant<512, 4, true, true, false, 4>("tc512 gw4 fast own-regs 4"),
    variant<512, 4, false, true, false, 3>("tc512 gw4 exact own-regs 3"),
    planes<256, 2, true, 8>("tc256 gw4 fast own-regs 8 layers/step 8"),
    planes<256, 2, true, 6>("tc256 gw4 fast own-regs 8 layers/step 6"),
    planes<256, 2, false, 8>("tc256 gw4 fast raw-reread 8 layers/step 8"),
    planes<512, 2, true, 4>("tc512 gw4 fast own-regs 8 layers/step 4"),
    planes<512, 2, true, 3>("tc512 gw4 fast own-regs 8 layers/step 3"),
    planes<256, 1, false, 8>("tc256 gw4 fast raw-reread 4 layers/step 8"),
  };

  std::vector<Tiles> hostTiles;
  std::vector<DeviceTiles> devTiles;
  for (int tc : { 256, 512 })
  {
    for (int gw : { 1, 4 })
    {
      hostTiles.push_back(buildTiles(m, tc, gw));
      devTiles.push_back(toDevice(hostTiles.back()));
      const Tiles& T = hostTiles.back();
      std::printf("tiles %d gw %d: max items %d, max ring-1 %d, max slots %d, mean items %.1f, "
                  "shared %zu B\n",
        tc,
        gw,
        T.maxItems,
        T.maxRing1,
        T.maxSlots,
        static_cast<double>(T.items.size()) / (m.cells / tc),
        sharedBytes(devTiles.back()));
    }
  }
  auto tilesOf = [&](const Variant& v) -> const DeviceTiles&
  { return devTiles[(v.tc == 512 ? 2 : 0) + (v.gw == 4 ? 1 : 0)]; };
  auto launch = [&](const Variant& v)
  {
    const DeviceTiles& d = tilesOf(v);
    v.kernel<<<m.cells / v.tc, v.tc, sharedBytes(d, v.planes)>>>(
      du, dout, m.cells, layers, d, w, fill);
  };
  // Check every variant on every value.
  std::vector<float> got(values);
  for (std::size_t vi = 0; vi < variants.size(); ++vi)
  {
    const Variant& v = variants[vi];
    if (only >= 0 && static_cast<int>(vi) != only)
    {
      continue;
    }
    CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));
    CHECK(cudaMemset(dout, 0xff, values * sizeof(float)));
    launch(v);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got.data(), dout, values * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < values; ++i)
    {
      if (std::isnan(ref[i]))
      {
        bad += std::isnan(got[i]) ? 0 : 1;
        continue;
      }
      const double e = std::fabs(got[i] - ref[i]);
      worst = std::max(worst, e);
      bad += (std::isnan(got[i]) || e > 1e-5) ? 1 : 0;
    }
    std::printf("check %-48s max |error| %.3g, wrong values %zu -> %s\n",
      v.name.c_str(),
      worst,
      bad,
      bad == 0 ? "ok" : "FAILED");
  }
  if (repeats <= 0)
  {
    return 0;
  }
  // Time: median of 20 launches per repeat, rotating order.
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<std::vector<double>> medians(variants.size());
  for (int r = 0; r < repeats; ++r)
  {
    for (std::size_t j = 0; j < variants.size(); ++j)
    {
      const std::size_t v = (j + r) % variants.size();
      std::vector<double> times;
      launch(variants[v]);
      for (int i = 0; i < 20; ++i)
      {
        CHECK(cudaEventRecord(e0));
        launch(variants[v]);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        times.push_back(ms * 1000.0);
      }
      std::sort(times.begin(), times.end());
      medians[v].push_back(times[times.size() / 2]);
    }
  }
  std::printf("\n| variant | median of %d repeats (us) | range |\n|---|---|---|\n", repeats);
  for (std::size_t v = 0; v < variants.size(); ++v)
  {
    auto s = medians[v];
    std::sort(s.begin(), s.end());
    std::printf("| %s | %.1f | %.1f-%.1f |\n",
      variants[v].name.c_str(),
      s[s.size() / 2],
      s.front(),
      s.back());
  }
  return 0;
}
