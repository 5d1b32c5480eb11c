/**
 * @file CoreNames.h
 * @brief The execution layer's names that every core offers as its own (correlation::Status,
 * stencil::Backend, ...).
 *
 * A core's public header includes it and writes EXECUTION_CORE_NAMES; once, inside its
 * namespace.
 */
#ifndef EXECUTION_CORENAMES_H
#define EXECUTION_CORENAMES_H

#include "execution/Execution.h"

#define EXECUTION_CORE_NAMES                                                                       \
  using execution::Backend, execution::ErrorCode, execution::Status;                               \
  using execution::cudaAvailable, execution::toString

#endif
