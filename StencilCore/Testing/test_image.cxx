// Images: analytic Laplacian / laplap of polynomials in the interior, the boundary modes against
// a brute-force reference, 2-D images, horizontal operators, hyperdiffusion.
#include "common.h"
#include "reference.h"

using stencil::Backend;
using stencil::BoundaryMode;
using stencil::Operator;

namespace
{
class ImageTest : public ::testing::TestWithParam<Backend>
{
};

template<typename T>
std::vector<T> sample(const stencil::ImageGrid& g, double (*f)(double, double, double))
{
  std::vector<T> u(g.size());
  for (std::size_t k = 0; k < g.dims[2]; ++k)
    for (std::size_t j = 0; j < g.dims[1]; ++j)
      for (std::size_t i = 0; i < g.dims[0]; ++i)
        u[i + g.dims[0] * (j + g.dims[1] * k)] = static_cast<T>(
          f((i - 5.0) * g.spacing[0], (j - 4.0) * g.spacing[1], (k - 3.0) * g.spacing[2]));
  return u;
}

double quadratic(double x, double y, double z)
{
  return 1.5 * x * x - 0.5 * y * y + 2 * z * z + 0.75 * x * y - 1.25 * y * z + 3 * x - z + 2;
}
// Laplacian 3 - 1 + 4 = 6, horizontal part 2; laplap 0.
double quartic(double x, double y, double z)
{
  return x * x * x * x + 0.5 * y * y * y * y + 0.25 * z * z * z * z + x * x * y * y +
    y * y * z * z - 2 * x * y * z + x * x;
}
// laplap = 24 + 12 + 6 + 2*(4 [x^2 y^2] + 4 [y^2 z^2]) = 58; horizontal laplap = 24 + 12 + 2*4
// = 44.

template<typename T>
void checkInterior(const stencil::ImageGrid& g,
  const std::vector<T>& out,
  int reach,
  bool horizontal,
  double expected,
  double tol)
{
  std::size_t checked = 0;
  for (std::size_t k = 0; k < g.dims[2]; ++k)
    for (std::size_t j = 0; j < g.dims[1]; ++j)
      for (std::size_t i = 0; i < g.dims[0]; ++i)
      {
        const std::size_t p[3] = { i, j, k };
        bool interior = true;
        for (int a = 0; a < 3; ++a)
        {
          const bool active = g.dims[a] > 1 && !(horizontal && a == 2);
          if (active && (p[a] < (std::size_t)reach || p[a] + reach >= g.dims[a]))
            interior = false;
        }
        const T v = out[i + g.dims[0] * (j + g.dims[1] * k)];
        if (interior)
        {
          ASSERT_NEAR(static_cast<double>(v), expected, tol) << "at " << i << "," << j << "," << k;
          ++checked;
        }
        else
        {
          ASSERT_TRUE(std::isnan(static_cast<double>(v)))
            << "boundary " << i << "," << j << "," << k;
        }
      }
  EXPECT_GT(checked, 0u);
}

template<typename T>
void polynomialCase(Backend backend, double eps)
{
  stencil::ImageGrid g;
  g.dims = { 11, 9, 8 };
  g.spacing = { 0.5, 0.25, 0.4 };
  const auto options = optionsFor(backend);
  stencil::StencilOptions s;
  std::vector<T> out(g.size());
  stencil::ExecutionReport report;
  // Round-off bound: values up to ~10, differences amplified by sum(4/h^2) = 4*(4+16+6.25) = 105
  // per Laplacian; tolerance = 64 eps |u| times that factor (once or squared).
  const double lapFactor = 4 * (4 + 16 + 6.25);
  {
    const auto u = sample<T>(g, quadratic);
    s.op = Operator::Laplacian;
    ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options, &report).ok());
    EXPECT_EQ(report.backendUsed, backend);
    checkInterior(g, out, 1, false, 6.0, 64 * eps * 10 * lapFactor);
    s.op = Operator::HorizontalLaplacian;
    ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options).ok());
    checkInterior(g, out, 1, true, 2.0, 64 * eps * 10 * lapFactor);
    s.op = Operator::Laplap;
    ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options).ok());
    checkInterior(g, out, 2, false, 0.0, 64 * eps * 10 * lapFactor * lapFactor);
  }
  {
    const auto u = sample<T>(g, quartic);
    double top = 0;
    for (T v : u)
      top = std::max(top, std::fabs(static_cast<double>(v)));
    s.op = Operator::Laplap;
    ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options).ok());
    checkInterior(g, out, 2, false, 58.0, 64 * eps * top * lapFactor * lapFactor);
    s.op = Operator::HorizontalLaplap;
    ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options).ok());
    checkInterior(g, out, 2, true, 44.0, 64 * eps * top * lapFactor * lapFactor);
  }
}

TEST_P(ImageTest, PolynomialsDouble)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  polynomialCase<double>(GetParam(), 2.2e-16);
}

TEST_P(ImageTest, PolynomialsFloat)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  polynomialCase<float>(GetParam(), 1.2e-7);
}

/// The quartic's Laplacian is not exact: the second difference of x^4 is 12 x^2 + 2 h^2. The
/// truncation term is known analytically, so the interior must match it to round-off.
TEST_P(ImageTest, QuarticLaplacianTruncation)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  stencil::ImageGrid g;
  g.dims = { 12, 10, 1 };
  g.spacing = { 0.3, 0.2, 1 };
  std::vector<double> u(g.size());
  for (std::size_t j = 0; j < 10; ++j)
    for (std::size_t i = 0; i < 12; ++i)
    {
      const double x = i * 0.3 - 1;
      const double y = j * 0.2 - 1;
      u[i + 12 * j] = x * x * x * x + y * y * y * y;
    }
  std::vector<double> out(u.size());
  stencil::StencilOptions s;
  ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, optionsFor(GetParam())).ok());
  for (std::size_t j = 1; j + 1 < 10; ++j)
    for (std::size_t i = 1; i + 1 < 12; ++i)
    {
      const double x = i * 0.3 - 1;
      const double y = j * 0.2 - 1;
      const double expected = 12 * x * x + 2 * 0.09 + 12 * y * y + 2 * 0.04;
      EXPECT_NEAR(out[i + 12 * j], expected, 1e-11);
    }
}

/// Every operator and boundary mode against Laplacian-applied-twice through a temporary.
TEST_P(ImageTest, MatchesBruteForceEverywhere)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  for (int dims2 : { 1, 7 })
  {
    stencil::ImageGrid g;
    g.dims = { 9, 8, (std::size_t)dims2 };
    g.spacing = { 0.7, 1.3, 0.9 };
    std::vector<double> u(g.size());
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = std::sin(0.37 * i) + 0.01 * (i % 13);
    for (Operator op : { Operator::Laplacian,
           Operator::Laplap,
           Operator::HorizontalLaplacian,
           Operator::HorizontalLaplap })
      for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
      {
        const bool horizontal =
          op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
        const bool twice = op == Operator::Laplap || op == Operator::HorizontalLaplap;
        auto expected = reference::imageLaplacian(u, g, horizontal, mode == BoundaryMode::ZeroFlux);
        if (twice)
          expected =
            reference::imageLaplacian(expected, g, horizontal, mode == BoundaryMode::ZeroFlux);
        stencil::StencilOptions s;
        s.op = op;
        s.boundary = mode;
        std::vector<double> out(u.size());
        ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, optionsFor(GetParam())).ok());
        EXPECT_TRUE(closeWithNaN(out, expected, 1e-12 * std::max(1.0, maxAbs(expected))))
          << stencil::toString(op) << " " << stencil::toString(mode) << " nz=" << dims2;
      }
  }
}

/// Images large enough that every GPU kernel variant has interior strips, partial strips at the
/// end of a column and boundary blocks: each kernel and rows-per-thread choice against the
/// brute-force reference (odd sizes so that no strip or block divides them).
TEST_P(ImageTest, EveryImageKernelMatchesBruteForce)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  struct Choice
  {
    stencil::ImageKernel kernel;
    int columns;
    int rows;
    int blockRows;
    bool tight = false;
    int gridBlocks = 0;
    bool streaming = false;
  };
  std::vector<Choice> choices;
  for (int columns : { 0, 1, 2, 4 })
    for (int rows : { 0, 1, 2, 4, 8 })
      choices.push_back({ stencil::ImageKernel::RowStrips, columns, rows, 0 });
  // Blocks of 1, 2 and 8 rows of 32 threads (the default is 4) with the default strips.
  for (int blockRows : { 1, 2, 8 })
    choices.push_back({ stencil::ImageKernel::RowStrips, 0, 0, blockRows });
  // The register-capped default strips (2 columns, default rows; 4 rows for every operator).
  choices.push_back({ stencil::ImageKernel::RowStrips, 2, 0, 0, true });
  choices.push_back({ stencil::ImageKernel::RowStrips, 2, 4, 8, true });
  // Blocks that loop over the strip blocks: 7 of them (every block loops), the resident count,
  // and 7 capped ones.
  choices.push_back({ stencil::ImageKernel::RowStrips, 0, 0, 0, false, 7 });
  choices.push_back({ stencil::ImageKernel::RowStrips, 0, 0, 0, false, -1 });
  choices.push_back({ stencil::ImageKernel::RowStrips, 2, 2, 0, true, 7 });
  // Streaming stores: the default strips, 2 rows, 4 columns (ignored there), and with the cap
  // (ignored too).
  for (int rows : { 0, 2 })
    choices.push_back({ stencil::ImageKernel::RowStrips, 2, rows, 0, false, 0, true });
  choices.push_back({ stencil::ImageKernel::RowStrips, 4, 0, 0, false, 0, true });
  choices.push_back({ stencil::ImageKernel::RowStrips, 2, 0, 0, true, 0, true });
  choices.push_back({ stencil::ImageKernel::LayerSlices, 0, 0, 0 });
  // Row lengths divisible by 4, by 2 only, and odd (wider vectors fall back to narrower ones).
  for (std::size_t nx : { std::size_t(72), std::size_t(70), std::size_t(69) })
    for (std::size_t nz : { std::size_t(1), std::size_t(11) })
    {
      stencil::ImageGrid g;
      g.dims = { nx, 45, nz };
      g.spacing = { 0.7, 1.3, 0.9 };
      std::vector<double> u(g.size());
      for (std::size_t i = 0; i < u.size(); ++i)
        u[i] = std::sin(0.37 * i) + 0.01 * (i % 13) + 1e-3 * (i % 70) * (i % 70);
      for (Operator op : { Operator::Laplacian,
             Operator::Laplap,
             Operator::HorizontalLaplacian,
             Operator::HorizontalLaplap })
        for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
        {
          const bool horizontal =
            op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
          const bool twice = op == Operator::Laplap || op == Operator::HorizontalLaplap;
          const bool zeroFlux = mode == BoundaryMode::ZeroFlux;
          auto expected = reference::imageLaplacian(u, g, horizontal, zeroFlux);
          if (twice)
            expected = reference::imageLaplacian(expected, g, horizontal, zeroFlux);
          const std::vector<float> uFloat(u.begin(), u.end());
          for (const Choice& choice : choices)
          {
            stencil::StencilOptions s;
            s.op = op;
            s.boundary = mode;
            auto options = optionsFor(GetParam());
            options.tuning.imageKernel = choice.kernel;
            options.tuning.imageRowsPerThread = choice.rows;
            options.tuning.imageColumnsPerThread = choice.columns;
            options.tuning.imageBlockRows = choice.blockRows;
            options.tuning.imageTightRegisters = choice.tight;
            options.tuning.imageGridBlocks = choice.gridBlocks;
            options.tuning.imageStreamingStores = choice.streaming;
            std::vector<double> out(u.size(), -1.0);
            ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options).ok());
            EXPECT_TRUE(closeWithNaN(out, expected, 1e-12 * std::max(1.0, maxAbs(expected))))
              << stencil::toString(op) << " " << stencil::toString(mode) << " nz=" << nz << " "
              << stencil::toString(choice.kernel) << " columns=" << choice.columns
              << " rows=" << choice.rows << " block rows=" << choice.blockRows
              << " grid blocks=" << choice.gridBlocks << " nx=" << nx;
            // Float: 64 eps |u| (input rounding and arithmetic) amplified by the operator (sum
            // 4 / h^2, squared for the laplap), as in the polynomial tests.
            const double lap = 4 * (1 / 0.49 + 1 / 1.69 + 1 / 0.81);
            const double amplification = twice ? lap * lap : lap;
            std::vector<float> outFloat(u.size(), -1.0f);
            stencil::ExecutionReport report;
            ASSERT_TRUE(
              stencil::apply(g, uFloat.data(), outFloat.data(), s, options, &report).ok());
            EXPECT_TRUE(closeWithNaN(outFloat, expected, 64 * 1.2e-7 * maxAbs(u) * amplification))
              << "float " << stencil::toString(op) << " " << stencil::toString(mode) << " nz=" << nz
              << " columns=" << choice.columns << " rows=" << choice.rows
              << " block rows=" << choice.blockRows << " nx=" << nx;
            // With every strip shape option at its default, the 2-D laplap on rows of whole
            // float4 vectors runs the warp rows instead of the strips.
            const bool defaultShape = choice.columns == 0 && choice.rows == 0 &&
              choice.blockRows == 0 && !choice.tight && choice.gridBlocks == 0 && !choice.streaming;
            const bool warpRows = choice.kernel == stencil::ImageKernel::RowStrips &&
              defaultShape && twice && (horizontal || nz == 1) && nx % 4 == 0;
            if (GetParam() == Backend::CUDA && warpRows)
            {
              EXPECT_EQ(report.imageKernel.rfind("warp rows, ", 0), 0u) << report.imageKernel;
            }
            else if (GetParam() == Backend::CUDA &&
              choice.kernel == stencil::ImageKernel::RowStrips)
            {
              // The default is 2 columns; a count that does not divide nx is halved.
              int columns = choice.columns > 0 ? choice.columns : 2;
              while (columns > 1 && nx % columns != 0)
                columns /= 2;
              EXPECT_EQ(
                report.imageKernel.rfind("row strips, " + std::to_string(columns) + " column", 0),
                0u)
                << report.imageKernel << " requested " << choice.columns << " nx=" << nx;
              const int blockRows = choice.blockRows > 0 ? choice.blockRows : 4;
              EXPECT_NE(report.imageKernel.find(
                          ", " + std::to_string(blockRows) + " x 32 threads per block"),
                std::string::npos)
                << report.imageKernel;
              const bool capped = choice.tight && columns == 2;
              EXPECT_EQ(report.imageKernel.find(", 40 registers") != std::string::npos, capped)
                << report.imageKernel;
              // Looping blocks exist for 2 columns (with the default rows or 2 rows).
              EXPECT_EQ(report.imageKernel.find(", looping blocks") != std::string::npos,
                choice.gridBlocks != 0 && columns == 2)
                << report.imageKernel;
              EXPECT_EQ(report.imageKernel.find(", streaming stores") != std::string::npos,
                choice.streaming && columns == 2 && !choice.tight && choice.gridBlocks == 0 &&
                  choice.rows != 1 && choice.rows != 8)
                << report.imageKernel;
            }
          }
        }
    }
}

/// Streaming stores change only where the output is cached: every value of the default strips
/// (both precisions, laplap and Laplacian, interior and boundary) is bit-identical to the
/// default path's, and both are checked against the brute-force reference.
TEST_P(ImageTest, StreamingStoresGiveTheDefaultValues)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  stencil::ImageGrid g;
  g.dims = { 130, 37, 9 };
  g.spacing = { 0.8, 1.1, 0.6 };
  // Values that differ at every point, so that a value stored in a wrong place shows.
  const std::vector<double> u = sample<double>(
    g, [](double x, double y, double z) { return std::cos(1.3 * x + 0.7 * y) + 0.05 * x * z; });
  const std::vector<float> uFloat(u.begin(), u.end());
  for (Operator op : { Operator::HorizontalLaplap, Operator::Laplap, Operator::Laplacian })
  {
    stencil::StencilOptions s;
    s.op = op;
    s.boundary = BoundaryMode::ZeroFlux;
    const bool horizontal = op == Operator::HorizontalLaplap;
    auto expected = reference::imageLaplacian(u, g, horizontal, true);
    if (op != Operator::Laplacian)
      expected = reference::imageLaplacian(expected, g, horizontal, true);
    auto options = optionsFor(GetParam());
    // The default strips (the 2-D laplap's default is the warp rows, which have no streaming
    // variant).
    options.tuning.imageWarpRows = -1;
    std::vector<double> plain(u.size(), -1.0);
    std::vector<float> plainFloat(u.size(), -1.0f);
    ASSERT_TRUE(stencil::apply(g, u.data(), plain.data(), s, options).ok());
    ASSERT_TRUE(stencil::apply(g, uFloat.data(), plainFloat.data(), s, options).ok());
    options.tuning.imageStreamingStores = true;
    std::vector<double> streamed(u.size(), -2.0);
    std::vector<float> streamedFloat(u.size(), -2.0f);
    stencil::ExecutionReport report;
    ASSERT_TRUE(stencil::apply(g, u.data(), streamed.data(), s, options, &report).ok());
    ASSERT_TRUE(stencil::apply(g, uFloat.data(), streamedFloat.data(), s, options).ok());
    EXPECT_EQ(streamed, plain) << stencil::toString(op);
    EXPECT_EQ(streamedFloat, plainFloat) << stencil::toString(op);
    EXPECT_TRUE(closeWithNaN(streamed, expected, 1e-12 * std::max(1.0, maxAbs(expected))))
      << stencil::toString(op);
    if (GetParam() == Backend::CUDA)
    {
      EXPECT_NE(report.imageKernel.find(", streaming stores"), std::string::npos)
        << report.imageKernel;
    }
  }
}

/// Row tiles (2-D operators on rows of whole 16-byte vectors) against the brute-force reference
/// and against the default strips (the same expressions; equal to round-off), on sizes that no
/// band, span or vector divides, for the tile shapes the options allow; where the tiles do not
/// apply (3-D operators, rows of partial vectors) the strips run and the report says so.
TEST_P(ImageTest, RowTilesMatchTheStripsAndTheReference)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  struct Shape
  {
    int threads;
    int rows;
  };
  const Shape shapes[] = { { 0, 0 }, { 32, 1 }, { 32, 7 }, { 256, 0 }, { 128, 1000 } };
  // Rows of 4 floats' multiples (2 bands of 32 x 4 columns and a partial one), of 2 doubles'
  // only (floats fall back), odd (both fall back), two float vectors (every column of the laplap
  // but the middle four in the frame); 45, 7 and 5 rows (one laplap row off the frame).
  const std::array<std::size_t, 3> sizes[] = {
    { 264, 45, 1 }, { 72, 45, 5 }, { 70, 5, 6 }, { 69, 45, 1 }, { 8, 5, 1 }, { 12, 7, 11 }
  };
  for (const auto& dims : sizes)
  {
    stencil::ImageGrid g;
    g.dims = dims;
    g.spacing = { 0.7, 1.3, 0.9 };
    std::vector<double> u(g.size());
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = std::sin(0.37 * i) + 0.01 * (i % 13) + 1e-3 * (i % 70) * (i % 70);
    const std::vector<float> uFloat(u.begin(), u.end());
    for (Operator op : { Operator::HorizontalLaplap,
           Operator::HorizontalLaplacian,
           Operator::Laplap,
           Operator::Laplacian })
      for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
      {
        const bool horizontal =
          op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
        const bool twice = op == Operator::Laplap || op == Operator::HorizontalLaplap;
        const bool zeroFlux = mode == BoundaryMode::ZeroFlux;
        auto expected = reference::imageLaplacian(u, g, horizontal, zeroFlux);
        if (twice)
          expected = reference::imageLaplacian(expected, g, horizontal, zeroFlux);
        stencil::StencilOptions s;
        s.op = op;
        s.boundary = mode;
        auto options = optionsFor(GetParam());
        std::vector<double> strips(u.size());
        std::vector<float> stripsFloat(u.size());
        ASSERT_TRUE(stencil::apply(g, u.data(), strips.data(), s, options).ok());
        ASSERT_TRUE(stencil::apply(g, uFloat.data(), stripsFloat.data(), s, options).ok());
        const std::vector<double> stripsWide(stripsFloat.begin(), stripsFloat.end());
        const double lap = 4 * (1 / 0.49 + 1 / 1.69 + 1 / 0.81);
        const double amplification = twice ? lap * lap : lap;
        // Float: 64 eps |u| times the operator's amplification, as in the other image tests;
        // against the strips, whose round-off differs only by contraction, 8 eps.
        const double floatTol = 64 * 1.2e-7 * maxAbs(u) * amplification;
        const double floatStripTol = 8 * 1.2e-7 * maxAbs(u) * amplification;
        const double doubleTol = 1e-12 * std::max(1.0, maxAbs(expected));
        const bool planar = horizontal || dims[2] == 1;
        for (const Shape& shape : shapes)
        {
          options.tuning.imageRowTiles = true;
          options.tuning.imageTileThreads = shape.threads;
          options.tuning.imageTileRows = shape.rows;
          std::vector<double> out(u.size(), -12345.0);
          std::vector<float> outFloat(u.size(), -12345.0f);
          stencil::ExecutionReport report;
          stencil::ExecutionReport reportFloat;
          ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options, &report).ok());
          ASSERT_TRUE(
            stencil::apply(g, uFloat.data(), outFloat.data(), s, options, &reportFloat).ok());
          const std::string what = std::string(stencil::toString(op)) + " " +
            stencil::toString(mode) + " " + std::to_string(dims[0]) + "x" +
            std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + " threads " +
            std::to_string(shape.threads) + " rows " + std::to_string(shape.rows);
          EXPECT_TRUE(closeWithNaN(out, expected, doubleTol)) << what << " " << report.imageKernel;
          EXPECT_TRUE(closeWithNaN(out, strips, doubleTol)) << what;
          EXPECT_TRUE(closeWithNaN(outFloat, expected, floatTol))
            << "float " << what << " " << reportFloat.imageKernel;
          EXPECT_TRUE(closeWithNaN(outFloat, stripsWide, floatStripTol)) << "float " << what;
          if (GetParam() == Backend::CUDA)
          {
            const bool tilesDouble = planar && dims[0] % 2 == 0;
            const bool tilesFloat = planar && dims[0] % 4 == 0;
            EXPECT_EQ(report.imageKernel.rfind("row tiles, ", 0) == 0, tilesDouble)
              << what << " " << report.imageKernel;
            EXPECT_EQ(reportFloat.imageKernel.rfind("row tiles, ", 0) == 0, tilesFloat)
              << what << " " << reportFloat.imageKernel;
            if (tilesFloat)
            {
              const int threads = shape.threads > 0 ? shape.threads : 64;
              EXPECT_EQ(reportFloat.imageKernel.rfind(
                          "row tiles, " + std::to_string(threads) + " threads x 4 columns, ", 0),
                0u)
                << reportFloat.imageKernel;
            }
          }
        }
      }
  }
}

/// The prefetch that runs for the warp-row options (as compiled: 8 for 4 rows; 4 or 12 for 8
/// rows; 4 or 6 for 16 rows; 0 picks 12 for 8 rows of floats; any other request gets the
/// first).
int warpPrefetchFor(int rows, int prefetch, bool isFloat)
{
  if (rows == 4)
    return 8;
  if (rows == 16)
    return prefetch == 6 ? 6 : 4;
  return prefetch == 12 || (prefetch == 0 && isFloat) ? 12 : 4;
}

/// Warp rows (the 2-D laplap's default on rows of whole 16-byte vectors) against the
/// brute-force reference and against the strips (imageWarpRows -1: the same interior
/// expressions, the frame columns in imageValue's nested order; equal to round-off), for every
/// compiled shape, a prefetch that is not compiled and each form of the frame
/// (imageWarpFrame), on rows with a partial last warp (264
/// floats: 66 vectors, 3 warps, the last with 2 lanes; 260 floats: one lane), partial spans (45
/// and 37 rows), several layers, one interior row (5 rows), rows of two float vectors (8) and of
/// three (12), and rows that are not whole vectors (70 floats: doubles only; 69: neither), in both
/// boundary modes. The 3-D laplap and the Laplacians keep the strips.
TEST_P(ImageTest, WarpRowsMatchTheStripsAndTheReference)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  struct Shape
  {
    int rows;
    int prefetch;
    int frame = 0; // imageWarpFrame
  };
  const Shape shapes[] = { { 0, 0 },
    { 4, 0 },
    { 8, 4 },
    { 8, 12 },
    { 16, 4 },
    { 16, 6 },
    { 16, 5 },
    { 0, 0, 1 },
    { 16, 4, 1 },
    { 0, 0, 2 },
    { 16, 4, 2 },
    { 4, 0, 3 } };
  // Layers: 1, or at least 5 (the 3-D laplap's minimum).
  const std::array<std::size_t, 3> sizes[] = { { 264, 45, 5 },
    { 260, 37, 6 },
    { 72, 45, 1 },
    { 70, 5, 5 },
    { 69, 45, 1 },
    { 8, 5, 1 },
    { 12, 7, 5 } };
  for (const auto& dims : sizes)
  {
    stencil::ImageGrid g;
    g.dims = dims;
    g.spacing = { 0.7, 1.3, 0.9 };
    std::vector<double> u(g.size());
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = std::sin(0.37 * i) + 0.01 * (i % 13) + 1e-3 * (i % 70) * (i % 70);
    const std::vector<float> uFloat(u.begin(), u.end());
    for (Operator op :
      { Operator::HorizontalLaplap, Operator::Laplap, Operator::HorizontalLaplacian })
      for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
      {
        const bool horizontal =
          op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
        const bool twice = op == Operator::Laplap || op == Operator::HorizontalLaplap;
        const bool zeroFlux = mode == BoundaryMode::ZeroFlux;
        auto expected = reference::imageLaplacian(u, g, horizontal, zeroFlux);
        if (twice)
          expected = reference::imageLaplacian(expected, g, horizontal, zeroFlux);
        stencil::StencilOptions s;
        s.op = op;
        s.boundary = mode;
        auto options = optionsFor(GetParam());
        options.tuning.imageWarpRows = -1;
        std::vector<double> strips(u.size());
        std::vector<float> stripsFloat(u.size());
        stencil::ExecutionReport stripReport;
        ASSERT_TRUE(stencil::apply(g, u.data(), strips.data(), s, options, &stripReport).ok());
        ASSERT_TRUE(stencil::apply(g, uFloat.data(), stripsFloat.data(), s, options).ok());
        const std::vector<double> stripsWide(stripsFloat.begin(), stripsFloat.end());
        const double lap = 4 * (1 / 0.49 + 1 / 1.69 + 1 / 0.81);
        const double amplification = twice ? lap * lap : lap;
        // Float: 64 eps |u| times the operator's amplification, as in the other image tests;
        // against the strips, whose round-off differs only by contraction, 8 eps.
        const double floatTol = 64 * 1.2e-7 * maxAbs(u) * amplification;
        const double floatStripTol = 8 * 1.2e-7 * maxAbs(u) * amplification;
        const double doubleTol = 1e-12 * std::max(1.0, maxAbs(expected));
        const bool planarLaplap = twice && (horizontal || dims[2] == 1);
        const bool rowsFit = dims[0] >= 8 && dims[1] >= 5;
        if (GetParam() == Backend::CUDA)
        {
          EXPECT_EQ(stripReport.imageKernel.rfind("row strips, ", 0), 0u)
            << stripReport.imageKernel;
        }
        for (const Shape& shape : shapes)
        {
          options.tuning.imageWarpRows = shape.rows;
          options.tuning.imageWarpPrefetch = shape.prefetch;
          options.tuning.imageWarpFrame = shape.frame;
          std::vector<double> out(u.size(), -12345.0);
          std::vector<float> outFloat(u.size(), -12345.0f);
          stencil::ExecutionReport report;
          stencil::ExecutionReport reportFloat;
          ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options, &report).ok());
          ASSERT_TRUE(
            stencil::apply(g, uFloat.data(), outFloat.data(), s, options, &reportFloat).ok());
          const std::string what = std::string(stencil::toString(op)) + " " +
            stencil::toString(mode) + " " + std::to_string(dims[0]) + "x" +
            std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + " warp rows " +
            std::to_string(shape.rows) + " prefetch " + std::to_string(shape.prefetch) + " frame " +
            std::to_string(shape.frame);
          EXPECT_TRUE(closeWithNaN(out, expected, doubleTol)) << what << " " << report.imageKernel;
          EXPECT_TRUE(closeWithNaN(out, strips, doubleTol)) << what;
          EXPECT_TRUE(closeWithNaN(outFloat, expected, floatTol))
            << "float " << what << " " << reportFloat.imageKernel;
          EXPECT_TRUE(closeWithNaN(outFloat, stripsWide, floatStripTol)) << "float " << what;
          if (GetParam() == Backend::CUDA)
          {
            // The warp rows are the default in float only (the strips measured faster in
            // double); asked for by rows, they run in both precisions.
            const bool warpDouble = planarLaplap && rowsFit && dims[0] % 2 == 0 && shape.rows > 0;
            const bool warpFloat = planarLaplap && rowsFit && dims[0] % 4 == 0;
            const int rows = shape.rows > 0 ? shape.rows : 8;
            auto name = [&](bool isFloat)
            {
              return "warp rows, " + std::to_string(rows) + " rows per warp, " +
                std::to_string(warpPrefetchFor(rows, shape.prefetch, isFloat)) +
                " rows in flight, ";
            };
            EXPECT_EQ(report.imageKernel.rfind(warpDouble ? name(false) : "row strips, ", 0), 0u)
              << what << " " << report.imageKernel;
            EXPECT_EQ(reportFloat.imageKernel.rfind(warpFloat ? name(true) : "row strips, ", 0), 0u)
              << what << " " << reportFloat.imageKernel;
            // The report names the frame's form (0: the default, rows and sides in blocks).
            const bool pointsNamed =
              reportFloat.imageKernel.find(", frame in blocks of points") != std::string::npos;
            const bool sidesNamed =
              reportFloat.imageKernel.find(", frame rows and sides in blocks") != std::string::npos;
            EXPECT_EQ(pointsNamed, warpFloat && shape.frame == 2) << reportFloat.imageKernel;
            EXPECT_EQ(sidesNamed, warpFloat && (shape.frame == 0 || shape.frame == 3))
              << reportFloat.imageKernel;
          }
        }
      }
  }
}

/// A small case of every compiled warp-row shape (and each form of the frame) for
/// compute-sanitizer (memcheck, racecheck):
/// a last warp with one lane (260 floats) and with 3 idle lanes (70 doubles), partial spans,
/// both boundary modes, against the brute-force reference.
TEST_P(ImageTest, WarpRowsSmallImages)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  const std::array<std::size_t, 3> sizes[] = { { 260, 9, 2 }, { 70, 6, 1 } };
  // rows, prefetch, frame (imageWarpFrame: 0 the default, 1 frame-row warps, 2 points).
  const int shapes[][3] = { { 4, 0, 0 },
    { 8, 4, 0 },
    { 8, 12, 0 },
    { 16, 4, 0 },
    { 16, 6, 0 },
    { 8, 12, 1 },
    { 16, 4, 1 },
    { 8, 12, 2 } };
  for (const auto& dims : sizes)
  {
    stencil::ImageGrid g;
    g.dims = dims;
    g.spacing = { 0.9, 1.2, 1.0 };
    std::vector<double> u(g.size());
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = std::cos(0.21 * i) + 1e-3 * (i % 37) * (i % 37);
    const std::vector<float> uFloat(u.begin(), u.end());
    for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
    {
      const bool zeroFlux = mode == BoundaryMode::ZeroFlux;
      const auto expected = reference::imageLaplacian(
        reference::imageLaplacian(u, g, true, zeroFlux), g, true, zeroFlux);
      stencil::StencilOptions s;
      s.op = Operator::HorizontalLaplap;
      s.boundary = mode;
      const double lap = 4 * (1 / 0.81 + 1 / 1.44);
      for (const auto& shape : shapes)
      {
        auto options = optionsFor(GetParam());
        options.tuning.imageWarpRows = shape[0];
        options.tuning.imageWarpPrefetch = shape[1];
        options.tuning.imageWarpFrame = shape[2];
        std::vector<double> out(u.size(), -12345.0);
        std::vector<float> outFloat(u.size(), -12345.0f);
        ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options).ok());
        ASSERT_TRUE(stencil::apply(g, uFloat.data(), outFloat.data(), s, options).ok());
        EXPECT_TRUE(closeWithNaN(out, expected, 1e-12 * std::max(1.0, maxAbs(expected))))
          << dims[0] << " rows " << shape[0] << " prefetch " << shape[1];
        EXPECT_TRUE(closeWithNaN(outFloat, expected, 64 * 1.2e-7 * maxAbs(u) * lap * lap))
          << "float " << dims[0] << " rows " << shape[0] << " prefetch " << shape[1];
      }
    }
  }
}

/// Where the frame's blocks or warps go in the launch (imageFramePlacement: first,
/// spread among the interior, last; 0 the default: spread, first for the 3-D laplap) for the strips
/// (2-D and 3-D laplap, the Laplacian, 1 and 2 columns per thread) and the warp rows (each form of
/// their frame), against the brute-force reference, on images with few and many frame blocks,
/// partial warps and spans, in both boundary modes. Small enough for compute-sanitizer.
TEST_P(ImageTest, FramePlacementsMatchTheReference)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  struct Kernel
  {
    int warpRows;
    int frame; // imageWarpFrame
    int columns;
  };
  // The strips (2 and 1 columns), the default warp rows and those with the frame-row warps
  // and in point blocks, and 16-row walks with the default frame.
  const Kernel kernels[] = {
    { -1, 0, 0 }, { -1, 0, 1 }, { 0, 0, 0 }, { 0, 1, 0 }, { 0, 2, 0 }, { 16, 0, 0 }
  };
  const std::array<std::size_t, 3> sizes[] = { { 264, 45, 5 }, { 70, 6, 5 }, { 12, 7, 1 } };
  for (const auto& dims : sizes)
  {
    stencil::ImageGrid g;
    g.dims = dims;
    g.spacing = { 0.8, 1.1, 0.9 };
    std::vector<double> u(g.size());
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = std::sin(0.29 * i) + 1e-3 * (i % 41) * (i % 41);
    const std::vector<float> uFloat(u.begin(), u.end());
    for (Operator op :
      { Operator::HorizontalLaplap, Operator::Laplap, Operator::HorizontalLaplacian })
      for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
      {
        const bool horizontal =
          op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
        const bool twice = op == Operator::Laplap || op == Operator::HorizontalLaplap;
        const bool zeroFlux = mode == BoundaryMode::ZeroFlux;
        auto expected = reference::imageLaplacian(u, g, horizontal, zeroFlux);
        if (twice)
          expected = reference::imageLaplacian(expected, g, horizontal, zeroFlux);
        const double lap = 4 * (1 / 0.64 + 1 / 1.21 + 1 / 0.81);
        const double amplification = twice ? lap * lap : lap;
        const double floatTol = 64 * 1.2e-7 * maxAbs(u) * amplification;
        const double doubleTol = 1e-12 * std::max(1.0, maxAbs(expected));
        stencil::StencilOptions s;
        s.op = op;
        s.boundary = mode;
        for (const Kernel& kernel : kernels)
          for (int placement : { 0, 1, 2, 3 })
          {
            auto options = optionsFor(GetParam());
            options.tuning.imageWarpRows = kernel.warpRows;
            options.tuning.imageWarpFrame = kernel.frame;
            options.tuning.imageColumnsPerThread = kernel.columns;
            options.tuning.imageFramePlacement = placement;
            std::vector<double> out(u.size(), -12345.0);
            std::vector<float> outFloat(u.size(), -12345.0f);
            stencil::ExecutionReport report;
            stencil::ExecutionReport reportFloat;
            ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, options, &report).ok());
            ASSERT_TRUE(
              stencil::apply(g, uFloat.data(), outFloat.data(), s, options, &reportFloat).ok());
            const std::string what = std::string(stencil::toString(op)) + " " +
              stencil::toString(mode) + " " + std::to_string(dims[0]) + "x" +
              std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + " warp rows " +
              std::to_string(kernel.warpRows) + " columns " + std::to_string(kernel.columns) +
              " placement " + std::to_string(placement);
            EXPECT_TRUE(closeWithNaN(out, expected, doubleTol))
              << what << " " << report.imageKernel;
            EXPECT_TRUE(closeWithNaN(outFloat, expected, floatTol))
              << "float " << what << " " << reportFloat.imageKernel;
            if (GetParam() == Backend::CUDA)
            {
              // The report names the placement that ran (strips and warp rows alike); the
              // default is spread, but first for the 3-D laplap (measured faster there).
              const bool laplap3D = op == Operator::Laplap && dims[2] > 1;
              const int ran = placement > 0 ? placement : (laplap3D ? 1 : 2);
              const std::string named = std::string(", frame ") +
                (ran == 1      ? "first"
                    : ran == 2 ? "spread"
                               : "last");
              EXPECT_NE(report.imageKernel.find(named), std::string::npos)
                << what << " " << report.imageKernel;
              EXPECT_NE(reportFloat.imageKernel.find(named), std::string::npos)
                << what << " " << reportFloat.imageKernel;
            }
          }
      }
  }
}

TEST(ImageOptions, StripShapeOptionsAreValidated)
{
  stencil::ImageGrid g;
  g.dims = { 8, 8, 1 };
  std::vector<double> u(g.size(), 1.0);
  std::vector<double> out(g.size());
  auto options = optionsFor(Backend::CPU);
  // Each shape option: values that are rejected, then one that is accepted (and kept).
  struct Case
  {
    int stencil::Tuning::*field;
    std::vector<int> rejected;
    int accepted;
  };
  const Case cases[] = { { &stencil::Tuning::imageRowsPerThread, { -1, 3, 16 }, 4 },
    { &stencil::Tuning::imageColumnsPerThread, { -1, 3, 8 }, 1 },
    { &stencil::Tuning::imageBlockRows, { -1, 3, 16 }, 8 },
    { &stencil::Tuning::imageGridBlocks, { -2, -100 }, -1 },
    { &stencil::Tuning::imageTileThreads, { -1, 48, 512 }, 128 },
    { &stencil::Tuning::imageTileRows, { -1, -64 }, 3 },
    { &stencil::Tuning::imageWarpRows, { -2, 2, 32 }, 16 },
    { &stencil::Tuning::imageWarpPrefetch, { -1, -12 }, 5 },
    { &stencil::Tuning::imageFramePlacement, { -1, 4 }, 3 },
    { &stencil::Tuning::imageWarpFrame, { -1, 4 }, 2 } };
  for (const Case& c : cases)
  {
    for (int value : c.rejected)
    {
      options.tuning.*c.field = value;
      const auto status = stencil::apply(g, u.data(), out.data(), {}, options);
      EXPECT_EQ(status.code(), stencil::ErrorCode::InvalidArgument) << value;
    }
    options.tuning.*c.field = c.accepted;
    EXPECT_TRUE(stencil::apply(g, u.data(), out.data(), {}, options).ok()) << c.accepted;
  }
}

TEST_P(ImageTest, FillValueIsUsed)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  stencil::ImageGrid g;
  g.dims = { 6, 6, 1 };
  std::vector<float> u(36, 1.0f);
  std::vector<float> out(36);
  stencil::StencilOptions s;
  s.fillValue = -7;
  ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, optionsFor(GetParam())).ok());
  EXPECT_EQ(out[0], -7.0f);
  EXPECT_EQ(out[7], 0.0f);
}

TEST_P(ImageTest, HyperdiffusionDampsNoiseAndKeepsTheMean)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  stencil::ImageGrid g;
  g.dims = { 16, 12, 6 };
  std::vector<double> u(g.size());
  double mean = 0;
  for (std::size_t i = 0; i < u.size(); ++i)
  {
    const std::size_t x = i % 16, y = (i / 16) % 12, z = i / 192;
    u[i] = 0.1 * x + (((x + y + z) % 2) ? 1.0 : -1.0); // a ramp plus a checkerboard
    mean += u[i];
  }
  mean /= u.size();
  auto roughness = [&](const std::vector<double>& v)
  {
    double r = 0;
    for (std::size_t i = 0; i + 1 < v.size(); ++i)
      if ((i + 1) % 16)
        r += std::fabs(v[i + 1] - v[i] - 0.1);
    return r;
  };
  const double before = roughness(u);
  ASSERT_TRUE(stencil::hyperdiffuse(g, u.data(), { 10, 0.5, false }, optionsFor(GetParam())).ok());
  double after = 0;
  for (double v : u)
    after += v;
  EXPECT_NEAR(after / u.size(), mean, 1e-12);
  EXPECT_LT(roughness(u), 0.05 * before);
}

INSTANTIATE_TEST_SUITE_P(Backends,
  ImageTest,
  ::testing::Values(Backend::CPU, Backend::CUDA),
  backendName);
} // namespace
