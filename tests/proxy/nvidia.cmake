# Tests of the NVIDIA ABI tables and decoders (included from tests/proxy/CMakeLists.txt).
find_package(ZLIB REQUIRED)  # the recorded fixtures are gzip-compressed
add_executable(nvidia_tests
  nvidia_abi_test.cc
  nvidia_generated_test.cc
  nvidia_decoder_test.cc
  nvidia_fixture_test.cc
  nvidia_access_test.cc
  nvidia_default_policy_test.cc
  kernel_allow_test.cc
  nvidia_layouts_test.cc
  nvidia_every_release_test.cc
)
target_link_libraries(nvidia_tests PRIVATE gdrproxy_proxy GTest::gtest_main ZLIB::ZLIB)
target_compile_definitions(nvidia_tests PRIVATE GDRPROXY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(nvidia_tests)

# Benchmark, not a test: ns per decoded NVIDIA call over a recorded NCCL run.
add_executable(nvidia_decode_bench nvidia_decode_bench.cc)
target_link_libraries(nvidia_decode_bench PRIVATE gdrproxy_proxy ZLIB::ZLIB)
target_compile_definitions(nvidia_decode_bench PRIVATE GDRPROXY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
