# BPF programs: compiled for the BPF target with the system's clang (CO-RE: no vmlinux.h, the
# programs declare the kernel fields they read), and, for those the binary carries, embedded as a
# byte array (embed_file.cmake).
find_program(CLANG_BPF clang REQUIRED)

# compile_bpf(OBJ SRC COMMENT [DEPENDS headers...]): OBJ from SRC (both relative to the caller);
# the project's headers are included by their path from its root, as in C++.
function(compile_bpf obj src comment)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "DEPENDS")
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CLANG_BPF} -O2 -g -target bpf -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}
            -I${PROJECT_SOURCE_DIR} -c ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${obj}
    DEPENDS ${src} ${arg_DEPENDS}
    COMMENT "${comment}")
endfunction()

# embed_bpf(CC OBJ NAME): CC, a C++ source defining NAME[] and NAMESize with OBJ's bytes.
function(embed_bpf cc obj name)
  add_custom_command(
    OUTPUT ${cc}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${obj} -DOUTPUT=${cc} -DNAME=${name}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_file.cmake
    DEPENDS ${obj} ${PROJECT_SOURCE_DIR}/cmake/embed_file.cmake)
endfunction()
