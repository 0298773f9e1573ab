# cmake -DCKPTSPEC=... -DPLUGIN=... -P expect_examples.cmake
# Runs the example plugin's three targets through the properties that judge them and requires
# exit code 0 (every target met the expectation the plugin declared), the two mutants killed (a
# K cell) and the wrapper "as expected" with P17 an expected failure.
execute_process(COMMAND ${CKPTSPEC} run --quiet --plugin ${PLUGIN}
                        --target data-iterator-losing --target coordinator-only-index
                        --target timestamping-engine --properties P1,P2,P13,P14,P17
                        --budget 100
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "expected exit code 0 (every example met its expectation), got ${code}")
endif()
foreach(mutant data-iterator-losing coordinator-only-index)
  if(NOT out MATCHES "\n${mutant} +killed +[^\n]*K")
    message(FATAL_ERROR "expected ${mutant} to be killed in the matrix")
  endif()
endforeach()
if(NOT out MATCHES "\ntimestamping-engine +as expected +[^\n]*x")
  message(FATAL_ERROR "expected timestamping-engine as expected, with P17 an expected failure (x)")
endif()
