# cmake -DCKPTSPEC=... -DPLUGIN=... -DTARGET=... -P expect_killed.cmake
# Runs `ckptspec run --plugin PLUGIN --target TARGET --properties P1,P2` and requires exit code 0
# (the plugin's mutant met its expectation) with the target killed in the matrix (verdict killed, a
# K cell).
execute_process(COMMAND ${CKPTSPEC} run --quiet --plugin ${PLUGIN} --target ${TARGET}
                        --properties P1,P2 --budget 100
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "expected exit code 0 (the mutant was killed), got ${code}")
endif()
if(NOT out MATCHES "\n${TARGET} +killed +[^\n]*K")
  message(FATAL_ERROR "expected ${TARGET} to be killed in the matrix")
endif()
