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
#include "vtkImageCorrelationAlgorithm.h"

class SPARSEGRIDCORRELATION_EXPORT vtkImageCrossCorrelation : public vtkImageCorrelationAlgorithm
{
public:
  static vtkImageCrossCorrelation* New();
  vtkTypeMacro(vtkImageCrossCorrelation, vtkImageCorrelationAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /**
   * Lags computed: 0 Full, 1 Same (default), 2 Valid.
   */
  vtkSetMacro(Mode, int);
  vtkGetMacro(Mode, int);
  ///@}

  ///@{
  /**
   * 0 None (raw sum of products), 1 NCC, 2 ZNCC (default: local means removed, values in
   * [-1, 1], 1 for a perfect match whatever the brightness and contrast).
   */
  vtkSetMacro(Normalization, int);
  vtkGetMacro(Normalization, int);
  ///@}

  ///@{
  /**
   * Normalised values are 0 where the overlap is below this fraction of the smaller image
   * (default 0.25), so that tiny overlaps at the map's edges cannot make a spurious peak.
   * Values outside [0, 1] are refused when the filter runs.
   */
  vtkSetMacro(MinimumOverlap, double);
  vtkGetMacro(MinimumOverlap, double);
  ///@}

protected:
  vtkImageCrossCorrelation();
  ~vtkImageCrossCorrelation() override;

  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int Compute(const vtkCorrelationPairs& pairs) override;
  const char* GetLabel() const override { return "Image Correlation"; }
  std::string InvalidSettings() const override;

  int Mode = 1;
  int Normalization = 2;
  double MinimumOverlap = 0.25;

private:
  vtkImageCrossCorrelation(const vtkImageCrossCorrelation&) = delete;
  void operator=(const vtkImageCrossCorrelation&) = delete;
  template<typename T>
  int Correlate(const vtkCorrelationPair<T>& pair);
};

#endif
