# Turns a binary file into a C++ source defining a byte array: cmake -DINPUT= -DOUTPUT= -DNAME= -P
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" len)
math(EXPR size "${len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}" "#include <cstddef>\nnamespace gdrproxy::proxy {\nextern const unsigned char ${NAME}[] = {${bytes}};\nextern const std::size_t ${NAME}Size = ${size};\n}\n")
