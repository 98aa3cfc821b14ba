# Sources of the NVIDIA ABI tables and decoders (compiled into gdrproxy_proxy).
set(GDRPROXY_NVIDIA_SOURCES)
