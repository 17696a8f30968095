/* glibc_compat.c: the one symbol liblightcc_cuda.so's static libstdc++ needs from a glibc newer than 2.28.
 *
 * packaging/cuda_link.sh links this into the library when it links against glibc 2.28's symbol
 * versions. GCC 12's libstdc++ (built on glibc 2.36) reads __libc_single_threaded (glibc 2.32)
 * to skip atomic reference counts while a process has one thread. Defined here, hidden, as 0
 * ("more than one thread"): libstdc++ then always takes the atomic path, which is right in every
 * process, and the library resolves the name inside itself on any glibc. */
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
