/**
 * @class vtkImageWindowDisplacement
 * @brief PIV/DIC-style displacements between two 2-D images from interrogation windows.
 *
 * Port 0 (Input) is compared with port 1 (Reference, e.g. the previous time step or the
 * original of a reconstruction). Square windows of WindowSize samples, centred Step samples
 * apart, are taken from Reference and searched in Input within +-SearchRadius samples by ZNCC;
 * all windows go to the core as one batch of small correlations (n-to-mn), on the GPU when one
 * is used. Only windows whose search region lies inside the image are computed.
 *
 * Output: an image on the window-centre lattice (spacing Step times the input spacing) with
 * point arrays Displacement (3 components, world units; the active vectors, ready for Glyph and
 * Stream Tracer), PeakHeight (ZNCC of the best match), PeakRatio (best over second-best local
 * maximum, capped at 1000) and Valid (1 where the peak is inside the search area, at least
 * MinimumPeakHeight and at least MinimumPeakRatio). Displacement d means Input(p) is
 * Reference(p - d). Field data Correlation.Backend / Algorithm / BackendNote say what ran.
 *
 * Time shift: with nothing connected to Reference, a temporal Input is compared with itself
 * TimeShift steps later, as in vtkImageCrossCorrelation (the displacements are then the motion
 * from the step shown to the shifted one; field data Correlation.ReferenceTime and
 * Correlation.InputTime).
 */
#ifndef vtkImageWindowDisplacement_h
#define vtkImageWindowDisplacement_h

#include "SparseGridCorrelationModule.h" // for the export macro
#include "vtkImageAlgorithm.h"

#include <memory> // for the time-shift helper

class vtkCorrelationTimeShift;

class SPARSEGRIDCORRELATION_EXPORT vtkImageWindowDisplacement : public vtkImageAlgorithm
{
public:
  static vtkImageWindowDisplacement* New();
  vtkTypeMacro(vtkImageWindowDisplacement, vtkImageAlgorithm);
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
   * Interrogation window edge in samples (default 32), distance between window centres
   * (default 16, i.e. 50% overlap) and the largest displacement searched per axis (default 8).
   */
  vtkSetClampMacro(WindowSize, int, 2, 1 << 14);
  vtkGetMacro(WindowSize, int);
  vtkSetClampMacro(Step, int, 1, 1 << 14);
  vtkGetMacro(Step, int);
  vtkSetClampMacro(SearchRadius, int, 1, 1 << 14);
  vtkGetMacro(SearchRadius, int);
  ///@}

  ///@{
  /**
   * Validity thresholds (defaults 0.3 and 1.2) and the sub-pixel fit (0 none, 1 parabolic,
   * 2 Gaussian, default).
   */
  vtkSetMacro(MinimumPeakHeight, double);
  vtkGetMacro(MinimumPeakHeight, double);
  vtkSetMacro(MinimumPeakRatio, double);
  vtkGetMacro(MinimumPeakRatio, double);
  vtkSetClampMacro(PeakFit, int, 0, 2);
  vtkGetMacro(PeakFit, int);
  ///@}

  ///@{
  /**
   * 0 Auto (default), 1 Direct, 2 FFT; Backend 0 Auto, 1 CPU, 2 CUDA (falls back to the CPU
   * with a warning); GPU direct kernel options as in vtkImageCrossCorrelation; CPU threads.
   */
  vtkSetClampMacro(Algorithm, int, 0, 2);
  vtkGetMacro(Algorithm, int);
  vtkSetClampMacro(Backend, int, 0, 2);
  vtkGetMacro(Backend, int);
  vtkSetClampMacro(Kernel, int, 0, 4);
  vtkGetMacro(Kernel, int);
  vtkSetClampMacro(WorkDistribution, int, 0, 2);
  vtkGetMacro(WorkDistribution, int);
  vtkSetMacro(ShiftsPerThread, int);
  vtkGetMacro(ShiftsPerThread, int);
  vtkSetClampMacro(NumberOfThreads, int, 0, 4096);
  vtkGetMacro(NumberOfThreads, int);
  ///@}

protected:
  vtkImageWindowDisplacement();
  ~vtkImageWindowDisplacement() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  int WindowSize = 32;
  int Step = 16;
  int SearchRadius = 8;
  double MinimumPeakHeight = 0.3;
  double MinimumPeakRatio = 1.2;
  int PeakFit = 2;
  int Algorithm = 0;
  int Backend = 0;
  int Kernel = 0;
  int WorkDistribution = 0;
  int ShiftsPerThread = 1;
  int NumberOfThreads = 0;
  int TimeShift = 1;
  // The time-shift mode's state between its two passes (see vtkCorrelationFilterSupport.h).
  std::unique_ptr<vtkCorrelationTimeShift> TimeShifter;

private:
  vtkImageWindowDisplacement(const vtkImageWindowDisplacement&) = delete;
  void operator=(const vtkImageWindowDisplacement&) = delete;
  template<typename T>
  int Displace(vtkImageData* input,
    vtkImageData* reference,
    vtkDataArray* array,
    vtkImageData* output);
};

#endif
