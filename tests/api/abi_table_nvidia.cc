// The ABI table of NVIDIA's nccl.h (the build points the include path at it).
#include <nccl.h>

#ifndef CUDART_VERSION
#error "this translation unit must be compiled against NVIDIA's nccl.h, which includes cuda_runtime.h"
#endif

#ifdef ABI_TABLE_DEVICE_API
#include <nccl_device.h>
#endif

#include "abi_table.h"

#define ABI_TABLE_FUNCTION nvidiaAbiTable
#include "abi_table_record.inc"
