/**
 * @file EventTimer.h
 * @brief The one timer of device work for the cores' CUDA sources: CUDA events around intervals
 * of a stream's work, summed.
 *
 * Only available where the execution layer was built with CUDA (the cores include it from
 * their .cu files only). Errors are mapped by fromCuda (CudaStatus.h).
 */
#ifndef EXECUTION_EVENTTIMER_H
#define EXECUTION_EVENTTIMER_H

#include "execution/CudaStatus.h"

#include <cuda_runtime_api.h>

#include <utility>

namespace execution
{
namespace cuda
{

/**
 * Device seconds between start() and stop() on a stream, summed over any number of intervals.
 * Recording an interval waits for nothing; collect() waits for the intervals closed so far and
 * adds them to seconds(). The events are created on first use and destroyed with the timer.
 */
class EventTimer
{
public:
  /// Closed intervals that wait for collect() at most: start() of one more collects them first.
  static constexpr int Most = 8;

  EventTimer() = default;
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer()
  {
    for (cudaEvent_t event : this->Events)
    {
      if (event)
      {
        cudaEventDestroy(event);
      }
    }
  }

  /// Opens an interval at this point of `stream` (an interval already open goes on).
  Status start(cudaStream_t stream = nullptr)
  {
    if (this->Open)
    {
      return Status::Ok();
    }
    if (this->Closed == Most)
    {
      Status status = this->collect();
      if (!status)
      {
        return status;
      }
    }
    Status status = this->mark(2 * this->Closed, stream);
    this->Open = status.ok();
    return status;
  }

  /// Closes the open interval at this point of `stream`, without waiting (none open: nothing).
  Status stop(cudaStream_t stream = nullptr)
  {
    if (!this->Open)
    {
      return Status::Ok();
    }
    Status status = this->mark(2 * this->Closed + 1, stream);
    if (status)
    {
      this->Open = false;
      ++this->Closed;
    }
    return status;
  }

  /**
   * Waits for the closed intervals and adds them to seconds(); an open interval stays open.
   * `what` names the timed work in the message of an error met while waiting (the error of that
   * work, e.g. a kernel's failure).
   */
  Status collect(const char* what = "waiting for the kernels")
  {
    if (this->Closed == 0)
    {
      return Status::Ok();
    }
    Status status = fromCuda(cudaEventSynchronize(this->Events[2 * this->Closed - 1]), what);
    double seconds = 0;
    for (int i = 0; status && i < this->Closed; ++i)
    {
      float ms = 0;
      status = fromCuda(cudaEventElapsedTime(&ms, this->Events[2 * i], this->Events[2 * i + 1]),
        "reading a timing event");
      seconds += 1e-3 * static_cast<double>(ms);
    }
    if (status)
    {
      this->Seconds += seconds;
    }
    if (this->Open)
    {
      std::swap(this->Events[0], this->Events[2 * this->Closed]);
    }
    this->Closed = 0;
    return status;
  }

  /// The seconds of the intervals collected since construction or reset().
  double seconds() const { return this->Seconds; }

  /// Forgets the intervals, open or closed, and the seconds; the events are kept.
  void reset()
  {
    this->Closed = 0;
    this->Open = false;
    this->Seconds = 0;
  }

private:
  /// Records event `index` on `stream`, creating it first where needed.
  Status mark(int index, cudaStream_t stream)
  {
    if (!this->Events[index])
    {
      Status status = fromCuda(cudaEventCreate(&this->Events[index]), "creating a timing event");
      if (!status)
      {
        this->Events[index] = nullptr;
        return status;
      }
    }
    return fromCuda(cudaEventRecord(this->Events[index], stream), "recording a timing event");
  }

  cudaEvent_t Events[2 * Most] = {}; ///< start and stop of interval i: 2i and 2i + 1
  int Closed = 0;                    ///< closed intervals not yet collected
  bool Open = false;                 ///< the interval Closed is started, not stopped
  double Seconds = 0;                ///< seconds of the collected intervals
};

} // namespace cuda
} // namespace execution

#endif
