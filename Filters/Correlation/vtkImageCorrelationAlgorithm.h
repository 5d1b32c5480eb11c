/**
 * @class vtkImageCorrelationAlgorithm
 * @brief Common base of Image Correlation (vtkImageCrossCorrelation) and Image Displacement
 * (vtkImageWindowDisplacement): two 2-D images, the execution choices both filters share, and
 * the pipeline passes of the time-shift mode.
 *
 * Port 0 (Input) is compared with port 1 (Reference). With nothing connected to Reference, a
 * temporal Input is compared with itself TimeShift steps later (vtkCorrelationTimeShift in
 * vtkCorrelationFilterSupport.h does the two passes). A subclass computes one Input /
 * Reference pair into its output (Compute) with the array selected on Input; this class asks
 * for the whole extents, takes the inputs (or the two time steps) and checks that they exist.
 */
#ifndef vtkImageCorrelationAlgorithm_h
#define vtkImageCorrelationAlgorithm_h

#include "SparseGridCorrelationModule.h" // for the export macro
#include "vtkCoreExecutionMacros.h"      // for vtkCoreExecutionMacro
#include "vtkImageAlgorithm.h"

#include <memory> // for the time-shift helper
#include <string> // for std::string

class vtkCorrelationTimeShift;
class vtkDataArray;
template<typename T>
struct vtkCorrelationPair;
struct vtkCorrelationPairs;

class SPARSEGRIDCORRELATION_EXPORT vtkImageCorrelationAlgorithm : public vtkImageAlgorithm
{
public:
  vtkAbstractTypeMacro(vtkImageCorrelationAlgorithm, vtkImageAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  /// The reference image (port 1, optional: without it the time shift below is used).
  void SetReferenceConnection(vtkAlgorithmOutput* output) { this->SetInputConnection(1, output); }

  ///@{
  /**
   * Without a Reference: compare the shown time step of Input (as the reference) with the step
   * TimeShift steps later (negative: earlier). Default 1. A shifted step outside the input's
   * steps is an error.
   */
  vtkSetMacro(TimeShift, int);
  vtkGetMacro(TimeShift, int);
  ///@}

  ///@{
  /**
   * Sub-pixel peak fit: 0 none, 1 parabolic, 2 Gaussian (default).
   */
  vtkSetMacro(PeakFit, int);
  vtkGetMacro(PeakFit, int);
  ///@}

  ///@{
  /**
   * Algorithm 0 Auto (default: direct or FFT by the measured crossover), 1 Direct, 2 FFT.
   */
  vtkSetMacro(Algorithm, int);
  vtkGetMacro(Algorithm, int);
  ///@}

  /// Backend and NumberOfThreads (vtkCoreExecutionMacros.h).
  vtkCoreExecutionMacro();

  ///@{
  /**
   * GPU direct kernel: Kernel 0 Auto (default: the fastest measured; the other settings are
   * then ignored), 1 one thread per lag, 2 warp shuffle (the study's variants), 3 register-tiled
   * (shared memory; beyond the study), 4 split-tiled (shared memory, lanes over pairs and over
   * each lag tile's sum; beyond the study), 5 pair per lane (shared memory, each lane of a warp
   * one pair, 8 lags in a sliding register window; beyond the study, for many windows);
   * WorkDistribution 0 none, 1 rectangle, 2 triangle; RowsPerWorker, the overlap rows per task
   * of those distributions (default 8); ShiftsPerThread 1, 2, 4, 8; WarpsPerBlock 1..32
   * (default 4). Values outside these ranges are refused when the filter runs.
   */
  vtkSetMacro(Kernel, int);
  vtkGetMacro(Kernel, int);
  vtkSetMacro(WorkDistribution, int);
  vtkGetMacro(WorkDistribution, int);
  vtkSetMacro(RowsPerWorker, int);
  vtkGetMacro(RowsPerWorker, int);
  vtkSetMacro(ShiftsPerThread, int);
  vtkGetMacro(ShiftsPerThread, int);
  vtkSetMacro(WarpsPerBlock, int);
  vtkGetMacro(WarpsPerBlock, int);
  ///@}

protected:
  vtkImageCorrelationAlgorithm();
  ~vtkImageCorrelationAlgorithm() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  vtkCoreErrorOnceMacro();

  /// One Input / Reference pair (or the two time steps), checked and extracted (float arrays
  /// in float, others in double; see vtkCorrelationFilterSupport.h), into its output. 1 on
  /// success (and on abort), 0 after vtkErrorMacro.
  virtual int Compute(const vtkCorrelationPairs& pairs) = 0;
  /// The filter's name in messages, e.g. "Image Correlation".
  virtual const char* GetLabel() const = 0;
  /// The message for the first setting out of its range (refused, never clamped); empty when
  /// all are in range. Filters add their own settings to the shared ones.
  virtual std::string InvalidSettings() const;

  int TimeShift = 1;
  int PeakFit = 2;
  int Algorithm = 0;
  int Kernel = 0;
  int WorkDistribution = 0;
  int RowsPerWorker = 8;
  int ShiftsPerThread = 1;
  int WarpsPerBlock = 4;

  // The time-shift mode's state between its two passes (see vtkCorrelationFilterSupport.h).
  std::unique_ptr<vtkCorrelationTimeShift> TimeShifter;

private:
  template<typename T>
  int Extract(vtkImageData* input,
    vtkImageData* reference,
    vtkDataArray* array,
    vtkImageData* output);
  vtkImageCorrelationAlgorithm(const vtkImageCorrelationAlgorithm&) = delete;
  void operator=(const vtkImageCorrelationAlgorithm&) = delete;
};

#endif
