"""Which characters of a CUDA source text are code: not comments, not string literals.

For checks over text that may not parse (an LLM's proposal as written); a transform over a
kernel that parses reads :mod:`workbench.core.cuda_source` instead.
"""

from __future__ import annotations


def code_mask(source: str) -> list[bool]:
    """``mask[i]`` is True where character i is code (not a comment or string literal)."""
    mask = [True] * len(source)
    i, n = 0, len(source)
    while i < n:
        two = source[i:i + 2]
        if two == "//":
            j = source.find("\n", i)
            j = n if j < 0 else j
        elif two == "/*":
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif source[i] in "\"'":
            quote, j = source[i], i + 1
            while j < n and source[j] != quote and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(n, j + 1)
        else:
            i += 1
            continue
        for k in range(i, j):
            mask[k] = False
        i = j
    return mask
