#include "vtkSparseGridWriter.h"

#include "SparseGridFile.h"
#include "vtkSparseGridArrays.h"
#include "vtkSparseGridParallel.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkAOSDataArrayTemplate.h"
#include "vtkDataArray.h"
#include "vtkDataObject.h"
#include "vtkErrorCode.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPolyData.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include "vtkMultiProcessController.h"
#ifdef SPARSEGRID_HAVE_VTK_MPI
#include "vtkMPI.h"
#include "vtkMPICommunicator.h"
#endif

#include <algorithm>
#include <string>
#include <vector>

namespace sgf = sparsegrid::file;

vtkStandardNewMacro(vtkSparseGridWriter);

struct vtkSparseGridWriter::vtkInternals
{
  std::vector<double> InputTimes; ///< TIME_STEPS of the input (empty when it has none)
  std::size_t CurrentIndex = 0;   ///< step being written while looping over time
  bool Failed = false;            ///< a parallel run failed: finish the loop without writing
  sgf::Writer File;               ///< active between the first and the last step
  std::string LastError;
};

namespace
{
/**
 * The MPI communicator (an MPI_Comm*) through which every process of `controller` writes its
 * own bricks into the one file, or nullptr when they cannot (no controller, not MPI, or an HDF5
 * without MPI-IO): then piece 0 writes alone. The same answer on every process.
 */
const void* ParallelFileCommunicator(vtkMultiProcessController* controller)
{
#ifdef SPARSEGRID_HAVE_VTK_MPI
  auto* communicator =
    controller ? vtkMPICommunicator::SafeDownCast(controller->GetCommunicator()) : nullptr;
  if (communicator && communicator->GetMPIComm() && sgf::Writer::parallelSupported())
  {
    return communicator->GetMPIComm()->GetHandle();
  }
#else
  (void)controller;
#endif
  return nullptr;
}

/// Copies of the representation's values that the file layer needs contiguous.
struct ArrayStorage
{
  std::vector<std::vector<float>> Floats;
  std::vector<std::vector<double>> Doubles;
  std::vector<std::vector<std::uint8_t>> Bytes;
};

/**
 * The arrays of the step to write from `contents` (into step.arrays; returns their
 * descriptions). Fixed level: the coefficients, in place where contiguous. Error-bounded: per
 * array, its streams piece by piece, component by component (the representation keeps them
 * piece by piece, array by array); `rank` < 0: every stream, copied into `storage` (one process
 * writes the file); otherwise the streams of the pieces that process `rank` owns, in place
 * (every process writes its own).
 */
std::vector<sgf::ArrayDescription> StepArrays(const vtkSparseGridRepresentation::Contents& contents,
  int rank,
  ArrayStorage& storage,
  sgf::StepInput& step)
{
  const vtkSparseGridRepresentation::Description& info = contents.Info;
  const bool coded = info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded;
  const std::size_t n = info.ArrayNames.size();
  storage.Floats.resize(n);
  storage.Doubles.resize(n);
  storage.Bytes.resize(n);
  step.arrays.resize(n);
  std::vector<sgf::ArrayDescription> arrays;
  for (std::size_t k = 0; k < n; ++k)
  {
    sgf::ArrayInput& in = step.arrays[k];
    in.name = info.ArrayNames[k];
    in.metrics = sgf::arrayMetricsOf(info, k);
    if (!coded)
    {
      vtkDataArray* array = contents.Coefficients[k];
      in.components = array->GetNumberOfComponents();
      in.data = info.Precision == sparsegrid::Precision::Float
        ? static_cast<const void*>(
            vtkSparseGridArrays::ContiguousValues<float>(array, storage.Floats[k]))
        : static_cast<const void*>(
            vtkSparseGridArrays::ContiguousValues<double>(array, storage.Doubles[k]));
      arrays.push_back({ in.name, in.components });
      continue;
    }
    std::vector<std::uint8_t>& bytes = storage.Bytes[k];
    in.components = info.Components[k];
    in.absoluteBound = info.AbsoluteBound[k];
    in.streamOffsets.assign(1, 0);
    for (int p = 0; p < info.NumberOfPieces(); ++p)
    {
      const bool mine = rank >= 0 && contents.Holds(p) &&
        static_cast<std::size_t>(p) < contents.PieceOwners.size() &&
        contents.PieceOwners[p] == rank;
      for (int c = 0; c < info.Components[k]; ++c)
      {
        const std::size_t s = contents.StreamIndex(p, k, c);
        const std::uint8_t* stream = contents.StreamData(s);
        if (rank < 0)
        {
          bytes.insert(bytes.end(), stream, stream + contents.StreamSize(s));
        }
        else
        {
          in.streams.push_back(mine ? stream : nullptr);
        }
        in.streamOffsets.push_back(in.streamOffsets.back() + contents.StreamSize(s));
      }
    }
    in.bytes = rank < 0 ? bytes.data() : nullptr;
    arrays.push_back({ in.name, in.components });
  }
  return arrays;
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridWriter::vtkSparseGridWriter()
  : Internals(new vtkInternals)
{
}

//------------------------------------------------------------------------------------------------
vtkSparseGridWriter::~vtkSparseGridWriter()
{
  this->SetFileName(nullptr);
}

//------------------------------------------------------------------------------------------------
vtkPolyData* vtkSparseGridWriter::GetInput()
{
  return vtkPolyData::SafeDownCast(this->Superclass::GetInput());
}

//------------------------------------------------------------------------------------------------
const char* vtkSparseGridWriter::GetLastError() const
{
  return this->Internals->LastError.c_str();
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridWriter::Write()
{
  vtkInternals& internals = *this->Internals;
  // Every write starts from the first step with no file open, whatever an interrupted earlier
  // write left behind.
  internals.File.abort();
  internals.CurrentIndex = 0;
  internals.LastError.clear();
  this->BytesWritten = 0;
  this->BytesReceived = 0;
  this->SetErrorCode(vtkErrorCode::NoError);
  this->Superclass::Write();
  if (internals.File.active())
  {
    // The time loop stopped early (an upstream failure ends the executive's loop before our
    // last RequestData): drop the partial file.
    internals.File.abort();
    internals.CurrentIndex = 0;
    if (this->GetErrorCode() == vtkErrorCode::NoError)
    {
      internals.LastError = "the pipeline stopped before every time step was written; nothing "
                            "was written to " +
        std::string(this->FileName ? this->FileName : "");
      this->SetErrorCode(vtkErrorCode::UnknownError);
      vtkErrorMacro(<< internals.LastError);
    }
  }
  return this->GetErrorCode() == vtkErrorCode::NoError ? 1 : 0;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridWriter::FillInputPortInformation(int, vtkInformation* info)
{
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkPolyData");
  return 1;
}

//------------------------------------------------------------------------------------------------
vtkTypeBool vtkSparseGridWriter::ProcessRequest(vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  // vtkWriter forwards only REQUEST_DATA; time stepping needs the two passes before it.
  if (request->Has(vtkDemandDrivenPipeline::REQUEST_INFORMATION()))
  {
    return this->RequestInformation(request, inputVector, outputVector);
  }
  if (request->Has(vtkStreamingDemandDrivenPipeline::REQUEST_UPDATE_EXTENT()))
  {
    return this->RequestUpdateExtent(request, inputVector, outputVector);
  }
  return this->Superclass::ProcessRequest(request, inputVector, outputVector);
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridWriter::RequestInformation(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector*)
{
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  std::vector<double>& times = this->Internals->InputTimes;
  times.clear();
  if (inInfo && inInfo->Has(vtkStreamingDemandDrivenPipeline::TIME_STEPS()))
  {
    const int n = inInfo->Length(vtkStreamingDemandDrivenPipeline::TIME_STEPS());
    const double* values = inInfo->Get(vtkStreamingDemandDrivenPipeline::TIME_STEPS());
    times.assign(values, values + n);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridWriter::RequestUpdateExtent(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector*)
{
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  const std::vector<double>& times = this->Internals->InputTimes;
  if (inInfo && this->WriteAllTimeSteps && !times.empty())
  {
    const std::size_t i = std::min(this->Internals->CurrentIndex, times.size() - 1);
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP(), times[i]);
  }
  if (inInfo && this->NumberOfPieces > 1)
  {
    // This process's piece, as every other consumer asks: the upstream filters then run
    // distributed instead of each process computing (or gathering) the whole thing.
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), this->Piece);
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), this->NumberOfPieces);
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridWriter::RequestData(vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector*)
{
  vtkInternals& internals = *this->Internals;
  const std::vector<double>& times = internals.InputTimes;
  const bool allSteps = this->WriteAllTimeSteps && !times.empty();
  if (internals.CurrentIndex == 0)
  {
    this->SetErrorCode(vtkErrorCode::NoError);
    internals.LastError.clear();
    internals.File.abort();
    internals.Failed = false;
  }
  // In a parallel run every process writes its own coded bricks into the one file at once
  // (parallel HDF5); without MPI-IO, piece 0 writes alone after receiving the bricks that other
  // processes hold (the fixed-level representation lives whole on piece 0 already). Every
  // process still runs every time step, even after a failure, because the upstream filters of
  // each step, the exchange and the parallel file are collective: a process that stopped early
  // would leave the others waiting in them.
  const bool parallel = this->NumberOfPieces > 1;
  auto nextStep = [&]()
  {
    if (allSteps && internals.CurrentIndex + 1 < times.size())
    {
      ++internals.CurrentIndex;
      request->Set(vtkStreamingDemandDrivenPipeline::CONTINUE_EXECUTING(), 1);
      this->UpdateProgress(static_cast<double>(internals.CurrentIndex) / times.size());
      return 1;
    }
    request->Remove(vtkStreamingDemandDrivenPipeline::CONTINUE_EXECUTING());
    internals.CurrentIndex = 0;
    return 1;
  };
  // Any failure drops the temporary file and ends the loop (in parallel: the writing only):
  // nothing appears under FileName.
  auto fail = [&](unsigned long code, const std::string& message)
  {
    internals.File.abort();
    internals.LastError = message;
    this->SetErrorCode(code);
    vtkErrorMacro(<< message);
    if (parallel)
    {
      internals.Failed = true;
      return nextStep();
    }
    internals.CurrentIndex = 0;
    request->Remove(vtkStreamingDemandDrivenPipeline::CONTINUE_EXECUTING());
    return 1; // the error code, not the pipeline, reports it (as vtkWriter does)
  };
  vtkPolyData* input = vtkPolyData::GetData(inputVector[0], 0);
  vtkSparseGridRepresentation::Contents contents;
  std::string error;
  bool valid = false;
  // A distributed error-bounded representation (every process's piece carries the index) is
  // spread over the processes; the others (fixed level, the .sgrid reader's) are whole on
  // piece 0, whose process writes alone, as Catalyst scripts that write from rank 0 only do.
  const bool exchange = parallel && vtkSparseGridRepresentation::IsDistributed(input);
  const void* communicator = nullptr;
  int rank = -1; // the process writing its own bricks in a parallel write (-1: one writes all)
  if (exchange)
  {
    // Collective, on every process at every step: every process learns the global index; with
    // a parallel file each then writes its own bricks, otherwise the writing process (piece 0)
    // obtains the coded bricks it does not hold from the processes that do.
    vtkNew<vtkInformation> request;
    request->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), this->Piece);
    request->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), this->NumberOfPieces);
    vtkMultiProcessController* controller = vtkSparseGridParallel::DistributedController(request);
    communicator = ParallelFileCommunicator(controller);
    rank = communicator ? controller->GetLocalProcessId() : -1;
    using Outcome = vtkSparseGridParallel::Outcome;
    Outcome shared = vtkSparseGridParallel::ShareRepresentation(controller, input, contents, error);
    if (!communicator && shared == Outcome::Done &&
      contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded)
    {
      const std::vector<char> needed(static_cast<std::size_t>(contents.Info.NumberOfPieces()),
        this->Piece == 0 && !internals.Failed ? 1 : 0);
      shared = vtkSparseGridParallel::FetchPieces(controller, needed, contents, error);
      this->BytesReceived += static_cast<vtkTypeInt64>(contents.BytesReceived);
    }
    valid = shared == Outcome::Done;
  }
  if (parallel && ((this->Piece != 0 && !communicator) || internals.Failed))
  {
    return nextStep();
  }
  if (!this->FileName || !*this->FileName)
  {
    return fail(vtkErrorCode::NoFileNameError, "no file name was set");
  }
  if (!input)
  {
    return fail(vtkErrorCode::UnknownError, "the input is not a vtkPolyData");
  }
  if (!exchange)
  {
    valid = vtkSparseGridRepresentation::FromPolyData(input, contents, &error) &&
      vtkSparseGridParallel::FetchPieces(nullptr,
        std::vector<char>(static_cast<std::size_t>(contents.Info.NumberOfPieces()), 1),
        contents,
        error) == vtkSparseGridParallel::Outcome::Done;
  }
  if (!valid)
  {
    return fail(vtkErrorCode::FileFormatError,
      "the input is not a compressed sparse-grid representation (the output of Sparse Grid "
      "Hierarchize or of the .sgrid reader with OutputReconstructedImage off): " +
        error);
  }
  const vtkSparseGridRepresentation::Description& info = contents.Info;

  if (info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded && info.LevelOfDetail > 0)
  {
    return fail(vtkErrorCode::FileFormatError,
      "cannot write " + std::string(this->FileName) + ": the representation holds only the first " +
        std::to_string(info.LevelOfDetail) +
        " levels of detail (read the file with Level Of Detail 0 to write all of it)");
  }
  const sgf::GridDescription grid = sgf::recordOf(info);

  sgf::StepInput step;
  if (allSteps)
  {
    step.time = times[internals.CurrentIndex];
  }
  else if (input->GetInformation()->Has(vtkDataObject::DATA_TIME_STEP()))
  {
    step.time = input->GetInformation()->Get(vtkDataObject::DATA_TIME_STEP());
  }
  step.metrics = sgf::stepMetricsOf(info);
  ArrayStorage storage;
  const std::vector<sgf::ArrayDescription> arrays = StepArrays(contents, rank, storage, step);

  if (!internals.File.active())
  {
    sgf::WriteOptions options;
    options.writer = "SparseGrid ParaView plugin (vtkSparseGridWriter)";
    error = communicator
      ? internals.File.beginParallel(this->FileName, grid, arrays, communicator, options)
      : internals.File.begin(this->FileName, grid, arrays, options);
    if (!error.empty())
    {
      return fail(vtkErrorCode::CannotOpenFileError, error);
    }
  }
  else if (grid != internals.File.grid())
  {
    return fail(vtkErrorCode::FileFormatError,
      "cannot write " + std::string(this->FileName) + ": the grid of time step " +
        std::to_string(internals.CurrentIndex) +
        " differs from the first step's; one file holds one grid (write the steps to separate "
        "files instead)");
  }
  error = internals.File.writeStep(step);
  this->BytesWritten = static_cast<vtkTypeInt64>(internals.File.bytesWritten());
  if (!error.empty())
  {
    return fail(vtkErrorCode::UnknownError, error);
  }

  const bool lastStep = !(allSteps && internals.CurrentIndex + 1 < times.size());
  nextStep();
  if (!lastStep)
  {
    return 1;
  }
  if (!(error = internals.File.commit()).empty())
  {
    return fail(vtkErrorCode::UnknownError, error);
  }
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridWriter::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "FileName: " << (this->FileName ? this->FileName : "(none)") << "\n";
  os << indent << "WriteAllTimeSteps: " << this->WriteAllTimeSteps << "\n";
  os << indent << "Piece: " << this->Piece << " of " << this->NumberOfPieces << "\n";
}
