/* A stand-in for the NVIDIA driver library (libcuda.so.1), so that vLLM's CUDA extension loads on a
 * machine without a GPU and `schemas/vllm_args.py refresh` can build vLLM's argument parser. It
 * exports the driver symbols that vLLM 0.19.0 and 0.33.0 link, each returning an error (1,
 * CUDA_ERROR_INVALID_VALUE); nothing calls them while only the parser is built.
 *
 * Provenance: the project's own stub (2026-11), unchanged below this comment; `refresh` compiles it in a temporary directory with
 * `cc -shared -fPIC -o libcuda.so.1 libcuda_stub.c`. A later vLLM that links another driver symbol
 * fails to import with "undefined symbol: cuXxx": add `int cuXxx(void){return 1;}` here.
 */
int cuCtxGetCurrent(void){return 1;}
int cuCtxSetCurrent(void){return 1;}
int cuDeviceGetAttribute(void){return 1;}
int cuDevicePrimaryCtxRetain(void){return 1;}
int cuGetErrorString(void){return 1;}
int cuMemAddressFree(void){return 1;}
int cuMemAddressReserve(void){return 1;}
int cuMemCreate(void){return 1;}
int cuMemGetAllocationGranularity(void){return 1;}
int cuMemMap(void){return 1;}
int cuMemRelease(void){return 1;}
int cuMemSetAccess(void){return 1;}
int cuMemUnmap(void){return 1;}
int cuPointerGetAttribute(void){return 1;}
int cuTensorMapEncodeTiled(void){return 1;}
int cuGetProcAddress_v2(void){return 1;}
int cuGetProcAddress(void){return 1;}
int cuInit(void){return 1;}
int cuDriverGetVersion(void){return 1;}
int cuDeviceGet(void){return 1;}
int cuDeviceGetCount(void){return 1;}
int cuCtxCreate(void){return 1;}
int cuModuleLoadData(void){return 1;}
int cuModuleGetFunction(void){return 1;}
int cuLaunchKernel(void){return 1;}
int cuStreamCreate(void){return 1;}
int cuMemAlloc(void){return 1;}
int cuMemFree(void){return 1;}
int cuGetErrorName(void){return 1;}
int cuLibraryLoadData(void){return 1;}
int cuLibraryGetKernel(void){return 1;}
int cuKernelGetFunction(void){return 1;}
int cuFuncSetAttribute(void){return 1;}
int cuOccupancyMaxActiveBlocksPerMultiprocessor(void){return 1;}
int cuTensorMapEncodeIm2col(void){return 1;}
int cuCtxGetDevice(void){return 1;}
int cuStreamGetCtx(void){return 1;}
int cuCtxPushCurrent(void){return 1;}
int cuCtxPopCurrent(void){return 1;}
int cuModuleUnload(void){return 1;}
int cuLaunchKernelEx(void){return 1;}
int cuMemcpyHtoD(void){return 1;}
int cuMemGetInfo(void){return 1;}
