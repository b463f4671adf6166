/*
 * nvf_cuda_fatbin.S: embeds the kernels' fatbin (nvf_kernels.fatbin, built by nvcc into the build
 * directory) in the engine library as the read-only, hidden symbol nvf_cuda_fatbin, for
 * cuModuleLoadData. NVF_CUDA_FATBIN_PATH is the fatbin's absolute path (set by Makefile.inc).
 * Must not export anything from the component, nor ask for an executable stack.
 */
#ifndef NVF_CUDA_FATBIN_PATH
#error "NVF_CUDA_FATBIN_PATH must name the fatbin to embed"
#endif
    .section .rodata.nvf_cuda_fatbin, "a", %progbits
    .balign 16
    .globl nvf_cuda_fatbin
    .hidden nvf_cuda_fatbin
    .type nvf_cuda_fatbin, %object
nvf_cuda_fatbin:
    .incbin NVF_CUDA_FATBIN_PATH
nvf_cuda_fatbin_end:
    .size nvf_cuda_fatbin, nvf_cuda_fatbin_end - nvf_cuda_fatbin
    .byte 0
    .balign 8
    .globl nvf_cuda_fatbin_size
    .hidden nvf_cuda_fatbin_size
    .type nvf_cuda_fatbin_size, %object
nvf_cuda_fatbin_size:
    .quad nvf_cuda_fatbin_end - nvf_cuda_fatbin
    .size nvf_cuda_fatbin_size, 8
    .section .note.GNU-stack, "", %progbits
