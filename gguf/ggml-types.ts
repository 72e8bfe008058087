/**
 * ggml tensor types as GGUF stores them: id → (elements per block, bytes per block).
 * Mirrors ggml's type_traits table (ggml/src/ggml.c); ids that ggml retired are absent.
 */
export interface GgmlType {
  readonly id: number
  readonly name: string
  readonly blockSize: number
  readonly typeSize: number
}

const table: ReadonlyArray<readonly [number, string, number, number]> = [
  [0, 'F32', 1, 4],
  [1, 'F16', 1, 2],
  [2, 'Q4_0', 32, 18],
  [3, 'Q4_1', 32, 20],
  [6, 'Q5_0', 32, 22],
  [7, 'Q5_1', 32, 24],
  [8, 'Q8_0', 32, 34],
  [9, 'Q8_1', 32, 36],
  [10, 'Q2_K', 256, 84],
  [11, 'Q3_K', 256, 110],
  [12, 'Q4_K', 256, 144],
  [13, 'Q5_K', 256, 176],
  [14, 'Q6_K', 256, 210],
  [15, 'Q8_K', 256, 292],
  [16, 'IQ2_XXS', 256, 66],
  [17, 'IQ2_XS', 256, 74],
  [18, 'IQ3_XXS', 256, 98],
  [19, 'IQ1_S', 256, 50],
  [20, 'IQ4_NL', 32, 18],
  [21, 'IQ3_S', 256, 110],
  [22, 'IQ2_S', 256, 82],
  [23, 'IQ4_XS', 256, 136],
  [24, 'I8', 1, 1],
  [25, 'I16', 1, 2],
  [26, 'I32', 1, 4],
  [27, 'I64', 1, 8],
  [28, 'F64', 1, 8],
  [29, 'IQ1_M', 256, 56],
  [30, 'BF16', 1, 2],
  [34, 'TQ1_0', 256, 54],
  [35, 'TQ2_0', 256, 66],
  [39, 'MXFP4', 32, 17],
]

export const GGML_TYPES: ReadonlyMap<number, GgmlType> = new Map(
  table.map(([id, name, blockSize, typeSize]) => [id, { id, name, blockSize, typeSize }]),
)

export const GgmlTypeId = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8 } as const

export function ggmlType(id: number): GgmlType | undefined {
  return GGML_TYPES.get(id)
}

/** Bytes a tensor of this type and shape occupies; undefined when the row does not fill whole blocks. */
export function tensorBytes(type: GgmlType, shape: readonly number[]): number | undefined {
  const ne0 = shape[0] ?? 1
  if (ne0 % type.blockSize !== 0) return undefined
  let rows = 1
  for (let i = 1; i < shape.length; i++) rows *= shape[i] ?? 1
  return (ne0 / type.blockSize) * type.typeSize * rows
}

export function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment
}
