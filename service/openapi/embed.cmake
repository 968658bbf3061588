# Embeds the OpenAPI components (JSON text) into a C source file:
# cmake -DIN=components.json -DOUT=openapi_components.c -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR n "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN}; do not edit */\n#include <stddef.h>\n"
  "const char openapi_components_json[] = {${bytes} 0};\n"
  "const size_t openapi_components_len = ${n};\n")
