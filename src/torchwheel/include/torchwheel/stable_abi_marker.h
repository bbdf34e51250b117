/*
 * torchwheel/stable_abi_marker.h -- header-only PyTorch stable-ABI marker (shipped by torchwheel).
 *
 * Every TU that includes this header emits ONE coalescable, exported, read-only
 * data object
 *     __torch_stable_abi_marker_v1[17] =
 *         "TORCHABI" | schema(1) | TORCH_FEATURE_VERSION as 8 bytes big-endian
 * The linker keeps exactly one exported definition per final binary
 * (ELF: STB_WEAK, Mach-O: N_WEAK_DEF, PE/COFF: IMAGE_COMDAT_SELECT_ANY).
 *
 * Usable from C (C99+) and C++ (C++11+; 'unsigned long long'); include it from
 * as many TUs as you like.  TORCH_FEATURE_VERSION may be any integer constant
 * expression, including PyTorch's un-parenthesised
 *     (uint64_t)2 << 56 | (uint64_t)10 << 48 | ...
 * Do not reference the marker from code: on ELF (RTLD_GLOBAL) and Mach-O (dyld
 * weak coalescing) such references may bind to ANOTHER module's marker.
 */
#ifndef TORCH_STABLE_ABI_MARKER_H_
#define TORCH_STABLE_ABI_MARKER_H_

/* torchwheel: take the value from PyTorch's own headers when they are on the include
 * path, so that the record always equals what the stable headers compiled against
 * (TORCH_TARGET_VERSION if the build defines it, else the headers' TORCH_ABI_VERSION). */
#if !defined(TORCH_FEATURE_VERSION) && defined(__has_include)
#  if __has_include(<torch/csrc/stable/version.h>)
#    include <torch/csrc/stable/version.h>
#  endif
#endif

#ifndef TORCH_FEATURE_VERSION
#  error "define TORCH_FEATURE_VERSION (major<<56 | minor<<48 | patch<<40 | abi_tag)"
#endif

#include <stdint.h>  /* PyTorch's TORCH_ABI_VERSION spells uint64_t; <stdint.h> is
                        valid C and C++ and exists in freestanding mode */

#define TORCH_STABLE_ABI_MARKER_SCHEMA 1
/* byte n (0 = least significant) of the feature version; (v) is parenthesised
 * on purpose: TORCH_ABI_VERSION is an unparenthesised a<<56 | b<<48 | ... chain */
#define TORCH_STABLE_ABI_MARKER_BYTE_(v, n) \
  ((unsigned char)((((unsigned long long)(v)) >> (8 * (n))) & 0xFFu))

/* ---- per-toolchain spelling ------------------------------------------- */
#if defined(_WIN32) || defined(__CYGWIN__)
   /* PE/COFF: COMDAT "select any" + export.  Same spelling for
    *   clang --target=*-windows-{msvc,gnu} (zig cc), MinGW-w64 gcc (which
    *   #defines __declspec(x) as __attribute__((x))) -- tested -- and
    *   MSVC cl.exe / clang-cl -- not tested (clang MSVC-ABI was).
    * NOTE (MinGW ld/lld): once ANY symbol is dllexport'ed, auto-export of all
    * symbols is switched off -> PyInit_* must be dllexport'ed too (CPython's
    * PyMODINIT_FUNC does that). */
#  define TORCH_STABLE_ABI_MARKER_ATTRS_ __declspec(selectany) __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
   /* ELF and Mach-O: weak definition, default visibility (survives
    * -fvisibility=hidden and #pragma GCC visibility push(hidden)), used.
    * 'retain' (GCC >= 11, Clang >= 13; ELF SHF_GNU_RETAIN, binutils >= 2.36)
    * keeps the BYTES alive under --gc-sections even when a version script /
    * --exclude-libs demotes the symbol to local; 'used' alone does not. */
#  if defined(__ELF__) && defined(__has_attribute)
#    if __has_attribute(retain)
#      define TORCH_STABLE_ABI_MARKER_RETAIN_ , retain
#    endif
#  endif
#  ifndef TORCH_STABLE_ABI_MARKER_RETAIN_
#    define TORCH_STABLE_ABI_MARKER_RETAIN_
#  endif
#  define TORCH_STABLE_ABI_MARKER_ATTRS_ \
     __attribute__((weak, visibility("default"), used TORCH_STABLE_ABI_MARKER_RETAIN_))
#else
#  error "torchwheel/stable_abi_marker.h: unsupported compiler"
#endif

/* C++: 'extern "C"' directly on the declaration (no braces) both stops name
 * mangling (MSVC mangles data too) and gives the const object external linkage
 * (a namespace-scope const is internal in C++ otherwise).
 * C: a file-scope const already has external linkage; writing 'extern' on an
 * initialised definition would only trigger a GCC warning. */
#if defined(__cplusplus)
#  define TORCH_STABLE_ABI_MARKER_LINKAGE_ extern "C"
#else
#  define TORCH_STABLE_ABI_MARKER_LINKAGE_
#endif

TORCH_STABLE_ABI_MARKER_LINKAGE_ TORCH_STABLE_ABI_MARKER_ATTRS_
const unsigned char __torch_stable_abi_marker_v1[17] = {
  'T', 'O', 'R', 'C', 'H', 'A', 'B', 'I',
  TORCH_STABLE_ABI_MARKER_SCHEMA,
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 7), /* major */
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 6), /* minor */
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 5), /* patch */
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 4),
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 3),
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 2),
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 1),
  TORCH_STABLE_ABI_MARKER_BYTE_(TORCH_FEATURE_VERSION, 0)
};

#endif /* TORCH_STABLE_ABI_MARKER_H_ */
