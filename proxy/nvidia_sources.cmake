# Sources of the NVIDIA ABI tables and decoders (compiled into gdrproxy_proxy).
set(GDRPROXY_NVIDIA_SOURCES
  abi/nvidia_abi.cc
  abi/nvidia_abi_choice.cc
  abi/nvidia_control_names.cc
  abi/nvidia_access.cc
  abi/nvidia_generated.cc
  abi/nvidia_layouts.cc
  abi/nvidia_status.cc
  decode/nvidia_decoder.cc
)
