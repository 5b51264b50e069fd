// The kernel pycuda-sdist.toml's step compiles to PTX with nvcc at build time; the image's
// GPU test loads that PTX with pycuda.driver.module_from_buffer (no nvcc at run time).
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
