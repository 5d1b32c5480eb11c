/**
 * @class vtkCorrelationFilterSupport
 * @brief Private helpers of the correlation filters: the image plane of a 2-D vtkImageData,
 * array extraction through vtkArrayDispatch, input checks, and the core's execution options
 * (vtkSMPTools threads, abort through the AbortExecute flag).
 */
#ifndef vtkCorrelationFilterSupport_h
#define vtkCorrelationFilterSupport_h

#include <correlation/correlation.h>

#include <string>
#include <vector>

class vtkAlgorithm;
class vtkDataArray;
class vtkFieldData;
class vtkImageData;

class vtkCorrelationFilterSupport
{
public:
  /// The two image axes a 2-D image spans (axis 0 of the matrix first) and their sizes.
  struct Plane
  {
    int axes[2] = { 0, 1 };
    int normal = 2;
    int size[2] = { 0, 0 };
  };

  /**
   * The plane of an image given its whole extent: the axes with more than one sample (padded
   * with flat axes). False, with `error`, for 3-D or empty images.
   */
  static bool PlaneOf(const int extent[6], Plane& plane, std::string& error);

  /**
   * Checks that Input and Reference can be compared (same plane, same spacing within 1e-6
   * relative) and returns the named point array of each as one-component values.
   */
  template<typename T>
  static bool ExtractPair(vtkImageData* input,
    vtkImageData* reference,
    vtkDataArray* inputArray,
    Plane& plane,
    std::vector<T>& inputValues,
    std::vector<T>& referenceValues,
    std::string& error);

  /// Copies a one-component array (any value type) into `values`.
  template<typename T>
  static void Copy(vtkDataArray* array, std::vector<T>& values);

  /// Execution options: `backend` 0 Auto 1 CPU 2 CUDA, `algorithm` 0 Auto 1 Direct 2 FFT.
  static correlation::ExecutionOptions Options(vtkAlgorithm* algorithm,
    int backend,
    int algorithmChoice,
    int threads);

  /// "what: Code: message" for vtkErrorMacro.
  static std::string Describe(const char* what, const correlation::Status& status);

  /// Adds Correlation.Backend / Correlation.Algorithm / Correlation.BackendNote string arrays.
  static void AddReport(vtkFieldData* fd, const correlation::ExecutionReport& report);
  static void AddValue(vtkFieldData* fd, const char* name, double value);
  static void AddVector(vtkFieldData* fd, const char* name, const double v[3]);
};

#endif
// VTK-HeaderTest-Exclude: vtkCorrelationFilterSupport.h
