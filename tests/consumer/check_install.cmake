# Installs the built ctp into a scratch prefix, then configures, builds and
# runs the consumer project against it. Any failing step fails the test.
file(REMOVE_RECURSE ${WORK_DIR})
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run_step(${CMAKE_COMMAND} --install ${CTP_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
# The installed tool finds the backends installed beside its libraries: the
# CUDA backend's library, when built, is listed as loadable, not missing.
execute_process(COMMAND ${WORK_DIR}/prefix/bin/ctp --version RESULT_VARIABLE rc
                OUTPUT_VARIABLE version ERROR_VARIABLE version)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed ctp --version failed (${rc}): ${version}")
endif()
message(STATUS "${version}")
if(CTP_CUDA_BUILT AND NOT version MATCHES "cuda: nccl \\(loaded on demand\\)")
  message(FATAL_ERROR "the installed ctp does not find its CUDA backend: ${version}")
endif()
run_step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
         -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}
         "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINK_FLAGS}")
run_step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step(${WORK_DIR}/build/consumer)
