# The error-bounded codec: sources, benchmark and tests, included by
# SparseGridCore/CMakeLists.txt so that the codec's build lives with its sources.
# Reproducible floating point: the decoder repeats the encoder's arithmetic and the CPU and CUDA
# encoders must write the same bytes, so no contraction into FMAs on either side.
set(_sg_codec_dir "${CMAKE_CURRENT_LIST_DIR}")
set(_sg_codec_cpu Codec.cxx CodecCpuEncode.cxx CodecCpuDecode.cxx CodecMask.cxx CodecScheme.cxx
  CodecStream.cxx Huffman.cxx)
list(TRANSFORM _sg_codec_cpu PREPEND "${_sg_codec_dir}/")
target_sources(SparseGridCore PRIVATE ${_sg_codec_cpu})
set_source_files_properties(${_sg_codec_cpu} PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
if (SPARSEGRID_CUDA_BUILT)
  set(_sg_codec_cu CodecCuda.cu CodecCudaEncode.cu CodecCudaEncodeBricks.cu CodecCudaChunks.cu CodecCudaHuffmanTable.cu
    CodecCudaHuffmanDecode.cu CodecCudaDecode.cu CodecCudaDecodeBricks.cu CodecSampleCuda.cu
    CodecMaskCuda.cu)
  list(TRANSFORM _sg_codec_cu PREPEND "${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/codec/")
  target_sources(SparseGridCore PRIVATE ${_sg_codec_cu})
  set_source_files_properties(${_sg_codec_cu} PROPERTIES COMPILE_OPTIONS "--fmad=false")
else ()
  target_sources(SparseGridCore PRIVATE "${_sg_codec_dir}/CodecCudaUnavailable.cxx")
endif ()

if (SPARSEGRID_BUILD_BENCHMARKS)
  add_executable(sparsegrid-codec-bench "${CMAKE_CURRENT_SOURCE_DIR}/bench/codec-bench.cxx")
  target_link_libraries(sparsegrid-codec-bench PRIVATE SparseGridCore)
  target_compile_options(sparsegrid-codec-bench PRIVATE -O2)
  # ZFP's library is timed in the same harness when it is installed (Debian: libzfp-dev).
  find_path(SPARSEGRID_ZFP_INCLUDE zfp.h)
  find_library(SPARSEGRID_ZFP_LIBRARY zfp)
  if (SPARSEGRID_ZFP_INCLUDE AND SPARSEGRID_ZFP_LIBRARY)
    target_compile_definitions(sparsegrid-codec-bench PRIVATE SPARSEGRID_HAVE_ZFP=1)
    target_include_directories(sparsegrid-codec-bench PRIVATE "${SPARSEGRID_ZFP_INCLUDE}")
    target_link_libraries(sparsegrid-codec-bench PRIVATE "${SPARSEGRID_ZFP_LIBRARY}")
  endif ()
  if (SPARSEGRID_CUDA_BUILT)
    target_compile_definitions(sparsegrid-codec-bench PRIVATE SPARSEGRID_CODEC_BENCH_CUDA=1)
    target_link_libraries(sparsegrid-codec-bench PRIVATE CUDA::cudart_static)
  endif ()
endif ()

if (BUILD_TESTING)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  set(_sg_codec_tests test_codec test_codec_robustness test_codec_lanes test_codec_specials
    test_codec_tuning)
  if (SPARSEGRID_CUDA_BUILT)
    list(APPEND _sg_codec_tests test_codec_gpu)
  endif ()
  foreach (_sg_codec_test IN LISTS _sg_codec_tests)
    add_executable(sgcore_${_sg_codec_test} "${CMAKE_CURRENT_SOURCE_DIR}/Testing/${_sg_codec_test}.cxx")
    target_link_libraries(sgcore_${_sg_codec_test} PRIVATE SparseGridCore GTest::gtest_main)
    target_compile_options(sgcore_${_sg_codec_test} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O2>)
    if (_sg_codec_test STREQUAL "test_codec_gpu")
      target_link_libraries(sgcore_${_sg_codec_test} PRIVATE CUDA::cudart_static)
      # The kernel that holds a stream while the codec runs on another one, and the bricks' tests.
      target_sources(sgcore_${_sg_codec_test} PRIVATE
        "${CMAKE_CURRENT_SOURCE_DIR}/Testing/codec_gpu_gate.cu"
        "${CMAKE_CURRENT_SOURCE_DIR}/Testing/test_codec_gpu_bricks.cxx")
    endif ()
    gtest_discover_tests(sgcore_${_sg_codec_test}
      TEST_PREFIX "SparseGridCore.Codec."
      DISCOVERY_MODE PRE_TEST
      DISCOVERY_TIMEOUT 60
      PROPERTIES LABELS core TIMEOUT 300)
  endforeach ()
  # The pure-numpy reference decoder reads a stream written by the C++ encoder (Testing/Codec).
  # It skips (return code 77) where python3 or numpy is missing.
  add_executable(sgcore_codec_writer "${CMAKE_CURRENT_SOURCE_DIR}/Testing/test_codec_writer.cxx")
  target_link_libraries(sgcore_codec_writer PRIVATE SparseGridCore)
  set(_sg_codec_py "${CMAKE_CURRENT_SOURCE_DIR}/../Testing/Codec/test_reference_decoder.py")
  if (EXISTS "${_sg_codec_py}")
    find_program(SPARSEGRID_PYTHON3 NAMES python3 HINTS /usr/bin NO_DEFAULT_PATH)
    if (NOT SPARSEGRID_PYTHON3)
      find_program(SPARSEGRID_PYTHON3 python3)
    endif ()
    if (SPARSEGRID_PYTHON3)
      add_test(NAME SparseGridCore.Codec.ReferenceDecoder
        COMMAND "${SPARSEGRID_PYTHON3}" "${_sg_codec_py}" "$<TARGET_FILE:sgcore_codec_writer>")
    else ()
      add_test(NAME SparseGridCore.Codec.ReferenceDecoder
        COMMAND sh -c "echo 'SKIP: python3 not found'; exit 77")
    endif ()
    set_tests_properties(SparseGridCore.Codec.ReferenceDecoder PROPERTIES
      LABELS "core;codec" TIMEOUT 300 SKIP_RETURN_CODE 77)
    set_property(GLOBAL PROPERTY SPARSEGRID_CODEC_REFERENCE_TEST ON)
    # The real volumes live beside the repository (../shared/data); the script also looks there.
    get_filename_component(_sg_codec_data "${CMAKE_CURRENT_SOURCE_DIR}/../../shared/data" ABSOLUTE)
    if (EXISTS "${_sg_codec_data}")
      set_tests_properties(SparseGridCore.Codec.ReferenceDecoder PROPERTIES
        ENVIRONMENT "SPARSEGRID_DATA=${_sg_codec_data}")
    endif ()
  endif ()
endif ()
