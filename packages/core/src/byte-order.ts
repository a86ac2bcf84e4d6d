/**
 * Compares strings in the order of their UTF-8 bytes (code point order), the
 * order both stores sort ids and keys in. JavaScript's `<` compares UTF-16
 * code units, which puts characters beyond U+FFFF (surrogate pairs, 0xD800–
 * 0xDFFF) before U+E000–U+FFFF; the two orders agree everywhere else.
 */
export function compareByteOrder(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i += 1) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A code unit moved so that surrogates sort after U+E000–U+FFFF, as their code points do. */
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}
