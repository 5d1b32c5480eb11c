/**
 * @class vtkCorrelationFilterSupport
 * @brief Private helpers of the correlation filters: the image plane of a 2-D vtkImageData,
 * array extraction, input checks, and the core's execution options through the one VTK bridge
 * (vtkCoreExecution).
 */
#ifndef vtkCorrelationFilterSupport_h
#define vtkCorrelationFilterSupport_h

#include <correlation/correlation.h>

#include "vtkCoreExecution.h" // for vtkCoreExecution::Execution

#include "vtkIndent.h"
#include "vtkSmartPointer.h"

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

class vtkAlgorithm;
class vtkDataArray;
class vtkFieldData;
class vtkImageCorrelationAlgorithm;
class vtkImageData;
class vtkInformation;
class vtkInformationVector;
template<typename T>
struct vtkCorrelationPair;

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

  /**
   * Scales both images of `pair` by one power of two (exact in floating point) so that the
   * largest finite magnitude of the two lies in [0.5, 1): products and sums of squares then
   * stay far from the ends of the value type's range whatever the data's unit (float data of
   * magnitude 1e17 would overflow them, 1e-25 underflow them). Sets the pair's ScaleExponent
   * (values were multiplied by 2^ScaleExponent) and Featureless (either image is constant: no
   * lag can be told from another).
   */
  template<typename T>
  static void Rescale(vtkCorrelationPair<T>& pair);

  /// Copies a one-component array (any value type) into `values`.
  template<typename T>
  static void Copy(vtkDataArray* array, std::vector<T>& values);

  /**
   * After a core call: false when the filter goes on (the report's note, if any, as a warning;
   * progress 0.9), true when it must return `result`: 1 when the user aborted, 0 after
   * vtkErrorMacro naming `what`.
   */
  static bool Stopped(vtkAlgorithm* filter,
    const char* what,
    const correlation::Status& status,
    const correlation::ExecutionReport& report,
    int& result);

  /// PrintSelf lines "name: value" (integers print without a decimal point).
  static void PrintSettings(ostream& os,
    vtkIndent indent,
    std::initializer_list<std::pair<const char*, double>> settings);

  /// RequestInformation: the output's whole extent, spacing and origin.
  static void SetOutputImage(vtkInformation* outInfo,
    const int extent[6],
    const double spacing[3],
    const double origin[3]);

  /// Records `report` in `execution` and adds what ran to `fd`: Correlation.Backend and
  /// Correlation.BackendNote (through the bridge), Correlation.Algorithm.
  static void AddReport(vtkFieldData* fd,
    vtkCoreExecution::Execution<correlation::ExecutionOptions>& execution,
    const correlation::ExecutionReport& report);
  static void AddValue(vtkFieldData* fd, const char* name, double value);
  static void AddVector(vtkFieldData* fd, const char* name, const double v[3]);
};

/**
 * The correlation filters' side of the bridge: backend, threads and abort from the bridge, and
 * the settings both filters share (algorithm, GPU direct kernel choices).
 */
class vtkCorrelationExecution : public vtkCoreExecution::Execution<correlation::ExecutionOptions>
{
public:
  explicit vtkCorrelationExecution(vtkImageCorrelationAlgorithm* filter);
};

/// One Input / Reference pair as a filter computes it: the images, the output, the plane and
/// the selected array's values of both images.
template<typename T>
struct vtkCorrelationPair
{
  vtkImageData* Input = nullptr;
  vtkImageData* Reference = nullptr;
  vtkImageData* Output = nullptr;
  vtkCorrelationFilterSupport::Plane Plane;
  std::vector<T> InputValues, ReferenceValues;
  /// The values above are the arrays' times 2^ScaleExponent (see Rescale).
  int ScaleExponent = 0;
  /// Input or Reference is constant: there is no distinct peak to find.
  bool Featureless = false;
};

/// The pair in the value type of the selected array (float arrays in float, others in double).
struct vtkCorrelationPairs
{
  std::variant<vtkCorrelationPair<float>, vtkCorrelationPair<double>> Pair;
};

/**
 * The time-shift input mode of both filters: with nothing on port 1 (Reference), a temporal
 * Input is compared with itself TimeShift steps later. Reference is the step shown (the
 * requested time snapped to the last input step at or before it), Input the shifted step. The
 * two steps are fetched one after the other: pass 0 keeps a copy of the reference step and asks
 * the executive to run again (CONTINUE_EXECUTING), pass 1 gets the shifted step.
 */
class vtkCorrelationTimeShift
{
public:
  /// True when port 1 has no connection.
  static bool Active(vtkInformationVector** inputVector);

  /// FillInputPortInformation of both filters: image data on both ports, port 1 optional.
  static int FillInputPortInformation(int port, vtkInformation* info);

  /**
   * RequestUpdateExtent of both filters: the whole extent of each input (every lag needs all of
   * both images) and, in time-shift mode, the step of this pass (see RequestUpdateExtent).
   */
  void RequestWholeInputs(vtkInformationVector** inputVector,
    vtkInformationVector* outputVector,
    int shift);

  /**
   * RequestData of both filters: takes Input and Reference (or, in time-shift mode, the two
   * steps over two passes), checks that both exist and are not empty (vtkErrorMacro on
   * `filter`, naming it `what`), then returns compute(input, reference, output).
   */
  int Execute(vtkAlgorithm* filter,
    const char* what,
    vtkInformation* request,
    vtkInformationVector** inputVector,
    vtkInformationVector* outputVector,
    const std::function<int(vtkImageData*, vtkImageData*, vtkImageData*)>& compute);

  /// From RequestUpdateExtent: plans the two steps (pass 0) and requests the current one.
  void RequestUpdateExtent(vtkInformation* inInfo, vtkInformation* outInfo, int shift);

  enum class Step
  {
    Failed,   ///< error() says why; the request is cleaned up
    Continue, ///< the reference step is kept: return 1 and wait for the next pass
    Ready     ///< reference() and the current input are the two steps
  };
  /// From RequestData with the input of this pass.
  Step RequestData(vtkInformation* request, vtkImageData* input);

  vtkImageData* reference() const { return this->Reference; }
  const std::string& error() const { return this->Error; }

  /// After the computation: the two times as field data (when ok), the output's time, and the
  /// kept step released.
  void Finish(vtkImageData* output, bool ok);

private:
  int Pass = 0;
  double Times[2] = { 0, 0 };
  double RequestedTime = 0;
  bool HasRequestedTime = false;
  std::string Error;
  vtkSmartPointer<vtkImageData> Reference;
};

#endif
// VTK-HeaderTest-Exclude: vtkCorrelationFilterSupport.h
