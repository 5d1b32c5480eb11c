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
  // In a parallel run only piece 0 writes, after receiving the coded bricks that other
  // processes hold (the fixed-level representation lives whole on piece 0 already). Every
  // process still runs every time step, even after a failure, because the upstream filters of
  // each step and the exchange are collective: a process that stopped early would leave the
  // others waiting in them.
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
  if (exchange)
  {
    // Collective, on every process at every step: the writing process (piece 0) obtains the
    // coded bricks it does not hold from the processes that do.
    vtkNew<vtkInformation> request;
    request->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), this->Piece);
    request->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), this->NumberOfPieces);
    vtkMultiProcessController* controller = vtkSparseGridParallel::DistributedController(request);
    using Outcome = vtkSparseGridParallel::Outcome;
    Outcome shared = vtkSparseGridParallel::ShareRepresentation(controller, input, contents, error);
    if (shared == Outcome::Done &&
      contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded)
    {
      const std::vector<char> needed(static_cast<std::size_t>(contents.Info.NumberOfPieces()),
        this->Piece == 0 && !internals.Failed ? 1 : 0);
      shared = vtkSparseGridParallel::FetchPieces(controller, needed, contents, error);
    }
    valid = shared == Outcome::Done;
  }
  if (parallel && (this->Piece != 0 || internals.Failed))
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
  const bool coded = info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded;

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
  std::vector<sgf::ArrayDescription> arrays;
  std::vector<std::vector<float>> floatStorage(contents.Coefficients.size());
  std::vector<std::vector<double>> doubleStorage(contents.Coefficients.size());
  // Error-bounded: one byte dataset per array holds its streams, piece by piece, component by
  // component (the representation keeps them piece by piece, array by array).
  std::vector<std::vector<std::uint8_t>> byteStorage(info.ArrayNames.size());
  for (std::size_t k = 0; k < info.ArrayNames.size(); ++k)
  {
    sgf::ArrayInput in;
    in.name = info.ArrayNames[k];
    if (coded)
    {
      in.components = info.Components[k];
      in.absoluteBound = info.AbsoluteBound[k];
      in.streamOffsets.push_back(0);
      for (int p = 0; p < info.NumberOfPieces(); ++p)
      {
        for (int c = 0; c < info.Components[k]; ++c)
        {
          const std::size_t s = contents.StreamIndex(p, k, c);
          const std::uint8_t* stream = contents.StreamData(s);
          byteStorage[k].insert(byteStorage[k].end(), stream, stream + contents.StreamSize(s));
          in.streamOffsets.push_back(byteStorage[k].size());
        }
      }
      in.bytes = byteStorage[k].data();
    }
    else
    {
      // In place: the representation holds contiguous arrays of the grid's precision.
      vtkDataArray* array = contents.Coefficients[k];
      in.components = array->GetNumberOfComponents();
      in.data = info.Precision == sparsegrid::Precision::Float
        ? static_cast<const void*>(
            vtkSparseGridArrays::ContiguousValues<float>(array, floatStorage[k]))
        : static_cast<const void*>(
            vtkSparseGridArrays::ContiguousValues<double>(array, doubleStorage[k]));
    }
    in.metrics = sgf::arrayMetricsOf(info, k);
    arrays.push_back({ in.name, in.components });
    step.arrays.push_back(in);
  }

  if (!internals.File.active())
  {
    sgf::WriteOptions options;
    options.writer = "SparseGrid ParaView plugin (vtkSparseGridWriter)";
    if (!(error = internals.File.begin(this->FileName, grid, arrays, options)).empty())
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
  if (!(error = internals.File.writeStep(step)).empty())
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
