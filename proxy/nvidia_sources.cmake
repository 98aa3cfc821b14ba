# Sources of the NVIDIA ABI tables and decoders (compiled into gdrproxy_proxy).
set(GDRPROXY_NVIDIA_SOURCES
  abi/nvidia_abi.cc
  abi/nvidia_access.cc
  abi/nvidia_generated.cc
  abi/nvidia_layouts.cc
  abi/nvidia_status.cc
  abi/nvidia_tables_580.cc
  abi/nvidia_versions.cc
  decode/nvidia_decoder.cc
)
