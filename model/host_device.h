// CKPTSPEC_HD marks functions that compile for both the host and a CUDA device. Code under this
// macro uses no exceptions, no allocation and no standard-library containers, so that the device
// checks (device/) share the very same functions the host spec uses instead of copying them.
#pragma once

#if defined(__CUDACC__)
#define CKPTSPEC_HD __host__ __device__
#else
#define CKPTSPEC_HD
#endif
