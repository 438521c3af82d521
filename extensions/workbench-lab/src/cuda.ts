/**
 * CUDA files in JupyterLab: a `.cu`/`.cuh` file type and a CodeMirror 6 language.
 *
 * The language is CodeMirror's C++ stream parser (`@codemirror/legacy-modes` clike) with
 * CUDA's qualifiers, built-in variables, vector types and intrinsics added, so
 * `__global__`, `threadIdx` or `__shfl_xor_sync` are coloured like the C++ words beside them.
 */
import { LanguageSupport, StreamLanguage } from '@codemirror/language';
import { clike } from '@codemirror/legacy-modes/mode/clike';

export const CUDA_MIME = 'text/x-cuda';
export const CUDA_FILE_TYPE = 'cuda';
export const CUDA_EXTENSIONS = ['.cu', '.cuh'];

function words(text: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const word of text.split(/\s+/)) {
    if (word) {
      out[word] = true;
    }
  }
  return out;
}

const CPP_KEYWORDS =
  'auto if break case register continue return default do sizeof static else struct ' +
  'switch extern typedef union for goto while enum const volatile inline restrict asm ' +
  'fortran alignas alignof and and_eq audit axiom bitand bitor catch class compl concept ' +
  'constexpr const_cast decltype delete dynamic_cast explicit export final friend import ' +
  'module mutable namespace new noexcept not not_eq operator or or_eq override private ' +
  'protected public reinterpret_cast requires static_assert static_cast template this ' +
  'thread_local throw try typeid typename using virtual xor xor_eq';

/** CUDA's function and variable qualifiers and launch attributes. */
const CUDA_KEYWORDS =
  '__global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ ' +
  '__noinline__ __forceinline__ __launch_bounds__ __grid_constant__ __align__ ' +
  '__syncthreads __syncwarp __threadfence __threadfence_block';

const CPP_TYPES =
  'int long char short double float unsigned signed void bool size_t ptrdiff_t ' +
  'int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t wchar_t char16_t ' +
  'char32_t';

/** CUDA's vector and reduced-precision types. */
const CUDA_TYPES = (() => {
  const vectors: string[] = [];
  for (const base of ['char', 'uchar', 'short', 'ushort', 'int', 'uint', 'long', 'ulong',
    'longlong', 'ulonglong', 'float', 'double']) {
    for (const n of [1, 2, 3, 4]) {
      vectors.push(`${base}${n}`);
    }
  }
  return `${vectors.join(' ')} dim3 half half2 __half __half2 __nv_bfloat16 ` +
    '__nv_bfloat162 nv_bfloat16 nv_bfloat162 __nv_fp8_e4m3 __nv_fp8_e5m2 cudaStream_t';
})();

/** Built-in variables and the most used intrinsics. */
const CUDA_BUILTINS =
  'threadIdx blockIdx blockDim gridDim warpSize __shfl_sync __shfl_xor_sync ' +
  '__shfl_up_sync __shfl_down_sync __ballot_sync __any_sync __all_sync __ldg __ldcs ' +
  '__stcs atomicAdd atomicMax atomicMin atomicCAS atomicExch __expf __logf __fdividef ' +
  'rsqrtf __float2half __half2float __float2bfloat16 __bfloat162float';

/** The CodeMirror stream parser for CUDA C++. */
export const cudaParser = clike({
  name: 'cuda',
  keywords: words(`${CPP_KEYWORDS} ${CUDA_KEYWORDS}`),
  types: words(`${CPP_TYPES} ${CUDA_TYPES}`),
  builtin: words(CUDA_BUILTINS),
  blockKeywords: words('case do else for if switch while struct enum union class namespace try catch'),
  atoms: words('true false NULL nullptr'),
  typeFirstDefinitions: true,
  isReservedIdentifier: (id: string) => /^__/.test(id),
  hooks: {
    '#': (stream: { skipToEnd: () => void }) => {
      stream.skipToEnd();
      return 'meta';
    }
  },
  namespaceSeparator: '::'
} as Parameters<typeof clike>[0]);

/** The CodeMirror language support JupyterLab's editor loads for CUDA files. */
export function cudaLanguage(): LanguageSupport {
  return new LanguageSupport(StreamLanguage.define(cudaParser));
}
