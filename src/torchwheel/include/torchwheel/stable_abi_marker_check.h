/*
 * torchwheel/stable_abi_marker_check.h -- EXPERIMENTAL companion to stable_abi_marker.h:
 * make "TUs built against different TORCH_FEATURE_VERSION" visible (and optionally fatal).
 *
 * (A) C++ (any toolchain): one exported, coalescable symbol per DISTINCT version,
 *     its name carries the version through C++ name mangling, so it works for any
 *     integer constant expression (PyTorch's TORCH_ABI_VERSION has casts, so neither
 *     #if nor ## token pasting can turn it into a name):
 *       Itanium:  _ZN21__torch_stable_abi_fvILy<decimal>EE3tagE  (Mach-O: extra leading '_')
 *       MSVC:     ?tag@?$__torch_stable_abi_fv@$0<msvc-number>@@2EB
 *     Same version in all TUs -> exactly one such symbol; N versions -> N symbols.
 * (B) optional hard link error (TORCH_STABLE_ABI_STRICT):
 *     MSVC / clang-cl / lld-link: #pragma detect_mismatch (LNK2038) on the version
 *     spelling; GNU ld / lld (ELF): two absolute symbols with the same name and
 *     different values -> "multiple definition" (same value is accepted); needs
 *     the version as a plain literal TORCH_STABLE_ABI_FV_LITERAL.
 */
#ifndef TORCH_STABLE_ABI_MARKER_CHECK_H_
#define TORCH_STABLE_ABI_MARKER_CHECK_H_
#include "stable_abi_marker.h"

#if defined(__cplusplus)
#  if defined(_WIN32) || defined(__CYGWIN__)
#    define TORCH_STABLE_ABI_FV_EXPORT_ __declspec(dllexport)
#  else
#    define TORCH_STABLE_ABI_FV_EXPORT_ __attribute__((visibility("default")))
#  endif
#  if !defined(TORCH_STABLE_ABI_FV_DATA) && (defined(_WIN32) || defined(__CYGWIN__))
     /* MinGW g++ does not export inline members of implicitly instantiated
      * dllexport class templates -> use the static data member on PE */
#    define TORCH_STABLE_ABI_FV_DATA 1
#  endif
#  if !defined(TORCH_STABLE_ABI_FV_DATA)
/* ELF/Mach-O: an (empty) inline member FUNCTION -> weak FUNC symbol.
 * (A static DATA member would be STB_GNU_UNIQUE with GCC on ELF, which makes
 * glibc refuse to dlclose() the module -- harmless for CPython, but avoidable.) */
template <unsigned long long V>
struct TORCH_STABLE_ABI_FV_EXPORT_ __torch_stable_abi_fv {
  static void tag() {}
};
namespace {
#    if defined(__GNUC__) || defined(__clang__)
__attribute__((used))
#    endif
void (*const __torch_stable_abi_fv_ref)() =
    &__torch_stable_abi_fv<(unsigned long long)(TORCH_FEATURE_VERSION)>::tag;
}
#  else
template <unsigned long long V>
struct TORCH_STABLE_ABI_FV_EXPORT_ __torch_stable_abi_fv {
  static const unsigned char tag;
};
template <unsigned long long V>
const unsigned char __torch_stable_abi_fv<V>::tag = 1;
/* implicit instantiation: one internal, 'used' pointer per TU odr-uses the tag */
namespace {
#    if defined(__GNUC__) || defined(__clang__)
__attribute__((used))
#    endif
const unsigned char *const __torch_stable_abi_fv_ref =
    &__torch_stable_abi_fv<(unsigned long long)(TORCH_FEATURE_VERSION)>::tag;
}
#  endif
#endif /* __cplusplus */

#if defined(TORCH_STABLE_ABI_STRICT)
#  define TORCH_STABLE_ABI_STR2_(x) #x
#  define TORCH_STABLE_ABI_STR_(x) TORCH_STABLE_ABI_STR2_(x)
#  if defined(_MSC_VER) || (defined(__clang__) && defined(_WIN32))
     /* value = the *spelling* of the macro: equal values spelled differently also trip it */
#    pragma detect_mismatch("torch_feature_version", TORCH_STABLE_ABI_STR_(TORCH_FEATURE_VERSION))
#  elif defined(__ELF__) && defined(TORCH_STABLE_ABI_FV_LITERAL)
/* .ifdef/.if keep it working when LTO pastes all TUs' top-level asm into one file */
__asm__(".ifdef __torch_stable_abi_fv_check\n"
        ".if __torch_stable_abi_fv_check != " TORCH_STABLE_ABI_STR_(TORCH_STABLE_ABI_FV_LITERAL) "\n"
        ".error \"torch stable ABI: translation units built with different TORCH_FEATURE_VERSION\"\n"
        ".endif\n"
        ".else\n"
        ".globl __torch_stable_abi_fv_check\n"
        ".hidden __torch_stable_abi_fv_check\n"
        ".set __torch_stable_abi_fv_check, " TORCH_STABLE_ABI_STR_(TORCH_STABLE_ABI_FV_LITERAL) "\n"
        ".endif\n");
#  endif
#endif
#endif /* TORCH_STABLE_ABI_MARKER_CHECK_H_ */
