# cmake -DCKPTSPEC=... -DPLUGIN=... -DTARGET=... -P expect_killed.cmake
# Runs `ckptspec run --plugin PLUGIN --target TARGET --properties P1,P2` and requires exit code 0
# (the plugin's mutant met its expectation) with the target KILLED in the matrix.
execute_process(COMMAND ${CKPTSPEC} run --quiet --plugin ${PLUGIN} --target ${TARGET}
                        --properties P1,P2 --budget 100
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "expected exit code 0 (the mutant was killed), got ${code}")
endif()
if(NOT out MATCHES "${TARGET}[^\n]*KILLED[^\n]*killed")
  message(FATAL_ERROR "expected ${TARGET} to be KILLED in the matrix")
endif()
