/**
 * @file vtkCoreExecutionMacros.h
 * @brief The declarations every filter of the four families shares, written once: the
 * execution settings (Backend, Number Of Threads) and the "each failure shown once" RequestData.
 *
 * A light header (no core, no vtkSMPTools) for the filters' wrapped headers; the rest of the
 * VTK bridge is vtkCoreExecution.h (what the settings do) and vtkSparseGridExecution.h
 * (vtkSparseGridErrorOnce, and vtkSparseGridErrorOnceRequestDataMacro that defines the
 * RequestData declared here). The server-manager side of the settings is
 * Filters/ExecutionProperties.xml.
 */
#ifndef vtkCoreExecutionMacros_h
#define vtkCoreExecutionMacros_h

#include "vtkSetGet.h"

#include <memory> // for std::unique_ptr

/**
 * In a filter's public section: NumberOfThreads, the CPU threads (0, the default: all hardware
 * threads; 0 to 4096, other values are refused when the filter runs: vtkCoreExecution.h
 * InvalidSettings), with its setter, getter and member. The section stays public.
 */
#define vtkCoreThreadsMacro()                                                                      \
  vtkSetMacro(NumberOfThreads, int);                                                               \
  vtkGetMacro(NumberOfThreads, int);                                                               \
                                                                                                   \
protected:                                                                                         \
  int NumberOfThreads = 0;                                                                         \
                                                                                                   \
public:

/**
 * In a filter's public section: Backend (0 Auto, the default: the core chooses; 1 CPU; 2 CUDA,
 * which falls back to the CPU with a note where no GPU is usable; other values are refused when
 * the filter runs) and NumberOfThreads
 * (vtkCoreThreadsMacro). What ran is written as the field data <Family>.Backend and
 * <Family>.BackendNote (vtkCoreExecution::WriteBackend).
 */
#define vtkCoreExecutionMacro()                                                                    \
  vtkSetMacro(Backend, int);                                                                       \
  vtkGetMacro(Backend, int);                                                                       \
  vtkCoreThreadsMacro() protected : int Backend = 0;                                               \
                                                                                                   \
public:

class vtkSparseGridErrorOnce;

/**
 * In a filter's protected section: RequestData runs ProduceData (what the filter does; it
 * reports its failures with vtkErrorMacro and returns 0) with each failure shown once, not once
 * per pipeline pass (vtkSparseGridErrorOnce::Run). The filter's .cxx defines RequestData with
 * vtkSparseGridErrorOnceRequestDataMacro and its destructor (where vtkSparseGridErrorOnce is
 * complete).
 */
#define vtkCoreErrorOnceMacro()                                                                    \
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;        \
  int ProduceData(vtkInformation*, vtkInformationVector**, vtkInformationVector*);                 \
  std::unique_ptr<vtkSparseGridErrorOnce> Errors

#endif
// VTK-HeaderTest-Exclude: vtkCoreExecutionMacros.h
