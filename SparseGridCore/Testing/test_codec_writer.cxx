// Helper for the reference-decoder test (Testing/Codec/test_reference_decoder.py): encodes a raw
// little-endian file with the C++ encoder and writes the stream and the C++ decoder's output, so
// that the Python decoder can be compared with both without using the project's C++ itself.
//   sgcore_codec_writer float|double in.raw NX NY NZ BOUND out.stream out.decoded [LEVEL]
#include <sparsegrid/codec.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace
{
template<typename T>
int run(char** argv, int argc)
{
  namespace codec = sparsegrid::codec;
  codec::Layout layout;
  layout.dims = { std::stoull(argv[3]), std::stoull(argv[4]), std::stoull(argv[5]) };
  const double bound = std::stod(argv[6]);
  int level = argc > 9 ? std::stoi(argv[9]) : -1;
  const std::size_t n = layout.dims[0] * layout.dims[1] * layout.dims[2];
  std::vector<T> values(n);
  std::ifstream in(argv[2], std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(T))))
  {
    std::cerr << "cannot read " << n << " values from " << argv[2] << "\n";
    return 2;
  }
  std::vector<std::uint8_t> stream;
  auto st = codec::encode(values.data(), layout, bound, stream);
  if (!st)
  {
    std::cerr << "encode: " << st.message() << "\n";
    return 1;
  }
  codec::StreamInfo info;
  st = codec::inspect(stream.data(), stream.size(), info);
  if (!st)
  {
    std::cerr << "inspect: " << st.message() << "\n";
    return 1;
  }
  level = level >= info.levels ? info.levels - 1 : level; // raw streams have one level
  std::vector<T> out(n);
  st = codec::decode(stream.data(), stream.size(), out.data(), layout, level);
  if (!st)
  {
    std::cerr << "decode: " << st.message() << "\n";
    return 1;
  }
  std::ofstream(argv[7], std::ios::binary)
    .write(
      reinterpret_cast<const char*>(stream.data()), static_cast<std::streamsize>(stream.size()));
  std::ofstream(argv[8], std::ios::binary)
    .write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(n * sizeof(T)));
  return 0;
}
} // namespace

int main(int argc, char** argv)
{
  if (argc < 9)
  {
    std::cerr << "usage: " << argv[0]
              << " float|double in.raw NX NY NZ BOUND out.stream out.decoded [LEVEL]\n";
    return 2;
  }
  return std::string(argv[1]) == "double" ? run<double>(argv, argc) : run<float>(argv, argc);
}
