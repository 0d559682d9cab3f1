"""User-given names in generated C: the one place that decides how they may appear.

Nothing a user names (a function or class ``__name__``, a module, parameter, buffer or argument
name, a tensor name of an export) becomes C code: identifiers in generated C are generated
(``in0``, ``w3``, ``<export name>_run``), and a name is only *shown*, in a comment or a string
literal, through ``comment_text``, which keeps a small set of characters that can neither end a
comment (``*/``) or a string (``"``, ``\\``), nor start a line, a trigraph (``??/``) or a
``printf`` conversion (``%``). The one name that does become an identifier, the export name, is
checked by ``check_export_name``. See docs/security.md.

>>> comment_text('f */ __attribute__((constructor)) void x(void){system("id");} /*')
'f __ __attribute__((constructor)) void x(void){system(_id_)_} __'
>>> comment_text("Sequential(Linear)")
'Sequential(Linear)'
"""
from __future__ import annotations

import re

# characters a shown name keeps; everything else (``*``, ``/``, ``"``, ``\``, ``%``, ``?``,
# control characters and newlines, non-ASCII) becomes ``_``
_UNSAFE = re.compile(r"[^A-Za-z0-9_ .:,()<>=\[\]'{}+-]")
MAX_SHOWN = 120  # characters of a name shown in generated text


def comment_text(name, limit=MAX_SHOWN):
    """``name`` as it may appear inside a C comment or string literal: unsafe characters
    replaced by ``_``, runs of them collapsed, at most ``limit`` characters (then ``...``)."""
    text = _UNSAFE.sub("_", str(name))
    text = re.sub(r"_{3,}", "__", text)
    return text if len(text) <= limit else text[:limit] + "..."


C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while alignas alignof bool constexpr false nullptr static_assert thread_local true typeof
typeof_unqual asm fortran
""".split())
# a header included from C++ (export_header.h.j2 has extern "C"): its keywords too
CXX_KEYWORDS = frozenset("""
and and_eq bitand bitor catch char8_t char16_t char32_t class co_await co_return co_yield compl
concept const_cast consteval constinit decltype delete dynamic_cast explicit export friend mutable
namespace new noexcept not not_eq operator or or_eq private protected public reinterpret_cast
requires static_cast template this throw try typeid typename using virtual wchar_t xor xor_eq
""".split())
_MATH = """acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 exp10 expm1 log
log10 log1p log2 logb ilogb frexp ldexp modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma
tgamma gamma ceil floor nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo
copysign nan nextafter nexttoward fdim fmax fmin fma j0 j1 jn y0 y1 yn significand sincos""".split()
# what the headers the generated code and example.c include declare (stdio, stdlib, string,
# math, stdint), what a program or POSIX libc defines at file scope, and example.c's locals:
# an export named after one of them does not build (a clash, or a local hiding the function)
LIBC_NAMES = frozenset("""
printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf dprintf scanf fscanf sscanf puts
fputs putc fputc putchar getc fgetc getchar gets fgets fopen fclose fflush fread fwrite fseek ftell
rewind remove rename tmpfile tmpnam perror setbuf setvbuf ungetc feof ferror clearerr fgetpos
fsetpos freopen fileno fdopen popen pclose getline getdelim stdin stdout stderr FILE EOF BUFSIZ
malloc calloc realloc free aligned_alloc posix_memalign valloc abort exit atexit quick_exit
at_quick_exit getenv setenv unsetenv putenv system abs labs llabs div ldiv lldiv atoi atol atoll atof
strtol strtoll strtoul strtoull strtod strtof strtold rand srand random srandom drand48 qsort bsearch
mblen mbtowc wctomb mbstowcs wcstombs realpath mkstemp mkdtemp alloca
memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp strlen strnlen
strchr strrchr strstr strtok strdup strndup strerror strspn strcspn strpbrk strcoll strxfrm
isnan isinf isfinite isnormal signbit fpclassify NAN INFINITY HUGE_VAL NULL offsetof errno environ
main open close read write fork pipe dup dup2 kill signal raise sleep usleep nanosleep time clock
getpid unlink link mkdir rmdir chdir access stat fstat lstat select poll mmap munmap dlopen dlsym
dlclose dlerror sync
inputs outputs B i f_in f_out b_in b_out
""".split()) | frozenset(f + s for f in _MATH for s in ("", "f", "l"))
# prefixes of names the runtime, BLAS, OpenMP and threads libraries define
RESERVED_PREFIXES = ("tg_", "cblas_", "openblas_", "omp_", "pthread_")
# example.c's per-tensor locals: in0, out1, fi2, fo0, bi1, bo3
_EXAMPLE_LOCAL = re.compile(r"(in|out|fi|fo|bi|bo)[0-9]+")


def check_export_name(name, what="tg.export: name"):
    """Raise ValueError unless ``name`` can name an exported C library and its function: a C
    identifier (ASCII letters, digits, ``_``; not starting with a digit or ``_``), not a C or
    C++ keyword, not a name the C library, the runtime or the example program already uses,
    and not a type-like ``*_t`` name (reserved by POSIX)."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise ValueError(f"{what} {name!r} is not a usable C identifier: expected ASCII letters, "
                         "digits and _, starting with a letter; pass name=...")
    lower = name.lower()
    if name in C_KEYWORDS or name in CXX_KEYWORDS:
        raise ValueError(f"{what} {name!r} is a C or C++ keyword: expected a name that is not one; "
                         "pass name=...")
    if lower.startswith(RESERVED_PREFIXES):
        raise ValueError(f"{what} {name!r} starts with one of {', '.join(RESERVED_PREFIXES)} (names of "
                         "the runtime and the libraries it calls, any case): expected another name; "
                         "pass name=...")
    if name in LIBC_NAMES or _EXAMPLE_LOCAL.fullmatch(name):
        raise ValueError(f"{what} {name!r} is already a name of the C library or of the generated "
                         "example program: expected another name; pass name=...")
    if name.endswith("_t"):
        raise ValueError(f"{what} {name!r} ends in _t (type names reserved by POSIX, as int64_t): "
                         "expected another name; pass name=...")
