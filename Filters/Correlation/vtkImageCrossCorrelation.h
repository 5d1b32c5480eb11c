/**
 * @class vtkImageCrossCorrelation
 * @brief Cross-correlation map of two 2-D images (CPU or CUDA, direct or FFT), with its peak.
 *
 * Port 0 (Input) is compared with port 1 (Reference): the output is an image in lag space whose
 * point (lag) d holds the correlation of Reference with Input moved by d, so a pure
 * translation Input(p) = Reference(p - d) peaks at d. Zero lag lies at the output's origin and
 * the spacing is the inputs', so lags read directly in world units. Mode Full covers every lag
 * with overlap, Same the Input's size centred on zero lag (default), Valid the lags where one
 * image lies inside the other (a template search).
 *
 * Field data: Correlation.PeakValue, Correlation.PeakLag (sub-pixel, in samples, per axis),
 * Correlation.PeakDisplacement (the same in world units), Correlation.PeakRatio (primary over
 * secondary peak), Correlation.ZeroLag (the map at zero lag), and Correlation.Backend,
 * Correlation.Algorithm, Correlation.BackendNote (what ran and any CPU fall-back).
 *
 * Both images must be 2-D (one axis of extent 1, any orientation), lie in the same plane and
 * have the same spacing; they may differ in size. The array selected on Input is looked up by
 * name on Reference. Float arrays are correlated in float, all others in double.
 *
 * Time shift: with nothing connected to Reference, a temporal Input is compared with itself
 * TimeShift steps later (like Temporal Array Operator): Reference is Input at the time step
 * shown (the requested time snapped to the last input step at or before it) and Input is the
 * step TimeShift steps after it, so the peak lag is the motion between the two steps. The two
 * steps are fetched one after the other (the pipeline executes upstream twice); the output
 * has the requested time and the field data Correlation.ReferenceTime and
 * Correlation.InputTime.
 *
 * The computation is correlation::correlate of CorrelationCore (docs/correlation.md).
 */
#ifndef vtkImageCrossCorrelation_h
#define vtkImageCrossCorrelation_h

#include "SparseGridCorrelationModule.h" // for the export macro
#include "vtkImageAlgorithm.h"

#include <memory> // for the time-shift helper

class vtkCorrelationTimeShift;

class SPARSEGRIDCORRELATION_EXPORT vtkImageCrossCorrelation : public vtkImageAlgorithm
{
public:
  static vtkImageCrossCorrelation* New();
  vtkTypeMacro(vtkImageCrossCorrelation, vtkImageAlgorithm);
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
   * Lags computed: 0 Full, 1 Same (default), 2 Valid.
   */
  vtkSetClampMacro(Mode, int, 0, 2);
  vtkGetMacro(Mode, int);
  ///@}

  ///@{
  /**
   * 0 None (raw sum of products), 1 NCC, 2 ZNCC (default: local means removed, values in
   * [-1, 1], 1 for a perfect match whatever the brightness and contrast).
   */
  vtkSetClampMacro(Normalization, int, 0, 2);
  vtkGetMacro(Normalization, int);
  ///@}

  ///@{
  /**
   * 0 Auto (default: direct or FFT by the measured crossover), 1 Direct, 2 FFT.
   */
  vtkSetClampMacro(Algorithm, int, 0, 2);
  vtkGetMacro(Algorithm, int);
  ///@}

  ///@{
  /**
   * 0 Auto (default), 1 CPU, 2 CUDA (falls back to the CPU with a warning).
   */
  vtkSetClampMacro(Backend, int, 0, 2);
  vtkGetMacro(Backend, int);
  ///@}

  ///@{
  /**
   * Sub-pixel peak fit: 0 none, 1 parabolic, 2 Gaussian (default).
   */
  vtkSetClampMacro(PeakFit, int, 0, 2);
  vtkGetMacro(PeakFit, int);
  ///@}

  ///@{
  /**
   * Normalised values are 0 where the overlap is below this fraction of the smaller image
   * (default 0.25), so that tiny overlaps at the map's edges cannot make a spurious peak.
   */
  vtkSetClampMacro(MinimumOverlap, double, 0.0, 1.0);
  vtkGetMacro(MinimumOverlap, double);
  ///@}

  ///@{
  /**
   * GPU direct kernel: Kernel 0 Auto (default: the fastest measured; the other settings are
   * then ignored), 1 one thread per lag, 2 warp shuffle (the study's variants), 3 register-tiled
   * (shared memory; beyond the study), 4 split-tiled (shared memory, lanes over pairs and over
   * each lag tile's sum; beyond the study); WorkDistribution 0 none, 1 rectangle, 2 triangle;
   * RowsPerWorker; ShiftsPerThread 1, 2, 4, 8; WarpsPerBlock 1..32.
   */
  vtkSetClampMacro(Kernel, int, 0, 4);
  vtkGetMacro(Kernel, int);
  vtkSetClampMacro(WorkDistribution, int, 0, 2);
  vtkGetMacro(WorkDistribution, int);
  vtkSetClampMacro(RowsPerWorker, int, 1, 1 << 20);
  vtkGetMacro(RowsPerWorker, int);
  vtkSetMacro(ShiftsPerThread, int);
  vtkGetMacro(ShiftsPerThread, int);
  vtkSetClampMacro(WarpsPerBlock, int, 1, 32);
  vtkGetMacro(WarpsPerBlock, int);
  ///@}

  ///@{
  /**
   * Threads used on the CPU; 0 (default) means all hardware threads.
   */
  vtkSetClampMacro(NumberOfThreads, int, 0, 4096);
  vtkGetMacro(NumberOfThreads, int);
  ///@}

protected:
  vtkImageCrossCorrelation();
  ~vtkImageCrossCorrelation() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int Mode = 1;
  int Normalization = 2;
  int Algorithm = 0;
  int Backend = 0;
  int PeakFit = 2;
  double MinimumOverlap = 0.25;
  int Kernel = 0;
  int WorkDistribution = 0;
  int RowsPerWorker = 8;
  int ShiftsPerThread = 1;
  int WarpsPerBlock = 4;
  int NumberOfThreads = 0;
  int TimeShift = 1;

  // The time-shift mode's state between its two passes (a private helper; see
  // vtkCorrelationFilterSupport.h).
  std::unique_ptr<vtkCorrelationTimeShift> TimeShifter;

private:
  vtkImageCrossCorrelation(const vtkImageCrossCorrelation&) = delete;
  void operator=(const vtkImageCrossCorrelation&) = delete;
  template<typename T>
  int Correlate(vtkImageData* input,
    vtkImageData* reference,
    vtkDataArray* array,
    vtkImageData* output);
};

#endif
