# Tests of the NVIDIA ABI tables and decoders (included from tests/proxy/CMakeLists.txt).
