#include "vtkSparseGridParallel.h"

#include "vtkAOSDataArrayTemplate.h"
#include "vtkCommunicator.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkExtentTranslator.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationIntegerRequestKey.h"
#include "vtkMultiProcessController.h"
#include "vtkMultiProcessStream.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/description.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

namespace
{
// Values per message: MPI counts are ints, and 2^26 values (256 MiB of float) keeps every
// message well below that whatever the element size.
constexpr std::size_t Chunk = std::size_t(1) << 26;

/// Collective element-wise reduction of n values, in messages of at most Chunk values.
template<typename T>
bool ReduceAll(vtkMultiProcessController* controller,
  const T* in,
  T* out,
  std::size_t n,
  int operation)
{
  if (!controller)
  {
    std::copy(in, in + n, out);
    return true;
  }
  for (std::size_t begin = 0; begin < n; begin += Chunk)
  {
    const vtkIdType count = static_cast<vtkIdType>(std::min(Chunk, n - begin));
    if (!controller->AllReduce(in + begin, out + begin, count, operation))
    {
      return false;
    }
  }
  return true;
}

template<typename T>
bool BroadcastValues(vtkMultiProcessController* controller, T* data, std::size_t n, int source)
{
  for (std::size_t begin = 0; begin < n; begin += Chunk)
  {
    const std::size_t count = std::min(Chunk, n - begin);
    if (!controller->Broadcast(data + begin, static_cast<vtkIdType>(count), source))
    {
      return false;
    }
  }
  return true;
}

// Field data as a stream: the representation's metadata holds int, vtkTypeInt64, double and
// string arrays, all tiny. Other array kinds are not part of it and are left out.
enum ArrayKind
{
  NumericArray = 0,
  StringArray = 1
};

void PushFieldData(vtkFieldData* fd, vtkMultiProcessStream& stream)
{
  std::vector<vtkAbstractArray*> arrays;
  for (int i = 0; fd && i < fd->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* array = fd->GetAbstractArray(i);
    // The metadata are the SparseGrid.* arrays; the payload (coded streams, surpluses) is sent
    // raw by ShareRepresentation.
    const std::string name = array && array->GetName() ? array->GetName() : "";
    if (name.rfind("SparseGrid.", 0) == 0 &&
      name != vtkSparseGridRepresentation::StreamsArrayName &&
      (vtkDataArray::SafeDownCast(array) || vtkStringArray::SafeDownCast(array)))
    {
      arrays.push_back(array);
    }
  }
  stream << static_cast<int>(arrays.size());
  for (vtkAbstractArray* array : arrays)
  {
    stream << std::string(array->GetName()) << array->GetNumberOfComponents()
           << static_cast<vtkTypeInt64>(array->GetNumberOfTuples());
    if (auto* strings = vtkStringArray::SafeDownCast(array))
    {
      stream << static_cast<int>(StringArray);
      for (vtkIdType v = 0; v < strings->GetNumberOfValues(); ++v)
      {
        stream << strings->GetValue(v);
      }
      continue;
    }
    auto* numbers = vtkDataArray::SafeDownCast(array);
    stream << static_cast<int>(NumericArray) << numbers->GetDataType();
    // Raw bytes keep every type exact (a 64-bit count would not survive a trip through double).
    // Byte by byte: the stream's array Push cannot be mixed with its operators, and the
    // metadata is a few hundred bytes.
    const std::size_t bytes =
      static_cast<std::size_t>(numbers->GetNumberOfValues()) * numbers->GetDataTypeSize();
    const auto* raw = static_cast<const unsigned char*>(numbers->GetVoidPointer(0));
    stream << static_cast<vtkTypeInt64>(bytes);
    for (std::size_t b = 0; b < bytes; ++b)
    {
      stream << raw[b];
    }
  }
}

bool PopFieldData(vtkMultiProcessStream& stream, vtkFieldData* fd)
{
  int count = 0;
  stream >> count;
  for (int i = 0; i < count; ++i)
  {
    std::string name;
    int components = 0;
    vtkTypeInt64 tuples = 0;
    int kind = 0;
    stream >> name >> components >> tuples >> kind;
    if (components < 1 || tuples < 0)
    {
      return false;
    }
    if (kind == StringArray)
    {
      vtkNew<vtkStringArray> strings;
      strings->SetName(name.c_str());
      strings->SetNumberOfComponents(components);
      strings->SetNumberOfTuples(static_cast<vtkIdType>(tuples));
      for (vtkIdType v = 0; v < strings->GetNumberOfValues(); ++v)
      {
        std::string value;
        stream >> value;
        strings->SetValue(v, value);
      }
      fd->AddArray(strings);
      continue;
    }
    int type = 0;
    stream >> type;
    vtkSmartPointer<vtkDataArray> numbers =
      vtkSmartPointer<vtkDataArray>::Take(vtkDataArray::CreateDataArray(type));
    vtkTypeInt64 bytes = 0;
    stream >> bytes;
    if (!numbers || components < 1)
    {
      return false;
    }
    numbers->SetName(name.c_str());
    numbers->SetNumberOfComponents(components);
    numbers->SetNumberOfTuples(static_cast<vtkIdType>(tuples));
    if (static_cast<std::size_t>(bytes) !=
      static_cast<std::size_t>(numbers->GetNumberOfValues()) * numbers->GetDataTypeSize())
    {
      return false;
    }
    auto* raw = static_cast<unsigned char*>(numbers->GetVoidPointer(0));
    for (vtkTypeInt64 b = 0; b < bytes; ++b)
    {
      stream >> raw[b];
    }
    fd->AddArray(numbers);
  }
  return true;
}

template<typename T>
bool BroadcastCoefficients(vtkMultiProcessController* controller, vtkDataArray* array, int source)
{
  auto* typed = vtkArrayDownCast<vtkAOSDataArrayTemplate<T>>(array);
  return typed &&
    BroadcastValues(controller,
      typed->GetPointer(0),
      static_cast<std::size_t>(typed->GetNumberOfValues()),
      source);
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkMultiProcessController* vtkSparseGridParallel::GlobalController()
{
  vtkMultiProcessController* controller = vtkMultiProcessController::GetGlobalController();
  return controller && controller->GetNumberOfProcesses() > 1 ? controller : nullptr;
}

//------------------------------------------------------------------------------------------------
vtkMultiProcessController* vtkSparseGridParallel::DistributedController(vtkInformation* outInfo)
{
  vtkMultiProcessController* controller = GlobalController();
  if (!controller || !outInfo ||
    !outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES()))
  {
    return nullptr;
  }
  const int pieces = outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES());
  return pieces == controller->GetNumberOfProcesses() ? controller : nullptr;
}

//------------------------------------------------------------------------------------------------
vtkSparseGridParallel::Outcome vtkSparseGridParallel::Agree(vtkMultiProcessController* controller,
  Outcome local,
  std::string& error)
{
  if (!controller)
  {
    return local;
  }
  const int processes = controller->GetNumberOfProcesses();
  const int rank = controller->GetLocalProcessId();
  // Max-reduction of (processes - rank) finds the lowest failing rank in one call.
  const int mine[2] = { local == Outcome::Failed ? processes - rank : 0,
    local == Outcome::Aborted ? 1 : 0 };
  int all[2] = { 0, 0 };
  if (!controller->AllReduce(mine, all, 2, vtkCommunicator::MAX_OP))
  {
    error = "the processes could not exchange their state (communication failed)";
    return Outcome::Failed;
  }
  if (all[0] > 0)
  {
    const int source = processes - all[0];
    vtkMultiProcessStream stream;
    if (rank == source)
    {
      stream << error;
    }
    controller->Broadcast(stream, source);
    if (rank != source)
    {
      std::string message;
      stream >> message;
      error = "process " + std::to_string(source) + ": " + message;
    }
    return Outcome::Failed;
  }
  return all[1] ? Outcome::Aborted : Outcome::Done;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::SumAll(vtkMultiProcessController* controller,
  const float* in,
  float* out,
  std::size_t n)
{
  return ReduceAll(controller, in, out, n, vtkCommunicator::SUM_OP);
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::SumAll(vtkMultiProcessController* controller,
  const double* in,
  double* out,
  std::size_t n)
{
  return ReduceAll(controller, in, out, n, vtkCommunicator::SUM_OP);
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::SumAll(vtkMultiProcessController* controller,
  const std::uint64_t* in,
  std::uint64_t* out,
  std::size_t n)
{
  // vtkMultiProcessController knows unsigned long long, which std::uint64_t may not be.
  std::vector<unsigned long long> send(in, in + n), receive(n);
  const bool ok = ReduceAll(controller, send.data(), receive.data(), n, vtkCommunicator::SUM_OP);
  std::copy(receive.begin(), receive.end(), out);
  return ok;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::MaxAll(vtkMultiProcessController* controller,
  const double* in,
  double* out,
  std::size_t n)
{
  return ReduceAll(controller, in, out, n, vtkCommunicator::MAX_OP);
}

//------------------------------------------------------------------------------------------------
namespace
{
using vtkSparseGridParallel::Outcome;
using Contents = vtkSparseGridRepresentation::Contents;

// Error-bounded: sends the index from the lowest process that decoded it to those missing it.
Outcome ShareIndex(vtkMultiProcessController* controller,
  vtkPolyData* local,
  Contents& contents,
  std::string& error,
  bool indexed,
  const int index[2])
{
  if (index[1] == 0)
  {
    return Outcome::Done;
  }
  const int source = controller->GetNumberOfProcesses() - index[0];
  vtkMultiProcessStream stream;
  if (controller->GetLocalProcessId() == source)
  {
    PushFieldData(local->GetFieldData(), stream);
  }
  controller->Broadcast(stream, source);
  bool ok = true;
  if (!indexed)
  {
    vtkNew<vtkPolyData> received; // metadata and index, no stream
    ok = PopFieldData(stream, received->GetFieldData()) &&
      vtkSparseGridRepresentation::FromPolyData(received, contents, &error);
  }
  return vtkSparseGridParallel::Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
}

// Error-bounded: broadcasts the one byte array that holds every coded stream, then decodes it.
Outcome BroadcastStreams(vtkMultiProcessController* controller,
  int source,
  vtkPolyData* received,
  bool ok,
  Contents& contents,
  std::string& error)
{
  const int rank = controller->GetLocalProcessId();
  vtkTypeInt64 bytes = rank == source ? contents.Streams->GetNumberOfValues() : 0;
  controller->Broadcast(&bytes, 1, source);
  vtkSmartPointer<vtkUnsignedCharArray> streams = contents.Streams;
  if (rank != source)
  {
    streams = vtkSmartPointer<vtkUnsignedCharArray>::New();
    const sparsegrid::Status room =
      sparsegrid::checkAllocation(static_cast<std::uint64_t>(bytes), "the coded streams");
    ok = ok && room.ok();
    if (!room.ok())
    {
      error = room.message();
    }
    if (ok)
    {
      streams->SetNumberOfValues(bytes);
    }
  }
  // A receiver that cannot hold them still takes part in every broadcast, into scratch.
  std::vector<unsigned char> scratch;
  for (vtkTypeInt64 begin = 0; begin < bytes; begin += vtkTypeInt64(1) << 26)
  {
    const vtkTypeInt64 count = std::min<vtkTypeInt64>(vtkTypeInt64(1) << 26, bytes - begin);
    unsigned char* at = nullptr;
    if (rank == source || ok)
    {
      at = streams->GetPointer(0) + begin;
    }
    else
    {
      scratch.resize(static_cast<std::size_t>(count));
      at = scratch.data();
    }
    controller->Broadcast(at, count, source);
  }
  if (rank != source)
  {
    if (ok)
    {
      streams->SetName(vtkSparseGridRepresentation::StreamsArrayName);
      received->GetFieldData()->AddArray(streams);
      ok = vtkSparseGridRepresentation::FromPolyData(received, contents, &error);
    }
    else
    {
      contents = Contents();
    }
  }
  return vtkSparseGridParallel::Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
}

// Fixed level: broadcasts the coefficient arrays and rebuilds the representation on receivers.
Outcome BroadcastArrays(vtkMultiProcessController* controller,
  int source,
  const vtkSparseGridRepresentation::Description& info,
  vtkPolyData* received,
  bool ok,
  Contents& contents,
  std::string& error)
{
  const int rank = controller->GetLocalProcessId();
  // The source's number of arrays decides how many broadcasts follow, on every process.
  int arrays = static_cast<int>(contents.Info.ArrayNames.size());
  controller->Broadcast(&arrays, 1, source);
  const bool isDouble = info.Precision == sparsegrid::Precision::Double;
  int isDoubleAtSource = isDouble ? 1 : 0;
  controller->Broadcast(&isDoubleAtSource, 1, source);
  vtkTypeInt64 size = static_cast<vtkTypeInt64>(rank == source ? contents.Info.Grid.size() : 0);
  controller->Broadcast(&size, 1, source);
  // Plain broadcasts rather than the stream: they fix the length of every value broadcast below,
  // which must agree on all processes even where the stream could not be decoded.
  std::vector<int> components(static_cast<std::size_t>(std::max(0, arrays)), 1);
  if (rank == source)
  {
    for (int i = 0; i < arrays; ++i)
    {
      components[static_cast<std::size_t>(i)] =
        contents.Coefficients[static_cast<std::size_t>(i)]->GetNumberOfComponents();
    }
  }
  if (arrays > 0)
  {
    controller->Broadcast(components.data(), arrays, source);
  }
  ok = ok && static_cast<std::size_t>(arrays) == info.ArrayNames.size() &&
    (isDoubleAtSource != 0) == isDouble && static_cast<vtkTypeInt64>(info.Grid.size()) == size;
  std::vector<vtkDataArray*> coefficients;
  std::vector<vtkSmartPointer<vtkDataArray>> kept;
  for (int i = 0; i < arrays; ++i)
  {
    vtkSmartPointer<vtkDataArray> array;
    if (rank == source)
    {
      array = contents.Coefficients[static_cast<std::size_t>(i)];
    }
    else
    {
      if (isDoubleAtSource)
      {
        array = vtkSmartPointer<vtkDoubleArray>::New();
      }
      else
      {
        array = vtkSmartPointer<vtkFloatArray>::New();
      }
      array->SetNumberOfComponents(std::max(1, components[static_cast<std::size_t>(i)]));
      array->SetNumberOfTuples(static_cast<vtkIdType>(size));
      kept.push_back(array);
      coefficients.push_back(array);
    }
    const bool sent = isDoubleAtSource ? BroadcastCoefficients<double>(controller, array, source)
                                       : BroadcastCoefficients<float>(controller, array, source);
    ok = ok && sent;
  }
  if (rank != source)
  {
    if (!ok)
    {
      if (error.empty())
      {
        error = "the compressed representation broadcast by process " + std::to_string(source) +
          " could not be decoded";
      }
      contents = Contents();
    }
    else if (!vtkSparseGridRepresentation::ToPolyData(info, coefficients, received, &error) ||
      !vtkSparseGridRepresentation::FromPolyData(received, contents, &error))
    {
      // Rebuilt in this build's form (whatever the source's FormatVersion) and validated.
      ok = false;
    }
  }
  return vtkSparseGridParallel::Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridParallel::Outcome vtkSparseGridParallel::ShareRepresentation(
  vtkMultiProcessController* controller,
  vtkPolyData* local,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  if (!controller)
  {
    return vtkSparseGridRepresentation::FromPolyData(local, contents, &error) ? Outcome::Done
                                                                              : Outcome::Failed;
  }
  const int processes = controller->GetNumberOfProcesses();
  const int rank = controller->GetLocalProcessId();

  // Holders are the processes whose piece has points; a holder with a damaged representation
  // fails for everybody. The others keep their own reason in case nobody holds anything.
  const bool holder = vtkSparseGridRepresentation::HoldsPayload(local);
  std::string localError;
  const bool described =
    local && vtkSparseGridRepresentation::HasRepresentation(local->GetFieldData());
  bool valid = described && vtkSparseGridRepresentation::FromPolyData(local, contents, &localError);
  error = localError;
  Outcome outcome = Agree(controller, holder && !valid ? Outcome::Failed : Outcome::Done, error);
  if (outcome != Outcome::Done)
  {
    return outcome;
  }
  // Error-bounded: the streams stay where they are; only the index goes where it is missing.
  const bool indexed =
    valid && contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded;
  const int indexFlags[2] = { indexed ? processes - rank : 0, indexed ? 0 : 1 };
  int index[2] = { 0, 0 };
  if (!controller->AllReduce(indexFlags, index, 2, vtkCommunicator::MAX_OP))
  {
    error = "the processes could not exchange the compressed representation";
    return Outcome::Failed;
  }
  if (index[0] > 0)
  {
    return ShareIndex(controller, local, contents, error, indexed, index);
  }
  // Fixed level: only the holders' representations count.
  if (!holder)
  {
    contents = vtkSparseGridRepresentation::Contents();
    error.clear();
  }
  // Lowest holder (max of processes - rank) and whether some process holds nothing.
  const int mine[2] = { holder ? processes - rank : 0, holder ? 0 : 1 };
  int all[2] = { 0, 0 };
  if (!controller->AllReduce(mine, all, 2, vtkCommunicator::MAX_OP))
  {
    error = "the processes could not exchange the compressed representation";
    return Outcome::Failed;
  }
  if (all[0] == 0)
  {
    if (local && vtkSparseGridRepresentation::HasRepresentation(local->GetFieldData()))
    {
      error = "no process holds the coefficients of the compressed representation (every "
              "piece of the Source is empty)";
    }
    else
    {
      vtkSparseGridRepresentation::FromPolyData(local, contents, &error);
    }
    contents = vtkSparseGridRepresentation::Contents();
    return Outcome::Failed;
  }
  if (all[1] == 0)
  {
    return Outcome::Done; // every process holds it already (a source that replicates it)
  }

  // The field data (metadata) travels as a stream, the coefficients as raw values.
  const int source = processes - all[0];
  vtkMultiProcessStream stream;
  if (rank == source)
  {
    PushFieldData(local->GetFieldData(), stream);
  }
  controller->Broadcast(stream, source);
  vtkNew<vtkPolyData> received; // no points: FromPolyData reads the field data only
  bool ok = true;
  if (rank != source)
  {
    ok = PopFieldData(stream, received->GetFieldData());
  }
  // Every process knows the array names, the precision and the grid size from here on, so the
  // receivers can allocate before the values arrive. A receiver that cannot decode what it
  // got still takes part in every broadcast (into scratch arrays) and fails afterwards.
  vtkSparseGridRepresentation::Description info;
  if (rank == source)
  {
    info = contents.Info;
  }
  else if (ok)
  {
    ok = vtkSparseGridRepresentation::ReadFieldData(received->GetFieldData(), info, &error);
  }
  // Error-bounded: one byte array holds every coded stream.
  int coded =
    rank == source && contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded ? 1
                                                                                                : 0;
  controller->Broadcast(&coded, 1, source);
  if (coded)
  {
    return BroadcastStreams(controller, source, received, ok, contents, error);
  }
  return BroadcastArrays(controller, source, info, received, ok, contents, error);
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::IsEmptyExtent(const int extent[6])
{
  return extent[1] < extent[0] || extent[3] < extent[2] || extent[5] < extent[4];
}

//------------------------------------------------------------------------------------------------
vtkSparseGridParallel::ImagePartition vtkSparseGridParallel::PartitionImage(
  vtkMultiProcessController* controller,
  vtkInformation* inInfo,
  int piece,
  vtkImageData* image)
{
  ImagePartition partition;
  const vtkIdType received = image ? image->GetNumberOfPoints() : 0;
  if (image)
  {
    image->GetExtent(partition.Extent);
    std::copy(partition.Extent, partition.Extent + 6, partition.WholeExtent);
  }
  int expected[6] = { 0, -1, 0, -1, 0, -1 };
  bool holdsExpected = true; // the data covers this process's share of the translator's split
  if (controller && inInfo && inInfo->Has(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()))
  {
    inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), partition.WholeExtent);
    const int splitMode = inInfo->Has(vtkExtentTranslator::UPDATE_SPLIT_MODE())
      ? inInfo->Get(vtkExtentTranslator::UPDATE_SPLIT_MODE())
      : vtkExtentTranslator::BLOCK_MODE;
    vtkNew<vtkExtentTranslator> translator;
    if (!translator->PieceToExtentThreadSafe(piece,
          controller->GetNumberOfProcesses(),
          0,
          partition.WholeExtent,
          expected,
          splitMode,
          0) ||
      IsEmptyExtent(expected))
    {
      std::fill(expected, expected + 6, 0);
      expected[1] = expected[3] = expected[5] = -1; // more pieces than cells: empty
    }
    else
    {
      holdsExpected = received > 0;
      for (int a = 0; a < 3; ++a)
      {
        holdsExpected = holdsExpected && partition.Extent[2 * a] <= expected[2 * a] &&
          partition.Extent[2 * a + 1] >= expected[2 * a + 1];
      }
    }
  }
  if (received < 1)
  {
    std::fill(partition.Extent, partition.Extent + 6, 0);
    partition.Extent[1] = partition.Extent[3] = partition.Extent[5] = -1;
  }
  const int rank = controller ? controller->GetLocalProcessId() : 0;
  partition.Leader = partition.HasPiece() ? rank : -1;
  if (controller)
  {
    // Cut to the translator's split only when every process can: otherwise the data itself is
    // the partition (a reader that puts the whole image on one process, say).
    const int mine = holdsExpected ? 1 : 0;
    int all = 0;
    controller->AllReduce(&mine, &all, 1, vtkCommunicator::MIN_OP);
    if (all)
    {
      std::copy(expected, expected + 6, partition.Extent);
      partition.SharedFaces = true;
    }
    // Max-reduction of (processes - rank) finds the lowest process with a piece.
    const int processes = controller->GetNumberOfProcesses();
    const int candidate = partition.HasPiece() ? processes - rank : 0;
    int lowest = 0;
    controller->AllReduce(&candidate, &lowest, 1, vtkCommunicator::MAX_OP);
    partition.Leader = lowest > 0 ? processes - lowest : -1;
  }
  return partition;
}

//------------------------------------------------------------------------------------------------
namespace
{
std::string ExtentText(const int* e)
{
  std::ostringstream os;
  os << "x " << e[0] << ".." << e[1] << ", y " << e[2] << ".." << e[3] << ", z " << e[4] << ".."
     << e[5];
  return os.str();
}

/// FNV-1a over the values of `arrays` on the points of `box` (inside `image`), as doubles.
long long HashValues(vtkImageData* image,
  const std::vector<vtkDataArray*>& arrays,
  const int box[6])
{
  int extent[6];
  image->GetExtent(extent);
  const vtkIdType nx = extent[1] - extent[0] + 1;
  const vtkIdType ny = extent[3] - extent[2] + 1;
  std::uint64_t hash = 1469598103934665603ull;
  for (vtkDataArray* array : arrays)
  {
    const int nc = array->GetNumberOfComponents();
    for (int z = box[4]; z <= box[5]; ++z)
    {
      for (int y = box[2]; y <= box[3]; ++y)
      {
        for (int x = box[0]; x <= box[1]; ++x)
        {
          const vtkIdType id = (x - extent[0]) + nx * ((y - extent[2]) + ny * (z - extent[4]));
          for (int c = 0; c < nc; ++c)
          {
            const double value = array->GetComponent(id, c) + 0.0; // -0 and +0 agree
            unsigned char bytes[sizeof(double)];
            std::memcpy(bytes, &value, sizeof(double));
            for (unsigned char b : bytes)
            {
              hash = (hash ^ b) * 1099511628211ull;
            }
          }
        }
      }
    }
  }
  long long out = 0;
  std::memcpy(&out, &hash, sizeof(out));
  return out;
}
} // namespace

vtkSparseGridParallel::Outcome vtkSparseGridParallel::CheckTiling(
  vtkMultiProcessController* controller,
  const ImagePartition& partition,
  vtkImageData* image,
  const std::vector<vtkDataArray*>& arrays,
  std::string& error)
{
  if (!controller || controller->GetNumberOfProcesses() < 2)
  {
    return Outcome::Done;
  }
  const int processes = controller->GetNumberOfProcesses();
  const int rank = controller->GetLocalProcessId();
  std::vector<int> extents(static_cast<std::size_t>(6 * processes));
  if (!controller->AllGather(partition.Extent, extents.data(), 6))
  {
    error = "gathering the extents of the pieces failed";
    return Outcome::Failed;
  }
  // 1. Geometry, decided identically on every process from the same extents.
  std::vector<int> shared; // p, q and the box, per pair of pieces sharing points
  const std::string verdict =
    sparsegrid::pieceTilingProblem(partition.WholeExtent, extents, &shared);
  if (!verdict.empty())
  {
    error = "The pieces of the image (numbered by process) do not tile it: " + verdict +
      ". Every point must be in exactly one piece, or on the shared boundary of neighbouring "
      "pieces (redistribute the image, or read it with a reader that reads pieces).";
    return Outcome::Failed; // the same extents, hence the same verdict, everywhere
  }
  // 2. Shared points hold the same values in both pieces: one hash per shared layer and side.
  const std::size_t pairs = shared.size() / 8;
  std::vector<long long> mine(2 * pairs, 0), all(2 * pairs * static_cast<std::size_t>(processes));
  for (std::size_t k = 0; k < pairs; ++k)
  {
    const int* pair = shared.data() + 8 * k;
    for (int side = 0; side < 2; ++side)
    {
      if (pair[side] == rank)
      {
        mine[2 * k + static_cast<std::size_t>(side)] = HashValues(image, arrays, pair + 2);
      }
    }
  }
  if (pairs > 0 &&
    !controller->AllGather(mine.data(), all.data(), static_cast<vtkIdType>(mine.size())))
  {
    error = "gathering the values of the shared boundary points failed";
    return Outcome::Failed;
  }
  for (std::size_t k = 0; k < pairs; ++k)
  {
    const int* pair = shared.data() + 8 * k;
    const long long a = all[static_cast<std::size_t>(pair[0]) * 2 * pairs + 2 * k];
    const long long b = all[static_cast<std::size_t>(pair[1]) * 2 * pairs + 2 * k + 1];
    if (a != b)
    {
      error = "The pieces of processes " + std::to_string(pair[0]) + " and " +
        std::to_string(pair[1]) + " hold different values on the boundary points they share (" +
        ExtentText(pair + 2) +
        "): neighbouring pieces must agree where they overlap, or one of them would be lost.";
      return Outcome::Failed;
    }
  }
  return Outcome::Done;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridParallel::BroadcastHeader(vtkMultiProcessController* controller,
  int leader,
  ImageHeader& header)
{
  if (!controller)
  {
    return;
  }
  vtkMultiProcessStream stream;
  if (controller->GetLocalProcessId() == leader)
  {
    for (int v : header.WholeExtent)
    {
      stream << v;
    }
    for (int a = 0; a < 3; ++a)
    {
      stream << header.Origin[a] << header.Spacing[a];
    }
    stream << static_cast<int>(header.Names.size());
    for (std::size_t i = 0; i < header.Names.size(); ++i)
    {
      stream << header.Names[i] << header.Components[i] << header.TypeSizes[i]
             << header.DataTypes[i];
    }
  }
  controller->Broadcast(stream, leader);
  if (controller->GetLocalProcessId() == leader)
  {
    return;
  }
  for (int& v : header.WholeExtent)
  {
    stream >> v;
  }
  for (int a = 0; a < 3; ++a)
  {
    stream >> header.Origin[a] >> header.Spacing[a];
  }
  int n = 0;
  stream >> n;
  const std::size_t count = static_cast<std::size_t>(std::max(0, n));
  header.Names.resize(count);
  header.Components.resize(count);
  header.TypeSizes.resize(count);
  header.DataTypes.resize(count);
  for (std::size_t i = 0; i < count; ++i)
  {
    stream >> header.Names[i] >> header.Components[i] >> header.TypeSizes[i] >> header.DataTypes[i];
  }
}

//------------------------------------------------------------------------------------------------
std::vector<vtkDataArray*> vtkSparseGridParallel::CropToPiece(vtkImageData* image,
  const int extent[6],
  const std::vector<std::string>& names,
  std::vector<vtkDataArray*> arrays,
  vtkImageData* cropped)
{
  int received[6];
  image->GetExtent(received);
  if (!std::equal(received, received + 6, extent))
  {
    cropped->ShallowCopy(image);
    cropped->Crop(extent);
    vtkPointData* pd = cropped->GetPointData();
    for (std::size_t i = 0; i < arrays.size(); ++i)
    {
      arrays[i] = pd->GetArray(names[i].c_str());
    }
  }
  return arrays;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::ReduceErrorSums(vtkMultiProcessController* controller,
  sparsegrid::ErrorSums& sums)
{
  Communicator communicator(controller);
  return sparsegrid::reduceErrorSums(communicator, sums);
}

//------------------------------------------------------------------------------------------------
namespace
{
/// Collective: every process's `mine` back to back in process order, on every process, and
/// (optional) how many values each process sent.
template<typename T>
bool GatherAll(vtkMultiProcessController* controller,
  const std::vector<T>& mine,
  std::vector<T>& all,
  std::vector<vtkIdType>* counts = nullptr)
{
  if (!controller)
  {
    all = mine;
    if (counts)
    {
      counts->assign(1, static_cast<vtkIdType>(mine.size()));
    }
    return true;
  }
  const int processes = controller->GetNumberOfProcesses();
  const vtkIdType n = static_cast<vtkIdType>(mine.size());
  std::vector<vtkIdType> lengths(static_cast<std::size_t>(processes), 0);
  std::vector<vtkIdType> offsets(static_cast<std::size_t>(processes), 0);
  if (!controller->AllGather(&n, lengths.data(), 1))
  {
    return false;
  }
  vtkIdType total = 0;
  for (int p = 0; p < processes; ++p)
  {
    offsets[static_cast<std::size_t>(p)] = total;
    total += lengths[static_cast<std::size_t>(p)];
  }
  all.resize(static_cast<std::size_t>(total));
  if (counts)
  {
    *counts = lengths;
  }
  T dummy{};
  return total == 0 ||
    controller->AllGatherV(
      mine.empty() ? &dummy : mine.data(), all.data(), n, lengths.data(), offsets.data());
}

constexpr int PieceTag = 0x5347;
// Bytes per point-to-point message: MPI counts are ints.
constexpr vtkIdType MessageBytes = vtkIdType(1) << 30;
} // namespace

//------------------------------------------------------------------------------------------------
int vtkSparseGridParallel::Communicator::rank() const
{
  return this->Controller ? this->Controller->GetLocalProcessId() : 0;
}

int vtkSparseGridParallel::Communicator::size() const
{
  return this->Controller ? this->Controller->GetNumberOfProcesses() : 1;
}

namespace
{
int ReduceOperation(sparsegrid::Communicator::Operation operation)
{
  switch (operation)
  {
    case sparsegrid::Communicator::Operation::Min:
      return vtkCommunicator::MIN_OP;
    case sparsegrid::Communicator::Operation::Max:
      return vtkCommunicator::MAX_OP;
    default:
      return vtkCommunicator::SUM_OP;
  }
}
}

bool vtkSparseGridParallel::Communicator::allReduce(const double* in,
  double* out,
  std::size_t n,
  Operation operation)
{
  return ReduceAll(this->Controller, in, out, n, ReduceOperation(operation));
}

bool vtkSparseGridParallel::Communicator::allReduce(const std::int64_t* in,
  std::int64_t* out,
  std::size_t n,
  Operation operation)
{
  // vtkMultiProcessController knows long long, which std::int64_t may not be.
  std::vector<long long> send(in, in + n), receive(n);
  const bool ok =
    ReduceAll(this->Controller, send.data(), receive.data(), n, ReduceOperation(operation));
  std::copy(receive.begin(), receive.end(), out);
  return ok;
}

bool vtkSparseGridParallel::Communicator::allGather(const std::vector<std::uint8_t>& mine,
  std::vector<std::uint8_t>& all,
  std::vector<std::uint64_t>& counts)
{
  std::vector<vtkIdType> lengths;
  if (!GatherAll(this->Controller, mine, all, &lengths))
  {
    return false;
  }
  counts.assign(lengths.begin(), lengths.end());
  return true;
}

//------------------------------------------------------------------------------------------------
vtkSparseGridParallel::Outcome vtkSparseGridParallel::FetchPieces(
  vtkMultiProcessController* controller,
  const std::vector<char>& needed,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  const int pieces = contents.Info.NumberOfPieces();
  contents.BytesReceived = 0;
  std::vector<int> want;
  for (int p = 0; p < pieces && p < static_cast<int>(needed.size()); ++p)
  {
    if (needed[static_cast<std::size_t>(p)] && !contents.Holds(p))
    {
      want.push_back(p);
    }
  }
  if (!controller)
  {
    if (!want.empty())
    {
      error = "the coded streams of piece " + std::to_string(want[0]) + " are not in the input";
      return Outcome::Failed;
    }
    return Outcome::Done;
  }
  const int processes = controller->GetNumberOfProcesses();
  const int rank = controller->GetLocalProcessId();
  // The holder of each piece: the lowest process that has its streams.
  std::vector<int> mine(static_cast<std::size_t>(pieces)), holder(mine.size(), processes);
  for (int p = 0; p < pieces; ++p)
  {
    mine[static_cast<std::size_t>(p)] = contents.Holds(p) ? rank : processes;
  }
  bool ok = pieces == 0 ||
    ReduceAll(controller, mine.data(), holder.data(), mine.size(), vtkCommunicator::MIN_OP);
  for (int p : want)
  {
    if (ok && holder[static_cast<std::size_t>(p)] >= processes)
    {
      ok = false;
      error = "no process holds the coded streams of piece " + std::to_string(p);
    }
  }
  if (Outcome agreed = Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
      agreed != Outcome::Done)
  {
    return agreed;
  }
  std::vector<int> requests;
  std::vector<vtkIdType> counts;
  if (!GatherAll(controller, want, requests, &counts))
  {
    error = "the processes could not exchange which coded bricks they need";
    return Agree(controller, Outcome::Failed, error);
  }
  std::vector<std::size_t> first(static_cast<std::size_t>(processes) + 1, 0);
  for (int q = 0; q < processes; ++q)
  {
    first[static_cast<std::size_t>(q) + 1] = first[static_cast<std::size_t>(q)] +
      static_cast<std::size_t>(counts[static_cast<std::size_t>(q)]);
  }
  // The pieces process `to` asked for that `from` holds, in piece order.
  auto between = [&](int from, int to)
  {
    std::vector<int> list;
    for (std::size_t k = first[static_cast<std::size_t>(to)];
         k < first[static_cast<std::size_t>(to) + 1];
         ++k)
    {
      if (holder[static_cast<std::size_t>(requests[k])] == from &&
        contents.PieceBytes(requests[k]) > 0)
      {
        list.push_back(requests[k]);
      }
    }
    return list;
  };
  auto send = [&](int to)
  {
    for (int p : between(rank, to))
    {
      const std::uint8_t* at = contents.PieceData[static_cast<std::size_t>(p)];
      const vtkIdType bytes = static_cast<vtkIdType>(contents.PieceBytes(p));
      for (vtkIdType begin = 0; begin < bytes; begin += MessageBytes)
      {
        controller->Send(at + begin, std::min(MessageBytes, bytes - begin), to, PieceTag);
      }
    }
  };
  auto receive = [&](int from)
  {
    for (int p : between(from, rank))
    {
      const vtkIdType bytes = static_cast<vtkIdType>(contents.PieceBytes(p));
      vtkNew<vtkUnsignedCharArray> streams;
      streams->SetNumberOfValues(bytes);
      for (vtkIdType begin = 0; begin < bytes; begin += MessageBytes)
      {
        ok = controller->Receive(streams->GetPointer(0) + begin,
               std::min(MessageBytes, bytes - begin),
               from,
               PieceTag) != 0 &&
          ok;
      }
      contents.Received.emplace_back(streams);
      contents.PieceData[static_cast<std::size_t>(p)] = streams->GetPointer(0);
      contents.BytesReceived += static_cast<std::uint64_t>(bytes);
    }
  };
  // Pairs in one fixed order (i < j, lexicographic): with blocking messages, the first pair not
  // done always has both of its processes at it, so the exchange cannot deadlock.
  for (int other = 0; other < processes; ++other)
  {
    if (other < rank)
    {
      receive(other);
      send(other);
    }
    else if (other > rank)
    {
      send(other);
      receive(other);
    }
  }
  if (!ok)
  {
    error = "receiving coded bricks from another process failed";
  }
  return Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
}
