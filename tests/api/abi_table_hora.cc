// The ABI table of hora's nccl.h.
#include "nccl.h"

#ifdef CUDART_VERSION
#error "this translation unit must be compiled against hora's nccl.h, without the CUDA headers"
#endif

#ifdef ABI_TABLE_DEVICE_API
#include "hora/nccl_device_host.h"
#endif

#include "abi_table.h"

#define ABI_TABLE_FUNCTION horaAbiTable
#include "abi_table_record.inc"
