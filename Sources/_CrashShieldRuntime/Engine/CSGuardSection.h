/*
 * CSGuardSection.h — where a guard's code lives, per object format (pure preprocessor: C,
 * Objective-C and the probes of scripts/check-apple-targets.sh include it; no Foundation).
 *
 * The fail-safe maps a crash frame's address to the guard whose code contains it,
 * so every function of a guard file must be in one section per guard, and the section's bounds
 * must be known at run time. `tag` is the guard's public name ("kvo"): an identifier of at most
 * CS_GUARD_TAG_MAX characters.
 *
 *   CS_GUARD_CODE_SECTION(tag)   at file scope, after the includes (no semicolon): every C
 *                                function below it goes into the guard's section.
 *   CS_GUARD_METHOD(tag)         an attribute for each Objective-C method of the guard's own
 *                                classes (clang's section pragma does not reach methods).
 *   CS_GUARD_CODE_RANGE(tag)     file-scope declarations of the section's bounds.
 *   CS_GUARD_CODE_START(tag), CS_GUARD_CODE_END(tag)
 *                                the bounds, [start, end), as `const char *`; NULL where the
 *                                format has no named sections (then both are NULL).
 *
 * Per format:
 * - ELF: section "cs_guard_<tag>"; the linker defines __start_cs_guard_<tag> and
 *   __stop_cs_guard_<tag> for a section whose name is a C identifier. They are weak and hidden:
 *   each image sees its own section, and an absent section gives NULL.
 * - Mach-O: section "__TEXT,__cs<tag>" (regular, pure instructions). Mach-O section names have
 *   at most 16 characters, hence the short prefix and CS_GUARD_TAG_MAX = 16 - strlen("__cs").
 *   The Mach-O linker defines section$start$__TEXT$__cs<tag> and section$end$__TEXT$__cs<tag>
 *   (reached through asm labels, which also bypass the C symbol prefix "_"); it creates the
 *   section empty if nothing is in it, so the bounds are never undefined.
 * - Anything else: no section; the range is NULL and the fail-safe falls back to the span of
 *   the guard's hook slots.
 * The tag's length is checked on every format, so a tag too long for Mach-O fails the Linux
 * build too.
 */
#ifndef CS_GUARD_SECTION_H
#define CS_GUARD_SECTION_H

#define CS_GUARD_TAG_MAX 12

#define CS_GUARD_STRINGIFY_(...) #__VA_ARGS__
#define CS_GUARD_STRINGIFY(...) CS_GUARD_STRINGIFY_(__VA_ARGS__)
#define CS_GUARD_PRAGMA_(text) _Pragma(#text)
/* `specifier` is a string literal, expanded before CS_GUARD_PRAGMA_ stringizes it again. */
#define CS_GUARD_TEXT_SECTION_PRAGMA(specifier) CS_GUARD_PRAGMA_(clang section text = specifier)

#define CS_GUARD_TAG_CHECK(tag)                                                                     \
    _Static_assert(sizeof(#tag) - 1 <= CS_GUARD_TAG_MAX,                                            \
                   "guard tag '" #tag "' is longer than CS_GUARD_TAG_MAX (Mach-O section names)");

#if defined(__ELF__)

#define CS_GUARD_SECTION_NAME(tag) "cs_guard_" #tag
#define CS_GUARD_CODE_SECTION(tag)                                                                  \
    CS_GUARD_TAG_CHECK(tag)                                                                         \
    CS_GUARD_TEXT_SECTION_PRAGMA(CS_GUARD_STRINGIFY(cs_guard_##tag))
#define CS_GUARD_METHOD(tag) __attribute__((section(CS_GUARD_SECTION_NAME(tag))))
#define CS_GUARD_CODE_RANGE(tag)                                                                    \
    extern const char __start_cs_guard_##tag[] __attribute__((weak, visibility("hidden")));         \
    extern const char __stop_cs_guard_##tag[] __attribute__((weak, visibility("hidden")));
#define CS_GUARD_CODE_START(tag) (__start_cs_guard_##tag)
#define CS_GUARD_CODE_END(tag) (__stop_cs_guard_##tag)

#elif defined(__MACH__) && defined(__APPLE__)

/* One specifier for the pragma and the attribute: Mach-O rejects two different type/attribute
 * sets for one section. */
#define CS_GUARD_SECTION_NAME(tag) "__TEXT,__cs" #tag ",regular,pure_instructions"
#define CS_GUARD_CODE_SECTION(tag)                                                                  \
    CS_GUARD_TAG_CHECK(tag)                                                                         \
    CS_GUARD_TEXT_SECTION_PRAGMA(CS_GUARD_STRINGIFY(__TEXT,__cs##tag,regular,pure_instructions))
#define CS_GUARD_METHOD(tag) __attribute__((section(CS_GUARD_SECTION_NAME(tag))))
#define CS_GUARD_CODE_RANGE(tag)                                                                    \
    extern const char cs_guard_code_start_##tag[] __asm("section$start$__TEXT$__cs" #tag);         \
    extern const char cs_guard_code_end_##tag[] __asm("section$end$__TEXT$__cs" #tag);
#define CS_GUARD_CODE_START(tag) (cs_guard_code_start_##tag)
#define CS_GUARD_CODE_END(tag) (cs_guard_code_end_##tag)

#else

#define CS_GUARD_CODE_SECTION(tag) CS_GUARD_TAG_CHECK(tag)
#define CS_GUARD_METHOD(tag)
#define CS_GUARD_CODE_RANGE(tag)
#define CS_GUARD_CODE_START(tag) ((const char *)0)
#define CS_GUARD_CODE_END(tag) ((const char *)0)

#endif

#endif /* CS_GUARD_SECTION_H */
