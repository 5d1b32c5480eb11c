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
#include "vtkImageCorrelationAlgorithm.h"

class SPARSEGRIDCORRELATION_EXPORT vtkImageWindowDisplacement : public vtkImageCorrelationAlgorithm
{
public:
  static vtkImageWindowDisplacement* New();
  vtkTypeMacro(vtkImageWindowDisplacement, vtkImageCorrelationAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /**
   * Interrogation window edge in samples (default 32, 2 to 256), distance between window
   * centres (default 16, i.e. 50% overlap; 1 to 256) and the largest displacement searched per
   * axis (default 8, 1 to 128). Values outside these ranges are refused when the filter runs.
   */
  vtkSetMacro(WindowSize, int);
  vtkGetMacro(WindowSize, int);
  vtkSetMacro(Step, int);
  vtkGetMacro(Step, int);
  vtkSetMacro(SearchRadius, int);
  vtkGetMacro(SearchRadius, int);
  ///@}

  ///@{
  /**
   * Validity thresholds (defaults 0.3 and 1.2; the sub-pixel fit is PeakFit).
   */
  vtkSetMacro(MinimumPeakHeight, double);
  vtkGetMacro(MinimumPeakHeight, double);
  vtkSetMacro(MinimumPeakRatio, double);
  vtkGetMacro(MinimumPeakRatio, double);
  ///@}

protected:
  vtkImageWindowDisplacement();
  ~vtkImageWindowDisplacement() override;

  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int Compute(const vtkCorrelationPairs& pairs) override;
  const char* GetLabel() const override { return "Image Displacement"; }
  std::string InvalidSettings() const override;

  int WindowSize = 32;
  int Step = 16;
  int SearchRadius = 8;
  double MinimumPeakHeight = 0.3;
  double MinimumPeakRatio = 1.2;

private:
  vtkImageWindowDisplacement(const vtkImageWindowDisplacement&) = delete;
  void operator=(const vtkImageWindowDisplacement&) = delete;
  template<typename T>
  int Displace(const vtkCorrelationPair<T>& pair);
};

#endif
