/**
 * @class vtkSparseGridExecution
 * @brief Private helper: maps a filter's execution settings onto sparsegrid::ExecutionOptions.
 *
 * Threads go through vtkSMPTools with the STDThread backend (Debian's VTK defaults to the
 * sequential one), progress through vtkAlgorithm::UpdateProgress split into stages, and
 * cancellation through vtkAlgorithm::CheckAbort. It also collects what the core reports:
 * the backend that ran and any fallback note.
 */
#ifndef vtkSparseGridExecution_h
#define vtkSparseGridExecution_h

#include "vtkCoreExecution.h"            // for Execution
#include "vtkCoreExecutionMacros.h"      // for vtkCoreErrorOnceMacro
#include "vtkSmartPointer.h"             // for vtkSparseGridErrorOnce::Observer
#include "vtkSparseGridRepresentation.h" // for Contents
#include "vtkType.h"                     // for vtkMTimeType
#include "vtkWeakPointer.h"              // for vtkSparseGridErrorOnce::Watched

#include <sparsegrid/sparsegrid.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class vtkAlgorithm;
class vtkCommand;
class vtkExecutive;
class vtkInformation;
class vtkInformationVector;

class vtkSparseGridExecution : public vtkCoreExecution::Execution<sparsegrid::ExecutionOptions>
{
public:
  /// `backend`: 0 Auto, 1 CPU, 2 CUDA. `threads`: 0 for all hardware threads.
  vtkSparseGridExecution(vtkAlgorithm* algorithm,
    int backend,
    int threads,
    const sparsegrid::Optimizations& optimizations);

  ///@{
  /**
   * The memory estimate every reconstruction sized from a user's number goes through
   * (docs/robustness.md): the peak bytes of reconstructing `points` output points from
   * `contents`. Each output point costs its arrays at the representation's precision plus the
   * valid-point mask (measured with GNU time: 5.03 bytes per point of growth of the maximum
   * resident size for one float array at 43 M points, nothing else scales with the output);
   * error-bounded data add the decoded image that every probe interpolates from and one
   * piece's decoding buffers; a fixed reserve covers the pipeline's own small allocations.
   * Testing/Memory checks measured growth <= estimate <= 3 x measured growth.
   */
  static double ReconstructionPeakBytes(const vtkSparseGridRepresentation::Contents& contents,
    double points);
  /// Bytes of one output point: every component at the representation's precision + the mask.
  static double ReconstructionBytesPerPoint(const vtkSparseGridRepresentation::Contents& contents);
  ///@}

  ///@{
  /**
   * Settings are refused, never clamped into something the user did not ask for.
   * OutOfRange: the message for a value outside [low, high] ("<label> must be <low> to <high>
   * <meaning> (got <value>)."), empty inside. InvalidSettings: the message for the first of the
   * shared execution settings out of range (Backend, Level Of Detail, Evaluation Chunk Size,
   * Number Of Threads), empty when all are in range; std::nullopt for a setting the filter does
   * not have.
   */
  static std::string OutOfRange(const std::string& label,
    int value,
    int low,
    int high,
    const std::string& meaning);
  static std::string InvalidSettings(int backend,
    std::optional<int> levelOfDetail,
    std::optional<int> chunkSize,
    int numberOfThreads);
  ///@}

  /**
   * Checks an estimated peak against what this process may still use
   * (sparsegrid::availableMemoryBytes: available memory, cgroup limit, RLIMIT_AS). False with
   * `error` naming the size, `what` it was for and the limit that applied.
   */
  static bool CheckMemory(double bytes, const std::string& what, std::string* error);
};

/**
 * @class vtkSparseGridErrorOnce
 * @brief Private helper: a filter's failure is shown once, not once per pipeline pass.
 *
 * After a failed RequestData, VTK's executive prints its own "returned failure for request"
 * error, leaves the failed request's extent behind (the next request then fails with "update
 * extent ... outside the whole extent") and re-executes the filter on every later update:
 * ParaView updates a source for Apply, for its representation and for the Information panel,
 * so one mistake showed as three or more errors. Report() prints the message once per change
 * of the filter or of its input, keeps the executive's generic line from following it, and
 * clears the stale extent.
 */
class vtkSparseGridErrorOnce
{
public:
  vtkSparseGridErrorOnce();
  ~vtkSparseGridErrorOnce();
  vtkSparseGridErrorOnce(const vtkSparseGridErrorOnce&) = delete;
  vtkSparseGridErrorOnce& operator=(const vtkSparseGridErrorOnce&) = delete;

  /**
   * Reports `message` as an error of `algorithm` (vtkErrorMacro) and returns what RequestData
   * should return: 0 the first time, so the pipeline and callers see the failure; 1 when a
   * failure was already reported for the same modification times of the algorithm and of its
   * input (the output stays empty, and downstream filters and views do not fail on it again).
   * `outInfo`: the failed output's pipeline information (its stale extent is cleared).
   */
  int Report(vtkAlgorithm* algorithm,
    vtkInformation* outInfo,
    vtkMTimeType inputTime,
    const std::string& message);
  /**
   * The same for a filter that reports its failures itself (vtkErrorMacro, then return 0):
   * runs `requestData` with the filter's errors held back; on failure shows them once (as
   * Report does, including the executive's generic line kept back and the stale extent
   * cleared) and empties the outputs; a repeat of the same failure shows nothing and returns 1.
   * Errors of a run that succeeds are shown as they are.
   */
  int Run(vtkAlgorithm* algorithm,
    vtkInformation* outInfo,
    vtkMTimeType inputTime,
    const std::function<int()>& requestData);
  /**
   * The input time for Run: the pipeline modification time of `algorithm` (its own and every
   * upstream filter's settings), which, unlike the input data's time, stays the same when a
   * view asks for another time step of an input that has none and the source runs again.
   */
  static vtkMTimeType PipelineTime(vtkAlgorithm* algorithm);
  /**
   * The RequestData of vtkCoreErrorOnceMacro (vtkCoreExecutionMacros.h): `produce` run by
   * `errors` (created on first use) for the first output's information and the pipeline time
   * of `algorithm`.
   */
  static int Request(vtkAlgorithm* algorithm,
    std::unique_ptr<vtkSparseGridErrorOnce>& errors,
    vtkInformationVector* outputVector,
    const std::function<int()>& produce);
  /// Forgets the last failure (call after a success, so that the same failure shows again).
  void Clear() { this->Failed = false; }
  /**
   * The end of a successful RequestData: forgets the last failure, shows the execution's
   * fall-back `note` (if any) as a warning of `algorithm`, completes the progress bar; returns 1.
   */
  int Succeed(vtkAlgorithm* algorithm, const std::string& note);

private:
  friend class vtkSparseGridErrorOnceObserver;
  /// Shows a failure that is new (true), or recognises a repeat (false); clears the extent.
  bool IsNewFailure(vtkAlgorithm* algorithm, vtkInformation* outInfo, vtkMTimeType inputTime);
  /// Keeps the executive's generic line that follows a reported failure back.
  void WatchExecutive(vtkAlgorithm* algorithm);
  bool Failed = false;
  vtkMTimeType AlgorithmTime = 0;
  vtkMTimeType InputTime = 0;
  /// Set between a reported failure and the executive's generic line that follows it.
  bool SwallowExecutiveLine = false;
  vtkWeakPointer<vtkExecutive> Watched;
  vtkSmartPointer<vtkCommand> Observer;
};

/// In a filter's .cxx: the RequestData that vtkCoreErrorOnceMacro declares.
#define vtkSparseGridErrorOnceRequestDataMacro(thisClass)                                          \
  int thisClass::RequestData(vtkInformation* request,                                              \
    vtkInformationVector** inputVector,                                                            \
    vtkInformationVector* outputVector)                                                            \
  {                                                                                                \
    return vtkSparseGridErrorOnce::Request(this,                                                   \
      this->Errors,                                                                                \
      outputVector,                                                                                \
      [&] { return this->ProduceData(request, inputVector, outputVector); });                      \
  }

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridExecution.h
