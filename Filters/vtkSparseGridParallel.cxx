#include "vtkSparseGridParallel.h"

#include "vtkAOSDataArrayTemplate.h"
#include "vtkCommunicator.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkInformation.h"
#include "vtkMultiProcessController.h"
#include "vtkMultiProcessStream.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"
#include "vtkUnsignedCharArray.h"

#include <algorithm>
#include <vector>

namespace
{
// Values per message: MPI counts are ints, and 2^26 values (256 MiB of float) keeps every
// message well below that whatever the element size.
constexpr std::size_t Chunk = std::size_t(1) << 26;

template<typename T, typename Op>
bool ReduceAll(vtkMultiProcessController* controller,
  const T* in,
  T* out,
  std::size_t n,
  int operation,
  Op&& call)
{
  if (!controller)
  {
    std::copy(in, in + n, out);
    return true;
  }
  for (std::size_t begin = 0; begin < n; begin += Chunk)
  {
    const std::size_t count = std::min(Chunk, n - begin);
    if (!call(controller, in + begin, out + begin, static_cast<vtkIdType>(count), operation))
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
    // The coded streams are the payload, not metadata: ShareRepresentation sends them raw.
    if (array && array->GetName() &&
      std::string(array->GetName()) != vtkSparseGridRepresentation::StreamsArrayName &&
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
  return ReduceAll(controller,
    in,
    out,
    n,
    vtkCommunicator::SUM_OP,
    [](vtkMultiProcessController* c, const float* s, float* r, vtkIdType k, int op)
    { return c->AllReduce(s, r, k, op) != 0; });
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::SumAll(vtkMultiProcessController* controller,
  const double* in,
  double* out,
  std::size_t n)
{
  return ReduceAll(controller,
    in,
    out,
    n,
    vtkCommunicator::SUM_OP,
    [](vtkMultiProcessController* c, const double* s, double* r, vtkIdType k, int op)
    { return c->AllReduce(s, r, k, op) != 0; });
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::SumAll(vtkMultiProcessController* controller,
  const std::uint64_t* in,
  std::uint64_t* out,
  std::size_t n)
{
  // vtkMultiProcessController knows unsigned long long, which std::uint64_t may not be.
  std::vector<unsigned long long> send(in, in + n), receive(n);
  const bool ok = ReduceAll(controller,
    send.data(),
    receive.data(),
    n,
    vtkCommunicator::SUM_OP,
    [](vtkMultiProcessController* c,
      const unsigned long long* s,
      unsigned long long* r,
      vtkIdType k,
      int op) { return c->AllReduce(s, r, k, op) != 0; });
  std::copy(receive.begin(), receive.end(), out);
  return ok;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridParallel::MaxAll(vtkMultiProcessController* controller,
  const double* in,
  double* out,
  std::size_t n)
{
  return ReduceAll(controller,
    in,
    out,
    n,
    vtkCommunicator::MAX_OP,
    [](vtkMultiProcessController* c, const double* s, double* r, vtkIdType k, int op)
    { return c->AllReduce(s, r, k, op) != 0; });
}

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
  const bool valid =
    holder && vtkSparseGridRepresentation::FromPolyData(local, contents, &localError);
  error = localError;
  Outcome outcome = Agree(controller, holder && !valid ? Outcome::Failed : Outcome::Done, error);
  if (outcome != Outcome::Done)
  {
    return outcome;
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
  vtkNew<vtkPolyData> received; // no points: FromPolyData reads field and point data only
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
        contents = vtkSparseGridRepresentation::Contents();
      }
    }
    return Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
  }
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
      if (ok)
      {
        array->SetName(info.ArrayNames[static_cast<std::size_t>(i)].c_str());
        received->GetPointData()->AddArray(array);
      }
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
      contents = vtkSparseGridRepresentation::Contents();
    }
    else if (!vtkSparseGridRepresentation::FromPolyData(received, contents, &error))
    {
      ok = false;
    }
  }
  return Agree(controller, ok ? Outcome::Done : Outcome::Failed, error);
}
