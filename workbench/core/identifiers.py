"""The one identifier check for names that enter generated code (a C++ header, a CUDA
``#define`` block, a Python module): data becomes a name there only after
:func:`identifier_problem` finds nothing wrong with it.

A name passes when it

- is a ``str`` matching ``[A-Za-z_][A-Za-z0-9_]*`` in full (no trailing newline, no Unicode
  letters: compilers and terminals disagree about those) of at most
  :data:`MAX_IDENTIFIER_LENGTH` characters;
- is not a C++20 keyword, alternative token (``and``, ``not``, ...), identifier with special
  meaning (``final``, ``import``) or CUDA built-in variable;
- is not a Python keyword, soft keyword or built-in constant (``None``, ``match``, ``_``);
- is not in a C++-reserved form (``__x``, ``_X``, any ``__`` inside);
- is not a macro that ``<cmath>``, glibc or the CUDA runtime defines, or that g++ and nvcc
  predefine on Linux (``linux``, ``unix``): a field named ``NAN`` would be rewritten by the
  preprocessor;
- is not one of ``reserved``: the names the generated code itself uses (each generator
  collects its own, e.g. :func:`workbench.core.dispatch.generated_names`).

Pure: no I/O.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Collection

__all__ = ["CPP_KEYWORDS", "MAX_IDENTIFIER_LENGTH", "PYTHON_RESERVED", "identifier_problem",
           "is_identifier"]

#: Longer names are refused (a name is a knob or a size, not a payload).
MAX_IDENTIFIER_LENGTH = 64

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: C++20 keywords and alternative tokens ([lex.key], [lex.digraph]), the identifiers with
#: special meaning ([lex.name]), and CUDA's built-in variables.
CPP_KEYWORDS = _words("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    final override import module defined restrict
    threadIdx blockIdx blockDim gridDim warpSize
""")

#: Python keywords, soft keywords and built-in constants.
PYTHON_RESERVED = frozenset({*keyword.kwlist, *keyword.softkwlist, "None", "True", "False",
                             "NotImplemented", "Ellipsis"})

#: Macro families of <cmath>/glibc/the CUDA runtime (a parameter such as ``M_TILE`` or
#: ``FP_ACCUM`` stays allowed: only the spellings those headers define are matched).
_MACRO_FAMILIES = re.compile(
    r"M_(E|LOG2E|LOG10E|LN2|LN10|PI|PI_2|PI_4|1_PI|2_PI|2_SQRTPI|SQRT2|SQRT1_2)"
    r"(f|l|f32|f64|f128|f32x|f64x)?"
    r"|FP_(NAN|INFINITE|ZERO|SUBNORMAL|NORMAL|ILOGB0|ILOGBNAN|LLOGB0|LLOGBNAN|FAST_FMA\w*"
    r"|INT_\w+)"
    r"|is[a-z]+_l|HUGE_VAL\w*|SNAN\w*|cuda[A-Z]\w*|CUDART\w*|CUDA_\w+|CU_\w+"
    r"|(CLOCK|ADJ|MOD|STA|SEEK|RENAME|XATTR|NL|BC|PTHREAD|FD)_[A-Z0-9_]+")

#: Single macros those headers define (g++ -dM -E of <cmath>, nvcc's implicit includes).
_MACROS = _words("""
    AIO_PRIO_DELTA_MAX BIG_ENDIAN BOOL_MAX BOOL_WIDTH BUFSIZ BYTE_ORDER CHARCLASS_NAME_MAX
    CHAR_BIT CHAR_MAX CHAR_MIN CHAR_WIDTH CLOCKS_PER_SEC COLL_WEIGHTS_MAX DELAYTIMER_MAX EOF
    EXIT_FAILURE EXIT_SUCCESS EXPR_NEST_MAX FILENAME_MAX FOPEN_MAX HOST_NAME_MAX INFINITY
    INT_MAX INT_MIN INT_WIDTH IOV_MAX LINE_MAX LITTLE_ENDIAN LLONG_MAX LLONG_MIN LLONG_WIDTH
    LOGIN_NAME_MAX LONG_BIT LONG_LONG_MAX LONG_LONG_MIN LONG_MAX LONG_MIN LONG_WIDTH L_ctermid
    L_cuserid L_tmpnam MATH_ERREXCEPT MATH_ERRNO MAXFLOAT MAX_CANON MAX_INPUT MB_CUR_MAX
    MB_LEN_MAX MQ_PRIO_MAX NAME_MAX NAN NFDBITS NGROUPS_MAX NULL NZERO PATH_MAX PDP_ENDIAN
    PIPE_BUF P_tmpdir RAND_MAX RE_DUP_MAX RTSIG_MAX SCHAR_MAX SCHAR_MIN SCHAR_WIDTH
    SEM_VALUE_MAX SHRT_MAX SHRT_MIN SHRT_WIDTH SSIZE_MAX TIMER_ABSTIME TIME_UTC TMP_MAX
    TTY_NAME_MAX UCHAR_MAX UCHAR_WIDTH UINT_MAX UINT_WIDTH ULLONG_MAX ULLONG_WIDTH
    ULONG_LONG_MAX ULONG_MAX ULONG_WIDTH USHRT_MAX USHRT_WIDTH WORD_BIT
    WCONTINUED WEXITED WEXITSTATUS WIFCONTINUED WIFEXITED WIFSIGNALED WIFSTOPPED WNOHANG
    WNOWAIT WSTOPPED WSTOPSIG WTERMSIG WUNTRACED
    alloca assert assert_perror errno isascii issubnormal linux unix math_errhandling
    offsetof stderr stdin stdout strdupa strndupa toascii toascii_l
    be16toh be32toh be64toh htobe16 htobe32 htobe64 htole16 htole32 htole64 le16toh
    le32toh le64toh
""")


def identifier_problem(name: object, reserved: Collection[str] = ()) -> str | None:
    """Why ``name`` cannot be a name in generated code, or None when it can."""
    if not isinstance(name, str):
        return f"a string, not {type(name).__name__}"
    if not name:
        return "a non-empty name"
    if len(name) > MAX_IDENTIFIER_LENGTH:
        return f"at most {MAX_IDENTIFIER_LENGTH} characters (got {len(name)})"
    if not _PATTERN.fullmatch(name):
        return "an ASCII identifier matching [A-Za-z_][A-Za-z0-9_]*"
    if name in CPP_KEYWORDS:
        return "a name that is not a C++ keyword"
    if name in PYTHON_RESERVED:
        return "a name that is not a Python keyword or constant"
    if "__" in name or (name[0] == "_" and len(name) > 1 and name[1].isupper()):
        return "a name outside the reserved forms __x and _X"
    if name in _MACROS or _MACRO_FAMILIES.fullmatch(name):
        return "a name that is not a macro of <cmath>, libc or the CUDA runtime"
    if name in reserved:
        return "a name the generated code does not use itself"
    return None


def is_identifier(name: object, reserved: Collection[str] = ()) -> bool:
    """Whether :func:`identifier_problem` finds nothing wrong with ``name``."""
    return identifier_problem(name, reserved) is None
