#include "SparseGridCatalystAdaptor.h"

#include "vtkCPDataDescription.h"
#include "vtkCPInputDataDescription.h"
#include "vtkCPProcessor.h"
#include "vtkCPPythonScriptV2Pipeline.h"
#include "vtkDataObject.h"
#include "vtkDoubleArray.h"
#include "vtkImageData.h"
#include "vtkMPI.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"

#include <cstdlib>

struct SparseGridCatalystAdaptor::vtkInternals
{
  vtkSmartPointer<vtkCPProcessor> Processor;
  MPI_Comm Comm = MPI_COMM_NULL;
};

namespace
{
/// Puts directory in front of PV_PLUGIN_PATH, where ParaView looks for plugins by name
/// (LoadDistributedPlugin in the script) and which it reads once, while it initializes.
void PrependPluginPath(const std::string& directory)
{
  if (directory.empty())
  {
    return;
  }
  const char* current = std::getenv("PV_PLUGIN_PATH");
  std::string value = directory;
  if (current && *current)
  {
    value += ":";
    value += current;
  }
  setenv("PV_PLUGIN_PATH", value.c_str(), 1);
}
}

//------------------------------------------------------------------------------------------------
SparseGridCatalystAdaptor::SparseGridCatalystAdaptor()
  : Internals(new vtkInternals)
{
}

//------------------------------------------------------------------------------------------------
SparseGridCatalystAdaptor::~SparseGridCatalystAdaptor()
{
  this->Finalize();
}

//------------------------------------------------------------------------------------------------
bool SparseGridCatalystAdaptor::Initialize(MPI_Comm comm,
  const std::vector<std::string>& scripts,
  const std::string& pluginDirectory,
  std::string* error)
{
  vtkInternals& internals = *this->Internals;
  PrependPluginPath(pluginDirectory);
  internals.Comm = comm;
  internals.Processor = vtkSmartPointer<vtkCPProcessor>::New();
  // Catalyst keeps its own handle on the communicator; the opaque wrapper only carries it.
  vtkMPICommunicatorOpaqueComm opaque(&internals.Comm);
  int ok = internals.Processor->Initialize(opaque) ? 1 : 0;
  std::string why = ok ? "" : "vtkCPProcessor::Initialize failed";
  for (const std::string& script : scripts)
  {
    if (!ok)
    {
      break;
    }
    // Version 2 scripts explicitly: detection by content would need a "script-version: 2"
    // comment in the first line, which a user's script may not have.
    vtkNew<vtkCPPythonScriptV2Pipeline> pipeline;
    if (!pipeline->Initialize(script.c_str()))
    {
      ok = 0;
      why = "cannot load the Catalyst script " + script;
      break;
    }
    internals.Processor->AddPipeline(pipeline);
  }
  // A script can fail on one rank only (a file system that one node does not see): decide
  // together, so that no rank goes on to CoProcess alone.
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all)
  {
    if (error)
    {
      *error = ok ? "a Catalyst script failed to load on another rank" : why;
    }
    internals.Processor->Finalize();
    internals.Processor = nullptr;
    return false;
  }
  return true;
}

//------------------------------------------------------------------------------------------------
bool SparseGridCatalystAdaptor::CoProcess(const ImagePiece& piece, double time, long step)
{
  vtkInternals& internals = *this->Internals;
  if (!internals.Processor)
  {
    return false;
  }
  vtkNew<vtkCPDataDescription> description;
  description->AddInput(piece.Channel.c_str());
  description->SetTimeData(time, step);
  // Asking first lets the pipelines skip steps (their trigger) before anything is built.
  if (!internals.Processor->RequestDataDescription(description))
  {
    return false;
  }
  vtkCPInputDataDescription* input = description->GetInputDescriptionByName(piece.Channel.c_str());
  if (!input || !input->GetIfGridIsNecessary())
  {
    return false;
  }

  // Image pieces are described by their extent in the global index space; the whole extent
  // on the input description tells Catalyst's producer (and every filter) how big the global
  // image is, which a piece alone cannot.
  vtkNew<vtkImageData> image;
  std::array<int, 6> extent = piece.Extent; // VTK's setters take non-const pointers
  std::array<int, 6> wholeExtent = piece.WholeExtent;
  image->SetExtent(extent.data());
  image->SetOrigin(piece.Origin.data());
  image->SetSpacing(piece.Spacing.data());
  const vtkIdType count = image->GetNumberOfPoints();
  for (const auto& named : piece.PointArrays)
  {
    if (!input->IsFieldNeeded(named.first.c_str(), vtkDataObject::POINT))
    {
      continue;
    }
    // Zero copy: the array borrows the simulation's buffer (save = 1: VTK never frees it).
    vtkNew<vtkDoubleArray> array;
    array->SetName(named.first.c_str());
    array->SetArray(named.second, count, 1);
    image->GetPointData()->AddArray(array);
  }
  if (image->GetPointData()->GetNumberOfArrays() > 0)
  {
    image->GetPointData()->SetActiveScalars(image->GetPointData()->GetArray(0)->GetName());
  }
  input->SetGrid(image);
  input->SetWholeExtent(wholeExtent.data());
  internals.Processor->CoProcess(description);
  return true;
}

//------------------------------------------------------------------------------------------------
void SparseGridCatalystAdaptor::Finalize()
{
  vtkInternals& internals = *this->Internals;
  if (internals.Processor)
  {
    internals.Processor->Finalize();
    internals.Processor = nullptr;
  }
}
