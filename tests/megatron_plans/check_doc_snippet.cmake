# cmake -DDOC=docs/SIGNATURE.md -DTOOL=tools/megatron_signature.py -P check_doc_snippet.cmake
# The one ```python block of DOC must be TOOL, byte for byte: the documented snippet is the file
# the tests run.
file(READ ${DOC} doc)
file(READ ${TOOL} tool)
string(FIND "${doc}" "```python\n${tool}```\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the ```python block of ${DOC} differs from ${TOOL}: copy the file into it")
endif()
string(REGEX MATCHALL "```python\n" blocks "${doc}")
list(LENGTH blocks count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "${DOC} has ${count} ```python blocks; expected one, ${TOOL}")
endif()
message(STATUS "${DOC}: its snippet is ${TOOL}")
